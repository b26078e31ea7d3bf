"""SMAC without StarCraft II: a batched, SC2-faithful simulator with SMAC's interface (docs/design/smac.md).

- ``SMACEnv(map_name, seed=None, **flags)``: one game, SMAC's ``StarCraft2Env`` methods and flags;
  exported under SMAC's names too: ``StarCraft2Env`` (= ``SMACEnv``) and ``MultiAgentEnv``, so a
  PyMARL/EPyMARL user's ``smac/env/__init__.py`` shim is one import line (README).
- ``SMACBattle(map_name, num_envs, two_player=True, mirror=None, device="cpu", seed=None)``: the
  batched two-seat view used by the self-play loop (``mirror=None``: seat 1 mirrored on maps whose
  sides field the same units).
- ``SMACParallelEnv``: PettingZoo ``ParallelEnv`` view of both sides; ``SMACv2ParallelEnv`` the same
  for a two-player SMACv2 scenario.
- ``MAP_NAMES``, ``get_map``, ``UNIT_STATS``: the maps (§7) and unit table (§8).
- SMACv2 (docs/design/smacv2.md): ``StarCraftCapabilityEnvWrapper(capability_config=..., map_name=...,
  **flags)`` and ``SMACv2Env`` (SMACv2's API, so EPyMARL's ``sc2v2`` shim is one import line),
  ``SMACV2_SCENARIOS`` / ``get_scenario`` (``protoss_5_vs_5`` ... ``zerg_20_vs_23``).
"""

from importlib import import_module

# Each public name and the module that defines it.  The package imports them on first use (PEP 562), so
# reading the maps' names (``selfplay.envs.smac.maps``, the CLI's help) does not load numba and torch.
_EXPORTS = {
    "SMACBattle": ("battle", "SMACBattle"),
    "SMACEnv": ("env", "SMACEnv"),
    "StarCraft2Env": ("env", "SMACEnv"),  # SMAC's name
    "MultiAgentEnv": ("multiagentenv", "MultiAgentEnv"),
    "SMACParallelEnv": ("pettingzoo_env", "SMACParallelEnv"),
    "SMACv2ParallelEnv": ("pettingzoo_env", "SMACv2ParallelEnv"),
    "FocusFirePolicy": ("scripted", "FocusFirePolicy"),
    "MAP_NAMES": ("maps", "MAP_NAMES"),
    "get_map": ("maps", "get_map"),
    "UNIT_STATS": ("units", "UNIT_STATS"),
    "SMACv2Env": ("smacv2_env", "SMACv2Env"),
    "StarCraftCapabilityEnvWrapper": ("smacv2_env", "StarCraftCapabilityEnvWrapper"),
    "SMACV2_SCENARIOS": ("smacv2_scenarios", "SCENARIO_NAMES"),
    "get_scenario": ("smacv2_scenarios", "get_scenario"),
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _EXPORTS[name]
    value = getattr(import_module(f".{module}", __name__), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
