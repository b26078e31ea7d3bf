import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

from selfplay.analysis.nash import maxent_nash
from selfplay.envs.rps import RirRPS
from selfplay.training.adapters import OpponentEnv, PolicyWrapper, SelfPlaySession
from selfplay.training.matches import evaluate_population, play_matches


def always(action):
    return PolicyWrapper(lambda obs: np.full(len(obs), action))


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


def test_session_applies_omega_and_g_through_callbacks():
    session = SelfPlaySession("delta-uniform:delta=0", always(0), seed=0)
    opponent = session.on_episode_start()
    assert opponent.id == 0
    session.on_episode_end(1)
    assert len(session.menagerie) == 2 and session.payoff.win_rate("learner", 0) == 1.0
    session.on_policy_update(always(1))
    session.on_episode_start()
    session.on_episode_end(0)
    assert session.menagerie.latest.policy is session._latest and session.menagerie.latest.tags["weight_version"] == 1
    with pytest.raises(ValueError, match="before on_episode_start"):
        session.on_episode_end(1)


def test_opponent_env_passes_gymnasium_checks_and_scores_games():
    session = SelfPlaySession("naive", always(0), seed=0)  # the opponent always plays Rock
    env = OpponentEnv(RirRPS(1, seed=0), session)
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=3)
    assert obs.shape == (30,) and info["opponent"] == 0
    total, terminated = 0.0, False
    while not terminated:
        obs, reward, terminated, truncated, info = env.step(1)  # Paper beats Rock every time
        total += reward
    assert total == 10 and info["outcome"] == 1.0
    assert session.payoff.games("learner", 0) >= 1 and session.payoff.win_rate("learner", 0) > 0.5


def test_stable_baselines3_ppo_trains_under_limit_uniform_through_the_gym_adapter(tmp_path):
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import configure

    torch.set_num_threads(1)
    session = SelfPlaySession("delta-limit-uniform:delta=0", PolicyWrapper(lambda o: np.random.default_rng(0).integers(3, size=len(o))), seed=0)
    env = OpponentEnv(RirRPS(1, seed=0), session)
    model = PPO("MlpPolicy", env, n_steps=100, batch_size=50, n_epochs=2, seed=0, device="cpu",
                policy_kwargs={"net_arch": [32, 32]})
    model.set_logger(configure(str(tmp_path), []))  # no SB3-<date> folders left in the system temp dir

    class OnUpdate(BaseCallback):
        """After every PPO update, hand the session a frozen copy of the new policy."""

        def _on_rollout_start(self):
            if self.num_timesteps > 0:
                policy = self.model.policy
                frozen = type(policy)(**policy._get_constructor_parameters())
                frozen.load_state_dict(policy.state_dict())
                session.on_policy_update(PolicyWrapper(frozen.set_training_mode(False) or frozen))

        def _on_step(self):
            return True

    model.learn(total_timesteps=600, callback=OnUpdate())
    assert session.weight_version >= 4
    versions = {e.tags["weight_version"] for e in session.menagerie}
    assert len(session.menagerie) >= 55 and len(versions) >= 4  # one entry per episode, several weight versions
    # evaluate the population of distinct snapshots with analysis
    distinct = {}
    for e in session.menagerie:
        distinct.setdefault(e.tags["weight_version"], e.policy)
    ev = evaluate_population("rirrps", list(distinct.values()), matches_per_pair=10, seed=0)
    n = len(distinct)
    np.testing.assert_allclose(ev.W + ev.W.T, np.ones((n, n)))
    p = maxent_nash(ev.W - 0.5)
    assert abs(p.sum() - 1) < 1e-9 and ((ev.W - 0.5).T @ p >= -1e-9).all()


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
    for episode in range(60):
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
        session.on_policy_update(frozen(episode))
        session.on_episode_end(float(info["winner"][0] == 0))
    assert len(session.menagerie) == 61 and session.weight_version == 60
    # REINFORCE must exploit the mixture Ω makes of its own history: positive expected payoff per move
    omega = session.scheme.distribution(session.menagerie)
    mixture = sum(p * session.menagerie[i].policy.probs for i, p in omega.items())
    rps = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]])
    assert torch.softmax(logits, 0).detach().numpy() @ rps @ mixture > 0.05


def test_opponent_env_over_a_smac_battle_exposes_masks_and_rejects_illegal_actions():
    from selfplay.envs.smac import FocusFirePolicy, SMACBattle

    battle = SMACBattle("3m", 1, mirror=True, seed=0)
    session = SelfPlaySession("delta-uniform:delta=0", FocusFirePolicy.for_battle(battle, seat=1), seed=0)
    env = OpponentEnv(battle, session)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs) and obs.shape == (3, 30)
    assert info["action_mask"].shape == (3, 9) and (env.action_masks() == info["action_mask"]).all()
    terminated, steps = False, 0
    while not terminated:
        mask = info["action_mask"]
        action = np.array([np.flatnonzero(row)[-1] for row in mask])  # a legal action per unit
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
    assert info["outcome"] in (0.0, 0.5, 1.0) and 1 <= steps <= battle.episode_limit
    assert session.payoff.games("learner", 0) >= 1
    with pytest.raises(ValueError, match="action"):
        env.reset()
        env.step(np.array([99, 0, 0]))


def test_psro_through_the_session_with_an_evaluator_built_on_play_matches():
    from selfplay import make_scheme

    def evaluate(entry, opponents, matches):
        policies = [entry.policy] + [o.policy for o in opponents]
        pairs = np.array([[0, j + 1] for j in range(len(opponents))])
        return play_matches("rirrps", policies, pairs, matches, seed=0).mean(axis=1)

    scheme = make_scheme("psro:window=5,threshold=0.8,matches_per_pair=6", evaluate=evaluate)
    session = SelfPlaySession(scheme, always(0), seed=0)  # the initial policy plays Rock
    session.on_policy_update(always(1))  # the learner found Paper
    for _ in range(5):
        assert session.on_episode_start().id == 0
        session.on_episode_end(1)
    assert len(session.menagerie) == 2  # beaten the mixture 5/5 ≥ 0.8: Paper entered
    np.testing.assert_allclose(scheme.meta_matrix([0, 1]), [[0.5, 0.0], [1.0, 0.5]])
    assert scheme.distribution(session.menagerie) == {1: 1.0}  # the meta-Nash is pure Paper
