"""``SC2Game`` (the connection to the real StarCraft II) against a fake ``pysc2``: the protobuf
requests it sends — game creation, joins over ports, raw unit commands, the restart by debug kills —
are checked field by field. It runs in a fresh interpreter: s2clientprotocol's generated code needs
the pure-Python protobuf runtime, chosen before any other generated protobuf module loads."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("s2clientprotocol")

SCRIPT = r'''
import sys, types
from s2clientprotocol import sc2api_pb2 as sc_pb, raw_pb2 as r_pb, common_pb2

class FakeController:
    def __init__(self, log):
        self.log, self.units, self.next_tag, self.saved = log, [], 100, []
        self.spawn()
    def spawn(self):
        self.units = []
        for owner, (x0, utype) in ((1, (9.0, 1970)), (2, (23.0, 48))):
            for k in range(3):
                self.next_tag += 1
                u = r_pb.Unit(tag=self.next_tag, unit_type=utype, owner=owner, health=45.0)
                u.pos.x, u.pos.y = x0 + 2.0, 16.0 + k + 2.0
                self.units.append(u)
    def save_map(self, path, data): self.saved.append((path, data))
    def create_game(self, req): self.log.append(("create", req))
    def join_game(self, req): self.log.append(("join", req))
    def game_info(self):
        info = sc_pb.ResponseGameInfo()
        info.start_raw.playable_area.p0.x, info.start_raw.playable_area.p0.y = 2, 2
        return info
    def observe(self):
        obs = sc_pb.ResponseObservation()
        obs.observation.raw_data.units.extend(self.units)
        return obs
    def debug(self, commands):
        self.log.append(("debug", commands)); self.units = []
    def step(self, loops):
        self.log.append(("step", loops))
        if not self.units: self.spawn()
    def actions(self, req): self.log.append(("actions", req))
    def quit(self): self.log.append(("quit",))

class FakeProcess:
    def __init__(self, log): self.controller = FakeController(log)
    def close(self): pass

class FakeRunConfig:
    def __init__(self): self.logs, self.started = [], []
    def start(self, want_rgb=False, extra_ports=()):
        self.started.append(list(extra_ports)); self.logs.append([]); return FakeProcess(self.logs[-1])
    def map_data(self, path): return b"MAPDATA:" + path.encode()

run_config = FakeRunConfig()
pysc2 = types.ModuleType("pysc2"); rc = types.ModuleType("pysc2.run_configs"); rc.get = lambda: run_config
lib = types.ModuleType("pysc2.lib"); ports = types.ModuleType("pysc2.lib.portspicker")
returned = []
ports.pick_unused_ports = lambda n: list(range(5000, 5000 + n)); ports.return_ports = returned.extend
pysc2.run_configs, pysc2.lib, lib.portspicker = rc, lib, ports
sys.modules.update({"pysc2": pysc2, "pysc2.run_configs": rc, "pysc2.lib": lib, "pysc2.lib.portspicker": ports})

from selfplay.envs.smac.maps import get_map
from selfplay.envs.smac.sc2_engine import ATTACK_ABILITY, MOVE_ABILITY, RawCommand, SC2Game

spec = get_map("3m")
# --- two players: two processes on the same four ports, the map saved by both, joined over the ports
game = SC2Game(spec, two_player=True, seed=7)
assert run_config.started == [[5000, 5001, 5002, 5003]] * 2
c0, c1 = (p.controller for p in game.processes)
assert c0.saved == c1.saved == [("SMAC_Maps/3m.SC2Map", b"MAPDATA:SMAC_Maps/3m.SC2Map")]
(kind, create), = [e for e in run_config.logs[0] if e[0] == "create"]
assert create.local_map.map_path == "SMAC_Maps/3m.SC2Map" and not create.local_map.map_data
assert [p.type for p in create.player_setup] == [sc_pb.Participant, sc_pb.Participant]
assert create.random_seed == 7 and not create.realtime
joins = [e[1] for log in run_config.logs for e in log if e[0] == "join"]
assert len(joins) == 2 and all(j.race == common_pb2.Terran and j.options.raw for j in joins)
assert all((j.server_ports.game_port, j.server_ports.base_port) == (5000, 5001) for j in joins)
assert all([(c.game_port, c.base_port) for c in j.client_ports] == [(5002, 5003)] for j in joins)
assert game.origin == (0.0, 0.0)

# --- restart: every unit killed by a debug command, then stepped until the map respawns them
old = {u.tag for u in c0.units}
units = game.restart()
(kind, kills), = [e for e in run_config.logs[0] if e[0] == "debug"]
assert set(kills[0].kill_unit.tag) == old
assert len(units) == 6 and not old & {u.tag for u in units} and {u.owner for u in units} == {1, 2}

# --- a step: each player's raw unit commands, then both games advance by the same loops
a, b = units[0].tag, units[3].tag
after = game.step([[RawCommand(ATTACK_ABILITY, (a,), target_tag=b)],
                   [RawCommand(MOVE_ABILITY, (b,), target_point=(3.5, 4.5))]], 8)
(kind, sent0), = [e for e in run_config.logs[0] if e[0] == "actions"]
(kind, sent1), = [e for e in run_config.logs[1] if e[0] == "actions"]
cmd0, cmd1 = sent0.actions[0].action_raw.unit_command, sent1.actions[0].action_raw.unit_command
assert (cmd0.ability_id, list(cmd0.unit_tags), cmd0.target_unit_tag, cmd0.queue_command) == (23, [a], b, False)
assert (cmd1.ability_id, list(cmd1.unit_tags)) == (16, [b])
assert (cmd1.target_world_space_pos.x, cmd1.target_world_space_pos.y) == (3.5, 4.5)
assert run_config.logs[0][-1] == ("step", 8) and run_config.logs[1][-1] == ("step", 8)
assert len(after) == 6
game.close()
assert ("quit",) in run_config.logs[0] and returned == [5000, 5001, 5002, 5003]

# --- one player: the map sent with the request, the built-in AI of the enemy race at VeryHard
run_config.logs.clear(); run_config.started.clear()
solo = SC2Game(get_map("2s3z"), two_player=False)
assert run_config.started == [[]]
(kind, create), = [e for e in run_config.logs[0] if e[0] == "create"]
assert create.local_map.map_data == b"MAPDATA:SMAC_Maps/2s3z.SC2Map"
assert [(p.type, p.race, p.difficulty) for p in create.player_setup][1] == (sc_pb.Computer, common_pb2.Protoss, sc_pb.VeryHard)
print("SC2GAME OK")
'''


def test_sc2_game_sends_the_right_requests():
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python", "PYTHONPATH": str(root)}
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=root,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "SC2GAME OK" in result.stdout
