"""The PPO loss on one minibatch (Schulman et al. 2017, clipped surrogate; spec-selfplay §5)."""

from __future__ import annotations

import torch


def ppo_loss(new_log_prob, old_log_prob, advantages, values, returns, entropy,
             clip_coef: float, value_coef: float, entropy_coef: float):
    """``(loss, stats)`` for one minibatch (all arguments of one shape, e.g. ``(batch,)``).

        ratio   = exp(log π(a|s) − log π_old(a|s))
        L_clip  = mean(max(−A·ratio, −A·clip(ratio, 1 − ε, 1 + ε)))
        L_value = ½ · mean((V(s) − R)²)
        loss    = L_clip + c_v · L_value − c_e · mean(entropy)

    ``stats`` (detached scalars): ``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl``
    (mean of (ratio − 1) − log ratio, an unbiased low-variance KL(π_old‖π) estimate) and
    ``clip_fraction`` (share of samples with |ratio − 1| > ε).
    """
    log_ratio = new_log_prob - old_log_prob
    ratio = log_ratio.exp()
    policy_loss = torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip_coef, 1 + clip_coef)).mean()
    value_loss = 0.5 * ((values - returns) ** 2).mean()
    mean_entropy = entropy.mean()
    loss = policy_loss + value_coef * value_loss - entropy_coef * mean_entropy
    with torch.no_grad():
        stats = {
            "policy_loss": policy_loss.detach(),
            "value_loss": value_loss.detach(),
            "entropy": mean_entropy.detach(),
            "approx_kl": ((ratio - 1) - log_ratio).mean(),
            "clip_fraction": ((ratio - 1).abs() > clip_coef).float().mean(),
        }
    return loss, stats
