"""paper_figures: the reproduction runs 3 seeds by default and passes --seeds through to the comparison."""

import argparse

import numpy as np
import pytest

from paper_figures import make_all
from paper_figures.common import parse_seeds


def test_parse_seeds():
    assert parse_seeds("0,1,2") == [0, 1, 2] and parse_seeds("7") == [7]
    for bad in ("", "0,0", "a,b"):
        with pytest.raises(argparse.ArgumentTypeError, match="seeds must be"):
            parse_seeds(bad)


@pytest.mark.parametrize("argv, seeds, cross", [([], [0, 1, 2], False),
                                                (["--seeds", "3,5", "--cross-seed-rpp"], [3, 5], True)])
def test_make_all_passes_the_seeds_to_the_comparison_and_figures(monkeypatch, tmp_path, argv, seeds, cross):
    seen = {}
    monkeypatch.setattr(make_all, "compare", lambda config, out: seen.update(seeds=config.seeds,
                                                                              cross=config.rpp_cross_seed))
    monkeypatch.setattr(make_all.fig1_sample_rates, "main", lambda argv: None)
    monkeypatch.setattr(make_all.fig2_embeddings, "make_figure", lambda s, o, seed: seen.setdefault("fig2", seed))
    monkeypatch.setattr(make_all.fig3_winrate_matrices, "make_figure", lambda s, o, seed: seen.setdefault("fig3", seed))
    monkeypatch.setattr(make_all.table_rpp, "make_tables", lambda s, o: None)
    make_all.main(["--out", str(tmp_path)] + argv)
    assert seen == {"seeds": seeds, "cross": cross, "fig2": seeds[0], "fig3": seeds[0]}


def _write_embedding(path, basis, runs):
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **{f"basis/{k}": v for k, v in basis.items()}, **{f"run/{k}": v for k, v in runs.items()})


def test_fig2_uses_the_comparisons_joint_embedding_only_when_the_agents_were_fitted_together(tmp_path):
    """Fig. 2 reuses the seed's joint t-SNE (both agents' files hold the same basis points); files of
    separate fits (different basis points) or without Fig. 2's schemes are not reused."""
    from paper_figures import fig2_embeddings
    from paper_figures.common import AGENTS

    gen = np.random.default_rng(0)
    basis = {"Rock": gen.normal(size=(4, 2)), "Paper": gen.normal(size=(4, 2))}
    points = {a: {s: gen.normal(size=(5, 2)) for s in fig2_embeddings.SCHEMES + ["psro"]} for a in AGENTS}
    for agent in AGENTS:
        _write_embedding(tmp_path / "runs" / agent / "embedding_s1.npz", basis, points[agent])
    saved_basis, runs = fig2_embeddings.saved_embedding(tmp_path, seed=1)
    assert saved_basis.keys() == basis.keys() and np.array_equal(saved_basis["Rock"], basis["Rock"])
    assert len(runs) == 2 * len(fig2_embeddings.SCHEMES)  # psro is not in the figure
    assert np.array_equal(runs["Naive SP (RNN-PPO)"], points["ppo-rnn"]["naive"])
    assert fig2_embeddings.saved_embedding(tmp_path, seed=0) is None  # no embedding of seed 0
    other = {k: v + 1.0 for k, v in basis.items()}  # a separate fit for the RNN agent
    _write_embedding(tmp_path / "runs" / "ppo-rnn" / "embedding_s1.npz", other, points["ppo-rnn"])
    assert fig2_embeddings.saved_embedding(tmp_path, seed=1) is None
