"""MAPPO (Yu et al. 2022): a shared recurrent actor and a centralised critic for a side of SMAC agents."""

from .config import MAPPOConfig, mappo_config
from .learner import MAPPOLearner, MAPPOPolicy

__all__ = ["MAPPOConfig", "MAPPOLearner", "MAPPOPolicy", "mappo_config"]
