"""Every size of the AlphaStar network, in one dataclass (docs/design/alphastar.md §2).

The defaults are the "small" column of the design's table: the scale that trains on our machines.
The AlphaStar column is reachable by changing fields (``AlphaStarConfig.alphastar_scale()`` gives
the published sizes where the design names them).

Two small records describe the parts of the input and action space that are not plain sizes:

* ``ScalarFeature`` — one named scalar input (its width, the width of its own embedding, and
  whether it goes to the scalar list or to the *scalar context* that gates the heads; design §2,
  "scalar encoder").
* ``ActionTypeSpec`` — one action type and the arguments it uses (the per-action-type table of
  design §2: "every head output is multiplied by a mask saying whether the chosen action type uses
  that argument"). The default table is the SMAC commander's action set of design §5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class ScalarFeature:
    """One scalar input: ``size`` numbers, embedded by its own linear+ReLU into ``embedding_size``.

    ``context=True`` appends the embedding to the context list (→ ``scalar_context``, which gates
    the action-type head, the autoregressive embedding); otherwise to the scalar list
    (→ ``embedded_scalar``, an input of the LSTM core).
    """

    name: str
    size: int
    embedding_size: int
    context: bool = False


@dataclass(frozen=True)
class ActionTypeSpec:
    """One action type and which arguments it uses (delay is always used).

    ``unit_types`` lists the unit-type ids that can carry out the action (the selected-units
    head's ``func_embed`` is built from this multi-hot); ``None`` means every unit type.
    """

    name: str
    queued: bool = False
    selected_units: bool = False
    target_unit: bool = False
    location: bool = False
    unit_types: tuple[int, ...] | None = None


@dataclass(frozen=True)
class BaselineSpec:
    """One value baseline, for one reward the agent is trained on (design §4: Σ over rewards).

    ``squash=True`` maps the output through (2/π)·atan((π/2)·x) into (−1, 1), right for a win/loss
    return; a dense or pseudo-reward baseline uses ``squash=False``.
    """

    name: str
    squash: bool = True


# The single-commander SMAC action set of design §5 (no-op, stop, move, attack unit, attack-move,
# heal unit). The SMAC adapter may pass its own table.
SMAC_ACTION_TYPES: tuple[ActionTypeSpec, ...] = (
    ActionTypeSpec("no_op"),
    ActionTypeSpec("stop", queued=True, selected_units=True),
    ActionTypeSpec("move", queued=True, selected_units=True, location=True),
    ActionTypeSpec("attack_unit", queued=True, selected_units=True, target_unit=True),
    ActionTypeSpec("attack_move", queued=True, selected_units=True, location=True),
    ActionTypeSpec("heal_unit", queued=True, selected_units=True, target_unit=True),
)


# The six action arguments, in the order the heads run (design §2).
HEADS = ("action_type", "delay", "queued", "selected_units", "target_unit", "location")


def _positive(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


# AlphaStarNetworkConfig's fields that must be positive integers
POSITIVE_FIELDS = (
    "entity_feature_size",
    "max_entities",
    "num_unit_types",
    "spatial_channels",
    "spatial_size",
    "entity_d_model",
    "entity_heads",
    "entity_layers",
    "entity_ff_size",
    "entity_embedding_size",
    "embedded_entity_size",
    "spatial_stem_channels",
    "spatial_resblocks",
    "embedded_spatial_size",
    "embedded_scalar_size",
    "scalar_context_size",
    "lstm_size",
    "lstm_layers",
    "action_type_hidden",
    "action_type_resblocks",
    "autoregressive_embedding_size",
    "num_delays",
    "delay_hidden",
    "queue_hidden",
    "max_selected_units",
    "unit_key_size",
    "selected_units_lstm_size",
    "func_embed_size",
    "location_resolution",
    "value_hidden",
    "value_resblocks",
)


@dataclass(frozen=True)
class AlphaStarConfig:
    """Sizes of the AlphaStar network (design §2; defaults = the small column).

    Inputs
        entity_feature_size   F of the entity rows ``[B, T, N, F]``
        max_entities          N at most (padding size; SMAC's largest battle has 57 units)
        num_unit_types        unit-type ids used by ``ActionTypeSpec.unit_types``
        spatial_channels      C of the spatial planes ``[B, T, C, H, W]``
        spatial_size          H = W of the planes
        scalar_features       the scalar inputs; ``None`` → ``default_scalar_features()``
    Entity encoder (transformer)
        entity_d_model, entity_heads, entity_layers, entity_ff_size, entity_dropout,
        entity_embedding_size (conv1d k=1 output per entity), embedded_entity_size (pooled).
        entity_dropout is 0 by default so that the learner's teacher-forced log-probabilities equal
        the actor's (the V-trace ratios are then exactly 1 on-policy); set it for SL if wanted.
    Spatial encoder
        scatter_channels (entity embeddings scattered onto the map by position and stacked on the
        planes; 0 turns it off), spatial_stem_channels (1×1 conv), spatial_downsample_channels (one stride-2 conv each),
        spatial_resblocks, embedded_spatial_size
    Scalar encoder
        embedded_scalar_size, scalar_context_size
    Core
        lstm_size, lstm_layers
    Heads
        action_types (table; ``num_action_types`` = its length), action_type_hidden,
        action_type_resblocks, autoregressive_embedding_size, num_delays, delay_hidden,
        queue_hidden, max_selected_units, unit_key_size, selected_units_lstm_size,
        func_embed_size, location_resolution (output grid side; upsampled from the map_skip grid)
    Value
        baselines (one value head per reward; the first is ``AlphaStarOutput.value``),
        value_hidden, value_resblocks
    """

    # inputs
    entity_feature_size: int = 32
    max_entities: int = 64
    num_unit_types: int = 16
    spatial_channels: int = 8
    spatial_size: int = 32
    scalar_features: tuple[ScalarFeature, ...] | None = None
    # entity encoder
    entity_d_model: int = 64
    entity_heads: int = 2
    entity_layers: int = 3
    entity_ff_size: int = 128
    entity_dropout: float = 0.0
    entity_embedding_size: int = 64
    embedded_entity_size: int = 64
    # spatial encoder
    scatter_channels: int = 8
    spatial_stem_channels: int = 16
    spatial_downsample_channels: tuple[int, ...] = (32, 32)
    spatial_resblocks: int = 2
    embedded_spatial_size: int = 64
    # scalar encoder
    embedded_scalar_size: int = 64
    scalar_context_size: int = 32
    # core
    lstm_size: int = 128
    lstm_layers: int = 1
    # heads
    action_types: tuple[ActionTypeSpec, ...] = SMAC_ACTION_TYPES
    action_type_hidden: int = 128
    action_type_resblocks: int = 2
    autoregressive_embedding_size: int = 128
    num_delays: int = 8
    delay_hidden: int = 64
    queue_hidden: int = 32
    max_selected_units: int = 32
    unit_key_size: int = 32
    selected_units_lstm_size: int = 32
    func_embed_size: int = 64
    location_resolution: int = 32
    # value baselines
    baselines: tuple[BaselineSpec, ...] = (BaselineSpec("win_loss"),)
    value_hidden: int = 128
    value_resblocks: int = 2

    def __post_init__(self) -> None:
        for name in POSITIVE_FIELDS:
            _positive(name, getattr(self, name))
        self._check_encoders()
        self._check_heads()
        names = [b.name for b in self.baselines]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"baselines must list at least one BaselineSpec with unique names, got {names}")
        self._check_scalar_features()

    def _check_encoders(self) -> None:
        """The entity encoder's heads and dropout, the scatter and the spatial downsampling fit together."""
        if not isinstance(self.scatter_channels, int) or self.scatter_channels < 0:
            raise ValueError(f"scatter_channels must be an int ≥ 0 (0: no scatter), got {self.scatter_channels!r}")
        if self.entity_d_model % self.entity_heads:
            raise ValueError(
                f"entity_d_model ({self.entity_d_model}) must be divisible by entity_heads ({self.entity_heads})"
            )
        if not 0.0 <= self.entity_dropout < 1.0:
            raise ValueError(f"entity_dropout must be in [0, 1), got {self.entity_dropout}")
        if len(self.spatial_downsample_channels) < 1:
            raise ValueError("spatial_downsample_channels must name at least one downsampling conv")
        for c in self.spatial_downsample_channels:
            _positive("spatial_downsample_channels[i]", c)
        if self.spatial_size % (2 ** len(self.spatial_downsample_channels)):
            raise ValueError(
                f"spatial_size ({self.spatial_size}) must be divisible by 2**len(spatial_downsample_channels)"
                f" = {2 ** len(self.spatial_downsample_channels)}"
            )

    def _check_heads(self) -> None:
        """The location head's map sizes, and every action type's arguments and unit types."""
        skip = self.map_skip_size
        if self.autoregressive_embedding_size % (skip * skip):
            raise ValueError(
                f"autoregressive_embedding_size ({self.autoregressive_embedding_size}) must be divisible by"
                f" map_skip_size**2 = {skip * skip} (the location head reshapes it to a map)"
            )
        ratio = self.location_resolution / skip
        if ratio < 1 or 2 ** round(math.log2(ratio)) != ratio:
            raise ValueError(
                f"location_resolution ({self.location_resolution}) must be map_skip_size ({skip}) times a power of 2"
            )
        if len(self.action_types) < 1:
            raise ValueError("action_types must list at least one ActionTypeSpec")
        for spec in self.action_types:
            if spec.target_unit and spec.location:
                raise ValueError(f"action type {spec.name!r} may use target_unit or location, not both")
            for u in spec.unit_types or ():
                if not 0 <= u < self.num_unit_types:
                    raise ValueError(
                        f"action type {spec.name!r}: unit_types entries must be in [0, num_unit_types), got {u}"
                    )

    def _check_scalar_features(self) -> None:
        """Unique names, context and non-context features both present, positive sizes."""
        features = self.scalar_features
        if features is not None:
            names = [f.name for f in features]
            if len(set(names)) != len(names):
                raise ValueError(f"scalar_features names must be unique, got {names}")
            if not any(f.context for f in features) or all(f.context for f in features):
                raise ValueError("scalar_features need at least one context and one non-context feature")
            for f in features:
                _positive(f"scalar_features[{f.name!r}].size", f.size)
                _positive(f"scalar_features[{f.name!r}].embedding_size", f.embedding_size)

    # derived sizes ---------------------------------------------------------------------------
    @property
    def num_action_types(self) -> int:
        return len(self.action_types)

    @property
    def map_skip_size(self) -> int:
        """Side of the downsampled grid (spatial_size / 2**number of downsampling convs)."""
        return self.spatial_size // (2 ** len(self.spatial_downsample_channels))

    @property
    def map_skip_channels(self) -> int:
        return self.spatial_downsample_channels[-1]

    @property
    def location_upsamples(self) -> int:
        """Number of stride-2 transposed convs from the map_skip grid to the location grid."""
        return round(math.log2(self.location_resolution / self.map_skip_size))

    @property
    def scalar_feature_list(self) -> tuple[ScalarFeature, ...]:
        return self.scalar_features if self.scalar_features is not None else self.default_scalar_features()

    @property
    def scalar_input_size(self) -> int:
        """Width of the packed scalar tensor (features concatenated in ``scalar_feature_list`` order)."""
        return sum(f.size for f in self.scalar_feature_list)

    def default_scalar_features(self) -> tuple[ScalarFeature, ...]:
        """The scalars of design §1 for SMAC: time, unit counts per side, last action, available actions."""
        return (
            ScalarFeature("game_time", 1, 16),
            ScalarFeature("own_unit_counts", self.num_unit_types, 32),
            ScalarFeature("enemy_unit_counts", self.num_unit_types, 32),
            ScalarFeature("last_action_type", self.num_action_types, 32),
            ScalarFeature("last_delay", self.num_delays, 16),
            ScalarFeature("last_queued", 2, 8),
            ScalarFeature("available_action_types", self.num_action_types, 32, context=True),
            ScalarFeature("own_unit_types_present", self.num_unit_types, 32, context=True),
        )

    @classmethod
    def alphastar_scale(cls, **overrides) -> AlphaStarConfig:
        """The AlphaStar column of design §2 where it names a size (128² map → 16², 3×384 LSTM, ...)."""
        sizes = dict(
            max_entities=512,
            entity_d_model=128,
            entity_heads=2,
            entity_ff_size=1024,
            entity_embedding_size=256,
            embedded_entity_size=256,
            spatial_size=128,
            spatial_stem_channels=32,
            spatial_downsample_channels=(64, 128, 128),
            spatial_resblocks=4,
            embedded_spatial_size=256,
            embedded_scalar_size=256,
            scalar_context_size=128,
            lstm_size=384,
            lstm_layers=3,
            action_type_hidden=256,
            action_type_resblocks=16,
            autoregressive_embedding_size=1024,
            num_delays=128,
            delay_hidden=256,
            queue_hidden=256,
            max_selected_units=64,
            unit_key_size=32,
            selected_units_lstm_size=32,
            func_embed_size=256,
            location_resolution=256,
            value_hidden=256,
            value_resblocks=16,
        )
        sizes.update(overrides)
        return cls(**sizes)

    @classmethod
    def tiny(cls, **overrides) -> AlphaStarConfig:
        """A reduced size for tests and smoke runs (16² map, d_model 32, LSTM 48)."""
        sizes = dict(
            spatial_size=16,
            spatial_downsample_channels=(8, 8),
            spatial_stem_channels=8,
            entity_d_model=32,
            entity_ff_size=64,
            autoregressive_embedding_size=64,
            max_selected_units=4,
            location_resolution=16,
            lstm_size=48,
        )
        sizes.update(overrides)
        return cls(**sizes)

    def replace(self, **changes) -> AlphaStarConfig:
        return replace(self, **changes)
