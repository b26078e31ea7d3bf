"""Population inference for multi-unit SMAC policies: many frozen policies acting in ONE computation.

``stack_multiunit_policies(frozens)`` stacks the actors' weights along a leading policy axis (all policies
share one ``MultiUnitSpec``). In ``MultiUnitPolicyStack.act(obs, state, policy_index, mask, episode_start)``
game ``b`` (all its units) is played by policy ``policy_index[b]``: the games are grouped by policy (a
stable sort) into a padded ``(groups, games_per_group · units, features)`` layout and every layer is one
batched matrix product ``baddbmm(b_g, x_g, W_g)`` over the groups present — the numbers of
``MultiUnitFrozenPolicy.act`` per policy, without a Python loop over policies. Cells written out
(PyTorch's gate orders):

    MLP:   h = tanh(W2 · tanh(W1 · x + b1) + b2)
    GRU:   r = σ(x·W_irᵀ + b_ir + h·W_hrᵀ + b_hr),  z = σ(x·W_izᵀ + b_iz + h·W_hzᵀ + b_hz)
           n = tanh(x·W_inᵀ + b_in + r ⊙ (h·W_hnᵀ + b_hn))
           h' = (1 − z) ⊙ n + z ⊙ h
    LSTM:  i, f, g, o = x·W_ihᵀ + h·W_hhᵀ + b_ih + b_hh;  c' = σ(f)·c + σ(i)·tanh(g);  h' = σ(o)·tanh(c')

The state has the frozen policies' layout, ``(last_action (B, U, A), *actor_rnn (B, U, H))``, so games can
move between a stack and single policies.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from selfplay.agents.ppo.multiunit import MultiUnitFrozenPolicy
from selfplay.agents.ppo.multiunit_network import (
    check_start,
    check_state,
    check_unit_mask,
    check_unit_obs,
    reset_state,
    zero_state,
)
from selfplay.agents.ppo.network import MASKED_LOGIT
from selfplay.agents.ppo.stack import check_population, stacked_parameters
from torch import nn


class MultiUnitPolicyStack:
    """The stacked actor weights of ``policies`` (one spec) and their batched ``act`` (module docstring)."""

    def __init__(self, policies: Sequence[MultiUnitFrozenPolicy], seed: int = 0):
        self.policies = policies = check_population(policies, MultiUnitFrozenPolicy)
        self.spec = policies[0].spec
        self.device = policies[0].device
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        stacked = stacked_parameters(policies, self.device)

        body = self.spec.body
        if body == "mlp":
            self.layers = [
                (stacked(lambda n: n.actor_body.net.fc1.weight.T), stacked(lambda n: n.actor_body.net.fc1.bias)),
                (stacked(lambda n: n.actor_body.net.fc2.weight.T), stacked(lambda n: n.actor_body.net.fc2.bias)),
            ]
        else:
            self.w_ih = stacked(lambda n: n.actor_body.net.weight_ih_l0.T)
            self.w_hh = stacked(lambda n: n.actor_body.net.weight_hh_l0.T)
            self.b_ih = stacked(lambda n: n.actor_body.net.bias_ih_l0)
            self.b_hh = stacked(lambda n: n.actor_body.net.bias_hh_l0)
        self.policy_w = stacked(lambda n: n.policy_head.weight.T)
        self.policy_b = stacked(lambda n: n.policy_head.bias)
        self.eye = torch.eye(self.spec.n_agents, device=self.device)

    def __len__(self) -> int:
        return len(self.policies)

    @property
    def recurrent(self) -> bool:
        return self.spec.body != "mlp"

    def initial_state(self, batch: int) -> tuple:
        return zero_state(self.spec, batch, self.device, critic=False)

    @torch.no_grad()
    def act(self, obs, state, policy_index, mask=None, episode_start=None, *, deterministic=False, generator=None):
        """``(action (B, U), state, info)``; game ``b`` acts with ``policies[policy_index[b]]``."""
        spec = self.spec
        obs = check_unit_obs(obs, spec, self.device)
        B, U, A = obs.shape[0], spec.n_agents, spec.n_actions
        mask = check_unit_mask(mask, B, spec, self.device)
        start = check_start(episode_start, B, self.device)
        index = torch.as_tensor(policy_index, device=self.device)
        if tuple(index.shape) != (B,) or index.is_floating_point() or index.dtype == torch.bool:
            raise ValueError(f"policy_index must be an integer tensor of shape ({B},), "
                             f"got {index.dtype} {tuple(index.shape)}")
        if bool(((index < 0) | (index >= len(self))).any()):
            raise ValueError(f"policy_index must lie in [0, {len(self) - 1}]")
        expected = self.initial_state(B)
        state = expected if state is None else reset_state(check_state(state, expected), start)

        # Unit inputs [o_i, onehot(i), onehot(a_i^{t-1})], then games grouped by policy into a padded layout.
        parts = [obs]
        if spec.agent_id:
            parts.append(self.eye.expand(B, -1, -1))
        if spec.last_action:
            parts.append(state[0])
        x = torch.cat(parts, dim=-1)
        groups, group_of_row = torch.unique(index, return_inverse=True)
        order = torch.argsort(group_of_row, stable=True)
        counts = torch.bincount(group_of_row, minlength=len(groups))
        G, W = len(groups), int(counts.max())
        rank = torch.empty_like(order)
        rank[order] = torch.arange(B, device=self.device) - (torch.cumsum(counts, 0) - counts)[group_of_row[order]]
        dest = group_of_row * W + rank

        def pad(t):  # (B, U, F) -> (G, W·U, F)
            out = t.new_zeros(G * W, *t.shape[1:]).index_copy_(0, dest, t)
            return out.view(G, W * U, t.shape[-1])

        def unpad(t):  # (G, W·U, F) -> (B, U, F)
            return t.reshape(G * W, U, t.shape[-1]).index_select(0, dest)

        xb = pad(x)
        rnn = ()
        if spec.body == "mlp":
            for weight, bias in self.layers:
                xb = torch.baddbmm(bias[groups][:, None, :], xb, weight[groups]).tanh_()
        elif spec.body == "gru":
            h = pad(state[1])
            gx = torch.baddbmm(self.b_ih[groups][:, None, :], xb, self.w_ih[groups])
            gh = torch.baddbmm(self.b_hh[groups][:, None, :], h, self.w_hh[groups])
            xr, xz, xn = gx.chunk(3, dim=-1)
            hr, hz, hn = gh.chunk(3, dim=-1)
            r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
            n = torch.tanh(xn + r * hn)
            xb = (1 - z) * n + z * h
            rnn = (unpad(xb),)
        else:
            h, c = pad(state[1]), pad(state[2])
            gates = torch.baddbmm((self.b_ih + self.b_hh)[groups][:, None, :], xb, self.w_ih[groups])
            gates = gates.baddbmm_(h, self.w_hh[groups])
            i, f, g, o = gates.chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            xb = torch.sigmoid(o) * torch.tanh(c)
            rnn = (unpad(xb), unpad(c))
        logits = unpad(torch.baddbmm(self.policy_b[groups][:, None, :], xb, self.policy_w[groups]))
        if mask is not None:
            logits = logits.masked_fill(~mask, MASKED_LOGIT)
        log_probs = torch.log_softmax(logits, dim=-1)
        if deterministic:
            action = logits.argmax(dim=-1)
        else:
            probs = log_probs.exp().view(B * U, A)
            action = torch.multinomial(probs, 1, generator=generator or self.generator).view(B, U)
        log_prob = log_probs.gather(-1, action[..., None]).squeeze(-1)
        last = nn.functional.one_hot(action, A).float()
        return action, (last, *rnn), {"log_prob": log_prob, "logits": logits}


def stack_multiunit_policies(frozens: Sequence[MultiUnitFrozenPolicy], seed: int = 0) -> MultiUnitPolicyStack:
    """Stack frozen multi-unit policies (one spec) for batched population inference."""
    return MultiUnitPolicyStack(frozens, seed)
