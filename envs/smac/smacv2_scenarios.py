"""The SMACv2 scenarios (Ellis et al. 2022) and their capability configuration (docs/design/smacv2.md).

A scenario is a race's ``10gen_*`` map plus a capability configuration: ``n_units`` agents against
``n_enemies`` enemies, whose unit types (``team_gen``: ``weighted_teams``) and start positions
(``start_positions``: ``surrounded_and_reflect``) are drawn at every reset, and optionally which
enemies each agent may not identify (``enemy_mask``: ``mask``, the EPO setting).  The values are
SMACv2's ``smacv2/examples/configs/sc2_gen_{protoss,terran,zerg}[_epo].yaml``; the maps' rows are
SMACv2's ``map_param_registry`` (``smacv2/env/starcraft2/maps/smac_maps.py``): 10 agents by default,
episode limit 200, 3 unit-type bits, and the map file actually played is ``32x32_flat`` for all three.

``CapabilityConfig.from_dict`` reads the dict SMACv2's wrapper takes (``capability_config=``) and
rejects what SMACv2 would not run with a one-line error naming the key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

RACES = ("protoss", "terran", "zerg")
SIZES = ("5_vs_5", "10_vs_10", "20_vs_20", "10_vs_11", "20_vs_23")


@dataclass(frozen=True)
class GenMap:
    """One row of SMACv2's registry for a ``10gen_*`` map.  ``type_order``: the unit types in the order
    of the type bits (SMACv2's ``get_unit_type_id``)."""

    name: str
    race: str  # "P", "T", "Z"
    map_type: str
    type_order: tuple[str, str, str]
    n_agents: int = 10
    n_enemies: int = 10
    limit: int = 200
    unit_type_bits: int = 3
    map_file: str = "32x32_flat"


GEN_MAPS: dict[str, GenMap] = {
    "10gen_protoss": GenMap("10gen_protoss", "P", "protoss_gen", ("stalker", "zealot", "colossus")),
    "10gen_terran": GenMap("10gen_terran", "T", "terran_gen", ("marine", "marauder", "medivac")),
    "10gen_zerg": GenMap("10gen_zerg", "Z", "zerg_gen", ("zergling", "hydralisk", "baneling")),
}

# SMACv2's sc2_gen_*.yaml team_gen rows: (unit types, weights, exception unit types)
RACE_TEAMS: dict[str, tuple[tuple[str, ...], tuple[float, ...], tuple[str, ...]]] = {
    "protoss": (("stalker", "zealot", "colossus"), (0.45, 0.45, 0.1), ()),
    "terran": (("marine", "marauder", "medivac"), (0.45, 0.45, 0.1), ("medivac",)),
    "zerg": (("zergling", "baneling", "hydralisk"), (0.45, 0.1, 0.45), ("baneling",)),
}

# The ids SMACv2 gives the nine _RL units on the 10gen maps: min_unit_type + this index
# (``_init_ally_unit_types``: alphabetical), which also orders the agents (sorted by unit type, x, y).
GEN_UNIT_ORDER = ("baneling", "colossus", "hydralisk", "marauder", "marine", "medivac", "stalker", "zealot",
                  "zergling")


def _err(key: str, msg: str) -> ValueError:
    return ValueError(f"capability_config[{key!r}]: {msg}")


@dataclass(frozen=True)
class TeamGen:
    """``weighted_teams``: each agent's type drawn i.i.d. with ``weights``, redrawn while every member
    is an exception type; ``observe``: allies' type bits in the observation (else zero padding)."""

    unit_types: tuple[str, ...]
    weights: tuple[float, ...]
    exception_unit_types: tuple[str, ...] = ()
    observe: bool = True


@dataclass(frozen=True)
class StartPositions:
    """``surrounded_and_reflect``: "reflect" with probability ``p``, else "surrounded" (SMACv2 draws
    u ~ U[0, 1) and takes surrounded when u > p)."""

    p: float
    map_x: int = 32
    map_y: int = 32


@dataclass(frozen=True)
class EnemyMask:
    """``mask``: entry (agent, enemy) is 1 with probability ``1 - mask_probability`` (SMACv2's
    ``MaskDistribution``); a 1 hides the enemy's health, shield and type from that agent."""

    mask_probability: float


@dataclass(frozen=True)
class CapabilityConfig:
    n_units: int
    n_enemies: int
    team_gen: TeamGen
    start_positions: StartPositions | None = None
    enemy_mask: EnemyMask | None = None

    @staticmethod
    def from_dict(d: dict, race_units: tuple[str, ...] | None = None) -> CapabilityConfig:
        """Read SMACv2's ``capability_config`` dict; ``race_units``: the unit types the map allows."""
        if not isinstance(d, dict):
            raise ValueError(f"capability_config must be a dict, got {type(d).__name__}")
        allowed = {"n_units", "n_enemies", "team_gen", "start_positions", "enemy_mask"}
        for key in d:
            if key not in allowed:
                raise _err(key, f"unknown key; allowed: {sorted(allowed)} (the SMACv2 distributions this "
                                "simulator draws)")
        for key in ("n_units", "n_enemies", "team_gen"):
            if key not in d:
                raise _err(key, "missing (required)")
        n, m = d["n_units"], d["n_enemies"]
        for key, v in (("n_units", n), ("n_enemies", m)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise _err(key, f"must be a positive int, got {v!r}")
        return CapabilityConfig(n, m, _team_gen(d["team_gen"], race_units),
                                _start_positions(d["start_positions"]) if "start_positions" in d else None,
                                _enemy_mask(d["enemy_mask"]) if "enemy_mask" in d else None)

    def to_dict(self) -> dict:
        """The dict form SMACv2's wrapper takes (a fresh dict: SMACv2's wrapper writes into it)."""
        t = self.team_gen
        d: dict = {"n_units": self.n_units, "n_enemies": self.n_enemies,
                   "team_gen": {"dist_type": "weighted_teams", "unit_types": list(t.unit_types),
                                "weights": list(t.weights), "observe": t.observe}}
        if t.exception_unit_types:
            d["team_gen"]["exception_unit_types"] = list(t.exception_unit_types)
        if self.start_positions is not None:
            s = self.start_positions
            d["start_positions"] = {"dist_type": "surrounded_and_reflect", "p": s.p, "map_x": s.map_x,
                                    "map_y": s.map_y}
        if self.enemy_mask is not None:
            d["enemy_mask"] = {"dist_type": "mask", "mask_probability": self.enemy_mask.mask_probability,
                               "n_enemies": self.n_enemies}
        return d


def _dist_type(key: str, c, expected: str) -> None:
    if not isinstance(c, dict):
        raise _err(key, f"must be a dict, got {type(c).__name__}")
    if c.get("dist_type") != expected:
        raise _err(key, f"dist_type must be {expected!r} (the only one drawn here), got {c.get('dist_type')!r}")


def _probability(key: str, name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
        raise _err(key, f"{name} must be a number in [0, 1], got {v!r}")
    return float(v)


def _team_gen(c, race_units) -> TeamGen:
    _dist_type("team_gen", c, "weighted_teams")
    types = c.get("unit_types")
    weights = c.get("weights")
    if not isinstance(types, (list, tuple)) or not types:
        raise _err("team_gen", f"unit_types must be a non-empty list, got {types!r}")
    for u in types:
        if race_units is not None and u not in race_units:
            raise _err("team_gen", f"unit type {u!r} is not one of this map's {list(race_units)}")
    if not isinstance(weights, (list, tuple)) or len(weights) != len(types):
        raise _err("team_gen", f"weights must be a list of {len(types)} numbers (one per unit type), got {weights!r}")
    w = tuple(_probability("team_gen", "each weight", x) for x in weights)
    if not math.isclose(sum(w), 1.0, abs_tol=1e-8):
        raise _err("team_gen", f"weights must sum to 1, got {sum(w)!r}")
    exc = tuple(c.get("exception_unit_types", ()))
    for u in exc:
        if u not in types:
            raise _err("team_gen", f"exception unit type {u!r} is not in unit_types {list(types)}")
    if all(u in exc or wi == 0 for u, wi in zip(types, w)):
        raise _err("team_gen", "every unit type with weight > 0 is an exception: no team can be drawn")
    observe = c.get("observe", True)
    if not isinstance(observe, bool):
        raise _err("team_gen", f"observe must be a bool, got {observe!r}")
    return TeamGen(tuple(types), w, exc, observe)


def _start_positions(c) -> StartPositions:
    _dist_type("start_positions", c, "surrounded_and_reflect")
    if "p" not in c:
        raise _err("start_positions", "p is missing (the probability of the reflect layout)")
    p = _probability("start_positions", "p", c["p"])
    size = []
    for name in ("map_x", "map_y"):
        v = c.get(name, 32)
        if not isinstance(v, int) or isinstance(v, bool) or v != 32:
            raise _err("start_positions", f"{name} must be 32 (the size of the 10gen maps), got {v!r}")
        size.append(v)
    return StartPositions(p, *size)


def _enemy_mask(c) -> EnemyMask:
    _dist_type("enemy_mask", c, "mask")
    if "mask_probability" not in c:
        raise _err("enemy_mask", "mask_probability is missing")
    return EnemyMask(_probability("enemy_mask", "mask_probability", c["mask_probability"]))


@dataclass(frozen=True)
class Scenario:
    """A named SMACv2 scenario: the map and its capability configuration; ``epo``: the EPO variant's
    environment flags (``prob_obs_enemy=0``, ``action_mask=False``, SMACv2's ``sc2_gen_*_epo.yaml``)."""

    name: str
    map_name: str
    capability: CapabilityConfig
    epo: bool = False

    def env_args(self) -> dict:
        """SMACv2's ``env_args`` of the scenario (the yaml's flags that differ from the defaults)."""
        args = {"map_name": self.map_name, "capability_config": self.capability.to_dict(), "conic_fov": False,
                "use_unit_ranges": True, "min_attack_range": 2, "obs_own_pos": True, "num_fov_actions": 12}
        if self.epo:
            args.update(prob_obs_enemy=0.0, action_mask=False)
        return args


def _scenario(race: str, size: str, epo: bool) -> Scenario:
    n, m = (int(x) for x in size.split("_vs_"))
    types, weights, exc = RACE_TEAMS[race]
    cap = CapabilityConfig(n, m, TeamGen(types, weights, exc, True), StartPositions(0.5, 32, 32))
    return Scenario(f"{race}_{size}" + ("_epo" if epo else ""), f"10gen_{race}", cap, epo)


SCENARIOS: dict[str, Scenario] = {
    s.name: s for s in (_scenario(r, z, e) for e in (False, True) for r in RACES for z in SIZES)
}
SCENARIO_NAMES = tuple(SCENARIOS)


def get_scenario(name: str) -> Scenario:
    """The scenario ``name`` (``protoss_5_vs_5``, ..., ``zerg_20_vs_23``, each also ``..._epo``)."""
    if name not in SCENARIOS:
        raise ValueError(f"SMACv2 scenario {name!r} is unknown; allowed: {list(SCENARIOS)}")
    return SCENARIOS[name]


def get_gen_map(name: str) -> GenMap:
    if name not in GEN_MAPS:
        raise ValueError(f"map_name {name!r} is not a SMACv2 map; allowed: {list(GEN_MAPS)}")
    return GEN_MAPS[name]
