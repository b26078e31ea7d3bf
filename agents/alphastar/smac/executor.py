"""The order executor: each unit's current order and queue, turned into one per-unit SMAC action
per environment step (docs/design/alphastar.md §5; docs/design/smac.md §2 for the per-unit actions).

Orders (``kind``), all in the seat's frame (the frame of ``SideView.positions``):

    IDLE         no order: the unit stops (SMAC action 1; SMAC's units never auto-acquire)
    STOP         stop (action 1) for one step, then the order ends
    MOVE         walk to ``goal`` with the four compass moves; ends within ``arrive_radius``
    ATTACK       attack enemy ``target``: the SMAC attack action when it is available (the enemy is
                 alive and within shoot range 6; the engine then walks into weapon range and fires),
                 else approach it with compass moves; ends when the target dies or the unit cannot
                 hit it (a ground-only weapon on an air unit)
    ATTACK_MOVE  walk to ``goal``, attacking on the way: the closest enemy the unit can hit whose
                 attack action is available; ends within ``arrive_radius`` of the goal
    HEAL         heal ally ``target`` (Medivacs): the SMAC heal action when available, else approach;
                 ends when the target dies or is at full health

Compass moves (rule): move along the axis with the larger offset to the point; if that move is not
available (wall), along the other axis if the offset there is over ``ARRIVE_AXIS``; otherwise the
unit stops and a MOVE / ATTACK_MOVE order ends (blocked: the engine has no path finding).

Queue semantics (docs/design/alphastar.md §5, "queued orders run after the current one ends"): every unit holds
``1 + queue_depth`` slots, slot 0 the current order. A command with ``queued=False`` replaces the
current order and clears the queue; with ``queued=True`` it goes into the first free slot (an idle
unit starts it at once). A queued command to a unit whose queue is full is not added (SC2 also caps
the queue); ``queue_depth`` is a setting. When the current order ends, the queue shifts by one.
Order ends are checked at the start of each step (one shift per step), and STOP / blocked moves end
after their step. Dead units drop every order and emit no-op (0).

Everything is batched over ``(games E, units n)`` tensors; no per-unit Python loops.
"""

from __future__ import annotations

import torch

IDLE, STOP, MOVE, ATTACK, ATTACK_MOVE, HEAL = range(6)
ORDER_NAMES = ("idle", "stop", "move", "attack", "attack_move", "heal")

# SMAC per-unit actions (docs/design/smac.md §2).
NO_OP, SMAC_STOP, NORTH, SOUTH, EAST, WEST = range(6)
FIRST_TARGET_ACTION = 6
ARRIVE_RADIUS = 1.0
ARRIVE_AXIS = 0.25


def compass_moves(offset: torch.Tensor, smac_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(action, blocked) of a compass move along ``offset`` (..., 2) under the SMAC mask (..., A).

    Larger axis first, then the other axis if its offset exceeds ``ARRIVE_AXIS``; blocked → stop (1)."""
    dx, dy = offset[..., 0], offset[..., 1]
    horizontal = dx.abs() >= dy.abs()
    along_x = torch.where(dx >= 0, EAST, WEST)
    along_y = torch.where(dy >= 0, NORTH, SOUTH)
    primary = torch.where(horizontal, along_x, along_y)
    secondary = torch.where(horizontal, along_y, along_x)
    secondary_offset = torch.where(horizontal, dy.abs(), dx.abs())
    ok_primary = smac_mask.gather(-1, primary[..., None]).squeeze(-1)
    ok_secondary = smac_mask.gather(-1, secondary[..., None]).squeeze(-1) & (secondary_offset > ARRIVE_AXIS)
    action = torch.where(ok_primary, primary, torch.where(ok_secondary, secondary, SMAC_STOP))
    return action, ~(ok_primary | ok_secondary)


class OrderExecutor:
    """Orders of ``n_units`` own units in ``num_envs`` games (module docstring).

    ``can_hit`` (n_units, n_enemies) bool: which own unit can attack which enemy (air/ground);
    ``heals`` (n_units,) bool: Medivacs (their target actions heal allies)."""

    def __init__(self, num_envs: int, can_hit: torch.Tensor, heals: torch.Tensor, queue_depth: int = 4,
                 arrive_radius: float = ARRIVE_RADIUS):
        if not isinstance(queue_depth, int) or queue_depth < 0:
            raise ValueError(f"queue_depth must be an int >= 0, got {queue_depth!r}")
        if not arrive_radius > 0:
            raise ValueError(f"arrive_radius must be > 0, got {arrive_radius!r}")
        self.num_envs = num_envs
        self.can_hit = can_hit.bool()
        self.heals = heals.bool()
        self.n_units, self.n_enemies = self.can_hit.shape
        self.slots = 1 + queue_depth
        self.arrive_radius = float(arrive_radius)
        dev = self.can_hit.device
        E, n, Q = num_envs, self.n_units, self.slots
        self.kind = torch.zeros(E, n, Q, dtype=torch.long, device=dev)
        self.target = torch.zeros(E, n, Q, dtype=torch.long, device=dev)
        self.goal = torch.zeros(E, n, Q, 2, device=dev)

    # ------------------------------------------------------------------ views
    @property
    def current(self) -> torch.Tensor:
        """(E, n) kind of each unit's current order."""
        return self.kind[..., 0]

    @property
    def queued_count(self) -> torch.Tensor:
        """(E, n) number of orders waiting behind the current one."""
        return (self.kind[..., 1:] != IDLE).sum(-1)

    def reset(self, games: torch.Tensor | None = None) -> None:
        """Clear every order of the games where ``games`` (E,) is true (all when None)."""
        g = torch.ones(self.num_envs, dtype=torch.bool, device=self.kind.device) if games is None else games
        self.kind = torch.where(g[:, None, None], IDLE, self.kind)

    # --------------------------------------------------------------- commands
    def issue(self, units: torch.Tensor, kind: torch.Tensor, target: torch.Tensor, goal: torch.Tensor,
              queued: torch.Tensor) -> None:
        """Give order ``kind`` (E,) with ``target`` (E,) / ``goal`` (E, 2) to the ``units`` (E, n) bool;
        ``queued`` (E,) bool appends it to the queue instead of replacing (module docstring)."""
        E, n, Q = self.kind.shape
        kind_u = kind[:, None].expand(E, n)
        target_u = target[:, None].expand(E, n)
        goal_u = goal[:, None, :].expand(E, n, 2)
        replace = units & ~queued[:, None]
        append = units & queued[:, None]
        # Replace: slot 0 = the new order, the queue cleared.
        slot0 = torch.zeros(Q, dtype=torch.bool, device=self.kind.device)
        slot0[0] = True
        self.kind = torch.where(replace[..., None], torch.where(slot0, kind_u[..., None], IDLE), self.kind)
        # Append: the first free slot (the queue is contiguous: free slots are at the end).
        free = self.kind == IDLE
        first_free = torch.where(free.any(-1), free.float().argmax(-1), Q)  # Q = full
        put = append[..., None] & (torch.arange(Q, device=self.kind.device) == first_free[..., None])
        self.kind = torch.where(put, kind_u[..., None], self.kind)
        write = (replace[..., None] & slot0) | put
        self.target = torch.where(write, target_u[..., None], self.target)
        self.goal = torch.where(write[..., None], goal_u[..., None, :], self.goal)

    # ------------------------------------------------------------------ steps
    def _pop(self, ended: torch.Tensor) -> None:
        """Shift the queue of units whose current order ``ended`` (E, n) by one slot."""
        e3 = ended[..., None]
        shift = lambda x, fill: torch.cat([x[:, :, 1:], fill], dim=2)  # noqa: E731
        self.kind = torch.where(e3, shift(self.kind, torch.zeros_like(self.kind[:, :, :1])), self.kind)
        self.target = torch.where(e3, shift(self.target, torch.zeros_like(self.target[:, :, :1])), self.target)
        self.goal = torch.where(e3[..., None], shift(self.goal, torch.zeros_like(self.goal[:, :, :1])), self.goal)

    def step(self, own_pos: torch.Tensor, own_alive: torch.Tensor, own_full_hp: torch.Tensor,
             enemy_pos: torch.Tensor, enemy_alive: torch.Tensor, smac_mask: torch.Tensor) -> torch.Tensor:
        """Per-unit SMAC actions (E, n) for this step, in the seat's frame, legal under ``smac_mask``.

        own_pos (E, n, 2), own_alive (E, n), own_full_hp (E, n) (a heal target at full health ends a
        heal), enemy_pos (E, m, 2), enemy_alive (E, m), smac_mask (E, n, 6 + m) from the battle."""
        E, n, _ = self.kind.shape
        self.kind = torch.where(own_alive[..., None], self.kind, IDLE)
        kind, tgt, goal = self.kind[..., 0], self.target[..., 0], self.goal[..., 0, :]
        # 1. orders that have ended since the last step
        m_idx = tgt.clamp(max=self.n_enemies - 1)
        a_idx = tgt.clamp(max=n - 1)
        enemy_alive_t = enemy_alive.gather(1, m_idx)
        hittable = self.can_hit[torch.arange(n, device=tgt.device)[None, :], m_idx]
        ally_alive_t = own_alive.gather(1, a_idx)
        ally_full_t = own_full_hp.gather(1, a_idx)
        arrived = (goal - own_pos).norm(dim=-1) <= self.arrive_radius
        ended = (((kind == ATTACK) & ~(enemy_alive_t & hittable))
                 | ((kind == HEAL) & ~(ally_alive_t & ~ally_full_t))
                 | (((kind == MOVE) | (kind == ATTACK_MOVE)) & arrived))
        self._pop(ended)
        kind, tgt, goal = self.kind[..., 0], self.target[..., 0], self.goal[..., 0, :]
        m_idx = tgt.clamp(max=self.n_enemies - 1)
        a_idx = tgt.clamp(max=n - 1)

        # 2. the action of each current order
        action = torch.full((E, n), SMAC_STOP, dtype=torch.long, device=kind.device)
        move_act, move_blocked = compass_moves(goal - own_pos, smac_mask)
        action = torch.where((kind == MOVE) | (kind == ATTACK_MOVE), move_act, action)
        # attack-move: the closest enemy this unit can hit whose attack action is available
        attackable = smac_mask[..., FIRST_TARGET_ACTION:] & self.can_hit[None] & enemy_alive[:, None, :]
        dist = torch.cdist(own_pos, enemy_pos)
        near_d, near = torch.where(attackable, dist, torch.inf).min(-1)
        engage = (kind == ATTACK_MOVE) & torch.isfinite(near_d)
        action = torch.where(engage, FIRST_TARGET_ACTION + near, action)
        # attack / heal a unit: its action when available, else approach it
        target_pos = torch.where((kind == HEAL)[..., None], own_pos.gather(1, a_idx[..., None].expand(E, n, 2)),
                                 enemy_pos.gather(1, m_idx[..., None].expand(E, n, 2)))
        approach, _ = compass_moves(target_pos - own_pos, smac_mask)
        unit_target = torch.where(kind == HEAL, a_idx, m_idx).clamp(max=self.n_enemies - 1)
        in_reach = smac_mask.gather(2, (FIRST_TARGET_ACTION + unit_target)[..., None]).squeeze(-1)
        on_unit = (kind == ATTACK) | (kind == HEAL)
        action = torch.where(on_unit, torch.where(in_reach, FIRST_TARGET_ACTION + unit_target, approach), action)
        action = torch.where(own_alive, action, NO_OP)

        # 3. orders that end with this step: STOP, and moves that found no way forward
        moving = (kind == MOVE) | ((kind == ATTACK_MOVE) & ~engage)
        self._pop((kind == STOP) | (moving & move_blocked))
        return action
