import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from selfplay.agents.reference import FixedActionPolicy
from selfplay.envs.rps import RirRPS

from selfplay import make_scheme
from selfplay.training.adapters import (
    MatchEvaluator,
    OpponentEnv,
    PolicyWrapper,
    SelfPlaySession,
    SelfPlayVecEnv,
    SelfPlayVectorEnv,
    SessionVectorEnv,
)
from selfplay.training.matches import play_matches


def always(action):
    return PolicyWrapper(lambda obs: np.full(len(obs), action))


def fixed(action):
    return FixedActionPolicy(action, 3)  # picklable: can cross to AsyncVectorEnv workers


def last_joint_action(obs):
    """(learner's move, opponent's move) of the newest recall block of a RirRPS observation."""
    slot = int(np.argmax(np.asarray(obs)[-10:]))
    assert slot < 9, "the newest block is empty: not a final observation"
    return slot // 3, slot % 3


def test_policy_wrapper_accepts_predict_act_and_callables():
    class SB3Like:
        def predict(self, obs, deterministic=False):
            return np.ones(len(obs), dtype=int), None

    class Actor:
        def act(self, obs):
            return [2] * len(obs)

    obs = torch.zeros(4, 30)
    for model, expected in [(SB3Like(), 1), (Actor(), 2), (lambda o: np.zeros(len(o)), 0)]:
        actions, state, _ = PolicyWrapper(model).act(obs, None)
        assert actions.dtype == torch.long and actions.tolist() == [expected] * 4 and state is None
    with pytest.raises(ValueError, match="illegal"):
        always(1).act(obs, None, mask=torch.tensor([[True, False, True]] * 4))
    with pytest.raises(ValueError, match="model"):
        PolicyWrapper(42)


def test_the_session_route_imports_neither_torch_nor_gymnasium():
    code = ("import sys\nfrom selfplay.training.adapters import SelfPlaySession\n"
            "s = SelfPlaySession('delta-limit-uniform:delta=0', 'pi', seed=0)\n"
            "for _ in range(3):\n    s.end_episode(s.start_episode(), 1)\n"
            "assert len(s.menagerie) == 4\n"
            "print(sorted(m for m in ('torch', 'gymnasium', 'stable_baselines3') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_session_applies_omega_and_g_and_shares_one_snapshot_per_weight_version():
    session = SelfPlaySession("delta-uniform:delta=0", always(0), seed=0)
    assert session.on_episode_start().id == 0
    session.on_episode_end(1)
    assert len(session.menagerie) == 2 and session.payoff.win_rate("learner", 0) == 1.0
    new = always(1)
    session.on_policy_update(new)
    for _ in range(3):
        session.on_episode_start()
        session.on_episode_end(0)
    added = session.menagerie.entries[2:]
    assert all(e.policy is new and e.tags["weight_version"] == 1 for e in added)  # shared, never copied
    with pytest.raises(ValueError, match="before on_episode_start"):
        session.on_episode_end(1)
    with pytest.raises(ValueError, match="outcome"):
        session.on_episode_start()
        session.on_episode_end(0.3)


def test_freeze_runs_at_most_once_per_weight_version_and_only_when_g_adds():
    calls = []

    def freeze(tag):
        return lambda: calls.append(tag) or always(tag % 3)

    session = SelfPlaySession("delta-uniform:delta=0", always(0), seed=0)
    session.on_policy_update(freeze=freeze(1))
    for _ in range(5):  # G adds after every game: version 1 is frozen once, shared by 5 entries
        session.end_episode(session.start_episode(), 1)
    assert calls == [1] and len({id(e.policy) for e in session.menagerie.entries[1:]}) == 1
    session.on_policy_update(freeze=freeze(2))
    session.on_policy_update(freeze=freeze(3))  # version 2 never entered: never frozen
    session.end_episode(session.start_episode(), 1)
    assert calls == [1, 3]
    psro = make_scheme("psro:window=50", evaluate=lambda e, o, m: np.full(len(o), 0.5))
    session = SelfPlaySession(psro, always(0), seed=0)
    session.on_policy_update(freeze=freeze(4))
    for _ in range(10):  # PSRO's window is not full: G adds nothing, nothing is frozen
        session.end_episode(session.start_episode(), 1)
    assert calls == [1, 3] and len(session.menagerie) == 1
    with pytest.raises(ValueError, match="exactly one"):
        session.on_policy_update()


def test_session_without_initial_policy_until_the_env_exists_and_explicit_reseeding():
    session = SelfPlaySession("delta-uniform:delta=0", seed=3)
    with pytest.raises(ValueError, match="add_initial_policy"):
        session.start_episode()
    session.add_initial_policy(fixed(0))
    with pytest.raises(ValueError, match="already"):
        session.add_initial_policy(fixed(1))
    draws = []
    for seed in (1, 2):  # an environment reset with any seed leaves the opponent sampler alone
        s = SelfPlaySession("delta-uniform:delta=0", fixed(0), seed=3)
        env = OpponentEnv(RirRPS(1, seed=0), s)
        ids = []
        for _ in range(6):
            _, info = env.reset(seed=seed)
            ids.append(info["opponent"])
            for _ in range(10):
                env.step(1)
        draws.append(ids)
    assert draws[0] == draws[1] and len(set(draws[0])) > 1


def test_several_games_at_once_by_env_index_and_by_handle():
    session = SelfPlaySession("delta-uniform:delta=0", fixed(0), seed=0)
    a = session.on_episode_start(env_index=0)
    session.on_episode_start(env_index=1)
    with pytest.raises(ValueError, match="already has a game in progress"):
        session.on_episode_start(env_index=0)
    h = session.start_episode()  # a handle, no index
    session.on_episode_end(1, steps=10, env_index=1)
    session.end_episode(h, 0, steps=10)
    session.on_episode_end(0.5, steps=10, env_index=0)
    with pytest.raises(ValueError, match="not a game in progress"):
        session.end_episode(h, 1)  # recorded once only
    assert [(r.env_index, r.outcome) for r in session.records] == [(1, 1.0), (None, 0.0), (0, 0.5)]
    assert session.records[2].opponent == a.id and session.episode == 3 and not session.open


def _play_route(route, session, steps=60, n=4):
    """Random learner moves; returns (final observation, opponent id, outcome, learner's last move) per ended game."""
    rng = np.random.default_rng(0)
    ended = []
    if route == "sb3":
        env = SelfPlayVecEnv(RirRPS(n, seed=0), session)
        env.reset()
        for t in range(steps):
            if t % 10 == 5:
                session.on_policy_update(fixed((t // 10) % 3))
            actions = rng.integers(3, size=n)
            _, _, dones, infos = env.step(actions)
            ended += [(infos[g]["terminal_observation"], infos[g]["opponent"], infos[g]["outcome"], actions[g])
                      for g in np.flatnonzero(dones)]
        return ended
    if route == "native":
        env = SelfPlayVectorEnv(RirRPS(n, seed=0), session)
    elif route == "sync":
        env = gym.vector.SyncVectorEnv([lambda i=i: OpponentEnv(RirRPS(1, seed=i), session) for i in range(n)])
    else:
        env = SessionVectorEnv(gym.vector.AsyncVectorEnv([lambda i=i: OpponentEnv(RirRPS(1, seed=i)) for i in range(n)],
                                                         context="spawn"), session)
    env.reset(seed=0)
    for t in range(steps):
        if t % 10 == 5:
            session.on_policy_update(fixed((t // 10) % 3))
        actions = rng.integers(3, size=n)
        obs, _, term, trunc, infos = env.step(actions)
        for g in np.flatnonzero(term | trunc):
            if route == "native":
                ended.append((infos["final_obs"][g], infos["final_info"]["opponent"][g], infos["final_info"]["outcome"][g], actions[g]))
            else:  # NEXT_STEP: the returned observation is the final one
                ended.append((obs[g], infos["opponent"][g], infos["outcome"][g], actions[g]))
    if route == "async":  # each policy object crossed to a worker once, however many entries share it
        held = [len(p) for p in env.env.get_attr("_policies")]
        assert 1 <= max(held) <= len({id(e.policy) for e in session.menagerie}) < len(session.menagerie)
    env.close()
    return ended


@pytest.mark.parametrize("route", ["native", "sync", "async", "sb3"])
def test_every_route_plays_each_game_against_the_opponent_drawn_for_it(route):
    """Opponents play a fixed move (entry → move known); the final observation shows who really played."""
    session = SelfPlaySession("delta-uniform:delta=0", fixed(0), seed=0)
    ended = _play_route(route, session, steps=70, n=2 if route == "async" else 4)  # fewer workers to spawn
    moves = {e.id: e.policy.action for e in session.menagerie}
    assert len(set(moves.values())) == 3  # the games met all three kinds of opponent
    assert len(ended) == len(session.records) >= 12
    for (final_obs, opponent, outcome, action), record in zip(ended, session.records):
        mine, theirs = last_joint_action(final_obs)  # a real final observation, not zeros or the next game's
        assert mine == action and theirs == moves[int(opponent)]
        assert (int(opponent), float(outcome)) == (record.opponent, record.outcome)


def test_opponent_env_passes_gymnasium_checks_and_returns_the_final_observation():
    session = SelfPlaySession("naive", always(0), seed=0)  # the opponent always plays Rock
    env = OpponentEnv(RirRPS(1, seed=0), session)
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=3)
    assert obs.shape == (30,) and info["opponent"] == session.menagerie.latest.id
    total, terminated = 0.0, False
    while not terminated:
        obs, reward, terminated, truncated, info = env.step(1)  # Paper beats Rock every time
        total += reward
    assert total == 10 and info["outcome"] == 1.0
    assert last_joint_action(obs) == (1, 0) and obs.reshape(3, 10).argmax(1).tolist() == [3, 3, 3]
    with pytest.raises(ValueError, match="reset"):
        env.step(1)


def test_async_workers_cannot_copy_a_session_and_same_step_is_refused_by_the_wrapper():
    session = SelfPlaySession("delta-uniform:delta=0", fixed(0), seed=0)
    envs = gym.vector.AsyncVectorEnv([lambda: OpponentEnv(RirRPS(1, seed=0), session)], context="spawn")
    with pytest.raises(ValueError, match="SessionVectorEnv"):
        envs.reset(seed=0)
    envs.close(terminate=True)
    same = gym.vector.SyncVectorEnv([lambda: OpponentEnv(RirRPS(1, seed=0))], autoreset_mode="SameStep")
    with pytest.raises(ValueError, match="NEXT_STEP"):
        SessionVectorEnv(same, session)
    with pytest.raises(ValueError, match="no opponent assigned"):
        same.reset(seed=0)


def test_session_vector_env_with_disabled_autoreset_resets_only_the_masked_games():
    session = SelfPlaySession("delta-uniform:delta=0", fixed(2), seed=0)
    envs = SessionVectorEnv(gym.vector.SyncVectorEnv([lambda i=i: OpponentEnv(RirRPS(1, seed=i), learner_seat=0)
                                                      for i in range(2)], autoreset_mode="Disabled"), session)
    envs.reset(seed=0)
    for _ in range(10):
        _, _, term, _, infos = envs.step(np.array([0, 0]))  # Rock against Scissors: the learner wins
    assert term.all() and [r.outcome for r in session.records] == [1.0, 1.0]
    _, info = envs.reset(options={"reset_mask": np.array([True, False])})
    assert info["_opponent"].tolist() == [True, False] and len(session.open) == 1


def test_native_vector_env_over_a_smac_battle():
    from selfplay.envs.smac import FocusFirePolicy, SMACBattle

    battle = SMACBattle("3m", 2, mirror=True, seed=0)
    session = SelfPlaySession("delta-uniform:delta=0", FocusFirePolicy.for_battle(battle, seat=1), seed=0)
    env = SelfPlayVectorEnv(battle, session)
    obs, info = env.reset(seed=1)
    assert obs.shape == (2, 3, 30) and info["action_mask"].shape == (2, 3, 9)
    steps = 0
    while len(session.records) < 2 and steps < 400:
        action = np.array([[np.flatnonzero(row)[-1] for row in game] for game in info["action_mask"]])
        obs, reward, term, trunc, info = env.step(action)
        steps += 1
        for g in np.flatnonzero(term):
            assert info["final_obs"][g].shape == (3, 30) and info["final_info"]["outcome"][g] in (0.0, 0.5, 1.0)
    assert len(session.records) >= 2 and session.payoff.games("learner", 0) >= 1


def test_opponent_env_over_a_smac_battle_exposes_masks_and_rejects_illegal_actions():
    from selfplay.envs.smac import FocusFirePolicy, SMACBattle

    battle = SMACBattle("3m", 1, mirror=True, seed=0)
    session = SelfPlaySession("delta-uniform:delta=0", FocusFirePolicy.for_battle(battle, seat=1), seed=0)
    env = OpponentEnv(battle, session)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs) and obs.shape == (3, 30)
    assert info["action_mask"].shape == (3, 9) and (env.action_masks() == info["action_mask"]).all()
    terminated, steps, mask = False, 0, info["action_mask"]
    while not terminated:
        mask = info.get("action_mask", mask)
        action = np.array([np.flatnonzero(row)[-1] for row in mask])  # a legal action per unit
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
    assert info["outcome"] in (0.0, 0.5, 1.0) and 1 <= steps <= battle.episode_limit
    # the final observation, not zeros (unless every unit of the learner died: SMAC observes nothing then)
    assert np.abs(obs).sum() > 0 or info["outcome"] == 0.0
    assert session.payoff.games("learner", 0) == 1
    with pytest.raises(ValueError, match="action"):
        env.reset()
        env.step(np.array([99, 0, 0]))


def test_match_evaluator_gives_win_rates_from_the_new_entrys_side():
    from selfplay.core.menagerie import Menagerie

    m = Menagerie()
    rock, paper, scissors = (m.add(fixed(a), step=0) for a in range(3))
    rates = MatchEvaluator("rirrps", seed=0)(paper, [rock, scissors, paper], 8)
    assert rates[0] == 1.0 and rates[1] == 0.0 and 0.0 <= rates[2] <= 1.0
    with pytest.raises(ValueError, match="env_name"):
        MatchEvaluator("")


def test_psro_through_the_session_with_the_ready_evaluator():
    with pytest.raises(ValueError, match="evaluate is required by PSRO"):
        SelfPlaySession("psro", always(0))
    scheme = make_scheme("psro:window=5,threshold=0.8,matches_per_pair=6", evaluate=MatchEvaluator("rirrps"))
    session = SelfPlaySession(scheme, fixed(0), seed=0)  # the initial policy plays Rock
    session.on_policy_update(fixed(1))  # the learner found Paper
    for _ in range(5):
        assert session.on_episode_start().id == 0
        session.on_episode_end(1)
    assert len(session.menagerie) == 2  # beaten the mixture 5/5 ≥ 0.8: Paper entered
    np.testing.assert_allclose(scheme.meta_matrix([0, 1]), [[0.5, 0.0], [1.0, 0.5]])
    assert scheme.distribution(session.menagerie) == {1: 1.0}  # the meta-Nash is pure Paper
    assert session.on_episode_start().id == 1


def test_hand_written_reinforce_through_the_callback_api_learns_to_exploit_history():
    """A tiny REINFORCE loop owning its loop: the callbacks alone give it opponents and a menagerie."""
    torch.manual_seed(0)
    logits = torch.zeros(3, requires_grad=True)
    optim = torch.optim.Adam([logits], lr=0.1)

    def frozen(version):
        probs = torch.softmax(logits.detach(), 0).numpy()
        rng = np.random.default_rng(version)
        wrapper = PolicyWrapper(lambda o: rng.choice(3, size=len(o), p=probs))
        wrapper.probs = probs
        return wrapper

    rock = PolicyWrapper(lambda o: np.zeros(len(o), dtype=int))
    rock.probs = np.array([1.0, 0.0, 0.0])
    session = SelfPlaySession("delta-uniform:delta=0", rock, seed=1)
    game = RirRPS(1, seed=1)
    for episode in range(100):
        opponent = session.on_episode_start()
        obs = game.reset()
        logps, total = [], 0.0
        for _ in range(game.episode_length):
            dist = torch.distributions.Categorical(logits=logits)
            a = dist.sample()
            logps.append(dist.log_prob(a))
            o_a, _, _ = opponent.policy.act(obs[1], None)
            obs, rewards, done, info = game.step([a.view(1), o_a])
            total += float(rewards[0][0])
        loss = -torch.stack(logps).sum() * total
        optim.zero_grad()
        loss.backward()
        optim.step()
        session.on_policy_update(freeze=lambda v=episode: frozen(v))
        session.on_episode_end(float(info["winner"][0] == 0))
    assert len(session.menagerie) == 101 and session.weight_version == 100
    # REINFORCE must exploit the mixture Ω makes of its own history: positive expected payoff per move
    omega = session.scheme.distribution(session.menagerie)
    mixture = sum(p * session.menagerie[i].policy.probs for i, p in omega.items())
    rps = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]])
    assert torch.softmax(logits, 0).detach().numpy() @ rps @ mixture > 0.05


def test_play_matches_and_cross_population_turn_policies_into_analysis_inputs():
    from selfplay.training.matches import cross_population, round_robin_pairs

    policies = [fixed(a) for a in range(3)]
    pairs = round_robin_pairs(3)
    assert pairs.tolist() == [[0, 1], [0, 2], [1, 2]]
    scores = play_matches("rirrps", policies, pairs, 4, seed=0)  # scores of pairs[:, 0], both seats
    assert scores.tolist() == [[0.0] * 4, [1.0] * 4, [0.0] * 4]  # Rock < Paper, Rock > Scissors, Paper < Scissors
    W = cross_population("rirrps", policies[:1], policies[1:], 4, seed=0)  # Rock's win rates
    np.testing.assert_allclose(W, [[0.0, 1.0]])


def test_a_truncated_game_is_abandoned_not_recorded():
    session = SelfPlaySession("delta-uniform:delta=0", fixed(0), seed=0)
    envs = SessionVectorEnv(gym.vector.SyncVectorEnv(
        [lambda: gym.wrappers.TimeLimit(OpponentEnv(RirRPS(1, seed=0)), max_episode_steps=4)]), session)
    envs.reset(seed=0)
    for _ in range(4):
        _, _, term, trunc, _ = envs.step(np.array([1]))
    assert trunc.all() and not term.any()
    assert session.records == [] and len(session.open) == 1  # the next game is already assigned
    assert session.payoff.games("learner", 0) == 0
