"""Menagerie checkpoints of frozen PPO policies: small files holding the network spec and weights.

One file format for every PPO policy family (one-unit and multi-unit): a dict with the format name
and version, the network spec, the weight version, the sampling seed and the weights; written
atomically (temporary file, then rename).

Loading a saved checkpoint outside the suite (any script; files are read with
``torch.load(weights_only=True)``, so loading runs no code from the file)::

    import torch
    from selfplay.agents.ppo import load_policy

    policy = load_policy("runs/compare/runs/ppo-mlp/psro-s0/checkpoints/policy_000012.pt")
    obs = torch.zeros(4, policy.obs_size)  # a batch of 4 observations, from the policy's own view
    action, state, info = policy.act(obs)  # sampled actions (4,); deterministic=True: the argmax
    probabilities = info["logits"].softmax(-1)

A run's ``checkpoints/index.json`` (one line per checkpoint: id, learner step, episode, file) names
the file of each evaluation checkpoint; ``selfplay.evaluation.runs.load_checkpoint_policies(run_dir)``
loads them all, in order. Recurrent policies (``ppo-rnn``) carry ``state`` from one call to the next
(``policy.initial_state(batch)`` to start) and take ``episode_start``.
"""

from __future__ import annotations

from pathlib import Path

import torch
from selfplay.agents.ppo.frozen import FrozenPPOPolicy
from selfplay.agents.ppo.network import ActorCritic, NetworkSpec

from selfplay.utils.io import atomic_write, load_torch_data

FORMAT = "selfplay.ppo.policy"
FORMAT_VERSION = 1


def write_policy_file(path, format_name: str, frozen, version: int = FORMAT_VERSION) -> Path:
    """Write a frozen policy (``spec``, ``network``, ``weight_version``, ``seed``) under ``format_name``."""
    payload = {
        "format": format_name,
        "format_version": version,
        "spec": frozen.spec.to_dict(),
        "weight_version": frozen.weight_version,
        "seed": frozen.seed,
        "weights": {name: t.detach().cpu() for name, t in frozen.network.state_dict().items()},
    }
    return atomic_write(path, lambda tmp: torch.save(payload, tmp))


def read_policy_file(path, format_name: str, device="cpu", version: int = FORMAT_VERSION) -> dict:
    """The payload of a file written by ``write_policy_file`` under ``format_name``."""
    payload = load_torch_data(Path(path), f"{format_name} file")
    if not isinstance(payload, dict) or payload.get("format") != format_name:
        raise ValueError(f"path must point to a {format_name} file written by save_policy, got {path}")
    if payload.get("format_version") != version:
        raise ValueError(f"path holds format version {payload.get('format_version')}, this code reads {version}")
    return payload


def save_policy(frozen: FrozenPPOPolicy, path) -> Path:
    """Write ``frozen`` to ``path`` atomically; returns the path."""
    if not isinstance(frozen, FrozenPPOPolicy):
        raise ValueError(f"frozen must be a FrozenPPOPolicy, got {type(frozen).__name__}")
    return write_policy_file(path, FORMAT, frozen)


def load_policy(path, device="cpu") -> FrozenPPOPolicy:
    """Read a policy written by ``save_policy``."""
    payload = read_policy_file(path, FORMAT, device)
    with torch.device("meta"):  # no initialisation to draw: the file's weights become the parameters
        network = ActorCritic(NetworkSpec(**payload["spec"]))
    network.load_state_dict(payload["weights"], assign=True)
    return FrozenPPOPolicy(network.to(device), payload["weight_version"], payload["seed"])
