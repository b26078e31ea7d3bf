"""Crash-safe run directories (architecture.md "Run directory"; issue 14): a save is one commit, a
failure at any write of a save resumes from the last commit, one writer at a time, damage detected."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from selfplay.training.loop import TrainConfig, train
from selfplay.training.rundir import RunDir, RunDirError
from selfplay.utils import io as sio


def tiny_config(**kw) -> TrainConfig:
    base = dict(scheme="delta-uniform:delta=0", episodes=96, num_envs=16, checkpoints=2, seed=5,
                agent_settings={"horizon": 64, "epochs": 1}, tensorboard=False)
    base.update(kw)
    return TrainConfig(**base)


def outcome(run) -> tuple[str, str, str]:
    """What a finished run leaves: its matches, its menagerie index, its checkpoints index."""
    return ((run / "matches.csv").read_text(), (run / "menagerie" / "index.json").read_text(),
            (run / "checkpoints" / "index.json").read_text())


class Fault(Exception):
    """Stands for the process being killed at this instant."""


def run_with_fault(monkeypatch, out, config, generation_before: int, write: int, kind: str) -> int:
    """Train into ``out``; during the save after commit ``generation_before``, fail its ``write``-th
    file write (kind ``kill``: the process dies just before the rename; ``enospc``: the disk is full
    while the file is written). Returns the committed generation left behind (or -1 if no fault hit)."""
    counter = {"writes": 0, "armed": False}
    real_replace, real_fsync, real_commit = os.replace, os.fsync, RunDir.commit

    def commit(self, state, files):
        generation = real_commit(self, state, files)
        counter["armed"] = generation == generation_before  # the next save's writes are counted
        return generation

    def maybe_fail(stage: str) -> None:
        if counter["armed"] and stage == ("replace" if kind == "kill" else "fsync"):
            counter["writes"] += 1
            if counter["writes"] == write:
                raise Fault() if kind == "kill" else OSError(errno.ENOSPC, "No space left on device")

    def replace(src, dst, *a, **k):
        maybe_fail("replace")
        return real_replace(src, dst, *a, **k)

    def fsync(fd):
        maybe_fail("fsync")
        return real_fsync(fd)

    monkeypatch.setattr(RunDir, "commit", commit)
    monkeypatch.setattr(sio.os, "replace", replace)
    monkeypatch.setattr(sio.os, "fsync", fsync)
    try:
        train(config, out)
    except (Fault, sio.DiskFullError):
        pass
    else:
        return -1
    finally:
        monkeypatch.undo()
    return RunDir(out).load_commit_generation()


def killed_after_commit(monkeypatch, out, config, generation: int) -> None:
    real_commit = RunDir.commit

    def commit(self, state, files):
        g = real_commit(self, state, files)
        if g == generation:
            raise Fault()
        return g

    monkeypatch.setattr(RunDir, "commit", commit)
    with pytest.raises(Fault):
        train(config, out)
    monkeypatch.undo()


def test_a_failure_at_any_write_of_a_save_resumes_as_a_run_killed_at_the_previous_commit(tmp_path, monkeypatch):
    config = tiny_config()
    references = {}
    for g in (1, 2):  # killed right after commit g, then resumed to the end
        killed_after_commit(monkeypatch, tmp_path / f"ref{g}", config, g)
        train(config, tmp_path / f"ref{g}")
        references[g] = outcome(tmp_path / f"ref{g}")
    injected = survived = 0
    for kind in ("kill", "enospc"):
        for write in range(1, 40):
            out = tmp_path / f"{kind}{write}"
            left = run_with_fault(monkeypatch, out, config, 1, write, kind)
            if left == -1:  # the save has fewer writes than this
                break
            injected += 1
            assert left in (1, 2)
            result = train(config, out)  # resume
            assert result.episodes == config.episodes
            assert outcome(out) == references[left], f"{kind} at write {write} of the second save"
            assert not [f for f in out.rglob("*") if f.name.endswith(sio.TMP_SUFFIX)]
            survived += 1
    print(f"faults injected: {injected}, survived: {survived}")
    assert injected >= 10 and survived == injected


def test_one_writer_per_run_directory(tmp_path):
    run = RunDir(tmp_path / "run").lock()
    code = ("import sys\nfrom selfplay.training.rundir import RunDir, RunDirError\n"
            f"try:\n    RunDir({str(tmp_path / 'run')!r}).lock()\nexcept RunDirError as e:\n    print(e)\n    sys.exit(3)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 3
    assert f"pid {os.getpid()}" in result.stdout
    run.unlock()  # released: a new writer may go on at once
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0


def test_a_dead_writer_releases_the_lock(tmp_path):
    code = f"import os\nfrom selfplay.training.rundir import RunDir\nRunDir({str(tmp_path / 'run')!r}).lock()\nos._exit(9)\n"
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 9
    RunDir(tmp_path / "run").lock().unlock()


def test_damaged_directories_are_refused_with_what_is_damaged(tmp_path):
    config = tiny_config(episodes=48)
    train(config, tmp_path / "run")
    run = RunDir(tmp_path / "run")
    state = next(tmp_path.glob("run/state-*.pt"))
    # cut exports are repaired from the commit on resume
    rows = (tmp_path / "run" / "matches.csv").read_text().splitlines()
    (tmp_path / "run" / "matches.csv").write_text("\n".join(rows[:20]) + "\n")
    train(config, tmp_path / "run")
    assert len((tmp_path / "run" / "matches.csv").read_text().splitlines()) == len(rows)
    # a changed state file
    data = state.read_bytes()
    state.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(RunDirError, match="checksum"):
        train(config, tmp_path / "run")
    state.write_bytes(data)
    # a missing policy file the commit names
    policy = next((tmp_path / "run" / "menagerie").glob("policy_*.pt"))
    policy.rename(tmp_path / "aside.pt")
    with pytest.raises(RunDirError, match=f"{policy.name} is missing"):
        train(config, tmp_path / "run")
    (tmp_path / "aside.pt").rename(policy)
    # the state gone altogether
    state.unlink()
    with pytest.raises(RunDirError, match="is missing.*start afresh"):
        train(config, tmp_path / "run")
    assert run.has_commit()  # nothing was overwritten by the refused attempts


def test_resume_names_each_differing_setting_and_ignores_display_options(tmp_path):
    train(tiny_config(episodes=48), tmp_path / "run")
    with pytest.raises(RunDirError, match=r"num_envs: 16 in the directory, 8 now; seed: 5 in the directory, 6 now"):
        train(tiny_config(episodes=48, seed=6, num_envs=8), tmp_path / "run")
    assert train(tiny_config(episodes=48, progress=True), tmp_path / "run").episodes == 48


def _children(pid: int) -> list[int]:
    out = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid) and not fields.get("State", "").startswith("Z"):
            out.append(int(status.parent.name))
    return out


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to list processes")
def test_compare_workers_die_with_a_killed_parent(tmp_path):
    """kill -9 of ``selfplay compare`` must not leave workers training into its run directories."""
    cmd = [sys.executable, "-m", "selfplay", "compare", "--quick", "--schemes", "naive,delta-uniform:delta=0",
           "--episodes", "200000", "--checkpoints", "2", "--jobs", "2", "--no-embedding", "--out", str(tmp_path / "c")]
    parent = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(_children(parent.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = _children(parent.pid)
        assert len(workers) >= 2, "the comparison never started its workers"
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 60
    alive = workers
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [w for w in workers if _alive(w)]
    assert not alive, f"workers {alive} outlived their parent"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in state


def test_compare_refuses_repeated_values_and_other_settings_before_writing(tmp_path):
    from selfplay.cli import main

    assert main(["compare", "--quick", "--seeds", "0,0", "--out", str(tmp_path / "a")]) == 2
    assert main(["compare", "--quick", "--schemes", "naive,naive", "--out", str(tmp_path / "a")]) == 2
    assert not (tmp_path / "a").exists()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "compare_config.json").write_text('{"env": "rirrps", "episodes": 5}')
    before = (tmp_path / "b" / "compare_config.json").read_text()
    assert main(["compare", "--quick", "--out", str(tmp_path / "b")]) == 2
    assert (tmp_path / "b" / "compare_config.json").read_text() == before
