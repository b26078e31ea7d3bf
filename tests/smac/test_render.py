"""Watching a battle (envs/smac/render.py): frames show units where they are; replays are GIFs."""

import numpy as np
import pytest
import torch
from PIL import Image
from selfplay.envs.smac import SMACBattle, StarCraft2Env
from selfplay.envs.smac.render import HEAL_COLOUR, LINE_COLOURS, SIDE_COLOURS, ReplayRecorder, draw_frame
from selfplay.envs.smac.rules import ATTACK

S = 16  # pixels per map unit


def px(x, y, map_y=32):
    """The pixel (row, col) holding map point (x, y) at scale S, north up."""
    return int((map_y - y) * S), int(x * S)


def battle_with(positions, hp=None):
    b = SMACBattle("3m", 1, two_player=True, seed=0)
    b.reset()
    b.engine.pos[0] = torch.tensor(positions, dtype=torch.float32)
    for i, h in (hp or {}).items():
        b.engine.hp[0, i] = h
    b.state_changed()
    return b


def test_units_are_drawn_where_they_are_by_side_with_health_bars():
    b = battle_with([[10, 16], [10, 12], [10, 20], [20, 16], [20, 12], [22, 20]], hp={0: 22.5, 4: 0.0})
    img = b.render("rgb_array", scale=S)
    assert img.shape == (32 * S, 32 * S, 3) and img.dtype == np.uint8
    assert img[px(10.25, 16)].tolist() == list(SIDE_COLOURS[0])  # ally 0, off its type dot
    assert img[px(19.75, 16)].tolist() == list(SIDE_COLOURS[1])  # enemy 3
    assert img[px(20, 12.25)].tolist() != list(SIDE_COLOURS[1])  # enemy 4 is dead: not drawn
    r, g, bl = img[px(16, 16)].tolist()
    assert r == g == bl  # terrain between them is grey
    # ally 0's health bar (half its hp): green on its left half, dark red on its right half
    row = int((32 - (16 + 0.375 + 0.45)) * S) + 1
    assert img[row, int(9.7 * S)].tolist() == [40, 220, 40]
    assert img[row, int(10.3 * S)].tolist() == [160, 0, 0]
    assert img[int((32 - (16 + 0.375 + 0.45)) * S) + 1, int(19.9 * S)].tolist() == [40, 220, 40]  # enemy 3: full


def test_attack_lines_join_a_unit_to_a_target_in_range():
    b = battle_with([[10, 16], [10, 12], [10, 20], [14, 16], [28, 12], [28, 20]])
    assert tuple(b.render(scale=S)[px(12, 16)]) != LINE_COLOURS[0]
    b.engine.order[0, 0] = ATTACK
    b.engine.target[0, 0] = 3
    img = draw_frame(b, 0, S)
    assert img[px(12, 16)].tolist() == list(LINE_COLOURS[0])
    b.engine.target[0, 0] = 4  # out of range (18 away): no line
    assert draw_frame(b, 0, S)[px(16, 15)].tolist() != list(LINE_COLOURS[0])
    assert HEAL_COLOUR != LINE_COLOURS[0]


def test_gif_has_one_frame_per_capture(tmp_path):
    b = SMACBattle("2s3z", 2, two_player=False, seed=0)
    b.reset()
    rec = ReplayRecorder(b, game=1, scale=4)
    rec.capture()
    for _ in range(6):
        b.step([torch.ones(2, 5, dtype=torch.long)])  # stop
        rec.capture()
    path = rec.save_gif(tmp_path / "g.gif", fps=10)
    with Image.open(path) as gif:
        assert gif.n_frames == 7
        assert gif.size == (32 * 4, 32 * 4)
        assert gif.info["duration"] == 100
    with pytest.raises(ValueError, match="game"):
        ReplayRecorder(b, game=2)
    with pytest.raises(ValueError, match=".gif"):
        rec.save_gif(tmp_path / "g.mp4")


def test_env_save_replay_writes_the_episode(tmp_path):
    env = StarCraft2Env("3m", seed=0, replay_dir=str(tmp_path), replay_prefix="ep")
    env.reset()
    steps = 0
    for _ in range(4):
        env.step([1, 1, 1])
        steps += 1
    path = env.save_replay()
    assert path.endswith("ep_1.gif")
    with Image.open(path) as gif:
        assert gif.n_frames == steps + 1  # the reset's frame and one per step


def test_pettingzoo_env_renders_rgb_arrays():
    from selfplay.envs.smac import SMACParallelEnv

    env = SMACParallelEnv("3m", seed=0, render_mode="rgb_array")
    env.reset(seed=0)
    img = env.render()
    assert img.shape == (32 * 8, 32 * 8, 3) and img.dtype == np.uint8
    assert SMACParallelEnv("3m").render() is None
    with pytest.raises(ValueError, match="render_mode"):
        SMACParallelEnv("3m", render_mode="human")


def test_a_smacv2_frame_shows_each_games_drawn_teams():
    """SMACv2 (every reset draws the teams): a frame draws the units of its own game's draw — the scene's
    names and constants are the game's rows — and a recorder reads the new draw at the next game's start."""
    from selfplay.envs.smac.render import Scene
    from selfplay.envs.smac.smacv2_battle import SMACv2Battle

    b = SMACv2Battle("terran_5_vs_5", 2, seed=0, auto_reset=False)
    b.reset()
    eng = b.engine
    for g in (0, 1):
        scene = Scene.of(b, g)
        assert set(scene.names) <= {"marine", "marauder", "medivac"} and len(scene.names) == 10
        hp = {"marine": 45.0, "marauder": 125.0, "medivac": 150.0}  # the units' game data (units.py)
        assert scene.hp_max.tolist() == [hp[n] for n in scene.names]
        img = draw_frame(b, g, S)
        for u in range(10):
            x, y = eng.pos[g, u].tolist()
            side = 0 if u < 5 else 1
            assert img[px(x + scene.radius[u] * 0.7, y)].tolist() == list(SIDE_COLOURS[side])
    rec = ReplayRecorder(b, game=0, scale=4)
    rec.capture()
    first = Scene.of(b, 0).names
    for _ in range(10):  # resets until game 0 draws another team
        b.reset()
        if Scene.of(b, 0).names != first:
            break
    assert Scene.of(b, 0).names != first
    rec.capture()
    assert rec.snapshots[0][0].names == first and rec.snapshots[1][0].names == Scene.of(b, 0).names
    assert len(rec.frames()) == 2
