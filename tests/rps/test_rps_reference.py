"""Fixed reference agents and the embedding basis (docs/design/selfplay.md §4, §6)."""

import numpy as np
import pytest
import torch
from selfplay.agents.reference import FixedActionPolicy, UniformRandomPolicy, embedding_basis, reference_agents
from selfplay.envs.rps import RPSLS, RirRPS

from selfplay.core.policy import Policy


def test_fixed_and_random_policies():
    rock = FixedActionPolicy(0, 3, "rock")
    assert isinstance(rock, Policy)
    action, state, _ = rock.act(torch.zeros(5, 30), None)
    assert action.tolist() == [0] * 5 and state is None
    with pytest.raises(ValueError, match="mask"):
        rock.act(torch.zeros(2, 30), None, torch.tensor([[False, True, True], [True, True, True]]))
    with pytest.raises(ValueError, match="action"):
        FixedActionPolicy(3, 3)

    n = 30000
    random_agent = UniformRandomPolicy(3, seed=4)
    action, _, _ = random_agent.act(torch.zeros(n, 30), None)
    freq = torch.bincount(action, minlength=3).float() / n
    assert torch.all((freq - 1 / 3).abs() < 4 * (2 / 9 / n) ** 0.5)
    assert torch.equal(UniformRandomPolicy(3, seed=4).act(torch.zeros(n, 30), None)[0], action)
    mask = torch.tensor([[True, False, True]]).expand(1000, 3)
    masked, _, _ = random_agent.act(torch.zeros(1000, 30), None, mask)
    assert set(masked.tolist()) == {0, 2}
    assert [a.name for a in reference_agents(3, ["rock", "paper", "scissors"])] == ["rock", "paper", "scissors"]


def test_embedding_basis_rirrps():
    basis = embedding_basis(RirRPS(400, seed=0), episodes=1000, seed=0)
    assert list(basis) == ["rock", "paper", "scissors"]
    for own, (name, traj) in enumerate(basis.items()):
        assert traj.shape == (1000, 90) and traj.dtype == np.float32
        slots = traj.reshape(1000, 9, 10).argmax(-1)
        assert np.all(traj.reshape(1000, 9, 10).sum(-1) == 1) and np.all(slots < 9)
        assert np.all(slots // 3 == own)  # the fixed agent's own move comes first
        other = np.bincount((slots % 3).ravel(), minlength=3) / slots.size
        assert np.all(np.abs(other - 1 / 3) < 0.02)  # the random opponent is uniform
    again = embedding_basis(RirRPS(400, seed=1), episodes=1000, seed=0)
    assert all(np.array_equal(basis[k], again[k]) for k in basis)


def test_embedding_basis_other_game():
    basis = embedding_basis(RPSLS(64, seed=0), episodes=100, seed=0)
    assert list(basis) == ["rock", "paper", "scissors", "lizard", "spock"]
    assert all(t.shape == (100, 9 * 26) for t in basis.values())
    with pytest.raises(ValueError, match="episodes"):
        embedding_basis(RirRPS(4), episodes=0)
