"""A battle's units as agents that build their own features read them (the AlphaStar commander).

``SMACBattle.units`` is a ``UnitTable``: the documented, read-only part of the engine's state, the
same for the simulator and the real-game engine. Units are indexed 0 … ``num_units``−1, side 0 first
(``side_slices``); per-game tensors are ``(num_envs, num_units)``. The tensors are the engine's own
(no copy per access): do not modify them. Anything not listed here is the engine's internals.

On a SMAC battle every game holds the same units, so the static fields are per unit ``(num_units,)``
and ``unit_names`` one list. On a SMACv2 battle (``SMACv2Battle.units``) every game draws its own
units: the static fields are ``(num_envs, num_units)``, each game's row its current draw (updated in
place at each new draw), and ``unit_names`` one list per game. ``per_game`` and ``is_type`` read
either form as ``(num_envs, num_units)``.
"""

from __future__ import annotations

from typing import Any

# name -> what it is; static fields are per unit (num_units,) (per game on SMACv2: module docstring),
# dynamic ones per game and unit.
STATIC_FIELDS = {
    "num_envs": "games in the batch",
    "num_units": "units of both sides",
    "n_side": "(units of side 0, units of side 1)",
    "side_slices": "(slice of side 0's units, slice of side 1's units)",
    "unit_names": "unit type names (marine, stalker, …), per unit",
    "device": "the tensors' device",
    "hp_max": "maximum health",
    "shield_max": "maximum shield (0 for non-Protoss)",
    "radius": "unit radius, map units",
    "speed": "movement speed, map units per game loop",
    "weapon_range": "weapon range, map units (0 for unarmed units)",
    "cooldown_loops": "weapon cooldown between shots, game loops",
    "is_air": "flying unit",
    "is_bio": "biological (Medivacs heal only these)",
    "hits_air": "its weapon can target air units",
    "armed": "has a weapon that deals damage",
    "heals": "heals allies (Medivac)",
}
DYNAMIC_FIELDS = {
    "alive": "bool (num_envs, num_units)",
    "hp": "health (num_envs, num_units)",
    "shield": "shield (num_envs, num_units)",
    "energy": "energy (num_envs, num_units); Medivacs spend it to heal",
    "cooldown": "game loops until the weapon can fire again (num_envs, num_units)",
    "pos": "positions (num_envs, num_units, 2), map units, side 0's frame",
}


class UnitTable:
    """Read-only view of a battle's units (module docstring lists every field)."""

    __slots__ = ("_engine",)

    def __init__(self, engine: Any) -> None:
        object.__setattr__(self, "_engine", engine)

    def __getattr__(self, name: str) -> Any:
        if name in STATIC_FIELDS or name in DYNAMIC_FIELDS:
            return getattr(self._engine, name)  # read at access: the engine replaces its per-step tensors
        raise AttributeError(f"UnitTable has no field {name!r}; fields: "
                             f"{', '.join(list(STATIC_FIELDS) + list(DYNAMIC_FIELDS))}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("UnitTable is read-only")

    def __dir__(self) -> list[str]:
        return sorted(list(STATIC_FIELDS) + list(DYNAMIC_FIELDS))


def per_game(units: Any, name: str) -> Any:
    """Static field ``name`` of ``units`` as ``(num_envs, num_units)``: a SMAC battle's per-unit row
    repeated for every game (a view, no copy), a SMACv2 battle's per-game rows as they are."""
    t = getattr(units, name)
    return t.expand(units.num_envs, -1) if t.dim() == 1 else t


def is_type(units: Any, type_name: str) -> Any:
    """bool ``(num_envs, num_units)``: the unit is a ``type_name`` (e.g. "medivac") in that game."""
    import torch

    names = units.unit_names
    if all(isinstance(n, str) for n in names):  # a SMAC battle: one list for every game
        row = torch.tensor([n == type_name for n in names], dtype=torch.bool, device=units.device)
        return row.expand(units.num_envs, -1)
    return torch.tensor([[n == type_name for n in game] for game in names], dtype=torch.bool, device=units.device)
