"""SMACv2's published training curves from the real game, converted once from its pickle to a CSV.

    .venv/bin/python benchmarks/smacv2_published_curves.py SMACV2_CHECKOUT \\
        --out docs/results/smac_learning/published/smacv2_training_results.csv.gz

SMACv2's repository (oxwhirl/smacv2, MIT licence) publishes the test curves of its baselines on the real
StarCraft II in ``smacv2/examples/results/smac2_training_results.pkl``: for each of the 15 scenarios and
each of ``MAPPO``, ``QMIX`` and ``open-loop MAPPO``, a list of runs (seeds), each a pandas DataFrame with the
columns ``step``, ``mean_test_win_rate`` and ``mean_test_return`` (evaluated about every 10 000–100 000
game-steps to 10M). This script writes them as one long table with the columns
``scenario, algorithm, run, step, test_win_rate, test_return`` so the suite reads them as data.

Unpickling can run code, so the pickle is read with an allow-list: only the nine reconstructors that file
uses (pandas' ``DataFrame``/``BlockManager``/``Index`` — its ``Int64Index``, gone from pandas 2, read as
``Index`` — numpy's ``ndarray``/``dtype``/``_reconstruct`` and ``slice``) may be called; anything else stops
the load. The suite itself only ever reads the CSV.
"""

from __future__ import annotations

import argparse
import pickle
from pathlib import Path

import numpy as np
import pandas as pd

PICKLE = Path("smacv2") / "examples" / "results" / "smac2_training_results.pkl"
ALLOWED = {
    ("pandas.core.frame", "DataFrame"),
    ("pandas.core.internals.managers", "BlockManager"),
    ("pandas.core.indexes.base", "_new_Index"),
    ("pandas.core.indexes.base", "Index"),
    ("pandas.core.indexes.numeric", "Int64Index"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("builtins", "slice"),
}


class AllowListUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the globals in ``ALLOWED``."""

    def find_class(self, module: str, name: str):
        if (module, name) not in ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not on the allow-list of this converter")
        if module == "pandas.core.indexes.numeric":
            return pd.Index
        if module == "numpy.core.multiarray":
            core = getattr(np, "_core", None) or np.core  # numpy 2 renamed numpy.core to numpy._core
            return core.multiarray._reconstruct
        return super().find_class(module, name)


def convert(pickle_path: Path) -> pd.DataFrame:
    """The published curves as one long table (module docstring)."""
    with open(pickle_path, "rb") as f:
        results = AllowListUnpickler(f).load()
    rows = []
    for scenario, algorithms in results.items():
        for algorithm, runs in algorithms.items():
            for run, frame in enumerate(runs):
                for r in frame.itertuples():
                    rows.append((scenario, algorithm, run, int(r.step), float(r.mean_test_win_rate),
                                 float(r.mean_test_return)))
    return pd.DataFrame(rows, columns=["scenario", "algorithm", "run", "step", "test_win_rate", "test_return"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout", type=Path, help="a checkout of github.com/oxwhirl/smacv2")
    parser.add_argument("--out", type=Path,
                        default=Path("docs/results/smac_learning/published/smacv2_training_results.csv.gz"))
    args = parser.parse_args()
    table = convert(args.checkout / PICKLE)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False, float_format="%.6g")
    runs = table.groupby(["scenario", "algorithm"]).run.nunique()
    print(f"{len(table)} evaluations, {runs.sum()} runs of {len(runs)} (scenario, algorithm) pairs -> {args.out}")


if __name__ == "__main__":
    main()
