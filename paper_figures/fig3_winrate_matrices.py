"""The paper's Fig. 3: winrate matrices of every scheme's checkpoints (row i vs column j; the ideal
monotone improvement is red above the diagonal and blue below), MLP-PPO and RNN-PPO.

    python -m paper_figures.fig3_winrate_matrices --from runs/paper
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from paper_figures.common import AGENT_LABELS, AGENTS, add_scale_arguments, comparison_dir, run_dir, winrate  # noqa: E402
from selfplay.evaluation.compare import DEFAULT_SCHEMES  # noqa: E402


def make_figure(source: Path, out: Path, schemes=DEFAULT_SCHEMES, agents=AGENTS, seed: int = 0):
    agents = [a for a in agents if run_dir(source, a, schemes[0], seed).exists()]
    fig, axes = plt.subplots(len(agents), len(schemes), figsize=(3.0 * len(schemes), 3.1 * len(agents) + 0.6),
                             squeeze=False, layout="constrained")
    image = None
    for r, agent in enumerate(agents):
        for c, scheme in enumerate(schemes):
            ax = axes[r, c]
            data = winrate(source, agent, scheme, seed)
            image = ax.imshow(data["W"], cmap="RdBu", vmin=0, vmax=1, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            support = (data["nash"] > 1e-6).sum()
            ax.set_title(f"{scheme.replace('delta', 'δ')}\nNash support {support}", fontsize=9)
            if c == 0:
                ax.set_ylabel(AGENT_LABELS.get(agent, agent))
    fig.colorbar(image, ax=axes, shrink=0.8, label="win rate of row vs column")
    fig.suptitle("Winrate matrices of evaluation checkpoints (RirRPS)")
    path = out / "figures" / "fig3_winrate_matrices.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return fig


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_scale_arguments(parser)
    args = parser.parse_args(argv)
    source = comparison_dir(args)
    out = Path(args.out if not args.source else args.source)
    make_figure(source, out)
    print(f"wrote {out / 'figures' / 'fig3_winrate_matrices.png'}")
    return out / "figures" / "fig3_winrate_matrices.png"


if __name__ == "__main__":
    main()
