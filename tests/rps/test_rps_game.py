"""RirRPS and the other repeated matrix games: rules, views, tie-breaking, resets (docs/design/selfplay.md §4)."""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from selfplay.envs.rps import (
    BIASED_RPS_PAYOFF,
    PAPER,
    ROCK,
    RPSLS,
    SCISSORS,
    BiasedRPS,
    MatrixGameParallelEnv,
    RepeatedMatrixGame,
    RirRPS,
    make_game,
)


def decode_blocks(obs: torch.Tensor, n_slots: int) -> torch.Tensor:
    """(n, n_recall·n_slots) one-hot blocks -> (n, n_recall) slot indices (checks one-hotness)."""
    blocks = obs.reshape(obs.shape[0], -1, n_slots)
    assert torch.all(blocks.sum(-1) == 1)
    return blocks.argmax(-1)


def test_shapes_and_attributes():
    env = RirRPS(5, seed=0)
    obs = env.reset()
    assert env.obs_size == 30 and env.n_actions == 3 and env.episode_length == 10 and env.num_envs == 5
    assert env.trajectory_size == 90
    assert [o.shape for o in obs] == [(5, 30), (5, 30)]
    assert all(m.shape == (5, 3) and m.dtype == torch.bool and m.all() for m in env.action_masks())
    # The first observation is all-empty: every block on slot 9.
    assert torch.all(decode_blocks(obs[0], 10) == 9) and torch.all(decode_blocks(obs[1], 10) == 9)


def test_rewards_follow_rock_paper_scissors():
    env = RirRPS(9, seed=0)
    env.reset()
    a0 = torch.arange(3).repeat_interleave(3)
    a1 = torch.arange(3).repeat(3)
    _, (r0, r1), done, info = env.step([a0, a1])
    beats = {(PAPER, ROCK), (SCISSORS, PAPER), (ROCK, SCISSORS)}
    expected = torch.tensor([1.0 if (x, y) in beats else -1.0 if (y, x) in beats else 0.0
                             for x, y in zip(a0.tolist(), a1.tolist())])
    assert torch.equal(r0, expected) and torch.equal(r1, -expected)
    assert not done.any() and torch.all(info["winner"] == -1) and not info["draw"].any()


def test_recall_blocks_are_oldest_to_newest_from_each_seats_view():
    env = RirRPS(2, n_recall=3, seed=0)
    env.reset()
    moves = [(ROCK, PAPER), (SCISSORS, ROCK), (PAPER, PAPER), (SCISSORS, PAPER)]
    for t, (x, y) in enumerate(moves):
        obs, *_ = env.step([torch.tensor([x, y]), torch.tensor([y, x])])
        played = moves[: t + 1][-3:]
        pad = [9] * (3 - len(played))
        seat0_game0 = pad + [3 * a + b for a, b in played]  # game 0: seat 0 played x, seat 1 played y
        seat1_game0 = pad + [3 * b + a for a, b in played]  # seat 1 sees its own move first
        assert decode_blocks(obs[0], 10)[0].tolist() == seat0_game0
        assert decode_blocks(obs[1], 10)[0].tolist() == seat1_game0
        # Game 1 is game 0 with the seats swapped: each seat sees what the other seat saw in game 0.
        assert decode_blocks(obs[0], 10)[1].tolist() == seat1_game0
        assert decode_blocks(obs[1], 10)[1].tolist() == seat0_game0


def test_episode_length_winner_and_auto_reset():
    env = RirRPS(3, repetitions=10, seed=1)
    env.reset()
    # Game 0: seat 0 always wins; game 1: seat 1 always wins; game 2: seat 0 wins 4, loses 5, ties 1.
    script0 = [[PAPER, ROCK, ROCK]] * 4 + [[PAPER, ROCK, ROCK]] * 5 + [[PAPER, ROCK, ROCK]]
    script1 = [[ROCK, ROCK, SCISSORS]] * 4 + [[ROCK, ROCK, PAPER]] * 5 + [[ROCK, ROCK, ROCK]]
    script1 = [[ROCK, PAPER, c] for _, _, c in script1]
    for t in range(10):
        obs, rewards, done, info = env.step([torch.tensor(script0[t]), torch.tensor(script1[t])])
        if t < 9:
            assert not done.any() and torch.all(info["winner"] == -1)
    assert done.all()
    assert info["winner"].tolist() == [0, 1, 1]
    assert info["episode_reward"][0].tolist() == [10.0, -10.0, -1.0]
    assert info["episode_reward"][1].tolist() == [-10.0, 10.0, 1.0]
    # Auto-reset: the returned observation is the new game's first (all empty) and play continues.
    assert torch.all(decode_blocks(obs[0], 10) == 9) and torch.all(decode_blocks(obs[1], 10) == 9)
    for t in range(10):
        _, _, done, info = env.step([torch.zeros(3, dtype=torch.long), torch.ones(3, dtype=torch.long)])
        assert bool(done.all()) == (t == 9)
    assert info["winner"].tolist() == [1, 1, 1] and info["episode_reward"][1].tolist() == [10.0] * 3


def test_ties_are_broken_uniformly_and_reproducibly():
    n = 20000
    env = RirRPS(n, repetitions=2, seed=123)
    env.reset()
    rock = torch.zeros(n, dtype=torch.long)
    env.step([rock, rock])
    _, _, done, info = env.step([rock, rock])
    assert done.all() and torch.all(info["winner"] >= 0) and not info["draw"].any()
    share = info["winner"].float().mean().item()
    assert abs(share - 0.5) < 4 * 0.5 / np.sqrt(n)  # 4 standard errors
    again = RirRPS(n, repetitions=2, seed=123)
    again.reset()
    again.step([rock, rock])
    assert torch.equal(again.step([rock, rock])[3]["winner"], info["winner"])


def test_trajectory_vectors_are_joint_actions_of_the_first_nine_repetitions():
    env = RirRPS(2, seed=0)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    plays = torch.randint(0, 3, (10, 2, 2), generator=gen)  # (step, seat, game)
    for t in range(10):
        _, _, done, info = env.step([plays[t, 0], plays[t, 1]])
        if t < 9:
            assert torch.all(info["trajectory"][0] == 0)
    for seat in (0, 1):
        traj = info["trajectory"][seat]
        assert traj.shape == (2, 90)
        slots = decode_blocks(traj, 10)
        expected = 3 * plays[:9, seat] + plays[:9, 1 - seat]  # own move first, repetitions 1..9
        assert torch.equal(slots, expected.T)


def test_other_games_payoffs():
    rpsls = RPSLS(25, seed=0)
    assert rpsls.obs_size == 3 * 26 and rpsls.n_actions == 5 and rpsls.symmetric
    rpsls.reset()
    a0 = torch.arange(5).repeat_interleave(5)
    a1 = torch.arange(5).repeat(5)
    _, (r0, _), _, _ = rpsls.step([a0, a1])
    table = r0.reshape(5, 5)
    assert torch.equal(table, -table.T)
    assert torch.all((table == 1).sum(1) == 2) and torch.all((table == -1).sum(1) == 2)  # each beats two
    assert table[4, 0] == 1 and table[3, 4] == 1 and table[2, 3] == 1  # Spock-rock, lizard-Spock, scissors-lizard

    biased = BiasedRPS(9, seed=0)
    biased.reset()
    _, (r0, r1), _, _ = biased.step([torch.arange(3).repeat_interleave(3), torch.arange(3).repeat(3)])
    payoff = torch.tensor(BIASED_RPS_PAYOFF)
    assert torch.equal(r0.reshape(3, 3), payoff) and torch.equal(r1, -r0)
    nash = torch.tensor([1.0, 10.0, 5.0]) / 16  # documented equilibrium: no action does better against it
    assert torch.allclose(payoff @ nash, torch.zeros(3), atol=1e-6)

    # Any zero-sum matrix, even an asymmetric one: seat 0 gets payoff[a0, a1], seat 1 its negative.
    custom = RepeatedMatrixGame([[2.0, -1.0], [0.0, 3.0]], 4, n_recall=1, repetitions=3, seed=0)
    assert custom.obs_size == 5 and not custom.symmetric
    custom.reset()
    _, (r0, r1), _, _ = custom.step([torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 0, 1])])
    assert r0.tolist() == [2.0, -1.0, 0.0, 3.0] and r1.tolist() == [-2.0, 1.0, -0.0, -3.0]
    assert make_game("rpsls", 3).n_actions == 5

    # Biased RPS returns that cancel in real numbers are ties despite float32 rounding: this sequence
    # sums to 1.5e-8 in float32 (0.1 three times, −0.5, +0.5, −0.1 three times), yet is a coin flip.
    ties = BiasedRPS(4000, repetitions=8, seed=0)
    ties.reset()
    plays = [(SCISSORS, PAPER)] * 3 + [(ROCK, PAPER), (PAPER, ROCK)] + [(PAPER, SCISSORS)] * 3
    for x, y in plays:
        _, _, done, info = ties.step([torch.full((4000,), x), torch.full((4000,), y)])
    assert done.all() and abs(info["winner"].float().mean().item() - 0.5) < 0.04


@pytest.mark.parametrize(
    "kwargs, param",
    [
        (dict(payoff=[[0.0, 1.0]], num_envs=1), "payoff"),
        (dict(payoff=[[0.0]], num_envs=1), "payoff"),
        (dict(payoff=[[0.0, float("nan")], [0.0, 0.0]], num_envs=1), "payoff"),
        (dict(payoff=[[0.0, 1.0], [-1.0, 0.0]], num_envs=0), "num_envs"),
        (dict(payoff=[[0.0, 1.0], [-1.0, 0.0]], num_envs=2, n_recall=0), "n_recall"),
        (dict(payoff=[[0.0, 1.0], [-1.0, 0.0]], num_envs=2, repetitions=0), "repetitions"),
    ],
)
def test_bad_construction_raises(kwargs, param):
    with pytest.raises(ValueError, match=param):
        RepeatedMatrixGame(**kwargs)


def test_bad_actions_raise():
    env = RirRPS(2, seed=0)
    env.reset()
    with pytest.raises(ValueError, match=r"actions\[1\]"):
        env.step([torch.tensor([0, 1]), torch.tensor([0, 3])])
    with pytest.raises(ValueError, match=r"actions\[0\]"):
        env.step([torch.tensor([0.0, 1.0]), torch.tensor([0, 1])])
    with pytest.raises(ValueError, match="pair"):
        env.step([torch.tensor([0, 1])])
    with pytest.raises(ValueError, match="name"):
        make_game("chess", 2)


def test_pettingzoo_parallel_api():
    from pettingzoo.test import parallel_api_test, parallel_seed_test

    for game in ("rirrps", "rpsls"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            parallel_api_test(MatrixGameParallelEnv(game, seed=0), num_cycles=50)
    parallel_seed_test(lambda: MatrixGameParallelEnv("biased-rps"), num_cycles=30)  # same seed, same play


def test_pettingzoo_view_plays_the_same_game():
    env = MatrixGameParallelEnv("rirrps", seed=3)
    obs, _ = env.reset(seed=3)
    assert obs["player_0"].shape == (30,) and obs["player_0"].dtype == np.float32
    total = 0.0
    for t in range(10):
        obs, rew, term, trunc, infos = env.step({"player_0": PAPER, "player_1": ROCK})
        total += rew["player_0"]
        assert rew["player_1"] == -rew["player_0"]
    assert total == 10.0 and all(term.values()) and env.agents == []
    assert infos["player_0"]["winner"] == "player_0" and infos["player_1"]["episode_reward"] == -10.0
    # Terminal observation from player_1's view: own move (rock) first -> slot 3·0 + 1 = 1.
    assert decode_blocks(torch.as_tensor(obs["player_1"])[None], 10).tolist() == [[1, 1, 1]]
    with pytest.raises(ValueError, match="reset"):
        env.step({"player_0": 0, "player_1": 0})


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["rirrps", "biased-rps", "rpsls"]), st.integers(1, 4), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_random_play_is_consistent(game, n_recall, repetitions, seed):
    """Over random play: returns add up the step payoffs, the winner agrees with them, both seats'
    observations are the same joint actions with the moves swapped, and the game restarts on time."""
    env = make_game(game, 8, n_recall=n_recall, repetitions=repetitions, seed=seed)
    k = env.n_actions
    obs = env.reset()
    gen = torch.Generator().manual_seed(seed)
    for episode in range(2):
        total = torch.zeros(8)
        for t in range(repetitions):
            a0, a1 = torch.randint(0, k, (8,), generator=gen), torch.randint(0, k, (8,), generator=gen)
            obs, (r0, r1), done, info = env.step([a0, a1])
            assert torch.equal(r0, env.payoff[a0, a1]) and torch.equal(r1, -r0)
            total += r0
            assert bool(done.all()) == (t == repetitions - 1) and not bool(done.any() and not done.all())
            if not done.any():
                s0, s1 = decode_blocks(obs[0], k * k + 1), decode_blocks(obs[1], k * k + 1)
                assert s0[:, -1].tolist() == (k * a0 + a1).tolist() and s1[:, -1].tolist() == (k * a1 + a0).tolist()
                swapped = torch.where(s0 == k * k, k * k, (s0 % k) * k + s0 // k)
                assert torch.equal(swapped, s1)
        assert torch.allclose(info["episode_reward"][0], total) and torch.allclose(info["episode_reward"][1], -total)
        decided = total.abs() > 1e-3
        assert torch.equal(info["winner"][decided], (total[decided] < 0).long())
        assert torch.all(decode_blocks(obs[0], k * k + 1) == k * k)  # restarted: all empty
        for seat in range(2):  # observation ids: the recalled slots as base-(k²+1) digits, oldest first
            digits = decode_blocks(obs[seat], k * k + 1)
            expected = sum(digits[:, j] * (k * k + 1) ** (n_recall - 1 - j) for j in range(n_recall))
            assert torch.equal(env.observation_ids()[seat], expected)


def test_observation_ids_identify_observations():
    """Two rows share an id exactly when they share the observation vector; ids lie in [0, n_observation_ids)."""
    env = RirRPS(64, seed=0)
    env.reset()
    gen = torch.Generator().manual_seed(1)
    for _ in range(4):
        env.step([torch.randint(0, 3, (64,), generator=gen), torch.randint(0, 3, (64,), generator=gen)])
        obs, ids = torch.cat(env.observe()), torch.cat(env.observation_ids())
        assert env.n_observation_ids == 1000 and ids.min() >= 0 and ids.max() < 1000
        same_id = ids[:, None] == ids[None, :]
        same_obs = (obs[:, None, :] == obs[None, :, :]).all(-1)
        assert torch.equal(same_id, same_obs) and not bool(same_id.all())
