"""The order executor and the commander's action checks on hand-placed situations
(docs/design/alphastar.md §5: move towards points, attack when in range else approach, queue semantics)."""

import pytest
import torch
from selfplay.agents.alphastar.network import AlphaStarActions
from selfplay.agents.alphastar.smac import SMACCommander
from selfplay.agents.alphastar.smac.executor import ATTACK, IDLE
from selfplay.agents.alphastar.smac.executor import MOVE as ORDER_MOVE
from selfplay.agents.alphastar.smac.features import ATTACK_UNIT, MOVE, NO_OP, STOP
from selfplay.envs.smac import SMACBattle

EAST, FIRST_TARGET = 4, 6


def scene(positions):
    """3m, one game, both seats controlled; unit positions (side 0 then side 1) placed by hand."""
    battle = SMACBattle("3m", num_envs=1, seed=0)
    battle.reset()
    battle.engine.pos[0] = torch.tensor(positions, dtype=torch.float32)
    battle.state_changed()
    return battle, SMACCommander(battle, 0)


def command(cmd, action_type, units=(), target=-1, location=-1, queued=-1, delay=0):
    S = cmd.max_selected_units
    sel = list(units) + [-1] * (S - len(units))
    t = lambda v: torch.tensor([v])  # noqa: E731
    return AlphaStarActions(action_type=t(action_type), delay=t(delay), queued=t(queued),
                            selected_units=torch.tensor([sel]), target_unit=t(target), location=t(location))


def cell(x, y):
    return y * 32 + x


def run(battle, cmd, steps):
    """Advance with the enemy side idle (stop); returns the seat-0 unit actions of every step."""
    history = []
    for _ in range(steps):
        actions = cmd.unit_actions()
        history.append(actions[0].tolist())
        enemy_idle = torch.where(battle.action_masks()[1][..., 0], 0, 1)  # dead: no-op, alive: stop
        battle.step([actions, enemy_idle])
    return history


FAR = [(4.0, 10.0), (4.0, 16.0), (4.0, 22.0), (28.0, 10.0), (28.0, 16.0), (28.0, 22.0)]


def test_move_to_point_with_compass_moves_then_idle():
    battle, cmd = scene(FAR)
    cmd.observe()
    cmd.apply(command(cmd, MOVE, units=[1], location=cell(12, 16), queued=0), torch.tensor([True]))
    history = run(battle, cmd, 12)
    assert history[0] == [1, EAST, 1]  # only the selected unit moves, east towards x = 12.5
    pos = battle.engine.pos[0, 1]
    assert abs(float(pos[0]) - 12.5) <= 1.0 and abs(float(pos[1]) - 16.0) < 0.5
    assert cmd.executor.current[0, 1] == IDLE and history[-1][1] == 1  # arrived: the order ended


def test_attack_approaches_out_of_range_then_fires():
    battle, cmd = scene(FAR)
    cmd.observe()
    enemy = 4  # entity slot of enemy 1 (own units are slots 0..2)
    cmd.apply(command(cmd, ATTACK_UNIT, units=[0, 1, 2], target=enemy, queued=0), torch.tensor([True]))
    hp0 = float(battle.engine.hp[0, 4])
    history = run(battle, cmd, 25)
    first_attack = next(i for i, a in enumerate(history) if a[1] == FIRST_TARGET + 1)
    assert first_attack > 0 and all(a[1] == EAST for a in history[:first_attack])  # approach ...
    gap = battle.engine.pos[0, 4] - battle.engine.pos[0, 1]
    assert float(gap.norm()) <= 6.0 + 1e-4  # ... until within shoot range, then attack
    assert float(battle.engine.hp[0, 4]) < hp0
    assert (cmd.executor.current[0] == ATTACK).all() or float(battle.engine.hp[0, 4]) <= 0


def test_queued_order_runs_after_the_current_one_and_replace_clears_the_queue():
    battle, cmd = scene(FAR)
    cmd.observe()
    go = torch.tensor([True])
    cmd.apply(command(cmd, MOVE, units=[1], location=cell(9, 16), queued=0), go)
    cmd.observe()
    cmd.apply(command(cmd, MOVE, units=[1], location=cell(9, 20), queued=1), go)
    assert cmd.executor.queued_count[0, 1] == 1
    run(battle, cmd, 6)  # reaches (9.5, 16.5) first
    assert cmd.executor.current[0, 1] == ORDER_MOVE and cmd.executor.queued_count[0, 1] == 0
    assert torch.allclose(cmd.executor.goal[0, 1, 0], torch.tensor([9.5, 20.5]))
    run(battle, cmd, 6)
    assert float((battle.engine.pos[0, 1] - torch.tensor([9.5, 20.5])).norm()) <= 1.0
    # a replacing command clears the queue
    cmd.observe()
    cmd.apply(command(cmd, MOVE, units=[0], location=cell(5, 10), queued=0), go)
    cmd.observe()
    cmd.apply(command(cmd, MOVE, units=[0], location=cell(6, 10), queued=1), go)
    cmd.observe()
    cmd.apply(command(cmd, STOP, units=[0], queued=0), go)
    assert cmd.executor.queued_count[0, 0] == 0
    assert run(battle, cmd, 1)[0][0] == 1 and cmd.executor.current[0, 0] == IDLE


def test_delay_is_the_number_of_steps_until_the_next_decision():
    battle, cmd = scene(FAR)
    cmd.observe()
    cmd.apply(command(cmd, NO_OP, delay=3), torch.tensor([True]))
    due = []
    for _ in range(5):
        run(battle, cmd, 1)
        due.append(bool(cmd.due()[0]))
    assert due == [False, False, False, True, True]  # delay 3: acts again 4 steps later


@pytest.mark.parametrize("bad,match", [
    (dict(action_type=ATTACK_UNIT, units=[0], target=1, queued=0), "target_unit"),  # own unit as target
    (dict(action_type=MOVE, units=[3], location=cell(9, 16), queued=0), "selected_units"),  # enemy selected
    (dict(action_type=MOVE, units=[0, 0], location=cell(9, 16), queued=0), "selected_units"),  # twice
    (dict(action_type=MOVE, units=[], location=cell(9, 16), queued=0), "selected_units"),  # nobody
    (dict(action_type=MOVE, units=[0], location=cell(9, 2), queued=0), "location"),  # not walkable
    (dict(action_type=MOVE, units=[0], location=cell(9, 16), queued=2), "queued"),
    (dict(action_type=NO_OP, target=3), "target_unit"),  # unused arguments must be -1
    (dict(action_type=NO_OP, delay=8), "delay"),
    (dict(action_type=7), "action_type"),
])
def test_illegal_commands_raise(bad, match):
    battle, cmd = scene(FAR)
    cmd.observe()
    bad = dict(bad)
    with pytest.raises(ValueError, match=match):
        cmd.apply(command(cmd, bad.pop("action_type"), **bad), torch.tensor([True]))


def test_unavailable_action_type_raises():
    battle, cmd = scene(FAR)
    obs = cmd.observe()
    assert not obs.available_action_types[0, 0, 5]  # heal_unit on 3m
    with pytest.raises(ValueError, match="action_type"):
        cmd.apply(command(cmd, 5, units=[0], target=0, queued=0), torch.tensor([True]))
