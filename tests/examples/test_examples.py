"""The examples run at a tiny budget; their records are checked: every finished game recorded exactly
once, against the opponent drawn for that game."""

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PSRO = "psro:window=10,threshold=0.6,matches_per_pair=4,max_episodes_per_iteration=30"


@pytest.fixture(scope="module", autouse=True)
def examples_on_path():
    # on sys.path (not loaded from a file path) so that AsyncVectorEnv's spawned workers can import them too
    sys.path.insert(0, str(EXAMPLES))
    yield
    sys.path.remove(str(EXAMPLES))


def check_records(session, ended, num_envs, announced=None, by_index=True):
    """``ended``: (env index, episode token, opponent id, outcome) per game as the trainer saw it end."""
    records = session.records
    tokens = [r.token for r in records]
    assert len(records) > 0 and len(set(tokens)) == len(tokens)  # recorded once each
    assert sorted(e[1:] for e in ended) == sorted((r.token, r.opponent, r.outcome) for r in records)
    assert len(ended) == len(records) == session.episode
    if by_index:
        env_of = {r.token: r.env_index for r in records}
        assert all(env_of[t] == g for g, t, _, _ in ended)
    if announced is not None:  # the opponent announced when each game started is the one it was recorded against
        assert announced == [o for _, _, o, _ in ended]
    games = Counter(r.opponent for r in records)
    assert all(session.payoff.games("learner", i) == k for i, k in games.items())
    assert len(session.open) == num_envs  # the games in progress at the end, not recorded
    assert {r.outcome for r in records} <= {0.0, 0.5, 1.0}


def check_scheme(session, updates):
    scheme = session.scheme
    distinct = {id(e.policy) for e in session.menagerie}
    assert len(distinct) <= updates + 1  # one frozen copy per weight version at most, never one per game
    if scheme.name.startswith("psro"):
        assert scheme.iterations >= 1 and len(session.menagerie) == 1 + scheme.iterations
        k = scheme.iterations
        assert len(scheme._meta) == k * (k + 1)  # each new entry's row/column filled against every entry
        assert all(0.0 <= w <= 1.0 for w in scheme._meta.values())
    else:
        assert len(session.menagerie) == 1 + len(session.records)  # δ-Uniform adds after every game


@pytest.mark.parametrize("scheme", ["delta-uniform:delta=0", PSRO])
def test_cleanrl_ppo_on_the_native_vector_env(scheme):
    import ppo_vector_selfplay as ex

    res = ex.main(["--vector", "native", "--num-envs", "8", "--num-steps", "64", "--total-timesteps", "1536",
                   "--scheme", scheme, "--update-epochs", "2"])
    assert res.updates == 3 and res.session.weight_version == 3
    check_records(res.session, res.ended, 8, res.announced)
    check_scheme(res.session, res.updates)
    assert len(res.ended) == 8 * (64 * 3 // 10)  # 10-step games, all envs in lockstep


def test_cleanrl_ppo_on_gymnasium_sync_vector_env():
    import ppo_vector_selfplay as ex

    res = ex.main(["--vector", "sync", "--num-envs", "8", "--num-steps", "33", "--total-timesteps", "528",
                   "--scheme", "delta-limit-uniform:delta=0.5", "--update-epochs", "1"])
    # NEXT_STEP: a game takes 10 steps plus one reset step
    assert len(res.ended) == 8 * (66 // 11)
    check_records(res.session, res.ended, 8, res.announced, by_index=False)  # shared session: handles, no index
    check_scheme(res.session, res.updates)


def test_cleanrl_ppo_on_gymnasium_async_vector_env_through_the_session_wrapper():
    import ppo_vector_selfplay as ex

    # 24 games: the iteration cap (8 games) makes PSRO add entries whatever the (unseeded) workers' games give
    res = ex.main(["--vector", "async", "--num-envs", "2", "--num-steps", "66", "--total-timesteps", "264",
                   "--scheme", PSRO.replace("max_episodes_per_iteration=30", "max_episodes_per_iteration=8"),
                   "--update-epochs", "1"])
    assert len(res.ended) == 2 * (132 // 11)
    check_records(res.session, res.ended, 2, res.announced)
    check_scheme(res.session, res.updates)


@pytest.mark.parametrize("route,scheme", [("native", "delta-uniform:delta=0"), ("native", PSRO),
                                          ("dummy", "delta-limit-uniform:delta=0")])
def test_sb3_ppo_on_a_vec_env(route, scheme, tmp_path):
    import sb3_ppo_selfplay as ex

    res = ex.main(["--route", route, "--n-envs", "4", "--n-steps", "128", "--total-timesteps", "1536",
                   "--scheme", scheme], log_dir=str(tmp_path))
    assert res.session.weight_version == 2  # three rollouts: two updates before the last rollout
    check_records(res.session, res.ended, 4, by_index=route == "native")
    check_scheme(res.session, res.session.weight_version)
    assert len(res.ended) == 4 * (384 // 10)


def test_hand_written_core_loop_with_psro_and_the_ready_evaluator():
    import core_loop_psro as ex

    res = ex.main(["--episodes", "160", "--batch-episodes", "8", "--eval-matches", "4",
                   "--scheme", "psro:window=10,threshold=0.6,matches_per_pair=4,max_episodes_per_iteration=40"])
    assert [r[0] for r in res.records] == list(range(160))  # every game once, in order
    games = Counter(o for _, o, _ in res.records)
    assert sum(games.values()) == 160
    assert all(res.payoff.games("learner", i) == k for i, k in games.items())  # against the opponent drawn
    assert res.scheme.iterations >= 4 and len(res.menagerie) == 1 + res.scheme.iterations
    assert res.freezes <= 160 // 8  # at most one frozen copy per weight version
    n = len({id(e.policy) for e in res.menagerie})
    assert res.W.shape == (n, n)
    np.testing.assert_allclose(res.W + res.W.T, 1.0)
    assert abs(res.nash.sum() - 1) < 1e-9 and ((res.W - 0.5).T @ res.nash >= -1e-7).all()  # a Nash of W − ½


def test_readme_core_route_snippet_runs_and_freezes_once_per_weight_version():
    import re

    readme = (EXAMPLES.parent / "README.md").read_text()
    section = readme[readme.index("## Plug a scheme into your own trainer"):]
    core = next(b for b in re.findall(r"```python\n(.*?)```", section, re.S) if "scheme.curate(" in b)
    freezes = []

    class Trainer:
        calls = 0

        def update_if_ready(self):  # the weights change every 50 episodes
            self.calls += 1
            return self.calls % 50 == 0

    env = {"freeze": lambda policy: freezes.append(1) or object(), "my_policy": None,
           "play": lambda me, opponent: 1.0, "my_trainer": Trainer()}
    exec(core.replace("range(10_000)", "range(300)"), env)
    menagerie = env["menagerie"]
    assert len(menagerie) == 301  # Limit-Uniform's G adds after every episode
    assert len(freezes) == 1 + 300 // 50 == len({id(e.policy) for e in menagerie})  # one copy per version
