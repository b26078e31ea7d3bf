"""The asynchronous actor–learner (agents/alphastar/learner.py): the learner steps in a background
thread on its own network while the actors play with the last published weights."""

import numpy as np
from selfplay.agents.alphastar.actor import AlphaStarPolicy

from selfplay.training.games import GameRunner

from .conftest import commander_env, make_learner, params, same, tiny_net


def test_asynchronous_learner_publishes_weights_to_the_actors():
    env = commander_env(num_envs=2)
    learner = make_learner(env, asynchronous=True)
    assert learner.actor_net is not learner.net
    start = params(learner.actor_net)
    opponent = AlphaStarPolicy(tiny_net(env, seed=99), seed=1)
    runner = GameRunner(env, learner, lambda k: [("opp", opponent)] * k, np.random.default_rng(0))
    runner.start()
    results = []
    for _ in range(2000):
        if learner.ready():
            results.append(learner.update())
            if len(results) == 3:
                break
        elif learner.recorder is not None and len(learner.recorder.chunks) >= 4 * learner.config.batch_chunks:
            learner.wait()  # however slow the background thread runs, the games make progress in steps
        runner.restart([g.game for g in runner.step()])
    assert len(results) == 3, "the games did not produce three batches"
    assert results[0] == {}  # the first update only starts; later calls return the previous metrics
    assert results[1]["chunks"] == 2 and np.isfinite(results[1]["total"])
    learner.wait()
    # every finished update was taken by the actors, and they now act with the learner's weights
    # three updates of 1..batch_chunks chunks each (at most one chunk per lane: which lanes' chunks are
    # oldest depends on where the games end), the second's count reported with its metrics
    T, B = learner.config.chunk_length, learner.config.batch_chunks
    assert learner.weight_version == 3 and learner.samples % T == 0
    assert 3 * T + (results[1]["chunks"] - 1) * T <= learner.samples <= 3 * B * T
    assert same(params(learner.actor_net), params(learner.net))
    assert not same(start, params(learner.actor_net))
    snap = learner.snapshot()
    assert same(params(snap.net), params(learner.net)) and snap.weight_version == 3
    # a reset waits for the thread and puts the SL weights into both networks
    learner.restore(AlphaStarPolicy(learner.sl_net))
    assert same(params(learner.net), params(learner.sl_net)) and same(params(learner.actor_net), params(learner.sl_net))
