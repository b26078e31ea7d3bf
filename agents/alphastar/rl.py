"""Building the AlphaStar learner for a ``CommanderEnv`` from a supervised-learning checkpoint
(docs/design/alphastar.md §3–4: the SL policy is RL's starting point, the KL anchor and the reset target).

    learner = make_alphastar_learner(env, seed, sl_checkpoint="runs/sl/sl_checkpoint.pt", learning_rate=1e-4)
    path = ensure_sl_checkpoint("3m", "runs/x/sl", quick=True)   # runs SL once, then reuses the file

Without ``sl_checkpoint`` the starting policy is an untrained network of the quick size
(``sl.QUICK_NETWORK``), so RL starts from scratch (and the KL term anchors to that random policy).
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path

from .actor import network_from_dict
from .learner import AlphaStarLearner, AlphaStarRLConfig
from .network import seeded_network
from .smac.env import check_same_layout


@dataclass(frozen=True)
class AlphaStarAgentSettings:
    """The alphastar agent's settings: the SL checkpoint it starts from and its RL settings."""

    sl_checkpoint: str | None
    rl: AlphaStarRLConfig


def alphastar_settings(sl_checkpoint: str | os.PathLike | None = None, **rl_overrides) -> AlphaStarAgentSettings:
    """The typed settings behind ``make_alphastar_learner``'s keyword arguments (unknown names raise)."""
    return AlphaStarAgentSettings(None if sl_checkpoint is None else str(sl_checkpoint),
                                  AlphaStarRLConfig.from_overrides(**rl_overrides))


def make_alphastar_learner(env, seed: int, seat: int = 0, sl_checkpoint: str | os.PathLike | None = None,
                           **rl_overrides) -> AlphaStarLearner:
    """An ``AlphaStarLearner`` for ``env`` (a ``CommanderEnv``; both seats share sizes, so ``seat`` only
    names the side) starting from the SL checkpoint's weights; ``rl_overrides``: ``AlphaStarRLConfig``
    and loss settings by name."""
    if not hasattr(env, "layout"):
        raise ValueError("the alphastar agent plays a CommanderEnv ('smac-commander:MAP'; "
                         "registry.env_for_agent maps 'smac:MAP' to it)")
    config = AlphaStarRLConfig.from_overrides(**rl_overrides)
    if sl_checkpoint is None:
        from .sl import QUICK_NETWORK

        sl_net = seeded_network(env.network_config(**QUICK_NETWORK), seed)
    else:
        from selfplay.utils.io import load_torch_data

        data = load_torch_data(sl_checkpoint, "sl_checkpoint")
        if not isinstance(data, dict) or "network_config" not in data or "state_dict" not in data:
            raise ValueError(f"sl_checkpoint {sl_checkpoint} is not a run_sl checkpoint (sl_checkpoint.pt)")
        sl_net = network_from_dict(data["network_config"], data["state_dict"])
        try:
            check_same_layout(env.layout, sl_net.config)
        except ValueError as e:
            raise ValueError(f"sl_checkpoint {sl_checkpoint} was trained for other sizes than this map and "
                             f"grid ({e})") from None
    return AlphaStarLearner(copy.deepcopy(sl_net), sl_net, config, seed=seed)


def ensure_sl_checkpoint(map_name: str, out: str | os.PathLike, quick: bool, grid: int, seed: int = 0,
                         epochs: int | None = None, log=print, **demonstrations) -> Path:
    """``out/sl_checkpoint.pt``, running ``run_sl`` (quick or full settings, on ``grid``, ``epochs`` if
    given — all of them, with no time cap —, ``demonstrations``: ``SLConfig``'s ``demonstrator`` and ``demonstrations_against``) if it is missing;
    an existing checkpoint made with other demonstration settings is refused."""
    from .sl import SLConfig, run_sl

    path = Path(out) / "sl_checkpoint.pt"
    if path.exists():
        _check_demonstrations(path, demonstrations)
        return path
    # a given number of epochs is trained whole: the quick setting's time cap would make the start depend on the load
    sizes = {"grid": grid} if epochs is None else {"grid": grid, "epochs": epochs, "max_train_seconds": None}
    sizes.update(demonstrations)
    config = SLConfig.quick(map_name, **sizes) if quick else SLConfig(map_name=map_name, **sizes)
    metrics = run_sl(map_name, quick=quick, out=out, seed=seed, config=config, log=log)
    log(f"SL policy for {map_name}: win rate {metrics['win_rate_vs_scripted']:.2f} against the scripted AI")
    return path


def _check_demonstrations(sl_checkpoint: Path, wanted: dict) -> None:
    """Refuse to reuse an SL checkpoint whose ``sl_metrics.json`` records other demonstration settings
    than ``wanted`` (a resumed run asked for another demonstrator)."""
    from .sl import sl_metrics_beside

    recorded = sl_metrics_beside(sl_checkpoint) or {}
    for key, value in wanted.items():
        if key in recorded and recorded[key] != value:
            raise ValueError(f"{key} {value!r} asked for, but the SL checkpoint {sl_checkpoint} was made "
                             f"with {key} {recorded[key]!r}: use another --out, or drop --{key}")
