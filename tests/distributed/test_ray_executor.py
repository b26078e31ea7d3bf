"""``--ray`` for comparisons and evaluations: the same files as the local path, retried
tasks, clear errors, and no Ray import unless asked for. One local Ray instance for the module."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

ray = pytest.importorskip("ray")

from selfplay.evaluation.compare import CompareConfig, compare  # noqa: E402
from selfplay.training.distributed.executor import RayExecutor, RaySettings, check_address  # noqa: E402

# files whose bytes carry wall-clock time or the process that wrote them (inputs.json and rpp_cache.json
# name the checkpoint files by their SHA-256, and a torch.save archive records its temporary file's name)
TIMED = ("manifest.json", ".lock", "report.md", "summary.csv", "timings.json", "inputs.json", "rpp_cache.json")
TIMED_PARTS = ("tb",)


@pytest.fixture(scope="module")
def ray_instance():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def tiny() -> CompareConfig:
    return CompareConfig(schemes=["naive", "delta-uniform:delta=0.5"], episodes=48, checkpoints=2, matches=2,
                         num_envs=16, ppo={"horizon": 48, "minibatch_size": 16, "epochs": 1}, embedding=False, jobs=1)


def files_of(root: Path) -> dict[str, object]:
    """Every file's bytes; policy files (``torch.save`` archives, which record the name of the
    temporary file they were written to) as their loaded content."""
    out = {}
    for f in sorted(root.rglob("*")):
        rel = f.relative_to(root)
        if f.is_file() and f.name not in TIMED and not f.name.startswith("state-") and not set(rel.parts) & set(TIMED_PARTS):
            out[str(rel)] = _content(torch.load(f, weights_only=False)) if f.suffix == ".pt" else f.read_bytes()
    return out


def _content(obj):
    if isinstance(obj, torch.Tensor):
        return ("tensor", str(obj.dtype), tuple(obj.shape), obj.numpy().tobytes())
    if isinstance(obj, dict):
        return {k: _content(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_content(v) for v in obj]
    return obj


@pytest.mark.slow  # two tiny comparisons: about 35 s under a load of 10 on 2 cores
def test_compare_on_ray_writes_exactly_the_local_files(ray_instance, tmp_path):
    compare(tiny(), tmp_path / "local")
    compare(tiny(), tmp_path / "ray", executor=RayExecutor(RaySettings()))
    local, remote = files_of(tmp_path / "local"), files_of(tmp_path / "ray")
    assert set(local) == set(remote)
    assert any(name.endswith("matches.csv") for name in local) and any(name.endswith("winrate.npz") for name in local)
    differ = [name for name in local if local[name] != remote[name]]
    assert not differ, f"files that differ between the local and the Ray run: {differ}"
    a = pd.read_csv(tmp_path / "local" / "evaluation" / "summary.csv").drop(columns="seconds")
    b = pd.read_csv(tmp_path / "ray" / "evaluation" / "summary.csv").drop(columns="seconds")
    pd.testing.assert_frame_equal(a, b)


def _die_once(marker: str) -> int:
    """Kills its worker process the first time (a node or process failure), succeeds the second."""
    if not os.path.exists(marker):
        Path(marker).write_text("died")
        os._exit(1)
    return os.getpid()


def test_a_task_whose_worker_dies_is_retried(ray_instance, tmp_path):
    marker = str(tmp_path / "died-once")
    (pid,) = RayExecutor(RaySettings(max_retries=1)).map(_die_once, [marker])
    assert pid != os.getpid() and Path(marker).read_text() == "died"
    with pytest.raises(ray.exceptions.WorkerCrashedError):
        RayExecutor(RaySettings(max_retries=0)).map(_die_once, [str(tmp_path / "dies-again")])


def _threads(_) -> tuple[int, int]:
    """torch's thread count and a SMAC batch's inside a task."""
    import torch

    from selfplay.utils.threads import smac_threads

    return torch.get_num_threads(), smac_threads()


def test_ray_tasks_run_torch_and_smac_batches_on_the_settings_threads(ray_instance):
    """A SMAC batch above ``PARALLEL_MIN_GAMES`` inside a task would otherwise step on a thread per core in
    every worker, as tasks run side by side."""
    assert RayExecutor(RaySettings()).map(_threads, [0, 1]) == [(1, 1), (1, 1)]


def test_ray_settings_refuse_bad_values():
    assert check_address("auto") == "auto" and check_address("10.0.0.5:6379") == "10.0.0.5:6379"
    for bad in ("localhost", "host:port", "host:70000", ""):
        with pytest.raises(ValueError, match="ray_address must be 'auto' or HOST:PORT"):
            RaySettings(address=bad)
    with pytest.raises(ValueError, match="max_retries"):
        RaySettings(max_retries=-1)


def test_ray_is_imported_only_when_asked_for():
    code = ("import sys, selfplay.cli, selfplay.evaluation.compare, selfplay.training.league_loop, "
            "selfplay.training.distributed.executor, selfplay.training.distributed.league; "
            "from selfplay.cli import build_parser; build_parser().parse_args(['compare', '--out', 'x', '--ray']); "
            "assert 'ray' not in sys.modules, 'ray imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow  # about 18 s under a load of 10 on 2 cores
def test_train_and_evaluate_commands_on_ray_match_the_local_ones(ray_instance, tmp_path, capsys):
    import numpy as np

    from selfplay.cli import main

    common = ["--episodes", "32", "--num-envs", "16", "--checkpoints", "2", "--horizon", "32", "--minibatch-size", "16", "--epochs", "1"]
    assert main(["train", *common, "--out", str(tmp_path / "ray"), "--ray"]) == 0
    assert "on Ray" in capsys.readouterr().out
    assert main(["train", *common, "--out", str(tmp_path / "local")]) == 0
    assert (tmp_path / "ray" / "matches.csv").read_bytes() == (tmp_path / "local" / "matches.csv").read_bytes()
    assert main(["evaluate", str(tmp_path / "ray"), "--matches", "2", "--ray"]) == 0
    assert main(["evaluate", str(tmp_path / "local"), "--matches", "2"]) == 0
    a, b = (np.load(tmp_path / d / "evaluation" / "winrate.npz") for d in ("ray", "local"))
    assert all(np.array_equal(a[k], b[k]) for k in ("W", "counts", "nash", "ids"))


def test_a_bad_ray_address_is_refused_before_anything_starts(tmp_path, capsys):
    from selfplay.cli import main

    assert main(["compare", "--quick", "--out", str(tmp_path / "c"), "--ray-address", "nowhere"]) == 2
    assert "ray_address must be 'auto' or HOST:PORT" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_winrate_and_cross_population_blocks_as_ray_tasks_equal_the_local_matrices(ray_instance):
    """Blocks of 16 games: a 4-checkpoint matrix (60 games) is 4 blocks, 3 of them Ray tasks; the
    matrices equal the local ones exactly (stacked and per-policy play)."""
    import numpy as np
    from selfplay.agents.ppo import PPOLearner, ppo_config, stack_policies

    from selfplay.training.matches import cross_population, evaluate_population
    from selfplay.training.registry import make_env

    env = make_env("rirrps", 1, seed=0)

    def policies(n):
        return [PPOLearner(env.obs_size, env.n_actions, ppo_config("rps", body="mlp"), seed=s).snapshot() for s in range(n)]

    ray_blocks = RayExecutor(RaySettings())
    for stack in (stack_policies, None):
        local = evaluate_population("rirrps", policies(4), 10, seed=2, stack_policies=stack, max_games=16)
        remote = evaluate_population("rirrps", policies(4), 10, seed=2, stack_policies=stack, max_games=16,
                                     blocks=ray_blocks)
        assert np.array_equal(remote.W, local.W) and np.array_equal(remote.nash, local.nash)
        assert np.array_equal(remote.counts, local.counts) and remote.counts.max() == 10
    a, b = policies(4), policies(4)  # fresh ones: block 0 samples with the caller's policies' generators
    local = cross_population("rirrps", a[:2], a[2:], 12, seed=2, max_games=16)  # 48 games: 3 blocks
    assert np.array_equal(cross_population("rirrps", b[:2], b[2:], 12, seed=2, max_games=16, blocks=ray_blocks), local)


class _RecordingExecutor:
    """An executor that runs ``map`` here and records which functions went through it."""

    def __init__(self):
        self.functions = []

    def map(self, function, tasks, jobs=None):
        self.functions.append(function.__name__)
        return [function(t) for t in tasks]


def test_compare_sends_the_cross_seed_population_games_through_the_executor(tmp_path, figures_not_rendered):
    """With an executor (``--ray``) the RPP games of every seed pair are its tasks too, not the local
    pool's, and the values equal the local run's."""
    config = tiny()
    config.seeds = [0, 1]
    config.rpp_cross_seed = True
    executor = _RecordingExecutor()
    compare(config, tmp_path / "spy", executor=executor)
    assert executor.functions.count("rpp_pairs") == 1  # one map over every (scheme, seed) pair
    compare(config, tmp_path / "local")
    spy = pd.read_csv(tmp_path / "spy" / "evaluation" / "rpp_values_ppo-mlp.csv")
    local = pd.read_csv(tmp_path / "local" / "evaluation" / "rpp_values_ppo-mlp.csv")
    pd.testing.assert_frame_equal(spy, local)
    assert len(spy) == 2 * 4  # 2 schemes: one pair, 2 x 2 seed pairs, both orientations


LISTENING_ADDRESSES = r'''
import os, socket, struct, sys
from selfplay.training.distributed.executor import RaySettings, connect

ray = connect(RaySettings(num_cpus=1))
node = ray._private.worker._global_node
print("node", node.node_ip_address, ray.get_runtime_context().gcs_address)
print("task", ray.get(ray.remote(lambda: 7).remote()))
parents = {}
for stat in os.listdir("/proc"):
    if stat.isdigit():
        try:
            parents[int(stat)] = int(open(f"/proc/{stat}/stat").read().rsplit(")", 1)[1].split()[1])
        except OSError:
            pass
mine = {os.getpid()}
while True:
    more = {p for p, pp in parents.items() if pp in mine} - mine
    if not more:
        break
    mine |= more
inodes = set()
for pid in mine:
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        pass
for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
    for line in open(f"/proc/net/{table}").readlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
            raw = bytes.fromhex(fields[1].split(":")[0])
            words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            print("listen", socket.inet_ntop(family, words))
ray.shutdown()
'''


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs /proc to list sockets")
def test_a_local_instance_listens_on_loopback_only():
    """``--ray`` alone starts Ray on 127.0.0.1: its node address, and every TCP socket that Ray's
    processes listen on, are loopback addresses (nothing outside the machine can join or submit)."""
    result = subprocess.run([sys.executable, "-c", LISTENING_ADDRESSES], capture_output=True, text=True, timeout=300)
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stderr[-2000:]
    node = next(line for line in lines if line.startswith("node ")).split()
    assert node[1] == "127.0.0.1" and node[2].startswith("127.0.0.1:")
    assert "task 7" in lines  # and it runs tasks
    listening = [line.split()[1] for line in lines if line.startswith("listen ")]
    assert listening, "no listening socket of Ray's processes was found"
    assert all(a in ("127.0.0.1", "::1", "::ffff:127.0.0.1") for a in listening), listening
