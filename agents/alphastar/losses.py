"""AlphaStar's RL losses (docs/design/alphastar.md §4). Everything is time-major ``[T, B]``.

Notation: r_t reward after the action at step t, V_t = V(s_t), V_T = ``bootstrap_value`` (the value of
the state after the chunk), d_t = γ·(1 − done_t) the discount (0 where an episode ends at step t, so
nothing flows across an episode boundary inside a chunk; γ = 1 within an episode in AlphaStar).

Return estimators (gradient-stopped; numpy in → numpy out)
    td_lambda_returns   G_t = r_t + d_t[(1 − λ) V_{t+1} + λ G_{t+1}],  G_T = V_T
    vtrace              ρ_t = min(ρ̄, e^{log_rho_t}), c_t = min(1, e^{log_rho_t})
                        δ_t = ρ_t (r_t + d_t V_{t+1} − V_t)
                        vs_t − V_t = δ_t + d_t c_t (vs_{t+1} − V_{t+1}),  vs_T = V_T
                        pg_advantage_t = min(ρ̄_pg, e^{log_rho_t}) (r_t + d_t vs_{t+1} − V_t)
    upgo_returns        λ-return with λ_t = 1[r_{t+1} + d_{t+1} V_{t+2} ≥ V_{t+1}] (the indicator
                        shifted one step) and λ_{T−1} = 1: the return follows the trajectory while
                        the next action was at least as good as expected and bootstraps from V
                        otherwise; the last step bootstraps from V_T.

Losses (each a scalar, masked mean over valid steps)
    td_lambda_value_loss   ½ mean((sg(G) − V)²)
    split_vtrace_pg_loss   Σ_groups −mean(sg(adv_g) · log π_g), groups = action type; delay; all other
                           arguments, log π_g = Σ of the group's per-head log-probs (0 where unused),
                           the group's log ρ = log π_g − log μ_g
    split_upgo_loss        Σ_groups −mean(sg((G^upgo − V) · min(1, ρ_g)) · log π_g)
    policy_kl_loss         Σ_heads mean(used_h · KL(π_target,h ‖ π_SL,h)); π_SL gradient-stopped,
                           gradients flow through the target logits
    entropy_loss           −Σ_heads mean(used_h · H(π_target,h) / log N_h), N_h the number of legal
                           choices (a bonus: minimising the loss raises the entropy)
    alphastar_rl_loss      Σ_rewards (baseline_cost·value + pg_cost·pg + upgo_cost·upgo) + kl_cost·kl
                           + action_type_kl_cost·kl(action type, early game) + entropy_cost·entropy_loss

Public-version bugs avoided (design §4): KL and entropy use the *target* logits (gradients flow);
the entropy term is a bonus (sign checked); the policy-gradient terms are −adv·log π (minimising
raises the probability of advantageous actions); the step mask multiplies, never inverted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.nn import functional as F

from .config import HEADS
from .distributions import legal_mask

ACTION_GROUPS: dict[str, tuple[str, ...]] = {
    "action_type": ("action_type",),
    "delay": ("delay",),
    "arguments": ("queued", "selected_units", "target_unit", "location"),
}


# ----------------------------------------------------------------------------------------------
# helpers
def _as_tensors(**arrays) -> tuple[dict[str, torch.Tensor], bool]:
    """Float tensors (gradient-stopped, on the device of the first tensor given) of the arrays, and
    whether all inputs were numpy."""
    was_numpy = all(isinstance(a, np.ndarray) or np.isscalar(a) for a in arrays.values())
    device = next((a.device for a in arrays.values() if isinstance(a, torch.Tensor)), torch.device("cpu"))
    out = {}
    for name, a in arrays.items():
        t = a.detach() if isinstance(a, torch.Tensor) else torch.as_tensor(np.asarray(a))
        out[name] = (t if t.is_floating_point() else t.float()).to(device)
    return out, was_numpy


def _check_time_major(t: dict[str, torch.Tensor], per_step: tuple[str, ...], bootstrap: str | None) -> None:
    ref_name = per_step[0]
    ref = t[ref_name]
    if ref.dim() < 1 or ref.shape[0] < 1:
        raise ValueError(f"{ref_name} must be time-major [T, ...] with T ≥ 1, got shape {tuple(ref.shape)}")
    for name in per_step[1:]:
        if t[name].shape != ref.shape:
            raise ValueError(f"{name} must have the shape of {ref_name} {tuple(ref.shape)}, got {tuple(t[name].shape)}")
    if bootstrap is not None and t[bootstrap].shape != ref.shape[1:]:
        raise ValueError(
            f"{bootstrap} must have shape {tuple(ref.shape[1:])} (one value per game), got {tuple(t[bootstrap].shape)}"
        )


def _out(x: torch.Tensor, as_numpy: bool):
    return x.numpy() if as_numpy else x


def _lambda_returns(rewards, values_tp1, discounts, lambdas, bootstrap_value) -> torch.Tensor:
    """G_t = r_t + d_t[(1 − λ_t) V_{t+1} + λ_t G_{t+1}], G_T = bootstrap (backward over time)."""
    returns = torch.empty_like(rewards)
    g = bootstrap_value
    for t in range(rewards.shape[0] - 1, -1, -1):
        g = rewards[t] + discounts[t] * ((1.0 - lambdas[t]) * values_tp1[t] + lambdas[t] * g)
        returns[t] = g
    return returns


def _masked_mean(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return x.mean()
    m = mask.to(x.dtype)
    return (x * m).sum() / m.sum().clamp(min=1.0)


def _step_mask(mask, like: torch.Tensor) -> torch.Tensor | None:
    if mask is None:
        return None
    m = torch.as_tensor(np.asarray(mask)) if not isinstance(mask, torch.Tensor) else mask
    if m.shape != like.shape:
        raise ValueError(f"mask must have shape {tuple(like.shape)} ([T, B]), got {tuple(m.shape)}")
    return m.to(like.device).bool()


def discounts_from_dones(dones, gamma: float = 1.0):
    """d_t = γ · (1 − done_t): zero where an episode ends at step t (numpy in → numpy out)."""
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    t, as_numpy = _as_tensors(dones=dones)
    return _out(gamma * (1.0 - t["dones"].float()), as_numpy)


# ----------------------------------------------------------------------------------------------
# return estimators
def td_lambda_returns(rewards, values, bootstrap_value, discounts, lam: float = 0.8):
    """TD(λ) returns G_t = r_t + d_t[(1 − λ) V_{t+1} + λ G_{t+1}] with V_T = G_T = bootstrap_value."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    t, as_numpy = _as_tensors(rewards=rewards, values=values, bootstrap_value=bootstrap_value, discounts=discounts)
    _check_time_major(t, ("rewards", "values", "discounts"), "bootstrap_value")
    values_tp1 = torch.cat([t["values"][1:], t["bootstrap_value"][None]], dim=0)
    lambdas = torch.full_like(t["rewards"], lam)
    return _out(_lambda_returns(t["rewards"], values_tp1, t["discounts"], lambdas, t["bootstrap_value"]), as_numpy)


def vtrace(
    log_rhos,
    discounts,
    rewards,
    values,
    bootstrap_value,
    clip_rho_threshold: float | None = 1.0,
    clip_pg_rho_threshold: float | None = 1.0,
):
    """V-trace targets and policy-gradient advantages (IMPALA; design §4). Returns ``(vs, pg_advantages)``.

    ``log_rhos`` = log π(a) − log μ(a) (target minus behaviour); a threshold of ``None`` means no clip.
    """
    for name, thr in (("clip_rho_threshold", clip_rho_threshold), ("clip_pg_rho_threshold", clip_pg_rho_threshold)):
        if thr is not None and not thr > 0:
            raise ValueError(f"{name} must be > 0 or None, got {thr}")
    t, as_numpy = _as_tensors(
        log_rhos=log_rhos, discounts=discounts, rewards=rewards, values=values, bootstrap_value=bootstrap_value
    )
    _check_time_major(t, ("log_rhos", "discounts", "rewards", "values"), "bootstrap_value")
    rhos = torch.exp(t["log_rhos"])
    clipped_rhos = rhos if clip_rho_threshold is None else rhos.clamp(max=clip_rho_threshold)
    cs = rhos.clamp(max=1.0)
    r, d, v, boot = t["rewards"], t["discounts"], t["values"], t["bootstrap_value"]
    values_tp1 = torch.cat([v[1:], boot[None]], dim=0)
    deltas = clipped_rhos * (r + d * values_tp1 - v)
    vs_minus_v = torch.empty_like(v)
    acc = torch.zeros_like(boot)
    for step in range(v.shape[0] - 1, -1, -1):
        acc = deltas[step] + d[step] * cs[step] * acc
        vs_minus_v[step] = acc
    vs = vs_minus_v + v
    vs_tp1 = torch.cat([vs[1:], boot[None]], dim=0)
    pg_rhos = rhos if clip_pg_rho_threshold is None else rhos.clamp(max=clip_pg_rho_threshold)
    pg_advantages = pg_rhos * (r + d * vs_tp1 - v)
    return _out(vs, as_numpy), _out(pg_advantages, as_numpy)


def upgo_returns(rewards, values, bootstrap_value, discounts):
    """UPGO returns: the λ-return with λ_t = 1[r_{t+1} + d_{t+1} V_{t+2} ≥ V_{t+1}], λ_{T−1} = 1."""
    t, as_numpy = _as_tensors(rewards=rewards, values=values, bootstrap_value=bootstrap_value, discounts=discounts)
    _check_time_major(t, ("rewards", "values", "discounts"), "bootstrap_value")
    r, v, d, boot = t["rewards"], t["values"], t["discounts"], t["bootstrap_value"]
    values_tp1 = torch.cat([v[1:], boot[None]], dim=0)
    better = (r + d * values_tp1 >= v).to(r.dtype)
    lambdas = torch.cat([better[1:], torch.ones_like(better[:1])], dim=0)
    return _out(_lambda_returns(r, values_tp1, d, lambdas, boot), as_numpy)


# ----------------------------------------------------------------------------------------------
# losses
def td_lambda_value_loss(values: torch.Tensor, rewards, bootstrap_value, discounts, lam: float = 0.8, mask=None):
    """½ · mean over valid steps of (sg(G^λ) − V)², the returns computed from gradient-stopped values."""
    returns = td_lambda_returns(rewards, values, bootstrap_value, discounts, lam)
    returns = torch.as_tensor(returns, dtype=values.dtype, device=values.device)
    return 0.5 * _masked_mean((returns - values) ** 2, _step_mask(mask, values))


def group_log_probs(log_probs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """log π of each of the three groups: Σ of the group's per-head log-probs (zero where unused)."""
    missing = [h for h in HEADS if h not in log_probs]
    if missing:
        raise ValueError(f"log_probs is missing heads {missing}; expected {list(HEADS)}")
    return {g: sum(log_probs[h] for h in heads) for g, heads in ACTION_GROUPS.items()}


def _as_like(x, like: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x, dtype=like.dtype).to(like.device)


def split_vtrace_pg_loss(
    target_log_probs: dict[str, torch.Tensor],
    behaviour_log_probs: dict[str, torch.Tensor],
    rewards,
    values: torch.Tensor,
    bootstrap_value,
    discounts,
    mask=None,
    clip_rho_threshold: float | None = 1.0,
    clip_pg_rho_threshold: float | None = 1.0,
) -> torch.Tensor:
    """Σ over the three groups of −mean(sg(V-trace advantage_g) · log π_g) (design §4, split V-trace)."""
    target, behaviour = group_log_probs(target_log_probs), group_log_probs(behaviour_log_probs)
    step_mask = _step_mask(mask, values)
    loss = values.new_zeros(())
    for group in ACTION_GROUPS:
        log_pi = target[group]
        log_rhos = log_pi.detach() - _as_like(behaviour[group], log_pi)
        _, advantages = vtrace(
            log_rhos, discounts, rewards, values, bootstrap_value, clip_rho_threshold, clip_pg_rho_threshold
        )
        advantages = _as_like(advantages, log_pi)
        loss = loss + _masked_mean(-advantages * log_pi, step_mask)
    return loss


def split_upgo_loss(
    target_log_probs: dict[str, torch.Tensor],
    behaviour_log_probs: dict[str, torch.Tensor],
    rewards,
    values: torch.Tensor,
    bootstrap_value,
    discounts,
    mask=None,
) -> torch.Tensor:
    """Σ over the three groups of −mean(sg((G^upgo − V) · min(1, ρ_g)) · log π_g) (design §4, UPGO)."""
    returns = _as_like(upgo_returns(rewards, values, bootstrap_value, discounts), values)
    target, behaviour = group_log_probs(target_log_probs), group_log_probs(behaviour_log_probs)
    step_mask = _step_mask(mask, values)
    loss = values.new_zeros(())
    for group in ACTION_GROUPS:
        log_pi = target[group]
        rho = torch.exp(log_pi.detach() - _as_like(behaviour[group], log_pi)).clamp(max=1.0)
        advantages = (returns - values.detach()) * rho
        loss = loss + _masked_mean(-advantages * log_pi, step_mask)
    return loss


def categorical_kl(p_logits: torch.Tensor, q_logits: torch.Tensor) -> torch.Tensor:
    """KL(p ‖ q) = Σ_k p_k (log p_k − log q_k) over the last axis."""
    log_p = F.log_softmax(p_logits, dim=-1)
    log_q = F.log_softmax(q_logits, dim=-1)
    return (log_p.exp() * (log_p - log_q)).sum(-1)


def _per_step(head: str, values: torch.Tensor, pick_mask: torch.Tensor | None) -> torch.Tensor:
    """Selected units: sum the per-pick quantity over the picks that count; others: as is."""
    if head != "selected_units":
        return values
    if pick_mask is None:
        raise ValueError("selected_units_pick_mask is required for the selected_units head")
    return (values * pick_mask.to(values.dtype)).sum(-1)


def policy_kl_loss(
    target_logits: dict[str, torch.Tensor],
    sl_logits: dict[str, torch.Tensor],
    argument_used: dict[str, torch.Tensor],
    selected_units_pick_mask: torch.Tensor | None = None,
    mask=None,
    heads: tuple[str, ...] = HEADS,
    direction: str = "target_sl",
) -> torch.Tensor:
    """Σ_heads mean(used · KL) between the target policy and the (frozen) SL policy, per head.

    ``direction="target_sl"`` is KL(π_target ‖ π_SL) (design §4); ``"sl_target"`` is KL(π_SL ‖ π_target)
    (the direction of DeepMind's pseudocode). The SL logits are gradient-stopped either way.
    """
    if direction not in ("target_sl", "sl_target"):
        raise ValueError(f"direction must be 'target_sl' or 'sl_target', got {direction!r}")
    loss = None
    for head in heads:
        target, sl = target_logits[head], sl_logits[head].detach()
        if target.shape != sl.shape:
            raise ValueError(f"sl_logits[{head!r}] must have shape {tuple(target.shape)}, got {tuple(sl.shape)}")
        kl = categorical_kl(target, sl) if direction == "target_sl" else categorical_kl(sl, target)
        kl = _per_step(head, kl, selected_units_pick_mask) * argument_used[head].to(kl.dtype)
        term = _masked_mean(kl, _step_mask(mask, kl))
        loss = term if loss is None else loss + term
    return loss


def normalized_entropy(logits: torch.Tensor) -> torch.Tensor:
    """H(softmax(logits)) / log N over the last axis, N = number of legal (unmasked) entries; 0 if N ≤ 1."""
    log_p = F.log_softmax(logits, dim=-1)
    ent = -(log_p.exp() * log_p).sum(-1)
    n = legal_mask(logits).sum(-1).to(logits.dtype)
    return torch.where(n > 1, ent / torch.log(n.clamp(min=2.0)), torch.zeros_like(ent))


def entropy_loss(
    target_logits: dict[str, torch.Tensor],
    argument_used: dict[str, torch.Tensor],
    selected_units_pick_mask: torch.Tensor | None = None,
    mask=None,
    heads: tuple[str, ...] = HEADS,
) -> torch.Tensor:
    """−Σ_heads mean(used · H / log N): minimising it raises the policy's entropy."""
    loss = None
    for head in heads:
        ent = normalized_entropy(target_logits[head])
        ent = _per_step(head, ent, selected_units_pick_mask) * argument_used[head].to(ent.dtype)
        term = -_masked_mean(ent, _step_mask(mask, ent))
        loss = term if loss is None else loss + term
    return loss


# ----------------------------------------------------------------------------------------------
# combined
@dataclass(frozen=True)
class RewardCosts:
    """Weights of one reward's actor-critic terms: baseline_cost·TD(λ) + pg_cost·V-trace + upgo_cost·UPGO."""

    baseline_cost: float = 10.0
    pg_cost: float = 1.0
    upgo_cost: float = 0.0

    def __post_init__(self) -> None:
        for name in ("baseline_cost", "pg_cost", "upgo_cost"):
            v = getattr(self, name)
            if not (v >= 0 and math.isfinite(v)):
                raise ValueError(f"{name} must be a finite number ≥ 0, got {v}")


def _alphastar_reward_costs() -> dict[str, RewardCosts]:
    # Win/loss: baseline_cost 10, pg_cost 1, UPGO weight 1 (UPGO on win/loss only; design §4).
    return {"win_loss": RewardCosts(baseline_cost=10.0, pg_cost=1.0, upgo_cost=1.0)}


@dataclass(frozen=True)
class RLLossConfig:
    """AlphaStar's loss weights (design §4) as defaults; every one is a setting.

    ``reward_costs`` maps each reward (= value baseline name) to its ``RewardCosts``; a pseudo-reward
    or dense reward is added with its own entry, e.g. ``{"win_loss": ..., "damage": RewardCosts(1.0, 1.0)}``.
    """

    reward_costs: dict[str, RewardCosts] = field(default_factory=_alphastar_reward_costs)
    kl_cost: float = 2e-3
    action_type_kl_cost: float = 0.1
    entropy_cost: float = 1e-4
    td_lambda: float = 0.8
    clip_rho_threshold: float | None = 1.0
    clip_pg_rho_threshold: float | None = 1.0
    kl_direction: str = "target_sl"

    def __post_init__(self) -> None:
        for name in ("kl_cost", "action_type_kl_cost", "entropy_cost"):
            v = getattr(self, name)
            if not (v >= 0 and math.isfinite(v)):
                raise ValueError(f"{name} must be a finite number ≥ 0, got {v}")
        if not self.reward_costs or not all(isinstance(c, RewardCosts) for c in self.reward_costs.values()):
            raise ValueError("reward_costs must map at least one reward name to a RewardCosts")
        if not 0.0 <= self.td_lambda <= 1.0:
            raise ValueError(f"td_lambda must be in [0, 1], got {self.td_lambda}")
        if self.kl_direction not in ("target_sl", "sl_target"):
            raise ValueError(f"kl_direction must be 'target_sl' or 'sl_target', got {self.kl_direction!r}")


def _per_reward(x, default: str) -> dict:
    """A per-reward dict as is; a single array belongs to the first baseline."""
    return x if isinstance(x, dict) else {default: x}


def alphastar_rl_loss(
    target,
    behaviour_log_probs: dict[str, torch.Tensor],
    sl_logits: dict[str, torch.Tensor] | None,
    rewards,
    discounts,
    bootstrap_value,
    mask=None,
    early_game=None,
    config: RLLossConfig | None = None,
) -> dict[str, torch.Tensor]:
    """The combined AlphaStar loss from a *time-major* network output (design §4):

        Σ_rewards [baseline_cost·TD(λ) + pg_cost·split V-trace + upgo_cost·split UPGO]
        + kl_cost·KL + action_type_kl_cost·KL(action type, early game) + entropy_cost·(−entropy)

    target               ``AlphaStarOutput.time_major()`` of the learner teacher-forced with the
                         behaviour actions (logits, log_probs, argument_used, pick mask, values)
    behaviour_log_probs  per head ``[T, B]``, the actor's log-probabilities of its actions
    sl_logits            per head, the SL policy teacher-forced with the same actions (time-major);
                         ``None`` skips the KL terms
    rewards              ``[T, B]`` for the first baseline, or ``{baseline name: [T, B]}``
    bootstrap_value      ``[B]`` or ``{baseline name: [B]}``, V at the state after the chunk
    discounts            ``[T, B]``; mask ``[T, B]`` valid steps
    early_game           ``[T, B]`` bool, where the extra action-type KL applies; ``None`` → nowhere

    Returns ``total``, the unweighted terms summed over rewards (``value_loss``, ``pg_loss``,
    ``upgo_loss``), the same per reward (``value_loss/<name>``, ...), ``kl_loss``,
    ``action_type_kl_loss`` and ``entropy_loss``.
    """
    config = config or RLLossConfig()
    first = next(iter(target.values))
    rewards = _per_reward(rewards, first)
    bootstraps = _per_reward(bootstrap_value, first)
    zero = target.value.new_zeros(())
    terms = {"value_loss": zero, "pg_loss": zero, "upgo_loss": zero}
    total = zero
    for name, reward in rewards.items():
        if name not in target.values:
            raise ValueError(f"rewards names a reward {name!r} without a baseline; baselines: {list(target.values)}")
        if name not in config.reward_costs:
            raise ValueError(f"config.reward_costs has no entry for reward {name!r}: {list(config.reward_costs)}")
        if name not in bootstraps:
            raise ValueError(f"bootstrap_value has no entry for reward {name!r}")
        costs = config.reward_costs[name]
        value, pg, upgo = _reward_losses(target, behaviour_log_probs, name, reward, bootstraps[name], discounts, mask,
                                         config, costs.upgo_cost > 0)
        for key, term in (("value_loss", value), ("pg_loss", pg), ("upgo_loss", upgo)):
            terms[f"{key}/{name}"] = term
            terms[key] = terms[key] + term
        total = total + costs.baseline_cost * value + costs.pg_cost * pg + costs.upgo_cost * upgo

    terms["entropy_loss"] = entropy_loss(target.logits, target.argument_used, target.selected_units_pick_mask, mask)
    terms["kl_loss"], terms["action_type_kl_loss"] = _kl_losses(target, sl_logits, early_game, mask, config)
    terms["total"] = (
        total
        + config.kl_cost * terms["kl_loss"]
        + config.action_type_kl_cost * terms["action_type_kl_loss"]
        + config.entropy_cost * terms["entropy_loss"]
    )
    return terms


def _reward_losses(target, behaviour_log_probs, name: str, reward, bootstrap, discounts, mask, config: RLLossConfig,
                   upgo: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One reward's unweighted terms against its baseline ``name``: TD(λ) value loss, split V-trace
    policy gradient and (when ``upgo``, else zero) split UPGO."""
    values = target.values[name]
    value = td_lambda_value_loss(values, reward, bootstrap, discounts, config.td_lambda, mask)
    pg = split_vtrace_pg_loss(
        target.log_probs,
        behaviour_log_probs,
        reward,
        values,
        bootstrap,
        discounts,
        mask,
        config.clip_rho_threshold,
        config.clip_pg_rho_threshold,
    )
    upgo_loss = target.value.new_zeros(())
    if upgo:
        upgo_loss = split_upgo_loss(target.log_probs, behaviour_log_probs, reward, values, bootstrap, discounts, mask)
    return value, pg, upgo_loss


def _kl_losses(target, sl_logits, early_game, mask, config: RLLossConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """The KL to the SL policy over every head, and the extra action-type KL in the early game (each
    zero without ``sl_logits``; the second also without ``early_game``)."""
    zero = target.value.new_zeros(())
    if sl_logits is None:
        return zero, zero
    pick_mask = target.selected_units_pick_mask
    kl = policy_kl_loss(target.logits, sl_logits, target.argument_used, pick_mask, mask, direction=config.kl_direction)
    if early_game is None:
        return kl, zero
    # Multiplied by the early-game indicator, averaged over all valid steps (as AlphaStar).
    early_used = {"action_type": target.argument_used["action_type"] & _step_mask(early_game, target.value)}
    action_type_kl = policy_kl_loss(
        target.logits,
        sl_logits,
        early_used,
        pick_mask,
        mask,
        heads=("action_type",),
        direction=config.kl_direction,
    )
    return kl, action_type_kl
