"""Every bad input is a clear one-line error naming the parameter, with nothing written."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from selfplay.envs.rps import RirRPS

from selfplay.cli import main
from selfplay.core.league import league_from_spec
from selfplay.core.menagerie import Menagerie
from selfplay.core.schemes import make_scheme


def cli_error(args: list[str], capsys) -> str:
    """Run the CLI; it must exit 2 with one line on stderr."""
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"selfplay {args[0]}: error:") and "\n" not in err and "Traceback" not in err
    return err


def fresh(tmp_path) -> list[str]:
    return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "afile"
    path.write_text("x")
    return path


TRAIN = ["train", "--episodes", "32", "--num-envs", "8", "--checkpoints", "2"]


@pytest.mark.parametrize("args, expected", [
    (lambda t: TRAIN + ["--out", str(t / "afile")], "is a file"),
    (lambda t: TRAIN + ["--out", str(t / "afile" / "below")], "cannot be created"),
    (lambda t: TRAIN + ["--out", "/proc/selfplay-run"], "cannot be created"),
    (lambda t: TRAIN + ["--out", ""], "out must name a directory"),
    (lambda t: TRAIN + ["--env", "chess", "--out", str(t / "r")], "env"),
    (lambda t: TRAIN + ["--scheme", "delta-uniform:delta=0,delta=1", "--out", str(t / "r")], "given twice"),
    (lambda t: TRAIN + ["--scheme", "league:main=1", "--out", str(t / "r")], "not one learner's scheme"),
    (lambda t: ["league", "--steps", "0", "--out", str(t / "r")], "steps must be"),
    (lambda t: ["league", "--matches", "0", "--out", str(t / "r")], "matches must be"),
    (lambda t: ["compare", "--schemes", "naive,foo", "--out", str(t / "r")], "unknown scheme 'foo'"),
    (lambda t: ["compare", "--seeds", "0,0", "--out", str(t / "r")], "seeds must not repeat"),
    (lambda t: ["evaluate", str(t / "missing")], "is not a directory"),
    (lambda t: ["evaluate", str(t)], "not a run directory"),
    (lambda t: ["omega", "league", "--size", "5"], "not one learner's scheme"),
    (lambda t: ["omega", "naive", "--size", "0"], "size must be"),
    (lambda t: TRAIN + ["--horizon", "64", "--minibatch-size", "1000", "--out", str(t / "r")], "minibatch"),
    (lambda t: TRAIN + ["--env", "smac:3m@sc2", "--out", str(t / "r")], "needs StarCraft II"),
    # the audit's tracebacks, silent accepts and hangs
    (lambda t: TRAIN + ["--num-envs", "100000000000", "--out", str(t / "r")], "num_envs must be an integer in [1, 65536]"),
    (lambda t: TRAIN + ["--learning-rate", "inf", "--out", str(t / "r")], "learning_rate must be a finite number > 0"),
    (lambda t: TRAIN + ["--learning-rate", "nan", "--out", str(t / "r")], "learning_rate must be a finite number > 0"),
    (lambda t: TRAIN + ["--seed", str(2**64), "--out", str(t / "r")], "seed must be an integer in [0, 4294967295]"),
    (lambda t: TRAIN + ["--env", "openspiel:goofspiel(num_cards=-1)", "--out", str(t / "r")],
     "game 'goofspiel(num_cards=-1)': parameters must not be negative, got num_cards=-1"),
    (lambda t: ["omega", "naive", "--size", "10000000000"], "size must be an integer in [1, 1000000]"),
    (lambda t: TRAIN + ["--sl", str(t / "afile"), "--out", str(t / "r")], "--sl apply to the alphastar agent only"),
    (lambda t: TRAIN + ["--asynchronous", "--sl-epochs", "2", "--out", str(t / "r")],
     "options --sl-epochs, --asynchronous apply to the alphastar agent only"),
    (lambda t: TRAIN + ["--agent", "alphastar", "--env", "smac:3m", "--sl", str(t / "afile"), "--out", str(t / "r")],
     "is not a torch data file"),
    (lambda t: TRAIN + ["--demonstrator", "nearest", "--out", str(t / "r")],
     "--demonstrator apply to the alphastar agent only"),
    (lambda t: TRAIN + ["--agent", "alphastar", "--env", "smac:3m", "--sl", str(t / "afile"), "--demonstrations-against",
                        "self_play", "--out", str(t / "r")], "--demonstrations-against set the SL run this command makes"),
    (lambda t: ["league", "--seed", str(2**64), "--out", str(t / "r")], "seed must be an integer"),
    (lambda t: ["league", "--num-envs", "100000000000", "--out", str(t / "r")], "num_envs must be an integer"),
    # the Ray league's options without Ray, and the lag of players that are always on-policy
    (lambda t: ["league", "--quick", "--workers", "3", "--out", str(t / "r")],
     "--workers applies to a league on Ray only: add --ray"),
    (lambda t: ["league", "--quick", "--workers", "3", "--max-lag", "2", "--out", str(t / "r")],
     "--workers and --max-lag apply to a league on Ray only"),
    (lambda t: ["league", "--quick", "--ray", "--max-lag", "2", "--out", str(t / "r")],
     "--max-lag applies to the alphastar agent only"),
    (lambda t: ["evaluate", str(t), "--seed", "-1"], "seed must be an integer in [0, 4294967295]"),
    (lambda t: ["evaluate", str(t), "--matches", "0"], "matches must be an integer"),
    # --out '' everywhere
    (lambda t: ["compare", "--quick", "--out", ""], "out must name a directory"),
    (lambda t: ["league", "--quick", "--out", ""], "out must name a directory"),
    (lambda t: ["sl", "--quick", "--out", ""], "out must name a directory"),
    (lambda t: ["sl", "--quick", "--epochs", "0", "--out", str(t / "r")], "epochs must be a positive int, got 0"),
    (lambda t: ["evaluate", ""], "run_dir must name a directory"),
    # compare checks every run's settings before it writes anything
    (lambda t: ["compare", "--quick", "--learning-rate", "nan", "--out", str(t / "c")], "learning_rate"),
    (lambda t: ["compare", "--quick", "--epochs", "0", "--out", str(t / "c")], "epochs"),
    (lambda t: ["compare", "--quick", "--horizon", "64", "--minibatch-size", "1000", "--out", str(t / "c")], "minibatch"),
    (lambda t: ["compare", "--quick", "--seeds", f"0,{2**64}", "--out", str(t / "c")], "seeds must be an integer"),
    (lambda t: ["compare", "--quick", "--num-envs", "100000000000", "--out", str(t / "c")], "num_envs"),
])
def test_cli_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, a_file, args, expected):
    before = fresh(tmp_path)
    err = cli_error(args(tmp_path), capsys)
    assert expected in err
    assert fresh(tmp_path) == before


def test_a_refused_compare_leaves_its_out_usable(tmp_path, capsys):
    """A refused setting writes nothing, so the corrected command is not refused for the directory."""
    out = str(tmp_path / "c")
    cli_error(["compare", "--quick", "--epochs", "0", "--out", out], capsys)
    assert not (tmp_path / "c").exists()
    from selfplay.evaluation.compare import CompareConfig

    config = CompareConfig.preset(quick=True)
    config.ppo = {"horizon": 256, "epochs": 0}
    with pytest.raises(ValueError, match="epochs"):
        config.validate()


def test_a_dead_ray_address_is_refused_quickly(tmp_path, capsys, monkeypatch):
    pytest.importorskip("ray")
    import socket

    with socket.socket() as s:  # a port nothing listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        err = cli_error(TRAIN + ["--ray-address", f"127.0.0.1:{port}", "--out", str(tmp_path / "r")], capsys)
        assert f"ray_address '127.0.0.1:{port}': nothing answers there" in err
        monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")  # what `auto` resolves to
        err = cli_error(TRAIN + ["--ray-address", "auto", "--out", str(tmp_path / "r")], capsys)
        assert "ray_address 'auto' (" in err and f":{port}): nothing answers there" in err


def test_evaluate_explains_a_comparison_directory(tmp_path, capsys):
    (tmp_path / "compare_config.json").write_text("{}")
    assert "is a comparison" in cli_error(["evaluate", str(tmp_path)], capsys)


def test_evaluate_refuses_a_corrupt_config(tmp_path, capsys):
    (tmp_path / "config.yaml").write_text("env: [unclosed\n")
    assert "config.yaml is damaged" in cli_error(["evaluate", str(tmp_path)], capsys)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
def test_read_only_out(tmp_path, capsys):
    (tmp_path / "ro").mkdir(mode=0o555)
    assert "not writable" in cli_error(TRAIN + ["--out", str(tmp_path / "ro")], capsys)


@pytest.mark.parametrize("build, expected", [
    (lambda: league_from_spec("league:main=1.5"), "main must be an integer"),
    (lambda: make_scheme("naive,foo"), "unknown scheme"),
    (lambda: make_scheme("delta-uniform:delta=0,delta=1"), "given twice"),
    (lambda: Menagerie.from_index({"next_id": 2, "entries": [{"id": 0, "step": 0, "tags": {}, "file": None}] * 2}),
     "duplicate entry ids"),
    (lambda: Menagerie.from_index({"next_id": 0, "entries": [{"id": 0, "step": 0, "tags": {}, "file": None}]}),
     "next_id"),
])
def test_library_bad_input_is_a_value_error(build, expected):
    with pytest.raises(ValueError, match=expected):
        build()


def test_agent_settings_are_checked_against_the_agents_dataclass_and_recorded_resolved(tmp_path):
    from selfplay.training.loop import TrainConfig

    with pytest.raises(ValueError, match="hrizon"):
        TrainConfig(agent_settings={"hrizon": 64})
    config = TrainConfig(episodes=8, checkpoints=1, agent_settings={"horizon": 64, "minibatch_size": 16})
    resolved = config.run_config()["resolved_agent_settings"]
    assert resolved["horizon"] == 64 and resolved["minibatch_size"] == 16 and resolved["body"] == "mlp"
    assert resolved["learning_rate"] == 3e-4  # the environment's default, recorded


def test_menagerie_takes_numpy_integers_as_steps():
    assert Menagerie().add("p", step=np.int64(3)).step == 3


def test_rirrps_refuses_to_play_past_the_end_without_auto_reset():
    env = RirRPS(num_envs=2, repetitions=1, seed=0)
    a = torch.zeros(2, dtype=torch.long)
    _, _, done, _ = env.step([a, a], auto_reset=False)
    assert done.all()
    with pytest.raises(ValueError, match="call reset"):
        env.step([a, a], auto_reset=False)
    env.reset()
    env.step([a, a], auto_reset=False)


def test_run_files_follow_the_umask(tmp_path):
    from selfplay.utils.io import atomic_write_text

    old = os.umask(0o022)
    try:
        path = atomic_write_text(tmp_path / "f.txt", "x")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
