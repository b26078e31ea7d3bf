"""Opponents that must cross to AsyncVectorEnv's workers: an unpicklable one is refused in one line
naming it and the fix; the library's snapshot helpers (a torch module, an SB3 model) make frozen,
picklable copies that later updates do not reach."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
import torch
from selfplay.agents.reference import FixedActionPolicy
from selfplay.envs.rps import RirRPS

from selfplay.training.adapters import OpponentEnv, SelfPlaySession, SessionVectorEnv, sb3_snapshot, torch_snapshot


def test_an_unpicklable_opponent_is_refused_in_one_line_before_it_reaches_the_workers():
    def make_closure_policy(action):
        class Closure:  # a local class: pickle cannot find it by name
            def initial_state(self, batch):
                return None

            def act(self, obs, state=None, mask=None, episode_start=None):
                return torch.full((len(obs),), action), None, {}

        return Closure()

    envs = gym.vector.AsyncVectorEnv([lambda: OpponentEnv(RirRPS(1, seed=0))], context="spawn")
    try:
        # the menagerie's policies are checked when the wrapper is built, before anything is sent
        bad = SelfPlaySession("naive", make_closure_policy(0), seed=0)
        with pytest.raises(ValueError) as error:
            SessionVectorEnv(envs, bad)
        message = str(error.value)
        assert "\n" not in message and "Closure" in message and "menagerie entry 0" in message
        assert "cannot be pickled" in message and "torch_snapshot(module) or sb3_snapshot(model)" in message
        # a later one (naive: Ω is the newest entry) is checked before the game that draws it is sent it
        session = SelfPlaySession("naive", FixedActionPolicy(0, 3), seed=0)
        env = SessionVectorEnv(envs, session)
        env.reset(seed=0)
        session.on_policy_update(lambda obs: obs)  # a lambda as a frozen policy
        with pytest.raises(ValueError, match=r"opponent policy '.*<lambda>' \(a function\) \(menagerie entry 1\)"):
            for _ in range(40):  # until the first game ends and the next one's opponent is drawn
                env.step(np.zeros(1, dtype=np.int64))
        assert len(session.records) == 1  # the ended game was recorded; nothing was sent to the worker
    finally:
        envs.close(terminate=True)
    # over a SyncVectorEnv the copies stay in this process: nothing needs to pickle
    sync = SessionVectorEnv(gym.vector.SyncVectorEnv([lambda: OpponentEnv(RirRPS(1, seed=0))]), bad)
    sync.reset(seed=0)


def test_torch_snapshot_is_frozen_picklable_and_samples_legal_actions():
    torch.manual_seed(0)
    net = torch.nn.Linear(30, 3)
    snap = torch_snapshot(net, seed=4)
    before = [p.clone() for p in snap.module.parameters()]
    optimizer = torch.optim.SGD(net.parameters(), lr=1.0)
    net(torch.ones(2, 30)).sum().backward()
    optimizer.step()  # the live module moves on ...
    assert all(torch.equal(a, b) for a, b in zip(before, snap.module.parameters()))  # ... the snapshot does not
    assert not any(p.requires_grad for p in snap.module.parameters())
    obs = torch.rand(500, 30)
    copy = pickle.loads(pickle.dumps(snap))  # crosses to a worker: the same policy, the same generator state
    actions, state, _ = snap.act(obs, None)
    assert state is None and torch.equal(actions, copy.act(obs, None)[0])
    assert set(actions.tolist()) == {0, 1, 2}
    mask = torch.tensor([[True, False, True]] * 500)
    assert 1 not in snap.act(obs, None, mask)[0].tolist()
    greedy = torch_snapshot(net, deterministic=True)
    assert torch.equal(greedy.act(obs, None)[0], net(obs).argmax(-1))
    with pytest.raises(ValueError, match="module must be a torch.nn.Module"):
        torch_snapshot(lambda x: x)


def test_sb3_snapshot_survives_the_models_updates_and_pickles(tmp_path):
    sb3 = pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.logger import configure

    from selfplay.training.adapters import SelfPlayVecEnv

    session = SelfPlaySession("naive", FixedActionPolicy(0, 3), seed=0)
    model = sb3.PPO("MlpPolicy", SelfPlayVecEnv(RirRPS(2, seed=0), session), n_steps=32, batch_size=32, n_epochs=1,
                    seed=0, device="cpu", policy_kwargs={"net_arch": [16]})
    model.set_logger(configure(str(tmp_path), []))  # else every learn() makes a log folder in the system's /tmp
    model.learn(64)  # after an update, copy.deepcopy(model.policy) fails; the snapshot does not
    snap = sb3_snapshot(model, deterministic=True)
    frozen = {k: v.clone() for k, v in snap.model.state_dict().items()}
    assert all(torch.equal(v, model.policy.state_dict()[k]) for k, v in frozen.items())
    model.learn(64)
    assert any(not torch.equal(v, model.policy.state_dict()[k]) for k, v in frozen.items())  # the model moved on
    assert all(torch.equal(v, snap.model.state_dict()[k]) for k, v in frozen.items())  # the snapshot did not
    obs = torch.rand(8, 30)
    copy = pickle.loads(pickle.dumps(snap))
    actions = snap.act(obs, None)[0]
    assert torch.equal(actions, copy.act(obs, None)[0]) and actions.tolist() == [
        int(a) for a in snap.model.predict(obs.numpy(), deterministic=True)[0]]
    with pytest.raises(ValueError, match="Stable-Baselines3 model"):
        sb3_snapshot(object())
