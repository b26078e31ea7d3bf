import numpy as np

from paper_figures.fig1_sample_rates import SCHEMES, cumulative_sample_rates, expected_sample_rates, main
from selfplay import make_scheme


def test_expected_rates_match_harmonic_closed_form():
    n = 500
    uniform = expected_sample_rates(make_scheme("delta-uniform:delta=0"), n)
    # policy i is in the window for t = i+1 .. n entries, each time with probability 1/t
    closed = np.array([sum(1.0 / t for t in range(i + 1, n + 1)) for i in range(n)]) / n
    np.testing.assert_allclose(uniform, closed, rtol=1e-12)
    assert 6.5 < uniform[0] * n < 7.0  # "about 7x the uniform rate"
    limit = expected_sample_rates(make_scheme("delta-limit-uniform:delta=0"), n)
    assert limit.max() * n < 1.6 and limit.min() * n > 0.6  # stays near uniform


def test_sampled_rates_follow_expectation_and_figure_is_written(tmp_path):
    rates = cumulative_sample_rates(make_scheme(SCHEMES[0]), 200, 2, seed=1)
    assert rates.sum() == 1.0 or abs(rates.sum() - 1) < 1e-12
    assert rates[:20].mean() > 3 * rates[-100:].mean()
    summary = main(["--out", str(tmp_path / "fig1.png"), "--policies", "100"])
    assert (tmp_path / "fig1.png").stat().st_size > 10_000
    assert summary["delta-uniform:delta=0"] > 3 * summary["delta-limit-uniform:delta=0"]
