"""PPO agents (MLP and LSTM bodies) for the self-play suite (spec-selfplay §5)."""

from agents.ppo.checkpoint import load_policy, save_policy
from agents.ppo.config import ENV_DEFAULTS, BatchSizes, MultiUnitPPOConfig, PPOConfig, ppo_config
from agents.ppo.frozen import FrozenPPOPolicy
from agents.ppo.gae import compute_gae
from agents.ppo.learner import PPOLearner
from agents.ppo.loss import ppo_loss
from agents.ppo.network import ActorCritic, LSTMBody, MLPBody, NetworkSpec
from agents.ppo.stack import PolicyStack, stack_policies

__all__ = [
    "ENV_DEFAULTS", "BatchSizes", "MultiUnitPPOConfig", "ppo_config",
    "ActorCritic", "FrozenPPOPolicy", "LSTMBody", "MLPBody", "NetworkSpec", "PPOConfig", "PPOLearner",
    "PolicyStack", "compute_gae", "load_policy", "ppo_loss", "save_policy", "stack_policies",
]
