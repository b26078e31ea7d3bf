"""MAPPO's settings in one dataclass (CleanRL style: one field, one line, its source beside it).

Sources: Yu et al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games"
(NeurIPS Datasets & Benchmarks), its SMAC hyper-parameter table (appendix) and its code,
marlbenchmark/on-policy: ``onpolicy/config.py`` (the defaults), ``onpolicy/scripts/train/train_smac.py``
(the SMAC environment flags) and ``onpolicy/scripts/train_smac_scripts/train_smac_3m.sh`` (the
per-map command lines: 8 rollout threads, 400-step rollouts, 1 minibatch, 15 epochs, 32 evaluation
episodes). "config.py" below means that repository's ``onpolicy/config.py``.

One quirk of that code is kept on purpose: the SMAC scripts pass ``--use_value_active_masks``, a
``store_false`` flag, which *switches off* the value loss's active masks — so the published SMAC
runs fit the value of dead agents too (``value_active_masks=False`` here).

Sizes: a rollout is ``rollout_length`` steps of each of ``num_envs`` games (3200 game-steps at the
defaults), cut into ``chunk_length``-step sequences for the recurrent update; ``num_minibatches``
minibatches of whole sequences per epoch.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass

UPDATE_PRECISIONS = ("float32", "bfloat16")  # the update's matrix products: float32, or bf16 operands (mixed precision)
CRITIC_INPUTS = ("AS", "EP")  # agent-specific global state, environment-provided global state (paper §4.1)
SPEED_ONLY = ("update_threads",)  # settings that change how fast, not what: a run may resume with others
ATTACK_HEADS = ("linear", "entity")  # the paper's linear head, or attacks also scored per enemy (network.EntityAttackScorer)
# settings a frozen policy's network and acting depend on (its layers, its inputs, how it picks an action): a
# policy file's spec keeps these alone, so runs that differ only in how they trained share policies
ACTING_SETTINGS = ("hidden_size", "layers", "recurrent", "attack_head", "critic_input", "death_masking", "agent_id",
                   "last_action", "open_loop", "greedy_opponents")
# settings newer than some saved runs: at this value, the same as absent
ADDED_LATER = {"critic_epochs": None, "policy_gain": 0.01, "recurrent": True, "update_precision": "float32",
               "attack_head": "linear", "magnet_coef": 0.0, "magnet_interval": 10, "linear_lr_decay": False}


@dataclass
class MAPPOConfig:
    """Recurrent MAPPO (rMAPPO) on SMAC; every default is the paper's SMAC setting (module docstring)."""

    num_envs: int = 8
    """Games run at once (``--n_rollout_threads 8``, train_smac_*.sh)."""
    rollout_length: int = 400
    """Steps of every game per update (``--episode_length 400``, train_smac_*.sh): 3200 game-steps."""
    epochs: int = 15
    """PPO epochs per update (``--ppo_epoch 15``, train_smac_3m.sh; config.py default 15)."""
    critic_epochs: int | None = None
    """Epochs of the critic's update; ``None``: ``epochs``, as in the MAPPO paper's code (one ``ppo_epoch`` for
    both). SMACv2's pymarl-style PPO configs set the two apart (``mini_epochs_actor``/``mini_epochs_critic``,
    github.com/benellis3/mappo ``src/config/algs/central_ppo_rnn.yaml``)."""
    num_minibatches: int = 1
    """Minibatches per epoch (``--num_mini_batch 1``, train_smac_*.sh)."""
    chunk_length: int = 10
    """Recurrent training sequence length (``data_chunk_length`` 10, config.py)."""
    learning_rate: float = 5e-4
    """Actor Adam step size (``lr`` 5e-4, config.py)."""
    critic_learning_rate: float = 5e-4
    """Critic Adam step size (``critic_lr`` 5e-4, config.py)."""
    adam_eps: float = 1e-5
    """Adam's ε (``opti_eps`` 1e-5, config.py)."""
    gamma: float = 0.99
    """Discount factor (config.py)."""
    gae_lambda: float = 0.95
    """GAE's λ (config.py)."""
    clip_coef: float = 0.2
    """PPO clip range ε, for the policy ratio and the value change alike (``clip_param`` 0.2, config.py)."""
    entropy_coef: float = 0.01
    """Entropy bonus weight (config.py)."""
    magnet_coef: float = 0.0
    """α of a KL penalty to a *magnet* policy, ``α · KL(π ‖ ρ)`` added to the actor's loss (0: none, the paper's
    PPO). The magnet ρ is a frozen copy of the actor, reset to it every ``magnet_interval`` updates: magnetic
    mirror descent with a moving magnet (Sokota et al. 2023, ICLR, §4–5) and R-NaD's regularisation policy
    (Perolat et al. 2021, ICML; DeepNash) — a proximal-point step that damps the cycling of self-play's last
    iterate between counter-strategies. Not a MAPPO paper setting."""
    magnet_interval: int = 10
    """Updates between the magnet's resets to the current actor (``magnet_coef`` > 0)."""
    linear_lr_decay: bool = False
    """Both step sizes decay linearly to 0 over the run: ``lr · (1 − progress)``, progress the share of the run's
    budget spent before the update (``use_linear_lr_decay``, off, config.py; their ``update_linear_schedule``
    lowers ``lr · episode / episodes`` at iteration ``episode`` of ``episodes``). The trainer reports the
    progress (``MAPPOLearner.set_progress``): the episode budget under a scheme, the step budget against the AI
    and in the league."""
    value_coef: float = 1.0
    """Value loss weight (``value_loss_coef`` 1, config.py)."""
    max_grad_norm: float = 10.0
    """Gradient-norm clip, actor and critic separately (config.py)."""
    huber_delta: float = 10.0
    """Huber loss δ of the value loss (``use_huber_loss`` on, ``huber_delta`` 10, config.py)."""
    clipped_value_loss: bool = True
    """max(unclipped, clipped) value loss (``use_clipped_value_loss``, config.py)."""
    value_norm: bool = True
    """Normalise value targets by running mean/variance (``use_valuenorm``, config.py; paper §4.1)."""
    value_norm_beta: float = 0.99999
    """Running statistics' decay per update (ValueNorm's ``beta``, onpolicy/utils/valuenorm.py)."""
    policy_active_masks: bool = True
    """Dead agents' samples carry no policy gradient or entropy (``use_policy_active_masks``, config.py)."""
    value_active_masks: bool = False
    """Dead agents' samples left out of the value loss (off in the SMAC scripts: module docstring)."""
    hidden_size: int = 64
    """Width of every layer (config.py)."""
    recurrent: bool = True
    """A GRU in the actor and the critic (their ``rmappo``); False: MLPs alone (their ``mappo``, which the paper's
    scripts run on corridor, 6h_vs_8z, 3s_vs_4z and 3s_vs_5z: train_smac.py switches ``use_recurrent_policy`` off)."""
    policy_gain: float = 0.01
    """Orthogonal initialisation gain of the actor's logits layer (``gain`` 0.01, config.py; MMM2's script: 1)."""
    attack_head: str = "linear"
    """``"linear"``: every action's logit a linear function of the actor's features (the paper's ``ACTLayer``);
    ``"entity"``: an attack's logit also gets a score computed from the attacked enemy's own observed features,
    one function for every enemy (``network.EntityAttackScorer``, after the Action Semantics Network, Wang et al.
    2020). SMAC/SMACv2 observations only (the learner reads the enemy blocks' layout from the battle). Not a
    MAPPO paper setting."""
    layers: int = 1
    """Hidden layers after the first in the MLP base (``layer_N`` 1, config.py): two Linear-ReLU-LayerNorm."""
    critic_input: str = "AS"
    """``"AS"``: agent-specific global state with death masking (``use_state_agent``, train_smac.py; paper
    §4.1); ``"EP"``: the environment's global state and the agent's one-hot id."""
    death_masking: bool = True
    """A dead agent's critic input is zeros but its id (paper §4.1, "death masking")."""
    agent_id: bool = True
    """Append the agent's one-hot id to its observation (SMAC's ``obs_agent_id``, the paper's parameter sharing)."""
    last_action: bool = False
    """Append the agent's previous action (off in the paper's SMAC runs: ``obs_last_action`` False)."""
    open_loop: bool = False
    """Open-loop control: the actor sees only the time step t/limit and its id (SMACv2 paper, Ellis et al. 2022 §4)."""
    greedy_opponents: bool = False
    """Self-play only: the frozen snapshots a learner plays against take each unit's most probable action
    instead of sampling (ours, not the paper's: it trains against opponents played as they are evaluated)."""
    eval_interval: int = 80_000
    """Game-steps between greedy test evaluations (25 updates of 3200 steps: ``eval_interval`` 25, config.py)."""
    eval_episodes: int = 32
    """Greedy test episodes per evaluation (``--eval_episodes 32``; PyMARL's ``test_nepisode`` 32)."""
    update_threads: int = 2
    """1: the update fits the actor, then the critic; 2: both at once on two threads (independent networks,
    losses and optimisers, so the numbers are the same either way; not a paper setting: the 2-core machine's)."""
    update_precision: str = "float32"
    """The update's matrix products (MLP and GRU of actor and critic; not the heads): ``"float32"``, or
    ``"bfloat16"`` — operands rounded to bf16, products accumulated and everything else kept in float32 (mixed
    precision; 4–5× the CPU's float32 matrix throughput where it has bf16 dot products). Not a paper setting."""

    def __post_init__(self):
        for name in ("num_envs", "rollout_length", "epochs", "num_minibatches", "chunk_length", "hidden_size",
                     "eval_interval", "eval_episodes", "magnet_interval"):
            _check_int(name, getattr(self, name))
        if self.critic_epochs is not None:
            _check_int("critic_epochs", self.critic_epochs)
        if not (isinstance(self.layers, numbers.Integral) and not isinstance(self.layers, bool) and self.layers >= 0):
            raise ValueError(f"layers must be an integer >= 0, got {self.layers!r}")
        for name in ("learning_rate", "critic_learning_rate", "adam_eps", "clip_coef", "max_grad_norm", "huber_delta",
                     "policy_gain"):
            if not (_finite(getattr(self, name)) and getattr(self, name) > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {getattr(self, name)!r}")
        for name in ("gamma", "gae_lambda"):
            if not (_finite(getattr(self, name)) and 0.0 <= getattr(self, name) <= 1.0):
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)!r}")
        if not (_finite(self.value_norm_beta) and 0.0 < self.value_norm_beta < 1.0):
            raise ValueError(f"value_norm_beta must lie in (0, 1), got {self.value_norm_beta!r}")
        for name in ("entropy_coef", "value_coef", "magnet_coef"):
            if not (_finite(getattr(self, name)) and getattr(self, name) >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {getattr(self, name)!r}")
        for name in ("clipped_value_loss", "value_norm", "policy_active_masks", "value_active_masks", "death_masking",
                     "agent_id", "last_action", "open_loop", "greedy_opponents", "recurrent", "linear_lr_decay"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if isinstance(self.update_threads, bool) or self.update_threads not in (1, 2):
            raise ValueError(f"update_threads must be 1 or 2, got {self.update_threads!r}")
        if self.update_precision not in UPDATE_PRECISIONS:
            raise ValueError(f"update_precision must be one of {UPDATE_PRECISIONS}, got {self.update_precision!r}")
        if self.attack_head not in ATTACK_HEADS:
            raise ValueError(f"attack_head must be one of {ATTACK_HEADS}, got {self.attack_head!r}")
        if self.attack_head == "entity" and self.open_loop:
            raise ValueError("attack_head 'entity' reads the enemies in the observation, which open_loop replaces")
        if self.critic_input not in CRITIC_INPUTS:
            raise ValueError(f"critic_input must be one of {CRITIC_INPUTS}, got {self.critic_input!r}")
        if self.rollout_length % self.chunk_length:
            raise ValueError(f"rollout_length ({self.rollout_length}) must be a multiple of chunk_length "
                             f"({self.chunk_length})")
        if self.num_minibatches > self.num_sequences:
            raise ValueError(f"num_minibatches must be at most the {self.num_sequences} sequences of a rollout, "
                             f"got {self.num_minibatches}")

    @property
    def value_epochs(self) -> int:
        """Epochs of the critic's update: ``critic_epochs``, or ``epochs`` when it is ``None``."""
        return self.epochs if self.critic_epochs is None else self.critic_epochs

    @property
    def batch_steps(self) -> int:
        """Game-steps per update: ``num_envs · rollout_length``."""
        return self.num_envs * self.rollout_length

    @property
    def num_sequences(self) -> int:
        """Recurrent sequences per game side per update: ``num_envs · rollout_length / chunk_length``."""
        return self.num_envs * (self.rollout_length // self.chunk_length)

    def to_dict(self) -> dict:
        return asdict(self)


def mappo_config(**overrides) -> MAPPOConfig:
    """``MAPPOConfig`` with ``overrides``; a name that is not a field raises ``ValueError`` naming it."""
    unknown = sorted(k for k in overrides if k not in MAPPOConfig.__dataclass_fields__)
    if unknown:
        raise ValueError(f"{unknown} are not settings of MAPPOConfig (known: {sorted(MAPPOConfig.__dataclass_fields__)})")
    return MAPPOConfig(**overrides)


def without_speed_settings(settings: dict) -> dict:
    """``settings`` (a ``MAPPOConfig.to_dict()``) less the ``SPEED_ONLY`` ones, and less the ``ADDED_LATER`` ones
    at their default (a run saved before a setting existed ran at its default): what must agree for a resume."""
    return {k: v for k, v in settings.items()
            if k not in SPEED_ONLY and not (k in ADDED_LATER and v == ADDED_LATER[k])}


def _check_int(name: str, value) -> None:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def _finite(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def self_play_rollout_length(num_envs: int, chunk_length: int = 10) -> int:
    """Steps per game of a self-play rollout of ``num_envs`` games that keeps an update near MAPPO's
    ``8 · 400 = 3200`` game-steps: ``3200 / num_envs`` rounded to a multiple of ``chunk_length``, at
    least one chunk."""
    _check_int("num_envs", num_envs)
    return max(chunk_length, round(3200 / num_envs / chunk_length) * chunk_length)


# The MAPPO paper's per-map SMAC settings: the flags of marlbenchmark/on-policy's
# ``onpolicy/scripts/train_smac_scripts/train_smac_MAP.sh`` (commit 7a22fab) that set this learner: the epochs,
# always written out, and the others where they differ from ``MAPPOConfig``'s defaults (which are 3m's script).
# Every script runs 8 games x 400 steps, one minibatch but MMM2's two, value active masks off, 10M game-steps.
# ``recurrent`` False: the script runs ``mappo`` (MLPs, no GRU). 3s_vs_4z and 3s_vs_5z also feed the MLP 4 stacked
# frames, which this learner does not build — ``paper_map_settings`` refuses them. train_smac_8m_vs_9m.sh runs
# bane_vs_bane at that commit (its ``map=``; bane_vs_bane's own script is the one used here); 8m_vs_9m's settings
# are that script's as fixed at commit 6df1260. 2s3z has no script.
PAPER_MAP_SETTINGS = {
    "3m": {"epochs": 15}, "8m": {"epochs": 15}, "MMM": {"epochs": 15}, "1c3s5z": {"epochs": 15},
    "2m_vs_1z": {"epochs": 15}, "2s_vs_1sc": {"epochs": 15}, "3s_vs_3z": {"epochs": 15},
    "bane_vs_bane": {"epochs": 15}, "so_many_baneling": {"epochs": 15},
    "10m_vs_11m": {"epochs": 10}, "25m": {"epochs": 10},
    "5m_vs_6m": {"epochs": 10, "clip_coef": 0.05},
    "3s5z": {"epochs": 5}, "3s5z_vs_3s6z": {"epochs": 5}, "27m_vs_30m": {"epochs": 5}, "2c_vs_64zg": {"epochs": 5},
    "MMM2": {"epochs": 5, "num_minibatches": 2, "policy_gain": 1.0},
    "corridor": {"epochs": 5, "recurrent": False}, "6h_vs_8z": {"epochs": 5, "recurrent": False},
    "8m_vs_9m": {"epochs": 15, "clip_coef": 0.05},  # the script as fixed at the repository's commit 6df1260
}
STACKED_FRAMES = {"3s_vs_4z": "ppo_epoch 15", "3s_vs_5z": "ppo_epoch 15, clip 0.05"}  # MLP on 4 stacked frames


def paper_map_settings(map_name: str) -> dict:
    """``MAPPOConfig`` overrides of the MAPPO paper's script for SMAC map ``map_name`` (``PAPER_MAP_SETTINGS``);
    ``ValueError`` for a map whose script stacks frames or that has no script."""
    if map_name in STACKED_FRAMES:
        raise ValueError(f"the MAPPO paper runs {map_name} with an MLP policy on 4 stacked frames "
                         f"({STACKED_FRAMES[map_name]}; train_smac_{map_name}.sh), which this learner does not "
                         f"build: give its settings as options instead")
    if map_name not in PAPER_MAP_SETTINGS:
        raise ValueError(f"the MAPPO paper has no script for map {map_name!r}; maps with one: "
                         f"{', '.join(sorted(PAPER_MAP_SETTINGS))}")
    return dict(PAPER_MAP_SETTINGS[map_name])
