"""Menagerie checkpoints of frozen PPO policies: small files holding the network spec and weights."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import torch

from agents.ppo.frozen import FrozenPPOPolicy
from agents.ppo.network import ActorCritic, NetworkSpec

FORMAT = "selfplay.ppo.policy"
FORMAT_VERSION = 1


def save_policy(frozen: FrozenPPOPolicy, path) -> Path:
    """Write ``frozen`` to ``path`` atomically (temporary file, then rename); returns the path."""
    if not isinstance(frozen, FrozenPPOPolicy):
        raise ValueError(f"frozen must be a FrozenPPOPolicy, got {type(frozen).__name__}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "spec": frozen.spec.to_dict(),
        "weight_version": frozen.weight_version,
        "seed": frozen.seed,
        "weights": {name: t.detach().cpu() for name, t in frozen.network.state_dict().items()},
    }
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return path


def load_policy(path, device="cpu") -> FrozenPPOPolicy:
    """Read a policy written by ``save_policy``."""
    payload = torch.load(Path(path), map_location=device, weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"path must point to a {FORMAT} file written by save_policy, got {path}")
    if payload.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"path holds format version {payload.get('format_version')}, this code reads {FORMAT_VERSION}")
    network = ActorCritic(NetworkSpec(**payload["spec"])).to(device)
    network.load_state_dict(payload["weights"])
    return FrozenPPOPolicy(network, payload["weight_version"], payload["seed"])
