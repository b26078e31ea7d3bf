"""SMACBattle's two-seat contract, rewards, outcomes, errors, determinism; SMACEnv; PettingZoo;
the scripted focus-fire policy (docs/design/smac.md §5-6)."""

import numpy as np
import pytest
import torch
from pettingzoo.test import parallel_api_test
from selfplay.envs.smac import FocusFirePolicy, SMACBattle, SMACEnv, SMACParallelEnv


def random_actions(masks, gen):
    """A uniformly random legal action per agent."""
    return [torch.multinomial(m.reshape(-1, m.shape[-1]).float(), 1, generator=gen).reshape(m.shape[:-1]) for m in masks]


def test_contract_shapes_and_auto_reset():
    b = SMACBattle("3m", 8, two_player=True, seed=0)
    obs = b.reset()
    assert [o.shape for o in obs] == [(8, 3, 30), (8, 3, 30)]
    assert b.n_agents == [3, 3] and b.n_actions == [9, 9] and b.episode_limit == 60
    gen = torch.Generator().manual_seed(0)
    finished = 0
    for _ in range(70):
        masks = b.action_masks()
        assert masks[0].dtype == torch.bool and masks[0].shape == (8, 3, 9)
        obs, rewards, done, info = b.step(random_actions(masks, gen))
        assert rewards[0].shape == (8,) and done.shape == (8,) and info["winner"].dtype == torch.long
        ended = info["winner"] >= 0
        assert torch.equal(done, ended | info["draw"])  # every finished game: a winner or a draw
        assert not bool((ended & info["draw"]).any())
        if bool(done.any()):
            finished += int(done.sum())
            # auto-reset: a finished game's returned observation is the new game's first one
            assert bool((b.episode_steps[done] == 0).all())
            assert torch.allclose(obs[0][done], b.get_obs()[0][done])
            assert bool((b.engine.hp[done] == b.engine.hp_max).all())
    assert finished >= 8  # the 60-step limit ends every game at the latest


def test_reward_hand_computed_kill():
    """One marine shot kills an enemy with 6 hp: (6 + 10) / (max_reward / 20), 3m max_reward = 365."""
    b = SMACBattle("3m", 1, two_player=True, reward_only_positive=False)
    b.reset()
    e = b.engine
    e.pos[0] = torch.tensor([[10, 16], [10, 10], [10, 22], [14, 16], [28, 10], [28, 22]], dtype=torch.float32)
    e.hp[0, 3] = 6.0
    b.state_changed()
    _, rewards, done, info = b.step([torch.tensor([[6, 1, 1]]), torch.tensor([[1, 1, 1]])])
    assert not bool(done[0])
    assert rewards[0].item() == pytest.approx((6 + 10) / (365 / 20))
    # seat 1 (not only-positive): -0.5 * (6 hp lost) - 0.5 * 10 for the death
    assert rewards[1].item() == pytest.approx(-(0.5 * 6 + 0.5 * 10) / (365 / 20))


def test_win_bonus_and_sparse():
    for sparse in (False, True):
        b = SMACBattle("3m", 1, two_player=True, reward_sparse=sparse)
        b.reset()
        e = b.engine
        e.pos[0] = torch.tensor([[10, 16], [10, 10], [10, 22], [14, 16], [28, 10], [28, 22]], dtype=torch.float32)
        e.hp[0, 3] = 6.0
        e.hp[0, 4:] = 0.0
        b.state_changed()
        _, rewards, done, info = b.step([torch.tensor([[6, 1, 1]]), torch.tensor([[1, 0, 0]])])
        assert bool(done[0]) and info["winner"].item() == 0 and bool(info["battle_won"][0][0])
        expected = 1 / (365 / 20) if sparse else (6 + 10 + 200) / (365 / 20)
        assert rewards[0].item() == pytest.approx(expected)
        assert rewards[1].item() == pytest.approx(-1 / (365 / 20) if sparse else 0.0)


def test_mutual_destruction_is_a_draw():
    b = SMACBattle("3m", 1, two_player=True)
    b.reset()
    e = b.engine
    e.pos[0] = torch.tensor([[10, 16], [10, 10], [10, 22], [14, 16], [28, 10], [28, 22]], dtype=torch.float32)
    e.hp[0, [1, 2, 4, 5]] = 0.0
    e.hp[0, [0, 3]] = 6.0
    b.state_changed()
    _, _, done, info = b.step([torch.tensor([[6, 0, 0]]), torch.tensor([[6, 0, 0]])])
    assert bool(done[0]) and bool(info["draw"][0]) and info["winner"].item() == -1


def test_invalid_actions_raise():
    b = SMACBattle("3m", 2, two_player=True)
    b.reset()
    ok = torch.ones(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="not available"):
        b.step([torch.zeros(2, 3, dtype=torch.long), ok])  # no-op while alive
    with pytest.raises(ValueError, match="not available"):
        b.step([torch.full((2, 3), 6), ok])  # enemy out of shoot range
    with pytest.raises(ValueError, match="out of range"):
        b.step([torch.full((2, 3), 9), ok])
    with pytest.raises(ValueError, match="shape"):
        b.step([torch.ones(2, 2, dtype=torch.long), ok])
    with pytest.raises(ValueError, match="integer"):
        b.step([torch.ones(2, 3), ok])
    with pytest.raises(ValueError, match="list of 2"):
        b.step([ok])
    single = SMACBattle("3m", 2, two_player=False)
    single.reset()
    with pytest.raises(ValueError, match="list of 1"):
        single.step([ok, ok])
    with pytest.raises(ValueError, match="map_name"):
        SMACBattle("4m", 1)
    with pytest.raises(ValueError, match="unknown SMAC flag"):
        SMACBattle("3m", 1, obs_everything=True)


def play(b, gen, steps):
    trace = []
    obs = b.reset()
    for _ in range(steps):
        obs, rewards, done, info = b.step(random_actions(b.action_masks(), gen))
        trace.append(torch.cat([obs[0].flatten(), rewards[0], done.float()]))
    return torch.stack(trace)


def test_determinism_for_a_fixed_seed():
    a = play(SMACBattle("2s3z", 4, two_player=False, seed=7), torch.Generator().manual_seed(1), 40)
    b = play(SMACBattle("2s3z", 4, two_player=False, seed=7), torch.Generator().manual_seed(1), 40)
    c = play(SMACBattle("2s3z", 4, two_player=False, seed=8), torch.Generator().manual_seed(1), 40)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)  # the seed drives the cooldown jitter


def run_scripted(b, policies, games):
    obs = b.reset()
    wins = np.zeros(len(policies))
    draws = played = 0
    while played < games:
        masks = b.action_masks()
        actions = [p.act(o, None, m)[0] for p, o, m in zip(policies, obs, masks)]
        obs, _, done, info = b.step(actions)
        for s in range(len(policies)):
            wins[s] += int(info["battle_won"][s].sum())
        draws += int(info["draw"].sum())
        played += int(done.sum())
    return wins / played, draws / played


def test_mirrored_symmetric_map_is_even():
    """One focus-fire policy plays both seats of 3m (seat 1 mirrored): about half the games each."""
    b = SMACBattle("3m", 200, two_player=True, mirror=True, seed=3)
    policy = FocusFirePolicy.for_battle(b, 0)
    assert FocusFirePolicy.for_battle(b, 1).move_feats_size == policy.move_feats_size
    (w0, w1), draws = run_scripted(b, [policy, policy], 200)
    assert 0.35 <= w0 <= 0.65 and 0.35 <= w1 <= 0.65, (w0, w1, draws)


# 3m left this test when the scripted enemy became the map trigger's attack-move with SC2's
# closest-threat acquisition (maps.py, engine.py): its 3 marines now focus the closest ally and
# focus fire wins 0.125 of 64 games there (8m: >= 0.7 still).
@pytest.mark.parametrize("map_name", ["8m"])
def test_focus_fire_beats_scripted_ai(map_name):
    b = SMACBattle(map_name, 64, two_player=False, seed=0)
    wins, _ = run_scripted(b, [FocusFirePolicy.for_battle(b, 0)], 64)
    assert wins[0] >= 0.7, wins


def test_random_policy_loses_to_scripted_ai():
    b = SMACBattle("3m", 64, two_player=False, seed=0)
    gen = torch.Generator().manual_seed(0)
    obs = b.reset()
    wins = played = 0
    while played < 64:
        obs, _, done, info = b.step(random_actions(b.action_masks(), gen))
        wins += int(info["battle_won"][0].sum())
        played += int(done.sum())
    assert wins / played < 0.1


def test_smac_env_episode_loop():
    env = SMACEnv("3m", seed=0)
    info = env.get_env_info()
    assert info == {"state_shape": 48, "obs_shape": 30, "n_actions": 9, "n_agents": 3, "episode_limit": 60,
                    "agent_features": ["health", "energy/cooldown", "rel_x", "rel_y"],
                    "enemy_features": ["health", "rel_x", "rel_y"]}
    obs, state = env.reset()
    assert len(obs) == 3 and obs[0].dtype == np.float32 and state.shape == (48,)
    rng = np.random.default_rng(0)
    terminated, steps = False, 0
    while not terminated:
        avail = env.get_avail_actions()
        assert avail[0] == env.get_avail_agent_actions(0)
        actions = [int(rng.choice(np.nonzero(a)[0])) for a in avail]
        reward, terminated, step_info = env.step(actions)
        assert isinstance(reward, float) and "battle_won" in step_info
        steps += 1
    assert steps <= 60 and "dead_allies" in step_info
    # the terminal state stays readable (SMAC runners read it after the last step)
    assert len(env.get_obs()) == 3 and env.get_stats()["battles_game"] == 1
    with pytest.raises(ValueError):
        SMACEnv("3m", step_mul=4)


def test_pettingzoo_parallel_api():
    parallel_api_test(SMACParallelEnv("3m", seed=0), num_cycles=100)
    env = SMACParallelEnv("2m_vs_1z", seed=0, mirror=True)
    assert env.possible_agents == ["red_0", "red_1", "blue_0"]
    parallel_api_test(env, num_cycles=100)


def test_pettingzoo_view_of_two_player_smacv2():
    """SMACv2 in two-player form through PettingZoo: the API test passes on a 5_vs_5 and a 10_vs_11
    scenario (blue has one unit more), the same seed plays the same game, and resets draw new games (a red
    unit's first observation changes over resets; that the teams are redrawn is tests/smac/test_render.py's)."""
    from selfplay.envs.smac import SMACv2ParallelEnv

    parallel_api_test(SMACv2ParallelEnv("zerg_5_vs_5", seed=0), num_cycles=100)
    env = SMACv2ParallelEnv("terran_10_vs_11", seed=0)
    assert sum(a.startswith("red_") for a in env.possible_agents) == 10
    assert sum(a.startswith("blue_") for a in env.possible_agents) == 11
    parallel_api_test(env, num_cycles=40)

    def play(seed):
        env = SMACv2ParallelEnv("protoss_5_vs_5", seed=seed, render_mode="rgb_array")
        obs, _ = env.reset(seed=seed)
        first = {a: o["observation"].copy() for a, o in obs.items()}
        rng, total = np.random.default_rng(0), 0.0
        while env.agents:
            acts = {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items() if a in env.agents}
            obs, rew, *_ = env.step(acts)
            total += sum(rew.values())
        assert env.render().shape == (256, 256, 3)
        return first, total

    (a, ra), (b, rb) = play(3), play(3)
    assert ra == rb and all(np.array_equal(a[k], b[k]) for k in a)
    env = SMACv2ParallelEnv("protoss_5_vs_5", seed=1)
    starts = set()
    for _ in range(6):
        obs, _ = env.reset()
        starts.add(tuple(np.round(obs["red_0"]["observation"], 4)))
    assert len(starts) > 1


@pytest.mark.parametrize("map_name", ["3m", "3s5z", "MMM"])
def test_mirrored_seats_see_the_same_game(map_name):
    """On a symmetric map with seat 1 mirrored, both seats get identical observations, states and
    masks, and stay identical when they take the same actions in their own frames (east = towards
    the enemy for both)."""
    b = SMACBattle(map_name, 2, two_player=True, mirror=True, seed=0)
    obs = b.reset()
    for _ in range(4):
        assert torch.allclose(obs[0], obs[1], atol=1e-5)
        s0, s1 = b.get_state()
        assert torch.allclose(s0, s1, atol=1e-5)
        m0, m1 = b.action_masks()
        assert torch.equal(m0, m1)
        a = torch.full((2, b.n_agents[0]), 4)
        obs, _, _, _ = b.step([a, a.clone()])


def test_two_player_battles_mirror_symmetric_maps_by_default():
    """Left unsaid, ``mirror`` is what the suite's training uses: a two-player battle on a map whose sides
    field the same units mirrors seat 1 (both seats see the same start), one on another map or against the
    scripted AI does not; anything but a bool or None is refused in words."""
    assert SMACBattle("3m", 1, two_player=True).mirror is True
    assert SMACBattle("5m_vs_6m", 1, two_player=True).mirror is False
    assert SMACBattle("3m", 1, two_player=False).mirror is False
    assert SMACBattle("3m", 1, two_player=True, mirror=False).mirror is False
    obs = SMACBattle("2s3z", 1, two_player=True, seed=0).reset()
    assert torch.allclose(obs[0], obs[1], atol=1e-5)
    with pytest.raises(ValueError, match="mirror must be True, False or None"):
        SMACBattle("3m", 1, mirror="yes")


def _same(a, b, what: str) -> None:
    if isinstance(a, list):
        for k, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{what}[{k}]")
        return
    assert a.dtype == b.dtype and a.shape == b.shape, what
    assert torch.equal(a, b), what


@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
def test_a_copied_battle_plays_on_exactly_like_the_original(copier):
    """Pickling or deep-copying keeps the compiled lane's numpy views tied to the battle's tensors."""
    import copy
    import pickle

    a = SMACBattle("3m", 4, seed=0)
    gen = torch.Generator().manual_seed(0)

    def actions(battle):
        return [(torch.rand(m.shape, generator=gen) * m).argmax(-1) for m in battle.action_masks()]

    for _ in range(5):
        a.step(actions(a))
    b = pickle.loads(pickle.dumps(a)) if copier == "pickle" else copy.deepcopy(a)
    for step in range(100):  # past the episode limit (60): finished games reset
        acts = actions(a)
        oa, ra, da, _ = a.step(acts)
        ob, rb, db, _ = b.step(acts)
        _same(oa, ob, f"obs {step}"), _same(ra, rb, f"rewards {step}"), _same(da, db, f"done {step}")
        _same(a.get_state(), b.get_state(), f"state {step}")


@pytest.mark.parametrize("map_name,two_player", [("MMM", False), ("3m", True)])
def test_the_tensor_lane_plays_the_numpy_lanes_games(map_name, two_player):
    """``SMACBattle.step`` on tensors (the lane a GPU engine takes) and ``fast_step`` on numpy arrays (the
    CPU's) share the compiled rules; here both run on the CPU build and must give the same games."""
    a = SMACBattle(map_name, 4, two_player=two_player, mirror=two_player, seed=5)
    b = SMACBattle(map_name, 4, two_player=two_player, mirror=two_player, seed=5)
    b.fast = False  # the tensor lane, on CPU arrays
    gen = torch.Generator().manual_seed(6)
    finished = 0
    for step in range(80):
        masks = a.action_masks()
        _same(masks, b.action_masks(), f"masks {step}")
        _same(a.get_state(), b.get_state(), f"state {step}")
        acts = [(torch.rand(m.shape, generator=gen) * m).argmax(-1) for m in masks]
        oa, ra, da, ia = a.step(acts)
        ob, rb, db, ib = b.step(acts)
        _same(oa, ob, f"obs {step}"), _same(ra, rb, f"rewards {step}"), _same(da, db, f"done {step}")
        for key in ia:
            _same(ia[key], ib[key], f"info[{key}] {step}")
        finished += int(da.sum())
    assert finished > 0


def test_engine_names_the_build_and_rejects_anything_else():
    assert SMACBattle("3m", 1, engine="numba").engine.build.name == "cpu"  # the CPU build's old name
    assert SMACBattle("3m", 1, engine="cpu").engine.build.name == "cpu"
    with pytest.raises(ValueError, match=r"engine must be one of .*'torch'"):
        SMACBattle("3m", 1, engine="torch")
    with pytest.raises(ValueError, match=r"engine='cuda' runs on device type 'cuda', got device='cpu'"):
        SMACBattle("3m", 1, engine="cuda")
