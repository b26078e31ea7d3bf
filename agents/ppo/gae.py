"""Generalised advantage estimation (Schulman et al. 2016), batched over games."""

from __future__ import annotations

import torch


def compute_gae(rewards, values, dones, last_value, gamma: float, gae_lambda: float):
    """Advantages and returns for a rollout of ``T`` steps of ``N`` games.

    ``rewards``, ``values``, ``dones``: ``(T, N)``; ``dones[t]`` is True when the episode ended with
    step ``t`` (then nothing is bootstrapped across it). ``last_value``: ``(N,)``, the value of the
    state after the last step.

        δ_t = r_t + γ · V_{t+1} · (1 − d_t) − V_t
        A_t = δ_t + γ · λ · (1 − d_t) · A_{t+1},      A_T = 0, V_T = last_value
        returns_t = A_t + V_t
    """
    if rewards.shape != values.shape or rewards.shape != dones.shape or last_value.shape != rewards.shape[1:]:
        raise ValueError(
            "rewards, values and dones must share one shape (T, N) and last_value must be (N,); got "
            f"{tuple(rewards.shape)}, {tuple(values.shape)}, {tuple(dones.shape)}, {tuple(last_value.shape)}"
        )
    not_done = 1.0 - dones.to(values.dtype)
    advantages = torch.zeros_like(values)
    next_advantage = torch.zeros_like(last_value)
    next_value = last_value
    for t in reversed(range(rewards.shape[0])):
        delta = rewards[t] + gamma * next_value * not_done[t] - values[t]
        next_advantage = delta + gamma * gae_lambda * not_done[t] * next_advantage
        advantages[t] = next_advantage
        next_value = values[t]
    return advantages, advantages + values


def standardize_advantages(advantages, weight=None):
    """``(A − mean) / (std + 1e-8)`` with the mean and the population standard deviation taken over the
    samples whose 0/1 ``weight`` is 1 (``None``: all samples); every sample is shifted and scaled.

    The population (biased) deviation: the statistic describes this batch itself (it then has exactly
    unit variance over the weighted samples), and one sample gives 0 rather than the unbiased NaN.
    A batch without weighted samples is returned unchanged."""
    chosen = advantages if weight is None else advantages[weight.bool()]
    if chosen.numel() == 0:
        return advantages
    return (advantages - chosen.mean()) / (chosen.std(unbiased=False) + 1e-8)
