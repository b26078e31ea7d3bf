"""``selfplay replay``: one SMAC or SMACv2 game between two players, written as an animated GIF.

A player is ``panel:NAME`` (a member of the SMAC panel, ``envs/smac/panel.py``) or a run directory
``RUN`` (its last checkpoint) or ``RUN@ID`` (checkpoint ``ID``) — of self-play or of training against
the built-in AI, whose checkpoints are the policies its test games played. Player ``a`` takes seat 0 (the map's
player 1), ``b`` seat 1. The battle is the one the panel evaluation plays (``evaluation/panel.py``),
seeded by ``seed``: with ``b`` = ``panel:builtin`` SMAC's single-player game (``builtin_battle``: the
map's own spawns, the AI's side driven by the engine); otherwise the battle training uses
(``make_env``: two-player, seat 1 mirrored on a symmetric map; on SMACv2 both teams drawn from the
scenario, the second side's start mirrored). On SMACv2 the panel has the built-in AI alone, so the other
player is a checkpoint. The built-in AI plays player 2 only,
as in SMAC (``a`` = ``panel:builtin`` is refused). Checkpoints play greedily (each unit's most
probable action, as SMAC's test games and the panel evaluation) unless ``greedy=False``. One frame is
drawn at the start and after each step until the game ends (``envs/smac/render.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

PANEL_PREFIX = "panel:"


@dataclass
class ReplayResult:
    path: Path
    steps: int
    winner: int  # 0 or 1, -1 for a draw (timeout or mutual destruction)


def load_checkpoint(spec: str, env_name: str) -> Any:
    """The policy of ``RUN`` (its last checkpoint) or ``RUN@ID``; the run must have played ``env_name``
    with a per-unit agent."""
    from selfplay.training.registry import env_for_agent, smac_map
    from selfplay.training.rundir import open_committed

    run_dir, _, ident = spec.partition("@")
    if not Path(run_dir).is_dir():
        raise ValueError(f"player {spec!r} must be panel:NAME, a run directory RUN or RUN@ID")
    run, state, kit = open_committed(run_dir)
    cfg = state["config"]
    if env_for_agent(cfg["env"], cfg["agent"]) != cfg["env"] or smac_map(cfg["env"]) != smac_map(env_name):
        raise ValueError(f"player {spec!r} was trained on {cfg['env']!r} with agent {cfg['agent']!r}; "
                         f"a replay on {env_name!r} needs a per-unit agent of that map")
    if cfg.get("opponent") == "builtin-ai":  # a run against the built-in AI keeps the policies it evaluated
        from selfplay.evaluation.vs_ai import vs_ai_checkpoints

        checkpoints = vs_ai_checkpoints(run, state, kit)
    else:
        checkpoints = run.committed_menagerie(state, "checkpoints", kit.load_policy)
    if not checkpoints.ids:
        raise ValueError(f"run {run_dir} has no checkpoint")
    if not ident:
        return checkpoints[checkpoints.ids[-1]].policy
    if not ident.isdigit() or int(ident) not in checkpoints.ids:
        raise ValueError(f"player {spec!r}: checkpoint id must be one of {checkpoints.ids}, got {ident!r}")
    return checkpoints[int(ident)].policy


def play_replay(env_name: str, a: str, b: str, out: str | Path, seed: int = 0, fps: float = 8.0,
                scale: int = 16, greedy: bool = True) -> ReplayResult:
    """Play one game of ``a`` (seat 0) against ``b`` (seat 1) and write it to ``out`` (a .gif)."""
    import torch

    from selfplay.envs.smac.panel import panel_member
    from selfplay.envs.smac.render import ReplayRecorder
    from selfplay.evaluation.panel import BUILTIN, builtin_battle
    from selfplay.training.matches import evaluation_act
    from selfplay.training.registry import check_env_name, is_smacv2, make_env
    from selfplay.utils.checks import check_seed

    check_seed(seed)
    if not (env_name.startswith("smac:") or is_smacv2(env_name)):
        raise ValueError(f"env must be a SMAC map 'smac:MAP' or a SMACv2 scenario 'smacv2:SCENARIO', got {env_name!r}")
    check_env_name(env_name)
    if not str(out).lower().endswith(".gif"):
        raise ValueError(f"out must end in .gif, got {str(out)!r}")
    if a == PANEL_PREFIX + BUILTIN:
        raise ValueError(f"a={a!r}: the built-in AI plays player 2 (seat 1) as in SMAC's single-player game; "
                         "pass it as b")
    single = b == PANEL_PREFIX + BUILTIN  # SMAC's own game, as the panel evaluation plays builtin
    battle = builtin_battle(env_name, 1, seed) if single else make_env(env_name, 1, seed=seed)
    battle.auto_reset = False  # the last frame is the game's end, not the next game's start
    obs = battle.reset()
    players = []
    for seat, spec in enumerate((a,) if single else (a, b)):
        if spec.startswith(PANEL_PREFIX):
            players.append(panel_member(spec[len(PANEL_PREFIX):], battle, seat))
        else:
            players.append(load_checkpoint(spec, env_name))
    rec = ReplayRecorder(battle, 0, scale)
    rec.capture()
    states = [p.initial_state(1) for p in players]
    start = torch.ones(1, dtype=torch.bool)
    steps = 0
    with torch.no_grad():
        while True:
            masks = battle.action_masks()
            actions = []
            for seat, p in enumerate(players):
                act, states[seat], _ = evaluation_act(p, obs[seat], states[seat], masks[seat], start, greedy)
                actions.append(torch.as_tensor(act, dtype=torch.long))
            obs, _, done, info = battle.step(actions)
            start = torch.zeros(1, dtype=torch.bool)
            steps += 1
            rec.capture()
            if bool(done[0]):
                break
    path = rec.save_gif(out, fps)
    return ReplayResult(Path(path), steps, int(info["winner"][0]))
