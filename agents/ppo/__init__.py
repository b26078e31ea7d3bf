"""PPO agents (MLP and LSTM bodies) for the self-play suite (docs/design/selfplay.md §5)."""

from selfplay.agents.ppo.checkpoint import load_policy, save_policy
from selfplay.agents.ppo.config import ENV_DEFAULTS, BatchSizes, MultiUnitPPOConfig, PPOConfig, ppo_config
from selfplay.agents.ppo.frozen import FrozenPPOPolicy
from selfplay.agents.ppo.gae import compute_gae
from selfplay.agents.ppo.learner import PPOLearner
from selfplay.agents.ppo.loss import ppo_loss
from selfplay.agents.ppo.network import ActorCritic, LSTMBody, MLPBody, NetworkSpec
from selfplay.agents.ppo.stack import PolicyStack, stack_policies

__all__ = [
    "ENV_DEFAULTS", "BatchSizes", "MultiUnitPPOConfig", "ppo_config",
    "ActorCritic", "FrozenPPOPolicy", "LSTMBody", "MLPBody", "NetworkSpec", "PPOConfig", "PPOLearner",
    "PolicyStack", "compute_gae", "load_policy", "ppo_loss", "save_policy", "stack_policies",
]
