"""Recorder → disk → dataset round trip, and the [B, T] lanes with carried state (docs/design/alphastar.md §3)."""

import json

import numpy as np
import pytest
import torch
from selfplay.agents.alphastar.dataset import DemonstrationDataset, record_demonstrations
from selfplay.agents.alphastar.demonstrators import (
    FocusFireDemonstrator,
    KitingDemonstrator,
    NearestEnemyDemonstrator,
    make_demonstrator,
)
from selfplay.agents.alphastar.smac import CommanderConfig, SMACCommander
from selfplay.agents.alphastar.smac.executor import ATTACK, IDLE
from selfplay.agents.alphastar.smac.features import ATTACK_UNIT, COLUMN, HEAL_UNIT, NO_OP
from selfplay.envs.smac import SMACBattle


class Capturing:
    """A demonstrator that remembers what it saw and did (the recorder's own view of the game)."""

    def __init__(self, inner):
        self.inner, self.seen, self.seats, self.due = inner, [], [], []

    def __call__(self, cmd):
        actions = self.inner(cmd)
        due = cmd.due()
        self.seats.append(cmd.seat)
        self.due.append(due.clone())
        obs = cmd.observe()
        self.seen.append((obs.entities[due, 0].clone(), obs.location_mask[due, 0].clone(),
                          actions.action_type[due].clone(), actions.selected_units[due].clone()))
        return actions


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    out = tmp_path_factory.mktemp("demos")
    battle = SMACBattle("3m", num_envs=1, two_player=False, seed=3)
    cmd = SMACCommander(battle, 0, CommanderConfig(grid=16))
    demo = Capturing(FocusFireDemonstrator())
    summary = record_demonstrations(battle, demo, 3, out, games_per_chunk=2, commander=cmd)
    return out, summary, demo, cmd


def test_round_trip_keeps_every_decision(recorded):
    out, summary, demo, cmd = recorded
    meta = json.loads((out / "meta.json").read_text())
    assert meta["chunks"] == ["chunk_00000.npz", "chunk_00001.npz"]
    ds = DemonstrationDataset(out, cmd.network_config())
    assert ds.num_games == 3 and ds.num_steps == summary["decisions"] == sum(len(s[2]) for s in demo.seen)
    entities = torch.cat([s[0] for s in demo.seen]).numpy()
    assert np.allclose(ds.data["entities"], entities, atol=2e-3)  # float16 storage
    assert np.array_equal(ds.data["location_mask"], torch.cat([s[1] for s in demo.seen]).numpy())
    assert np.array_equal(ds.data["action_type"], torch.cat([s[2] for s in demo.seen]).numpy())
    assert np.array_equal(ds.data["selected_units"], torch.cat([s[3] for s in demo.seen]).numpy())
    assert summary["wins"] + summary["draws"] + summary["losses"] == 3
    assert summary["bytes_per_game"] < 20_000  # 10 000 games of 3m: well under a GB


def test_lanes_cover_every_step_once_and_reset_at_game_starts(recorded):
    out, _, _, cmd = recorded
    ds = DemonstrationDataset(out, cmd.network_config())
    lanes = ds.lanes(np.arange(ds.num_games), batch_size=2, seq_len=4, seed=1)
    steps = lanes[lanes >= 0]
    assert np.array_equal(np.sort(steps), np.arange(ds.num_steps))
    batch = ds.batch(lanes[0])
    assert batch.obs.entities.shape[:2] == (2, 4) and batch.valid.shape == (2, 4)
    # in a lane, consecutive windows continue the same game until it ends
    flat = lanes[:, 0].reshape(-1)
    flat = flat[flat >= 0]
    game = np.searchsorted(ds.start, flat, side="right") - 1
    t_in_game = flat - ds.start[game]
    assert np.all((np.diff(flat) == 1) | (t_in_game[1:] == 0))
    starts = np.concatenate([ds.batch(lanes[k]).obs.episode_start.numpy()[0] for k in range(len(lanes))])
    valid = lanes[:, 0].reshape(-1) >= 0
    assert np.array_equal(starts[valid], t_in_game == 0)


def placed_commander(map_name: str, positions: list, **unit_values: dict):
    """A one-game battle against the AI with its units at ``positions`` (allies, then enemies) and each
    engine array named in ``unit_values`` set at the given units (``hp={4: 5.0}``), and seat 0's
    commander having observed it."""
    battle = SMACBattle(map_name, num_envs=1, two_player=False, seed=0)
    battle.reset()
    battle.engine.pos[0] = torch.tensor(positions)
    for name, values in unit_values.items():
        for unit, value in values.items():
            getattr(battle.engine, name)[0, unit] = value
    battle.state_changed()
    cmd = SMACCommander(battle, 0)
    cmd.observe()
    return battle, cmd


def test_kiting_runs_from_a_melee_threat_while_cooling_down():
    # stalker 0 just fired (weapon cooling) with zealot 0 right next to it; the others far away
    _, cmd = placed_commander("3s_vs_3z", [(10.0, 16.0), (4.0, 4.0), (4.0, 6.0), (11.5, 16.0), (28.0, 28.0), (28.0, 26.0)],
                              cooldown={0: 25.0})
    kite = KitingDemonstrator()(cmd)
    assert int(kite.action_type) == 2 and kite.selected_units[0].tolist()[:2] == [0, -1]  # move stalker 0 ...
    x = int(kite.location) % 32
    assert x < 10  # ... away from the zealot (west)
    focus = FocusFireDemonstrator()(cmd)
    assert int(focus.action_type) == 3 and int(focus.target_unit) == 3  # focus fire attacks it instead
    cmd.apply(kite, cmd.due())  # the demonstrators' actions pass the commander's checks


def test_nearest_sends_the_free_units_at_the_enemy_nearest_the_first_and_keeps_targets():
    # marine 0 nearest enemy 2; marine 2 nearest enemy 0 (and far from enemy 2); enemy 1 the weakest
    battle, cmd = placed_commander("3m", [(10.0, 10.0), (10.0, 12.0), (10.0, 22.0), (16.0, 22.0), (14.0, 15.0), (14.0, 10.0)],
                                   hp={4: 5.0})
    eng = battle.engine
    first = NearestEnemyDemonstrator()(cmd)
    assert int(first.action_type) == ATTACK_UNIT and int(first.target_unit) == 3 + 2  # attack_unit(enemy 2) ...
    assert first.selected_units[0].tolist() == [0, 1, 2]  # ... by every free marine, marine 2 too
    focus = FocusFireDemonstrator()(cmd)
    assert int(focus.target_unit) == 3 + 1  # focus fire picks the weakest enemy in reach instead
    cmd.apply(first, cmd.due())
    cmd.observe()
    assert int(NearestEnemyDemonstrator()(cmd).action_type) == NO_OP  # every marine holds a live target: no_op
    eng.hp[0, 5] = 0.0  # the target dies: the marines are free again and pick the nearest living enemy
    battle.state_changed()
    cmd.unit_actions()  # the executor ends the orders on a dead target
    cmd.observe()
    again = NearestEnemyDemonstrator()(cmd)
    assert int(again.action_type) == ATTACK_UNIT and int(again.target_unit) == 3 + 1


def test_nearest_heals_the_damaged_ally_nearest_the_medivac():
    battle = SMACBattle("MMM", num_envs=1, two_player=False, seed=0)
    battle.reset()
    cmd = SMACCommander(battle, 0)
    eng, n = battle.engine, cmd.side.n
    medivac = int(torch.nonzero(cmd.side.heals)[0])
    pos = eng.pos[0].clone()
    pos[:n] = torch.tensor([(4.0 + 0.5 * i, 4.0) for i in range(n)])
    pos[medivac] = torch.tensor((4.0, 6.0))
    eng.pos[0] = pos
    eng.hp[0, 0] = eng.hp[0, 0] * 0.5  # two hurt allies, unit 0 the nearer the Medivac
    eng.hp[0, 3] = eng.hp[0, 3] * 0.5
    battle.state_changed()
    cmd.observe()
    demo = NearestEnemyDemonstrator()
    cmd.executor.kind[0, :, 0] = torch.where(cmd.side.heals, IDLE, ATTACK)  # the armed units hold targets already
    cmd.executor.target[0, :, 0] = 0
    heal = demo(cmd)
    assert int(heal.action_type) == HEAL_UNIT and int(heal.target_unit) == 0
    assert heal.selected_units[0].tolist()[:2] == [medivac, -1]


def test_self_play_demonstrations_never_meet_the_built_in_ai(tmp_path):
    """On a two-player battle the demonstrator plays both seats; only seat 0's decisions are stored."""
    battle = SMACBattle("3m", num_envs=2, two_player=True, mirror=True, seed=0)  # as run_sl builds it
    cmd = SMACCommander(battle, 0, CommanderConfig(grid=8))
    seen = Capturing(NearestEnemyDemonstrator())
    summary = record_demonstrations(battle, seen, 3, tmp_path, commander=cmd)
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["opponent"] == "demonstrator" and summary["games"] == 3
    assert seen.seats[0::2] == [0] * (len(seen.seats) // 2) and seen.seats[1::2] == [1] * (len(seen.seats) // 2)
    data = DemonstrationDataset(tmp_path)  # seat 0's decisions: its entities are marines of seat 0's frame
    seat0_rows = sum(int(due.sum()) for due, seat in zip(seen.due, seen.seats) if seat == 0)
    assert 0 < data.num_steps <= seat0_rows  # at most seat 0's decisions (the games past the third not kept)
    assert set(np.unique(data.data["action_type"]).tolist()) <= {NO_OP, ATTACK_UNIT}  # attack_unit and no_op: the labels
    one_seat = SMACBattle("3m", num_envs=2, two_player=False, seed=0)
    meta_ai = record_demonstrations(one_seat, NearestEnemyDemonstrator(), 2, tmp_path / "ai",
                                    commander=SMACCommander(one_seat, 0, CommanderConfig(grid=8)))
    assert meta_ai["win_rate"] == 1.0  # against the AI, nearest-enemy focus fire wins 3m
    assert json.loads((tmp_path / "ai" / "meta.json").read_text())["opponent"] == "scripted_ai"


def test_perturbed_recording_keeps_demonstrator_labels_and_is_seeded(tmp_path):
    def record(seed, name):
        battle = SMACBattle("3m", num_envs=2, two_player=False, seed=0)
        cmd = SMACCommander(battle, 0, CommanderConfig(grid=8))
        record_demonstrations(battle, FocusFireDemonstrator(), 2, tmp_path / name, commander=cmd, perturb=0.5,
                              seed=seed)
        return DemonstrationDataset(tmp_path / name)

    a, b, c = record(1, "a"), record(1, "b"), record(2, "c")
    assert all(np.array_equal(a.data[k], b.data[k]) for k in a.data)  # same seed, same data
    assert a.num_steps != c.num_steps or not np.array_equal(a.data["entities"], c.data["entities"])
    # the nudges are moves; focus fire on 3m never moves: the labels are the demonstrator's
    assert not (a.data["action_type"] == 2).any()
    # a nudged unit shows an executed move order in a later decision's features
    assert (a.data["entities"][:, :3, COLUMN["order"] + 2] > 0).any()


def test_bad_arguments(tmp_path):
    battle = SMACBattle("3m", num_envs=1, two_player=False, seed=0)
    with pytest.raises(ValueError, match="demonstrator"):
        make_demonstrator("rush")
    with pytest.raises(ValueError, match="cooling"):
        KitingDemonstrator(cooling=1.5)
    with pytest.raises(ValueError, match="num_games"):
        record_demonstrations(battle, FocusFireDemonstrator(), 0, tmp_path)
    with pytest.raises(ValueError, match="perturb"):
        record_demonstrations(battle, FocusFireDemonstrator(), 1, tmp_path, perturb=2.0)
    with pytest.raises(ValueError, match="meta.json"):
        DemonstrationDataset(tmp_path / "nothing")
