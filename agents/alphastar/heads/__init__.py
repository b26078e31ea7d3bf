"""The six action heads and the value baseline (docs/design/alphastar.md §2), run in the order
action type → delay → queue → selected units → target unit | location."""

from .action_type import ActionTypeHead
from .argument import CategoricalArgumentHead
from .location import LocationHead
from .selected_units import SelectedUnitsHead
from .target_unit import TargetUnitHead
from .value import ValueBaseline

__all__ = [
    "ActionTypeHead",
    "CategoricalArgumentHead",
    "LocationHead",
    "SelectedUnitsHead",
    "TargetUnitHead",
    "ValueBaseline",
]
