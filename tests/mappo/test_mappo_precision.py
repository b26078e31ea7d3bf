"""The update's products with bfloat16 operands (``MAPPOConfig.update_precision``): the GRU written for it
(``GRUSequence``) is torch's ``GRUCell`` with resets, its hand-written backward the true gradient, and the
bf16 update stays close to the float32 one while leaving the float32 path as it was."""

import pytest
import torch
from selfplay.agents.mappo import MAPPOLearner, mappo_config
from selfplay.agents.mappo.network import GRUSequence, RecurrentBase, linear
from selfplay.envs.smac import SMACBattle

from selfplay.utils.threads import torch_threads
from tests.mappo.test_mappo_learner import SMALL, run_updates

L, N, D, H = 6, 5, 7, 4


def base_and_data(dtype=torch.float64):
    g = torch.Generator().manual_seed(0)
    base = RecurrentBase(D, H, 1).to(dtype)
    base.init_weights(torch.Generator().manual_seed(1))
    with torch.no_grad():  # biases and an affine LayerNorm that are not zero / the identity
        for p in base.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=dtype))
    x = torch.randn(L, N, D, generator=g, dtype=dtype) * 2 + 1
    h0 = torch.randn(N, H, generator=g, dtype=dtype)
    starts = torch.rand(L, N, generator=g) < 0.3
    starts[2, 1] = True
    return base, x, h0, starts


def gru_cell_unroll(base, x, h0, starts):
    """The reference: torch's ``GRUCell`` step by step, the state zeroed where an episode starts."""
    z, keep, h, out = base.mlp(base.feature_norm(x)), (~starts).to(x.dtype)[..., None], h0, []
    for t in range(x.shape[0]):
        h = base.gru(z[t], h * keep[t])
        out.append(h)
    return torch.stack(out)


def gru_sequence_unroll(base, x, h0, starts):
    g, z = base.gru, base.mlp(base.feature_norm(x))
    gi = linear(z, g.weight_ih, g.bias_ih + torch.cat([g.bias_hh[:2 * H], g.bias_hh.new_zeros(H)]))
    return GRUSequence.apply(gi, h0, (~starts).to(x.dtype)[..., None], g.weight_hh, g.bias_hh[2 * H:], None)


def test_gru_sequence_is_torch_gru_cell_with_resets_values_and_gradients():
    base, x, h0, starts = base_and_data()
    h0.requires_grad_(True)
    ref, ours = gru_cell_unroll(base, x, h0, starts), gru_sequence_unroll(base, x, h0, starts)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-12)
    w = torch.randn(ref.shape, generator=torch.Generator().manual_seed(3), dtype=ref.dtype)
    params = [p for name, p in base.named_parameters() if not name.startswith("out_norm")] + [h0]
    for a, b in zip(torch.autograd.grad((ref * w).sum(), params), torch.autograd.grad((ours * w).sum(), params)):
        torch.testing.assert_close(b, a, rtol=0, atol=1e-10)
    # a reset cuts the sequence: nothing after step 2 of sequence 1 depends on its earlier inputs
    x2 = x.clone()
    x2[:2, 1] += 5.0
    torch.testing.assert_close(gru_sequence_unroll(base, x2, h0, starts)[2:, 1], ours[2:, 1])


def test_gru_sequence_backward_passes_gradcheck():
    g = torch.Generator().manual_seed(4)
    args = [torch.randn(*s, generator=g, dtype=torch.float64, requires_grad=True) for s in ((L, N, 3 * H), (N, H))]
    keep = (torch.rand(L, N, 1, generator=g) > 0.3).double()
    w_hh, b_hn = (torch.randn(*s, generator=g, dtype=torch.float64, requires_grad=True) for s in ((3 * H, H), (H,)))
    assert torch.autograd.gradcheck(lambda gi, h0, w, b: GRUSequence.apply(gi, h0, keep, w, b, None),
                                    (*args, w_hh, b_hn))


def test_bfloat16_products_stay_close_to_float32_and_keep_float32_outputs_and_gradients():
    base, x, h0, starts = base_and_data(torch.float32)
    f32 = base.unroll(base.normalize(x), h0, starts, normalized=True)
    bf16 = base.unroll(base.normalize(x, torch.bfloat16), h0, starts, normalized=True)
    assert bf16.dtype == torch.float32
    assert not torch.equal(bf16, f32)  # the products did take rounded operands
    torch.testing.assert_close(bf16, f32, rtol=0, atol=0.05)  # LayerNorm'd features: unit scale
    w = torch.randn(f32.shape, generator=torch.Generator().manual_seed(5))
    params = list(base.parameters())
    for a, b in zip(torch.autograd.grad((f32 * w).sum(), params), torch.autograd.grad((bf16 * w).sum(), params)):
        assert b.dtype == torch.float32
        cos = torch.nn.functional.cosine_similarity(a.flatten(), b.flatten(), dim=0)
        assert cos > 0.99 and (b.norm() / a.norm() - 1).abs() < 0.05


def test_a_bfloat16_update_stays_close_to_the_float32_update():
    """Two updates on 3m from the same seed: the same rollout (acting is float32 either way), nearly the same
    losses, and weights that moved the same way."""
    with torch_threads(1):
        (a, metrics_a, actions_a), (b, metrics_b, actions_b) = (run_updates(0, 1, update_precision=p)
                                                                for p in ("float32", "bfloat16"))
    assert torch.equal(actions_a[:20], actions_b[:20])  # the first rollout, before any update
    assert metrics_b[0]["policy_loss"] == pytest.approx(metrics_a[0]["policy_loss"], abs=2e-3)
    assert metrics_b[0]["value_loss"] == pytest.approx(metrics_a[0]["value_loss"], rel=0.02)
    assert not all(torch.equal(x, b.network.state_dict()[k]) for k, x in a.network.state_dict().items())  # it took effect
    start = MAPPOLearner.for_battle(SMACBattle("3m", num_envs=4, two_player=False, seed=7), mappo_config(**SMALL),
                                    seed=0).network.state_dict()  # run_updates's learner before its update
    for name, x in a.network.state_dict().items():
        y, x0 = b.network.state_dict()[name], start[name]
        if torch.equal(x, x0):
            continue
        cos = torch.nn.functional.cosine_similarity((x - x0).flatten(), (y - x0).flatten(), dim=0)
        assert cos > 0.9, name


def test_update_precision_is_named_when_wrong():
    with pytest.raises(ValueError, match="update_precision must be one of"):
        mappo_config(update_precision="float16")
