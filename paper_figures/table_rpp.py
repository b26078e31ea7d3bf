"""The relative-population-performance table between schemes (the paper's population comparison):
v(P, Q) of the cross-population game between every pair of schemes' checkpoint populations.

    python -m paper_figures.table_rpp --from runs/paper
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from paper_figures.common import AGENT_LABELS, AGENTS, add_scale_arguments, comparison_dir


def make_tables(source: Path, out: Path) -> list[Path]:
    from selfplay.analysis.plots import plot_rpp_table

    written = []
    for agent in AGENTS:
        csv = source / "evaluation" / f"rpp_{agent}.csv"
        if not csv.exists():
            continue
        table = pd.read_csv(csv, index_col=0)
        path = out / "figures" / f"table_rpp_{agent}.png"
        plot_rpp_table(table.values, list(table.index), title=f"Relative population performance ({AGENT_LABELS[agent]})",
                       path=path)
        written.append(path)
    if not written:
        raise ValueError(f"no evaluation/rpp_*.csv under {source}")
    return written


def main(argv=None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_scale_arguments(parser)
    args = parser.parse_args(argv)
    source = comparison_dir(args)
    out = Path(args.out if not args.source else args.source)
    paths = make_tables(source, out)
    for p in paths:
        print(f"wrote {p}")
    return paths


if __name__ == "__main__":
    main()
