"""The learner's rollout storage: ``rollout_length + 1`` steps of ``num_envs`` games, time-major.

Row ``t`` holds what the learner saw and did at step ``t`` (observation, mask, episode-start flag,
recurrent state *before* the episode-start reset, action, log-probability, value) and what followed
(reward, done). The extra last row is the step after the rollout: its value bootstraps the advantage
estimate, then it becomes row 0 of the next rollout (``carry_over``), so no transition is lost.
"""

from __future__ import annotations

import torch


class RolloutBuffer:
    FIELDS = ("obs", "masks", "starts", "actions", "log_probs", "values", "rewards", "dones")

    def __init__(self, num_envs: int, rollout_length: int, obs_size: int, n_actions: int,
                 hidden_size: int | None, device):
        self.num_envs = num_envs
        self.rollout_length = rollout_length
        rows = rollout_length + 1
        shape = (rows, num_envs)
        self.obs = torch.zeros(*shape, obs_size, device=device)
        self.masks = torch.ones(*shape, n_actions, dtype=torch.bool, device=device)
        self.starts = torch.zeros(*shape, dtype=torch.bool, device=device)
        self.actions = torch.zeros(*shape, dtype=torch.long, device=device)
        self.log_probs = torch.zeros(*shape, device=device)
        self.values = torch.zeros(*shape, device=device)
        self.rewards = torch.zeros(*shape, device=device)
        self.dones = torch.zeros(*shape, dtype=torch.bool, device=device)
        self.hidden = None
        if hidden_size is not None:
            self.hidden = (torch.zeros(*shape, hidden_size, device=device), torch.zeros(*shape, hidden_size, device=device))
        self.filled = 0  # rows with both the action and its outcome recorded
        self.pending = False  # an action was stored in row ``filled`` and awaits its reward

    @property
    def full(self) -> bool:
        return self.filled == self.rollout_length + 1

    def store_action(self, obs, mask, start, state, action, log_prob, value) -> None:
        t = self.filled
        self.obs[t] = obs
        self.masks[t] = True if mask is None else mask
        self.starts[t] = start
        self.actions[t] = action
        self.log_probs[t] = log_prob
        self.values[t] = value
        if self.hidden is not None:
            self.hidden[0][t] = state[0]
            self.hidden[1][t] = state[1]
        self.pending = True

    def store_outcome(self, reward, done) -> None:
        self.rewards[self.filled] = reward
        self.dones[self.filled] = done
        self.filled += 1
        self.pending = False

    def carry_over(self) -> None:
        """Make the bootstrap row the first row of the next rollout."""
        last = self.rollout_length
        for name in self.FIELDS:
            tensor = getattr(self, name)
            tensor[0] = tensor[last]
        if self.hidden is not None:
            for tensor in self.hidden:
                tensor[0] = tensor[last]
        self.filled = 1

    def state_dict(self) -> dict:
        state = {name: getattr(self, name).clone() for name in self.FIELDS}
        state["hidden"] = None if self.hidden is None else tuple(h.clone() for h in self.hidden)
        state.update(num_envs=self.num_envs, rollout_length=self.rollout_length, filled=self.filled, pending=self.pending)
        return state

    def load_state_dict(self, state: dict) -> None:
        for name in self.FIELDS:
            getattr(self, name).copy_(state[name])
        if self.hidden is not None:
            self.hidden[0].copy_(state["hidden"][0])
            self.hidden[1].copy_(state["hidden"][1])
        self.filled = int(state["filled"])
        self.pending = bool(state["pending"])
