"""Supervised learning smoke tests (spec-alphastar.md §3) and the Policy wrapper on a battle."""

import json

import numpy as np
import pytest
import torch

from selfplay.agents.alphastar import AlphaStarNet
from selfplay.agents.alphastar.dataset import DemonstrationDataset, record_demonstrations
from selfplay.agents.alphastar.demonstrators import FocusFireDemonstrator
from selfplay.agents.alphastar.sl import SLConfig, evaluate_sl, play_vs_scripted, run_sl, sl_step
from selfplay.agents.alphastar.smac import AlphaStarSMACPolicy, CommanderConfig, SMACCommander
from selfplay.envs.smac import SMACBattle

from .test_features import TINY


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("sl")
    battle = SMACBattle("3m", num_envs=4, two_player=False, seed=0)
    cmd = SMACCommander(battle, 0, CommanderConfig(grid=8))
    record_demonstrations(battle, FocusFireDemonstrator(), 4, out, commander=cmd)
    cfg = cmd.network_config(**TINY)
    return DemonstrationDataset(out, cfg), cfg


def test_a_few_sl_steps_reduce_the_loss(data):
    ds, cfg = data
    torch.manual_seed(0)
    net = AlphaStarNet(cfg)
    games = np.arange(ds.num_games)
    batch = ds.batch(ds.lanes(games, batch_size=8, seq_len=12, seed=0)[0])
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        metrics, _ = sl_step(net, opt, batch, net.initial_state(8), grad_clip=0.5)
        assert np.isfinite(metrics["total"]) and metrics["grad_norm"] >= 0
        losses.append(metrics["total"])
    assert losses[-1] < 0.6 * losses[0]
    acc = evaluate_sl(net, ds, games[:2], 2, 12)
    assert 0.0 <= acc["action_type_accuracy"] <= 1.0 and acc["steps"] == ds.length[:2].sum()


def test_policy_wrapper_plays_a_seat(data):
    _, cfg = data
    net = AlphaStarNet(cfg)
    battle = SMACBattle("3m", num_envs=2, two_player=False, seed=1)
    result = play_vs_scripted(net, battle, num_games=2, temperature=1.0, seed=0)
    assert result["games"] == 2
    assert result["win_rate"] + result["draw_rate"] + result["loss_rate"] == pytest.approx(1.0)
    # the wrapper's contract: per-unit SMAC actions legal under the battle's masks, the LSTM state
    battle = SMACBattle("3m", num_envs=2, seed=2)
    obs = battle.reset()
    policy = AlphaStarSMACPolicy(net, battle, seat=1, seed=0)
    state = policy.initial_state(2)
    actions, state, info = policy.act(obs[1], state, None, episode_start=torch.ones(2, dtype=torch.bool))
    assert actions.shape == (2, 3) and info["due"].all()
    assert battle.action_masks()[1].gather(2, actions[..., None]).all()
    assert state[0].shape == (1, 2, cfg.lstm_size)
    with pytest.raises(ValueError, match="batch"):
        policy.initial_state(5)
    with pytest.raises(ValueError, match="grid"):
        AlphaStarSMACPolicy(net, battle, commander_config=CommanderConfig(grid=16))


def test_run_sl_writes_metrics_and_checkpoint(tmp_path):
    config = SLConfig(num_games=4, num_envs=2, batch_size=2, seq_len=8, epochs=1, eval_games=2, grid=8,
                      network=dict(TINY))
    metrics = run_sl("3m", out=tmp_path, seed=0, config=config, log=lambda *_: None)
    saved = json.loads((tmp_path / "sl_metrics.json").read_text())
    for key in ("action_type_accuracy", "win_rate_vs_scripted", "demonstrator_win_rate"):
        assert key in saved and 0.0 <= saved[key] <= 1.0
    assert saved["demonstrations"]["games"] == 4
    ckpt = torch.load(tmp_path / "sl_checkpoint.pt")
    assert ckpt["network_config"]["max_entities"] == 6 and "state_dict" in ckpt
    assert metrics["win_rate_vs_scripted"] == saved["win_rate_vs_scripted"]
    with pytest.raises(ValueError, match="num_games"):
        SLConfig(num_games=1)
