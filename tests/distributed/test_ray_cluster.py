"""A node removed from the cluster leaves the league running on the rest (docs/guides/ray.md, "Faults"):
a simulated cluster on this machine (``ray.cluster_utils.Cluster``: a head without CPUs, where the
driver and the coordinator run, and two worker nodes of one CPU each, one rollout worker on each)."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")

from ray.cluster_utils import Cluster  # noqa: E402

from selfplay.training.distributed.league import RayLeagueSettings, check_league_records, run_league_on_ray  # noqa: E402
from selfplay.training.league_loop import LeagueTrainConfig, LeagueTrainer  # noqa: E402


@pytest.mark.slow  # three Ray nodes and a league: about a minute on a loaded 2-core machine
def test_league_survives_the_removal_of_a_node(tmp_path):
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    nodes = [cluster.add_node(num_cpus=1) for _ in range(2)]
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        cluster.wait_for_nodes()
        config = LeagueTrainConfig(league="league:main=1,main_exploiters=1,league_exploiters=0", steps=1024,
                                   min_steps=300, max_steps=600, num_envs=16, matches=2,
                                   agent_settings={"horizon": 128, "epochs": 1}, tensorboard=False)
        removed = []

        def remove_a_node(progress, workers):
            if not removed and progress["updates"] >= 2:
                removed.append(progress["updates"])
                cluster.remove_node(nodes[1], allow_graceful=False)

        result = run_league_on_ray(config, tmp_path, RayLeagueSettings(workers=2, poll_seconds=0.05),
                                   on_poll=remove_a_node)
        assert removed and result.restarts >= 1  # the worker on the removed node died (and a replacement was asked for)
        assert result.progress["done"]
        # the driver names the node that left and the worker that replaced the one it held
        lost = [e for e in result.events if e["event"] == "worker lost" and e["node_lost"]]
        assert {e["node"] for e in lost} == {nodes[1].node_id} and all(e["replaced_by"] >= 2 for e in lost)
        counts = check_league_records(tmp_path)
        assert counts["games"] - counts["self_play_games"] == counts["payoff_games"] > 0
        trainer = LeagueTrainer(config, tmp_path)
        assert trainer.load() and all(p.steps >= 1024 for p in trainer.players)
    finally:
        ray.shutdown()
        cluster.shutdown()
