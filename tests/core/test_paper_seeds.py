"""paper_figures: the reproduction runs 3 seeds by default and passes --seeds through to the comparison."""

import argparse

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
