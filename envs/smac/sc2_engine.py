"""The real StarCraft II game behind ``SMACBattle`` (docs/design/smac.md §9, "the real game"), for users who
have it installed: ``SMACBattle(map_name, num_envs, backend="sc2")``.

Only the *engine* changes. ``SC2Engine`` is a ``BattleEngine`` whose dynamic state (positions, health,
shields, energy, weapon cooldowns) is read from the game after every step instead of simulated, and
whose ``command`` sends SMAC's per-unit actions to the game as raw unit commands. Everything SMAC
computes from that state — observations, global state, action masks, rewards, episode ends, the
two-player mirroring — is the same code as for the simulator (``features``, ``rewards``, ``battle``).

    SMAC action          raw command (``ActionRawUnitCommand``, ``queue_command=False``)
    0 no-op              none
    1 stop               ability 4 (stop)
    2-5 move N/S/E/W     ability 16 (move) to the unit's position + 2 in that direction
    6+t attack enemy t   ability 23 (attack) on enemy t's tag
    6+t (Medivac)        ability 386 (heal) on ally t's tag

Units are matched to slots when a game (re)starts, as SMAC does. Allies (player 1): by unit type in
the map's agent order (``MapSpec.units``), then by position (x, then y) — SMAC sorts them by
``(unit_type, x, y)``. Enemies (player 2): in the game's raw order (SMAC's enemy ids are the order of
the observation's unit list); where that order's unit types do not follow the map's enemy slot
types, each slot takes the next unit of its type in raw order. A unit's type name comes from its
standard SC2 id (``STANDARD_UNIT_IDS``), or, for the maps' custom "_RL" ally types, from its rank
among the side's custom ids (SMAC's ``unit_type − min_unit_type`` in ``TYPE_ORDERS``); the ids are
kept (``unit_types``) for SMAC's unit records. A unit missing from the observation is dead (health
0). Enemy weapon cooldowns are not reported by the game (0), as in SMAC.

Coordinates: the engine works in the map spec's frame. The game reports its playable area
(``GameConnection.playable_area``); a game position maps to ``p − game p0 + spec p0``
(``MapSpec.playable_origin``): no shift when the spec uses the game's own frame. The action masks use
the game's ``pathing_grid`` (``game_pathing_grid``, in the spec's frame), not the spec's terrain.

Seats. Player 1's units are the maps' "_RL" copies: they never acquire targets on their own. Player
2's are stock units: the map's trigger orders them to attack at every (re)spawn, and an idle one
attacks enemies that come within its weapon range. With the built-in enemy (``scripted_sides`` holds
1) that is SMAC's setting. In two-player mode both seats are policies: at every (re)start the engine
stops player 2's units (cancelling the trigger's attack order) so that both seats start idle and
obey only their policy. What cannot be removed without editing the maps: an idle (stopped or
arrived) player-2 unit still fires at enemies inside its weapon range, a player-1 unit does not —
self-play on the real game is asymmetric in that respect (the simulator's two-player mode is exactly
symmetric); compare seats on the simulator, or mirror the seats across games.

A game is reached through a ``GameConnection`` (the protocol below); ``SC2Game`` is the one that talks
to StarCraft II through ``pysc2.run_configs`` and the ``s2clientprotocol`` raw API (optional extra
``sc2``: ``pip install -e .[sc2]``; the binary under ``SC2PATH``, the SMAC maps under
``$SC2PATH/Maps/SMAC_Maps``). Each of the ``num_envs`` games is its own game (two game processes joined
over local ports in two-player mode, stepped in lockstep from two threads as pysc2 does; one process
and the built-in AI otherwise), so keep ``num_envs`` small. Tests drive ``SC2Engine`` through a fake
connection and ``SC2Game`` through a fake ``pysc2``; StarCraft II is not installed on the project's
machines, so ``SC2Game`` itself has not been run against the game here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from .engine import MOVE_AMOUNT, MOVE_DIRECTIONS, STEP_MUL, BattleEngine
from .maps import TYPE_ORDERS, MapSpec
from .unit_records import STANDARD_TYPE_IDS

STOP_ABILITY, MOVE_ABILITY, ATTACK_ABILITY, HEAL_ABILITY = 4, 16, 23, 386
# pysc2.lib.units ids of the standard units the SMAC maps use.
STANDARD_UNIT_IDS = {i: name for name, i in STANDARD_TYPE_IDS.items()}


@dataclass(frozen=True)
class UnitRecord:
    """One unit of a raw observation (``observation.raw_data.units``); ``owner`` 1 = allies, 2 = enemies."""

    tag: int
    unit_type: int
    owner: int
    x: float
    y: float
    health: float
    shield: float = 0.0
    energy: float = 0.0
    weapon_cooldown: float = 0.0


@dataclass(frozen=True)
class RawCommand:
    """``ActionRawUnitCommand``: one ability for some units, on a unit or a point (or neither)."""

    ability_id: int
    unit_tags: tuple[int, ...]
    target_tag: int | None = None
    target_point: tuple[float, float] | None = None


class GameConnection(Protocol):
    """One running game as ``SC2Engine`` needs it: ``playable_area`` ((x0, y0), (x1, y1)) and
    ``pathing_grid`` (bool (map_x, map_y), indexed [x, y], True where ground units walk) as the game
    reports them in ``game_info().start_raw`` (game coordinates)."""

    playable_area: tuple[tuple[float, float], tuple[float, float]]
    pathing_grid: np.ndarray

    def restart(self) -> list[UnitRecord]: ...  # a new episode; returns its first units

    def step(self, commands: Sequence[Sequence[RawCommand]], loops: int) -> list[UnitRecord]: ...
    # commands[p]: player p+1's commands (one list per controlled player); returns the units afterwards

    def close(self) -> None: ...


def unit_names(units: Sequence[UnitRecord], spec: MapSpec, side: int) -> list[str]:
    """The simulator's unit name of each of ``side``'s units (owner ``side + 1``), module docstring rule."""
    own = [u for u in units if u.owner == side + 1]
    names_of_side = sorted(set(spec.units(side)))
    custom_ids = sorted({u.unit_type for u in own if u.unit_type not in STANDARD_UNIT_IDS})
    order = TYPE_ORDERS[spec.map_type][0] or tuple(names_of_side)
    out = []
    for u in own:
        if u.unit_type in STANDARD_UNIT_IDS:
            out.append(STANDARD_UNIT_IDS[u.unit_type])
        else:
            rank = custom_ids.index(u.unit_type)
            if rank >= len(order):
                raise ValueError(f"side {side} has more custom unit types {custom_ids} than map {spec.name!r} "
                                 f"has unit types {order}")
            out.append(order[rank])
    return out


def assign_slots(units: Sequence[UnitRecord], spec: MapSpec, side: int) -> list[UnitRecord]:
    """``side``'s units in slot order (module docstring): allies by the map's unit order, then x, then
    y; enemies in the game's raw order (by type only where the raw types do not follow the slots)."""
    own = [u for u in units if u.owner == side + 1]
    names = unit_names(units, spec, side)
    by_name: dict[str, list[UnitRecord]] = {}
    for u, name in zip(own, names):
        by_name.setdefault(name, []).append(u)
    wanted = spec.units(side)
    have = {name: len(g) for name, g in by_name.items()}
    need = {name: wanted.count(name) for name in set(wanted)}
    if have != need:
        raise ValueError(f"the game's side {side} has units {have}, map {spec.name!r} expects {need}")
    if side == 1 and names == wanted:
        return own  # raw order
    if side == 0:
        for group in by_name.values():
            group.sort(key=lambda u: (u.x, u.y))
    taken = {name: 0 for name in need}
    slots = []
    for name in wanted:
        slots.append(by_name[name][taken[name]])
        taken[name] += 1
    return slots


def game_to_spec_shift(game: GameConnection, spec: MapSpec) -> tuple[float, float]:
    """What to subtract from a game position to get the spec's frame: game p0 − spec p0."""
    (gx, gy), _ = game.playable_area
    sx, sy = spec.playable_origin
    return float(gx) - sx, float(gy) - sy


def grid_in_spec_frame(grid: np.ndarray, shift: tuple[float, float], spec: MapSpec) -> np.ndarray:
    """The game's pathing grid (game frame, [x, y]) as a (spec.map_x, spec.map_y) grid in the spec's
    frame: ``out[x, y] = grid[x + dx, y + dy]``, False outside the game's grid."""
    dx, dy = int(round(shift[0])), int(round(shift[1]))
    grid = np.asarray(grid, dtype=bool)
    out = np.zeros((spec.map_x, spec.map_y), dtype=bool)
    xs, ys = np.arange(spec.map_x) + dx, np.arange(spec.map_y) + dy
    okx, oky = (xs >= 0) & (xs < grid.shape[0]), (ys >= 0) & (ys < grid.shape[1])
    out[np.ix_(okx, oky)] = grid[np.ix_(xs[okx], ys[oky])]
    return out


class SC2Engine(BattleEngine):
    """``BattleEngine`` over real games (module docstring). ``games``: one ``GameConnection`` per env."""

    def __init__(self, spec: MapSpec, games: Sequence[GameConnection], scripted_sides: tuple[int, ...] = (1,),
                 device: str | torch.device = "cpu"):
        if not games:
            raise ValueError("games must hold at least one GameConnection")
        self.games: list[GameConnection] | None = None  # BattleEngine.__init__ resets before they are known
        super().__init__(spec, len(games), device=device, seed=0, scripted_sides=scripted_sides)
        self.games = list(games)
        self.shifts = [game_to_spec_shift(g, spec) for g in self.games]
        grids = [grid_in_spec_frame(g.pathing_grid, sh, spec) for g, sh in zip(self.games, self.shifts)]
        if any(not np.array_equal(grids[0], g) for g in grids[1:]):
            raise ValueError("the games report different pathing grids; all games must play the same map")
        self.game_pathing_grid = grids[0]
        self.tags = torch.full((len(games), self.num_units), -1, dtype=torch.long)
        self.unit_types = torch.zeros((len(games), self.num_units), dtype=torch.long)
        self._pending: list[list[list[RawCommand]]] = [[[], []] for _ in games]

    # ------------------------------------------------------------------ state
    def reset(self, mask: torch.Tensor | None = None) -> None:
        """Restart the games where ``mask`` is true (all when None): new episode, new slot assignment.
        In two-player mode player 2's units are stopped with the first step's commands (module
        docstring, "Seats")."""
        if self.games is None:
            return super().reset(mask)
        games = range(self.num_envs) if mask is None else torch.nonzero(mask.cpu()).flatten().tolist()
        for g in games:
            units = self.games[g].restart()
            slots = assign_slots(units, self.spec, 0) + assign_slots(units, self.spec, 1)
            self.tags[g] = torch.tensor([u.tag for u in slots], dtype=torch.long)
            self.unit_types[g] = torch.tensor([u.unit_type for u in slots], dtype=torch.long)
            stops = [] if 1 in self.scripted_sides else [RawCommand(STOP_ABILITY, tuple(
                int(t) for t in self.tags[g, self.side_slices[1]].tolist()))]
            self._pending[g] = [[], stops]
            self._read(g, units)
            self.cooldown[g] = 0.0

    def _read(self, g: int, units: Sequence[UnitRecord]) -> None:
        """Fill game ``g``'s rows of pos, hp, shield, energy and cooldown from its units."""
        by_tag = {u.tag: u for u in units}
        ox, oy = self.shifts[g]
        for slot, tag in enumerate(self.tags[g].tolist()):
            u = by_tag.get(tag)
            if u is None or u.health <= 0:  # gone from the observation: dead
                self.hp[g, slot] = 0.0
                self.shield[g, slot] = 0.0
                continue
            self.pos[g, slot, 0], self.pos[g, slot, 1] = u.x - ox, u.y - oy
            self.hp[g, slot] = u.health
            self.shield[g, slot] = u.shield
            self.energy[g, slot] = u.energy
            self.cooldown[g, slot] = u.weapon_cooldown

    # --------------------------------------------------------------- commands
    def command(self, side: int, actions: torch.Tensor) -> None:
        """Queue ``side``'s SMAC actions (E, n_side), world frame, as raw commands for the next ``advance``."""
        sl = self.side_slices[side]
        other = self.side_slices[1 - side]
        actions = torch.as_tensor(actions).cpu().long()  # a tensor, or numpy from the numpy lane
        alive = self.alive.cpu()
        for g in range(self.num_envs):
            commands = []
            ox, oy = self.shifts[g]
            for i, a in enumerate(actions[g].tolist()):
                slot = sl.start + i
                if a == 0 or not bool(alive[g, slot]):
                    continue
                tag = (int(self.tags[g, slot]),)
                if a == 1:
                    commands.append(RawCommand(STOP_ABILITY, tag))
                elif 2 <= a <= 5:
                    dx, dy = MOVE_DIRECTIONS[a - 2]
                    x, y = self.pos[g, slot].tolist()
                    commands.append(RawCommand(MOVE_ABILITY, tag,
                                               target_point=(x + dx * MOVE_AMOUNT + ox, y + dy * MOVE_AMOUNT + oy)))
                elif bool(self.heals[slot]):
                    commands.append(RawCommand(HEAL_ABILITY, tag, target_tag=int(self.tags[g, sl.start + a - 6])))
                else:
                    commands.append(RawCommand(ATTACK_ABILITY, tag, target_tag=int(self.tags[g, other.start + a - 6])))
            self._pending[g][side] = self._pending[g][side] + commands  # after a restart's stops

    def advance(self, loops: int = STEP_MUL) -> None:
        """Send the queued commands, run ``loops`` game loops in every game, read the new state."""
        players = 1 if 1 in self.scripted_sides else 2
        for g, game in enumerate(self.games):
            units = game.step(self._pending[g][:players], loops)
            self._pending[g] = [[], []]
            self._read(g, units)

    def close(self) -> None:
        for game in self.games:
            game.close()


# ---------------------------------------------------------------------------------------------
class SC2Game:
    """A ``GameConnection`` to StarCraft II (module docstring): ``pysc2.run_configs`` starts the game
    binary(ies), the raw protobuf API plays. Two-player: two processes, both players participants,
    joined over local ports, every request that advances the game sent to both processes at once
    from a thread pool (multiplayer SC2 is lockstep: one process's step waits for the other's, so
    stepping them one after the other would block). Otherwise one process against the built-in AI at
    ``difficulty`` (sc2api's ``Difficulty``: SMAC's default "7" is 7, VeryHard). ``seed``: the game's
    random seed; None lets the game choose, as SMAC does. A restart kills every unit with a debug
    command and waits until the map's trigger has respawned both sides at full health (SMAC's
    ``_restart``). ``playable_area`` and ``pathing_grid`` are read from ``game_info`` at launch."""

    RACES = {"T": 1, "Z": 2, "P": 3}

    def __init__(self, spec: MapSpec, two_player: bool, seed: int | None = None, difficulty: int = 7,
                 map_dir: str = "SMAC_Maps", game_version: str | None = None):
        import os

        os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")  # spec §9
        try:
            from pysc2 import run_configs
            from s2clientprotocol import sc2api_pb2 as sc_pb
        except ImportError as error:
            raise ImportError("backend='sc2' needs StarCraft II and the optional extra: pip install -e .[sc2]") from error
        except TypeError as error:  # generated code older than the protobuf runtime already loaded
            raise ImportError("s2clientprotocol needs the pure-Python protobuf runtime: set "
                              "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python before starting Python") from error
        if not 1 <= int(difficulty) <= 10:
            raise ValueError(f"difficulty must be an sc2api Difficulty 1..10, got {difficulty!r}")
        self.spec, self.two_player, self.sc_pb = spec, two_player, sc_pb
        self.run_config = run_configs.get(version=game_version)
        map_path = f"{map_dir}/{spec.name}.SC2Map"
        n = 2 if two_player else 1
        ports = []
        if two_player:
            from pysc2.lib import portspicker

            ports = portspicker.pick_unused_ports(4)
        self._ports = ports
        self._pool = ThreadPoolExecutor(max_workers=n) if two_player else None
        self.processes = [self.run_config.start(want_rgb=False, extra_ports=ports) for _ in range(n)]
        self.controllers = [p.controller for p in self.processes]
        create = sc_pb.RequestCreateGame(realtime=False)
        if seed is not None:
            create.random_seed = int(seed)
        create.local_map.map_path = map_path
        map_data = self.run_config.map_data(map_path)
        if two_player:  # as pysc2's multi-agent set-up: every process saves the map, none sends it
            for c in self.controllers:
                c.save_map(map_path, map_data)
        else:
            create.local_map.map_data = map_data
        create.player_setup.add(type=sc_pb.Participant)
        if two_player:
            create.player_setup.add(type=sc_pb.Participant)
        else:
            create.player_setup.add(type=sc_pb.Computer, race=self.RACES[spec.enemy_race], difficulty=int(difficulty))
        self.controllers[0].create_game(create)
        joins = []
        for p, race in enumerate(spec.races[:n]):
            join = sc_pb.RequestJoinGame(race=self.RACES[race], options=sc_pb.InterfaceOptions(raw=True, score=False))
            if two_player:
                join.shared_port = 0  # unused
                join.server_ports.game_port, join.server_ports.base_port = ports[0], ports[1]
                client = join.client_ports.add()
                client.game_port, client.base_port = ports[2], ports[3]
            joins.append(join)
        self._all([lambda c=c, j=j: c.join_game(j) for c, j in zip(self.controllers, joins)])  # joins block
        start = self.controllers[0].game_info().start_raw
        area = start.playable_area
        self.playable_area = ((float(area.p0.x), float(area.p0.y)), (float(area.p1.x), float(area.p1.y)))
        self.pathing_grid = decode_pathing_grid(start.pathing_grid, int(start.map_size.x), int(start.map_size.y))

    def _all(self, calls: Sequence[Callable[[], object]]) -> list:
        """Run one call per process; in two-player mode all at once (lockstep), re-raising errors."""
        if self._pool is None:
            return [c() for c in calls]
        futures = [self._pool.submit(c) for c in calls]
        return [f.result() for f in futures]

    def _units(self) -> list[UnitRecord]:
        raw = self.controllers[0].observe().observation.raw_data.units
        return [UnitRecord(u.tag, u.unit_type, u.owner, u.pos.x, u.pos.y, u.health, u.shield, u.energy,
                           u.weapon_cooldown) for u in raw if u.owner in (1, 2)]

    def restart(self) -> list[UnitRecord]:
        from s2clientprotocol import debug_pb2 as d_pb

        tags = [u.tag for u in self._units()]
        if tags:
            self.controllers[0].debug([d_pb.DebugCommand(kill_unit=d_pb.DebugKillUnit(tag=tags))])
        expected = [len(self.spec.units(0)), len(self.spec.units(1))]
        for _ in range(500):
            self._step_all(2)
            units = self._units()
            counts = [sum(u.owner == s + 1 for u in units) for s in (0, 1)]
            full = all(u.health + u.shield > 0 for u in units)
            if counts == expected and full and not set(tags) & {u.tag for u in units}:
                return units
        raise RuntimeError(f"the map {self.spec.name!r} did not respawn its units after a restart "
                           "(is it a SMAC map with the restart trigger?)")

    def _step_all(self, loops: int) -> None:
        self._all([lambda c=c: c.step(loops) for c in self.controllers])

    def step(self, commands: Sequence[Sequence[RawCommand]], loops: int) -> list[UnitRecord]:
        sc_pb = self.sc_pb
        from s2clientprotocol import raw_pb2 as r_pb

        requests = []
        for player_commands in commands:
            actions = []
            for c in player_commands:
                cmd = r_pb.ActionRawUnitCommand(ability_id=c.ability_id, unit_tags=list(c.unit_tags),
                                                queue_command=False)
                if c.target_tag is not None:
                    cmd.target_unit_tag = c.target_tag
                if c.target_point is not None:
                    cmd.target_world_space_pos.x, cmd.target_world_space_pos.y = c.target_point
                actions.append(sc_pb.Action(action_raw=r_pb.ActionRaw(unit_command=cmd)))
            requests.append(sc_pb.RequestAction(actions=actions) if actions else None)
        requests += [None] * (len(self.controllers) - len(requests))

        def act_and_step(controller, request):
            if request is not None:
                controller.actions(request)
            controller.step(loops)

        self._all([lambda c=c, r=r: act_and_step(c, r) for c, r in zip(self.controllers, requests)])
        return self._units()

    def save_replay(self, replay_dir: str, prefix: str) -> str:
        """Save the game's replay (SMAC's ``save_replay``); returns its path."""
        return self.run_config.save_replay(self.controllers[0].save_replay(), replay_dir=replay_dir, prefix=prefix)

    def close(self) -> None:
        for c in self.controllers:
            try:
                c.quit()
            except Exception:  # the process may already be gone
                pass
        for p in self.processes:
            p.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        if self._ports:
            from pysc2.lib import portspicker

            portspicker.return_ports(self._ports)


def decode_pathing_grid(image, map_x: int, map_y: int) -> np.ndarray:
    """bool (map_x, map_y) [x, y] from ``start_raw.pathing_grid`` (an ``ImageData``), as SMAC reads it:
    1 bit per cell (rows of y, most significant bit first, set = walkable), or 1 byte per cell
    (SMAC's older-version branch: transposed, flipped in y, 0 = walkable)."""
    data = np.frombuffer(bytes(image.data), dtype=np.uint8)
    if image.bits_per_pixel == 1:
        bits = np.unpackbits(data).reshape(map_y, map_x)
        return bits.T.astype(bool)
    return ~np.flip(data.astype(bool).reshape(map_x, map_y).T, axis=1)
