"""Random but well-formed network inputs, for smoke tests and benchmarks (not a game).

``random_obs`` fills every field of ``AlphaStarObs`` the way an adapter would: the first
``num_units`` entity slots hold units (the rest is padding), the first half of them are "own" units
(selectable), the others "enemies" (targetable), some action types are unavailable, and a random
quarter of the map is illegal for location arguments. Every draw comes from ``seed``.
"""

from __future__ import annotations

import torch

from .config import AlphaStarConfig
from .network import AlphaStarObs


def random_obs(
    config: AlphaStarConfig,
    batch: int,
    time: int,
    num_units: int,
    num_slots: int | None = None,
    seed: int = 0,
    per_action_type_masks: bool = False,
) -> AlphaStarObs:
    """Observation ``[batch, time, ...]`` with ``num_units`` present units in ``num_slots`` entity slots."""
    num_slots = num_units if num_slots is None else num_slots
    if not 1 <= num_units <= num_slots <= config.max_entities:
        raise ValueError(
            f"need 1 ≤ num_units ({num_units}) ≤ num_slots ({num_slots}) ≤ max_entities ({config.max_entities})"
        )
    g = torch.Generator().manual_seed(seed)
    B, T, N, A, R = batch, time, num_slots, config.num_action_types, config.location_resolution
    present = torch.zeros(B, T, N, dtype=torch.bool)
    present[..., :num_units] = True
    own = torch.zeros(B, T, N, dtype=torch.bool)
    own[..., : max(1, num_units // 2)] = True
    enemy = present & ~own
    if not bool(enemy.any(-1).all()):
        enemy = present.clone()
    available = torch.rand(B, T, A, generator=g) < 0.7
    available[..., 0] = True  # no-op is always available
    location = torch.rand(B, T, R, R, generator=g) > 0.25
    selectable, targetable = own, enemy
    if per_action_type_masks:
        selectable = own[:, :, None, :] & (torch.rand(B, T, A, N, generator=g) < 0.8)
        selectable[..., 0] = own[..., 0, None]  # at least the first own unit
        targetable = enemy[:, :, None, :].expand(B, T, A, N).clone()
        location = location[:, :, None].expand(B, T, A, R, R) & (torch.rand(B, T, A, R, R, generator=g) > 0.1)
        location[..., 0, 0] = True
    return AlphaStarObs(
        entities=torch.randn(B, T, N, config.entity_feature_size, generator=g) * present[..., None],
        entity_mask=present,
        spatial=torch.randn(B, T, config.spatial_channels, config.spatial_size, config.spatial_size, generator=g),
        scalars=torch.randn(B, T, config.scalar_input_size, generator=g),
        available_action_types=available,
        entity_positions=torch.randint(0, config.spatial_size, (B, T, N, 2), generator=g),
        selectable_units=selectable,
        targetable_units=targetable,
        location_mask=location,
        opponent_scalars=torch.randn(B, T, config.scalar_input_size, generator=g),
    )
