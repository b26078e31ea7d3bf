"""Run directories are data: a crafted, damaged or linked run directory runs no code and reaches
nothing outside itself (docs/design/run-directory.md). Every crafted file here would write a
marker file if it were ever unpickled; every test checks the marker was never written and that
the files outside the run are as they were."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
from pathlib import Path

import pytest
import torch

from selfplay.cli import main
from selfplay.training import statefile
from selfplay.training.loop import TrainConfig, train
from selfplay.training.rundir import RunDir, RunDirError


def tiny_config(**kw) -> TrainConfig:
    base = dict(scheme="delta-uniform:delta=0", episodes=48, num_envs=16, checkpoints=2, seed=5,
                agent_settings={"horizon": 64, "epochs": 1}, tensorboard=False)
    base.update(kw)
    return TrainConfig(**base)


class Payload:
    """Unpickling this runs ``exec``: it writes ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({str(self.marker)!r}, 'w').write('ran')",)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "run"
    train(tiny_config(), out)
    return out


@pytest.fixture
def world(tmp_path, finished_run):
    """A copy of a finished run inside ``tmp_path/home``, a marker path, and an outside file with known bytes."""
    home = tmp_path / "home"
    home.mkdir()
    run = home / "run"
    shutil.copytree(finished_run, run)
    outside = home / "precious.txt"
    outside.write_text("my own notes\n")
    return run, home / "MARKER", outside


def listing(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() and not p.is_symlink() else b"<dir/link>")
            for p in sorted(root.rglob("*")) if p.name != ".lock"}


def manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


def recommit(run: Path, rel: str, data: bytes) -> None:
    """What an attacker who can write the directory does: replace a committed file and its manifest
    entry (so that the SHA-256 matches)."""
    (run / rel).write_bytes(data)
    m = manifest(run)
    m["files"][rel] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (run / "manifest.json").write_text(json.dumps(m))


def state_name(run: Path) -> str:
    return manifest(run)["state"]


def cli_error(args: list[str], capsys) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"selfplay {args[0]}: error:") and "\n" not in err and "Traceback" not in err
    return err


TRAIN_ARGS = ["--episodes", "48", "--num-envs", "16", "--checkpoints", "2", "--seed", "5",
              "--horizon", "64", "--epochs", "1"]


# --- crafted pickles and checkpoints -----------------------------------------------------------
def test_a_crafted_pickle_as_the_committed_state_is_refused_unread(world):
    run, marker, _ = world
    recommit(run, state_name(run), pickle.dumps(Payload(marker)))
    with pytest.raises(RunDirError, match="is not a state file"):
        train(tiny_config(), run)
    assert not marker.exists()


def test_a_run_of_the_pickled_format_is_refused_naming_the_format(world):
    run, marker, _ = world
    data = pickle.dumps({"config": {}, "x": Payload(marker)})
    (run / state_name(run)).unlink()
    (run / "state-000003.pt").write_bytes(data)
    (run / "manifest.json").write_text(json.dumps({
        "format": "selfplay-run/2", "generation": 3, "state": "state-000003.pt", "state_size": len(data),
        "state_sha256": hashlib.sha256(data).hexdigest(), "files": {}}))
    with pytest.raises(RunDirError, match=r"older format, selfplay-run/2 \(a pickled state-<gen>.pt\)"):
        train(tiny_config(), run)
    with pytest.raises(RunDirError, match="older format"):
        RunDir(run).load_commit()
    assert not marker.exists()


def test_a_crafted_torch_file_as_a_policy_is_refused_on_resume_and_evaluate(world, capsys):
    run, marker, _ = world
    policy = next(rel for rel in manifest(run)["files"] if rel.startswith("checkpoints/"))
    crafted = run / "crafted.pt"
    torch.save({"weights": Payload(marker)}, crafted)
    recommit(run, policy, crafted.read_bytes())
    crafted.unlink()
    with pytest.raises(ValueError, match="is not a torch data file"):
        train(tiny_config(), run)
    assert "is not a torch data file" in cli_error(["evaluate", str(run), "--matches", "1"], capsys)
    assert not marker.exists()


def test_a_crafted_sl_checkpoint_is_refused_unread(tmp_path, capsys):
    marker = tmp_path / "MARKER"
    sl = tmp_path / "sl.pt"
    torch.save({"state_dict": Payload(marker), "network_config": {}}, sl)
    err = cli_error(["train", "--agent", "alphastar", "--env", "smac:3m", "--sl", str(sl), "--episodes", "8",
                     "--num-envs", "2", "--checkpoints", "2", "--out", str(tmp_path / "run")], capsys)
    assert "sl_checkpoint" in err and "is not a torch data file" in err
    # a planted OUT/sl/sl_checkpoint.pt is read the same way by `league`
    (tmp_path / "league" / "sl").mkdir(parents=True)
    shutil.copy(sl, tmp_path / "league" / "sl" / "sl_checkpoint.pt")
    err = cli_error(["league", "--agent", "alphastar", "--env", "smac:3m", "--steps", "64", "--num-envs", "2",
                     "--out", str(tmp_path / "league")], capsys)
    assert "is not a torch data file" in err
    # ... and never through a link
    (tmp_path / "league" / "sl").rename(tmp_path / "elsewhere")
    (tmp_path / "league" / "sl").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    err = cli_error(["league", "--agent", "alphastar", "--env", "smac:3m", "--steps", "64", "--num-envs", "2",
                     "--out", str(tmp_path / "league")], capsys)
    assert "holds symbolic links (sl)" in err
    assert not marker.exists()


def test_garbage_is_one_line_naming_the_file(tmp_path):
    from selfplay.agents.ppo.checkpoint import load_policy

    from selfplay.utils.io import load_torch_data

    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(os.urandom(256))
    with pytest.raises(ValueError, match="garbage.pt' is not a torch data file"):
        load_torch_data(garbage, "policy")
    with pytest.raises(ValueError, match="is not a torch data file"):
        load_policy(garbage)
    with pytest.raises(statefile.StateFileError, match="not a state archive"):
        statefile.decode(os.urandom(256))


def test_the_state_codec_keeps_types_and_refuses_foreign_archives(tmp_path):
    import numpy as np

    state = {"t": torch.arange(3, dtype=torch.float32), "a": np.array([1, 2], dtype=np.uint8), "tuple": (1, "x"),
             "keys": {0: "int key", ("p", "k"): 1.5}, "f32": np.float32(0.1), "big": 2**100, "nan": float("nan"),
             "none": None, "__tricky": 1}
    back = statefile.decode(statefile.encode(state))
    assert torch.equal(back["t"], state["t"]) and back["t"].dtype == torch.float32
    assert back["a"].dtype == np.uint8 and back["tuple"] == (1, "x") and back["keys"] == state["keys"]
    assert type(back["f32"]) is np.float32 and back["f32"] == state["f32"] and back["big"] == 2**100
    assert back["nan"] != back["nan"] and back["none"] is None and back["__tricky"] == 1
    with pytest.raises(TypeError, match="cannot be stored as data"):
        statefile.encode({"x": object()})
    # an npz holding an object array (which np.load would unpickle) is refused without unpickling it
    path = tmp_path / "evil.npz"
    np.savez(path, tree=np.frombuffer(b'{"__ndarray__": "a0"}', dtype=np.uint8),
             a0=np.array([Payload(tmp_path / "MARKER")], dtype=object))
    with pytest.raises(statefile.StateFileError):
        statefile.decode(path.read_bytes())
    assert not (tmp_path / "MARKER").exists()


# --- names and links ---------------------------------------------------------------------------
def test_a_manifest_naming_a_file_outside_is_refused(world):
    run, _, outside = world
    m = manifest(run)
    m["files"]["../precious.txt"] = {"size": outside.stat().st_size,
                                     "sha256": hashlib.sha256(outside.read_bytes()).hexdigest()}
    (run / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(RunDirError, match="'../precious.txt', which is not a plain file name"):
        train(tiny_config(), run)
    for bad in ("/etc/passwd", "menagerie/../../precious.txt", ".hidden", ""):
        m["files"] = {bad: m["files"]["../precious.txt"], **{k: v for k, v in manifest(run)["files"].items()}}
        (run / "manifest.json").write_text(json.dumps(m))
        with pytest.raises(RunDirError, match="not a plain file name"):
            RunDir(run).load_commit()


def test_an_index_naming_a_file_outside_is_refused(world, capsys):
    run, marker, outside = world
    name = state_name(run)
    state = statefile.decode((run / name).read_bytes())
    state["menageries"]["checkpoints"]["entries"][0]["file"] = "../../precious.txt"
    recommit(run, name, statefile.encode(state))
    err = cli_error(["evaluate", str(run), "--matches", "1"], capsys)
    assert "'../../precious.txt'" in err
    # the exported index.json is not what evaluate reads
    index = json.loads((run / "checkpoints" / "index.json").read_text())
    assert all(e["file"] != "../../precious.txt" for e in index["entries"])
    assert outside.read_text() == "my own notes\n"


def test_a_symlinked_lock_is_never_opened(world):
    run, _, outside = world
    (run / ".lock").unlink(missing_ok=True)
    (run / ".lock").symlink_to(outside)
    with pytest.raises(RunDirError, match=r"\.lock is a symbolic link"):
        train(tiny_config(), run)
    assert outside.read_text() == "my own notes\n"


@pytest.mark.parametrize("folder", ["menagerie", "evaluation", "checkpoints"])
def test_a_symlinked_folder_is_refused_before_any_write(world, tmp_path, capsys, folder):
    run, _, _ = world
    elsewhere = tmp_path / "elsewhere"
    if (run / folder).exists():
        shutil.move(str(run / folder), str(elsewhere))
    else:
        elsewhere.mkdir()
    (run / folder).symlink_to(elsewhere, target_is_directory=True)
    before = listing(elsewhere)
    with pytest.raises(RunDirError, match=f"holds symbolic links \\({folder}\\)"):
        train(tiny_config(episodes=96), run)
    assert f"holds symbolic links ({folder})" in cli_error(["evaluate", str(run), "--matches", "1"], capsys)
    assert listing(elsewhere) == before


def test_a_symlinked_policy_file_is_not_read(world, capsys):
    run, _, outside = world
    policy = next(rel for rel in manifest(run)["files"] if rel.startswith("checkpoints/"))
    shutil.copy(run / policy, outside)
    (run / policy).unlink()
    (run / policy).symlink_to(outside)
    assert "symbolic link" in cli_error(["evaluate", str(run), "--matches", "1"], capsys)
    with pytest.raises(RunDirError, match="symbolic link"):
        RunDir(run).load_commit()


# --- integrity -----------------------------------------------------------------------------------
def test_a_same_size_policy_swap_and_a_flipped_byte_are_refused(world, capsys):
    run, _, _ = world
    files = [rel for rel in manifest(run)["files"] if rel.startswith("menagerie/")]
    a, b = files[0], files[1]
    assert (run / a).stat().st_size == (run / b).stat().st_size  # same network: same size
    data_a, data_b = (run / a).read_bytes(), (run / b).read_bytes()
    (run / a).write_bytes(data_b)
    (run / b).write_bytes(data_a)
    with pytest.raises(RunDirError, match=f"{a} does not match its SHA-256"):
        train(tiny_config(), run)
    (run / a).write_bytes(data_a)
    (run / b).write_bytes(data_b)
    check = next(rel for rel in manifest(run)["files"] if rel.startswith("checkpoints/"))
    data = bytearray((run / check).read_bytes())
    data[len(data) // 2] ^= 1
    (run / check).write_bytes(bytes(data))
    assert f"{check} does not match its SHA-256" in cli_error(["evaluate", str(run), "--matches", "1"], capsys)


def test_every_committed_file_has_its_sha256(world):
    run, _, _ = world
    m = manifest(run)
    assert m["format"] == "selfplay-run/3" and m["kind"] == "train"
    policies = {str(p.relative_to(run)) for p in run.rglob("policy_*.pt")}
    assert policies and policies | {m["state"]} == set(m["files"])
    for rel, record in m["files"].items():
        assert record == {"size": (run / rel).stat().st_size,
                          "sha256": hashlib.sha256((run / rel).read_bytes()).hexdigest()}


# --- cleanup ---------------------------------------------------------------------------------------
def test_cleanup_removes_only_the_projects_own_strays_after_the_run_is_accepted(world):
    run, _, _ = world
    own = [run / "menagerie" / "policy_000999.pt", run / ".matches.csv.ab12cd34.tmp", run / "state-000999.npz",
           run / "checkpoints" / ".policy_000007.pt.zz99yy88.tmp"]
    users = [run / "notes" / "policy_000001.pt", run / "notes" / ".x.abcdefgh.tmp", run / "my.tmp",
             run / ".draft.tmp", run / "menagerie" / "keep_me.pt", run / "evaluation" / "mine.txt"]
    for f in own + users:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"x")
    before = listing(run)
    with pytest.raises(RunDirError, match="another configuration"):  # refused: nothing is removed
        train(tiny_config(seed=6), run)
    assert listing(run) == before
    train(tiny_config(), run)  # accepted (finished: nothing new is committed)
    assert not [f for f in own if f.exists()]
    assert all(f.read_bytes() == b"x" for f in users)


# --- a kill during the first commit ----------------------------------------------------------------
def test_a_kill_during_the_first_commit_starts_afresh(tmp_path, finished_run):
    """The first commit wrote its policies and ``state-000001.npz`` (and left a temporary file) but not
    the manifest: nothing was committed, so the run starts afresh and ends as an uninterrupted one."""
    config = tiny_config()
    out = tmp_path / "run"
    out.mkdir()
    shutil.copy(finished_run / "config.yaml", out / "config.yaml")
    shutil.copytree(finished_run / "menagerie", out / "menagerie")
    (out / "state-000001.npz").write_bytes(b"half a state")
    (out / ".manifest.json.abcd1234.tmp").write_text("{")
    result = train(config, out)
    assert result.episodes == config.episodes
    for name in ("matches.csv", "menagerie/index.json", "checkpoints/index.json"):
        assert (out / name).read_text() == (finished_run / name).read_text()
    assert not list(out.glob("*.tmp")) and not (out / "state-000001.npz").exists()
    assert manifest(out)["generation"] == manifest(finished_run)["generation"]


def test_the_pickled_first_format_is_refused_naming_it(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "state.pt").write_bytes(pickle.dumps(Payload(tmp_path / "MARKER")))
    with pytest.raises(RunDirError, match="older format, selfplay-run/1"):
        train(tiny_config(), tmp_path / "run")
    assert not (tmp_path / "MARKER").exists()


# --- one writer, one kind ----------------------------------------------------------------------------
def test_evaluate_refuses_a_directory_being_written(world, capsys):
    run, _, _ = world
    writer = RunDir(run).lock()
    try:
        assert "is being written by another process" in cli_error(["evaluate", str(run), "--matches", "1"], capsys)
    finally:
        writer.unlock()


def test_evaluate_refuses_a_run_never_committed(tmp_path, finished_run, capsys):
    (tmp_path / "run").mkdir()
    shutil.copy(finished_run / "config.yaml", tmp_path / "run" / "config.yaml")
    assert "has no commit yet" in cli_error(["evaluate", str(tmp_path / "run")], capsys)


def test_each_command_refuses_a_directory_of_another_kind(world, tmp_path, capsys):
    run, _, _ = world
    before = listing(run)
    err = cli_error(["compare", "--quick", "--out", str(run)], capsys)
    assert "holds a training run (`selfplay train`); `selfplay compare` writes a comparison" in err
    err = cli_error(["league", "--quick", "--out", str(run)], capsys)
    assert "holds a training run (`selfplay train`)" in err and "writes a league run" in err
    assert "holds a training run" in cli_error(["sl", "--quick", "--out", str(run)], capsys)
    assert listing(run) == before
    comparison = tmp_path / "comparison"
    comparison.mkdir()
    (comparison / "compare_config.json").write_text("{}")
    assert "holds a comparison (`selfplay compare`)" in cli_error(["train", *TRAIN_ARGS, "--out", str(comparison)], capsys)
    sl = tmp_path / "sl"
    sl.mkdir()
    (sl / "sl_metrics.json").write_text("{}")
    assert "holds an SL run" in cli_error(["evaluate", str(sl)], capsys)
    assert "holds an SL run" in cli_error(["train", *TRAIN_ARGS, "--out", str(sl)], capsys)


def test_one_comparison_writes_a_directory_at_a_time(tmp_path, capsys):
    out = tmp_path / "c"
    holder = RunDir(out, kind="comparison").lock()
    try:
        err = cli_error(["compare", "--quick", "--schemes", "naive", "--out", str(out)], capsys)
        assert "is being written by another process" in err
    finally:
        holder.unlock()
    assert not (out / "compare_config.json").exists()


@pytest.mark.parametrize("command, marker_file", [("train", "config.yaml"), ("compare", "compare_config.json"),
                                                   ("evaluate", "config.yaml")])
def test_a_symlinked_marker_file_is_refused(tmp_path, finished_run, capsys, command, marker_file):
    """The files a command reads to learn what a directory holds are not followed out of it either."""
    out = tmp_path / "out"
    if command == "compare":
        out.mkdir()
    else:
        shutil.copytree(finished_run, out)
    outside = tmp_path / "outside.txt"
    outside.write_text((out / marker_file).read_text() if (out / marker_file).exists() else "{}")
    (out / marker_file).unlink(missing_ok=True)
    (out / marker_file).symlink_to(outside)
    args = {"train": ["train", *TRAIN_ARGS, "--out", str(out)], "evaluate": ["evaluate", str(out)],
            "compare": ["compare", "--quick", "--schemes", "naive", "--out", str(out)]}[command]
    assert "symbolic link" in cli_error(args, capsys)
