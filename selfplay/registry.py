"""Names on the command line → environments and agents (the only place the CLI's strings are mapped).

Environments: ``rirrps``, ``biased-rps``, ``rpsls`` (repeated matrix games, spec-selfplay §4) and
``smac:MAP`` (the batched SMAC simulator, spec-smac). Agents: ``ppo-mlp``, ``ppo-rnn``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

MATRIX_GAMES = ("rirrps", "biased-rps", "rpsls")
AGENTS = ("ppo-mlp", "ppo-rnn")


def check_env_name(name: str) -> str:
    if name in MATRIX_GAMES or (isinstance(name, str) and name.startswith("smac:")):
        return name
    raise ValueError(f"env must be one of {MATRIX_GAMES} or 'smac:MAP', got {name!r}")


def make_env(name: str, num_envs: int, seed: int | None = None, device: str = "cpu") -> Any:
    """A two-seat batched environment (``envs/base.py``)."""
    check_env_name(name)
    if name in MATRIX_GAMES:
        from envs.rps import make_game

        return make_game(name, num_envs=num_envs, seed=seed, device=device)
    from envs.smac import SMACBattle

    return SMACBattle(name.split(":", 1)[1], num_envs=num_envs, seed=seed, device=device)


@dataclass
class AgentKit:
    """What the loop and evaluation need from an agent family."""

    make_learner: Callable[..., Any]  # (env, seed, **overrides) -> Learner
    save_policy: Callable[[Any, str], None]
    load_policy: Callable[[str], Any]
    stack_policies: Callable[[list], Any] | None  # frozen policies -> one batched population policy


def agent_kit(name: str) -> AgentKit:
    if name not in AGENTS:
        raise ValueError(f"agent must be one of {AGENTS}, got {name!r}")
    from agents.ppo import PPOConfig, PPOLearner, load_policy, save_policy, stack_policies

    body = "mlp" if name == "ppo-mlp" else "lstm"

    def make_learner(env: Any, seed: int, **overrides: Any) -> Any:
        config = PPOConfig(body=body, **overrides)
        return PPOLearner(env.obs_size, env.n_actions, config, seed=seed)

    return AgentKit(make_learner, save_policy, load_policy, stack_policies)
