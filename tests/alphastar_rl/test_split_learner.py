"""The AlphaStar actor–learner split across processes (the Ray league's learner actors): ``take_batch`` on the acting side and
``update_on`` on the learning side do what ``update`` does in one process, and every chunk carries the
oldest weight version its decisions were made with (the policy lag V-trace corrects)."""

import torch
from selfplay.agents.alphastar.config import HEADS
from selfplay.agents.alphastar.learner import ChunkRecorder

from .conftest import commander_env, make_learner, params, same
from .test_actor_learner import play_until


def test_chunks_carry_the_oldest_weight_version_of_their_decisions():
    T = 2
    rec = ChunkRecorder(1, T, obs_size=1, action_size=1, state_shape=(1, 1))
    lane = torch.tensor([0])

    def decide(version):
        rec.add(lane, torch.zeros(1, 1), torch.zeros(1, 1, dtype=torch.long), {h: torch.zeros(1) for h in HEADS},
                (torch.zeros(1, 1, 1), torch.zeros(1, 1, 1)), torch.zeros(1, dtype=torch.bool), version=version)

    for v in (3, 4, 7):  # T + 1 decisions: the chunk's first T were made with versions 3 and 4
        decide(v)
    for v in (8, 9):  # the next chunk starts at the decision of version 7 (the bootstrap of the first)
        decide(v)
    first, second = rec.chunks
    assert first.version == 3 and second.version == 7


def test_take_batch_then_update_on_is_update():
    here, actor, elsewhere = (make_learner(commander_env(num_envs=2)) for _ in range(3))  # same seeds, same weights
    play_until(here, commander_env(num_envs=2), chunks_per_lane=2)
    play_until(actor, commander_env(num_envs=2), chunks_per_lane=2)  # the same games and decisions
    assert all(c.version == 0 for c in here.recorder.chunks)
    batch = actor.take_batch()
    assert sorted(c.lane for c in batch) == [0, 1] and len(actor.recorder.chunks) == len(here.recorder.chunks) - 2
    metrics_here = here.update()
    metrics_elsewhere = elsewhere.update_on(batch)  # a learner that never played: only the chunks came
    assert same(params(here.net), params(elsewhere.net)) and not same(params(here.net), params(actor.net))
    assert metrics_here == metrics_elsewhere and elsewhere.weight_version == here.weight_version == 1
    # decisions made after the update carry the new version
    play_until(here, commander_env(num_envs=2), chunks_per_lane=4)
    assert max(c.version for c in here.recorder.chunks) == 1


def test_update_on_refuses_an_empty_batch():
    import pytest

    learner = make_learner(commander_env(num_envs=1))
    assert learner.take_batch() == []
    with pytest.raises(ValueError, match="batch must hold at least one Chunk"):
        learner.update_on([])
