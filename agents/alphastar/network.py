"""The whole AlphaStar network: encoders → LSTM core → six autoregressive heads + value
(docs/design/alphastar.md §2).

One forward pass, two modes:

* sampling (``actions=None``): every head samples its argument from softmax(logits / temperature);
* teacher forcing (``actions`` given): every head uses the given argument instead.

Both modes return the same ``AlphaStarOutput``: the actions, per-head (masked, temperature-scaled)
logits, per-head log-probabilities of the actions and entropies, which arguments the chosen action
type uses, the value, the new LSTM state and the entity encoder's attention maps.

Argument masks (design §2, "every head output is multiplied by a mask saying whether the chosen action
type uses that argument"): for every head except action type and delay, ``argument_used[head]`` is
the chosen action type's row of the table in ``config.action_types``. Unused arguments get the value
−1, zero logits, zero log-probability and zero entropy — hence no loss and no gradient. Legal-choice
masks come from the observation: available action types, selectable/targetable units (per entity,
optionally per action type) and legal locations (optionally per action type).
An action type whose required argument has no legal choice (no selectable unit, no target) must be
marked unavailable by the adapter; the heads then never face an empty choice.

Shapes: ``B`` games, ``T`` steps, ``N`` entity slots (≤ ``max_entities``), ``S`` =
``max_selected_units``, ``R`` = ``location_resolution`` (location index = y·R + x).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch
from torch import nn

from .config import HEADS, AlphaStarConfig
from .core import Core, LSTMState
from .distributions import entropy, log_prob
from .entity_encoder import EntityEncoder
from .entity_scatter import EntityScatter
from .heads import (
    ActionTypeHead,
    CategoricalArgumentHead,
    LocationHead,
    SelectedUnitsHead,
    TargetUnitHead,
    ValueBaseline,
)
from .scalar_encoder import ScalarEncoder, split_scalars
from .spatial_encoder import SpatialEncoder

UNUSED = -1


@dataclass
class AlphaStarObs:
    """Network inputs, batch-major ``[B, T, ...]`` (filled by an environment adapter).

    entities                ``[B, T, N, F]`` float
    entity_mask             ``[B, T, N]`` bool — which entity slots hold a unit
    spatial                 ``[B, T, C, H, W]`` float
    entity_positions        ``[B, T, N, 2]`` int map cells (x, y) of the entities, for the scatter
                            connection; required when ``config.scatter_channels > 0``
    scalars                 dict ``{name: [B, T, size]}`` or packed ``[B, T, scalar_input_size]``
    available_action_types  ``[B, T, A]`` bool
    selectable_units        ``[B, T, N]`` or per action type ``[B, T, A, N]`` bool; None → present units
    targetable_units        same shapes as selectable_units; None → present units
    location_mask           ``[B, T, R, R]`` or ``[B, T, A, R, R]`` bool; None → every location
    opponent_scalars        like scalars, seen by the value baseline only; None → zeros
    episode_start           ``[B, T]`` bool; resets the LSTM state before that step; None → no reset
    """

    entities: torch.Tensor
    entity_mask: torch.Tensor
    spatial: torch.Tensor
    scalars: torch.Tensor | dict
    available_action_types: torch.Tensor
    selectable_units: torch.Tensor | None = None
    targetable_units: torch.Tensor | None = None
    location_mask: torch.Tensor | None = None
    entity_positions: torch.Tensor | None = None
    opponent_scalars: torch.Tensor | dict | None = None
    episode_start: torch.Tensor | None = None


@dataclass
class AlphaStarActions:
    """The six arguments, batch-major ``[B, T]`` (selected units ``[B, T, S]``), ``-1`` where unused.

    ``selected_units`` lists unit indices in pick order, then −1 (the end-of-selection token is
    implicit when fewer than S units are picked).
    """

    action_type: torch.Tensor
    delay: torch.Tensor
    queued: torch.Tensor
    selected_units: torch.Tensor
    target_unit: torch.Tensor
    location: torch.Tensor

    def time_major(self) -> AlphaStarActions:
        return AlphaStarActions(**{f.name: getattr(self, f.name).transpose(0, 1) for f in fields(self)})


@dataclass
class AlphaStarOutput:
    """What one forward pass returns (batch-major unless ``time_major()`` was called).

    logits[head]            masked, temperature-scaled, zero where the argument is unused:
                            action_type [B,T,A], delay [B,T,D], queued [B,T,2],
                            selected_units [B,T,S,N+1] (last column = end token),
                            target_unit [B,T,N], location [B,T,R·R]
    log_probs[head]         ``[B, T]`` log π(argument); selected units: sum over active picks
    entropies[head]         ``[B, T]`` entropy in nats; selected units: sum over active picks
    argument_used[head]     ``[B, T]`` bool
    selected_units_pick_mask ``[B, T, S]`` bool, the picks that count (incl. the end token)
    value                   ``[B, T]``, the first baseline (win/loss: in (−1, 1))
    values                  ``{baseline name: [B, T]}``, every baseline of ``config.baselines``
    state                   LSTM (h, c), each ``[layers, B, lstm_size]``
    attention_maps          per transformer layer ``[B, T, heads, N, N]``
    """

    actions: AlphaStarActions
    logits: dict[str, torch.Tensor]
    log_probs: dict[str, torch.Tensor]
    entropies: dict[str, torch.Tensor]
    argument_used: dict[str, torch.Tensor]
    selected_units_pick_mask: torch.Tensor
    value: torch.Tensor
    values: dict[str, torch.Tensor]
    state: LSTMState
    attention_maps: list[torch.Tensor]

    def time_major(self) -> AlphaStarOutput:
        """The same output with every ``[B, T, ...]`` tensor transposed to ``[T, B, ...]``."""
        swap = lambda d: {k: v.transpose(0, 1) for k, v in d.items()}  # noqa: E731
        return replace(
            self,
            actions=self.actions.time_major(),
            logits=swap(self.logits),
            log_probs=swap(self.log_probs),
            entropies=swap(self.entropies),
            argument_used=swap(self.argument_used),
            selected_units_pick_mask=self.selected_units_pick_mask.transpose(0, 1),
            value=self.value.transpose(0, 1),
            values=swap(self.values),
            attention_maps=[a.transpose(0, 1) for a in self.attention_maps],
        )


def _check_shape(name: str, tensor: torch.Tensor, expected: tuple[int, ...]) -> None:
    if tuple(tensor.shape) != tuple(expected):
        raise ValueError(f"{name} must have shape {tuple(expected)}, got {tuple(tensor.shape)}")


def seeded_network(config: AlphaStarConfig, seed: int) -> AlphaStarNet:
    """A new network whose initial weights depend only on ``seed``. Its modules draw their initial
    values from torch's default generator (``nn.Linear`` and the others take no generator), so it is
    built inside ``torch.random.fork_rng`` with that generator seeded: the caller's global generator
    state is restored afterwards, as if untouched. Library code builds the network only this way
    (``AlphaStarNet(config)`` itself draws from, and advances, the global generator)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return AlphaStarNet(config)


class AlphaStarNet(nn.Module):
    """The AlphaStar agent's network (design §2) for any ``AlphaStarConfig``."""

    def __init__(self, config: AlphaStarConfig | None = None) -> None:
        super().__init__()
        self.config = config = config or AlphaStarConfig()
        self.entity_encoder = EntityEncoder(config)
        self.entity_scatter = EntityScatter(config) if config.scatter_channels else None
        self.spatial_encoder = SpatialEncoder(config)
        self.scalar_encoder = ScalarEncoder(config)
        self.core = Core(config)
        ae = config.autoregressive_embedding_size
        self.action_type_head = ActionTypeHead(config)
        self.delay_head = CategoricalArgumentHead(ae, config.delay_hidden, config.num_delays)
        self.queue_head = CategoricalArgumentHead(ae, config.queue_hidden, 2)
        self.selected_units_head = SelectedUnitsHead(config)
        self.target_unit_head = TargetUnitHead(config)
        self.location_head = LocationHead(config)
        self.value_baselines = nn.ModuleDict({b.name: ValueBaseline(config, b.squash) for b in config.baselines})
        # The per-action-type argument table and the unit types able to take each action.
        specs = config.action_types
        uses = {
            "queued": [s.queued for s in specs],
            "selected_units": [s.selected_units for s in specs],
            "target_unit": [s.target_unit for s in specs],
            "location": [s.location for s in specs],
        }
        for head, row in uses.items():
            self.register_buffer(f"uses_{head}", torch.tensor(row, dtype=torch.bool), persistent=False)
        unit_types = torch.zeros(len(specs), config.num_unit_types)
        for i, s in enumerate(specs):
            if s.unit_types is None:
                unit_types[i] = 1.0
            else:
                unit_types[i, list(s.unit_types)] = 1.0
        self.register_buffer("action_unit_types", unit_types, persistent=False)

    def initial_state(self, batch: int, device: torch.device | str | None = None) -> LSTMState:
        """Zero LSTM state for ``batch`` games."""
        return self.core.initial_state(batch, device)

    # ------------------------------------------------------------------------------------------
    def forward(
        self,
        obs: AlphaStarObs,
        state: LSTMState | None = None,
        actions: AlphaStarActions | None = None,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> AlphaStarOutput:
        """Sample actions (``actions=None``) or teacher-force the given ones; see the module docstring.

        Given actions must be legal under the observation's masks (an illegal one gets a
        log-probability of about −1e9). ``generator`` seeds the sampling.
        """
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        B, T, N = self._check_obs(obs)
        if actions is not None:
            self._check_actions(actions, B, T, N)
        if state is None:
            state = self.initial_state(B, obs.entities.device)
        flat = lambda x: x.reshape(B * T, *x.shape[2:])  # noqa: E731
        unflat = lambda x: x.reshape(B, T, *x.shape[1:])  # noqa: E731

        enc = self._encode(obs, state, flat, B, T)
        given = (lambda name: flat(getattr(actions, name)).long()) if actions is not None else (lambda name: None)
        heads = self._run_heads(obs, enc, given, flat, temperature, generator)
        values = {name: unflat(v) for name, v in self._values(obs, enc, flat).items()}

        return AlphaStarOutput(
            actions=AlphaStarActions(**{h: unflat(v) for h, v in heads["actions"].items()}),
            logits={h: unflat(v) for h, v in heads["logits"].items()},
            log_probs={h: unflat(v) for h, v in heads["log_probs"].items()},
            entropies={h: unflat(v) for h, v in heads["entropies"].items()},
            argument_used={h: unflat(v) for h, v in heads["used"].items()},
            selected_units_pick_mask=unflat(heads["pick_mask"]),
            value=values[self.config.baselines[0].name],
            values=values,
            state=enc["state"],
            attention_maps=[unflat(a) for a in enc["attention"]],
        )

    def _encode(self, obs: AlphaStarObs, state: LSTMState, flat, B: int, T: int) -> dict:
        """Encoders on all B·T steps at once, then the LSTM core over [B, T] (design §2, first four rows)."""
        entity_mask = flat(obs.entity_mask).bool()
        entity_embeddings, embedded_entity, attention = self.entity_encoder(flat(obs.entities).float(), entity_mask)
        planes = flat(obs.spatial).float()
        if self.entity_scatter is not None:
            scattered = self.entity_scatter(entity_embeddings, flat(obs.entity_positions), entity_mask)
            planes = torch.cat([planes, scattered], dim=1)
        embedded_spatial, map_skip = self.spatial_encoder(planes)
        scalars = {k: flat(v) for k, v in split_scalars(self.config, obs.scalars).items()}
        embedded_scalar, scalar_context = self.scalar_encoder(scalars)
        core_in = torch.cat([embedded_scalar, embedded_entity, embedded_spatial], dim=-1).view(B, T, -1)
        lstm_out, state = self.core(core_in, state, obs.episode_start)
        return {
            "entity_mask": entity_mask,
            "entity_embeddings": entity_embeddings,
            "map_skip": map_skip,
            "embedded_scalar": embedded_scalar,
            "scalar_context": scalar_context,
            "lstm_out": lstm_out.reshape(B * T, -1),
            "state": state,
            "attention": attention,
        }

    def _run_heads(self, obs: AlphaStarObs, enc: dict, given, flat, temperature: float, generator) -> dict:
        """The six heads in order: action type → delay → queue → selected units → target unit | location.

        Returns per-head actions, logits, log-probs, entropies and used masks, each zeroed (actions: −1)
        where the chosen action type does not use the argument.
        """
        lstm_out, entity_mask, entity_embeddings = enc["lstm_out"], enc["entity_mask"], enc["entity_embeddings"]
        b = lstm_out.shape[0]
        at_logits, action_type, ae = self.action_type_head(
            lstm_out,
            enc["scalar_context"],
            flat(obs.available_action_types).bool(),
            given("action_type"),
            temperature,
            generator,
        )
        rows = torch.arange(b, device=lstm_out.device)
        always = torch.ones(b, dtype=torch.bool, device=lstm_out.device)
        used = {"action_type": always, "delay": always}
        used.update({h: getattr(self, f"uses_{h}")[action_type] for h in HEADS[2:]})

        delay_logits, delay, ae = self.delay_head(ae, used["delay"], given("delay"), temperature, generator)
        queue_logits, queued, ae = self.queue_head(ae, used["queued"], given("queued"), temperature, generator)

        unit_types = self.action_unit_types[action_type]
        selectable = self._rows_for_action(obs.selectable_units, action_type, rows, entity_mask)
        selected = self.selected_units_head(
            ae,
            entity_embeddings,
            entity_mask,
            selectable & entity_mask,
            unit_types,
            used["selected_units"],
            given("selected_units"),
            temperature,
            generator,
        )
        ae = selected["ae"]
        targetable = self._rows_for_action(obs.targetable_units, action_type, rows, entity_mask)
        target_logits, target = self.target_unit_head(
            ae, entity_embeddings, targetable & entity_mask, unit_types, given("target_unit"), temperature, generator
        )
        R = self.config.location_resolution
        all_locations = torch.ones(b, R, R, dtype=torch.bool, device=ae.device)
        location_mask = self._rows_for_action(obs.location_mask, action_type, rows, all_locations)
        location_logits, location = self.location_head(
            ae, enc["map_skip"], location_mask, given("location"), temperature, generator
        )

        logits = {
            "action_type": at_logits,
            "delay": delay_logits,
            "queued": queue_logits,
            "target_unit": target_logits,
            "location": location_logits,
        }
        values = {
            "action_type": action_type,
            "delay": delay,
            "queued": queued,
            "target_unit": target,
            "location": location,
        }
        out = {"actions": {}, "logits": {}, "log_probs": {}, "entropies": {}, "used": used}
        for head in HEADS:
            u = used[head]
            uf = u.to(lstm_out.dtype)
            if head == "selected_units":
                out["log_probs"][head] = selected["log_prob"] * uf
                out["entropies"][head] = selected["entropy"] * uf
                out["logits"][head] = selected["logits"] * uf[:, None, None]
                out["actions"][head] = torch.where(u[:, None], selected["selection"], UNUSED)
            else:
                out["log_probs"][head] = log_prob(logits[head], values[head]) * uf
                out["entropies"][head] = entropy(logits[head]) * uf
                out["logits"][head] = logits[head] * uf[:, None]
                out["actions"][head] = torch.where(u, values[head], UNUSED)
        out["pick_mask"] = selected["pick_mask"] & used["selected_units"][:, None]
        return out

    def _values(self, obs: AlphaStarObs, enc: dict, flat) -> dict[str, torch.Tensor]:
        """Value baselines on lstm_out and both players' scalars (the opponent's are seen here only)."""
        if obs.opponent_scalars is None:
            opponent_scalar = torch.zeros_like(enc["embedded_scalar"])
        else:
            scalars = {k: flat(v) for k, v in split_scalars(self.config, obs.opponent_scalars).items()}
            opponent_scalar, _ = self.scalar_encoder(scalars)
        return {
            name: baseline(enc["lstm_out"], enc["embedded_scalar"], opponent_scalar)
            for name, baseline in self.value_baselines.items()
        }

    # ------------------------------------------------------------------------------------------
    def _rows_for_action(
        self, mask: torch.Tensor | None, action_type: torch.Tensor, rows: torch.Tensor, default: torch.Tensor
    ) -> torch.Tensor:
        """The chosen action type's row of a per-action-type mask (or the mask itself, or the default)."""
        if mask is None:
            return default
        m = mask.reshape(rows.shape[0], *mask.shape[2:]).bool()
        if m.dim() == default.dim() + 1:
            m = m[rows, action_type]
        return m

    def _check_obs(self, obs: AlphaStarObs) -> tuple[int, int, int]:
        cfg = self.config
        e = obs.entities
        if e.dim() != 4 or e.shape[-1] != cfg.entity_feature_size:
            raise ValueError(
                f"obs.entities must be [B, T, N, entity_feature_size={cfg.entity_feature_size}], got {tuple(e.shape)}"
            )
        B, T, N, _ = e.shape
        if not 1 <= N <= cfg.max_entities:
            raise ValueError(f"obs.entities must have 1 to max_entities={cfg.max_entities} entity slots, got {N}")
        A, R, H = cfg.num_action_types, cfg.location_resolution, cfg.spatial_size
        _check_shape("obs.entity_mask", obs.entity_mask, (B, T, N))
        _check_shape("obs.spatial", obs.spatial, (B, T, cfg.spatial_channels, H, H))
        _check_shape("obs.available_action_types", obs.available_action_types, (B, T, A))
        for name in ("selectable_units", "targetable_units"):
            m = getattr(obs, name)
            if m is not None and tuple(m.shape) not in {(B, T, N), (B, T, A, N)}:
                raise ValueError(f"obs.{name} must have shape {(B, T, N)} or {(B, T, A, N)}, got {tuple(m.shape)}")
        m = obs.location_mask
        if m is not None and tuple(m.shape) not in {(B, T, R, R), (B, T, A, R, R)}:
            raise ValueError(
                f"obs.location_mask must have shape {(B, T, R, R)} or {(B, T, A, R, R)}, got {tuple(m.shape)}"
            )
        if obs.episode_start is not None:
            _check_shape("obs.episode_start", obs.episode_start, (B, T))
        if cfg.scatter_channels:
            if obs.entity_positions is None:
                raise ValueError("obs.entity_positions is required when config.scatter_channels > 0")
            _check_shape("obs.entity_positions", obs.entity_positions, (B, T, N, 2))
            pos = obs.entity_positions[obs.entity_mask.bool()]
            if pos.numel() and (int(pos.min()) < 0 or int(pos.max()) >= H):
                raise ValueError(f"obs.entity_positions of present entities must be in [0, spatial_size={H})")
        for name in ("scalars", "opponent_scalars"):
            s = getattr(obs, name)
            if s is None:
                continue
            for key, v in split_scalars(cfg, s).items():
                if tuple(v.shape[:2]) != (B, T):
                    raise ValueError(f"obs.{name}[{key!r}] must start with [B, T] = {(B, T)}, got {tuple(v.shape)}")
        return B, T, N

    def _check_actions(self, actions: AlphaStarActions, B: int, T: int, N: int) -> None:
        cfg = self.config
        for name in ("action_type", "delay", "queued", "target_unit", "location"):
            _check_shape(f"actions.{name}", getattr(actions, name), (B, T))
        _check_shape("actions.selected_units", actions.selected_units, (B, T, cfg.max_selected_units))
        limits = {
            "action_type": cfg.num_action_types,
            "delay": cfg.num_delays,
            "queued": 2,
            "selected_units": N,
            "target_unit": N,
            "location": cfg.location_resolution**2,
        }
        for name, limit in limits.items():
            v = getattr(actions, name)
            low = 0 if name == "action_type" else UNUSED
            if v.numel() and (int(v.min()) < low or int(v.max()) >= limit):
                raise ValueError(
                    f"actions.{name} must be in [{low}, {limit}), got values in [{int(v.min())}, {int(v.max())}]"
                )
