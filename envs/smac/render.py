"""Watching a SMAC battle: frames drawn with numpy from the battle's state, and animated GIFs of them.

``draw_frame(battle, game)`` -> (map_y * scale, map_x * scale, 3) uint8, north up, 1 map unit =
``scale`` pixels:

- terrain from the map's pathing grid and height: walkable cells grey (lighter = higher), unwalkable
  cells dark;
- each living unit a disc of its radius (at least ``MIN_RADIUS``) in its side's colour (side 0 red,
  side 1 blue), with a centre dot in its type's colour (``TYPE_COLOURS``);
- a health bar above each living unit: green for the hp fraction on red, and a cyan shield bar above
  it for units with shields;
- attack lines: a unit attacking a target within its weapon range (edge distance) is joined to it by a
  line in a light shade of its side's colour; a Medivac healing a unit in range by a green line;
- a time bar along the bottom edge: the episode's steps so far over the map's step limit.

``ReplayRecorder`` keeps one snapshot of the game's state per ``capture()``; ``save_gif(path)`` writes them as an animated GIF
(Pillow, which merges a frame identical to the one before into it, adding the durations) at ``fps``
frames per second (8 by default: two environment steps of 0.5 game-seconds per
second of GIF, i.e. a game at 4x speed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .rules import ATTACK, HEAL

SIDE_COLOURS = ((220, 40, 40), (40, 80, 230))
LINE_COLOURS = ((255, 170, 150), (150, 190, 255))
HEAL_COLOUR = (60, 230, 90)
TYPE_COLOURS = {
    "marine": (255, 255, 255), "marauder": (255, 200, 0), "medivac": (60, 230, 90), "stalker": (255, 255, 255),
    "zealot": (255, 200, 0), "colossus": (200, 0, 200), "zergling": (255, 255, 255), "hydralisk": (255, 200, 0),
    "baneling": (60, 230, 90), "spine_crawler": (200, 0, 200),
}
TIME_COLOUR = (250, 250, 250)
MIN_RADIUS = 0.35
DEFAULT_SCALE = 16


def _terrain(pathing: np.ndarray, height: np.ndarray, scale: int) -> np.ndarray:
    """The terrain image of (map_x, map_y) grids, north up."""
    grey = np.where(pathing > 0, 70 + 140 * np.clip(height, 0, 1), 25).astype(np.uint8)
    img = np.repeat(np.repeat(grey.T[::-1], scale, 0), scale, 1)
    return np.repeat(img[..., None], 3, 2)


def _to_pixel(x: float, y: float, map_y: int, scale: int) -> tuple[float, float]:
    """(row, col) of map point (x, y), pixel centres at half-integers."""
    return (map_y - y) * scale - 0.5, x * scale - 0.5


def _disc(img, x, y, r, colour, map_y, scale) -> None:
    row, col = _to_pixel(x, y, map_y, scale)
    rad = r * scale
    r0, r1 = max(int(row - rad), 0), min(int(row + rad) + 2, img.shape[0])
    c0, c1 = max(int(col - rad), 0), min(int(col + rad) + 2, img.shape[1])
    if r0 >= r1 or c0 >= c1:
        return
    yy, xx = np.mgrid[r0:r1, c0:c1]
    inside = (yy - row) ** 2 + (xx - col) ** 2 <= rad ** 2
    img[r0:r1, c0:c1][inside] = colour


def _line(img, a, b, colour, map_y, scale) -> None:
    (r0, c0), (r1, c1) = _to_pixel(*a, map_y, scale), _to_pixel(*b, map_y, scale)
    n = int(max(abs(r1 - r0), abs(c1 - c0))) + 1
    rows = np.rint(np.linspace(r0, r1, n)).astype(int)
    cols = np.rint(np.linspace(c0, c1, n)).astype(int)
    ok = (rows >= 0) & (rows < img.shape[0]) & (cols >= 0) & (cols < img.shape[1])
    img[rows[ok], cols[ok]] = colour


def _bar(img, x, y, width, top, fraction, colour, back, map_y, scale) -> None:
    """A bar of ``width`` map units centred above (x, y), its top ``top`` map units above the centre."""
    row, col = _to_pixel(x, y + top, map_y, scale)
    r0 = int(round(row))
    r1 = r0 + max(scale // 8, 2)
    c0 = int(round(col - width * scale / 2))
    c1 = int(round(col + width * scale / 2))
    r0, r1 = max(r0, 0), min(r1, img.shape[0])
    c0, c1 = max(c0, 0), min(c1, img.shape[1])
    if r0 >= r1 or c0 >= c1:
        return
    img[r0:r1, c0:c1] = back
    filled = c0 + int(round((c1 - c0) * float(np.clip(fraction, 0, 1))))
    img[r0:r1, c0:filled] = colour


@dataclass(frozen=True)
class Scene:
    """What does not change during a game: the terrain image's grids and the units' constants (on SMACv2
    those of the game's current draw: each reset draws new teams)."""

    pathing: np.ndarray  # (map_x, map_y)
    height: np.ndarray
    map_y: int
    names: tuple
    side: np.ndarray
    hp_max: np.ndarray
    shield_max: np.ndarray
    radius: np.ndarray
    weapon_range: np.ndarray
    episode_limit: int

    @classmethod
    def of(cls, battle, game: int = 0) -> Scene:
        eng = battle.engine
        side = np.zeros(eng.num_units, dtype=int)
        side[eng.side_slices[1]] = 1
        constants = ("hp_max", "shield_max", "radius", "weapon_range")
        if hasattr(battle, "seat_view"):  # SMAC: one army for every game; side 0's frame is the world frame
            view = battle.seat_view(0)
            return cls(view.pathing.cpu().numpy(), view.terrain_height.cpu().numpy(), int(view.map_y),
                       tuple(eng.unit_names), side, *(getattr(eng, k).cpu().numpy() for k in constants),
                       int(battle.episode_limit))
        # SMACv2 (smacv2_games.py): the game's drawn teams, their constants in the engine's per-game rows
        spec, seat = eng.spec, battle.games.seats[0]
        types = np.concatenate([seat.ally_type[game], seat.enemy_type[game]])
        return cls(np.asarray(spec.pathing_grid(), np.float32), np.asarray(spec.terrain_height(), np.float32),
                   int(spec.map_y), tuple(battle.gen.type_order[t] for t in types), side,
                   *(getattr(eng.static, k)[game].copy() for k in constants), int(battle.episode_limit))


SNAPSHOT_FIELDS = ("pos", "hp", "shield", "order", "target")


def snapshot(battle, game: int = 0) -> dict[str, np.ndarray]:
    """Copies of game ``game``'s dynamic state that a frame shows (``SNAPSHOT_FIELDS``)."""
    if not 0 <= game < battle.num_envs:
        raise ValueError(f"game must be in 0..{battle.num_envs - 1}, got {game!r}")
    eng = battle.engine
    snap = {k: getattr(eng, k)[game].cpu().numpy().copy() for k in SNAPSHOT_FIELDS}
    snap["step"] = int(battle.episode_steps[game])
    return snap


def draw(scene: Scene, snap: dict[str, np.ndarray], scale: int = DEFAULT_SCALE) -> np.ndarray:
    """The frame of one game's ``snapshot`` (module docstring)."""
    if not isinstance(scale, int) or scale < 2:
        raise ValueError(f"scale must be an int >= 2 (pixels per map unit), got {scale!r}")
    map_y, side, radius = scene.map_y, scene.side, scene.radius
    img = _terrain(scene.pathing, scene.height, scale)
    pos, hp, shield, order, target = (snap[k] for k in SNAPSHOT_FIELDS)
    alive = hp > 0
    for u in np.flatnonzero(alive):  # attack / heal lines first: the units are drawn over them
        t = int(target[u])
        if order[u] not in (ATTACK, HEAL) or not alive[t]:
            continue
        edge = float(np.hypot(*(pos[t] - pos[u]))) - radius[u] - radius[t]
        reach = scene.weapon_range[u] if order[u] == ATTACK else 4.0  # Medivac heal range (docs/design/smac.md §8)
        if edge <= reach:
            colour = HEAL_COLOUR if order[u] == HEAL else LINE_COLOURS[side[u]]
            _line(img, pos[u], pos[t], colour, map_y, scale)
    for u in np.flatnonzero(alive):
        x, y = float(pos[u, 0]), float(pos[u, 1])
        r = max(float(radius[u]), MIN_RADIUS)
        _disc(img, x, y, r, SIDE_COLOURS[side[u]], map_y, scale)
        _disc(img, x, y, r * 0.35, TYPE_COLOURS.get(scene.names[u], (0, 0, 0)), map_y, scale)
        _bar(img, x, y, 2 * r, r + 0.45, hp[u] / scene.hp_max[u], (40, 220, 40), (160, 0, 0), map_y, scale)
        if scene.shield_max[u] > 0:
            _bar(img, x, y, 2 * r, r + 0.75, shield[u] / scene.shield_max[u], (0, 220, 230), (40, 40, 40), map_y,
                 scale)
    done = int(round(img.shape[1] * min(snap.get("step", 0) / scene.episode_limit, 1.0)))
    img[-max(scale // 4, 2):, :done] = TIME_COLOUR
    return img


def draw_frame(battle, game: int = 0, scale: int = DEFAULT_SCALE) -> np.ndarray:
    """Game ``game`` of ``battle`` (a ``SMACBattle`` or ``SMACv2Battle``) as an RGB image (module docstring)."""
    return draw(Scene.of(battle, game), snapshot(battle, game), scale)


class ReplayRecorder:
    """One game of a battle, a snapshot per ``capture()`` (cheap: drawing waits for ``frames()``);
    ``save_gif`` writes the frames. A capture at a game's first step reads the scene again (on SMACv2 a
    reset draws new teams)."""

    def __init__(self, battle, game: int = 0, scale: int = DEFAULT_SCALE):
        self.scene = Scene.of(battle, game)
        draw(self.scene, snapshot(battle, game), scale)  # checks the arguments
        self.battle, self.game, self.scale = battle, game, scale
        self.snapshots: list[tuple[Scene, dict[str, np.ndarray]]] = []

    def capture(self) -> None:
        snap = snapshot(self.battle, self.game)
        if snap["step"] == 0:
            self.scene = Scene.of(self.battle, self.game)
        self.snapshots.append((self.scene, snap))

    def clear(self) -> None:
        self.snapshots.clear()

    def frames(self) -> list[np.ndarray]:
        return [draw(scene, s, self.scale) for scene, s in self.snapshots]

    def save_gif(self, path: str | Path, fps: float = 8.0) -> Path:
        return save_gif(self.frames(), path, fps)


def save_gif(frames: list[np.ndarray], path: str | Path, fps: float = 8.0) -> Path:
    """Write ``frames`` (RGB uint8 arrays of one shape) as an animated GIF looping forever."""
    from PIL import Image

    if not frames:
        raise ValueError("frames must hold at least one frame")
    if not fps > 0:
        raise ValueError(f"fps must be positive, got {fps!r}")
    path = Path(path)
    if path.suffix.lower() != ".gif":
        raise ValueError(f"path must end in .gif, got {str(path)!r}")
    images = [Image.fromarray(f) for f in frames]
    images[0].save(path, save_all=True, append_images=images[1:], duration=int(round(1000 / fps)), loop=0,
                   optimize=False, disposal=1)
    return path
