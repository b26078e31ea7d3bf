"""Opponent draws: the O(1) samplers draw from exactly the Ω that ``distribution`` states."""

import numpy as np
import pytest

from selfplay import PSRO, DeltaLimitUniform, DeltaUniform, LearnerInfo, Menagerie, NaiveSelfPlay, make_scheme
from selfplay.core.schemes import AliasTable, OrderedIds

DRAWS = 200_000


def menagerie_of(size, discard=()):
    m = Menagerie()
    for i in range(size):
        m.add(f"p{i}", step=i)
    for i in discard:
        m.discard(i)
    return m


def frequencies(scheme, m, draws=DRAWS, seed=0):
    ids = np.array([e.id for e in scheme.sample_many(m, draws, rng=np.random.default_rng(seed))])
    return {i: float(np.mean(ids == i)) for i in m.ids}


def assert_matches_omega(scheme, m, tol):
    omega = scheme.distribution(m)
    freq = frequencies(scheme, m)
    assert set(i for i, f in freq.items() if f > 0) <= set(omega)  # never outside Ω's support
    worst = max(abs(freq[i] - omega.get(i, 0.0)) for i in m.ids)
    assert worst < tol, worst


@pytest.mark.parametrize("delta", [0.0, 0.3, 0.5, 1.0])
@pytest.mark.parametrize("cls", [DeltaUniform, DeltaLimitUniform])
def test_delta_samplers_draw_from_omega(cls, delta):
    # 4σ of a frequency estimated from 200 000 draws is below 0.0045 for any probability
    assert_matches_omega(cls(delta), menagerie_of(23, discard=(3, 7)), tol=0.0045)


def test_limit_uniform_rejection_sampler_on_a_long_window():
    scheme = DeltaLimitUniform(0.0)
    m = menagerie_of(5000)
    omega = scheme.distribution(m)
    freq = frequencies(scheme, m)
    for i in m.ids[-6:]:  # the latest ≈ 1/ζ(2) ≈ 0.61, then ¼ of it, ...
        assert abs(freq[i] - omega[i]) < 0.0045
    tail = sum(p for i, p in omega.items() if i < 4000)  # mass far back in the window
    assert abs(sum(f for i, f in freq.items() if i < 4000) - tail) < 0.002


def test_naive_always_draws_the_latest_entry():
    m = menagerie_of(5, discard=(4,))
    assert {e.id for e in NaiveSelfPlay().sample_many(m, 50)} == {3}


def test_alias_table_reproduces_an_arbitrary_distribution():
    p = np.array([0.5, 0.0, 0.2, 0.05, 0.25])
    table = AliasTable([10, 11, 12, 13, 14], p)
    keys = table.draw(np.random.default_rng(1), DRAWS)
    freq = np.array([np.mean(keys == k) for k in [10, 11, 12, 13, 14]])
    assert np.abs(freq - p).max() < 0.0045 and freq[1] == 0.0
    with pytest.raises(ValueError, match="probs"):
        AliasTable([1, 2], np.array([0.0, 0.0]))


def test_psro_draws_from_its_meta_solution_and_rebuilds_the_table_only_when_omega_changes():
    solver_calls = []

    def skewed(A):
        solver_calls.append(len(A))
        p = np.arange(1, len(A) + 1, dtype=float)
        return p / p.sum()

    scheme = PSRO(solver=skewed, window=1, threshold=0.5, evaluate=lambda e, o, m: np.full(len(o), 0.5))
    m = menagerie_of(1)
    for v in range(1, 4):  # three iterations: 4 entries
        scheme.curate(m, LearnerInfo(weight_version=v, snapshot=lambda: "s"), outcome=1)
    assert len(m) == 4
    assert_matches_omega(scheme, m, tol=0.0045)
    table = scheme._alias_table(m, None)
    scheme.sample_many(m, 10, rng=np.random.default_rng(0))
    assert scheme._alias_table(m, None) is table  # cached while Ω's key stays
    scheme.curate(m, LearnerInfo(weight_version=5, snapshot=lambda: "t"), outcome=1)
    assert scheme._alias_table(m, None) is not table and scheme._alias_table(m, None).keys.tolist() == m.ids


def test_ordered_ids_follow_appends_and_discards():
    m = menagerie_of(3)
    ids = OrderedIds()
    assert ids(m).tolist() == [0, 1, 2]
    for i in range(3, 40):
        m.add(f"p{i}", step=i)
        assert ids(m).tolist() == m.ids  # appended, not rebuilt
    m.discard(5)
    assert ids(m).tolist() == m.ids
    m.add("x", step=1)
    m.discard(0)
    m.add("y", step=1)
    assert ids(m).tolist() == m.ids
    other = menagerie_of(2)
    assert ids(other).tolist() == [0, 1]  # another menagerie: rebuilt


def test_draws_are_reproducible_and_validated():
    m = menagerie_of(10)
    for spec in ("delta-uniform:delta=0.5", "delta-limit-uniform:delta=0", "naive"):
        a = [e.id for e in make_scheme(spec).sample_many(m, 20, rng=np.random.default_rng(7))]
        b = [e.id for e in make_scheme(spec).sample_many(m, 20, rng=np.random.default_rng(7))]
        assert a == b
        with pytest.raises(ValueError, match="n must be"):
            make_scheme(spec).sample_many(m, -1)


def test_a_pickled_scheme_leaves_its_draw_caches_behind():
    import pickle

    m = menagerie_of(1000)
    scheme = DeltaLimitUniform(0.0)
    scheme.sample_many(m, 5, rng=np.random.default_rng(0))
    assert "_ordered_ids" in scheme.__dict__
    copy = pickle.loads(pickle.dumps(scheme))
    assert "_ordered_ids" not in copy.__dict__ and copy.delta == 0.0
    assert len(copy.sample_many(m, 5, rng=np.random.default_rng(0))) == 5


def test_a_subclass_that_changes_omega_is_drawn_from_its_own_distribution():
    class OldestOnly(DeltaUniform):
        def distribution(self, menagerie, payoff=None):
            return {menagerie.ids[0]: 1.0}

    m = menagerie_of(10, discard=(0,))
    assert {e.id for e in OldestOnly(0.0).sample_many(m, 30, rng=np.random.default_rng(0))} == {1}
