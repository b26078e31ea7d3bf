"""SMACv2's own ``StarCraft2Env`` code, run on our SMACv2 environment's unit records, against our answers.

Needs a SMACv2 checkout (github.com/oxwhirl/smacv2; nothing of it is shipped here), ``absl-py`` and
``s2clientprotocol`` (the ``sc2`` extra); pysc2 and the game are not needed: the pysc2 names
SMACv2's module imports are stubbed.  For every race, 5 vs 5 and 10 vs 11, and three flag sets
(SMACv2's scenario flags; with cones; everything on), random legal episodes are played on our
``StarCraftCapabilityEnvWrapper``; at every step an instance of SMACv2's class holding our env's
flags, unit records, cone directions and last actions computes the size getters, feature names,
each agent's observation and available actions and the state; each must equal ours.

The observation bookkeeping is set to "every enemy tagged and observed by every agent"
(``prob_obs_enemy=1``, where our observed set equals the sight set): this compares the
features, not SMACv2's whole-block reset of the enemy features (docs/design/smacv2.md), which
our observations leave out on purpose.

    PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python python benchmarks/smacv2_interface_check.py \\
        --smacv2-src /path/to/smacv2 [--episodes 1]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from smac_interface_check import _load, _module  # noqa: E402  (the stubbing helpers of SMAC's check)

FLAG_SETS = [{}, {"conic_fov": True, "num_fov_actions": 8},
             {"obs_last_action": True, "obs_pathing_grid": True, "obs_terrain_height": True,
              "obs_timestep_number": True, "state_timestep_number": True, "conic_fov": True}]
# pysc2.lib.units ids of the nine units (the enemies carry these)
STANDARD = {"marine": 48, "marauder": 51, "medivac": 54, "zealot": 73, "stalker": 74, "colossus": 4,
            "zergling": 105, "hydralisk": 107, "baneling": 9}
RL_BASE = 1970  # the allies' "_RL" ids: RL_BASE + index in SMACv2's alphabetical order


def load_smacv2_class(src: Path):
    """SMACv2's ``StarCraft2Env`` class from a checkout at ``src``, with pysc2 stubbed."""
    env_dir = src / "smacv2" / "env"
    if not (env_dir / "starcraft2" / "starcraft2.py").is_file():
        raise ValueError(f"--smacv2-src must be a SMACv2 checkout (smacv2/env/starcraft2/starcraft2.py), got {src}")

    class Map:
        pass

    def race(names):
        return type("Race", (), {n.capitalize(): STANDARD[n] for n in names})

    units = _module("pysc2.lib.units", Neutral=type("Neutral", (), {}),
                    Protoss=race(["stalker", "zealot", "colossus"]), Terran=race(["marine", "marauder", "medivac"]),
                    Zerg=race(["zergling", "hydralisk", "baneling"]))
    protocol = _module("pysc2.lib.protocol", ProtocolError=Exception, ConnectionError=Exception)
    _module("pysc2", maps=_module("pysc2.maps", lib=_module("pysc2.maps.lib", Map=Map), get=None),
            run_configs=_module("pysc2.run_configs"), lib=_module("pysc2.lib", protocol=protocol, units=units))
    for name in ("smacv2", "smacv2.env", "smacv2.env.starcraft2"):
        _module(name)
    _load("smacv2.env.multiagentenv", env_dir / "multiagentenv.py")
    registry = _load("smacv2_maps_reference", env_dir / "starcraft2" / "maps" / "smac_maps.py").map_param_registry
    _module("smacv2.env.starcraft2.maps", get_map_params=lambda n: registry[n])
    return _load("smacv2.env.starcraft2.starcraft2", env_dir / "starcraft2" / "starcraft2.py").StarCraft2Env


def records(env):
    """SMACv2-style ``agents`` / ``enemies`` dicts of our env's current units."""
    from selfplay.envs.smac.smacv2_scenarios import GEN_UNIT_ORDER
    from selfplay.envs.smac.unit_records import EngineSnapshot, unit_views

    eng = env.engine
    names = eng.unit_names
    n0 = eng.n_side[0]
    types_ = [RL_BASE + GEN_UNIT_ORDER.index(u) if k < n0 else STANDARD[u] for k, u in enumerate(names)]
    snap = EngineSnapshot.of(eng, 0)
    tags = list(range(1, eng.num_units + 1))
    return unit_views(eng, snap, 0, types_, tags), unit_views(eng, snap, 1, types_, tags, report_cooldown=False)


def as_smacv2(cls, wrapper):
    """An instance of SMACv2's class holding our env's flags and state (no game behind it)."""
    from selfplay.envs.smac.smacv2_scenarios import GEN_UNIT_ORDER

    env = wrapper.env
    ref = object.__new__(cls)
    f, L = env.flags, env.layout
    ref.__dict__.update(
        obs_all_health=f.obs_all_health, obs_own_health=f.obs_own_health, obs_last_action=f.obs_last_action,
        obs_pathing_grid=f.obs_pathing_grid, obs_terrain_height=f.obs_terrain_height,
        obs_timestep_number=f.obs_timestep_number, obs_own_pos=f.obs_own_pos, obs_starcraft=f.obs_starcraft,
        obs_instead_of_state=False, state_last_action=f.state_last_action,
        state_timestep_number=f.state_timestep_number, conic_fov=f.conic_fov, n_fov_actions=L.n_fov,
        conic_fov_angle=(2 * np.pi / L.n_fov) if f.conic_fov else 0, use_unit_ranges=f.use_unit_ranges,
        min_attack_range=f.min_attack_range, fully_observable=f.fully_observable, prob_obs_enemy=1.0,
        action_mask=f.action_mask, stochastic_attack=False, stochastic_health=False, replace_teammates=True,
        observe_teammate_types=f.observe_types, zero_pad_unit_types=not f.observe_types,
        mask_enemies=env.enemy_mask is not None, enemy_mask=env.enemy_mask, n_agents=env.n_agents,
        n_enemies=env.n_enemies, n_actions=env.n_actions, n_actions_no_attack=env.n_actions_no_attack,
        n_actions_move=4, n_obs_pathing=8, n_obs_height=9, unit_type_bits=3, map_type=env.gen.map_type,
        shield_bits_ally=L.shield, shield_bits_enemy=L.shield, map_x=32, map_y=32,
        max_distance_x=env.engine.spec.playable_width, max_distance_y=env.engine.spec.playable_height,
        _move_amount=2, episode_limit=env.episode_limit, _episode_steps=env._episode_steps, debug=False,
        capability_config=env.capability_config, agent_attack_probabilities=None, agent_health_levels=None)
    ref.pathing_grid = env.engine.spec.pathing_grid()
    ref.terrain_height = env.engine.spec.terrain_height()
    for k, name in enumerate(GEN_UNIT_ORDER):
        setattr(ref, f"{name}_id", RL_BASE + k)
    ref.agents, ref.enemies = records(env)
    ref.fov_directions = env.seat.fov.astype(np.float64)
    ref.last_action = env.seat.last_action.copy()
    ref.obs_enemies = np.ones((env.n_enemies, env.n_agents))
    ref.enemy_tags = [0] * env.n_enemies
    ref.new_unit_positions = np.zeros((env.n_agents, 2))
    ref.capability_attr_names = [f"type_{b}" for b in range(3)]
    ref.ally_state_attr_names = ["health", "energy/cooldown", "rel_x", "rel_y"] + (["shield"] if L.shield else []) + \
        (["fov_x", "fov_y"] if f.conic_fov else [])
    ref.enemy_state_attr_names = ["health", "rel_x", "rel_y"] + (["shield"] if L.shield else []) + \
        ref.capability_attr_names
    return ref


def check_step(ref, env) -> None:
    for getter in ("get_obs_size", "get_state_size", "get_obs_move_feats_size", "get_obs_enemy_feats_size",
                   "get_obs_ally_feats_size", "get_obs_own_feats_size", "get_total_actions", "get_cap_size"):
        assert getattr(ref, getter)() == getattr(env, getter)(), getter
    assert ref.build_obs_feature_names() == env.get_obs_feature_names(), "obs names"
    assert ref.build_state_feature_names() == env.get_state_feature_names(), "state names"
    ours = env.get_obs()
    for i in range(env.n_agents):
        assert list(ref.get_avail_agent_actions(i)) == env.get_avail_agent_actions(i), f"avail {i}"
        np.testing.assert_allclose(ref.get_obs_agent(i), ours[i], atol=1e-5, err_msg=f"obs {i}")
    np.testing.assert_allclose(ref.get_state(), env.get_state(), atol=1e-5, err_msg="state")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smacv2-src", type=Path, required=True, help="a SMACv2 checkout (github.com/oxwhirl/smacv2)")
    parser.add_argument("--episodes", type=int, default=1, help="random episodes per scenario and flag set")
    args = parser.parse_args()
    os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
    cls = load_smacv2_class(args.smacv2_src)
    from selfplay.envs.smac import StarCraftCapabilityEnvWrapper, get_scenario

    rng = np.random.default_rng(0)
    total = 0
    for race in ("protoss", "terran", "zerg"):
        for size in ("5_vs_5", "10_vs_11"):
            for flags in FLAG_SETS:
                env = StarCraftCapabilityEnvWrapper(seed=1, **{**get_scenario(f"{race}_{size}").env_args(), **flags})
                steps = 0
                for _ in range(args.episodes):
                    env.reset()
                    terminated = False
                    while not terminated:
                        check_step(as_smacv2(cls, env), env)
                        actions = [int(rng.choice(np.flatnonzero(a))) for a in env.get_avail_actions()]
                        _, terminated, _ = env.step(actions)
                        steps += 1
                total += steps
                print(f"{race}_{size:8s} flags={len(flags)}: states checked: {steps}", flush=True)
    print(f"all equal: {total} states")


if __name__ == "__main__":
    main()
