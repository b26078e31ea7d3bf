"""Seed derivation: one rule for every random stream a run splits off its seed.

Every stream has a name, listed once in :class:`Stream`, and optional integer indices (a side, a
player, a worker, a weight version, a block of games). Its seed is a stable hash of the run's seed,
the name and the indices, so

- two streams of one run never share a seed (different names or indices give different hashes), and
- streams of *different* runs never share one either: run seed 0's learner of player 1 and run seed
  1's learner of player 0 are ``derive_seed(0, LEARNER, 1)`` and ``derive_seed(1, LEARNER, 0)``,
  unrelated numbers (an arithmetic rule such as ``seed + 1 + i`` would make them equal).

The hash is BLAKE2b (``hashlib``), not Python's ``hash()``: the same names give the same seed on every
machine, process and Python version.
"""

from __future__ import annotations

import functools
import hashlib
from enum import StrEnum

import numpy as np

SEED_BITS = 63  # seeds fit torch's and numpy's generators (non-negative, < 2⁶³)


class Stream(StrEnum):
    """The named random streams of the suite (indices in brackets)."""

    LEARNER = "learner"  # a learner: its action sampling, its initial weights from it [side or player index]
    INITIAL_WEIGHTS = "initial-weights"  # a PPO learner's initial weights, from the learner's seed
    ENV = "env"  # a training environment's games [side or player index, (Ray) 1 + worker]
    ENV_RESUMED = "env-resumed"  # a resumed run's environment [player or side index, its updates; (Ray) player index, 1 + worker, generation resumed from]
    SAMPLER = "sampler"  # the trainer's generator: seats, opponents drawn, curation [(Ray) 1 + worker, (resumed) generation]
    START_POLICY = "start-policy"  # the league's initial policy every player starts from
    SNAPSHOT = "snapshot"  # the action sampling of a learner's frozen snapshot [weight version]
    MATCH_ENV = "match-env"  # an evaluation block's environment [block]
    MATCH_POLICY = "match-policy"  # an evaluation block's action sampling [block, (policy)]
    SCRIPTED_GAMES = "scripted-games"  # the games of an evaluation against the environment's scripted AI
    MATCH_CALL = "match-call"  # the games of one call of a repeated evaluation (PSRO's meta-game) [call]
    VS_START = "vs-start"  # the league report's games against the starting policy
    RPP = "rpp"  # the cross-population game of two runs [seed of the second, scheme x, scheme y]
    SL_EPOCH = "sl-epoch"  # supervised learning: the order of an epoch's sequences [epoch]
    SL_SPLIT = "sl-split"  # supervised learning: the train/validation split of the games
    SL_NETWORK = "sl-network"  # supervised learning: the network's initial weights
    DEMONSTRATIONS = "demonstrations"  # supervised learning: the recorded games [0: battle, 1: perturbations]
    SL_EVALUATION = "sl-evaluation"  # supervised learning: games against the scripted AI [0: battle, 1: policy]
    REFERENCE = "reference"  # the embedding basis's reference agents [agent]


def _encode(key: Stream | str | int) -> bytes:
    if isinstance(key, Stream):
        return b"s:" + key.value.encode()
    if isinstance(key, str):
        return b"s:" + key.encode()
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return b"i:" + str(int(key)).encode()
    raise ValueError(f"stream keys must be a Stream, a name (str) or an integer index, got {key!r}")


def derive_seed(seed: int, stream: Stream | str, *indices: int) -> int:
    """The seed of stream ``stream`` (indices ``indices``) of a run seeded ``seed``.

    ``derive_seed(s, name, i, j) = BLAKE2b-64("s" | name | i | j) >> 1`` (each key written out with its
    type, separated by ``|``): non-negative, below 2⁶³, the same on every machine.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    if not isinstance(stream, (Stream, str)):
        raise ValueError(f"stream must be a Stream (or its name), got {stream!r}: name the stream, then its indices")
    text = b"|".join([b"i:" + str(int(seed)).encode(), _encode(stream), *map(_encode, indices)])
    digest = hashlib.blake2b(text, digest_size=8).digest()
    return int.from_bytes(digest, "little") >> (64 - SEED_BITS)


def keeps_global_rng(init):
    """Decorator for an ``nn.Module``'s ``__init__``: torch's layers draw a first initialisation from
    torch's global generator as they are built; run inside ``torch.random.fork_rng`` (CPU), those draws
    leave the caller's generator state as it was. (The suite's networks then initialise their
    parameters from their own seeded generators.)"""

    @functools.wraps(init)
    def wrapper(*args, **kwargs):
        import torch

        with torch.random.fork_rng(devices=[]):
            return init(*args, **kwargs)

    return wrapper

