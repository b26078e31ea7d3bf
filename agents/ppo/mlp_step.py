"""The PPO loss and its gradient for the MLP actor-critic, written out (no autograd graph).

The same loss as ``loss.ppo_loss`` on the same minibatch, for ``network.ActorCritic`` with the MLP body
and no action mask: a tiny network whose update is dominated by per-operation overhead, of which the
autograd graph (recording, then one backward node per operation) is the largest part. Forward:

    h1 = tanh(x W1ᵀ + b1),  h2 = tanh(h1 W2ᵀ + b2),  z = h2 Wπᵀ + bπ,  V = h2 Wvᵀ + bv
    ℓ = log_softmax(z),  p = exp ℓ,  r = exp(ℓ[a] − log π_old(a)),  H = −Σ p ℓ
    loss = mean(max(−A r, −A clip(r, 1 − ε, 1 + ε))) + c_v · ½ mean((V − R)²) − c_e · mean(H)

Backward (B samples; the subgradients autograd takes: ``max`` splits the gradient evenly between
equal arguments, ``clamp`` passes it inside [1 − ε, 1 + ε] bounds included):

    ∂loss/∂r     = −A (w₁ + w₂ · 1[1 − ε ≤ r ≤ 1 + ε]) / B,  w₁ = 1[−A r > −A clip] + ½ · 1[equal],  w₂ = 1 − w₁
    ∂loss/∂ℓ     = onehot(a) · r · ∂loss/∂r + (c_e / B) · p (ℓ + 1)
    ∂loss/∂z     = ∂loss/∂ℓ − p · Σ ∂loss/∂ℓ,    ∂loss/∂V = c_v (V − R) / B
    ∂loss/∂h2    = ∂z Wπ + ∂V Wv,  ∂(h2 pre-activation) = ∂h2 (1 − h2²),  and so on down to W1

``tests/ppo/test_ppo_learning.py`` checks every parameter's gradient and the statistics against
autograd on ``ppo_loss``. ``heads_ppo_step`` is the heads' part (from ∂loss/∂z and ∂loss/∂V to
∂loss/∂h2), which the LSTM's written-out step (``lstm_step``) shares.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def mlp_ppo_step(network, obs, actions, old_log_probs, advantages, returns, clip_coef: float, value_coef: float,
                 entropy_coef: float) -> dict:
    """Set every parameter's ``.grad`` of ``network`` (MLP body, no mask) to the gradient of the PPO loss
    on this minibatch (all arguments ``(B, ...)``); returns the statistics ``ppo_loss`` returns."""
    body = network.body
    w1, b1, w2, b2 = body.fc1.weight, body.fc1.bias, body.fc2.weight, body.fc2.bias
    h1 = torch.tanh(torch.addmm(b1, obs, w1.t()))
    h2 = torch.tanh(torch.addmm(b2, h1, w2.t()))
    d_h2, stats = heads_ppo_step(network, h2, actions, old_log_probs, advantages, returns, clip_coef, value_coef,
                                 entropy_coef)
    d_z2 = d_h2 * (1 - h2 * h2)
    d_z1 = (d_z2 @ w2) * (1 - h1 * h1)
    for param, grad in ((w1, d_z1.t() @ obs), (b1, d_z1.sum(0)), (w2, d_z2.t() @ h1), (b2, d_z2.sum(0))):
        param.grad = grad
    return stats


@torch.no_grad()
def heads_ppo_step(network, features, actions, old_log_probs, advantages, returns, clip_coef: float,
                   value_coef: float, entropy_coef: float) -> tuple[torch.Tensor, dict]:
    """The heads' part of the written-out step, for any body: from the body's ``features`` ``(B, hidden)``,
    set the policy and value heads' ``.grad`` to the PPO loss's gradient (no mask) and return
    ``(∂loss/∂features, statistics)`` (the statistics ``ppo_loss`` returns)."""
    wp, bp, wv, bv = (network.policy_head.weight, network.policy_head.bias, network.value_head.weight,
                      network.value_head.bias)
    B = features.shape[0]
    logits = torch.addmm(bp, features, wp.t())
    values = torch.addmm(bv, features, wv.t())  # (B, 1)
    log_probs = torch.log_softmax(logits, dim=-1)
    probs = log_probs.exp()
    picked = actions[:, None]
    log_ratio = log_probs.gather(-1, picked).squeeze(-1) - old_log_probs
    ratio = log_ratio.exp()
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1 - clip_coef, 1 + clip_coef)
    inside = ((ratio >= 1 - clip_coef) & (ratio <= 1 + clip_coef)).float()
    first = (unclipped > clipped).float() + 0.5 * (unclipped == clipped).float()
    d_ratio = -advantages * (first + (1 - first) * inside) / B
    plogp = probs * log_probs
    entropy = -plogp.sum(-1)
    d_log_probs = (plogp + probs) * (entropy_coef / B)
    d_log_probs.scatter_add_(-1, picked, (d_ratio * ratio)[:, None])
    d_logits = d_log_probs - probs * d_log_probs.sum(-1, keepdim=True)
    error = values.squeeze(-1) - returns
    d_values = (error * (value_coef / B))[:, None]
    d_features = torch.addmm(d_values * wv, d_logits, wp)
    for param, grad in ((wp, d_logits.t() @ features), (bp, d_logits.sum(0)), (wv, d_values.t() @ features), (bv, d_values.sum(0))):
        param.grad = grad
    return d_features, {
        "policy_loss": torch.maximum(unclipped, clipped).mean(),
        "value_loss": 0.5 * (error * error).mean(),
        "entropy": entropy.mean(),
        "approx_kl": ((ratio - 1) - log_ratio).mean(),
        "clip_fraction": ((ratio - 1).abs() > clip_coef).float().mean(),
    }
