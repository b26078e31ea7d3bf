"""Names on the command line → environments and agents (the only place the CLI's strings are mapped).

Environments: ``rirrps``, ``biased-rps``, ``rpsls`` (repeated matrix games, docs/design/selfplay.md §4) and
``smac:MAP`` (the batched SMAC simulator, docs/design/smac.md; symmetric maps mirror the second side so one
policy sees both sides alike; ``smac:MAP(spawns=map)`` starts the second side at the map's own enemy
spawns instead of the mirror image of the first side's, the layout of SMAC's game against the built-in AI;
``smac:MAP(reward_only_positive=false)``: each side's reward also counts the damage it takes, SMAC's option). Agents: ``ppo-mlp``, ``ppo-rnn`` — the one-unit PPO learner on matrix
games, the parameter-shared multi-unit PPO learner on SMAC sides (``ppo-rnn`` is a GRU there) — and
``alphastar``, the AlphaStar commander (SMAC only), and ``mappo``, recurrent MAPPO (``agents/mappo``; SMAC
and SMACv2) as a self-play learner (``agents/mappo/selfplay.py``). The AlphaStar agent plays a battle through its
order executor: ``env_for_agent("smac:MAP", "alphastar")`` is ``smac-commander:MAP``, the same battle
seen as a ``CommanderEnv`` (commander actions, packed AlphaStar observations, win/loss reward) on a
``COMMANDER_GRID``² grid. A SMAC name ending in ``@sc2`` (``smac:3m@sc2``) plays the real StarCraft II
game instead of the simulator (``envs/smac/sc2_engine.py``; needs the game and the ``sc2`` extra).
``smacv2:SCENARIO`` (``smacv2:protoss_5_vs_5`` ... ``smacv2:zerg_20_vs_23``, each also ``..._epo``): SMACv2's
procedurally generated scenarios on the simulator (docs/design/smacv2.md), both seats drawn from the
scenario's distribution, the second seat mirrored; played by the SMAC agents (``is_smac``).
``openspiel:GAME`` / ``openspiel:GAME(param=value,...)``: a two-player zero-sum OpenSpiel game with
information-state tensors (``envs/openspiel``; needs the ``openspiel`` extra), played by the PPO agents.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from selfplay.envs.base import TwoPlayerBatchedEnv

MATRIX_GAMES = ("rirrps", "biased-rps", "rpsls")
AGENTS = ("ppo-mlp", "ppo-rnn", "alphastar", "mappo")
RECURRENT_AGENTS = ("ppo-rnn", "alphastar", "mappo")  # per episode their runs cost the most (docs/results/speed.md)
SC2_SUFFIX = "@sc2"  # smac:MAP@sc2: the real game
SMACV2_PREFIX = "smacv2:"  # smacv2:protoss_5_vs_5
OPENSPIEL_PREFIX = "openspiel:"  # openspiel:kuhn_poker, openspiel:goofspiel(num_cards=4)
COMMANDER_PREFIX = "smac-commander:"  # smac-commander:3m: the AlphaStar commander's view of a SMAC map
# SMACBattle's options an environment name may set: per option, each value as written in the name and as passed
# to SMACBattle. smac:MAP(spawns=map) starts the second side at the map's own enemy spawns;
# smac:MAP(reward_only_positive=false) gives each side SMAC's reward less half the damage and deaths it takes
# (StarCraft2Env's reward_only_positive, reward_negative_scale 0.5).
SMAC_OPTIONS = {"spawns": {"mirrored": "mirrored", "map": "map"},
                "reward_only_positive": {"true": True, "false": False}}
COMMANDER_GRID = 16  # the AlphaStar agent's spatial/location grid on SMAC's 32×32 maps (2 map units a cell)


def check_env_name(name: str) -> str:
    if name in MATRIX_GAMES:
        return name
    if is_openspiel(name):
        from selfplay.envs.openspiel import load_two_player_zero_sum

        load_two_player_zero_sum(openspiel_game(name))
        return name
    if is_smacv2(name):
        from selfplay.envs.smac import SMACV2_SCENARIOS

        if smac_map(name) not in SMACV2_SCENARIOS:
            raise ValueError(f"unknown SMACv2 scenario {smac_map(name)!r}; scenarios: {', '.join(SMACV2_SCENARIOS)}")
        smac_options(name)  # SMACv2 names take none
        return name
    if isinstance(name, str) and (name.startswith("smac:") or is_commander(name)):
        from selfplay.envs.smac import MAP_NAMES

        if smac_map(name) not in MAP_NAMES:
            raise ValueError(f"unknown SMAC map {smac_map(name)!r}; maps: {', '.join(MAP_NAMES)}")
        options = smac_options(name)
        if smac_backend(name) == "sc2" and options.get("spawns") == "mirrored":
            raise ValueError(f"env {name!r}: spawns=mirrored is the simulator's layout; the real game ({SC2_SUFFIX}) "
                             f"always starts both sides at the map's spawns (write spawns=map or leave it out)")
        if is_commander(name) and "reward_only_positive" in options:
            raise ValueError(f"env {name!r}: reward_only_positive sets SMAC's shaped reward, which the AlphaStar "
                             f"commander does not train on (its reward is AlphaStar's win/loss); leave it out")
        return name
    raise ValueError(f"env must be one of {MATRIX_GAMES}, 'smac:MAP' (or 'smac:MAP{SC2_SUFFIX}'), 'smacv2:SCENARIO' or "
                     f"'{OPENSPIEL_PREFIX}GAME', got {name!r}")


def is_openspiel(name: str) -> bool:
    return isinstance(name, str) and name.startswith(OPENSPIEL_PREFIX)


def openspiel_game(name: str) -> str:
    """The OpenSpiel game string of an environment name (``openspiel:goofspiel(num_cards=4)`` → ``goofspiel(num_cards=4)``)."""
    return name[len(OPENSPIEL_PREFIX):]


def is_smac(name: str) -> bool:
    """SMAC battles, SMACv2 scenarios included (the SMAC agents play both)."""
    return name.startswith("smac:") or is_commander(name) or is_smacv2(name)


def is_commander(name: str) -> bool:
    """The AlphaStar commander's view of a SMAC map (``smac-commander:MAP``: ``env_for_agent``)."""
    return isinstance(name, str) and name.startswith(COMMANDER_PREFIX)


def is_smacv2(name: str) -> bool:
    return isinstance(name, str) and name.startswith(SMACV2_PREFIX)


def smac_map(name: str) -> str:
    """The map of a SMAC environment name (``smac:3m``, ``smac-commander:3m``, ``smac:3m@sc2``,
    ``smac:3m(spawns=map)`` → ``3m``)."""
    map_name = name.split(":", 1)[1].split("(", 1)[0]
    return map_name[: -len(SC2_SUFFIX)] if map_name.endswith(SC2_SUFFIX) else map_name


def smac_options(name: str) -> dict[str, str | bool]:
    """The battle options of a SMAC environment name: ``smac:2s3z(spawns=map)`` → ``{"spawns": "map"}``,
    ``smac:2s3z(reward_only_positive=false)`` → ``{"reward_only_positive": False}`` (``SMAC_OPTIONS`` lists
    the names and values allowed; none given → ``{}``)."""
    rest = name.split(":", 1)[1]
    if "(" not in rest:
        return {}
    if is_smacv2(name):
        raise ValueError(f"env {name!r}: SMACv2 scenarios take no (option=value) settings")
    body = rest.split("(", 1)[1]
    if not body.endswith(")"):
        raise ValueError(f"env {name!r}: options are written smac:MAP(name=value,...), with a closing ')'")
    options: dict[str, str] = {}
    for piece in filter(None, (p.strip() for p in body[:-1].split(","))):
        key, sep, value = (p.strip() for p in piece.partition("="))
        if not sep or key not in SMAC_OPTIONS:
            raise ValueError(f"env {name!r}: unknown option {piece!r}; options: "
                             + ", ".join(f"{k}={'|'.join(v)}" for k, v in SMAC_OPTIONS.items()))
        if value not in SMAC_OPTIONS[key]:
            raise ValueError(f"env {name!r}: {key} must be one of {tuple(SMAC_OPTIONS[key])}, got {value!r}")
        options[key] = SMAC_OPTIONS[key][value]
    return options


def smac_backend(name: str) -> str:
    """``"sc2"`` (the real game) for names ending in ``@sc2``, else ``"sim"`` (the simulator)."""
    return "sc2" if name.split("(", 1)[0].endswith(SC2_SUFFIX) else "sim"


def env_for_agent(env: str, agent: str) -> str:
    """The environment an agent plays: the AlphaStar agent sees ``smac:MAP`` as ``smac-commander:MAP``."""
    check_env_name(env)
    if agent == "alphastar":
        if not is_smac(env) or is_smacv2(env):
            raise ValueError(f"the alphastar agent plays SMAC maps ('smac:MAP'), got env {env!r}")
        return COMMANDER_PREFIX + env.split(":", 1)[1]
    if agent == "mappo" and (not is_smac(env) or is_commander(env)):
        raise ValueError(f"the mappo agent plays SMAC battles ('smac:MAP' or 'smacv2:SCENARIO'), got env {env!r}")
    if is_commander(env):
        raise ValueError(f"{env!r} is the AlphaStar commander's view; agent {agent!r} plays 'smac:{smac_map(env)}'")
    return env


def smac_map_is_symmetric(map_name: str) -> bool:
    """Both sides field the same units (3m, 8m, 2s3z, 3s5z, MMM, ...)."""
    from selfplay.envs.smac import get_map

    return get_map(map_name).same_teams


def is_two_sided(env: str) -> bool:
    """Asymmetric SMAC maps (SMACv2: more enemies than agents) need a learner per side
    (``selfplay.training.two_sided``)."""
    if is_smacv2(env):
        from selfplay.envs.smac import get_scenario

        cap = get_scenario(smac_map(env)).capability
        return cap.n_units != cap.n_enemies
    return is_smac(env) and not smac_map_is_symmetric(smac_map(env))


def make_env(name: str, num_envs: int, seed: int | None = None, device: str = "cpu",
             scripted_enemy: bool = False) -> TwoPlayerBatchedEnv:
    """A two-seat batched environment (the ``TwoPlayerBatchedEnv`` contract of ``envs/base.py``);
    ``scripted_enemy``: SMAC's single-player mode."""
    check_env_name(name)
    if name in MATRIX_GAMES:
        from selfplay.envs.rps import make_game

        return make_game(name, num_envs=num_envs, seed=seed, device=device)
    if is_openspiel(name):
        from selfplay.envs.openspiel import OpenSpielGame

        return OpenSpielGame(openspiel_game(name), num_envs, seed=seed, device=device)
    if is_smacv2(name):
        from selfplay.envs.smac.smacv2_battle import SMACv2Battle

        return SMACv2Battle(smac_map(name), num_envs=num_envs, two_player=not scripted_enemy, mirror=True, seed=seed,
                            device=device)
    from selfplay.envs.smac import SMACBattle

    map_name = smac_map(name)
    battle = SMACBattle(map_name, num_envs=num_envs, two_player=not scripted_enemy,
                        mirror=smac_map_is_symmetric(map_name), seed=seed, device=device, backend=smac_backend(name),
                        **smac_options(name))
    if is_commander(name):
        from selfplay.agents.alphastar.smac import CommanderConfig
        from selfplay.agents.alphastar.smac.env import CommanderEnv

        return CommanderEnv(battle, CommanderConfig(grid=COMMANDER_GRID))
    return battle


@dataclass
class AgentKit:
    """What the loop and evaluation need from an agent family."""

    make_learner: Callable[..., Any]  # (env, seed, seat=0, **overrides) -> Learner sized for that seat
    settings: Callable[..., Any]  # (**overrides) -> the agent's settings dataclass; unknown names raise ValueError
    save_policy: Callable[[Any, str], None]
    load_policy: Callable[[str], Any]
    stack_policies: Callable[[list], Any] | None  # frozen policies -> one batched population policy


def agent_kit(name: str, env: str = "rirrps") -> AgentKit:
    if name not in AGENTS:
        raise ValueError(f"agent must be one of {AGENTS}, got {name!r}")
    if name == "alphastar":
        return _alphastar_kit()
    if name == "mappo":
        return _mappo_kit()
    if is_smac(env):
        from selfplay.agents.ppo.config import ppo_config
        from selfplay.agents.ppo.multiunit import MultiUnitPPOLearner, load_policy, save_policy
        from selfplay.agents.ppo.multiunit_stack import stack_multiunit_policies

        body = "mlp" if name == "ppo-mlp" else "gru"

        def make_smac_learner(battle: Any, seed: int, seat: int = 0, **overrides: Any) -> Any:
            return MultiUnitPPOLearner.for_battle(battle, seat, ppo_config("smac", **{"body": body, **overrides}), seed)

        return AgentKit(make_smac_learner, lambda **o: ppo_config("smac", **{"body": body, **o}), save_policy,
                        load_policy, stack_multiunit_policies)

    from selfplay.agents.ppo import PPOLearner, load_policy, ppo_config, save_policy, stack_policies

    body = "mlp" if name == "ppo-mlp" else "lstm"

    def make_learner(env_: Any, seed: int, seat: int = 0, **overrides: Any) -> Any:  # both seats alike
        return PPOLearner(env_.obs_size, env_.n_actions, ppo_config("rps", **{"body": body, **overrides}), seed=seed)

    return AgentKit(make_learner, lambda **o: ppo_config("rps", **{"body": body, **o}), save_policy, load_policy,
                    stack_policies)


def _mappo_kit() -> AgentKit:
    """MAPPO (``agents/mappo``) under a self-play scheme, on SMAC battles and SMACv2 scenarios
    (``env_for_agent`` refuses other environments); populations act stacked (``MAPPOPolicyStack``)."""
    from selfplay.agents.mappo import mappo_config
    from selfplay.agents.mappo.selfplay import MAPPOSelfPlayLearner, load_policy, save_policy, stack_policies

    def make_learner(battle: Any, seed: int, seat: int = 0, **overrides: Any) -> Any:
        return MAPPOSelfPlayLearner.for_battle(battle, seat, mappo_config(**overrides), seed)

    return AgentKit(make_learner, mappo_config, save_policy, load_policy, stack_policies)


def _alphastar_kit() -> AgentKit:
    from selfplay.agents.alphastar.actor import load_policy, save_policy
    from selfplay.agents.alphastar.rl import alphastar_settings, make_alphastar_learner

    return AgentKit(make_alphastar_learner, alphastar_settings, save_policy, load_policy, None)
