"""The AlphaStar agent (spec-alphastar.md): network (§2) and RL losses (§4).

    from agents.alphastar import AlphaStarConfig, AlphaStarNet, AlphaStarObs, AlphaStarActions
    net = AlphaStarNet(AlphaStarConfig())
    out = net(obs, state)                     # sampling
    out = net(obs, state, actions=out.actions)  # teacher forcing
"""

from .config import SMAC_ACTION_TYPES, ActionTypeSpec, AlphaStarConfig, ScalarFeature
from .network import HEADS, UNUSED, AlphaStarActions, AlphaStarNet, AlphaStarObs, AlphaStarOutput

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
    "ScalarFeature",
]
