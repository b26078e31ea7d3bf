"""The AlphaStar agent (docs/design/alphastar.md): network (§2) and RL losses (§4).

from selfplay.agents.alphastar import AlphaStarConfig, AlphaStarNet
net = AlphaStarNet(AlphaStarConfig())
out = net(obs, state, generator=g)          # sampling: actions, logits, log-probs, value
out = net(obs, state, actions=out.actions)  # teacher forcing: log-probs, entropies
terms = alphastar_rl_loss(out.time_major(), behaviour_log_probs, sl_logits, rewards, discounts, bootstrap)
"""

from .config import HEADS, SMAC_ACTION_TYPES, ActionTypeSpec, AlphaStarConfig, BaselineSpec, ScalarFeature
from .losses import (
    RewardCosts,
    RLLossConfig,
    alphastar_rl_loss,
    discounts_from_dones,
    entropy_loss,
    policy_kl_loss,
    split_upgo_loss,
    split_vtrace_pg_loss,
    td_lambda_returns,
    td_lambda_value_loss,
    upgo_returns,
    vtrace,
)
from .network import UNUSED, AlphaStarActions, AlphaStarNet, AlphaStarObs, AlphaStarOutput
from .supervised import per_head_accuracy, supervised_loss

__all__ = [
    "HEADS",
    "SMAC_ACTION_TYPES",
    "UNUSED",
    "ActionTypeSpec",
    "AlphaStarActions",
    "AlphaStarConfig",
    "AlphaStarNet",
    "AlphaStarObs",
    "AlphaStarOutput",
    "BaselineSpec",
    "RLLossConfig",
    "RewardCosts",
    "ScalarFeature",
    "alphastar_rl_loss",
    "discounts_from_dones",
    "entropy_loss",
    "per_head_accuracy",
    "policy_kl_loss",
    "split_upgo_loss",
    "split_vtrace_pg_loss",
    "supervised_loss",
    "td_lambda_returns",
    "td_lambda_value_loss",
    "upgo_returns",
    "vtrace",
]
