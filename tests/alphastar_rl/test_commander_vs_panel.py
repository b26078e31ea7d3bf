"""The AlphaStar commander against per-unit policies (the panel of fixed SMAC opponents): a
``CommanderEnv`` whose commander plays only some seats passes the other seats' per-unit observations,
masks and actions through, and the panel evaluates a commander agent through it."""

import pytest
import torch
from selfplay.agents.alphastar.actor import AlphaStarPolicy
from selfplay.agents.alphastar.demonstrators import NearestEnemyDemonstrator
from selfplay.agents.alphastar.smac import CommanderConfig
from selfplay.agents.alphastar.smac.env import CommanderEnv
from selfplay.agents.alphastar.smac.policy import AlphaStarSMACPolicy
from selfplay.envs.smac import SMACBattle
from selfplay.envs.smac.panel import panel_member

from selfplay.evaluation import panel
from selfplay.evaluation.panel import PANEL_NAMES, evaluate_panel
from selfplay.training.registry import make_env

from .conftest import commander_env, tiny_net


def test_a_commander_seat_plays_the_same_games_as_the_policy_bound_to_the_battle():
    """Seat 0 through ``CommanderEnv(seats=(0,))`` with ``AlphaStarPolicy`` (packed observations) and seat 0
    through ``AlphaStarSMACPolicy`` (bound to the raw battle) are the same network, sampling from the same
    seed, against the same per-unit script in seat 1: every step's positions and health must agree."""
    net = tiny_net(commander_env(grid=8))
    runs = []
    for mixed in (True, False):
        battle = SMACBattle("3m", num_envs=3, two_player=True, mirror=True, seed=4)
        script = panel_member("heuristic", battle, 1)
        if mixed:
            env = CommanderEnv(battle, CommanderConfig(grid=8), seats=(0,))
            policy, state = AlphaStarPolicy(net, seed=7), None
        else:
            env, policy = battle, AlphaStarSMACPolicy(net, battle, seat=0, seed=7)
            state = policy.initial_state(3)
        obs = env.reset()
        start, trace = torch.ones(3, dtype=torch.bool), []
        for _ in range(30):
            masks = env.action_masks()
            if mixed:
                assert masks[0].shape == (3,) and masks[1].shape == battle.action_masks()[1].shape
                assert obs[0].shape == (3, env.layout.size) and torch.equal(obs[1], battle.get_obs()[1])
            a, state, _ = policy.act(obs[0], state, masks[0], start)
            other = script.act(obs[1], None, masks[1], start)[0]
            obs, _, done, _ = env.step([a, other])
            trace.append((battle.engine.pos.clone(), battle.engine.hp.clone()))
            start = done.clone()
        runs.append(trace)
    for (pos_a, hp_a), (pos_b, hp_b) in zip(*runs):
        assert torch.equal(pos_a, pos_b) and torch.equal(hp_a, hp_b)
    assert not torch.equal(runs[0][0][1], runs[0][-1][1])  # units were hit: the games were played


def test_commander_seats_are_checked():
    battle = SMACBattle("3m", num_envs=1, two_player=True, mirror=True)
    for bad in [(), (2,), (0, 0)]:
        with pytest.raises(ValueError, match="seats must be distinct seats"):
            CommanderEnv(battle, CommanderConfig(grid=8), seats=bad)


class ScriptedCommander:
    """A commander policy for the panel's games: ``demonstrator`` (or no_op everywhere) through the
    ``CommanderEnv`` the panel built (caught in ``made``)."""

    def __init__(self, made, demonstrator=None):
        self.made, self.demonstrator = made, demonstrator

    def initial_state(self, batch):
        return None

    def act(self, obs, state, mask, start):
        env = self.made[-1]
        if self.demonstrator is None:
            return env.layout.idle_actions(obs.shape[0]), None, {}
        return env.layout.pack_actions(self.demonstrator(env.commanders[0])), None, {}


def test_the_panel_meets_a_commander_agent_in_both_seats(monkeypatch):
    made = []
    real = panel.agent_battle

    def catch(*args, **kwargs):
        env, battle = real(*args, **kwargs)
        made.append(env)
        return env, battle

    monkeypatch.setattr(panel, "agent_battle", catch)
    env = "smac-commander:3m"
    idle = evaluate_panel(env, {"idle": ([ScriptedCommander(made)], None)}, games=4, seeds=[0])
    assert idle.rates["idle"] == {m: [0.0] for m in PANEL_NAMES}  # standing still never wins a fight
    seats = [e.commander_seats for e in made]
    assert seats == [(0,)] + [(0,), (1,)] * 4  # builtin: seat 0 of SMAC's game; a script: half in each seat
    assert made[0].n_seats == 1 and all(e.n_seats == 2 for e in made[1:])
    made.clear()
    nearest = evaluate_panel(env, {"nearest": ([ScriptedCommander(made, NearestEnemyDemonstrator())], None)},
                             games=4, seeds=[0])
    # the whole team on the enemy nearest to it beats the AI on 3m (64 of 64 games, the demonstrator's
    # docstring) and the retreat-and-regroup script, which gives ground first (0.75 of 16 games)
    assert nearest.rates["nearest"]["builtin"] == [1.0] and nearest.rates["nearest"]["regroup"][0] > 0
    assert not idle.greedy and "the AlphaStar network has no greedy mode" in idle.how()


def test_a_commander_checkpoint_plays_the_panel_through_evaluate_panel():
    """A real checkpoint (``AlphaStarPolicy`` at the registry's commander grid) samples its orders in the
    panel's games, and the same seed gives the same games."""
    net = tiny_net(make_env("smac-commander:3m", 1, seed=0))  # the registry's commander grid
    runs = []
    for _ in range(2):
        policy = AlphaStarPolicy(net, seed=0)
        before = policy.generator.get_state().clone()
        ev = evaluate_panel("smac-commander:3m", {"final": ([policy], None)}, games=2, seeds=[0],
                            members=["builtin", "regroup"])
        assert not torch.equal(policy.generator.get_state(), before)  # the network sampled decisions
        runs.append(ev.rates)
    assert set(runs[0]["final"]) == {"builtin", "regroup"} and runs[0] == runs[1]
