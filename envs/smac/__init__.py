"""SMAC without StarCraft II: a batched, SC2-faithful simulator with SMAC's interface (spec-smac.md).

- ``SMACEnv(map_name, seed=None, **flags)``: one game, SMAC's ``StarCraft2Env`` methods and flags.
- ``SMACBattle(map_name, num_envs, two_player=True, mirror=False, device="cpu", seed=None)``: the
  batched two-seat view used by the self-play loop.
- ``SMACParallelEnv``: PettingZoo ``ParallelEnv`` view of both sides.
- ``MAP_NAMES``, ``get_map``, ``UNIT_STATS``: the maps (§7) and unit table (§8).
"""

from .battle import SMACBattle
from .env import SMACEnv
from .pettingzoo_env import SMACParallelEnv
from .scripted import FocusFirePolicy
from .maps import MAP_NAMES, get_map
from .units import UNIT_STATS

__all__ = ["SMACBattle", "SMACEnv", "SMACParallelEnv", "FocusFirePolicy", "MAP_NAMES", "get_map", "UNIT_STATS"]
