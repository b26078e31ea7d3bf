"""One SMAC game is fast: on the CPU each step runs the compiled rules (no torch operation per step);
its torch work (a reset's trigger points) runs on one thread, and the caller's setting is restored (no process-wide
change behind the user's back)."""

import torch
from selfplay.envs.smac import StarCraft2Env


def test_one_game_computes_single_threaded_and_restores_the_callers_threads(monkeypatch):
    env = StarCraft2Env(map_name="3m", seed=0)
    seen = []
    real_draw = env._battle.engine.draw_trigger_goals

    def spying_draw(*args, **kwargs):  # the torch work of a reset
        seen.append(torch.get_num_threads())
        return real_draw(*args, **kwargs)

    monkeypatch.setattr(env._battle.engine, "draw_trigger_goals", spying_draw)
    torch.set_num_threads(2)  # the root conftest restores the suite's setting afterwards
    env.reset()
    assert seen == [1]
    assert torch.get_num_threads() == 2
    env.torch_threads = None  # the caller's threads, if asked for
    env.reset()
    assert seen == [1, 2]


def test_one_game_steps_without_torch_and_leaves_the_threads_alone(monkeypatch):
    env = StarCraft2Env(map_name="3m", seed=0)
    assert env._battle.fast
    torch.set_num_threads(2)  # the root conftest restores the suite's setting afterwards
    env.reset()

    def no_torch(*args, **kwargs):
        raise AssertionError("the compiled lane stepped the torch engine")

    monkeypatch.setattr(env._battle, "step", no_torch)
    reward, terminated, info = env.step([1] * env.n_agents)
    assert env.get_obs()[0].shape == (env.get_obs_size(),) and len(env.get_state()) == env.get_state_size()
    assert torch.get_num_threads() == 2
