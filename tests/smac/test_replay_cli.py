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
