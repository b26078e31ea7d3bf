"""Shared test settings."""

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Small networks on a 2-core machine: one intra-op thread (torch's OpenMP workers spin-wait and
    make small ops many times slower when the cores are shared)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def _greedy_actions_agree(actions, ref_actions, ref_logits, margin: float = 1e-4) -> None:
    """Assert that greedy ``actions`` equal ``ref_actions`` wherever the reference's best logit leads the
    second best by more than ``margin``: two computation paths (a batched stack vs one policy) agree to
    about 1e-6, so a near-tie may break either way depending on the machine's float kernels. Also
    asserts that most rows are decisive, so the comparison is not vacuous."""
    assert actions.shape == ref_actions.shape == ref_logits.shape[:-1]
    if actions.numel() == 0:  # no rows to compare (e.g. a policy of a stack that plays no game)
        return
    top2 = ref_logits.topk(2, dim=-1).values
    decisive = (top2[..., 0] - top2[..., 1]) > margin
    assert decisive.float().mean().item() > 0.5, "too many near-ties: the case does not test the argmax"
    assert torch.equal(actions[decisive], ref_actions[decisive])


@pytest.fixture
def greedy_actions_agree():
    """``_greedy_actions_agree(actions, ref_actions, ref_logits, margin=1e-4)`` (asserts)."""
    return _greedy_actions_agree


@pytest.fixture
def figures_not_rendered():
    """Figures are drawn but not written as PNG (``Figure.savefig`` is about two thirds of a tiny
    comparison's time; here and in processes forked from here), for a test that asserts nothing about
    figures and whose code reads none back (a comparison with a t-SNE copies its embedding figures);
    ``test_compare_cli`` and ``test_seed_stats`` check the figures. Its own MonkeyPatch, which a test's
    ``monkeypatch.undo()`` leaves in place."""
    from matplotlib.figure import Figure

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Figure, "savefig", lambda self, *args, **kwargs: None)
        yield


@pytest.fixture(scope="session")
def load_benchmark():
    """``load_benchmark("smac_calibration")``: the module ``benchmarks/NAME.py`` (benchmarks are scripts,
    not a package; each test module that checks one loads it through here)."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "benchmarks"

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, root / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


def pytest_collection_modifyitems(config, items):
    """The modules that hold tests marked ``slow`` run first, those with the most such tests first (ties
    and the rest in their collected order): ``make test`` spreads whole modules over the cores
    (pytest-xdist, ``--dist loadfile``), and a long module started last would leave the other cores
    idle while it finishes."""
    slow: dict = {}
    for item in items:
        if item.get_closest_marker("slow"):
            slow[item.path] = slow.get(item.path, 0) + 1
    items.sort(key=lambda item: -slow.get(item.path, 0))
