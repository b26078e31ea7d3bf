"""The PPO learners' rollout storage: ``rollout_length + 1`` steps of ``num_envs`` games, time-major.

Row ``t`` holds what the learner saw and did at step ``t`` (its inputs, mask, episode-start flag,
recurrent states, actions, log-probabilities, values) and what followed (reward, done). The extra
last row is the step after the rollout: its value bootstraps the advantage estimate, then it becomes
row 0 of the next rollout (``carry_over``), so no transition is lost.

One class for both learners: the one-unit learner stores ``obs`` and per-game rows, the multi-unit
learner ``actor_in``/``critic_in`` and per-unit rows; each names its fields and their shapes.
"""

from __future__ import annotations

import torch

#: the fields every PPO rollout has besides the learner's inputs: name -> dtype
COMMON = {"masks": torch.bool, "starts": torch.bool, "actions": torch.long, "log_probs": torch.float32,
          "values": torch.float32, "rewards": torch.float32, "dones": torch.bool}


class RolloutBuffer:
    """Time-major rollout rows. ``shapes``: each field's shape after ``(rows, num_envs)`` (every name of
    ``COMMON`` plus the learner's input fields, which are float); ``rnn``: the shapes of the recurrent
    state tensors stored per row (``()``: none). Masks start all True (no mask: every action legal)."""

    def __init__(self, num_envs: int, rollout_length: int, shapes: dict[str, tuple], rnn: tuple = (), device="cpu"):
        self.num_envs, self.rollout_length = num_envs, rollout_length
        self.fields = tuple(shapes)
        lead = (rollout_length + 1, num_envs)
        for name, shape in shapes.items():
            dtype = COMMON.get(name, torch.float32)
            fill = torch.ones if name == "masks" else torch.zeros
            setattr(self, name, fill(*lead, *shape, dtype=dtype, device=device))
        self.rnn = tuple(torch.zeros(*lead, *shape, device=device) for shape in rnn)
        self.filled = 0  # rows with both the action and its outcome recorded
        self.pending = False  # an action was stored in row ``filled`` and awaits its reward

    @property
    def full(self) -> bool:
        return self.filled == self.rollout_length + 1

    def store_action(self, rnn: tuple = (), **row) -> None:
        """Store row ``filled``'s fields (a ``masks`` of ``None``: every action legal) and recurrent states."""
        t = self.filled
        for name, value in row.items():
            getattr(self, name)[t] = True if name == "masks" and value is None else value
        for buf, value in zip(self.rnn, rnn):
            buf[t] = value
        self.pending = True

    def store_outcome(self, reward, done) -> None:
        self.rewards[self.filled] = reward
        self.dones[self.filled] = done
        self.filled += 1
        self.pending = False

    def carry_over(self) -> None:
        """Make the bootstrap row the first row of the next rollout."""
        last = self.rollout_length
        for tensor in [getattr(self, name) for name in self.fields] + list(self.rnn):
            tensor[0] = tensor[last]
        self.filled = 1

    def state_dict(self) -> dict:
        state = {name: getattr(self, name).clone() for name in self.fields}
        state.update(rnn=tuple(r.clone() for r in self.rnn), num_envs=self.num_envs,
                     rollout_length=self.rollout_length, filled=self.filled, pending=self.pending)
        return state

    def load_state_dict(self, state: dict) -> None:
        for name in self.fields:
            getattr(self, name).copy_(state[name])
        saved_rnn = state["rnn"] if "rnn" in state else (state.get("hidden") or ())  # "hidden": older one-unit files
        for mine, saved in zip(self.rnn, saved_rnn):
            mine.copy_(saved)
        self.filled, self.pending = int(state["filled"]), bool(state["pending"])
