"""SMAC's own ``StarCraft2Env`` code, run on our environment's unit records, against our answers.

Needs a SMAC checkout (github.com/oxwhirl/smac; nothing of it is shipped here) and
``s2clientprotocol`` (the ``sc2`` extra); pysc2 and the game are not needed: the few pysc2 names
SMAC's module imports are stubbed. For every map and two flag sets, random legal episodes are
played on our ``StarCraft2Env``; at every step an instance of SMAC's class holding our env's
attributes and records (``agents``, ``enemies``, ``pathing_grid``, ``last_action``, …) computes the
size getters, each agent's observation and available actions, the state and state dict, the
visibility matrix and the heuristic AI's action and target; each must equal ours.

One known difference is SMAC's, not ours: with ``obs_timestep_number`` SMAC's own-feature block
reserves a slot for the timestep *and* appends the timestep after it, so its vectors are one entry
longer than its ``get_obs_size()`` (an extra 0 before the timestep); ours match ``get_obs_size()``.

    PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python python benchmarks/smac_interface_check.py \\
        --smac-src /path/to/smac [--maps 3m MMM] [--episodes 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import types
from pathlib import Path

import numpy as np
import torch

DEFAULT_MAPS = ["3m", "2s3z", "3s5z", "MMM", "MMM2", "1c3s5z", "bane_vs_bane", "corridor", "2c_vs_64zg",
                "6h_vs_8z", "2m_vs_1z", "3s_vs_5z"]
FLAG_SETS = [{}, dict(obs_last_action=True, obs_pathing_grid=True, obs_terrain_height=True, obs_timestep_number=True,
                      state_timestep_number=True, heuristic_rest=True)]


def _module(name: str, **attrs) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def _load(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)
    return m


def load_smac_class(src: Path):
    """SMAC's ``StarCraft2Env`` class from a checkout at ``src``, with pysc2 stubbed."""
    env_dir = src / "smac" / "env"
    if not (env_dir / "starcraft2" / "starcraft2.py").is_file():
        raise ValueError(f"--smac-src must be a SMAC checkout (smac/env/starcraft2/starcraft2.py), got {src}")

    class Map:  # pysc2.maps.lib.Map, the base of SMAC's map classes
        pass

    protocol = _module("pysc2.lib.protocol", ProtocolError=Exception, ConnectionError=Exception)
    _module("pysc2", maps=_module("pysc2.maps", lib=_module("pysc2.maps.lib", Map=Map), get=None),
            run_configs=_module("pysc2.run_configs"), lib=_module("pysc2.lib", protocol=protocol))
    for name in ("smac", "smac.env", "smac.env.starcraft2"):
        _module(name)
    _load("smac.env.multiagentenv", env_dir / "multiagentenv.py")
    registry = _load("smac_maps_reference", env_dir / "starcraft2" / "maps" / "smac_maps.py").map_param_registry
    _module("smac.env.starcraft2.maps", get_map_params=lambda n: registry[n])
    return _load("smac.env.starcraft2.starcraft2", env_dir / "starcraft2" / "starcraft2.py").StarCraft2Env


def as_smac(smac_cls, env):
    """An instance of SMAC's class holding ``env``'s attributes and current unit records."""
    ref = object.__new__(smac_cls)
    ref.__dict__.update(vars(env))
    ref.agents, ref.enemies, ref.last_action = env.agents, env.enemies, env.last_action
    ref.heuristic_targets = list(env.heuristic_targets)
    return ref


def check_step(ref, env) -> None:
    for getter in ("get_obs_size", "get_state_size", "get_obs_move_feats_size", "get_obs_enemy_feats_size",
                   "get_obs_ally_feats_size", "get_obs_own_feats_size"):
        assert getattr(ref, getter)() == getattr(env, getter)(), getter
    for i in range(env.n_agents):
        assert ref.get_avail_agent_actions(i) == env.get_avail_agent_actions(i), f"avail {i}"
        obs = ref.get_obs_agent(i)
        if env.obs_timestep_number:  # SMAC's extra 0 before the timestep (module docstring)
            assert obs.shape[0] == env.get_obs_size() + 1 and obs[-2] == 0
            obs = np.concatenate([obs[:-2], obs[-1:]])
        np.testing.assert_allclose(obs, env.get_obs_agent(i), atol=1e-5, err_msg=f"obs {i}")
    np.testing.assert_allclose(ref.get_state(), env.get_state(), atol=1e-5, err_msg="state")
    ours = env.get_state_dict()
    for key, value in ref.get_state_dict().items():
        np.testing.assert_allclose(value, ours[key], atol=1e-5, err_msg=f"state dict {key}")
    assert np.array_equal(ref.get_visibility_matrix(), env.get_visibility_matrix()), "visibility"
    for i in range(env.n_agents):
        if env.agents[i].health > 0:
            _, theirs = ref.get_agent_action_heuristic(i, 0)
            _, mine = env.get_agent_action_heuristic(i, 0)
            assert mine == theirs and ref.heuristic_targets[i] == env.heuristic_targets[i], f"heuristic {i}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smac-src", type=Path, required=True, help="a SMAC checkout (github.com/oxwhirl/smac)")
    parser.add_argument("--maps", nargs="+", default=DEFAULT_MAPS, help="maps to check")
    parser.add_argument("--episodes", type=int, default=2, help="random episodes per map and flag set")
    args = parser.parse_args()
    os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
    torch.set_num_threads(1)
    smac_cls = load_smac_class(args.smac_src)
    from selfplay.envs.smac import StarCraft2Env

    rng = np.random.default_rng(0)
    total = 0
    for name in args.maps:
        for flags in FLAG_SETS:
            env = StarCraft2Env(name, seed=1, **flags)
            steps = 0
            for _ in range(args.episodes):
                env.reset()
                terminated = False
                while not terminated:
                    check_step(as_smac(smac_cls, env), env)
                    actions = [int(rng.choice(np.nonzero(a)[0])) for a in env.get_avail_actions()]
                    _, terminated, _ = env.step(actions)
                    steps += 1
            total += steps
            print(f"{name:14s} flags={'all' if flags else 'default':7s} states checked: {steps}", flush=True)
    print(f"all equal: {total} states")


if __name__ == "__main__":
    main()
