"""A panel of fixed SMAC opponents: scripted policies for either seat of a ``SMACBattle``, the ground
truth an agent trained by self-play is measured against (the role exploitability plays on poker).

Members (``PANEL``, name -> class), each a batched policy of the project's interface
(``initial_state(batch)``, ``act(obs, state, mask, episode_start) -> (actions, state, {})``) bound
to one seat of one battle: it reads the battle's documented unit state (``SMACBattle.units``) and
acts for that seat in every game of the batch (``batch == num_envs``), with actions legal under the
seat's action mask (except ``builtin``, which the engine drives). The scripts also play SMACv2's
two-player battles (``SMACv2Battle``), where every game draws its own units: they read each unit's
constants per game, at every step (``unit_table.per_game``); there the built-in AI is the
scenario's single-player game, not a member to bind.

- ``builtin``: the map's built-in AI, the behaviour of player 2 in single-player SMAC: the map
  trigger's attack-move (or attack order) and SC2's auto-acquisition, re-evaluated every game loop
  by the engine (``rules.scripted_orders``; ``SMACBattle.script_seat``).
- ``heuristic``: SMAC's heuristic AI (``get_agent_action_heuristic``, ``heuristic_batched``): each unit
  keeps a target until it dies, else takes the closest living enemy; with SMAC's ``heuristic_rest``
  rule an attack the mask does not allow (out of shooting range) becomes a move towards the target.
- ``kiting``: a ranged unit attacks the closest attackable enemy when its weapon is ready (it fires
  within this step), and while the weapon cools down steps away from the closest enemy if that enemy
  is near (within the enemy's weapon range + both radii + ``KITE_MARGIN``); melee units attack the
  closest attackable enemy.
- ``focus_weakest``: every unit attacks the attackable enemy with the least hp + shield left (ties:
  lowest index); with none in range it moves towards the closest enemy.
- ``regroup`` (retreat-and-regroup): hurt units (hp + shield below ``HURT_FRACTION`` of the maximum)
  fall back to a point ``RETREAT_DISTANCE`` behind the centroid of the healthy units (away from the
  enemy closest to it), while some unit is healthy (else every unit fights); out of contact the group first gathers (every unit within ``GATHER_RADIUS``
  of the centroid) and then advances together; in contact the healthy units focus the enemy closest
  to their centroid when they can reach it, else their own closest attackable enemy.

The last three are scripts in the spirit of SMAC-HARD (Deng et al. 2024, mixed opponent scripts).
In all four scripts a Medivac heals the most hurt (lowest hp fraction) bio ally its mask allows, else
moves to the centroid of its army. "Move towards / away" picks the move action along the larger axis
of the offset, then the other axis, then stop, whichever the mask allows first; moves are turned
into the seat's frame (east and west swapped for a mirrored seat 1).
"""

from __future__ import annotations

import torch

from .battle import MOVE_EAST, MOVE_WEST, SMACBattle
from .heuristic_batched import HeuristicPolicy
from .smacv2_battle import SMACv2Battle
from .unit_table import per_game
from .units import STEP_MUL

STOP, NORTH, SOUTH = 1, 2, 3
N_NO_ATTACK = 6  # actions before the attack/heal ids (docs/design/smac.md §2)
KITE_MARGIN = 1.0  # map units: about the distance a 2.25-speed unit closes in one step (0.5 s)
HURT_FRACTION = 0.4
RETREAT_DISTANCE = 2.0
GATHER_RADIUS = 3.0


class PanelPolicy:
    """Base of the scripted members: bound to ``seat`` of ``battle`` (module docstring)."""

    name = ""

    def __init__(self, battle: SMACBattle | SMACv2Battle, seat: int = 1):
        if not isinstance(battle, (SMACBattle, SMACv2Battle)):
            raise ValueError(f"battle must be a SMACBattle or a SMACv2Battle, got {type(battle).__name__}")
        if seat not in range(battle.n_seats):
            raise ValueError(f"seat must be a controlled seat of the battle (0..{battle.n_seats - 1}), got {seat!r}")
        self.battle, self.seat = battle, seat
        # the battle's unit view, read at access (on SMACv2 its static rows are rewritten in place at each draw)
        self.units = u = battle.units
        self.own, self.other = u.side_slices[seat], u.side_slices[1 - seat]
        self.n_own, self.n_other = u.n_side[seat], u.n_side[1 - seat]
        self.swap_east_west = seat == 1 and battle.mirror

    def initial_state(self, batch: int):
        return None

    def act(self, obs=None, state=None, mask=None, episode_start=None):
        """Actions (num_envs, n_agents) of the bound seat; ``obs`` is not read (only its batch size is
        checked), ``mask`` defaults to the battle's current mask of the seat."""
        E = self.battle.num_envs
        if obs is not None and len(obs) != E:
            raise ValueError(f"{type(self).__name__} acts for all {E} games of its battle at once, got a batch of {len(obs)}")
        if mask is None:
            mask = self.battle.action_masks()[self.seat]
        mask = torch.as_tensor(mask, dtype=torch.bool)
        if episode_start is not None:
            self.episode_started(torch.as_tensor(episode_start, dtype=torch.bool))
        with torch.no_grad():
            return self.decide(mask), None, {}

    def episode_started(self, start: torch.Tensor) -> None:
        """Forget per-game memory where ``start`` is true (nothing to forget by default)."""

    def decide(self, mask: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    # ------------------------------------------------------------ shared pieces
    def static(self, name: str, part: slice) -> torch.Tensor:
        """(E, units of ``part``): the unit constant ``name`` in every game, read at each call (on
        SMACv2 every game draws its own units: ``unit_table.per_game``)."""
        return per_game(self.units, name)[:, part]

    @property
    def heals(self) -> torch.Tensor:
        """(E, n_own): the own unit heals (a Medivac)."""
        return self.static("heals", self.own)

    def can_hit(self) -> torch.Tensor:
        """(E, n_own, n_other): the own unit's weapon can hit that enemy (SC2 rejects the other attacks)."""
        armed, hits_air = self.static("armed", self.own), self.static("hits_air", self.own)
        other_air = self.static("is_air", self.other)
        return armed[:, :, None] & (~other_air[:, None, :] | hits_air[:, :, None])

    def snapshot(self):
        """(own pos, other pos, own alive, other alive), positions in side 0's (world) frame."""
        u = self.units
        pos, alive = u.pos, u.alive
        return pos[:, self.own], pos[:, self.other], alive[:, self.own], alive[:, self.other]

    def health(self, part: slice) -> tuple[torch.Tensor, torch.Tensor]:
        """(hp + shield, the same as a fraction of the maximum) of the units of ``part``."""
        u = self.units
        left = u.hp[:, part] + u.shield[:, part]
        return left, left / (self.static("hp_max", part) + self.static("shield_max", part))

    def attackable(self, mask: torch.Tensor) -> torch.Tensor:
        """(E, n_own, n_other): attack allowed by the mask and possible for the unit's weapon."""
        return mask[..., N_NO_ATTACK:N_NO_ATTACK + self.n_other] & self.can_hit()

    def closest_enemy(self, own_pos, other_pos, other_alive) -> tuple[torch.Tensor, torch.Tensor]:
        """(distance, index) of each own unit's closest living enemy (distance inf when none)."""
        d = torch.where(other_alive[:, None, :], torch.cdist(own_pos, other_pos), torch.inf)
        return d.min(dim=-1)

    def move(self, offset: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The move along ``offset`` (E, n, 2, world frame): larger axis first, then the other, then
        stop, whichever the mask allows first; as seat actions."""
        dx, dy = offset[..., 0], offset[..., 1]
        east, west = (MOVE_WEST, MOVE_EAST) if self.swap_east_west else (MOVE_EAST, MOVE_WEST)
        horizontal = torch.where(dx >= 0, east, west)
        vertical = torch.where(dy >= 0, NORTH, SOUTH)
        first_h = dx.abs() >= dy.abs()
        first = torch.where(first_h, horizontal, vertical)
        second = torch.where(first_h, vertical, horizontal)
        ok1 = mask.gather(2, first[..., None]).squeeze(-1)
        ok2 = mask.gather(2, second[..., None]).squeeze(-1)
        return torch.where(ok1, first, torch.where(ok2, second, torch.full_like(first, STOP)))

    def medivac_actions(self, mask, own_pos, own_alive) -> torch.Tensor:
        """Heal the most hurt bio ally the mask allows, else move to the army's centroid."""
        u = self.units
        n_heal = min(self.n_own, mask.shape[-1] - N_NO_ATTACK)
        frac = u.hp[:, self.own] / self.static("hp_max", self.own)
        heals = self.heals
        hurt = own_alive & (frac < 1) & self.static("is_bio", self.own) & ~heals
        ok = mask[..., N_NO_ATTACK:N_NO_ATTACK + n_heal] & hurt[:, None, :n_heal]
        score = torch.where(ok, frac[:, None, :n_heal], torch.inf)
        best_s, best = score.min(dim=-1)
        centre = self.centroid(own_pos, own_alive & ~heals)
        go = self.move(centre[:, None, :] - own_pos, mask)
        near = (centre[:, None, :] - own_pos).norm(dim=-1) <= 1.0
        return torch.where(torch.isfinite(best_s), best + N_NO_ATTACK, torch.where(near, STOP, go))

    @staticmethod
    def centroid(pos: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
        """(E, 2) centroid of ``pos`` over ``members`` (E, n) (the mean of all where none)."""
        w = members.float()
        w = torch.where(w.sum(-1, keepdim=True) > 0, w, torch.ones_like(w))
        return (pos * w[..., None]).sum(1) / w.sum(-1, keepdim=True)

    def finish(self, action: torch.Tensor, mask: torch.Tensor, own_pos, own_alive) -> torch.Tensor:
        """Medivacs' actions in, and no-op for dead units."""
        heals = self.heals
        if bool(heals.any()):
            action = torch.where(heals, self.medivac_actions(mask, own_pos, own_alive), action)
        return torch.where(own_alive, action, torch.zeros_like(action)).long()

    def attack_or_approach(self, mask, own_pos, other_pos, other_alive, score) -> torch.Tensor:
        """Attack the attackable enemy with the lowest ``score`` (E, n_own, n_other), else move towards
        the closest living enemy."""
        s = torch.where(self.attackable(mask), score, torch.inf)
        best_s, best = s.min(dim=-1)
        _, near = self.closest_enemy(own_pos, other_pos, other_alive)
        toward = other_pos.gather(1, near[..., None].expand(-1, -1, 2)) - own_pos
        return torch.where(torch.isfinite(best_s), best + N_NO_ATTACK, self.move(toward, mask))


class BuiltinAI(PanelPolicy):
    """The map's built-in AI (module docstring): binding it hands the seat to the engine's scripted
    AI (``SMACBattle.script_seat``); its actions are no-ops that the battle ignores."""

    name = "builtin"

    def __init__(self, battle: SMACBattle, seat: int = 1):
        if isinstance(battle, SMACv2Battle):
            raise ValueError("battle: on a SMACv2 scenario the built-in AI is the scenario's single-player game "
                             "(SMACv2Battle(two_player=False)), not a seat to bind")
        super().__init__(battle, seat)
        battle.script_seat(seat)

    def decide(self, mask: torch.Tensor) -> torch.Tensor:
        return torch.zeros(self.battle.num_envs, self.n_own, dtype=torch.long)


class Heuristic(PanelPolicy):
    """SMAC's heuristic AI with its ``heuristic_rest`` rule (module docstring)."""

    name = "heuristic"

    def __init__(self, battle: SMACBattle, seat: int = 1):
        super().__init__(battle, seat)
        self.core = HeuristicPolicy(battle, seat)

    def episode_started(self, start: torch.Tensor) -> None:
        self.core.reset(start)

    def decide(self, mask: torch.Tensor) -> torch.Tensor:
        own_pos, other_pos, own_alive, _ = self.snapshot()
        order = self.core.act()  # 6 + target (attack, or heal for a Medivac), 0 without a target
        has = order >= N_NO_ATTACK
        t = (order - N_NO_ATTACK).clamp(min=0)
        legal = mask.gather(2, order[..., None]).squeeze(-1) & has
        target_pos = torch.where(self.heals[:, :, None],
                                 own_pos.gather(1, t.clamp(max=self.n_own - 1)[..., None].expand(-1, -1, 2)),
                                 other_pos.gather(1, t.clamp(max=self.n_other - 1)[..., None].expand(-1, -1, 2)))
        action = torch.where(legal, order, torch.where(has, self.move(target_pos - own_pos, mask), STOP))
        return torch.where(own_alive, action, torch.zeros_like(action)).long()


class Kiting(PanelPolicy):
    """Attack when the weapon is ready, step back from a near enemy while it cools down (module docstring)."""

    name = "kiting"

    def decide(self, mask: torch.Tensor) -> torch.Tensor:
        u = self.units
        own_pos, other_pos, own_alive, other_alive = self.snapshot()
        d = torch.cdist(own_pos, other_pos)
        attack = self.attack_or_approach(mask, own_pos, other_pos, other_alive, d)
        near_d, near = self.closest_enemy(own_pos, other_pos, other_alive)
        other_reach = self.static("weapon_range", self.other) + self.static("radius", self.other)
        reach = other_reach.gather(1, near) + self.static("radius", self.own) + KITE_MARGIN
        ranged = self.static("weapon_range", self.own) >= 1.0
        cooling = u.cooldown[:, self.own] > STEP_MUL  # the weapon cannot fire within this step (rules.fire_weapons)
        away = own_pos - other_pos.gather(1, near[..., None].expand(-1, -1, 2))
        step_back = self.move(away, mask)
        kite = ranged & cooling & (near_d <= reach) & (step_back != STOP)
        return self.finish(torch.where(kite, step_back, attack), mask, own_pos, own_alive)


class FocusWeakest(PanelPolicy):
    """Attack the attackable enemy with the least hp + shield left (module docstring)."""

    name = "focus_weakest"

    def decide(self, mask: torch.Tensor) -> torch.Tensor:
        own_pos, other_pos, own_alive, other_alive = self.snapshot()
        left, _ = self.health(self.other)
        score = left[:, None, :].expand(-1, self.n_own, -1)
        action = self.attack_or_approach(mask, own_pos, other_pos, other_alive, score)
        return self.finish(action, mask, own_pos, own_alive)


class RetreatRegroup(PanelPolicy):
    """Hurt units fall back behind the healthy ones; the group gathers, then engages together
    (module docstring)."""

    name = "regroup"

    def decide(self, mask: torch.Tensor) -> torch.Tensor:
        own_pos, other_pos, own_alive, other_alive = self.snapshot()
        _, frac = self.health(self.own)
        fighters = own_alive & ~self.heals
        hurt = fighters & (frac < HURT_FRACTION)
        healthy = fighters & ~hurt
        centre = self.centroid(own_pos, torch.where(healthy.any(-1, keepdim=True), healthy, fighters))
        # the enemy closest to the group's centre: the group's focus, and the direction of retreat
        dc = torch.where(other_alive, (other_pos - centre[:, None, :]).norm(dim=-1), torch.inf)
        _, focus = dc.min(dim=-1)
        focus_pos = other_pos[torch.arange(len(focus)), focus]
        back = centre - focus_pos
        back = back / back.norm(dim=-1, keepdim=True).clamp(min=1e-6)
        rally = centre + RETREAT_DISTANCE * back
        attackable = self.attackable(mask)
        engaged = (attackable.any(-1) & fighters).any(-1)  # (E,): some unit can shoot
        gathered = ((own_pos - centre[:, None, :]).norm(dim=-1) <= GATHER_RADIUS) | ~fighters
        gathered = gathered.all(-1)
        # in contact: the group's focus when attackable, else the closest attackable enemy
        d = torch.cdist(own_pos, other_pos)
        focus_ok = attackable.gather(2, focus[:, None, None].expand(-1, self.n_own, 1)).squeeze(-1)
        fight = torch.where(focus_ok, focus[:, None] + N_NO_ATTACK,
                            self.attack_or_approach(mask, own_pos, other_pos, other_alive, d))
        to_centre = self.move(centre[:, None, :] - own_pos, mask)
        advance = self.move(focus_pos[:, None, :] - own_pos, mask)
        idle = torch.where(gathered[:, None], advance, to_centre)
        action = torch.where(engaged[:, None], fight, idle)
        far_from_rally = (rally[:, None, :] - own_pos).norm(dim=-1) > 1.0
        retreat = hurt & (engaged & healthy.any(-1))[:, None] & far_from_rally  # behind someone, or fight
        action = torch.where(retreat, self.move(rally[:, None, :] - own_pos, mask), action)
        return self.finish(action, mask, own_pos, own_alive)


PANEL: dict[str, type[PanelPolicy]] = {c.name: c for c in (BuiltinAI, Heuristic, Kiting, FocusWeakest, RetreatRegroup)}


def panel_member(name: str, battle: SMACBattle, seat: int = 1) -> PanelPolicy:
    """The panel member ``name`` bound to ``seat`` of ``battle``."""
    if name not in PANEL:
        raise ValueError(f"panel member must be one of {list(PANEL)}, got {name!r}")
    return PANEL[name](battle, seat)
