"""Crash-safe run directories (docs/design/run-directory.md): a save is one commit, a
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


def run_with_fault(monkeypatch, action, after_commits: int, write: int, kind: str) -> int:
    """Run ``action()``; after the ``after_commits``-th commit (in any run directory), fail the
    ``write``-th file write (kind ``kill``: the process dies just before a rename; ``enospc``: the disk
    is full while a file is written). Returns how many commits were made before the fault (-1: none hit)."""
    counter = {"writes": 0, "commits": 0}
    real_replace, real_fsync, real_commit = os.replace, os.fsync, RunDir.commit

    def commit(self, state, files):
        generation = real_commit(self, state, files)
        counter["commits"] += 1
        return generation

    def maybe_fail(stage: str) -> None:
        if counter["commits"] == after_commits and stage == ("replace" if kind == "kill" else "fsync"):
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
        action()
    except (Fault, sio.DiskFullError):
        return counter["commits"]
    finally:
        monkeypatch.undo()
    return -1


def killed_after_commits(monkeypatch, action, commits: int) -> None:
    """Run ``action()`` and kill it right after its ``commits``-th commit."""
    real_commit, counter = RunDir.commit, {"commits": 0}

    def commit(self, state, files):
        g = real_commit(self, state, files)
        counter["commits"] += 1
        if counter["commits"] == commits:
            raise Fault()
        return g

    monkeypatch.setattr(RunDir, "commit", commit)
    with pytest.raises(Fault):
        action()
    monkeypatch.undo()


def check_every_write_of_a_save(monkeypatch, tmp_path, make_action, outcome_of, after_commits: int,
                                kinds=("kill", "enospc")) -> tuple[int, int]:
    """Inject a failure at every write of the save after commit ``after_commits``; each faulty run, resumed,
    must end exactly as the run killed right after the last commit the fault left (resumed)."""
    references = {}
    for n in (after_commits, after_commits + 1):
        killed_after_commits(monkeypatch, make_action(tmp_path / f"ref{n}"), n)
        make_action(tmp_path / f"ref{n}")()
        references[n] = outcome_of(tmp_path / f"ref{n}")
    injected = survived = 0
    for kind in kinds:
        for write in range(1, 60):
            out = tmp_path / f"{kind}{write}"
            left = run_with_fault(monkeypatch, make_action(out), after_commits, write, kind)
            if left == -1:  # the save has fewer writes than this
                break
            injected += 1
            assert left in references, f"{kind} at write {write} left {left} commits"
            make_action(out)()  # resume
            assert outcome_of(out) == references[left], f"{kind} at write {write} after commit {after_commits}"
            assert not [f for f in out.rglob("*") if f.name.endswith(sio.TMP_SUFFIX)]
            survived += 1
    return injected, survived


def test_a_failure_at_any_write_of_a_save_resumes_as_a_run_killed_at_the_previous_commit(tmp_path, monkeypatch):
    config = tiny_config()
    injected, survived = check_every_write_of_a_save(
        monkeypatch, tmp_path, lambda out: (lambda: train(config, out)), outcome, after_commits=1)
    print(f"train: faults injected: {injected}, survived: {survived}")
    assert injected >= 8 and survived == injected  # the exports are appended to or replaced without fsync


def test_league_saves_survive_a_failure_at_any_write(tmp_path, monkeypatch):
    from selfplay.training.league_loop import LeagueTrainConfig, LeagueTrainer

    config = LeagueTrainConfig(league="league:main=1,main_exploiters=1,league_exploiters=0", steps=512,
                               min_steps=64, max_steps=128, num_envs=16, seed=2,
                               agent_settings={"horizon": 128, "minibatch_size": 64, "epochs": 1}, tensorboard=False)

    def league_outcome(run):
        return tuple((run / name).read_text() for name in ("matches.csv", "matchmaking.csv", "menagerie/index.json"))

    injected, survived = check_every_write_of_a_save(
        monkeypatch, tmp_path, lambda out: (lambda: LeagueTrainer(config, out).train()), league_outcome, after_commits=2)
    print(f"league: faults injected: {injected}, survived: {survived}")
    assert injected >= 10 and survived == injected


def test_compare_survives_a_failure_at_any_write_of_a_runs_save(tmp_path, monkeypatch, figures_not_rendered):
    from selfplay.evaluation.compare import CompareConfig, compare

    config = CompareConfig(schemes=["naive", "delta-uniform:delta=0"], episodes=64, checkpoints=2, matches=2,
                           num_envs=16, ppo={"horizon": 64, "minibatch_size": 32, "epochs": 1}, embedding=False,
                           jobs=1, bootstrap_resamples=200)

    def compare_outcome(out):
        runs = sorted((out / "runs").rglob("matches.csv"))
        summary = (out / "evaluation" / "summary.csv").read_text().splitlines()
        seconds = summary[0].split(",").index("seconds")
        return ([r.read_text() for r in runs],
                [",".join(v for i, v in enumerate(line.split(",")) if i != seconds) for line in summary])

    # the first run commits 3 times (2 updates and its end): the fault lands in the second run's first save
    injected, survived = check_every_write_of_a_save(
        monkeypatch, tmp_path, lambda out: (lambda: compare(config, out)), compare_outcome, after_commits=3,
        kinds=("kill",))
    print(f"compare: faults injected: {injected}, survived: {survived}")
    assert injected >= 5 and survived == injected


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
    state = next(tmp_path.glob("run/state-*.npz"))
    # cut exports are repaired from the commit on resume
    rows = (tmp_path / "run" / "matches.csv").read_text().splitlines()
    (tmp_path / "run" / "matches.csv").write_text("\n".join(rows[:20]) + "\n")
    train(config, tmp_path / "run")
    assert len((tmp_path / "run" / "matches.csv").read_text().splitlines()) == len(rows)
    # a changed state file
    data = state.read_bytes()
    state.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(RunDirError, match="does not match its SHA-256"):
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


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _checkpoint_episodes(run: Path) -> list[int]:
    import json

    return [e["tags"]["episode"] for e in json.loads((run / "checkpoints" / "index.json").read_text())["entries"]]


def test_a_finished_run_resumed_with_a_larger_budget_continues_to_it(tmp_path):
    """48 episodes (2 checkpoints), then the same run resumed with 96 (4: the spacing kept): it goes
    on from its commit at 48 and ends at 96. Nothing it recorded is lost: its first 48 games, metrics
    rows and both checkpoints are the 48-episode run's, which are also a fresh 96-episode run's first
    (nothing before the budget depends on it); config.yaml and the committed state record 96 and 4."""
    import yaml

    run, fresh = tmp_path / "run", tmp_path / "fresh"
    train(tiny_config(episodes=48, checkpoints=2), run)
    games, metrics, ckpts = _lines(run / "matches.csv"), _lines(run / "metrics.csv"), _checkpoint_episodes(run)
    assert len(games) == 1 + 48 and ckpts == [24, 48]
    train(tiny_config(episodes=96, checkpoints=4), fresh)
    assert _lines(fresh / "matches.csv")[:49] == games and _lines(fresh / "metrics.csv")[:len(metrics)] == metrics

    result = train(tiny_config(episodes=96, checkpoints=4), run)
    assert (result.episodes, result.checkpoints, result.extended_from) == (96, 4, 48)
    after = _lines(run / "matches.csv")
    assert len(after) == 1 + 96 and after[:49] == games
    assert _lines(run / "metrics.csv")[:len(metrics)] == metrics and len(_lines(run / "metrics.csv")) > len(metrics)
    assert _checkpoint_episodes(run) == _checkpoint_episodes(fresh) == [24, 48, 72, 96]
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert (config["episodes"], config["checkpoints"]) == (96, 4)
    assert {k: RunDir(run).load_commit()["config"][k] for k in ("episodes", "checkpoints")} == {"episodes": 96,
                                                                                                "checkpoints": 4}
    again = train(tiny_config(episodes=96, checkpoints=4), run)  # the extended run resumes as any finished run
    assert (again.episodes, again.extended_from) == (96, None) and _lines(run / "matches.csv") == after

    with pytest.raises(RunDirError, match="may only extend it \\(episodes >= 96\\), got 48"):
        train(tiny_config(episodes=48, checkpoints=2), run)
    with pytest.raises(RunDirError, match="keeps that spacing: pass checkpoints=8 \\(--checkpoints 8\\)"):
        train(tiny_config(episodes=192, checkpoints=4), run)
    with pytest.raises(RunDirError, match="episodes must be a multiple of 24 to keep it \\(next: 120\\), got 100"):
        train(tiny_config(episodes=100, checkpoints=4), run)
    with pytest.raises(RunDirError, match="seed: 5 in the directory, 6 now"):  # a budget and another setting
        train(tiny_config(episodes=192, checkpoints=8, seed=6), run)


def test_train_without_checkpoints_on_a_run_keeps_its_spacing(tmp_path, capsys):
    from selfplay.cli import main

    out = str(tmp_path / "run")
    base = ["train", "--env", "rirrps", "--scheme", "naive", "--num-envs", "16", "--seed", "1", "--out", out]
    assert main(base + ["--episodes", "40", "--checkpoints", "4"]) == 0
    capsys.readouterr()
    assert main(base + ["--episodes", "80"]) == 0  # --checkpoints left out: the run's spacing (10 episodes)
    text = capsys.readouterr().out
    assert "extended the run from 40 to 80 episodes (8 checkpoints)" in text and "checkpoints 8" in text
    assert _checkpoint_episodes(tmp_path / "run") == [10, 20, 30, 40, 50, 60, 70, 80]


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


def test_a_kill_at_any_write_before_the_first_commit_starts_afresh(tmp_path, monkeypatch):
    """Killed before its first manifest (config, first policy files, first state written or not), a
    run holds no commit: run again, it starts afresh and ends exactly as an uninterrupted run."""
    config = tiny_config(episodes=16)
    train(config, tmp_path / "reference")
    reference = outcome(tmp_path / "reference")
    injected = 0
    for write in range(1, 20):
        out = tmp_path / f"kill{write}"
        left = run_with_fault(monkeypatch, lambda: train(config, out), 0, write, "kill")
        if left != 0:  # this write came after the first commit: every earlier one was tried
            break
        injected += 1
        assert not (out / "manifest.json").exists()
        train(config, out)
        assert outcome(out) == reference, f"kill at write {write} of the first commit"
        assert not [f for f in out.rglob("*") if f.name.endswith(sio.TMP_SUFFIX)]
    assert injected >= 4  # config.yaml, the first policies, the state, the manifest
