"""Supervised loss and accuracy of the AlphaStar network (docs/design/alphastar.md §3)."""

from __future__ import annotations

import math

import torch
from selfplay.agents.alphastar import HEADS, AlphaStarConfig, AlphaStarNet
from selfplay.agents.alphastar.supervised import per_head_accuracy, supervised_loss
from selfplay.agents.alphastar.synthetic import random_obs

SMALL = AlphaStarConfig.tiny()


def test_supervised_loss_is_masked_cross_entropy_and_learning_reduces_it():
    torch.manual_seed(0)
    teacher, student = AlphaStarNet(SMALL), AlphaStarNet(SMALL)
    obs = random_obs(SMALL, 4, 3, 5, seed=1)
    with torch.no_grad():
        labels = teacher(obs, generator=torch.Generator().manual_seed(2), temperature=0.3).actions
    mask = torch.ones(4, 3, dtype=torch.bool)
    mask[0, 2] = False  # a padded step
    out = student(obs, actions=labels)
    terms = supervised_loss(out, mask)
    # action type by hand: −log softmax(logits)[label], mean over the 11 valid steps
    lp = torch.log_softmax(out.logits["action_type"], -1).gather(-1, labels.action_type[..., None]).squeeze(-1)
    torch.testing.assert_close(terms["ce_action_type"], -(lp * mask).sum() / 11)
    torch.testing.assert_close(terms["total"], sum(terms[f"ce_{h}"] for h in HEADS))
    acc0 = per_head_accuracy(out, mask)
    # accuracy by hand for two heads: argmax == label over the valid steps that use the head
    for head in ("action_type", "delay"):
        used = out.argument_used[head] & mask
        hits = (out.logits[head].argmax(-1) == getattr(labels, head)) & used
        assert acc0[head] == float(hits.sum()) / float(used.sum())
    assert 0.0 < acc0["action_type"] < 1.0  # an informative case: neither all right nor all wrong
    opt = torch.optim.Adam(student.parameters(), lr=1e-2)
    for _ in range(12):
        opt.zero_grad()
        loss = supervised_loss(student(obs, actions=labels), mask)["total"]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(student.parameters(), 0.5)
        opt.step()
    out = student(obs, actions=labels)
    assert float(supervised_loss(out, mask)["total"]) < 0.5 * float(terms["total"])
    acc = per_head_accuracy(out, mask)
    assert acc["action_type"] == 1.0 > acc0["action_type"]
    for head in HEADS:  # NaN exactly for heads that no valid step uses
        assert math.isnan(acc[head]) == (not bool((out.argument_used[head] & mask).any())), head
