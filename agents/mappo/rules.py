"""MAPPO's formulas as small functions (Yu et al. 2022 and marlbenchmark/on-policy: ``onpolicy/utils/valuenorm.py``,
``onpolicy/utils/shared_buffer.py`` ``compute_returns``, ``onpolicy/algorithms/r_mappo/r_mappo.py``)."""

from __future__ import annotations

import torch


class ValueNorm:
    """Running mean and variance of the value targets, debiased (their ``ValueNorm``, a scalar target):

        m ← β·m + (1−β)·mean(x),  q ← β·q + (1−β)·mean(x²),  d ← β·d + (1−β)
        μ = m / max(d, ε),  σ² = max(q / max(d, ε) − μ², 10⁻²)
        normalize(x) = (x − μ) / σ,   denormalize(y) = y·σ + μ

    Before any update ``d = 0``: μ = 0 and σ² = 10⁻², so the statistics come from the first batch on.
    """

    EPS = 1e-5  # their epsilon
    MIN_VAR = 1e-2  # their clamp of the variance

    def __init__(self, beta: float = 0.99999):
        self.beta = float(beta)
        self.mean = torch.zeros(())
        self.mean_sq = torch.zeros(())
        self.debias = torch.zeros(())

    def stats(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(μ, σ²)``."""
        d = self.debias.clamp(min=self.EPS)
        mu = self.mean / d
        return mu, (self.mean_sq / d - mu * mu).clamp(min=self.MIN_VAR)

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        b = self.beta
        self.mean = b * self.mean + (1 - b) * x.mean()
        self.mean_sq = b * self.mean_sq + (1 - b) * (x * x).mean()
        self.debias = b * self.debias + (1 - b)

    def normalize(self, x):
        mu, var = self.stats()
        return (x - mu) / var.sqrt()

    def denormalize(self, y):
        mu, var = self.stats()
        return y * var.sqrt() + mu

    def state_dict(self) -> dict:
        return {"beta": self.beta, "mean": self.mean.clone(), "mean_sq": self.mean_sq.clone(),
                "debias": self.debias.clone()}

    def load_state_dict(self, state: dict) -> None:
        self.beta = float(state["beta"])
        self.mean, self.mean_sq, self.debias = (torch.as_tensor(state[k], dtype=torch.float32).clone()
                                                for k in ("mean", "mean_sq", "debias"))


class IdentityNorm:
    """No value normalisation (``value_norm=False``): the same interface, doing nothing."""

    def update(self, x) -> None:
        pass

    def normalize(self, x):
        return x

    def denormalize(self, y):
        return y

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


def gae(rewards, values, dones, gamma: float, lam: float):
    """Per-agent GAE on the team reward: ``rewards``, ``dones`` ``(T, B)``; ``values`` ``(T+1, B, U)``
    (denormalised; row T bootstraps). A game that ended with step t (``dones[t]``) bootstraps nothing:

        δ_t = r_t + γ·(1−d_t)·V_{t+1} − V_t,    A_t = δ_t + γ·λ·(1−d_t)·A_{t+1},    R_t = A_t + V_t

    Dead agents are not special here (their value, from a death-masked input, still predicts the team
    return until the game ends); the active masks act in the losses. Returns ``(A, R)`` ``(T, B, U)``."""
    T = rewards.shape[0]
    keep = (~dones).to(values.dtype)[..., None]
    r = rewards[..., None]
    adv = torch.zeros_like(values[:T])
    a = torch.zeros_like(values[0])
    for t in reversed(range(T)):
        delta = r[t] + gamma * keep[t] * values[t + 1] - values[t]
        a = delta + gamma * lam * keep[t] * a
        adv[t] = a
    return adv, adv + values[:T]


def standardize(adv, active):
    """``(A − mean) / (std + 10⁻⁵)`` with mean and population std over the active samples only (their
    ``nanmean``/``nanstd`` with dead agents set to NaN); every sample is shifted and scaled."""
    chosen = adv[active]
    if chosen.numel() == 0:
        return adv
    return (adv - chosen.mean()) / (chosen.std(unbiased=False) + 1e-5)


def masked_mean(x, weight):
    """``Σ w·x / Σ w`` (``weight`` ``None``: the plain mean). Their code divides by Σ w unguarded; a batch
    without an active sample gives 0 here instead of NaN."""
    if weight is None:
        return x.mean()
    w = weight.to(x.dtype)
    return (x * w).sum() / w.sum().clamp(min=1.0)


def huber(error, delta: float):
    """Huber loss: ½e² for |e| ≤ δ, δ·(|e| − ½δ) beyond (their ``huber_loss``)."""
    a = error.abs()
    return torch.where(a <= delta, 0.5 * error * error, delta * (a - 0.5 * delta))


def value_loss(values, old_values, targets, clip: float, delta: float, clipped: bool, weight=None):
    """Their ``cal_value_loss`` on normalised values and targets:

        V_clip = V_old + clamp(V − V_old, −ε, ε)
        L = mean_w(max(huber(R − V), huber(R − V_clip)))      (``clipped`` False: huber(R − V) alone)"""
    loss = huber(targets - values, delta)
    if clipped:
        v_clip = old_values + (values - old_values).clamp(-clip, clip)
        loss = torch.max(loss, huber(targets - v_clip, delta))
    return masked_mean(loss, weight)


def policy_loss(log_prob, old_log_prob, adv, clip: float, weight=None):
    """The clipped surrogate ``−mean_w(min(ρ·A, clip(ρ, 1−ε, 1+ε)·A))``, ``ρ = exp(log π − log π_old)``."""
    ratio = (log_prob - old_log_prob).exp()
    return -masked_mean(torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv), weight), ratio


def kl_divergence(log_p, log_q):
    """``KL(p ‖ q) = Σ_a p(a) (log p(a) − log q(a))`` over the last axis, from log-probabilities. Masked actions
    (``network.MASKED_LOGIT``: probability 0 under both) add 0."""
    return (log_p.exp() * (log_p - log_q)).sum(-1)
