"""PolicyStack equals per-policy inference; policy checkpoints round-trip."""

import pytest
import torch
from selfplay.agents.ppo import PPOConfig, PPOLearner, load_policy, save_policy, stack_policies

OBS, ACTIONS = 30, 3


def population(body, size=5):
    """``size`` frozen policies; the policy heads are scaled up (initialised with gain 0.01, their logits
    would nearly tie, and a greedy comparison between two computation paths would test rounding)."""
    policies = [PPOLearner(OBS, ACTIONS, PPOConfig(body=body), seed=s).snapshot() for s in range(size)]
    with torch.no_grad():
        for policy in policies:
            policy.network.policy_head.weight.mul_(100.0)
    return policies


@pytest.mark.parametrize("body, layout", [("mlp", "shuffled"), ("lstm", "shuffled"), ("mlp", "policy-major"),
                                           ("lstm", "policy-major"), ("mlp", "uneven"), ("lstm", "uneven")])
def test_stack_equals_per_policy_inference(body, layout, greedy_actions_agree):
    policies = population(body)
    stack = stack_policies(policies)
    stack.BLOCK_ELEMENTS = 64 * 256 * 8  # several blocks of groups even for this small batch
    gen = torch.Generator().manual_seed(0)
    batch = 40
    if layout == "shuffled":
        index = torch.randint(0, 4, (batch,), generator=gen)  # policy 4 unused: groups may be absent
    elif layout == "uneven":  # one policy plays most rows: its group is cut into several segments
        index = torch.cat([torch.zeros(31, dtype=torch.long), torch.tensor([1, 2, 2, 3, 3, 3, 4, 4, 4])])
        index = index[torch.randperm(batch, generator=gen)]
    else:
        index = torch.arange(5).repeat_interleave(8)  # no regrouping copies (a view of the batch)
    mask = torch.rand(batch, ACTIONS, generator=gen) < 0.7
    mask[:, 0] = True
    state = None if body == "mlp" else (torch.randn(batch, 64, generator=gen), torch.randn(batch, 64, generator=gen))
    start = torch.rand(batch, generator=gen) < 0.3
    for step in range(2):  # the second step feeds back the stack's own recurrent state
        obs = torch.rand(batch, OBS, generator=gen)
        before = None if state is None else (state[0].clone(), state[1].clone())
        action, new_state, info = stack.act(obs, state, index, mask, None if step else start, deterministic=True)
        if state is not None:  # the caller's state is never written to
            assert torch.equal(before[0], state[0]) and torch.equal(before[1], state[1])
        for p, policy in enumerate(policies):
            rows = index == p
            sub_state = None if state is None else (state[0][rows], state[1][rows])
            a, s, ref = policy.act(obs[rows], sub_state, mask[rows], None if step else start[rows], deterministic=True)
            assert torch.allclose(info["logits"][rows], ref["logits"], atol=1e-5)
            assert torch.allclose(info["value"][rows], ref["value"], atol=1e-5)
            greedy_actions_agree(action[rows], a, ref["logits"])
            if body == "lstm":
                assert torch.allclose(new_state[0][rows], s[0], atol=1e-5)
                assert torch.allclose(new_state[1][rows], s[1], atol=1e-5)
        state = new_state
    assert torch.all(mask[torch.arange(batch), action])


@pytest.mark.parametrize("body", ["mlp", "lstm"])
@pytest.mark.parametrize("layout", ["even", "uneven", "tiny groups", "no reset"])
def test_grouped_forward_is_forward_bit_for_bit(body, layout, monkeypatch):
    """Rows grouped by policy, each policy's rows multiplied in place (``forward_grouped``), give the logits
    and state of ``forward``'s padded blocks. On this machine's BLAS they are bit for bit the same (a row's
    product does not depend on the rows beside it); the test allows float round-off so that it holds on
    any BLAS, and checks the grouping, the windows and the resets, not the library's summation order."""
    policies = population(body, 6)
    stack = stack_policies(policies)
    stack.BLOCK_ELEMENTS = 64 * 256 * 8  # forward: several blocks of segments
    gen = torch.Generator().manual_seed(1)
    sizes = {"even": [100] * 6, "uneven": [700, 3, 150, 0, 90, 1], "tiny groups": [400, 1, 2, 3, 200, 2],
             "no reset": [64, 80, 0, 300, 5, 70]}[layout]  # 1–3 rows: a product window of MIN_PRODUCT_ROWS
    index = torch.arange(6).repeat_interleave(torch.tensor(sizes))
    batch = len(index)
    obs = torch.rand(batch, OBS, generator=gen)
    state = None if body == "mlp" else (torch.randn(batch, 64, generator=gen), torch.randn(batch, 64, generator=gen))
    start = None if layout == "no reset" else torch.rand(batch, generator=gen) < 0.3
    logits, _, new_state = stack.forward(obs, state, index, start)
    calls = []
    monkeypatch.setattr(stack, "forward", lambda *a: calls.append(1))  # the grouped path must not hand over
    grouped_logits, grouped_state = stack.forward_grouped(obs, state, index, start)
    assert not calls
    close(grouped_logits, logits)
    if body == "lstm":
        close(grouped_state[0], new_state[0])
        close(grouped_state[1], new_state[1])
    monkeypatch.undo()
    shuffled = torch.randperm(batch, generator=gen)  # not grouped: forward computes them
    close(stack.forward_grouped(obs[shuffled], None, index[shuffled])[0],
          stack.forward(obs[shuffled], None, index[shuffled])[0])


def close(actual, expected):
    """Equal up to float32 round-off (rtol 1e-5, atol 1e-6)."""
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6)


def test_stack_samples_each_rows_own_distribution():
    policies = population("mlp", 2)
    # Make the two policies near-deterministic and different: policy 0 plays 0, policy 1 plays 2.
    for policy, favourite in zip(policies, (0, 2)):
        policy.network.policy_head.bias.copy_(torch.full((ACTIONS,), -10.0))
        policy.network.policy_head.bias[favourite] = 10.0
    stack = stack_policies(policies, seed=1)
    index = torch.arange(1000) % 2
    action, _, _ = stack.act(torch.rand(1000, OBS), None, index)
    assert torch.equal(action, index * 2)


def test_stack_rejects_mixed_specs_and_bad_indices():
    with pytest.raises(ValueError, match="frozens"):
        stack_policies(population("mlp", 1) + population("lstm", 1))
    with pytest.raises(ValueError, match="frozens"):
        stack_policies([])
    stack = stack_policies(population("mlp", 2))
    with pytest.raises(ValueError, match="policy_index"):
        stack.act(torch.zeros(3, OBS), None, torch.tensor([0, 1, 2]))


@pytest.mark.parametrize("body", ["mlp", "lstm"])
def test_save_and_load_policy(tmp_path, body):
    frozen = population(body, 1)[0]
    path = save_policy(frozen, tmp_path / "menagerie" / "policy_000.pt")
    assert path.stat().st_size < 200_000
    loaded = load_policy(path)
    assert loaded.spec == frozen.spec and loaded.weight_version == frozen.weight_version
    obs = torch.rand(8, OBS)
    a1, s1, i1 = frozen.act(obs, None)
    a2, s2, i2 = loaded.act(obs, None)
    assert torch.equal(i1["logits"], i2["logits"]) and torch.equal(a1, a2)  # same weights, same sampling seed
    (tmp_path / "junk.pt").write_bytes(b"not a policy")
    with pytest.raises(Exception):
        load_policy(tmp_path / "junk.pt")
    torch.save({"format": "other"}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="path"):
        load_policy(tmp_path / "other.pt")


def test_a_stack_needs_one_spec_of_frozen_policies():
    with pytest.raises(ValueError, match="at least one"):
        stack_policies([])
    with pytest.raises(ValueError, match="one network spec"):
        stack_policies(population("mlp", 2) + population("lstm", 1))
    with pytest.raises(ValueError, match="FrozenPPOPolicy"):
        stack_policies([PPOLearner(OBS, ACTIONS, seed=0)])
