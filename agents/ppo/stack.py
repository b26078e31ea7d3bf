"""Population inference: many frozen PPO policies acting in ONE batched computation.

``stack_policies(frozens)`` stacks the policies' weights along a leading policy axis. In
``PolicyStack.act(obs, state, policy_index, ...)`` row ``b`` is computed with policy
``policy_index[b]``'s weights: the rows are grouped by policy (a stable sort), laid out as a padded
``(groups, rows_per_group, features)`` tensor, and every layer is one batched matrix product
``baddbmm(b_g, x_g, W_g)`` over the groups present — the same numbers a per-policy loop gives, without
the loop. The LSTM cell is written out (PyTorch's gate order i, f, g, o):

    gates = x·W_ihᵀ + h·W_hhᵀ + b_ih + b_hh;  c' = σ(f)·c + σ(i)·tanh(g);  h' = σ(o)·tanh(c')
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from agents.ppo.frozen import FrozenPPOPolicy
from agents.ppo.network import MASKED_LOGIT, check_mask, check_obs, sample_actions


class PolicyStack:
    """The stacked weights of ``policies`` (all with one network spec) and their batched ``act``."""

    def __init__(self, policies: Sequence[FrozenPPOPolicy], seed: int = 0):
        policies = list(policies)
        if not policies:
            raise ValueError("frozens must hold at least one policy")
        specs = {p.spec for p in policies}
        if len(specs) != 1:
            raise ValueError(f"frozens must all share one network spec (body, sizes), got {sorted(map(str, specs))}")
        self.policies = policies
        self.spec = policies[0].spec
        self.device = policies[0].device
        self.generator = torch.Generator(device=self.device).manual_seed(seed)

        def stacked(get):
            return torch.stack([get(p.network).detach() for p in policies]).to(self.device)

        if self.spec.body == "mlp":
            self.layers = [
                (stacked(lambda n: n.body.fc1.weight.T), stacked(lambda n: n.body.fc1.bias)),
                (stacked(lambda n: n.body.fc2.weight.T), stacked(lambda n: n.body.fc2.bias)),
            ]
        else:
            self.w_ih = stacked(lambda n: n.body.cell.weight_ih.T)
            self.w_hh = stacked(lambda n: n.body.cell.weight_hh.T)
            self.b_lstm = stacked(lambda n: n.body.cell.bias_ih + n.body.cell.bias_hh)
        self.policy_w = stacked(lambda n: n.policy_head.weight.T)
        self.policy_b = stacked(lambda n: n.policy_head.bias)
        self.value_w = stacked(lambda n: n.value_head.weight.T)
        self.value_b = stacked(lambda n: n.value_head.bias)

    def __len__(self) -> int:
        return len(self.policies)

    @property
    def recurrent(self) -> bool:
        return self.spec.body == "lstm"

    def initial_state(self, batch: int):
        return self.policies[0].initial_state(batch)

    @torch.no_grad()
    def act(self, obs, state, policy_index, mask=None, episode_start=None, *, deterministic=False, generator=None):
        """``(action, state, info)``; row ``b`` acts with ``policies[policy_index[b]]``."""
        obs = check_obs(obs, self.spec.obs_size, self.device)
        batch = obs.shape[0]
        mask = check_mask(mask, batch, self.spec.n_actions, self.device)
        index = torch.as_tensor(policy_index, device=self.device)
        if index.shape != (batch,) or index.is_floating_point() or index.dtype == torch.bool:
            raise ValueError(f"policy_index must be an integer tensor of shape ({batch},), got {index.dtype} {tuple(index.shape)}")
        if bool(((index < 0) | (index >= len(self))).any()):
            raise ValueError(f"policy_index must lie in [0, {len(self) - 1}]")

        groups, group_of_row = torch.unique(index, return_inverse=True)
        order = torch.argsort(group_of_row, stable=True)
        group_sorted = group_of_row[order]
        counts = torch.bincount(group_of_row, minlength=len(groups))
        first_row = torch.cumsum(counts, 0) - counts
        slot = torch.arange(batch, device=self.device) - first_row[group_sorted]
        width = int(counts.max())

        def pad(x):
            out = x.new_zeros(len(groups), width, *x.shape[1:])
            out[group_sorted, slot] = x[order]
            return out

        def unpad(y):
            out = y.new_empty(batch, *y.shape[2:])
            out[order] = y[group_sorted, slot]
            return out

        x = pad(obs)
        new_state = None
        if self.spec.body == "mlp":
            for weight, bias in self.layers:
                x = torch.tanh(torch.baddbmm(bias[groups][:, None, :], x, weight[groups]))
        else:
            h, c = state if state is not None else self.initial_state(batch)
            if episode_start is not None:
                keep = (~torch.as_tensor(episode_start, dtype=torch.bool, device=self.device)).to(h.dtype)[:, None]
                h, c = h * keep, c * keep
            h, c = pad(h), pad(c)
            gates = torch.baddbmm(self.b_lstm[groups][:, None, :], x, self.w_ih[groups]) + torch.bmm(h, self.w_hh[groups])
            i, f, g, o = gates.chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            x = h
            new_state = (unpad(h), unpad(c))
        logits = unpad(torch.baddbmm(self.policy_b[groups][:, None, :], x, self.policy_w[groups]))
        value = unpad(torch.baddbmm(self.value_b[groups][:, None, :], x, self.value_w[groups])).squeeze(-1)
        if mask is not None:
            logits = logits.masked_fill(~mask, MASKED_LOGIT)
        action, log_prob = sample_actions(logits, generator or self.generator, deterministic)
        return action, new_state, {"log_prob": log_prob, "value": value, "logits": logits}


def stack_policies(frozens: Sequence[FrozenPPOPolicy], seed: int = 0) -> PolicyStack:
    """Stack frozen policies (one network spec) for batched population inference."""
    return PolicyStack(frozens, seed)
