"""selfplay: self-play as ⟨Ω, G⟩ — a menagerie of frozen policies, a policy sampling distribution Ω
and a curator G — with naive SP, δ-Uniform, δ-Limit-Uniform, PSRO and AlphaStar's PFSP league.

The core (this package's menagerie, payoff, schemes and league modules) needs only numpy.
"""

from selfplay.core.league import AlphaStarLeague, LeagueConfig, pfsp
from selfplay.core.menagerie import Entry, Menagerie
from selfplay.core.payoff import Payoff
from selfplay.core.schemes import (
    PSRO,
    Curation,
    DeltaLimitUniform,
    DeltaUniform,
    LearnerInfo,
    NaiveSelfPlay,
    Scheme,
    make_scheme,
)

__all__ = [
    "AlphaStarLeague", "Curation", "DeltaLimitUniform", "DeltaUniform", "Entry", "LeagueConfig",
    "LearnerInfo", "Menagerie", "NaiveSelfPlay", "PSRO", "Payoff", "Scheme", "make_scheme", "pfsp",
]
__version__ = "0.1.0"
