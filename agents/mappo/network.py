"""rMAPPO's actor and critic (Yu et al. 2022; marlbenchmark/on-policy ``onpolicy/algorithms/utils/{mlp,rnn,act}.py``).

Both networks are one ``RecurrentBase`` and a linear head, shared by every agent of a side:

    x ─ LayerNorm ─ Linear(H) ReLU LayerNorm ─ [Linear(H) ReLU LayerNorm] × layers ─ GRU ─ LayerNorm ─ head

The GRU's hidden state is multiplied by ``1 − start`` before a step (an episode start resets it).
``recurrent=False`` is their ``mappo`` (the MLP policy and critic, ``use_recurrent_policy`` off): no GRU and
no LayerNorm after it, the MLP's output goes to the head, and the hidden state stays zero.
Initialisation (their code): orthogonal weights with ReLU's gain √2 in the MLP, gain 1 in the GRU,
0.01 for the actor's logits (``policy_gain``: their ``gain``) and 1 for the value head; zero biases; every draw from one generator.

Inputs (``actor_inputs``, ``critic_inputs``), per agent i of a side of U agents with A actions:

    actor:   [o_i, onehot(i), onehot(a_i^{t−1})]      o_i replaced by [t / limit] under open-loop control;
                                                       the id and last action only where configured
    critic:  "AS": s_i (the agent-specific state; SMAC's seed writes a dead agent's as zeros but its id)
             "EP": [s, onehot(i)], with death masking zeros but the id for a dead agent
"""

from __future__ import annotations

import math

import torch
from torch import nn

from selfplay.utils.seeding import keeps_global_rng

MASKED_LOGIT = -1e10  # an unavailable action's logit (their Categorical: x[available_actions == 0] = -1e10)
N_ACTIONS_NO_ATTACK = 6  # SMAC's no-op, stop and four moves; actions 6 + j attack enemy j (StarCraft2Env)


class NormalizedLinear(torch.autograd.Function):
    """The first layer on normalised data: ``y = (x̂ ⊙ γ + β) Wᵀ + b``, ``x̂`` ``(N, D)`` the input already
    normalised without LayerNorm's affine part (data: no gradient), ``γ, β`` that affine part, ``W, b`` the
    Linear's. The same function as ``Linear(LayerNorm(x))``, computed as ``x̂ (W ⊙ γ)ᵀ + (b + W β)`` (no pass
    over the ``(N, D)`` input besides the product); its backward reads one product ``G = dYᵀ x̂``
    (``(out, D)``) for every gradient:

        ∂W = G ⊙ γ + s βᵀ,   ∂γ = Σ_j W_j ⊙ G_j,   ∂β = Wᵀ s,   ∂b = s,      s = Σ_n dY_n

    where autograd through the two modules also forms ``dY W`` (``(N, D)``, a product as large as the one
    that gives ``∂W``) and runs LayerNorm forward and backward over the input. The update replays the same
    inputs every epoch, so it normalises them once (``RecurrentBase.normalize``) and runs this instead
    (``unroll(normalized=True)``); the results differ from the modules' by float rounding only. Where ``x̂`` is
    held in a lower precision (``bfloat16``: ``MAPPOConfig.update_precision``), the two products over it take
    their other operand rounded to it and accumulate in float32 (as ``linear``); everything else stays float32."""

    @staticmethod
    def forward(ctx, x_hat, gamma, beta, weight, bias):
        ctx.save_for_backward(x_hat, gamma, beta, weight)
        shift = torch.addmv(bias, weight, beta)
        if x_hat.dtype == weight.dtype:
            return torch.addmm(shift, x_hat, (weight * gamma).t())
        return torch.add(torch.mm(x_hat, (weight * gamma).t().to(x_hat.dtype)), shift)  # float32, as ``linear``

    @staticmethod
    def backward(ctx, dy):
        x_hat, gamma, beta, weight = ctx.saved_tensors
        s = dy.sum(0)
        g = dy.t().to(x_hat.dtype).mm(x_hat).to(weight.dtype)
        return None, (weight * g).sum(0), s.matmul(weight), g * gamma + torch.outer(s, beta), s


def linear(x, weight, bias=None, precision: torch.dtype | None = None):
    """``x Wᵀ + b``; with ``precision`` (e.g. ``torch.bfloat16``) the product takes both operands rounded to it
    (the CPU's bf16 dot products accumulate in float32; torch rounds the result to bf16 on the CPU) and the
    bias is added in float32, which gives a float32 result. The gradients flow back through the same rounded
    products (autograd of the casts)."""
    if precision is None or precision == x.dtype == weight.dtype:
        return nn.functional.linear(x, weight, bias)
    y = nn.functional.linear(x.to(precision), weight.to(precision))
    return y.to(weight.dtype) if bias is None else torch.add(y, bias)  # bf16 + float32 → float32, one pass


def _tanh(x, out):
    """``tanh(x) = 2σ(2x) − 1`` into ``out``, overwriting ``x``: torch's CPU ``tanh`` takes about ten times its
    ``sigmoid``'s time here (0.21 ms against 0.02 ms on a (1600, 64) float32 tensor, one thread); the identity
    is exact, its float32 rounding within about 1e-7 of ``tanh``'s."""
    return torch.sigmoid(x.mul_(2), out=out).mul_(2).sub_(1)


class GRUSequence(torch.autograd.Function):
    """A GRU over a whole sequence, with resets, from its input products; the same function as torch's
    ``GRUCell`` step by step, with a hand-written backward (back-propagation through time) that forms the
    recurrent weight's gradient as one product over every step instead of one per step.

    Inputs: ``gi`` ``(L, N, 3H)`` = ``x W_ihᵀ + b_ih + [b_hr, b_hz, 0]`` (the input products of every step, made
    at once by the caller), ``h0`` ``(N, H)``, ``keep`` ``(L, N, 1)`` (0 where an episode starts), ``w_hh``
    ``(3H, H)``, ``b_hn`` ``(H,)``, ``precision`` as in ``linear`` for the recurrent product. Per step
    (torch's ``GRUCell``, gates in the order r, z, n):

        h̃ = keep_t · h_{t−1},   g = h̃ W_hhᵀ,   r = σ(gi_r + g_r),   z = σ(gi_z + g_z)
        n = tanh(gi_n + r ⊙ (g_n + b_hn)),   h_t = (1 − z) ⊙ n + z ⊙ h̃ = n + z ⊙ (h̃ − n)

    Backward, from ``t = L − 1`` down, with ``dh = ∂h_t`` (the output's gradient plus the carry from ``t + 1``):

        a_n = dh ⊙ (1 − z) ⊙ (1 − n²),   a_z = dh ⊙ (h̃ − n) ⊙ z(1 − z),   a_r = a_n ⊙ (g_n + b_hn) ⊙ r(1 − r)
        ∂gi_t = [a_r, a_z, a_n],   ∂g_t = [a_r, a_z, a_n ⊙ r],   ∂h̃ = dh ⊙ z + ∂g_t W_hh,   carry = keep_t · ∂h̃
        ∂W_hh = Σ_t ∂g_tᵀ h̃_t,   ∂b_hn = Σ_t (a_n ⊙ r)_t,   ∂h0 = the last carry
    """

    @staticmethod
    def forward(ctx, gi, h0, keep, w_hh, b_hn, precision):
        L, N, H = gi.shape[0], gi.shape[1], w_hh.shape[1]
        mm_type = precision or gi.dtype  # the products' operands: h̃ is also kept in it, for ∂W_hh
        w = w_hh.t().to(mm_type)
        rz, n, g_n, out = (gi.new_empty(L, N, k) for k in (2 * H, H, H, H))
        h_in = gi.new_empty(L, N, H, dtype=mm_type)
        h = h0
        for t in range(L):
            h_t = torch.mul(h, keep[t])  # float32; h_in[t] is it rounded to mm_type
            g = torch.mm(h_in[t].copy_(h_t), w)  # the adds below are float32
            torch.sigmoid(torch.add(gi[t, :, :2 * H], g[:, :2 * H]), out=rz[t])
            torch.add(g[:, 2 * H:], b_hn, out=g_n[t])
            _tanh(torch.addcmul(gi[t, :, 2 * H:], rz[t, :, :H], g_n[t]), out=n[t])
            h = torch.addcmul(n[t], rz[t, :, H:], h_t - n[t], out=out[t])
        # h̃_t = out[t − 1] · keep_t, recomputed in the backward: kept here only in mm_type
        ctx.save_for_backward(h0, out, h_in, rz, n, g_n, keep, w_hh)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        h0, out, h_in, rz, n, g_n, keep, w_hh = ctx.saved_tensors
        L, N, H = n.shape
        w = w_hh.to(h_in.dtype)
        d_gi = grad_out.new_empty(L, N, 3 * H)  # ∂gi_t = [a_r, a_z, a_n]
        d_g = d_gi.new_empty(L, N, 3 * H, dtype=h_in.dtype)  # ∂g_t = [a_r, a_z, a_n ⊙ r], in the products' type
        carry = torch.zeros_like(grad_out[0])
        for t in range(L - 1, -1, -1):
            dh = grad_out[t] + carry
            r, z = rz[t, :, :H], rz[t, :, H:]
            h_t = (out[t - 1] if t else h0) * keep[t]
            a_n = torch.mul(dh * (1 - z), 1 - n[t] * n[t], out=d_gi[t, :, 2 * H:])
            torch.mul(a_n * g_n[t], r * (1 - r), out=d_gi[t, :, :H])
            torch.mul(dh * (h_t - n[t]), z * (1 - z), out=d_gi[t, :, H:2 * H])
            d_g[t, :, :2 * H].copy_(d_gi[t, :, :2 * H])
            torch.mul(a_n, r, out=d_g[t, :, 2 * H:])
            carry = torch.addcmul(torch.mm(d_g[t], w), dh, z).mul_(keep[t])  # float32 (dh's type)
        d_w = d_g.reshape(-1, 3 * H).t().mm(h_in.reshape(-1, H)).to(w_hh.dtype)
        d_b_hn = (d_gi[..., 2 * H:] * rz[..., :H]).sum((0, 1))  # Σ_t a_n ⊙ r in float32
        return d_gi, carry, None, d_w, d_b_hn, None


class RecurrentBase(nn.Module):
    """Feature normalisation, the MLP and the GRU (module docstring); ``features`` ``(N, H)``. Without the GRU
    (``recurrent=False``) the MLP's output is the features and the hidden state passes through unchanged."""

    def __init__(self, input_size: int, hidden_size: int, layers: int, recurrent: bool = True):
        super().__init__()
        self.recurrent = recurrent
        self.feature_norm = nn.LayerNorm(input_size)
        sizes = [input_size] + [hidden_size] * (layers + 1)
        self.mlp = nn.Sequential(*[m for a, b in zip(sizes[:-1], sizes[1:])
                                   for m in (nn.Linear(a, b), nn.ReLU(), nn.LayerNorm(b))])
        if recurrent:
            self.gru = nn.GRUCell(hidden_size, hidden_size)
            self.out_norm = nn.LayerNorm(hidden_size)

    def init_weights(self, generator: torch.Generator) -> None:
        for m in self.mlp:
            if isinstance(m, nn.Linear):
                nn.init.orthogonal_(m.weight, gain=math.sqrt(2.0), generator=generator)
                nn.init.zeros_(m.bias)
        if not self.recurrent:
            return
        for name, p in self.gru.named_parameters():
            if name.startswith("weight"):
                nn.init.orthogonal_(p, gain=1.0, generator=generator)
            else:
                nn.init.zeros_(p)

    def step(self, x, h, start):
        """One step: ``x`` ``(N, D)``, ``h`` ``(N, H)``, ``start`` ``(N,)`` bool → ``(features, new h)``."""
        z = self.mlp(self.feature_norm(x))
        if not self.recurrent:
            return z, h
        h = self.gru(z, h * (~start)[:, None].to(h.dtype))
        return self.out_norm(h), h

    def normalize(self, x, precision: torch.dtype | None = None):
        """``(x − mean) / √(var + ε)`` over the last axis: ``feature_norm`` without its affine part, as data
        (rounded to ``precision`` where given: ``unroll`` then runs its products at that precision)."""
        with torch.no_grad():
            x_hat = nn.functional.layer_norm(x, self.feature_norm.normalized_shape, eps=self.feature_norm.eps)
            return x_hat if precision is None else x_hat.to(precision)

    def unroll(self, x, h0, starts, with_states: bool = False, normalized: bool = False):
        """``x`` ``(L, N, D)`` from ``h0`` ``(N, H)`` with resets ``starts`` ``(L, N)`` → features ``(L, N, H)``
        (``with_states``: and the hidden state after every step, ``(L, N, H)``). The MLP runs on every step
        at once; only the GRU goes step by step. ``normalized``: ``x`` is ``normalize``'s output (the same
        features, through ``NormalizedLinear``); held in ``bfloat16``, every product of the MLP and the GRU
        takes bf16 operands (``linear``; the GRU as ``GRUSequence``, its input products made for every step
        at once)."""
        precision = x.dtype if normalized and x.dtype != self.feature_norm.weight.dtype else None
        if normalized:
            first, norm = self.mlp[0], self.feature_norm
            z = NormalizedLinear.apply(x.reshape(-1, x.shape[-1]), norm.weight, norm.bias, first.weight, first.bias)
            for m in self.mlp[1:]:
                z = linear(z, m.weight, m.bias, precision) if isinstance(m, nn.Linear) else m(z)
            z = z.view(*x.shape[:-1], -1)
        else:
            z = self.mlp(self.feature_norm(x))
        if not self.recurrent:
            return (z, h0.expand(z.shape[0], *h0.shape)) if with_states else z
        keep = (~starts).to(z.dtype)[..., None]
        if precision is None:
            h, out = h0, []
            for z_t, keep_t in zip(z.unbind(0), keep.unbind(0)):  # unbind: one backward node, not one per step
                h = self.gru(z_t, h * keep_t)
                out.append(h)
            states = torch.stack(out)
        else:  # the same GRU, its products at ``precision`` and the rest in float32
            g, H = self.gru, self.gru.hidden_size
            gi = linear(z, g.weight_ih, g.bias_ih + torch.cat([g.bias_hh[:2 * H], g.bias_hh.new_zeros(H)]), precision)
            states = GRUSequence.apply(gi, h0, keep, g.weight_hh, g.bias_hh[2 * H:], precision)
        return (self.out_norm(states), states) if with_states else self.out_norm(states)


class EntityAttackScorer(nn.Module):
    """An attack action scored from the enemy it attacks, as the Action Semantics Network does (Wang et al. 2020,
    "Action Semantics Network: Considering the Effects of Actions in Multiagent Systems", ICLR; its SMAC
    networks score an action that acts on enemy j from j's own part of the observation). For the agent's features
    ``f`` (the actor's output) and enemy j's observed features ``e_j`` (SMAC's per-enemy block: attackable,
    distance, relative x and y, health, shield, unit type):

        score_j = ⟨W_q f, g(e_j)⟩,      g(e) = W_2 ReLU(W_1 e + b_1) + b_2

    one ``g`` for every enemy, so what makes an enemy worth attacking (near, weak, in range) is learnt once for
    all of them, where a linear head over ``f`` learns it per enemy slot. ``enemy_obs = (offset, n_enemies,
    feats)``: where the enemy blocks start in the observation, how many, how wide each (SMAC's layout:
    ``get_obs_move_feats_size`` features, then ``get_obs_enemy_feats_size``). Initialised as the MLP (orthogonal,
    gain √2 and 1) with ``W_q`` at the logits' gain, so the scores start near 0 and the policy near the linear
    head's."""

    def __init__(self, hidden_size: int, enemy_obs: tuple):
        super().__init__()
        self.offset, self.n_enemies, self.feats = (int(v) for v in enemy_obs)
        self.embed = nn.Sequential(nn.Linear(self.feats, hidden_size), nn.ReLU(), nn.Linear(hidden_size, hidden_size))
        self.query = nn.Linear(hidden_size, hidden_size)

    def init_weights(self, generator: torch.Generator, gain: float) -> None:
        for layer, g in ((self.embed[0], math.sqrt(2.0)), (self.embed[2], 1.0), (self.query, gain)):
            nn.init.orthogonal_(layer.weight, gain=g, generator=generator)
            nn.init.zeros_(layer.bias)

    def enemies(self, x):
        """The enemy blocks of actor inputs ``x`` ``(..., D)`` (the observation first): ``(..., n_enemies, feats)``."""
        return x[..., self.offset:self.offset + self.n_enemies * self.feats].unflatten(-1, (self.n_enemies, self.feats))

    def forward(self, f, enemies):
        """``f`` ``(..., H)``, ``enemies`` ``(..., n_enemies, feats)`` → the scores ``(..., n_enemies)``."""
        return (self.embed(enemies) * self.query(f).unsqueeze(-2)).sum(-1)


def head_logits(policy_head: nn.Linear, attack_scorer: EntityAttackScorer | None, f, enemies=None):
    """``policy_head(f)``, with ``attack_scorer(f, enemies)`` added to the attack actions' logits (``6 + j`` for
    enemy j) where there is a scorer."""
    logits = policy_head(f)
    if attack_scorer is None:
        return logits
    a, b = N_ACTIONS_NO_ATTACK, N_ACTIONS_NO_ATTACK + attack_scorer.n_enemies
    return torch.cat([logits[..., :a], logits[..., a:b] + attack_scorer(f, enemies), logits[..., b:]], -1)


class MAPPONetwork(nn.Module):
    """The shared actor (``actor``, ``policy_head``, and ``attack_scorer`` where ``enemy_obs`` is given) and
    centralised critic (``critic``, ``value_head``). ``policy_logits(f, enemies)``: the head's logits
    ``policy_head(f)``, with ``EntityAttackScorer``'s scores added to the attack actions' where it exists."""

    @keeps_global_rng
    def __init__(self, actor_input_size: int, critic_input_size: int, n_actions: int, hidden_size: int = 64,
                 layers: int = 1, generator: torch.Generator | None = None, policy_gain: float = 0.01,
                 recurrent: bool = True, enemy_obs: tuple | None = None):
        super().__init__()
        self.sizes = dict(actor_input_size=actor_input_size, critic_input_size=critic_input_size, n_actions=n_actions,
                          hidden_size=hidden_size, layers=layers, recurrent=recurrent)
        self.actor = RecurrentBase(actor_input_size, hidden_size, layers, recurrent)
        self.policy_head = nn.Linear(hidden_size, n_actions)
        self.critic = RecurrentBase(critic_input_size, hidden_size, layers, recurrent)
        self.value_head = nn.Linear(hidden_size, 1)
        if enemy_obs is not None:
            offset, m, feats = (int(v) for v in enemy_obs)
            if offset < 0 or m < 1 or feats < 1 or offset + m * feats > actor_input_size:
                raise ValueError(f"enemy_obs {tuple(enemy_obs)} (offset, n_enemies, feats) must lie inside the "
                                 f"actor's {actor_input_size} inputs")
            if N_ACTIONS_NO_ATTACK + m > n_actions:
                raise ValueError(f"enemy_obs's {m} enemies need {N_ACTIONS_NO_ATTACK + m} actions (SMAC's 6 and "
                                 f"one attack each), got n_actions={n_actions}")
        self.attack_scorer = None if enemy_obs is None else EntityAttackScorer(hidden_size, enemy_obs)
        g = generator if generator is not None else torch.Generator().manual_seed(0)
        self.actor.init_weights(g)
        self.critic.init_weights(g)
        nn.init.orthogonal_(self.policy_head.weight, gain=policy_gain, generator=g)
        nn.init.orthogonal_(self.value_head.weight, gain=1.0, generator=g)
        nn.init.zeros_(self.policy_head.bias)
        nn.init.zeros_(self.value_head.bias)
        if self.attack_scorer is not None:  # drawn last: the other weights are those of a linear head's network
            self.attack_scorer.init_weights(g, policy_gain)

    def enemy_features(self, x):
        """The attack scorer's input from actor inputs ``x`` (raw, not normalised); ``None`` without a scorer."""
        return None if self.attack_scorer is None else self.attack_scorer.enemies(x)

    def policy_logits(self, f, enemies=None):
        """Logits ``(..., A)`` from the actor's features ``f`` ``(..., H)`` and, with an attack scorer, the enemy
        blocks ``enemies`` (``enemy_features``' output, ``(..., n_enemies, feats)``): ``head_logits``."""
        return head_logits(self.policy_head, self.attack_scorer, f, enemies)

    def acting_logits(self, f, x):
        """``policy_logits`` of features ``f`` made from the raw actor inputs ``x`` (acting; the update, whose
        inputs are normalised, passes the enemy blocks it kept instead)."""
        return self.policy_logits(f, self.enemy_features(x))

    def actor_parameters(self):
        scorer = [] if self.attack_scorer is None else [*self.attack_scorer.parameters()]
        return [*self.actor.parameters(), *self.policy_head.parameters(), *scorer]

    def critic_parameters(self):
        return [*self.critic.parameters(), *self.value_head.parameters()]


def masked_logits(logits, mask):
    """Unavailable actions (``mask`` False) get ``MASKED_LOGIT``."""
    return logits if mask is None else logits.masked_fill(~mask, MASKED_LOGIT)


def _joined(parts, out):
    """``parts`` joined on the last axis, written into ``out`` (a preallocated buffer row) where given."""
    if out is None:
        return torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]
    return torch.cat(parts, dim=-1, out=out) if len(parts) > 1 else out.copy_(parts[0])


def actor_inputs(obs, last_action, agent_id: bool, use_last_action: bool, out=None):
    """``[obs, onehot(i), last_action]`` per agent: ``obs`` ``(B, U, D)`` (open loop: ``(B, U, 1)`` time
    steps), ``last_action`` ``(B, U, A)`` one-hot → ``(B, U, D')`` (into ``out`` where given)."""
    parts = [obs]
    B, U = obs.shape[:2]
    if agent_id:
        parts.append(torch.eye(U, dtype=obs.dtype, device=obs.device).expand(B, U, U))
    if use_last_action:
        parts.append(last_action)
    return _joined(parts, out)


def critic_inputs(state, alive, kind: str, death_masking: bool, out=None):
    """The critic's input per agent (module docstring). ``state``: ``(B, U, S)`` agent-specific states
    (``"AS"``) or ``(B, S)`` the global state (``"EP"``); ``alive`` ``(B, U)`` bool; into ``out`` where given."""
    if kind == "AS":
        if not death_masking:
            return _joined([state], out)
        U = state.shape[1]  # SMAC's agent-specific state ends with the one-hot id: keep it, zero the rest
        body = state[..., :-U] * alive[..., None].to(state.dtype)
        return _joined([body, state[..., -U:]], out)
    B, U = alive.shape
    s = state[:, None, :].expand(B, U, state.shape[-1])
    if death_masking:
        s = s * alive[..., None].to(s.dtype)
    return _joined([s, torch.eye(U, dtype=s.dtype, device=s.device).expand(B, U, U)], out)


def open_loop_inputs(episode_steps, episode_limit: int, n_agents: int):
    """The open-loop observation: ``t / limit`` for every agent, ``(B, U, 1)``."""
    t = torch.as_tensor(episode_steps, dtype=torch.float32) / float(episode_limit)
    return t[:, None, None].expand(t.shape[0], n_agents, 1)
