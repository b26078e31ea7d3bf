"""The AlphaStar network (docs/design/alphastar.md §2): shapes, masks, the two modes, carried LSTM state."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from selfplay.agents.alphastar import HEADS, ActionTypeSpec, AlphaStarActions, AlphaStarConfig, AlphaStarNet
from selfplay.agents.alphastar.synthetic import random_obs

# A reduced config keeps the suite fast; the default (small) size is exercised in the shape test.
SMALL = AlphaStarConfig.tiny(max_selected_units=6)


def _net(config=SMALL, seed=0):
    torch.manual_seed(seed)
    return AlphaStarNet(config).eval()


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _slice_time(obs, steps: slice):
    """The observation restricted to some time steps (every [B, T, ...] field sliced on T)."""
    cut = {}
    for k, v in vars(obs).items():
        if isinstance(v, dict):
            cut[k] = {name: x[:, steps] for name, x in v.items()}
        elif isinstance(v, torch.Tensor):
            cut[k] = v[:, steps]
    return replace(obs, **cut)


def _check_legal(config, obs, out, num_units):
    """Every sampled argument is legal under the observation's masks and the action-type table."""
    a = out.actions
    B, T = a.action_type.shape
    avail = obs.available_action_types
    assert bool(avail.gather(-1, a.action_type[..., None]).all())
    for b in range(B):
        for t in range(T):
            at = int(a.action_type[b, t])
            spec = config.action_types[at]
            sel = obs.selectable_units[b, t]
            sel = sel[at] if sel.dim() == 2 else sel
            tgt = obs.targetable_units[b, t]
            tgt = tgt[at] if tgt.dim() == 2 else tgt
            loc = obs.location_mask[b, t]
            loc = loc[at] if loc.dim() == 3 else loc
            picks = [int(u) for u in a.selected_units[b, t] if u >= 0]
            if spec.selected_units:
                assert 1 <= len(picks) <= config.max_selected_units
                assert len(set(picks)) == len(picks)
                assert all(sel[u] and u < num_units for u in picks)
                # -1 only after the picks
                assert bool((a.selected_units[b, t, len(picks) :] == -1).all())
            else:
                assert picks == []
            assert (int(a.target_unit[b, t]) >= 0) == spec.target_unit
            if spec.target_unit:
                assert bool(tgt[a.target_unit[b, t]])
            assert (int(a.location[b, t]) >= 0) == spec.location
            if spec.location:
                assert bool(loc.flatten()[a.location[b, t]])
            assert (int(a.queued[b, t]) >= 0) == spec.queued
            assert 0 <= int(a.delay[b, t]) < config.num_delays


@pytest.mark.parametrize("num_units", [3, 30])
def test_shapes_and_masks_default_size(num_units):
    config = AlphaStarConfig()
    net = _net(config)
    B, T, N = 2, 2, num_units + 2  # two padding slots
    obs = random_obs(config, B, T, num_units, num_slots=N, seed=1)
    with torch.no_grad():
        out = net(obs, generator=_gen(2), temperature=2.0)
    A, S, R = config.num_action_types, config.max_selected_units, config.location_resolution
    expected = {
        "action_type": (B, T, A),
        "delay": (B, T, config.num_delays),
        "queued": (B, T, 2),
        "selected_units": (B, T, S, N + 1),
        "target_unit": (B, T, N),
        "location": (B, T, R * R),
    }
    for head, shape in expected.items():
        assert tuple(out.logits[head].shape) == shape
        assert tuple(out.log_probs[head].shape) == (B, T)
        assert bool(torch.isfinite(out.log_probs[head]).all())
    assert tuple(out.actions.selected_units.shape) == (B, T, S)
    assert tuple(out.value.shape) == (B, T) and bool((out.value.abs() < 1).all())
    assert tuple(out.state[0].shape) == (config.lstm_layers, B, config.lstm_size)
    assert len(out.attention_maps) == config.entity_layers
    attn = out.attention_maps[0]
    assert tuple(attn.shape) == (B, T, config.entity_heads, N, N)
    torch.testing.assert_close(attn.sum(-1), torch.ones(B, T, config.entity_heads, N))
    assert float(attn[..., num_units:].abs().max()) == 0.0  # padding slots are never attended to
    _check_legal(config, obs, out, num_units)


@pytest.mark.parametrize("per_action_type_masks", [False, True])
def test_sampled_log_prob_equals_teacher_forced(per_action_type_masks):
    net = _net()
    obs = random_obs(SMALL, 3, 4, 7, num_slots=9, seed=3, per_action_type_masks=per_action_type_masks)
    with torch.no_grad():
        sampled = net(obs, generator=_gen(4), temperature=1.5)
        forced = net(obs, actions=sampled.actions, temperature=1.5)
    _check_legal(SMALL, obs, sampled, 7)
    for head in HEADS:
        torch.testing.assert_close(forced.log_probs[head], sampled.log_probs[head])
        torch.testing.assert_close(forced.entropies[head], sampled.entropies[head])
        torch.testing.assert_close(forced.logits[head], sampled.logits[head])
    # The given actions come back unchanged.
    for name in ("action_type", "delay", "queued", "target_unit", "location", "selected_units"):
        assert torch.equal(getattr(forced.actions, name), getattr(sampled.actions, name))


def test_log_prob_matches_softmax_of_logits():
    """log π(a) per head is log softmax of the returned logits at the action; selected units sum picks."""
    net = _net()
    obs = random_obs(SMALL, 2, 3, 5, seed=5)
    with torch.no_grad():
        out = net(obs, generator=_gen(6))
    a = out.actions
    for head, value in (("action_type", a.action_type), ("delay", a.delay), ("location", a.location)):
        lp = torch.log_softmax(out.logits[head], -1).gather(-1, value.clamp(min=0)[..., None]).squeeze(-1)
        torch.testing.assert_close(out.log_probs[head], lp * out.argument_used[head])
    n = obs.entities.shape[2]
    picks = a.selected_units.clone()
    # the end token (index n) is the pick right after the last unit
    count = (picks >= 0).sum(-1)
    picks = torch.where(picks >= 0, picks, torch.full_like(picks, n))
    lp = torch.log_softmax(out.logits["selected_units"], -1).gather(-1, picks[..., None]).squeeze(-1)
    lp = (lp * out.selected_units_pick_mask).sum(-1)
    torch.testing.assert_close(out.log_probs["selected_units"], lp)
    used = out.argument_used["selected_units"]
    expected_active = torch.where(count < SMALL.max_selected_units, count + 1, count) * used
    assert torch.equal(out.selected_units_pick_mask.sum(-1), expected_active)


def test_selected_units_never_twice_and_respects_max():
    config = replace(SMALL, max_selected_units=3)
    net = _net(config)
    obs = random_obs(config, 8, 2, 24, seed=7)
    obs.available_action_types[:] = False
    obs.available_action_types[..., 2] = True  # move: uses selected units
    obs.selectable_units = obs.entity_mask.clone()  # every unit selectable
    counts = []
    for seed in range(2):
        with torch.no_grad():
            out = net(obs, generator=_gen(seed), temperature=20.0)
        sel = out.actions.selected_units
        for row in sel.reshape(-1, 3).tolist():
            picks = [u for u in row if u >= 0]
            assert len(picks) == len(set(picks)) and 1 <= len(picks) <= 3
            counts.append(len(picks))
    assert max(counts) == 3  # the max is reached (and never exceeded) at high temperature


def test_selected_units_only_end_token_when_nothing_left():
    """With two selectable units and max 6 picks, the third pick must be the end token."""
    net = _net()
    obs = random_obs(SMALL, 4, 2, 10, seed=8)
    obs.available_action_types[:] = False
    obs.available_action_types[..., 1] = True  # stop
    obs.selectable_units = torch.zeros_like(obs.entity_mask)
    obs.selectable_units[..., [2, 5]] = True
    with torch.no_grad():
        out = net(obs, generator=_gen(9), temperature=50.0)
    sel = out.actions.selected_units
    assert bool((sel[..., 2:] == -1).all())
    assert bool(((sel[..., :2] == 2) | (sel[..., :2] == 5) | (sel[..., :2] == -1)).all())
    assert bool((sel[..., 0] >= 0).all())  # the end token is illegal on the first pick


def _grad_norm(module):
    return sum(float(p.grad.abs().sum()) for p in module.parameters() if p.grad is not None)


def test_masked_arguments_carry_no_loss_and_no_gradient():
    net = _net().train()
    obs = random_obs(SMALL, 2, 3, 6, seed=10)
    B, T = 2, 3
    S = SMALL.max_selected_units
    none = torch.full((B, T), -1)
    noop = AlphaStarActions(
        action_type=torch.zeros(B, T, dtype=torch.long),
        delay=torch.full((B, T), 2),
        queued=torch.ones(B, T, dtype=torch.long),  # given but unused: must be ignored
        selected_units=torch.zeros(B, T, S, dtype=torch.long),
        target_unit=torch.zeros(B, T, dtype=torch.long),
        location=torch.full((B, T), 5),
    )
    out = net(obs, actions=noop)
    for head in ("queued", "selected_units", "target_unit", "location"):
        assert not bool(out.argument_used[head].any())
        assert float(out.log_probs[head].detach().abs().sum()) == 0.0
        assert float(out.entropies[head].detach().abs().sum()) == 0.0
        assert float(out.logits[head].detach().abs().sum()) == 0.0
        assert bool((getattr(out.actions, head) == -1).all())
    loss = -sum(out.log_probs[h].sum() for h in HEADS) - sum(out.entropies[h].sum() for h in HEADS)
    loss.backward()
    for module in (net.queue_head, net.selected_units_head, net.target_unit_head, net.location_head):
        assert _grad_norm(module) == 0.0
    assert _grad_norm(net.action_type_head) > 0 and _grad_norm(net.delay_head) > 0

    # "move" uses queue, selected units and location, but not target unit.
    net.zero_grad()
    move = replace(
        noop,
        action_type=torch.full((B, T), 2),
        selected_units=torch.cat([torch.zeros(B, T, 1, dtype=torch.long), torch.full((B, T, S - 1), -1)], -1),
        target_unit=none,
    )
    obs.available_action_types[..., 2] = True
    obs.location_mask[..., 0, 5] = True
    out = net(obs, actions=move)
    (-sum(out.log_probs[h].sum() for h in HEADS)).backward()
    assert _grad_norm(net.target_unit_head) == 0.0
    for module in (net.queue_head, net.selected_units_head, net.location_head):
        assert _grad_norm(module) > 0


def test_queue_projection_only_when_action_can_be_queued():
    """The queue argument changes the later heads only for queueable action types."""
    specs = (
        ActionTypeSpec("no_op"),
        ActionTypeSpec("unqueued_move", selected_units=True, location=True),
        ActionTypeSpec("queued_move", queued=True, selected_units=True, location=True),
    )
    config = replace(SMALL, action_types=specs)
    net = _net(config)
    obs = random_obs(config, 2, 2, 5, seed=11)
    obs.available_action_types[:] = True
    obs.location_mask[:] = True
    S = config.max_selected_units

    def forced(action_type, queued):
        acts = AlphaStarActions(
            action_type=torch.full((2, 2), action_type),
            delay=torch.zeros(2, 2, dtype=torch.long),
            queued=torch.full((2, 2), queued),
            selected_units=torch.cat([torch.zeros(2, 2, 1, dtype=torch.long), torch.full((2, 2, S - 1), -1)], -1),
            target_unit=torch.full((2, 2), -1),
            location=torch.zeros(2, 2, dtype=torch.long),
        )
        with torch.no_grad():
            return net(obs, actions=acts).logits["location"]

    torch.testing.assert_close(forced(1, 0), forced(1, 1))
    assert float((forced(2, 0) - forced(2, 1)).abs().max()) > 1e-6


def test_lstm_state_carried_over_sequence_equals_step_by_step():
    net = _net()
    B, T = 3, 5
    obs = random_obs(SMALL, B, T, 6, seed=12)
    with torch.no_grad():
        whole = net(obs, generator=_gen(13))
        state = net.initial_state(B)
        for t in range(T):
            step_obs = _slice_time(obs, slice(t, t + 1))
            acts = AlphaStarActions(**{k: v[:, t : t + 1] for k, v in vars(whole.actions).items()})
            step = net(step_obs, state, actions=acts)
            state = step.state
            torch.testing.assert_close(step.value[:, 0], whole.value[:, t])
            for head in HEADS:
                torch.testing.assert_close(step.log_probs[head][:, 0], whole.log_probs[head][:, t])
        torch.testing.assert_close(state[0], whole.state[0])
        torch.testing.assert_close(state[1], whole.state[1])


def test_episode_start_resets_state_inside_a_chunk():
    net = _net()
    B, T = 2, 4
    obs = random_obs(SMALL, B, T, 5, seed=14)
    start = torch.zeros(B, T, dtype=torch.bool)
    start[0, 2] = True  # game 0 starts a new episode at step 2
    with torch.no_grad():
        carried = net.initial_state(B)
        carried = (carried[0] + 0.5, carried[1] - 0.3)
        out = net(replace(obs, episode_start=start), carried, generator=_gen(15))
        acts = AlphaStarActions(**{k: v[:, 2:] for k, v in vars(out.actions).items()})
        fresh = net(_slice_time(obs, slice(2, None)), net.initial_state(B), actions=acts)
        no_reset = net(obs, carried, actions=out.actions)
    torch.testing.assert_close(out.value[0, 2:], fresh.value[0])  # game 0: state was zeroed at step 2
    torch.testing.assert_close(out.value[1], no_reset.value[1])  # game 1: untouched
    assert float((out.value[0, 2:] - no_reset.value[0, 2:]).abs().max()) > 1e-6


def test_same_seed_same_result_and_temperature_scales_logits():
    net = _net()
    obs = random_obs(SMALL, 2, 2, 6, seed=16)
    with torch.no_grad():
        a = net(obs, generator=_gen(17))
        b = net(obs, generator=_gen(17))
        hot = net(obs, actions=a.actions, temperature=2.0)
    for name, value in vars(a.actions).items():
        assert torch.equal(value, getattr(b.actions, name))
    torch.testing.assert_close(hot.logits["action_type"] * 2.0, a.logits["action_type"])


def test_opponent_scalars_reach_the_value_only():
    net = _net()
    obs = random_obs(SMALL, 2, 2, 6, seed=18)
    with torch.no_grad():
        a = net(obs, generator=_gen(19))
        b = net(replace(obs, opponent_scalars=obs.opponent_scalars + 1.0), actions=a.actions)
    for head in HEADS:
        torch.testing.assert_close(a.logits[head], b.logits[head])
    assert float((a.value - b.value).abs().max()) > 1e-6


def test_bad_inputs_raise_value_error():
    net = _net()
    obs = random_obs(SMALL, 2, 2, 4, seed=20)
    with pytest.raises(ValueError, match="temperature"):
        net(obs, temperature=0.0)
    with pytest.raises(ValueError, match="entity_mask"):
        net(replace(obs, entity_mask=obs.entity_mask[:, :, :3]))
    with pytest.raises(ValueError, match="entities"):
        net(replace(obs, entities=obs.entities[..., :5]))
    with pytest.raises(ValueError, match="scalars"):
        net(replace(obs, scalars=obs.scalars[..., :3]))
    with pytest.raises(ValueError, match="location_mask"):
        net(replace(obs, location_mask=obs.location_mask[..., :4]))
    out = net(obs, generator=_gen(0))
    with pytest.raises(ValueError, match="actions.target_unit"):
        net(obs, actions=replace(out.actions, target_unit=torch.full((2, 2), 4)))
    with pytest.raises(ValueError, match="entity_d_model"):
        AlphaStarConfig(entity_d_model=30, entity_heads=4)
    with pytest.raises(ValueError, match="autoregressive_embedding_size"):
        AlphaStarConfig(autoregressive_embedding_size=100)
    with pytest.raises(ValueError, match="location_resolution"):
        AlphaStarConfig(location_resolution=24)
    with pytest.raises(ValueError, match="max_selected_units"):
        AlphaStarConfig(max_selected_units=0)


def test_scalars_as_dict_equal_packed():
    net = _net()
    obs = random_obs(SMALL, 2, 2, 5, seed=21)
    sizes = [f.size for f in SMALL.scalar_feature_list]
    parts = torch.split(obs.scalars, sizes, dim=-1)
    as_dict = {f.name: p for f, p in zip(SMALL.scalar_feature_list, parts)}
    with torch.no_grad():
        a = net(obs, generator=_gen(22))
        b = net(replace(obs, scalars=as_dict), actions=a.actions)
    torch.testing.assert_close(a.value, b.value)
    torch.testing.assert_close(a.log_probs["action_type"], b.log_probs["action_type"])
    with pytest.raises(ValueError, match="missing"):
        net(replace(obs, scalars={"game_time": parts[0]}))


def test_alphastar_scale_builds_and_runs():
    """The AlphaStar column of the design (docs/design/alphastar.md §2) is reachable by settings (128² map → 16², 256² locations)."""
    config = AlphaStarConfig.alphastar_scale()
    assert config.map_skip_size == 16 and config.location_upsamples == 4
    net = _net(config)
    obs = random_obs(config, 1, 1, 40, seed=23)
    with torch.no_grad():
        out = net(obs, generator=_gen(24))
    assert tuple(out.logits["location"].shape) == (1, 1, 256 * 256)
    assert tuple(out.logits["selected_units"].shape) == (1, 1, 64, 41)
    assert tuple(out.state[0].shape) == (3, 1, 384)


def test_entity_embeddings_are_scattered_onto_the_map():
    """Moving one unit changes the spatial encoding (and thus the value); positions are required."""
    net = _net()
    obs = random_obs(SMALL, 1, 1, 4, num_slots=6, seed=25)
    moved = obs.entity_positions.clone()
    moved[0, 0, 1] = torch.tensor([0, 0]) if bool((moved[0, 0, 1] != 0).any()) else torch.tensor([5, 5])
    padding_moved = obs.entity_positions.clone()
    padding_moved[0, 0, 5] = (padding_moved[0, 0, 5] + 3) % SMALL.spatial_size
    with torch.no_grad():
        a = net(obs, generator=_gen(26))
        b = net(replace(obs, entity_positions=moved), actions=a.actions)
        c = net(replace(obs, entity_positions=padding_moved), actions=a.actions)
    assert float((a.value - b.value).abs().max()) > 1e-6
    torch.testing.assert_close(a.value, c.value)  # a padding slot's position does not matter
    scatter = net.entity_scatter
    emb = torch.randn(2, 3, SMALL.entity_embedding_size)
    pos = torch.tensor([[[1, 2], [1, 2], [4, 0]], [[0, 0], [3, 3], [3, 3]]])
    mask = torch.tensor([[True, True, True], [True, True, False]])
    planes = scatter(emb, pos, mask)
    proj = torch.relu(scatter.project(emb.transpose(1, 2)))  # [2, C, 3]
    torch.testing.assert_close(planes[0, :, 2, 1], proj[0, :, 0] + proj[0, :, 1])  # two units in one cell
    torch.testing.assert_close(planes[1, :, 3, 3], proj[1, :, 1])  # the padding slot adds nothing
    assert float(planes.sum()) == pytest.approx(float(proj[0].sum() + proj[1, :, :2].sum()), rel=1e-5)
    with pytest.raises(ValueError, match="entity_positions"):
        net(replace(obs, entity_positions=None))
    with pytest.raises(ValueError, match="entity_positions"):
        net(replace(obs, entity_positions=obs.entity_positions + SMALL.spatial_size))
    no_scatter = _net(replace(SMALL, scatter_channels=0))
    with torch.no_grad():
        no_scatter(replace(obs, entity_positions=None), generator=_gen(27))


def test_step_without_units_stays_finite():
    """A step with no unit at all (only no-op available) gives finite outputs and gradients."""
    net = _net().train()
    obs = random_obs(SMALL, 2, 2, 3, seed=28)
    obs.entity_mask[0, 0] = False
    obs.available_action_types[0, 0] = False
    obs.available_action_types[0, 0, 0] = True
    out = net(obs, generator=_gen(29))
    assert int(out.actions.action_type[0, 0]) == 0
    total = sum(out.log_probs[h].sum() + out.entropies[h].sum() for h in HEADS) + out.value.sum()
    assert bool(torch.isfinite(total))
    total.backward()
    assert all(bool(torch.isfinite(p.grad).all()) for p in net.parameters() if p.grad is not None)
