"""The AlphaStar agent on SMAC (docs/design/alphastar.md §5): features and masks of one seat
(``features``), the order executor (``executor``), the commander that ties them to a
``SMACBattle`` seat (``commander``) and the ``Policy``-contract wrapper (``policy``)."""

from .commander import CommanderConfig, SMACCommander
from .executor import OrderExecutor
from .features import COMMANDER_ACTION_TYPES, ENTITY_FEATURES, SPATIAL_PLANES, UNIT_TYPES, commander_config
from .policy import AlphaStarSMACPolicy

__all__ = [
    "AlphaStarSMACPolicy",
    "COMMANDER_ACTION_TYPES",
    "ENTITY_FEATURES",
    "SPATIAL_PLANES",
    "UNIT_TYPES",
    "CommanderConfig",
    "OrderExecutor",
    "SMACCommander",
    "commander_config",
]
