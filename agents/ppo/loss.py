"""The PPO loss on one minibatch (Schulman et al. 2017, clipped surrogate; docs/design/selfplay.md §5)."""

from __future__ import annotations

import torch


def ppo_loss(new_log_prob, old_log_prob, advantages, values, returns, entropy,
             clip_coef: float, value_coef: float, entropy_coef: float, weight=None):
    """``(loss, stats)`` for one minibatch (all arguments of one shape, e.g. ``(batch,)``).

        ratio   = exp(log π(a|s) − log π_old(a|s))
        L_clip  = mean_w(max(−A·ratio, −A·clip(ratio, 1 − ε, 1 + ε)))
        L_value = ½ · mean((V(s) − R)²)
        loss    = L_clip + c_v · L_value − c_e · mean_w(entropy)

    ``mean_w(x) = Σ w·x / max(Σ w, 1)`` with the 0/1 ``weight`` (``None``: every sample, the plain
    mean): samples of weight 0 (a dead unit's forced no-op) carry no policy gradient, yet their value
    is still fitted. ``stats`` (detached scalars): ``policy_loss``, ``value_loss``, ``entropy``,
    ``approx_kl`` (mean_w of (ratio − 1) − log ratio, an unbiased low-variance KL(π_old‖π) estimate)
    and ``clip_fraction`` (mean_w share of samples with |ratio − 1| > ε).
    """
    if weight is None:
        def mean_w(x):
            return x.mean()
    else:
        total = weight.sum().clamp(min=1.0)

        def mean_w(x):
            return (x * weight).sum() / total
    log_ratio = new_log_prob - old_log_prob
    ratio = log_ratio.exp()
    policy_loss = mean_w(torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip_coef, 1 + clip_coef)))
    value_loss = 0.5 * ((values - returns) ** 2).mean()
    mean_entropy = mean_w(entropy)
    loss = policy_loss + value_coef * value_loss - entropy_coef * mean_entropy
    with torch.no_grad():
        stats = {
            "policy_loss": policy_loss.detach(),
            "value_loss": value_loss.detach(),
            "entropy": mean_entropy.detach(),
            "approx_kl": mean_w((ratio - 1) - log_ratio),
            "clip_fraction": mean_w(((ratio - 1).abs() > clip_coef).float()),
        }
    return loss, stats
