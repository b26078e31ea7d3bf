"""``CommanderEnv``: a ``SMACBattle`` played by AlphaStar commanders, as a two-seat batched
environment of the suite (envs/base.py; docs/design/alphastar.md §5).

In StarCraft II the game engine executes a player's orders; here the order executor plays that part,
so it belongs to the environment: each seat's action is one *commander* action per game, and the
environment turns it into per-unit SMAC actions, steps the battle and observes again.

    env = CommanderEnv(SMACBattle("3m", 64, two_player=True, mirror=True))
    obs = env.reset()                      # [obs0, obs1], each (E, layout.size) float: packed AlphaStarObs
    due = env.action_masks()               # [due0, due1], each (E,) bool: games where the seat acts now
    obs, rewards, done, info = env.step([a0, a1])   # a_s: (E, 5 + S) long, packed AlphaStarActions

Observations are packed into one flat float row per game (``ObsLayout``: every field of
``AlphaStarObs`` at one step, flattened and concatenated; booleans and cell indices are exact in
float32), so the suite's generic machinery (per-game seats, grouping games by opponent, indexing
game subsets) handles them like any other observation; ``ObsLayout.unpack`` restores the network
input. Actions are packed as ``ACTION_COLUMNS`` then the ``S`` selected-unit slots (−1 where unused).

The "action mask" of a seat is its ``due`` flag: the commander acts again ``delay + 1`` steps after
each action; where a seat is not due its action is ignored (any value may be passed there).

Rewards (``reward``): ``"win_loss"`` (AlphaStar's: +1 win, −1 loss, 0 draw, at the last step) or
``"smac"`` (the battle's shaped SMAC reward). Single-player battles (``two_player=False``) have one
seat, the other side being SMAC's scripted AI.

``seats`` names the seats a commander plays (default: every seat). Any other seat is played as in the
battle itself: its observation, action mask and action are the battle's per-unit ones
(``(E, n_agents, ...)``, SMAC actions ``(E, n_agents)``), so a commander can meet a per-unit policy
(a panel script, ``selfplay.evaluation.panel``) in the same games.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from ..config import AlphaStarConfig
from ..network import UNUSED, AlphaStarActions, AlphaStarObs
from .commander import CommanderConfig, SMACCommander

ACTION_COLUMNS = ("action_type", "delay", "queued", "target_unit", "location")
REWARDS = ("win_loss", "smac")


@dataclass(frozen=True)
class _Field:
    path: tuple[str, ...]  # ("entities",) or ("scalars", "game_time")
    shape: tuple[int, ...]
    dtype: torch.dtype

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


class ObsLayout:
    """The packing of one step's ``AlphaStarObs`` into a flat float row, fixed by the network's sizes.

    Fields (per game): entities [N, F], entity_mask [N], spatial [C, H, H], available_action_types [A],
    selectable_units [A, N], targetable_units [A, N], location_mask [R, R], entity_positions [N, 2], then
    every scalar feature of ``config.scalar_feature_list`` for the player and for the opponent.
    ``N = config.max_entities`` (the commander's config sets it to the map's unit count)."""

    def __init__(self, config: AlphaStarConfig):
        N, F, A = config.max_entities, config.entity_feature_size, config.num_action_types
        C, H, R = config.spatial_channels, config.spatial_size, config.location_resolution
        specs = [
            (("entities",), (N, F), torch.float32),
            (("entity_mask",), (N,), torch.bool),
            (("spatial",), (C, H, H), torch.float32),
            (("available_action_types",), (A,), torch.bool),
            (("selectable_units",), (A, N), torch.bool),
            (("targetable_units",), (A, N), torch.bool),
            (("location_mask",), (R, R), torch.bool),
            (("entity_positions",), (N, 2), torch.long),
        ]
        for group in ("scalars", "opponent_scalars"):
            specs += [((group, f.name), (f.size,), torch.float32) for f in config.scalar_feature_list]
        self.fields = tuple(_Field(p, s, d) for p, s, d in specs)
        self.size = sum(f.size for f in self.fields)
        self.max_selected_units = config.max_selected_units
        self.action_size = len(ACTION_COLUMNS) + config.max_selected_units

    def __eq__(self, other) -> bool:
        return isinstance(other, ObsLayout) and self.fields == other.fields and self.action_size == other.action_size

    def __hash__(self) -> int:
        return hash((self.fields, self.action_size))

    # -------------------------------------------------------------- observations
    def pack(self, obs: AlphaStarObs) -> torch.Tensor:
        """``AlphaStarObs`` of one step (fields ``[E, 1, ...]`` or ``[E, ...]``) → ``(E, size)`` float."""
        parts = []
        for f in self.fields:
            v = getattr(obs, f.path[0])
            if len(f.path) == 2:
                v = v[f.path[1]]
            E = v.shape[0]
            v = v.reshape(E, -1)
            if v.shape[1] != f.size:
                raise ValueError(f"obs.{'.'.join(f.path)} has {v.shape[1]} values per game; the layout "
                                 f"expects {f.size} (shape {f.shape})")
            parts.append(v.float())
        return torch.cat(parts, 1)

    def unpack(self, x: torch.Tensor, episode_start: torch.Tensor | None = None) -> AlphaStarObs:
        """``(B, size)`` or ``(B, T, size)`` packed rows → ``AlphaStarObs`` with fields ``[B, T, ...]``."""
        if x.dim() == 2:
            x = x[:, None]
        if x.dim() != 3 or x.shape[-1] != self.size:
            raise ValueError(f"packed observations must be (B, {self.size}) or (B, T, {self.size}), "
                             f"got {tuple(x.shape)}")
        B, T = x.shape[:2]
        out: dict = {"scalars": {}, "opponent_scalars": {}}
        start = 0
        for f in self.fields:
            v = x[..., start:start + f.size].reshape(B, T, *f.shape)
            start += f.size
            v = v > 0.5 if f.dtype == torch.bool else (v.round().long() if f.dtype == torch.long else v)
            if len(f.path) == 2:
                out[f.path[0]][f.path[1]] = v
            else:
                out[f.path[0]] = v
        return AlphaStarObs(**out, episode_start=episode_start)

    # -------------------------------------------------------------- actions
    def pack_actions(self, actions: AlphaStarActions) -> torch.Tensor:
        """``AlphaStarActions`` (fields ``[E]``, selected ``[E, S]``; or with a time axis) → ``(..., 5 + S)`` long."""
        cols = [getattr(actions, name).long()[..., None] for name in ACTION_COLUMNS]
        return torch.cat(cols + [actions.selected_units.long()], -1)

    def unpack_actions(self, a: torch.Tensor) -> AlphaStarActions:
        """``(..., 5 + S)`` packed actions → ``AlphaStarActions`` with the leading shape."""
        a = torch.as_tensor(a).long()
        if a.shape[-1] != self.action_size:
            raise ValueError(f"packed actions must have {self.action_size} columns (5 + max_selected_units), "
                             f"got shape {tuple(a.shape)}")
        k = len(ACTION_COLUMNS)
        return AlphaStarActions(**{name: a[..., i] for i, name in enumerate(ACTION_COLUMNS)},
                                selected_units=a[..., k:])

    def idle_actions(self, batch: int) -> torch.Tensor:
        """``(batch, 5 + S)``: no-op with delay 0 and every other argument unused."""
        a = torch.full((batch, self.action_size), UNUSED, dtype=torch.long)
        a[:, 0] = 0
        a[:, 1] = 0
        return a


class CommanderEnv:
    """Two-seat batched environment of commander actions over a ``SMACBattle`` (module docstring)."""

    def __init__(self, battle, commander: CommanderConfig = CommanderConfig(), reward: str = "win_loss",
                 seats: tuple[int, ...] | None = None):
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        self.battle, self.reward = battle, reward
        self.n_seats = getattr(battle, "n_seats", 2)
        every = tuple(range(self.n_seats))
        seats = every if seats is None else tuple(seats)
        if not seats or len(set(seats)) != len(seats) or any(s not in every for s in seats):
            raise ValueError(f"seats must be distinct seats of the battle {every} (at least one), got {seats!r}")
        self.commander_seats = seats
        self.commanders = [SMACCommander(battle, s, commander) for s in seats]
        self.commander_config = commander
        self.network_sizes = self.commanders[0].network_config()  # input/action sizes (both seats alike)
        self.layout = ObsLayout(self.network_sizes)
        self.num_envs = battle.num_envs
        self.episode_length = self.episode_limit = battle.episode_limit
        self.obs_size = self.layout.size
        self.n_actions = self.layout.action_size
        self.map_name = battle.map_name if hasattr(battle, "map_name") else None

    def network_config(self, **overrides) -> AlphaStarConfig:
        """An ``AlphaStarConfig`` whose input and action sizes fit this environment."""
        return self.commanders[0].network_config(**overrides)

    def _observe(self, battle_obs: list | None = None) -> list[torch.Tensor]:
        """Per seat: the packed commander observation, or the battle's own (``battle_obs``) where no
        commander plays."""
        out = [None] * self.n_seats if battle_obs is None else list(battle_obs[: self.n_seats])
        for s, c in zip(self.commander_seats, self.commanders):
            out[s] = self.layout.pack(c.observe())
        return out

    def reset(self) -> list[torch.Tensor]:
        battle_obs = self.battle.reset()
        for c in self.commanders:
            c.reset_games(None)
        return self._observe(battle_obs)

    def action_masks(self) -> list[torch.Tensor]:
        """Per seat, (E,) bool: the games where the seat's commander acts this step (a seat with no
        commander: the battle's per-unit action masks)."""
        masks = self.battle.action_masks() if len(self.commanders) < self.n_seats else [None] * self.n_seats
        for s, c in zip(self.commander_seats, self.commanders):
            masks[s] = c.due()
        return masks

    def get_state(self) -> list[torch.Tensor]:
        return self.battle.get_state()

    def step(self, actions: list) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor, dict]:
        if not isinstance(actions, (list, tuple)) or len(actions) != self.n_seats:
            raise ValueError(f"actions must be a list of {self.n_seats} per-seat (E, {self.n_actions}) tensors")
        unit_actions = list(actions)  # seats with no commander pass the battle's per-unit actions through
        for s, c in zip(self.commander_seats, self.commanders):
            c.apply(self.layout.unpack_actions(actions[s]), c.due())
            unit_actions[s] = c.unit_actions()
        battle_obs, shaped, done, info = self.battle.step(unit_actions)
        for c in self.commanders:
            c.reset_games(done)
        if self.reward == "smac":
            rewards = shaped
        else:
            rewards = [torch.where(done, won.float() - (info["winner"] == 1 - s).float(), 0.0)
                       for s, won in enumerate(info["battle_won"])]
        return self._observe(battle_obs), rewards, done, info


def check_same_layout(env_layout: ObsLayout, config: AlphaStarConfig) -> None:
    """Raise ``ValueError`` unless a network of ``config`` reads this environment's observations."""
    if ObsLayout(config) != env_layout:
        raise ValueError("the network's sizes (max_entities, entity_feature_size, spatial_size, "
                         "location_resolution, num_delays, max_selected_units, scalar features) do not fit "
                         "this environment; build the config with env.network_config(...)")


__all__ = ["ACTION_COLUMNS", "CommanderEnv", "ObsLayout", "check_same_layout"]
assert {f.name for f in fields(AlphaStarActions)} == set(ACTION_COLUMNS) | {"selected_units"}
