"""SMACv2 games on one compiled engine (envs/smac/smacv2_games.py): each game's draw writes the same
unit constants a one-game engine of that draw holds, games restart on their own draw without
touching the others, a seed gives the same games, and the one-game env plays the batched rules."""

import numpy as np
import pytest
from selfplay.envs.smac import StarCraftCapabilityEnvWrapper, get_scenario
from selfplay.envs.smac.engine import BattleEngine
from selfplay.envs.smac.records import UnitStatic
from selfplay.envs.smac.smacv2_battle import SMACv2Battle


def _random_actions(masks, rng):
    return [(rng.random(m.shape) * m.numpy()).argmax(-1) for m in masks]


@pytest.mark.parametrize("scenario", ["terran_10_vs_11", "protoss_5_vs_5", "zerg_5_vs_5"])
def test_a_draw_writes_the_constants_of_a_one_game_engine_of_it(scenario):
    """Every UnitStatic field (pair tables included) and the spawn points of each game equal those of
    a BattleEngine built from that game's draw alone."""
    b = SMACv2Battle(scenario, num_envs=4, seed=1, two_player=False)
    b.reset()
    for e in range(4):
        ref = BattleEngine(b.games.specs[e], 1, seed=0, scripted_sides=(1,))
        for name, ours, theirs in zip(UnitStatic._fields, b.engine.static, ref.static):
            assert np.array_equal(ours[e], theirs[0]), (e, name)
        assert np.array_equal(b.games._spawn[e], ref.spawn_points()[0])
        assert np.array_equal(b.engine.arrays("pos")[e], ref.arrays("pos")[0])
        assert b.engine.arrays("hp")[e].tolist() == ref.arrays("hp")[0].tolist()


def test_a_finished_game_restarts_on_a_new_draw_alone():
    """Auto-reset: the finished game starts over (step 0, full hp, cones east, no last action, no
    tag) on a new draw; the other games keep their episodes."""
    b = SMACv2Battle("zerg_5_vs_5", num_envs=3, seed=4, two_player=False, conic_fov=True)
    b.reset()
    rng = np.random.default_rng(0)
    for _ in range(400):
        steps_before = b.episode_steps.copy()
        specs_before = list(b.games.specs)
        _, _, done, _ = b.step(_random_actions(b.action_masks(), rng))
        done = done.numpy()
        if done.any():
            break
    assert done.any() and not done.all()
    seat = b.games.seats[0]
    for e in range(3):
        if done[e]:
            assert b.episode_steps[e] == 0 and b.games.specs[e] is not specs_before[e]
            assert np.array_equal(b.engine.arrays("hp")[e], b.engine.static.hp_max[e])
            assert np.array_equal(seat.fov[e], np.tile([1.0, 0.0], (5, 1)))
            assert not seat.last_action[e].any() and (seat.enemy_tags[e] == -1).all()
        else:
            assert b.episode_steps[e] == steps_before[e] + 1 and b.games.specs[e] is specs_before[e]


@pytest.mark.parametrize("scenario", ["protoss_5_vs_5_epo", "terran_5_vs_5"])
def test_same_seed_same_games(scenario):
    """Two-player battles (EPO: the observation draws too), over resets: the same seed gives the same
    observations, states, masks and rewards; another seed other ones."""
    def play(seed):
        b = SMACv2Battle(scenario, num_envs=3, seed=seed)
        out = [o.numpy() for o in b.reset()]
        rng = np.random.default_rng(1)
        for _ in range(60):
            masks = b.action_masks()
            obs, rew, done, _ = b.step(_random_actions(masks, rng))
            out += [o.numpy() for o in obs + rew + b.get_state() + masks] + [done.numpy()]
        return out

    a, again, other = play(3), play(3), play(4)
    assert all(np.array_equal(x, y) for x, y in zip(a, again))
    assert not all(np.array_equal(x, y) for x, y in zip(a, other) if x.shape == y.shape)


def test_an_illegal_action_raises_before_the_step():
    b = SMACv2Battle("protoss_5_vs_5", num_envs=2, seed=0, two_player=False)
    b.reset()
    masks = b.action_masks()[0].numpy()
    actions = masks.argmax(-1)
    actions[1, 2] = np.flatnonzero(~masks[1, 2])[0]
    pos = b.engine.arrays("pos").copy()
    with pytest.raises(ValueError, match=r"actions\[0\] of game 1 are not available"):
        b.step([actions])
    assert np.array_equal(b.engine.arrays("pos"), pos) and (b.episode_steps == 0).all()


def test_the_wrapper_plays_seeded_episodes_on_the_compiled_step():
    """EPyMARL's loop on the one-game wrapper: seeded, episodes end with SMACv2's info and counters,
    and the rewards of an episode sum to its return in the compiled bookkeeping."""
    def play(seed):
        env = StarCraftCapabilityEnvWrapper(seed=seed, **get_scenario("protoss_5_vs_5").env_args())
        rng = np.random.default_rng(2)
        trace, episodes = [], 0
        env.reset()
        total = 0.0
        while episodes < 2:
            trace += [np.stack(env.get_obs()), env.get_state(), np.array(env.get_avail_actions())]
            actions = [int(rng.choice(np.flatnonzero(a))) for a in env.get_avail_actions()]
            reward, terminated, info = env.step(actions)
            total += reward
            trace.append(np.float64(reward))
            if terminated:
                episodes += 1
                assert set(info) >= {"battle_won", "dead_allies", "dead_enemies"}
                assert total == pytest.approx(float(env.games.episode.returns0[0]), rel=1e-5)
                env.reset()
                total = 0.0
        assert env.get_stats()["battles_game"] == 2
        return trace

    a, b = play(5), play(5)
    assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def test_a_pickled_battle_plays_on_as_the_original():
    import pickle

    a = SMACv2Battle("zerg_5_vs_5_epo", num_envs=2, seed=8)
    a.reset()
    b = pickle.loads(pickle.dumps(a))
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    for _ in range(5):
        out_a = a.step(_random_actions(a.action_masks(), rng_a))
        out_b = b.step(_random_actions(b.action_masks(), rng_b))
        for x, y in zip(out_a[0] + out_a[1] + a.get_state(), out_b[0] + out_b[1] + b.get_state()):
            assert np.array_equal(x.numpy(), y.numpy())
