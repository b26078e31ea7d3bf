"""``benchmarks/smac_head_to_head.py``: games between two policies on the mirrored two-player battle."""

import pytest
import torch


class Attacker:
    """Attacks the lowest-numbered enemy it may (SMAC's actions 6+), else moves east (4), else its first
    legal action: walks into the fight and fires."""

    def initial_state(self, n):
        return None

    def act(self, obs, state, mask, start, deterministic=False, generator=None):
        attack = mask[..., 6:]
        first = attack.float().argmax(-1) + 6
        action = torch.where(attack.any(-1), first, torch.where(mask[..., 4], 4, mask.float().argmax(-1)))
        return action, state, {}


class Stopper(Attacker):
    """Stops (1) whenever it may, else its first legal action: never fires."""

    def act(self, obs, state, mask, start, deterministic=False, generator=None):
        return torch.where(mask[..., 1], 1, mask.float().argmax(-1)), state, {}


@pytest.fixture(scope="module")
def h2h(load_benchmark):
    return load_benchmark("smac_head_to_head")


def test_a_side_that_fires_beats_one_that_never_does_from_either_seat(h2h):
    """3m, 3 games per seat: marines that walk in and fire win every game against marines that stand
    still, in seat 0 and in seat 1 (the tuple is always seat 0's wins, seat 1's wins, draws)."""
    assert h2h.play("smac:3m", Attacker(), Stopper(), games=3, greedy=True, seed=0) == (3, 0, 0)
    assert h2h.play("smac:3m", Stopper(), Attacker(), games=3, greedy=False, seed=1) == (0, 3, 0)


def test_a_self_play_run_is_refused_as_the_vs_ai_run(h2h, tmp_path):
    from selfplay.training.loop import TrainConfig, train

    out = tmp_path / "selfplay"
    train(TrainConfig(env="smac:3m", agent="mappo", episodes=2, num_envs=2, checkpoints=1,
                      agent_settings={"rollout_length": 20, "chunk_length": 10, "epochs": 1}), out)
    with pytest.raises(ValueError, match="vs_ai_run must be a `selfplay train --opponent builtin-ai` run"):
        h2h.vs_ai_agent(str(out))


class Sampler(Attacker):
    """Samples a legal action uniformly with its own generator (as a frozen MAPPO actor does)."""

    def __init__(self):
        self.generator = torch.Generator().manual_seed(123)

    def act(self, obs, state, mask, start, deterministic=False, generator=None):
        flat = mask.reshape(-1, mask.shape[-1]).float()
        action = torch.multinomial(flat, 1, generator=self.generator).view(mask.shape[:-1])
        return action, state, {}


def test_a_pairing_plays_the_same_games_whatever_was_played_before(h2h):
    """Sampling policies are reseeded from the pairing's seed and seat: the games of a pairing do not
    depend on how far earlier pairings drew the policies' generators."""
    from selfplay.utils.seeding import derive_seed

    a, b = Sampler(), Sampler()
    first = h2h.play("smac:3m", a, b, games=4, greedy=False, seed=5)
    assert a.generator.initial_seed() == derive_seed(5, "head-to-head", 0)
    assert b.generator.initial_seed() == derive_seed(5, "head-to-head", 1)
    torch.rand(100, generator=a.generator)  # an earlier pairing drew from them
    assert h2h.play("smac:3m", a, b, games=4, greedy=False, seed=5) == first
