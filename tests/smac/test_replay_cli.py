"""``selfplay replay``: one game between two players as a GIF (selfplay/evaluation/replay.py)."""

import pytest
from PIL import Image

from selfplay.cli import main
from selfplay.evaluation.replay import play_replay


def test_replay_of_two_panel_members_has_a_frame_per_step(tmp_path):
    result = play_replay("smac:3m", "panel:focus_weakest", "panel:builtin", tmp_path / "g.gif", seed=2, scale=8,
                         fps=10)
    assert 1 <= result.steps <= 60 and result.winner in (-1, 0, 1)
    with Image.open(result.path) as gif:
        assert gif.n_frames == result.steps + 1  # the start and one per step (the time bar grows every step)
        durations = []
        for k in range(gif.n_frames):
            gif.seek(k)
            durations.append(gif.info["duration"])
        assert durations == [100] * (result.steps + 1)
    again = play_replay("smac:3m", "panel:focus_weakest", "panel:builtin", tmp_path / "h.gif", seed=2, scale=4)
    assert (again.steps, again.winner) == (result.steps, result.winner)  # same seed, same game


def test_replay_cli_and_bad_players(tmp_path, capsys):
    out = tmp_path / "g.gif"
    assert main(["replay", "--env", "smac:3m", "--a", "panel:kiting", "--b", "panel:regroup", "--out", str(out),
                 "--scale", "4"]) == 0
    assert out.is_file() and "steps" in capsys.readouterr().out
    assert main(["replay", "--env", "smac:3m", "--a", "panel:nope", "--b", "panel:regroup", "--out", str(out)]) == 2
    assert "panel member must be one of" in capsys.readouterr().err
    assert main(["replay", "--env", "smac:3m", "--a", str(tmp_path / "none"), "--b", "panel:kiting",
                 "--out", str(out)]) == 2
    assert "panel:NAME, a run directory" in capsys.readouterr().err
    with pytest.raises(ValueError, match="smac:MAP"):
        play_replay("rirrps", "panel:kiting", "panel:kiting", out)


def test_a_replay_against_builtin_is_smacs_single_player_game(tmp_path):
    """``--b panel:builtin`` plays the panel's battle for the built-in AI (SMAC's single-player game, the
    map's own spawns): the same game, step count and winner, as focus_weakest in a single-player
    ``SMACBattle`` of the same seed; the AI in seat 0 is refused (it is player 2 in SMAC)."""
    import torch
    from selfplay.envs.smac import SMACBattle
    from selfplay.envs.smac.panel import panel_member

    result = play_replay("smac:3m", "panel:focus_weakest", "panel:builtin", tmp_path / "g.gif", seed=3, scale=4)
    battle = SMACBattle("3m", 1, two_player=False, seed=3)
    battle.reset()
    me = panel_member("focus_weakest", battle, 0)
    steps, done = 0, torch.zeros(1, dtype=torch.bool)
    while not bool(done[0]):
        _, _, done, info = battle.step([me.act(None)[0]])
        steps += 1
    assert (result.steps, result.winner) == (steps, int(info["winner"][0]))
    with pytest.raises(ValueError, match="player 2"):
        play_replay("smac:3m", "panel:builtin", "panel:kiting", tmp_path / "h.gif")


@pytest.fixture(scope="module")
def smacv2_run(tmp_path_factory):
    """A two-episode MAPPO self-play run on SMACv2 protoss_5_vs_5 (its checkpoints are what replays load)."""
    out = tmp_path_factory.mktemp("v2") / "run"
    assert main(["train", "--env", "smacv2:protoss_5_vs_5", "--agent", "mappo", "--episodes", "2", "--num-envs", "2",
                 "--rollout-length", "20", "--epochs", "1", "--checkpoints", "2", "--seed", "0",
                 "--out", str(out)]) == 0
    return out


def test_a_smacv2_replay_plays_a_checkpoint_against_the_ai_or_another(smacv2_run, tmp_path):
    """On SMACv2 a checkpoint plays the built-in AI (the scenario's single-player game) or another
    checkpoint (two-player, both teams drawn): a frame per step, the same game for the same seed; the
    scripted members play it too (each game's draw read by the script)."""
    # scale 8: the time bar (256 pixels over 200 steps) grows every step, so no two frames merge in the GIF
    vs_ai = play_replay("smacv2:protoss_5_vs_5", str(smacv2_run), "panel:builtin", tmp_path / "a.gif", seed=1, scale=8)
    with Image.open(vs_ai.path) as gif:
        assert gif.n_frames == vs_ai.steps + 1 and 1 <= vs_ai.steps <= 200
    again = play_replay("smacv2:protoss_5_vs_5", str(smacv2_run), "panel:builtin", tmp_path / "b.gif", seed=1, scale=4)
    assert (again.steps, again.winner) == (vs_ai.steps, vs_ai.winner)
    first = f"{smacv2_run}@{1}"
    two = play_replay("smacv2:protoss_5_vs_5", first, str(smacv2_run), tmp_path / "c.gif", seed=1, scale=4)
    assert two.winner in (-1, 0, 1) and two.steps >= 1
    script = play_replay("smacv2:protoss_5_vs_5", "panel:heuristic", "panel:builtin", tmp_path / "d.gif", seed=1, scale=4)
    assert script.winner in (-1, 0, 1) and 1 <= script.steps <= 200
