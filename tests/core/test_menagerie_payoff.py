import numpy as np
import pytest

from selfplay import Menagerie, Payoff


def test_ids_are_increasing_and_never_reused():
    m = Menagerie()
    a, b, c = (m.add(f"p{i}", step=i * 10, player="learner") for i in range(3))
    assert [a.id, b.id, c.id] == [0, 1, 2]
    m.discard(1)
    d = m.add("p3", step=40)
    assert d.id == 3 and m.ids == [0, 2, 3] and len(m) == 3
    assert [e.policy for e in m] == ["p0", "p2", "p3"]
    assert m[2].step == 20 and m[2].tags == {"player": "learner"}
    assert m.latest is d and 1 not in m
    with pytest.raises(ValueError, match="entry_id"):
        m.discard(1)
    with pytest.raises(ValueError, match="step"):
        m.add("x", step=-1)


def test_save_load_round_trip_writes_shared_policies_once(tmp_path):
    m = Menagerie()
    shared = {"w": 1}
    m.add(shared, step=0, parent="main_0")
    m.add(shared, step=5)  # unchanged learner: same frozen object
    m.add({"w": 2}, step=9)
    m.discard(0)
    writes = []

    def save_policy(policy, path):
        writes.append(policy["w"])
        with open(path, "w") as f:
            f.write(str(policy["w"]))

    m.save(tmp_path, save_policy)
    m.save(tmp_path, save_policy)  # incremental: nothing rewritten
    assert writes == [1, 2]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    loaded = Menagerie.load(tmp_path, load_policy=lambda path: {"w": int(open(path).read())})
    assert loaded.ids == [1, 2] and loaded.next_id == 3
    assert loaded[1].policy == {"w": 1} and loaded[2].policy == {"w": 2} and loaded[1].step == 5
    assert loaded.add("new", step=10).id == 3


def test_payoff_win_rates_and_symmetry():
    p = Payoff()
    assert p.win_rate(0, 1) == 0.5 and p.games(0, 1) == 0
    p.update(0, 1, 1)
    p.update(0, 1, 0.5)
    p.update(1, 0, 1)
    # 0 vs 1: one win, one draw, one loss -> (1 + 0.5) / 3
    assert p.win_rate(0, 1) == pytest.approx(0.5)
    p.update(0, 1, 1)
    assert p.win_rate(0, 1) == pytest.approx(2.5 / 4) and p.win_rate(1, 0) == pytest.approx(1.5 / 4)
    assert p.games(1, 0) == 4
    W = p.matrix([0, 1, 2])
    np.testing.assert_allclose(W, [[0.5, 2.5 / 4, 0.5], [1.5 / 4, 0.5, 0.5], [0.5, 0.5, 0.5]])
    with pytest.raises(ValueError, match="score"):
        p.update(0, 1, 0.3)


def test_payoff_decay_arithmetic():
    p = Payoff(decay=0.5)
    p.update("a", 7, 1)  # counts(a,7) = [1, 0, 0, 1]
    p.update("a", 7, 0)  # halve -> [0.5, 0, 0, 0.5], then loss -> [0.5, 0, 1, 1.5]
    np.testing.assert_allclose(p.counts("a", 7), [0.5, 0, 1, 1.5])
    np.testing.assert_allclose(p.counts(7, "a"), [1, 0, 0.5, 1.5])
    assert p.win_rate("a", 7) == pytest.approx(1 / 3)
    p.update(7, "a", 0.5)  # halve -> [0.25, 0, 0.5, 0.75] + draw
    np.testing.assert_allclose(p.counts("a", 7), [0.25, 1, 0.5, 1.75])
    assert p.win_rate("a", 7) == pytest.approx((0.25 + 0.5) / 1.75)
    with pytest.raises(ValueError, match="decay"):
        Payoff(decay=0)


def test_payoff_save_load(tmp_path):
    p = Payoff(decay=0.99)
    p.update("main_0", 3, 1)
    p.update(3, 4, 0.5)
    p.save(tmp_path / "payoff.json")
    q = Payoff.load(tmp_path / "payoff.json")
    assert q.decay == 0.99
    for h, a in [("main_0", 3), (3, "main_0"), (3, 4), (4, 3)]:
        np.testing.assert_array_equal(q.counts(h, a), p.counts(h, a))
