"""Population inference: many frozen PPO policies acting in ONE batched computation.

``stack_policies(frozens)`` stacks the policies' weights along a leading policy axis. In
``PolicyStack.act(obs, state, policy_index, ...)`` row ``b`` is computed with policy
``policy_index[b]``'s weights: the rows are grouped by policy (a stable sort), laid out as a padded
``(groups, rows_per_group, features)`` tensor, and every layer is one batched matrix product
``baddbmm(b_g, x_g, W_g)`` over the groups present — the same numbers a per-policy loop gives, without
a Python loop over policies. (Big evaluation batches go through in a few blocks of groups, so that the
intermediate tensors stay cache-sized.) The LSTM cell is written out (PyTorch's gate order i, f, g, o):

    gates = x·W_ihᵀ + h·W_hhᵀ + b_ih + b_hh;  c' = σ(f)·c + σ(i)·tanh(g);  h' = σ(o)·tanh(c')

with tanh(x) computed as 2σ(2x) − 1 (the cell gate's weights are stored doubled).

``forward_grouped`` is the same computation for rows already grouped by policy (``policy_index``
non-decreasing, as a caller that keeps its rows in that order provides): each policy's rows are read in
place and multiplied at once, without the padded copies of the inputs, the padding rows' arithmetic, the
gathers of the stacked weights and the copies back. A row's numbers are those of ``forward`` bit for bit
(with MKL's single-precision products a row's result does not depend on how many rows, from four on,
are multiplied with it; the element-wise kernels are the same; ``tests/ppo/test_ppo_population.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from selfplay.agents.ppo.frozen import FrozenPPOPolicy
from selfplay.agents.ppo.network import MASKED_LOGIT, check_mask, check_obs, sample_actions


def check_population(policies, policy_class: type) -> list:
    """``policies`` as a non-empty list of ``policy_class`` objects sharing one ``spec`` (else ``ValueError``)."""
    policies = list(policies)
    if not policies:
        raise ValueError("frozens must hold at least one policy")
    if not all(isinstance(p, policy_class) for p in policies):
        raise ValueError(f"frozens must all be {policy_class.__name__} objects")
    specs = {p.spec for p in policies}
    if len(specs) != 1:
        raise ValueError(f"frozens must all share one network spec, got {sorted(map(str, specs))}")
    return policies


def stacked_parameters(policies, device):
    """``stacked(get)``: ``get(network)`` of every policy stacked on a new first axis (detached, on ``device``)."""

    def stacked(get):
        return torch.stack([get(p.network).detach() for p in policies]).to(device)

    return stacked


class PolicyStack:
    """The stacked weights of ``policies`` (all with one network spec) and their batched ``act``."""

    BLOCK_ELEMENTS = 2**18  # floats per intermediate tensor of one block of groups (~1 MB)

    def __init__(self, policies: Sequence[FrozenPPOPolicy], seed: int = 0):
        self.policies = policies = check_population(policies, FrozenPPOPolicy)
        self.spec = policies[0].spec
        self.device = policies[0].device
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        stacked = stacked_parameters(policies, self.device)

        if self.spec.body == "mlp":
            self.layers = [
                (stacked(lambda n: n.body.fc1.weight.T), stacked(lambda n: n.body.fc1.bias)),
                (stacked(lambda n: n.body.fc2.weight.T), stacked(lambda n: n.body.fc2.bias)),
            ]
        else:
            self.w_ih = stacked(lambda n: n.body.lstm.weight_ih_l0.T)
            self.w_hh = stacked(lambda n: n.body.lstm.weight_hh_l0.T)
            self.b_lstm = stacked(lambda n: n.body.lstm.bias_ih_l0 + n.body.lstm.bias_hh_l0)
            # The cell gate's columns doubled: one sigmoid over all gates then gives tanh(g) = 2σ(2g) − 1
            # (σ is several times cheaper than tanh on the CPU; the two agree to float rounding).
            hidden = self.spec.hidden_size
            for w in (self.w_ih, self.w_hh, self.b_lstm):
                w[..., 2 * hidden:3 * hidden] *= 2
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
        mask = check_mask(mask, obs.shape[0], self.spec.n_actions, self.device)
        logits, value, new_state = self.forward(obs, state, policy_index, episode_start)
        if mask is not None:
            logits = logits.masked_fill(~mask, MASKED_LOGIT)
        action, log_prob = sample_actions(logits, generator or self.generator, deterministic)
        return action, new_state, {"log_prob": log_prob, "value": value, "logits": logits}

    @torch.no_grad()
    def forward(self, obs, state, policy_index, episode_start=None):
        """``(logits, value, state)`` of every row (unmasked logits; ``state``: ``None`` for an MLP);
        row ``b`` is computed with ``policies[policy_index[b]]``."""
        obs = check_obs(obs, self.spec.obs_size, self.device)
        batch = obs.shape[0]
        index = torch.as_tensor(policy_index, device=self.device)
        if index.shape != (batch,) or index.is_floating_point() or index.dtype == torch.bool:
            raise ValueError(f"policy_index must be an integer tensor of shape ({batch},), got {index.dtype} {tuple(index.shape)}")
        if bool(((index < 0) | (index >= len(self))).any()):
            raise ValueError(f"policy_index must lie in [0, {len(self) - 1}]")

        # Group the rows by policy and cut each group into segments of at most ``width`` rows, ``width`` the
        # mean group size: row b goes to slot ``dest[b] = segment·width + rank within its segment`` of a
        # padded (segments, width, ·) layout, each segment computed with its policy's weights. Equal groups
        # are one segment each; a few large groups among many small ones (a population's evaluation batch)
        # are split instead of padding every small group to the largest (at most twice the rows computed).
        groups, group_of_row = torch.unique(index, return_inverse=True)
        order = torch.argsort(group_of_row, stable=True)
        counts = torch.bincount(group_of_row, minlength=len(groups))
        width = -(-batch // len(groups))
        rank_sorted = torch.arange(batch, device=self.device) - (torch.cumsum(counts, 0) - counts)[group_of_row[order]]
        rank = torch.empty_like(rank_sorted)
        rank[order] = rank_sorted
        pieces = -(-counts // width)  # segments per group
        first_piece = torch.cumsum(pieces, 0) - pieces
        dest = (first_piece[group_of_row] + rank // width) * width + rank % width
        groups = torch.repeat_interleave(groups, pieces)  # the policy of each segment
        # Rows already laid out policy by policy in equal numbers (e.g. an evaluation batch built
        # policy-major) need no copying at all: the padded layout is a view of the batch.
        laid_out = len(groups) * width == batch and bool(torch.equal(dest, torch.arange(batch, device=self.device)))

        def pad(x):
            if laid_out:
                return x.reshape(len(groups), width, *x.shape[1:])
            out = x.new_zeros(len(groups) * width, *x.shape[1:])
            return out.index_copy_(0, dest, x).view(len(groups), width, *x.shape[1:])

        def unpad(y):
            flat = y.reshape(len(groups) * width, *y.shape[2:])
            return flat if laid_out else flat.index_select(0, dest)

        x = pad(obs)
        if self.recurrent:
            h, c = state if state is not None else self.initial_state(batch)
            if episode_start is not None:
                keep = (~torch.as_tensor(episode_start, dtype=torch.bool, device=self.device)).to(h.dtype)[:, None]
                h, c = h * keep, c * keep
            h, c = pad(h), pad(c)  # may be views of the caller's state: read only, never written
            h_new, c_new = torch.empty_like(h), torch.empty_like(c)
        logits = x.new_empty(len(groups), width, self.spec.n_actions)
        value = x.new_empty(len(groups), width, 1)
        # Groups go through the network a block at a time, so that the intermediate tensors stay small
        # enough for the CPU caches (a few blocks for big evaluation batches, one for small ones).
        widest = 4 * self.spec.hidden_size if self.recurrent else self.spec.hidden_size
        block = max(1, self.BLOCK_ELEMENTS // (width * widest))
        for lo in range(0, len(groups), block):
            g = groups[lo:lo + block]
            xb = x[lo:lo + block]
            if self.recurrent:
                gates = torch.baddbmm(self.b_lstm[g][:, None, :], xb, self.w_ih[g]).baddbmm_(h[lo:lo + block], self.w_hh[g])
                i, f, cell, o = gates.sigmoid_().chunk(4, dim=-1)  # cell = σ(2g)
                cb = f.mul(c[lo:lo + block]).addcmul_(i, cell.mul_(2).sub_(1))  # σ(f)·c + σ(i)·tanh(g)
                xb = o.mul(torch.sigmoid(cb * 2).mul_(2).sub_(1))  # σ(o)·tanh(c')
                h_new[lo:lo + block], c_new[lo:lo + block] = xb, cb
            else:
                for weight, bias in self.layers:
                    xb = torch.baddbmm(bias[g][:, None, :], xb, weight[g]).tanh_()
            logits[lo:lo + block] = torch.baddbmm(self.policy_b[g][:, None, :], xb, self.policy_w[g])
            value[lo:lo + block] = torch.baddbmm(self.value_b[g][:, None, :], xb, self.value_w[g])
        new_state = (unpad(h_new), unpad(c_new)) if self.recurrent else None
        return unpad(logits), unpad(value).squeeze(-1), new_state

    GROUPED_MIN_WIDTH = 64  # mean rows per policy below which forward_grouped hands over to forward (its loop is per policy)
    MIN_PRODUCT_ROWS = 4  # fewer rows take another matrix-product kernel (other rounding): products get at least this many

    @torch.no_grad()
    def forward_grouped(self, obs, state, policy_index, episode_start=None):
        """``(logits, state)`` of ``forward``, bit for bit, for rows grouped by policy: ``policy_index``
        non-decreasing (else, and where the policies have fewer than ``GROUPED_MIN_WIDTH`` rows on average,
        ``forward`` itself computes them). ``forward`` copies the rows into a zero-padded layout of equal
        segments and multiplies block after block of them; here each policy's rows are read in place and
        multiplied at once. The same numbers: a row's product does not depend on how many rows are
        multiplied with it (from ``MIN_PRODUCT_ROWS`` rows on; a policy with fewer is multiplied in a window
        of that many rows, its neighbours' or zeros past the batch's end), and every element-wise step is
        the same kernel on the same values (``tests/ppo/test_ppo_population.py`` checks both bodies)."""
        obs = check_obs(obs, self.spec.obs_size, self.device)
        batch = obs.shape[0]
        index = torch.as_tensor(policy_index, device=self.device)
        if index.shape != (batch,) or index.is_floating_point() or index.dtype == torch.bool:
            raise ValueError(f"policy_index must be an integer tensor of shape ({batch},), got {index.dtype} {tuple(index.shape)}")
        groups, counts = torch.unique_consecutive(index, return_counts=True)
        if (batch < self.GROUPED_MIN_WIDTH * len(groups) or bool((index[1:] < index[:-1]).any())
                or bool(((groups < 0) | (groups >= len(self))).any())):
            logits, _, new_state = self.forward(obs, state, index, episode_start)
            return logits, new_state
        h = c = out = None
        if self.recurrent:
            h, c = state if state is not None else self.initial_state(batch)
            if episode_start is not None:
                keep = (~torch.as_tensor(episode_start, dtype=torch.bool, device=self.device)).to(h.dtype)[:, None]
                h, c = h * keep, c * keep
            out = (torch.empty_like(h), torch.empty_like(c))
        logits = obs.new_empty(batch, self.spec.n_actions)
        lo = 0
        for g, rows in zip(groups.tolist(), counts.tolist()):
            x, hc = (_window(t, lo, max(rows, self.MIN_PRODUCT_ROWS)) for t in (obs, (h, c)))
            x = self._policy_body(g, x, hc, out, lo, rows)
            logits[lo:lo + rows] = torch.baddbmm(self.policy_b[g:g + 1, None], x[None], self.policy_w[g:g + 1])[0, :rows]
            lo += rows
        return logits, out

    def _policy_body(self, g: int, x, hc, out, lo: int, rows: int):
        """The body's features of rows multiplied with policy ``g``'s weights (``forward``'s arithmetic);
        recurrent: the first ``rows`` rows of (h', c') written to ``out`` from row ``lo``."""
        if not self.recurrent:
            for weight, bias in self.layers:
                x = torch.baddbmm(bias[g:g + 1, None], x[None], weight[g:g + 1])[0].tanh_()
            return x
        h, c = hc
        gates = torch.baddbmm(self.b_lstm[g:g + 1, None], x[None], self.w_ih[g:g + 1]).baddbmm_(h[None], self.w_hh[g:g + 1])[0]
        i, f, cell, o = gates.sigmoid_().chunk(4, dim=-1)  # cell = σ(2g)
        cb = f.mul(c).addcmul_(i, cell.mul_(2).sub_(1))  # σ(f)·c + σ(i)·tanh(g)
        x = o.mul(torch.sigmoid(cb * 2).mul_(2).sub_(1))  # σ(o)·tanh(c')
        out[0][lo:lo + rows], out[1][lo:lo + rows] = x[:rows], cb[:rows]
        return x


def _window(t, lo: int, rows: int):
    """Rows ``lo … lo + rows − 1`` of ``t`` (a tensor or a tuple of them; ``None`` stays ``None``): a view
    where they lie inside it, else a copy padded with zeros."""
    if isinstance(t, tuple):
        return tuple(_window(u, lo, rows) for u in t)
    if t is None or lo + rows <= t.shape[0]:
        return None if t is None else t[lo:lo + rows]
    padded = t.new_zeros(rows, *t.shape[1:])
    padded[:t.shape[0] - lo] = t[lo:]
    return padded


def stack_policies(frozens: Sequence[FrozenPPOPolicy], seed: int = 0) -> PolicyStack:
    """Stack frozen policies (one network spec) for batched population inference."""
    return PolicyStack(frozens, seed)
