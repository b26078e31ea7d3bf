"""analysis: the measuring instruments of the suite (numpy in, numpy out; no torch).

Modules: ``winrate`` (win-rate matrices from match records, evaluation matrices, summaries),
``nash`` (exact maxent Nash, zero-sum LPs, PSRO meta-solvers), ``population`` (relative
population performance, Nash averaging, effective diversity), ``embedding`` (t-SNE of
trajectory vectors, time-window medians, kernel densities), ``plots`` (headless figures).
Import the module you need, e.g. ``from selfplay.analysis.nash import maxent_nash``.
"""
