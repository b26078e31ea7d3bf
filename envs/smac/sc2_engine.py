"""The real StarCraft II game behind ``SMACBattle`` (spec-smac.md §9, "the real game"), for users who
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

Units are matched to agent slots when a game (re)starts, as SMAC does: per side, by unit type in the
map's agent order (``MapSpec.units``), then by position (x, then y). A unit's type name comes from its
standard SC2 id (``STANDARD_UNIT_IDS``), or, for the maps' custom "_RL" ally types, from its rank among
the side's custom ids (SMAC's ``unit_type − min_unit_type`` in ``TYPE_ORDERS``). Positions are taken
relative to the playable area's origin the connection reports, so the simulator's 32×32 frame holds.
A unit missing from the observation is dead (health 0). Enemy weapon cooldowns are not reported by
the game (0), as in SMAC.

A game is reached through a ``GameConnection`` (the protocol below); ``SC2Game`` is the one that talks
to StarCraft II through ``pysc2.run_configs`` and the ``s2clientprotocol`` raw API (optional extra
``sc2``: ``pip install -e .[sc2]``; the binary under ``SC2PATH``, the SMAC maps under
``$SC2PATH/Maps/SMAC_Maps``). Each of the ``num_envs`` games is its own game (two game processes joined
over local ports in two-player mode; one process and the built-in AI otherwise), so keep ``num_envs``
small. Tests drive ``SC2Engine`` through a fake connection; StarCraft II is not installed on the
project's machines, so ``SC2Game`` itself has not been run here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import torch

from .engine import MOVE_AMOUNT, MOVE_DIRECTIONS, STEP_MUL, BattleEngine
from .maps import TYPE_ORDERS, MapSpec

STOP_ABILITY, MOVE_ABILITY, ATTACK_ABILITY, HEAL_ABILITY = 4, 16, 23, 386
# pysc2.lib.units ids of the standard units the SMAC maps use.
STANDARD_UNIT_IDS = {48: "marine", 51: "marauder", 54: "medivac", 73: "zealot", 74: "stalker", 4: "colossus",
                     105: "zergling", 107: "hydralisk", 9: "baneling"}


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
    """One running game as ``SC2Engine`` needs it. ``origin``: the playable area's lower-left corner."""

    origin: tuple[float, float]

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
    """``side``'s units in agent-slot order (by the map's unit order, then x, then y)."""
    own = [u for u in units if u.owner == side + 1]
    by_name: dict[str, list[UnitRecord]] = {}
    for u, name in zip(own, unit_names(units, spec, side)):
        by_name.setdefault(name, []).append(u)
    for group in by_name.values():
        group.sort(key=lambda u: (u.x, u.y))
    wanted = spec.units(side)
    have = {name: len(g) for name, g in by_name.items()}
    need = {name: wanted.count(name) for name in set(wanted)}
    if have != need:
        raise ValueError(f"the game's side {side} has units {have}, map {spec.name!r} expects {need}")
    taken = {name: 0 for name in need}
    slots = []
    for name in wanted:
        slots.append(by_name[name][taken[name]])
        taken[name] += 1
    return slots


class SC2Engine(BattleEngine):
    """``BattleEngine`` over real games (module docstring). ``games``: one ``GameConnection`` per env."""

    def __init__(self, spec: MapSpec, games: Sequence[GameConnection], scripted_sides: tuple[int, ...] = (1,),
                 device: str | torch.device = "cpu"):
        if not games:
            raise ValueError("games must hold at least one GameConnection")
        self.games: list[GameConnection] | None = None  # BattleEngine.__init__ resets before they are known
        super().__init__(spec, len(games), device=device, seed=0, scripted_sides=scripted_sides)
        self.games = list(games)
        self.tags = torch.full((len(games), self.num_units), -1, dtype=torch.long)
        self._pending: list[list[list[RawCommand]]] = [[[], []] for _ in games]

    # ------------------------------------------------------------------ state
    def reset(self, mask: torch.Tensor | None = None) -> None:
        """Restart the games where ``mask`` is true (all when None): new episode, new slot assignment."""
        if self.games is None:
            return super().reset(mask)
        games = range(self.num_envs) if mask is None else torch.nonzero(mask.cpu()).flatten().tolist()
        for g in games:
            units = self.games[g].restart()
            slots = assign_slots(units, self.spec, 0) + assign_slots(units, self.spec, 1)
            self.tags[g] = torch.tensor([u.tag for u in slots], dtype=torch.long)
            self._pending[g] = [[], []]
            self._read(g, units)
            self.cooldown[g] = 0.0

    def _read(self, g: int, units: Sequence[UnitRecord]) -> None:
        """Fill game ``g``'s rows of pos, hp, shield, energy and cooldown from its units."""
        by_tag = {u.tag: u for u in units}
        ox, oy = self.games[g].origin
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
        actions = actions.cpu().long()
        alive = self.alive.cpu()
        for g in range(self.num_envs):
            commands = []
            ox, oy = self.games[g].origin
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
            self._pending[g][side] = commands

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
    joined over local ports; otherwise one process against the built-in AI at ``difficulty``
    (SMAC's default "7", VeryHard). A restart kills every unit with a debug command and waits until the
    map's trigger has respawned both sides at full health (SMAC's ``_restart``)."""

    RACES = {"T": 1, "Z": 2, "P": 3}

    def __init__(self, spec: MapSpec, two_player: bool, seed: int | None = None, difficulty: int = 7,
                 map_dir: str = "SMAC_Maps"):
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
        self.spec, self.two_player, self.sc_pb = spec, two_player, sc_pb
        self.run_config = run_configs.get()
        map_path = f"{map_dir}/{spec.name}.SC2Map"
        n = 2 if two_player else 1
        ports = []
        if two_player:
            from pysc2.lib import portspicker

            ports = portspicker.pick_unused_ports(4)
        self._ports = ports
        self.processes = [self.run_config.start(want_rgb=False, extra_ports=ports) for _ in range(n)]
        self.controllers = [p.controller for p in self.processes]
        create = sc_pb.RequestCreateGame(realtime=False, random_seed=seed or 0)
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
            create.player_setup.add(type=sc_pb.Computer, race=self.RACES[spec.enemy_race], difficulty=difficulty)
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
        if two_player:  # both joins block until every player has joined
            import threading

            threads = [threading.Thread(target=c.join_game, args=(j,)) for c, j in zip(self.controllers, joins)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            self.controllers[0].join_game(joins[0])
        area = self.controllers[0].game_info().start_raw.playable_area
        self.origin = (float(area.p0.x) - 2.0, float(area.p0.y) - 2.0)  # the simulator's playable area starts at 2

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
        for c in self.controllers:
            c.step(loops)

    def step(self, commands: Sequence[Sequence[RawCommand]], loops: int) -> list[UnitRecord]:
        sc_pb = self.sc_pb
        from s2clientprotocol import raw_pb2 as r_pb

        for controller, player_commands in zip(self.controllers, commands):
            actions = []
            for c in player_commands:
                cmd = r_pb.ActionRawUnitCommand(ability_id=c.ability_id, unit_tags=list(c.unit_tags),
                                                queue_command=False)
                if c.target_tag is not None:
                    cmd.target_unit_tag = c.target_tag
                if c.target_point is not None:
                    cmd.target_world_space_pos.x, cmd.target_world_space_pos.y = c.target_point
                actions.append(sc_pb.Action(action_raw=r_pb.ActionRaw(unit_command=cmd)))
            if actions:
                controller.actions(sc_pb.RequestAction(actions=actions))
        self._step_all(loops)
        return self._units()

    def close(self) -> None:
        for c in self.controllers:
            try:
                c.quit()
            except Exception:  # the process may already be gone
                pass
        for p in self.processes:
            p.close()
        if self._ports:
            from pysc2.lib import portspicker

            portspicker.return_ports(self._ports)
