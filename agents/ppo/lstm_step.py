"""The PPO loss and its gradient for the LSTM actor-critic, written out (no autograd graph).

The same loss as ``loss.ppo_loss`` on the same minibatch of sequences, for ``network.ActorCritic`` with
the LSTM body and no action mask. Where autograd replays each piece of a sequence between episode
starts as one oneDNN LSTM call and back (a few milliseconds per call for a 64-wide cell, most of an
update), this step packs every piece of the minibatch side by side and runs one loop over the longest
piece, forward then backward, in plain tensor operations.

Packing (``pack_pieces``): a sequence of ``L`` steps is cut before every episode start; each piece
becomes one column of a ``(T, S, ·)`` block (``T`` the longest piece, ``S`` the pieces), padded at its
end. The first piece of a sequence starts from the recurrent state stored at its first step (zeroed if
an episode starts there), every other piece from zeros — the state the body's ``unroll`` resets to.
Padding comes after a piece's last step, so it changes none of its outputs, and gets no gradient.

Forward, per step (PyTorch's gate order i, f, g, o; σ the logistic function):

    a = x Wᵢₕᵀ + bᵢₕ + bₕₕ + h Wₕₕᵀ,   i, f, o = σ(aᵢ), σ(a_f), σ(aₒ),   g = tanh(a_g)
    c' = f c + i g,   h' = o tanh(c')

then the heads and the loss of ``mlp_step.heads_ppo_step`` on every step's h'. Backward through time,
from the last step (δh and δc the gradients reaching h' and c', δa the pre-activation's):

    δh  = ∂loss/∂h' + δa₊₁ Wₕₕ,   δc = δc₊₁ f₊₁ + δh o (1 − tanh²(c'))
    δaᵢ = δc g i (1 − i),   δa_f = δc c f (1 − f),   δa_g = δc i (1 − g²),   δaₒ = δh tanh(c') o (1 − o)
    ∂Wₕₕ = Σ δaᵀ h,   ∂Wᵢₕ = Σ δaᵀ x,   ∂bᵢₕ = ∂bₕₕ = Σ δa

``tests/ppo/test_ppo_learning.py`` checks every parameter's gradient and the statistics against autograd
through the body's ``unroll`` and ``ppo_loss``.
"""

from __future__ import annotations

import torch

from .mlp_step import heads_ppo_step


def pack_pieces(starts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int, int]:
    """The pieces of ``(L, B)`` sequences cut before every episode start (``starts``; row 0 always begins a
    piece): ``(piece, step, first, pieces, longest)`` — each sample's piece and its step in the piece
    ``(L, B)``, each sequence's first piece ``(B,)``, the number of pieces and the longest piece's length.
    A sequence's pieces are numbered consecutively, in time order."""
    L = starts.shape[0]
    begins = starts.clone()
    begins[0] = True
    time = torch.arange(L, device=starts.device)[:, None]
    step = time - torch.cummax(torch.where(begins, time, 0), dim=0).values
    count = begins.sum(0)
    first = count.cumsum(0) - count
    piece = first + begins.cumsum(0) - 1
    return piece, step, first, int(count.sum()), int(step.max()) + 1


@torch.no_grad()
def lstm_ppo_step(network, obs, state, starts, actions, old_log_probs, advantages, returns, clip_coef: float,
                  value_coef: float, entropy_coef: float) -> dict:
    """Set every parameter's ``.grad`` of ``network`` (LSTM body, no mask) to the gradient of the PPO loss
    on a minibatch of ``B`` sequences of ``L`` steps: ``obs`` ``(L, B, obs_size)``, ``state`` the ``(h, c)``
    stored at each sequence's first step ``(B, hidden)`` each, ``starts`` ``(L, B)`` bool, the rest
    ``(L, B)``. Returns the statistics ``ppo_loss`` returns."""
    lstm = network.body.lstm
    w_ih, w_hh, b_ih, b_hh = lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0
    L, B, D = obs.shape
    H = w_hh.shape[1]
    piece, step, first, S, T = pack_pieces(starts)
    packed = (step * S + piece).reshape(L * B)  # each sample's row of the packed (T·S, ·) layout
    x = obs.new_zeros(T * S, D).index_copy_(0, packed, obs.reshape(L * B, D))
    inputs = torch.addmm(b_ih + b_hh, x, w_ih.t()).view(T, S, 4 * H)

    hs, cs = obs.new_zeros(T + 1, S, H), obs.new_zeros(T + 1, S, H)  # row t: the state entering step t
    keep = (~starts[0]).to(obs.dtype)[:, None]
    hs[0].index_copy_(0, first, state[0] * keep)
    cs[0].index_copy_(0, first, state[1] * keep)
    gates = obs.new_empty(T, S, 4 * H)  # σ of every pre-activation; the g block holds tanh instead
    tanh_c = obs.new_empty(T, S, H)
    i_gate, f_gate, g_gate, o_gate = gates.split(H, dim=2)
    # one view per step, taken at once (indexing step by step costs more than the step's arithmetic)
    h_t, c_t, x_t, gate_t, tc_t = hs.unbind(0), cs.unbind(0), inputs.unbind(0), gates.unbind(0), tanh_c.unbind(0)
    i_t, f_t, g_t, o_t = i_gate.unbind(0), f_gate.unbind(0), g_gate.unbind(0), o_gate.unbind(0)
    w_hh_t = w_hh.t()
    for t in range(T):
        pre = torch.addmm(x_t[t], h_t[t], w_hh_t)
        torch.sigmoid(pre, out=gate_t[t])
        torch.tanh(pre[:, 2 * H:3 * H], out=g_t[t])
        torch.addcmul(f_t[t] * c_t[t], i_t[t], g_t[t], out=c_t[t + 1])
        torch.tanh(c_t[t + 1], out=tc_t[t])
        torch.mul(o_t[t], tc_t[t], out=h_t[t + 1])

    d_features, stats = heads_ppo_step(network, hs[1:].view(T * S, H).index_select(0, packed), actions.reshape(-1),
                                       old_log_probs.reshape(-1), advantages.reshape(-1), returns.reshape(-1),
                                       clip_coef, value_coef, entropy_coef)
    d_h = obs.new_zeros(T * S, H).index_copy_(0, packed, d_features).view(T, S, H)

    # δa = (per gate block) [g, c, i, tanh c'] · σ' (or 1 − g²) times [δc, δc, δc, δh]
    slope = gates * (1 - gates)
    slope[..., 2 * H:3 * H] = 1 - g_gate * g_gate
    factor = torch.cat((g_gate, cs[:-1], i_gate, tanh_c), dim=2).mul_(slope).view(T, S, 4, H).unbind(0)
    through_c = (o_gate * (1 - tanh_c * tanh_c)).unbind(0)  # ∂h'/∂c'
    d_pre = obs.new_zeros(T + 1, S, 4 * H)  # row T: nothing after the last step
    d_pre_t, d_pre_4 = d_pre.unbind(0), d_pre.view(T + 1, S, 4, H).unbind(0)
    d_h_t = d_h.unbind(0)
    d_c = obs.new_zeros(S, H)
    for t in range(T - 1, -1, -1):
        d_ht = torch.addmm(d_h_t[t], d_pre_t[t + 1], w_hh)
        d_c = torch.addcmul(d_c, d_ht, through_c[t])
        torch.mul(factor[t], torch.stack((d_c, d_c, d_c, d_ht), dim=1), out=d_pre_4[t])
        d_c = d_c * f_t[t]
    d_pre = d_pre[:T].view(T * S, 4 * H)
    d_bias = d_pre.sum(0)
    for param, grad in ((w_ih, d_pre.t() @ x), (w_hh, d_pre.t() @ hs[:-1].view(T * S, H)), (b_ih, d_bias),
                        (b_hh, d_bias.clone())):
        param.grad = grad
    return stats
