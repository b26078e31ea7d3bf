"""The batched SMAC battle engine: ``num_envs`` games as torch tensors, units x fields.

Units of both sides live in one axis of size ``U = n_side0 + n_side1`` (side 0 first, in agent
order).  One environment step is ``STEP_MUL`` = 8 game loops (spec-smac.md §1); every loop is
resolved for all games and all units at once, in this order:

1. the scripted AI (sides listed in ``scripted_sides``) picks orders (``_scripted_orders``): the
   map trigger's order and SC2's auto-acquisition;
2. orders whose target died end (the unit becomes idle: SMAC's "_RL" units never auto-acquire);
3. weapon cooldowns tick down one loop; a unit whose attack target is within weapon range
   (edge distance ``|p_t - p_a| - r_a - r_t <= range``) and whose cooldown is <= 0 fires, and its
   cooldown becomes ``cooldown + jitter`` loops, jitter uniform in {-1, 0, 1, 2} (§1, seeded);
4. damage (§8): each hit deals ``damage + bonus`` (bonus if the target has an attribute in
   ``bonus_vs``); zealots and colossi hit twice; hits are taken by the shield first and the part
   that reaches hp is reduced by the target's armour per hit, to a minimum of 0.5 for a hit that
   lands entirely on hp (hits landing on one unit in the same loop: see ``_damage``); colossus hits also land on every enemy ground unit on a short line through the
   target perpendicular to the attack direction; a baneling that reaches its target explodes,
   hitting every enemy ground unit within 2.2 (+ their radius) and dying;
5. Medivac healing: 9 hp/s on a bio ally within 4 (edge distance), 1 energy per 3 hp;
6. movement at each unit's speed (a Medivac accelerates at 2.3125/s^2 from rest): towards a move
   point, towards an attack/heal target until in range, or to the attack-move point; ground units
   chasing or attack-moving follow shortest paths around terrain (``pathing.py``); a step into a
   blocked cell slides along x or y or stops;
7. regeneration: shields +2/s after 10 s without damage, zerg +0.2734 hp/s, energy +0.5625/s;
8. deaths (hp <= 0).

After the 8 loops of a step, overlapping ground units push each other apart (collisions are
resolved once per step, not per loop: an approximation that keeps every loop O(E x U)).

Orders: ``STOP`` (idle), ``MOVE`` (to ``goal``), ``ATTACK`` (unit ``target``), ``HEAL`` (unit
``target``), ``AMOVE`` (scripted attack-move to ``goal``).

The scripted side (single-player mode: player 2) follows the map's trigger (``MapSpec.enemy_order``,
re-issued at every reset): attack-move to a point (a random point on a segment for 2m_vs_1z, drawn
per game at each reset), attack the ally group (2c_vs_64zg: the closest living member), or no order
(2s_vs_1sc's spine crawler).  SC2's auto-acquisition (``_scripted_orders``): a unit keeps a target
within its weapon range; else it acquires, among the enemies it can hit within its scan range
(``UnitStats.scan_range``: max(weapon range, 5), edge distance), the closest one that can attack it,
else the closest; else the unit that last fired at it (if within sight 9: units respond to attacks
from beyond their scan range); else it keeps chasing its living target while within sight; else it
returns to the trigger's order.  Units under an attack-unit order do not auto-acquire.

Arithmetic: float32 throughout, with two rules that make every result the same float32 on any
machine and in every implementation of these rules (the torch engine here, on CPU or GPU, and the
compiled single-game kernels of ``kernels.py``): a distance is ``sqrt(dx^2 + dy^2)`` computed in
float64 and rounded once to float32 (``distance``: torch's float32 ``sqrt``/``hypot`` are not
correctly rounded on every CPU), and a sum over units is accumulated in float64 (exact for these
float32 terms, so the order of summation does not matter) and rounded once.

Approximations (documented, not SC2): no projectile travel time or weapon damage point; paths are
found on the 1 x 1 pathing grid; all target priorities are equal (20 for every unit of these maps).
A unit ordered to attack a target it cannot hit (a marauder on a Medivac) keeps its previous order
(SC2 rejects the order).
"""

from __future__ import annotations

import numpy as np
import torch

from .maps import MAP_SIZE, MapSpec, agent_order
from .pathing import PathTable
from .units import (
    COLOSSUS_LINE_HALF_LENGTH,
    COLOSSUS_LINE_HALF_WIDTH,
    COOLDOWN_JITTER_HIGH,
    COOLDOWN_JITTER_LOW,
    LOOPS_PER_SECOND,
    MEDIVAC_ENERGY_REGEN_PER_S,
    MEDIVAC_HEAL_PER_S,
    MEDIVAC_HP_PER_ENERGY,
    MEDIVAC_MAX_ENERGY,
    MEDIVAC_START_ENERGY,
    MOVE_AMOUNT,
    SHIELD_REGEN_DELAY_S,
    SHIELD_REGEN_PER_S,
    SIGHT_RANGE,
    STEP_MUL,
    UNIT_STATS,
    ZERG_REGEN_PER_S,
    BIO,
)

NO_ORDER, ORDER_AMOVE, ORDER_ATTACK_GROUP = 0, 1, 2  # the scripted side's trigger order

STOP, MOVE, ATTACK, HEAL, AMOVE = 0, 1, 2, 3, 4

# Move actions 2..5: north (+y), south, east (+x), west (spec §2).
MOVE_DIRECTIONS = ((0.0, 1.0), (0.0, -1.0), (1.0, 0.0), (-1.0, 0.0))


def distance(dx: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """``sqrt(dx^2 + dy^2)`` of float32 ``dx``, ``dy``, computed in float64 and rounded once to float32:
    the correctly rounded float32 distance (the squares are exact in float64), the same on every
    device and in the compiled kernels (module docstring, "Arithmetic")."""
    x, y = dx.double(), dy.double()
    return torch.sqrt(x * x + y * y).float()


def sum_exact(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Sum of float32 ``x`` over ``dim`` accumulated in float64, rounded once to float32 (module
    docstring, "Arithmetic")."""
    return x.double().sum(dim).float()


class BattleEngine:
    """State and rules of ``num_envs`` SMAC battles on one map (module docstring).

    Tensors (E = num_envs, U = units of both sides): ``pos`` (E, U, 2), ``hp``, ``shield``,
    ``energy``, ``cooldown`` (loops until the weapon is ready), ``order``, ``target``, ``goal``
    (E, U, 2), ``since_damage`` (loops since the last damage taken), ``trigger_goal`` (E, U, 2: the
    trigger's attack-move point), ``last_attacker`` (E, U: who last fired at the unit, -1 none),
    ``cur_speed`` (E, U: the speed of accelerating units).  ``mirror_spawns``: side 1 starts at the
    mirror image of side 0's placement rule (``MapSpec.spawn_positions(1, mirrored=True)``), for a
    mirrored seat in two-player mode."""

    def __init__(self, spec: MapSpec, num_envs: int, device: str | torch.device = "cpu", seed: int | None = None,
                 scripted_sides: tuple[int, ...] = (1,), mirror_spawns: bool = False):
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        for s in scripted_sides:
            if s not in (0, 1):
                raise ValueError(f"scripted_sides must contain only 0 or 1, got {scripted_sides!r}")
        self.spec = spec
        self.num_envs = num_envs
        self.device = torch.device(device)
        self.scripted_sides = tuple(scripted_sides)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(seed) if seed is not None else int(np.random.SeedSequence().entropy % (2**63)))

        self.mirror_spawns = bool(mirror_spawns)
        names = spec.units(0) + spec.units(1, self.mirror_spawns)
        self.n_side = (len(spec.units(0)), len(spec.units(1)))
        self.num_units = U = len(names)
        self.side_slices = (slice(0, self.n_side[0]), slice(self.n_side[0], U))
        stats = [UNIT_STATS[n] for n in names]
        dev = self.device

        def f(values):
            return torch.tensor(values, dtype=torch.float32, device=dev)

        def b(values):
            return torch.tensor(values, dtype=torch.bool, device=dev)

        self.unit_names = names
        self.side = torch.tensor([0] * self.n_side[0] + [1] * self.n_side[1], device=dev)
        self.hp_max = f([s.hp for s in stats])
        self.shield_max = f([s.shield for s in stats])
        self.armor = f([s.armor for s in stats])
        self.attributes = torch.tensor([s.attributes for s in stats], device=dev)
        self.speed = f([s.speed_per_loop for s in stats])
        self.radius = f([s.radius for s in stats])
        self.weapon_range = f([s.weapon_range for s in stats])
        self.cooldown_loops = f([s.cooldown_loops for s in stats])
        self.scan_range = f([s.scan_range for s in stats])
        self.accel = f([s.acceleration / LOOPS_PER_SECOND**2 for s in stats])  # distance per loop^2
        self.any_accel = bool((self.accel > 0).any())
        self.max_cooldown = f([s.max_cooldown for s in stats])
        self.hits = torch.tensor([s.hits for s in stats], device=dev)
        self.is_air = b([s.air for s in stats])
        self.hits_air = b([s.hits_air for s in stats])
        self.heals = b([s.heals for s in stats])
        self.is_line = b([s.splash == "line" for s in stats])
        self.explodes = b([s.splash == "explode" for s in stats])
        self.splash_radius = f([s.splash_radius for s in stats])
        self.is_zerg = b([s.race == "Z" for s in stats])
        self.is_bio = (self.attributes & BIO) != 0
        self.cliff_walker = b([n == "colossus" for n in names])
        # small ground units collide; colossi, air and immobile units (the spine crawler) do not
        self.collides = ~self.is_air & ~self.cliff_walker & (self.speed > 0)
        self.is_scripted = b([s in self.scripted_sides for s in [0] * self.n_side[0] + [1] * self.n_side[1]])
        # Raw damage per hit of unit i on unit j, bonus included (U, U).
        dmg = f([s.damage for s in stats])
        bonus = f([s.bonus for s in stats])
        bonus_vs = torch.tensor([s.bonus_vs for s in stats], device=dev)
        has_bonus = (self.attributes[None, :] & bonus_vs[:, None]) != 0
        self.raw_damage = dmg[:, None] + bonus[:, None] * has_bonus
        self.armed = dmg > 0
        self.opponent = self.side[:, None] != self.side[None, :]
        # Who may target whom with an attack: opposite side, and air only for anti-air weapons.
        self.can_target = self.opponent & (~self.is_air[None, :] | self.hits_air[:, None])
        self.has_shields = bool((self.shield_max > 0).any())
        self.has_colliders = bool(self.collides.sum() > 1)
        self.collider_units = torch.nonzero(self.collides).flatten()
        self.splashes = self.is_line | self.explodes
        self.splash_units = torch.nonzero(self.splashes).flatten()
        self.any_splash = bool(self.splashes.any())
        self.any_explodes = bool(self.explodes.any())
        self.any_healer = bool(self.heals.any())
        self.any_zerg = bool(self.is_zerg.any())
        self.any_special_mover = bool((self.is_air | self.cliff_walker).any())
        self.zerg_regen = torch.where(self.is_zerg, ZERG_REGEN_PER_S / LOOPS_PER_SECOND, 0.0)
        self.unit_index = torch.arange(U, device=dev)[None, :]

        walk = spec.pathing_grid()
        self.walkable = torch.tensor(walk.reshape(-1), device=dev)
        self.cliff_walkable = torch.tensor((walk | spec.cliff_grid()).reshape(-1), device=dev)
        self.paths = PathTable(walk, dev)
        self.cliff_paths = PathTable(walk | spec.cliff_grid(), dev) if bool(self.cliff_walker.any()) else self.paths
        spawn = np.concatenate([spec.spawn_positions(0), spec.spawn_positions(1, self.mirror_spawns)])
        self.spawn = torch.tensor(spawn, dtype=torch.float32, device=dev)
        # The scripted side's trigger order (class docstring); side 0, when scripted, attack-moves to
        # the other side's spawn centre (the maps give player 1 no order).
        kind, self.order_points = NO_ORDER, None
        order = spec.enemy_order
        if order is None and spec.terrain in ("open", "line"):  # hand-made specs
            order = ("attack_point", (tuple(spec.spawn_centres(0)),))
        if order is not None and order[0] in ("attack_point", "attack_point_between"):
            kind, self.order_points = ORDER_AMOVE, torch.tensor(order[1], dtype=torch.float32, device=dev)
        self.group_target = torch.zeros(U, dtype=torch.bool, device=dev)
        if order is not None and order[0] == "attack_units":
            kind = ORDER_ATTACK_GROUP
            created = spec._created(0)
            members = [created[k][1] in order[1] for k in agent_order(spec, 0)]
            self.group_target[: self.n_side[0]] = torch.tensor(members, device=dev)
        self.any_group_order = kind == ORDER_ATTACK_GROUP
        self.trigger_kind = torch.tensor([kind if s == 1 else ORDER_AMOVE for s in self.side.tolist()], device=dev)
        self.side0_goal = torch.tensor(spec.spawn_centres(1), dtype=torch.float32, device=dev)  # scripted side 0

        E = num_envs
        self._target_cache = None
        self.pos = torch.zeros(E, U, 2, device=dev)
        self.hp = torch.zeros(E, U, device=dev)
        self.shield = torch.zeros(E, U, device=dev)
        self.energy = torch.zeros(E, U, device=dev)
        self.cooldown = torch.zeros(E, U, device=dev)
        self.since_damage = torch.zeros(E, U, device=dev)
        self.order = torch.zeros(E, U, dtype=torch.long, device=dev)
        self.target = torch.zeros(E, U, dtype=torch.long, device=dev)
        self.goal = torch.zeros(E, U, 2, device=dev)
        self.trigger_goal = torch.zeros(E, U, 2, device=dev)  # the attack-move point of each unit's trigger
        self.cur_speed = torch.zeros(E, U, device=dev)
        self.last_attacker = torch.full((E, U), -1, dtype=torch.long, device=dev)  # who last fired at each unit
        self.reset()

    # ------------------------------------------------------------------ state
    @property
    def alive(self) -> torch.Tensor:
        return self.hp > 0

    def reset(self, mask: torch.Tensor | None = None) -> None:
        """Put the games where ``mask`` (E,) is true (all when None) back at their start."""
        m = torch.ones(self.num_envs, dtype=torch.bool, device=self.device) if mask is None else mask.to(self.device)
        mu, mp = m[:, None], m[:, None, None]
        self.pos = torch.where(mp, self.spawn.expand_as(self.pos), self.pos)
        self.hp = torch.where(mu, self.hp_max.expand_as(self.hp), self.hp)
        self.shield = torch.where(mu, self.shield_max.expand_as(self.shield), self.shield)
        start_energy = torch.where(self.heals, MEDIVAC_START_ENERGY, 0.0)
        self.energy = torch.where(mu, start_energy.expand_as(self.energy), self.energy)
        self.cooldown = torch.where(mu, 0.0, self.cooldown)
        self.since_damage = torch.where(mu, 0.0, self.since_damage)
        self.order = torch.where(mu, STOP, self.order)
        self.target = torch.where(mu, 0, self.target)
        self.goal = torch.where(mp, self.spawn.expand_as(self.goal), self.goal)
        self.cur_speed = torch.where(mu, 0.0, self.cur_speed)
        self.last_attacker = torch.where(mu, -1, self.last_attacker)
        self.trigger_goal = torch.where(mp, self._draw_trigger_goals(), self.trigger_goal)

    def _draw_trigger_goals(self) -> torch.Tensor:
        """(E, U, 2) attack-move points of the triggers: side 1 the map's point (a uniform point of the
        segment, per game, for ``attack_point_between``), side 0 the other side's spawn centre."""
        E, U = self.num_envs, self.num_units
        goal = self.side0_goal.expand(E, U, 2).clone()
        if self.order_points is not None:
            p = self.order_points
            if p.shape[0] == 2:
                t = torch.rand(E, 1, generator=self.generator, device=self.device)
                g = p[0] + t * (p[1] - p[0])
            else:
                g = p[0].expand(E, 2)
            goal[:, self.side_slices[1]] = g[:, None, :]
        return goal

    # --------------------------------------------------------------- commands
    def command(self, side: int, actions: torch.Tensor) -> None:
        """Issue SMAC actions (E, n_side) of ``side`` in world coordinates (spec §2), replacing
        every current order (``queue_command=False``).  Actions are assumed legal (the callers
        check the masks): 0 no-op, 1 stop, 2-5 move N/S/E/W by 2, 6+t attack enemy t (Medivac:
        heal ally t)."""
        sl = self.side_slices[side]
        a = actions.to(self.device).long()
        order = self.order[:, sl]
        target = self.target[:, sl]
        goal = self.goal[:, sl]
        pos = self.pos[:, sl]
        dirs = torch.tensor(MOVE_DIRECTIONS, device=self.device)
        is_move = (a >= 2) & (a <= 5)
        step = dirs[(a - 2).clamp(0, 3)] * MOVE_AMOUNT
        goal = torch.where(is_move[..., None], pos + step, goal)
        t = (a - 6).clamp(min=0)
        other = self.side_slices[1 - side]
        heals = self.heals[sl][None, :]
        target_unit = torch.where(heals, sl.start + t, other.start + t)
        is_target = a >= 6
        tgt_air = self.is_air[target_unit.clamp(max=self.num_units - 1)]
        hittable = heals | ~tgt_air | self.hits_air[sl][None, :]
        order = torch.where(a == 1, STOP, order)
        order = torch.where(is_move, MOVE, order)
        accepted = is_target & (heals | hittable)  # SC2 rejects an attack it cannot make: the old order stays
        order = torch.where(accepted, torch.where(heals, HEAL, ATTACK), order)
        target = torch.where(accepted, target_unit, target)
        self.order[:, sl] = order
        self.target[:, sl] = target
        self.goal[:, sl] = goal

    # ------------------------------------------------------------------ loops
    def advance(self, loops: int = STEP_MUL) -> None:
        """Run ``loops`` game loops (one environment step = 8), then separate overlapping units."""
        jitter = torch.randint(COOLDOWN_JITTER_LOW, COOLDOWN_JITTER_HIGH + 1, (loops, self.num_envs, self.num_units),
                               device=self.device, generator=self.generator).float()
        for k in range(loops):
            self._loop(jitter[k])
        self._separate()

    def _walkable(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """(E, U) may each unit stand at (x, y), each (E, U)?  Air: inside the map; colossi: walkable
        or cliff; others: walkable."""
        inside = (x >= 0) & (x < MAP_SIZE) & (y >= 0) & (y < MAP_SIZE)
        cell = x.clamp(0, MAP_SIZE - 1).long() * MAP_SIZE + y.clamp(0, MAP_SIZE - 1).long()
        if not self.any_special_mover:
            return inside & self.walkable[cell]
        ground = torch.where(self.cliff_walker, self.cliff_walkable[cell], self.walkable[cell])
        return inside & (self.is_air | ground)

    def _targets(self):
        """To each unit's current target: the vector (vx, vy), the centre distance and the edge
        distance, each (E, U) (x and y kept apart: per-component ops are cheaper than (E, U, 2))."""
        idx = self.target
        x, y = self.pos[..., 0], self.pos[..., 1]
        vx, vy = x.gather(1, idx) - x, y.gather(1, idx) - y
        dist = distance(vx, vy)
        return (vx, vy), dist, dist - self._target_info()["reach"]

    def _target_info(self) -> dict:
        """Per-(attacker, target) constants gathered by the current ``target`` (E, U): radii sum,
        target armour, raw per-hit damage, target hp_max and bio flag.  Recomputed only when the
        targets change (every loop with a scripted side, else once per step)."""
        if self._target_cache is None or not torch.equal(self._target_cache[0], self.target):
            idx = self.target
            self._target_cache = (idx.clone(), {
                "reach": self.radius + self.radius[idx],
                "armor": self.armor[idx],
                "raw": self.raw_damage[self.unit_index, idx],
                "hp_max": self.hp_max[idx],
                "bio": self.is_bio[idx],
            })
        return self._target_cache[1]

    def _scripted_orders(self, alive) -> None:
        """Orders of the units of ``scripted_sides`` (class docstring): the trigger's order and SC2's
        auto-acquisition; a Medivac heals the most damaged bio ally within sight, else follows its
        army's centroid."""
        _, _, tgt_edge = self._targets()
        tgt_alive = alive.gather(1, self.target)
        for side in self.scripted_sides:
            own, other = self.side_slices[side], self.side_slices[1 - side]
            a_own = alive[:, own]
            r_own, r_other = self.radius[own], self.radius[other]
            p_own, p_other = self.pos[:, own], self.pos[:, other]
            edge = distance(p_other[:, None, :, 0] - p_own[:, :, None, 0], p_other[:, None, :, 1] - p_own[:, :, None, 1]) \
                - (r_own[:, None] + r_other[None, :])
            hittable = self.can_target[own, other][None] & alive[:, None, other] & self.armed[own][None, :, None]
            threat = (self.can_target[other, own] & self.armed[other][:, None]).T  # (n_own, n_other): j can hit i
            in_scan = hittable & (edge <= self.scan_range[own][None, :, None])
            score = torch.where(in_scan, edge - 1e3 * threat[None].float(), torch.inf)
            best_s, best = score.min(dim=2)
            found = torch.isfinite(best_s)
            # respond to an attack from beyond the scan range: acquire the last attacker if it is hittable
            la = self.last_attacker[:, own]
            la_ok = (la >= other.start) & (la < other.stop)
            la_rel = (la - other.start).clamp(0, hittable.shape[2] - 1)
            la_ok &= hittable.gather(2, la_rel[..., None]).squeeze(-1)
            la_ok &= edge.gather(2, la_rel[..., None]).squeeze(-1) <= SIGHT_RANGE
            found_la = ~found & la_ok
            best = torch.where(found_la, la_rel, best)
            found = found | found_la
            attacking = (self.order[:, own] == ATTACK) & tgt_alive[:, own]
            cur_edge = tgt_edge[:, own]
            in_range = attacking & (cur_edge <= self.weapon_range[own])
            chasing = attacking & (cur_edge <= SIGHT_RANGE)
            kind = self.trigger_kind[own][None, :]
            target = torch.where(in_range | ~found, self.target[:, own], best + other.start)
            engaged = in_range | found | chasing
            order = torch.where(engaged, ATTACK, torch.where(kind == ORDER_AMOVE, AMOVE, STOP))
            if self.any_group_order:
                # attack-unit order on a group: the current member while it lives, else the closest member
                grp = self.group_target[other][None, None, :] & alive[:, None, other]
                g_d, g_best = torch.where(grp, edge, torch.inf).min(dim=2)
                on_group = (kind == ORDER_ATTACK_GROUP) & torch.isfinite(g_d)
                cur_in_group = attacking & self.group_target[self.target[:, own]]
                group_target = torch.where(cur_in_group, self.target[:, own], g_best + other.start)
                order = torch.where(on_group, ATTACK, order)
                target = torch.where(on_group, group_target, target)
            goal = self.trigger_goal[:, own]
            heals = self.heals[own]
            if bool(heals.any()):
                d_own = distance(p_own[:, None, :, 0] - p_own[:, :, None, 0], p_own[:, None, :, 1] - p_own[:, :, None, 1])
                frac = self.hp[:, own] / self.hp_max[own]
                hurt = alive[:, own] & self.is_bio[own][None, :] & (self.hp[:, own] < self.hp_max[own])
                not_self = ~torch.eye(d_own.shape[1], dtype=torch.bool, device=self.device)
                hcand = not_self[None] & hurt[:, None, :] & (d_own <= SIGHT_RANGE)
                hbest_f, hbest = torch.where(hcand, frac[:, None, :].expand_as(d_own), torch.inf).min(dim=2)
                army = (a_own & ~heals[None, :]).float()
                centroid = sum_exact(p_own * army[..., None], 1) / army.sum(1, keepdim=True).clamp(min=1)
                order = torch.where(heals[None, :], torch.where(torch.isfinite(hbest_f), HEAL, MOVE), order)
                target = torch.where(heals[None, :], hbest + own.start, target)
                goal = torch.where(heals[None, :, None], centroid[:, None, :].expand_as(goal), goal)
            self.order[:, own] = torch.where(a_own, order, self.order[:, own])
            self.target[:, own] = torch.where(a_own, target, self.target[:, own])
            self.goal[:, own] = torch.where(a_own[..., None], goal, self.goal[:, own])

    def _loop(self, jitter: torch.Tensor) -> None:
        """One game loop; ``jitter`` (E, U) are the cooldown jitters of shots fired in it."""
        E, U = self.num_envs, self.num_units
        alive = self.alive
        if self.scripted_sides:
            self._scripted_orders(alive)
        idx = self.target
        tgt_vec, tgt_dist, tgt_edge = self._targets()
        tgt_alive = alive.gather(1, idx)

        # 2. orders on dead targets end
        targeted = (self.order == ATTACK) | (self.order == HEAL)
        self.order = torch.where(targeted & ~tgt_alive, STOP, self.order)
        attacking = (self.order == ATTACK) & alive
        healing = (self.order == HEAL) & alive
        in_range = tgt_edge <= self.weapon_range

        # 3. cooldowns and firing
        self.cooldown = self.cooldown - 1.0
        fire = attacking & in_range & (self.cooldown <= 0) & self.armed
        self.cooldown = torch.where(fire, self.cooldown + self.cooldown_loops + jitter, self.cooldown.clamp(min=0))

        # 4. damage
        hp_loss, shield_loss = self._damage(fire, idx, tgt_vec, tgt_dist, alive)
        boom = fire & self.explodes
        if self.scripted_sides:  # remember who fired at whom (the scripted units respond to attacks)
            hit_idx = torch.where(fire, idx, U)
            shooter = self.unit_index.expand(E, U)
            board = torch.full((E, U + 1), -1, dtype=torch.long, device=self.device)
            board.scatter_reduce_(1, hit_idx, shooter, reduce="amax")  # the highest-indexed shooter
            self.last_attacker = torch.where(board[:, :U] >= 0, board[:, :U], self.last_attacker)

        # 5. healing
        if self.any_healer:
            tgt_hp = self.hp.gather(1, idx)
            info = self._target_info()
            heal_now = healing & in_range & (tgt_hp < info["hp_max"]) & info["bio"]
            missing = (info["hp_max"] - tgt_hp).clamp(min=0)
            rate = torch.full_like(missing, MEDIVAC_HEAL_PER_S / LOOPS_PER_SECOND)
            amount = torch.where(heal_now, torch.minimum(torch.minimum(missing, self.energy * MEDIVAC_HP_PER_ENERGY),
                                                         rate), 0.0)
            healed = torch.zeros_like(self.hp, dtype=torch.float64).scatter_add_(1, idx, amount.double()).float()
            self.energy = self.energy - amount / MEDIVAC_HP_PER_ENERGY
        else:
            healed = 0.0

        # 6. movement: chase a target into range, walk to a point, or attack-move (paths around terrain)
        chase = (attacking | healing) & ~in_range
        chase_len = (tgt_edge - self.weapon_range + 1e-3).clamp(min=0)
        gx, gy = self.goal[..., 0] - self.pos[..., 0], self.goal[..., 1] - self.pos[..., 1]
        goal_d = distance(gx, gy)
        moving = (self.order == MOVE) & alive
        amoving = (self.order == AMOVE) & alive & (goal_d > 0.5)
        speed = self.speed.expand_as(goal_d)
        if self.any_accel:  # accelerate from rest (Medivac); stopping is instant
            going = chase | moving | amoving
            self.cur_speed = torch.where(going, torch.minimum(self.cur_speed + self.accel, speed),
                                         torch.where(self.accel > 0, 0.0, speed))
            speed = torch.where(self.accel > 0, self.cur_speed, speed)
        # the vector to walk along: straight to the target / goal, or the next cell of a shortest path
        vx = torch.where(chase, tgt_vec[0], gx)
        vy = torch.where(chase, tgt_vec[1], gy)
        length = torch.where(chase, torch.minimum(speed, chase_len),
                             torch.where(moving, torch.minimum(speed, goal_d), torch.where(amoving, speed, 0.0)))
        if not (self.paths.convex and self.cliff_paths.convex):
            routed = (chase | amoving) & ~self.is_air
            if bool(routed.any()):
                dest = self.pos + torch.stack([vx, vy], -1)
                v = self.paths.directions(self.pos, dest)
                if self.cliff_paths is not self.paths:
                    v = torch.where(self.cliff_walker[None, :, None], self.cliff_paths.directions(self.pos, dest), v)
                vx, vy = torch.where(routed, v[..., 0], vx), torch.where(routed, v[..., 1], vy)
        norm = distance(vx, vy).clamp(min=1e-6)
        dx, dy = vx / norm * length, vy / norm * length
        self.order = torch.where(moving & (goal_d <= speed), STOP, self.order)
        self._move(dx, dy, alive)

        # 7. regeneration; 8. deaths
        damaged = (hp_loss + shield_loss) > 0
        self.since_damage = torch.where(damaged, 0.0, self.since_damage + 1.0)
        hp = self.hp - hp_loss + healed
        if self.any_explodes:
            hp = torch.where(boom, 0.0, hp)
        if self.any_zerg:
            hp = torch.where(hp > 0, hp + self.zerg_regen, hp)
        if self.has_shields:
            regen = torch.where(self.since_damage >= SHIELD_REGEN_DELAY_S * LOOPS_PER_SECOND,
                                SHIELD_REGEN_PER_S / LOOPS_PER_SECOND, 0.0)
            self.shield = torch.where(hp > 0, (self.shield - shield_loss + regen).clamp(min=0).minimum(self.shield_max),
                                      0.0)
        if self.any_healer:
            self.energy = torch.where(self.heals, (self.energy + MEDIVAC_ENERGY_REGEN_PER_S / LOOPS_PER_SECOND)
                                      .clamp(max=MEDIVAC_MAX_ENERGY), self.energy)
        now_alive = alive & (hp > 0)
        self.hp = torch.where(now_alive, torch.minimum(hp, self.hp_max), 0.0)
        self.order = torch.where(now_alive, self.order, STOP)

    def _damage(self, fire, idx, tgt_vec, tgt_dist, alive):
        """(hp_loss, shield_loss), each (E, U), of the hits fired this loop (module docstring, 4).

        Per target, with R the raw damage and N the number of hits landing this loop: the shield
        absorbs ``min(shield, R)``; if nothing was absorbed, hp loses ``sum max(hit - armor, 0.5)``;
        otherwise the ``R - absorbed`` that got through loses ``armor`` per hit that reached hp,
        ``ceil((R - absorbed) / mean hit)`` hits (exact when the hits are equal, as per attack)."""
        info = self._target_info()
        armor_t = info["armor"]
        raw = info["raw"]  # (E, U) per-hit damage on the target
        single = fire & ~self.splashes  # splash units hit through their splash mask, target included
        hits = torch.where(single, self.hits, 0).float()
        # sums over the hits landing on each unit: float64 accumulators (exact), rounded at the end
        zero = torch.zeros_like(self.hp, dtype=torch.float64)
        R = zero.scatter_add(1, idx, (raw * hits).double())
        N = zero.scatter_add(1, idx, hits.double())
        bare = zero.scatter_add(1, idx, ((raw - armor_t).clamp(min=0.5) * hits).double())
        if self.any_splash and bool((fire & self.splashes).any()):
            sp = self.splash_units
            f = fire[:, sp]  # (E, S)
            rel = self.pos[:, None, :, :] - self.pos[:, sp, None, :]  # (E, S, U, 2): p_j - p_attacker
            target_onehot = torch.nn.functional.one_hot(idx[:, sp], self.num_units).bool()
            ground_enemy = self.opponent[sp][None] & alive[:, None, :] & ~self.is_air[None, None, :]
            r = self.radius[None, None, :]
            tv = torch.stack([tgt_vec[0][:, sp], tgt_vec[1][:, sp]], -1)
            u = tv / tgt_dist[:, sp].clamp(min=1e-6)[..., None]  # attack direction
            d_t = rel - tv[:, :, None, :]  # p_j - p_target
            along = d_t[..., 0] * u[:, :, None, 0] + d_t[..., 1] * u[:, :, None, 1]
            across = d_t[..., 0] * -u[:, :, None, 1] + d_t[..., 1] * u[:, :, None, 0]
            on_line = (along.abs() <= COLOSSUS_LINE_HALF_WIDTH + r) & (across.abs() <= COLOSSUS_LINE_HALF_LENGTH + r)
            blast = distance(rel[..., 0], rel[..., 1]) <= self.splash_radius[sp][None, :, None] + r
            area = torch.where(self.is_line[sp][None, :, None], on_line, blast)
            hit = f[..., None] & (target_onehot | (ground_enemy & area))
            n = torch.where(hit, self.hits[sp][None, :, None].float(), 0.0)  # (E, S, U)
            h = self.raw_damage[sp][None]  # (1, S, U)
            R = R + (n * h).double().sum(1)
            N = N + n.double().sum(1)
            bare = bare + (n * (h - self.armor[None, None, :]).clamp(min=0.5)).double().sum(1)
        R, N, bare = R.float(), N.float(), bare.float()
        if not self.has_shields:
            return bare, torch.zeros_like(self.hp)
        absorbed = torch.minimum(self.shield, R)
        through = R - absorbed
        mean_hit = R / N.clamp(min=1)
        n_through = torch.ceil(through / mean_hit.clamp(min=1e-6) - 1e-6)
        partial = (through - self.armor * n_through).clamp(min=0)
        hp_loss = torch.where(absorbed > 0, partial, bare)
        return hp_loss, absorbed

    def _move(self, dx, dy, alive) -> None:
        """Move by (dx, dy), each (E, U), inside the walkable terrain; a blocked step slides along x
        or y, or stops."""
        x, y = self.pos[..., 0], self.pos[..., 1]
        nx, ny = x + dx, y + dy
        full = self._walkable(nx, ny) | ~alive
        new = torch.empty_like(self.pos)
        if bool(full.all()):  # nobody blocked (the common case): skip the slide tests
            new[..., 0] = torch.where(alive, nx, x)
            new[..., 1] = torch.where(alive, ny, y)
        else:
            slide_x = ~full & self._walkable(nx, y)
            slide_y = ~full & ~slide_x & self._walkable(x, ny)
            new[..., 0] = torch.where(alive & (full | slide_x), nx, x)
            new[..., 1] = torch.where(alive & (full | slide_y), ny, y)
        self.pos = new

    def _separate(self) -> None:
        """Push overlapping ground units (not colossi, not air) apart by half their overlap each, once
        per step, where the pushed position stays walkable:
        ``push_i = sum_j w_ij (p_i - p_j)``, ``w_ij = overlap_ij / |p_i - p_j| / 2`` (each term in float32,
        summed exactly: module docstring, "Arithmetic")."""
        if not self.has_colliders:
            return
        c = self.collider_units
        alive = self.alive[:, c]
        p = self.pos[:, c]
        dx = p[:, :, None, 0] - p[:, None, :, 0]  # p_i - p_j
        dy = p[:, :, None, 1] - p[:, None, :, 1]
        dist = distance(dx, dy)
        r = self.radius[c]
        pair = alive[:, :, None] & alive[:, None, :]
        overlap = torch.where(pair, (r[:, None] + r[None, :] - dist).clamp(min=0), 0.0)
        overlap.diagonal(dim1=1, dim2=2).zero_()
        if not bool((overlap > 0).any()):
            return
        w = overlap / dist.clamp(min=1e-6) * 0.5
        push = torch.stack([sum_exact(w * dx, 2), sum_exact(w * dy, 2)], -1)
        pushed = p + push
        ok = self._ground_walkable(pushed) & alive
        self.pos[:, c] = torch.where(ok[..., None], pushed, p)

    def _ground_walkable(self, p: torch.Tensor) -> torch.Tensor:
        """Is ``p`` (..., 2) inside the map on a walkable cell (for ordinary ground units)?"""
        x, y = p[..., 0], p[..., 1]
        inside = (x >= 0) & (x < MAP_SIZE) & (y >= 0) & (y < MAP_SIZE)
        cell = (x.clamp(0, MAP_SIZE - 1).long() * MAP_SIZE + y.clamp(0, MAP_SIZE - 1).long())
        return inside & self.walkable[cell]
