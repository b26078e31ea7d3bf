import math

import numpy as np
import pytest
from scipy import stats

from selfplay import PSRO, DeltaLimitUniform, DeltaUniform, LearnerInfo, Menagerie, NaiveSelfPlay, make_scheme
from selfplay.core.schemes import delta_window_start


def menagerie_of(size):
    m = Menagerie()
    for i in range(size):
        m.add(f"p{i}", step=i, weight_version=i)
    return m


@pytest.mark.parametrize("size", [1, 2, 5, 11])
@pytest.mark.parametrize("delta", [0.0, 0.3, 0.5, 1.0])
def test_delta_uniform_distribution_is_uniform_over_window(size, delta):
    dist = DeltaUniform(delta).distribution(menagerie_of(size))
    start = math.ceil(delta * (size - 1))
    assert list(dist) == list(range(start, size))
    np.testing.assert_allclose(list(dist.values()), 1 / (size - start))


def test_delta_window_edges_by_hand():
    assert delta_window_start(0.0, 10) == 0
    assert delta_window_start(1.0, 10) == 9
    assert delta_window_start(0.5, 10) == 5  # ceil(4.5)
    assert delta_window_start(0.5, 11) == 5  # ceil(5.0)
    assert delta_window_start(0.1, 31) == 3  # 0.1*30 = 3.0000000000000004 must not become 4


@pytest.mark.parametrize("size", [1, 3, 8])
@pytest.mark.parametrize("delta", [0.0, 0.5, 1.0])
def test_limit_uniform_weights(size, delta):
    dist = DeltaLimitUniform(delta).distribution(menagerie_of(size))
    start = math.ceil(delta * (size - 1))
    raw = np.array([1 / (size - e) ** 2 for e in range(start, size)])
    assert list(dist) == list(range(start, size))
    np.testing.assert_allclose(list(dist.values()), raw / raw.sum())


def test_limit_uniform_hand_values_and_zeta_limit():
    dist = DeltaLimitUniform(0).distribution(menagerie_of(3))
    # weights 1/9, 1/4, 1 normalised by 49/36
    np.testing.assert_allclose([dist[0], dist[1], dist[2]], [4 / 49, 9 / 49, 36 / 49])
    big = DeltaLimitUniform(0).distribution(menagerie_of(5000))
    assert big[4999] == pytest.approx(6 / math.pi**2, rel=1e-3)


def test_naive_puts_all_mass_on_latest_and_replaces_menagerie():
    scheme = NaiveSelfPlay()
    m = menagerie_of(1)
    assert scheme.distribution(m) == {0: 1.0}
    cur = scheme.curate(m, LearnerInfo(weight_version=0, snapshot=lambda: "same"))
    assert cur.added == [] and len(m) == 1  # weights unchanged: nothing to replace
    cur = scheme.curate(m, LearnerInfo(weight_version=1, episode=3, snapshot=lambda: "new"))
    assert [e.policy for e in m] == ["new"] and [e.id for e in cur.discarded] == [0]
    assert scheme.distribution(m) == {1: 1.0}


@pytest.mark.parametrize("scheme", [DeltaUniform(0.5), DeltaLimitUniform(0.0), DeltaLimitUniform(0.5)])
def test_sampled_frequencies_agree_with_omega(scheme):
    m = menagerie_of(9)
    dist = scheme.distribution(m)
    rng = np.random.default_rng(123)
    draws = scheme.sample_many(m, 20000, rng=rng)
    counts = np.bincount([e.id for e in draws], minlength=9)
    expected = np.array([dist.get(i, 0.0) for i in range(9)]) * 20000
    assert counts[expected == 0].sum() == 0
    chi2 = stats.chisquare(counts[expected > 0], expected[expected > 0])
    assert chi2.pvalue > 1e-3


def test_curation_every_episode_every_k_and_on_update():
    every = DeltaUniform(0, add_every=1)
    m = Menagerie()
    for ep in range(4):
        every.curate(m, LearnerInfo(episode=ep, weight_version=0, snapshot=lambda: "same"))
    assert len(m) == 4 and len({id(e.policy) for e in m}) == 1
    k = DeltaUniform(0, add_every=3)
    m = Menagerie()
    added = [bool(k.curate(m, LearnerInfo(episode=ep, snapshot=lambda: "x")).added) for ep in range(7)]
    assert added == [False, False, True, False, False, True, False]
    upd = DeltaLimitUniform(0, add_every="update")
    m = Menagerie()
    versions = [0, 0, 1, 1, 1, 2]
    added = [bool(upd.curate(m, LearnerInfo(weight_version=v, snapshot=lambda: "x")).added) for v in versions]
    assert added == [True, False, True, False, False, True]


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "0.5", None])
def test_bad_delta_is_rejected(bad):
    with pytest.raises(ValueError, match="delta"):
        DeltaUniform(bad)
    with pytest.raises(ValueError, match="delta"):
        DeltaLimitUniform(bad)


def test_sampling_empty_menagerie_is_an_error():
    with pytest.raises(ValueError, match="empty"):
        DeltaUniform(0).sample(Menagerie())


def test_make_scheme_specs_and_names():
    s = make_scheme("delta-uniform:delta=0.5")
    assert isinstance(s, DeltaUniform) and s.delta == 0.5 and s.name == "delta-uniform:delta=0.5"
    s = make_scheme("delta-limit-uniform:delta=0,add_every=update")
    assert isinstance(s, DeltaLimitUniform) and s.add_every == "update"
    assert isinstance(make_scheme("naive"), NaiveSelfPlay)
    p = make_scheme("psro:solver=uniform,threshold=0.6,window=10", evaluate=FakeGame())
    assert isinstance(p, PSRO) and p.threshold == 0.6 and p.window == 10 and p.name == "psro:solver=uniform,threshold=0.6,window=10"
    for bad, msg in [("nope", "unknown scheme"), ("delta-uniform", "needs delta"), ("delta-uniform:delta", "malformed"),
                     ("delta-uniform:delta=0.5,foo=1", "unknown parameter"), ("", "non-empty"),
                     ("psro:solver=magic", "solver"), ("delta-uniform:delta=2", "delta")]:
        with pytest.raises(ValueError, match=msg):
            make_scheme(bad)


class FakeGame:
    """Evaluator for PSRO tests: policies are numbers; higher beats lower with prob 0.9."""

    def __call__(self, entry, opponents, matches):
        return np.array([0.5 if o.policy == entry.policy else (0.9 if entry.policy > o.policy else 0.1) for o in opponents])


def uniform_solver(A):
    return np.full(len(A), 1 / len(A))


def test_psro_adds_when_window_threshold_reached_and_fills_meta_game():
    scheme = PSRO(solver=uniform_solver, threshold=0.72, window=4, matches_per_pair=25, evaluate=FakeGame())
    m = Menagerie()
    m.add(0, step=0)
    assert scheme.distribution(m) == {0: 1.0}
    learner = LearnerInfo(weight_version=1, snapshot=lambda: 1)
    outcomes = [1, 1, 0, 1, 1]  # windows: [1,1,0,1] mean 0.75 >= 0.72 at the 4th episode
    added = [bool(scheme.curate(m, learner, outcome=o).added) for o in outcomes]
    assert added == [False, False, False, True, False]
    assert len(m) == 2 and scheme.iterations == 1
    np.testing.assert_allclose(scheme.meta_matrix(m.ids), [[0.5, 0.1], [0.9, 0.5]])
    np.testing.assert_allclose(list(scheme.distribution(m).values()), [0.5, 0.5])


def test_psro_iteration_cap_and_missing_evaluator():
    scheme = PSRO(solver=uniform_solver, window=50, max_episodes_per_iteration=3, evaluate=FakeGame())
    m = Menagerie()
    m.add(0, step=0)
    added = [bool(scheme.curate(m, LearnerInfo(snapshot=lambda: 0.5), outcome=0).added) for _ in range(3)]
    assert added == [False, False, True]
    with pytest.raises(ValueError, match="evaluate is required by PSRO"):
        PSRO(solver=uniform_solver, window=1, threshold=0.5)  # refused when built, not 1000 episodes later
    with pytest.raises(ValueError, match="evaluate is required by PSRO"):
        make_scheme("psro")
    with pytest.raises(ValueError, match="callable"):
        make_scheme("psro", evaluate=42)
    bare = make_scheme("psro:window=1,threshold=0.5", defer_evaluator=True)  # a trainer sets it later
    with pytest.raises(ValueError, match="evaluate"):
        bare.curate(m, LearnerInfo(snapshot=lambda: 1), outcome=1)
    with pytest.raises(ValueError, match="outcome"):
        bare.curate(m, LearnerInfo(snapshot=lambda: 1))


def test_psro_state_round_trip():
    scheme = PSRO(solver=uniform_solver, window=2, threshold=0.5, evaluate=FakeGame())
    m = Menagerie()
    m.add(0, step=0)
    scheme.curate(m, LearnerInfo(snapshot=lambda: 1), outcome=1)
    scheme.curate(m, LearnerInfo(snapshot=lambda: 1), outcome=1)
    scheme.curate(m, LearnerInfo(snapshot=lambda: 2), outcome=1)
    other = PSRO(solver=uniform_solver, window=2, threshold=0.5, evaluate=FakeGame())
    other.load_state_dict(scheme.state_dict())
    assert other.iterations == 1
    np.testing.assert_allclose(other.meta_matrix(m.ids), scheme.meta_matrix(m.ids))
    # the pending window carries over: one more win completes it in both
    assert bool(other.curate(m, LearnerInfo(snapshot=lambda: 3), outcome=1).added)
