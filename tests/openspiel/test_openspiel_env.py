"""The OpenSpiel two-seat environment (envs/openspiel): masks, observations, chance, rewards, errors."""

import numpy as np
import pytest
import torch

pyspiel = pytest.importorskip("pyspiel")

from selfplay.envs.base import TwoPlayerBatchedEnv  # noqa: E402
from selfplay.envs.openspiel import OpenSpielGame, load_two_player_zero_sum  # noqa: E402

from selfplay.training.registry import check_env_name, make_env  # noqa: E402


def random_legal(masks, rng):
    """A uniformly random legal action per game and seat (the waiting seat: its only action, the no-op)."""
    out = []
    for mask in masks:
        m = mask.numpy()
        scores = rng.random(m.shape) * m
        out.append(torch.as_tensor(scores.argmax(axis=1)))
    return out


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker", "goofspiel(num_cards=4)", "liars_dice", "matrix_rps"])
def test_masks_observations_and_rewards_follow_the_game(game):
    env = OpenSpielGame(game, num_envs=8, seed=0)
    assert isinstance(env, TwoPlayerBatchedEnv)
    assert env.n_actions == env.game.num_distinct_actions() + 1 and env.noop_action == env.n_actions - 1
    rng = np.random.default_rng(0)
    obs = env.reset()
    totals = np.zeros((2, env.num_envs))
    finished = 0
    for _ in range(40):
        masks = env.action_masks()
        mover = env.current_player()
        for i in range(env.num_envs):
            state = env._states[i]
            assert state.current_player() == mover[i]
            for seat in range(2):  # each seat sees its own information state
                np.testing.assert_array_equal(obs[seat][i].numpy(), np.float32(state.information_state_tensor(seat)))
            legal = np.zeros(env.n_actions, dtype=bool)
            legal[state.legal_actions(mover[i])] = True
            np.testing.assert_array_equal(masks[mover[i]][i].numpy(), legal)
            waiting = np.zeros(env.n_actions, dtype=bool)
            waiting[env.noop_action] = True  # the seat not to move has only the no-op
            np.testing.assert_array_equal(masks[1 - mover[i]][i].numpy(), waiting)
        obs, rewards, done, info = env.step(random_legal(masks, rng))
        totals += np.stack([r.numpy() for r in rewards])
        np.testing.assert_allclose(rewards[0].numpy(), -rewards[1].numpy())  # zero-sum
        for i in np.flatnonzero(done.numpy()):
            finished += 1
            r0 = info["episode_reward"][0][i].item()
            assert totals[0, i] == pytest.approx(r0)  # the step rewards sum to the game's return
            assert info["winner"][i].item() == (0 if r0 > 0 else 1 if r0 < 0 else -1)
            assert info["draw"][i].item() == (r0 == 0)
            totals[:, i] = 0.0
        assert (info["winner"][~done] == -1).all()
    assert finished > 0


def test_chance_is_sampled_from_the_game_and_play_reaches_the_exact_value():
    # uniform random play in Kuhn poker: the first player's expected return is +1/8 (OpenSpiel's value)
    env = OpenSpielGame("kuhn_poker", num_envs=2000, seed=3)
    rng = np.random.default_rng(3)
    env.reset()
    returns = []
    while len(returns) < 20000:
        _, _, done, info = env.step(random_legal(env.action_masks(), rng))
        returns += info["episode_reward"][0][done].tolist()
    mean = float(np.mean(returns))
    stderr = float(np.std(returns) / np.sqrt(len(returns)))
    assert abs(mean - 0.125) < 4 * stderr + 1e-3


def test_simultaneous_games_are_played_turn_based_without_revealing_the_first_move():
    env = OpenSpielGame("matrix_rps", num_envs=3, seed=0)
    assert env.game.get_type().dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
    assert (env.current_player() == 0).all()
    obs, _, done, _ = env.step([torch.tensor([0, 1, 2]), torch.full((3,), env.noop_action)])
    assert not done.any() and (env.current_player() == 1).all()
    # seat 1 must choose without knowing seat 0's move: its observation is the same whatever that move was
    assert torch.equal(obs[1][0], obs[1][1]) and torch.equal(obs[1][1], obs[1][2])
    _, rewards, done, info = env.step([torch.zeros(3, dtype=torch.long), torch.tensor([1, 1, 1])])
    assert done.all()
    np.testing.assert_allclose(rewards[0].numpy(), [-1.0, 0.0, 1.0])  # rock, paper, scissors against paper
    assert info["draw"].tolist() == [False, True, False] and info["winner"].tolist() == [1, -1, 0]


def test_waiting_seat_action_is_ignored_and_illegal_moves_are_refused():
    env = OpenSpielGame("kuhn_poker", num_envs=2, seed=0)
    env.reset()
    # seat 0 moves first in Kuhn: seat 1's action is ignored whatever it is
    env.step([torch.tensor([0, 0]), torch.tensor([1, 0])])
    assert (env.current_player() == 1).all()
    with pytest.raises(ValueError, match=r"actions\[1\]\[0\] = 2 is not legal"):
        env.step([torch.tensor([0, 0]), torch.tensor([2, 0])])  # the no-op for the seat to move
    with pytest.raises(ValueError, match="integer tensor of shape"):
        env.step([torch.zeros(3, dtype=torch.long), torch.zeros(3, dtype=torch.long)])
    with pytest.raises(ValueError, match="pair"):
        env.step([torch.zeros(2, dtype=torch.long)])


def test_same_seed_same_games():
    def play(seed):
        env = OpenSpielGame("leduc_poker", num_envs=16, seed=seed)
        rng = np.random.default_rng(0)
        obs = env.reset()
        seen = [obs[0].clone()]
        for _ in range(10):
            obs, _, _, _ = env.step(random_legal(env.action_masks(), rng))
            seen.append(obs[0].clone())
        return torch.stack(seen)

    assert torch.equal(play(5), play(5))
    assert not torch.equal(play(5), play(6))


@pytest.mark.parametrize("name, message", [
    ("tic_tac_toe", "no information-state tensor"),
    ("leduc_poker(players=3)", "3 players"),
    ("matrix_pd", "GENERAL_SUM"),
    ("no_such_game", "not an OpenSpiel game"),
    ("kuhn_poker(", "must look like"),
    ("kuhn_poker(players=x)", "cannot be loaded"),
])
def test_games_the_suite_cannot_play_are_refused_clearly(name, message):
    with pytest.raises(ValueError, match=message):
        load_two_player_zero_sum(name)
    with pytest.raises(ValueError, match=message):
        check_env_name(f"openspiel:{name}")


def test_registry_builds_games_with_parameters():
    assert check_env_name("openspiel:goofspiel(num_cards=5)") == "openspiel:goofspiel(num_cards=5)"
    env = make_env("openspiel:goofspiel(num_cards=5)", 4, seed=1)
    assert env.num_game_actions == 5  # one action per card
    assert env.obs_size == len(env.game.new_initial_state().information_state_tensor(0))
    with pytest.raises(ValueError, match="num_envs"):
        OpenSpielGame("kuhn_poker", num_envs=0)
