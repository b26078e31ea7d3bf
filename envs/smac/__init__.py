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

from .battle import SMACBattle
from .env import SMACEnv
from .maps import MAP_NAMES, get_map
from .multiagentenv import MultiAgentEnv
from .pettingzoo_env import SMACParallelEnv, SMACv2ParallelEnv
from .scripted import FocusFirePolicy
from .smacv2_env import SMACv2Env, StarCraftCapabilityEnvWrapper
from .smacv2_scenarios import SCENARIO_NAMES as SMACV2_SCENARIOS
from .smacv2_scenarios import get_scenario
from .units import UNIT_STATS

StarCraft2Env = SMACEnv  # SMAC's name

__all__ = ["SMACBattle", "SMACEnv", "StarCraft2Env", "MultiAgentEnv", "SMACParallelEnv", "SMACv2ParallelEnv", "FocusFirePolicy", "MAP_NAMES", "get_map", "UNIT_STATS",
           "SMACv2Env", "StarCraftCapabilityEnvWrapper", "SMACV2_SCENARIOS", "get_scenario"]
