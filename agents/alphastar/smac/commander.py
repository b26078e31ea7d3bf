"""``SMACCommander``: the AlphaStar agent's seat of a ``SMACBattle`` (docs/design/alphastar.md §5).

One commander plays one seat of all ``E`` games of a battle. Per environment step:

    due = cmd.due()                       # games whose delay has run out
    obs = cmd.observe()                   # AlphaStarObs [E, 1, ...] of every game
    cmd.apply(actions, due)               # commander actions [E] (only `due` games are read)
    unit_actions = cmd.unit_actions()     # (E, n_agents) SMAC actions for battle.step
    ... battle.step(...) ...
    cmd.reset_games(done)                 # finished games start afresh

Actions (``AlphaStarActions`` with fields ``[E]``, selected units ``[E, S]``): action type
(``COMMANDER_ACTION_TYPES``), delay ``d`` (the commander acts again ``d + 1`` steps later), queued,
selected units (entity slots of own units, pick order, then −1), target unit (entity slot: an enemy
for attack_unit, an own unit for heal_unit), location (flat cell index y·grid + x; the order's
point is the cell centre). Unused arguments must be −1. Anything the last ``observe()``'s masks forbid
raises ``ValueError`` (never silently replaced).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..network import UNUSED, AlphaStarActions, AlphaStarObs
from .executor import ATTACK, ATTACK_MOVE, HEAL, IDLE, MOVE, STOP, OrderExecutor
from .features import (
    ATTACK_MOVE as AT_ATTACK_MOVE,
)
from .features import (
    ATTACK_UNIT,
    COMMANDER_ACTION_TYPES,
    HEAL_UNIT,
    SideFeatures,
    commander_config,
)
from .features import (
    MOVE as AT_MOVE,
)
from .features import (
    STOP as AT_STOP,
)

# action type → executor order kind (no_op gives no order)
ORDER_OF_ACTION = {AT_STOP: STOP, AT_MOVE: MOVE, ATTACK_UNIT: ATTACK, AT_ATTACK_MOVE: ATTACK_MOVE, HEAL_UNIT: HEAL}


@dataclass(frozen=True)
class CommanderConfig:
    """num_delays: delay choices (must equal the network's); queue_depth: orders waiting per unit;
    max_selected_units: picks per action (None → the map's largest side); grid: side of the
    spatial / location grid over the 32×32 map (32, 16 or 8)."""

    num_delays: int = 8
    queue_depth: int = 4
    max_selected_units: int | None = None
    grid: int = 32

    def __post_init__(self):
        if not isinstance(self.num_delays, int) or self.num_delays < 1:
            raise ValueError(f"num_delays must be a positive int, got {self.num_delays!r}")
        if not isinstance(self.queue_depth, int) or self.queue_depth < 0:
            raise ValueError(f"queue_depth must be an int >= 0, got {self.queue_depth!r}")


class SMACCommander:
    """Features, masks, last action, delays and the order executor of one seat (module docstring)."""

    def __init__(self, battle, seat: int = 0, config: CommanderConfig = CommanderConfig()):
        self.battle, self.seat, self.config = battle, seat, config
        self.side = SideFeatures(battle, seat, config.grid)
        self.num_envs = E = battle.units.num_envs
        self.n_agents, self.n_entities = self.side.n, self.side.N
        self.max_selected_units = config.max_selected_units or max(battle.units.n_side)
        if self.max_selected_units < 1:
            raise ValueError(f"max_selected_units must be >= 1, got {self.max_selected_units}")
        self.device = self.side.device
        self.executor = OrderExecutor(E, self.side.can_hit, self.side.heals, config.queue_depth)
        self.wait = torch.zeros(E, dtype=torch.long, device=self.device)
        self.last = self._empty_last(E)
        self._masks: dict | None = None

    def network_config(self, **overrides):
        """The ``AlphaStarConfig`` that fits this commander (``features.commander_config``)."""
        sizes = dict(num_delays=self.config.num_delays, max_selected_units=self.max_selected_units)
        sizes.update(overrides)
        return commander_config(self.battle, self.config.grid, **sizes)

    def _empty_last(self, E: int) -> dict:
        minus = lambda: torch.full((E,), UNUSED, dtype=torch.long, device=self.device)  # noqa: E731
        return {"action_type": minus(), "delay": minus(), "queued": minus(), "target": minus(),
                "location": minus(), "selected": torch.zeros(E, self.n_entities, dtype=torch.bool, device=self.device)}

    # ------------------------------------------------------------------ api
    @property
    def masks(self) -> dict[str, torch.Tensor]:
        """The masks of the last ``observe()``: available [E, A], selectable / targetable [E, A, N],
        location [E, R, R]."""
        if self._masks is None:
            raise ValueError("masks need observe() first")
        return self._masks

    def due(self) -> torch.Tensor:
        """(E,) bool: games where the commander acts this step."""
        return self.wait <= 0

    def reset_games(self, games: torch.Tensor | None = None) -> None:
        """Forget orders, delay and last action of the games where ``games`` (E,) is true (all if None)."""
        g = torch.ones(self.num_envs, dtype=torch.bool, device=self.device) if games is None else games.to(self.device)
        self.executor.reset(g)
        self.wait = torch.where(g, 0, self.wait)
        empty = self._empty_last(self.num_envs)
        for k, v in self.last.items():
            shape = (-1,) + (1,) * (v.dim() - 1)
            self.last[k] = torch.where(g.view(shape), empty[k], v)

    def observe(self) -> AlphaStarObs:
        """The network input ``[E, 1, ...]`` of every game (and the masks ``apply`` checks against)."""
        side = self.side
        masks = side.masks()
        self._masks = masks
        smac_mask = self.battle.action_masks()[self.seat]
        entities, present = side.entities(self.executor, self.last, smac_mask)
        scalars, opponent = side.scalars(self.last, masks["available"], self.config.num_delays)
        t = lambda x: x.unsqueeze(1)  # noqa: E731  [E, ...] → [E, 1, ...]
        return AlphaStarObs(
            entities=t(entities),
            entity_mask=t(present),
            spatial=t(side.spatial(self.executor, self.last)),
            scalars={k: t(v) for k, v in scalars.items()},
            available_action_types=t(masks["available"]),
            selectable_units=t(masks["selectable"]),
            targetable_units=t(masks["targetable"]),
            location_mask=t(masks["location"]),
            entity_positions=t(side.cells()),
            opponent_scalars={k: t(v) for k, v in opponent.items()},
        )

    def apply(self, actions: AlphaStarActions, games: torch.Tensor) -> None:
        """Check the commander actions of the ``games`` (E,) bool against the last observation's masks
        and turn them into orders (module docstring). Raises ``ValueError`` for an illegal choice."""
        if self._masks is None:
            raise ValueError("apply() needs observe() first (the masks of the current step)")
        a = self._flatten(actions)
        g = games.to(self.device).bool()
        self._check(a, g)
        E, n = self.num_envs, self.n_agents
        at = a["action_type"]
        units = torch.zeros(E, self.n_entities + 1, dtype=torch.bool, device=self.device)
        sel = a["selected_units"]
        slot = torch.where((sel >= 0) & (sel < self.n_entities), sel, self.n_entities)  # −1 → a spare column
        units.scatter_(1, slot, True)
        units = units[:, :n] & g[:, None]
        kind = torch.full_like(at, IDLE)
        for action_type, order in ORDER_OF_ACTION.items():
            kind = torch.where(at == action_type, order, kind)
        units = units & (kind != IDLE)[:, None]
        target = a["target_unit"]
        target = torch.where(at == ATTACK_UNIT, target - n, target).clamp(min=0)
        loc = a["location"].clamp(min=0)
        goal = self.side.cell_centres(loc)
        self.executor.issue(units, kind, target, goal, a["queued"] == 1)
        self.wait = torch.where(g, a["delay"] + 1, self.wait)
        selected = torch.zeros(E, self.n_entities + 1, dtype=torch.bool, device=self.device)
        selected.scatter_(1, slot, True)
        new_last = {"action_type": at, "delay": a["delay"], "queued": a["queued"], "target": a["target_unit"],
                    "location": a["location"], "selected": selected[:, : self.n_entities]}
        for k, v in new_last.items():
            shape = (-1,) + (1,) * (v.dim() - 1)
            self.last[k] = torch.where(g.view(shape), v, self.last[k])

    def unit_actions(self) -> torch.Tensor:
        """(E, n_agents) per-unit SMAC actions of this step from the orders (counts one step of delay)."""
        side = self.side
        pos = side.positions()
        alive = side.alive()
        hp, _ = side.health()
        n = self.n_agents
        actions = self.executor.step(pos[:, :n], alive[:, :n], hp[:, :n] >= 1.0, pos[:, n:], alive[:, n:],
                                     self.battle.action_masks()[self.seat])
        self.wait = (self.wait - 1).clamp(min=0)
        return actions

    # -------------------------------------------------------------- checks
    def _flatten(self, actions: AlphaStarActions) -> dict[str, torch.Tensor]:
        E, S = self.num_envs, self.max_selected_units
        out = {}
        for name in ("action_type", "delay", "queued", "target_unit", "location"):
            v = torch.as_tensor(getattr(actions, name), device=self.device).long()
            if v.numel() != E:
                raise ValueError(f"actions.{name} must hold one value per game ({E}), got shape {tuple(v.shape)}")
            out[name] = v.reshape(E)
        v = torch.as_tensor(actions.selected_units, device=self.device).long()
        if v.numel() != E * S:
            raise ValueError(f"actions.selected_units must be [E={E}, S={S}], got shape {tuple(v.shape)}")
        out["selected_units"] = v.reshape(E, S)
        return out

    def _check(self, a: dict, games: torch.Tensor) -> None:
        """Raise ``ValueError`` naming the argument and the first game where a choice is illegal."""
        masks = self._masks
        E, N, A = self.num_envs, self.n_entities, len(COMMANDER_ACTION_TYPES)
        g = self.side.grid
        R2 = g * g
        rows = torch.arange(E, device=self.device)

        def fail(bad: torch.Tensor, name: str, allowed: str) -> None:
            bad = bad & games
            if bool(bad.any()):
                e = int(torch.nonzero(bad)[0])
                value = a[name][e].tolist()
                raise ValueError(f"actions.{name} = {value} in game {e} is illegal; allowed: {allowed}")

        at = a["action_type"]
        fail((at < 0) | (at >= A), "action_type", f"0..{A - 1}")
        fail(~masks["available"][rows, at.clamp(0, A - 1)], "action_type", "an available action type (mask)")
        fail((a["delay"] < 0) | (a["delay"] >= self.config.num_delays), "delay", f"0..{self.config.num_delays - 1}")
        spec = [COMMANDER_ACTION_TYPES[i] for i in range(A)]
        uses = {h: torch.tensor([getattr(s, h) for s in spec], device=self.device)[at]
                for h in ("queued", "selected_units", "target_unit", "location")}
        q = a["queued"]
        fail(uses["queued"] & (q != 0) & (q != 1), "queued", "0 or 1 for an action type that can be queued")
        for h in ("queued", "target_unit", "location"):
            fail(~uses[h] & (a[h] != UNUSED), h, f"{UNUSED} (the action type does not use it)")
        sel = a["selected_units"]
        used = uses["selected_units"]
        fail(~used & (sel != UNUSED).any(-1), "selected_units", f"all {UNUSED} (the action type does not use it)")
        picked = sel >= 0
        ended = torch.cumsum((~picked).long(), -1) > 0
        fail(used & ~picked[:, 0], "selected_units", "at least one unit")
        fail((picked & ended).any(-1), "selected_units", f"unit slots in pick order, then {UNUSED}")
        fail(((sel < UNUSED) | (sel >= N)).any(-1), "selected_units", f"entity slots 0..{N - 1} or {UNUSED}")
        s = sel.clamp(0, N - 1)
        ok = masks["selectable"][rows, at.clamp(0, A - 1)].gather(1, s) | ~picked
        fail(used & ~ok.all(-1), "selected_units", "selectable units of the action type (mask)")
        same = (s[:, :, None] == s[:, None, :]) & picked[:, :, None] & picked[:, None, :]
        fail(used & (same.sum((1, 2)) > picked.sum(-1)), "selected_units", "each unit at most once")
        t = a["target_unit"]
        fail(uses["target_unit"] & ((t < 0) | (t >= N)), "target_unit", f"entity slots 0..{N - 1}")
        t_ok = masks["targetable"][rows, at.clamp(0, A - 1), t.clamp(0, N - 1)]
        fail(uses["target_unit"] & ~t_ok, "target_unit", "a targetable unit of the action type (mask)")
        loc = a["location"]
        fail(uses["location"] & ((loc < 0) | (loc >= R2)), "location", f"cells 0..{R2 - 1} (y*{g}+x)")
        l_ok = masks["location"].reshape(E, R2)[rows, loc.clamp(0, R2 - 1)]
        fail(uses["location"] & ~l_ok, "location", "a walkable cell (mask)")
