"""Read the SMAC map files (``.SC2Map`` MPQ archives) into the data the simulator needs.

Run ``python -m selfplay.envs.smac.mapdata.read_maps DIR [--out FILE] [--check]`` on a folder holding the
23 SMAC maps (and SMAC's ``smac_maps.py`` registry); it writes ``smac_maps.json`` next to this
module (the derived data the project ships), or with ``--check`` compares with it.  SMACv2's
terrain (``smacv2_maps.json``: the ``32x32_flat`` map its ``10gen_*`` scenarios play on) is read with
``--maps 32x32_flat --out .../smacv2_maps.json`` from ``../shared/data/smacv2_maps``.  Needs the
``mpyq`` package (``pip install mpyq``; in the ``dev`` extra).

What is read (the archives' layout: ``../shared/data/smac_maps/README.md``), per map:

- ``t3CellFlags``: 32-byte header ("LFCT", version, ..., width, height as u32 at bytes 24 and 28),
  then one byte per cell, row-major with row = y from the bottom; bit 0 set = not pathable.
  Stored as ``pathing``: ``width`` strings (one per x) of ``height`` characters, "1" = pathable,
  i.e. the grid indexed ``[x][y]`` like SMAC's ``pathing_grid``.
- ``t3SyncHeightMap``: 64-byte header ("SMAP", version, vertex counts 33 x 33, ...), then one u32 per
  vertex (row = y); the gameplay height in 1/4096 units.  Stored as ``height``: per cell (``[x][y]``)
  the mean of its four corner vertices, an integer in 1/4096 units.
- ``t3SyncCliffLevel``: 32-byte header ("CLIF", version, width, height), one u16 per cell: the cliff
  level (0, 64, 128, ...).  Stored as ``cliff`` per cell (``[x][y]``, level // 64).
- ``MapInfo``: the map size (u32 width, height at bytes 16 and 20) and, after the fog and tileset
  names, the camera/playable bounds (left, bottom, right, top, u32 each) and the base height
  (u32 / 4096).  Stored as ``map_size`` and ``playable``.
- ``Objects``: the placed points (``ObjectPoint`` id, name, position).
- ``MapScript.galaxy``: the map's triggers.  ``creates``: every
  ``libNtve_gf_CreateUnitsWithDefaultFacing(n, "Type", flags, player, PointFromId(id))`` of the spawn
  function, in order; ``enemy_order``: the order that ``UnitGroupIssueOrder`` gives player 2's units
  at every (re)spawn: ``{"kind": "attack_point", "point": [x, y]}``,
  ``{"kind": "attack_point_between", "points": [[x, y], [x, y]]}`` (``RandomPointBetweenPoints``:
  a uniformly random point on the segment, drawn at each respawn), ``{"kind": "attack_units",
  "group": name, "members": [create indices]}`` (``OrderTargetingUnitGroup`` on a group filled by
  ``UnitGroupAdd(group, UnitLastCreated())``), or ``null`` when the map gives no order.
- ``Base.SC2Data/GameData/UnitData.xml``: the map's own unit copies (``CUnit`` id): the gameplay
  fields (life, shields, armour, speed, acceleration, radius, sight, attributes, mover, acquire
  level, target priority, energy, regeneration).
- ``smac_maps.py`` (SMAC's registry, read as a literal, never imported): agents, enemies, episode
  limit, races, unit type bits and map type.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import struct
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

DATA_FILE = Path(__file__).with_name("smac_maps.json")

_CREATE = re.compile(r'libNtve_gf_CreateUnitsWithDefaultFacing\((\d+),\s*"([^"]+)",\s*(\d+),\s*(\d+),\s*'
                     r'PointFromId\((\d+)\)\)')
_ORDER = re.compile(r'UnitGroupIssueOrder\(UnitGroup\(null,\s*(\d+),.*?\),\s*(OrderTargeting\w+)\('
                    r'AbilityCommand\("(\w+)",\s*\d+\),\s*(.*)\),\s*c_orderQueue\w+\);')
_POINT = re.compile(r'PointFromId\((\d+)\)')
_GROUP_ADD = re.compile(r'UnitGroupAdd\((\w+),\s*UnitLastCreated\(\)\)')

# UnitData.xml fields kept (tag -> stored name); "index" fields become dicts.
_UNIT_FIELDS = {
    "LifeMax": "life_max", "LifeStart": "life_start", "LifeArmor": "life_armor", "LifeRegenRate": "life_regen",
    "ShieldsMax": "shields_max", "ShieldsStart": "shields_start", "ShieldRegenRate": "shield_regen",
    "ShieldRegenDelay": "shield_regen_delay", "EnergyMax": "energy_max", "EnergyStart": "energy_start",
    "EnergyRegenRate": "energy_regen", "Speed": "speed", "Acceleration": "acceleration", "Radius": "radius",
    "SeparationRadius": "separation_radius", "Sight": "sight", "Mover": "mover",
    "DefaultAcquireLevel": "acquire_level", "Response": "response", "AttackTargetPriority": "target_priority",
}
_UNIT_INDEXED = {"Attributes": "attributes", "PlaneArray": "planes", "Collide": "collide"}


def _u32(b: bytes, off: int) -> int:
    return struct.unpack_from("<I", b, off)[0]


def read_cell_flags(b: bytes) -> list[str]:
    """``t3CellFlags`` -> pathing strings indexed ``[x][y]`` ("1" pathable: bit 0 clear)."""
    if b[:4] != b"LFCT":
        raise ValueError("t3CellFlags: bad magic")
    w, h = _u32(b, 24), _u32(b, 28)
    cells = b[32:32 + w * h]
    return ["".join("0" if cells[y * w + x] & 1 else "1" for y in range(h)) for x in range(w)]


def read_sync_height(b: bytes) -> list[list[int]]:
    """``t3SyncHeightMap`` -> per-cell height ``[x][y]`` (mean of the 4 corner vertices, 1/4096 units)."""
    if b[:4] != b"SMAP":
        raise ValueError("t3SyncHeightMap: bad magic")
    vw, vh = _u32(b, 8), _u32(b, 12)
    v = struct.unpack_from(f"<{vw * vh}I", b, len(b) - 4 * vw * vh)
    at = lambda x, y: v[y * vw + x]  # noqa: E731
    return [[(at(x, y) + at(x + 1, y) + at(x, y + 1) + at(x + 1, y + 1)) // 4 for y in range(vh - 1)]
            for x in range(vw - 1)]


def read_cliff_level(b: bytes) -> list[list[int]]:
    """``t3SyncCliffLevel`` -> per-cell cliff level ``[x][y]`` (the stored u16 // 64)."""
    if b[:4] != b"CLIF":
        raise ValueError("t3SyncCliffLevel: bad magic")
    w, h = _u32(b, 8), _u32(b, 12)
    v = struct.unpack_from(f"<{w * h}H", b, len(b) - 2 * w * h)
    return [[v[y * w + x] // 64 for y in range(h)] for x in range(w)]


def read_map_info(b: bytes, tileset: bytes) -> dict:
    """``MapInfo`` -> map size, playable (camera) bounds and base height (module docstring)."""
    if b[:4] != b"IpaM":
        raise ValueError("MapInfo: bad magic")
    w, h = _u32(b, 16), _u32(b, 20)
    i = b.index(b"\x00" + tileset + b"\x00") + len(tileset) + 2
    left, bottom, right, top, base = struct.unpack_from("<5I", b, i)
    return {"map_size": [w, h], "playable": [left, bottom, right, top], "base_height": base / 4096}


def read_points(xml: bytes) -> dict[str, dict]:
    """``Objects`` -> {point id: {"name", "pos": [x, y]}}."""
    out = {}
    for p in ET.fromstring(xml).iter("ObjectPoint"):
        x, y, _ = (float(t) for t in p.get("Position").split(","))
        out[p.get("Id")] = {"name": p.get("Name"), "pos": [x, y]}
    return out


def _function_body(script: str, name: str) -> str:
    m = re.search(r"void " + name + r" \(\) \{(.*?)\n\}", script, re.S)
    return m.group(1) if m else ""


def read_script(script: str, points: dict[str, dict]) -> dict:
    """``MapScript.galaxy`` -> ``creates`` and ``enemy_order`` (module docstring)."""
    pos = lambda pid: points[pid]["pos"]  # noqa: E731
    creates, groups = [], {}
    for line in script.splitlines():  # the spawn function(s): creations in order, group membership
        m = _CREATE.search(line)
        if m:
            n, utype, flags, player, pid = m.groups()
            creates.append({"count": int(n), "unit": utype, "player": int(player), "point": pos(pid),
                            "point_name": points[pid]["name"]})
            continue
        g = _GROUP_ADD.search(line)
        if g and creates:
            groups.setdefault(g.group(1), []).append(len(creates) - 1)
    order = None
    for m in _ORDER.finditer(script):
        player, kind, ability, arg = m.groups()
        if int(player) != 2:
            continue
        if ability != "attack":
            raise ValueError(f"unexpected order ability {ability!r}")
        if kind == "OrderTargetingPoint" and "RandomPointBetweenPoints" in arg:
            order = {"kind": "attack_point_between", "points": [pos(p) for p in _POINT.findall(arg)]}
        elif kind == "OrderTargetingPoint":
            order = {"kind": "attack_point", "point": pos(_POINT.findall(arg)[0])}
        elif kind == "OrderTargetingUnitGroup":
            order = {"kind": "attack_units", "group": arg.strip(), "members": sorted(set(groups[arg.strip()]))}
        else:
            raise ValueError(f"unexpected order {kind!r}")
    return {"creates": creates, "enemy_order": order}


def read_unit_data(xml: bytes) -> dict[str, dict]:
    """``UnitData.xml`` -> {unit id: gameplay fields} (``_UNIT_FIELDS``, ``_UNIT_INDEXED``)."""
    out = {}
    for u in ET.fromstring(xml).iter("CUnit"):
        d: dict = {}
        for child in u:
            if child.tag in _UNIT_FIELDS and child.get("value") is not None:
                v = child.get("value")
                try:
                    v = float(v)
                except ValueError:
                    pass
                d[_UNIT_FIELDS[child.tag]] = v
            elif child.tag in _UNIT_INDEXED:
                d.setdefault(_UNIT_INDEXED[child.tag], {})[child.get("index")] = int(child.get("value"))
        out[u.get("id")] = d
    return out


def read_registry(path: Path) -> dict[str, dict]:
    """SMAC's ``smac_maps.py``: the ``map_param_registry`` dict literal (read, not imported)."""
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "map_param_registry" for t in node.targets):
            return ast.literal_eval(node.value)
    raise ValueError(f"{path}: no map_param_registry")


def read_map(path: Path) -> dict:
    """Everything the simulator needs from one ``.SC2Map`` (module docstring)."""
    import mpyq  # the dev extra; imported here so that the simulator never needs it

    arc = mpyq.MPQArchive(str(path))

    def f(name: str) -> bytes:
        data = arc.read_file(name)
        if data is None:
            raise ValueError(f"{path.name}: no {name}")
        return data

    tileset = re.search(rb'tileSet="([^"]*)"', f("t3Terrain.xml")).group(1)
    points = read_points(f("Objects"))
    out = read_map_info(f("MapInfo"), tileset)
    out["pathing"] = read_cell_flags(f("t3CellFlags"))
    out["height"] = read_sync_height(f("t3SyncHeightMap"))
    out["cliff"] = read_cliff_level(f("t3SyncCliffLevel"))
    out["points"] = points
    out.update(read_script(f("MapScript.galaxy").decode("utf-8"), points))
    out["unit_data"] = read_unit_data(f("Base.SC2Data\\GameData\\UnitData.xml"))
    return out


def read_maps(folder: str | Path, names: list[str] | None = None) -> dict[str, dict]:
    """{map name: data} for every ``.SC2Map`` in ``folder`` (only ``names`` when given), with SMAC's
    registry row as ``registry``."""
    folder = Path(folder)
    files = sorted(p for p in folder.glob("*.SC2Map") if names is None or p.stem in names)
    if not files:
        raise ValueError(f"folder {str(folder)!r} holds no .SC2Map files")
    registry = read_registry(folder / "smac_maps.py") if (folder / "smac_maps.py").exists() else {}
    out = {}
    for p in files:
        out[p.stem] = read_map(p)
        if p.stem in registry:
            out[p.stem]["registry"] = registry[p.stem]
    return out


def dumps(data: dict) -> str:
    """The shipped JSON text: one map per top-level key, sorted keys, compact rows."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), indent=None) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", help="folder with the SMAC .SC2Map files (and smac_maps.py)")
    ap.add_argument("--out", default=str(DATA_FILE), help="where to write the JSON (default: the shipped file)")
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    ap.add_argument("--maps", nargs="+", help="read only these maps (SMACv2's data: --maps 32x32_flat --out "
                    "smacv2_maps.json)")
    args = ap.parse_args(argv)
    text = dumps(read_maps(args.folder, args.maps))
    if args.check:
        same = Path(args.out).read_text() == text
        print("identical" if same else f"{args.out} differs from what {args.folder} gives")
        return 0 if same else 1
    Path(args.out).write_text(text)
    print(f"wrote {args.out} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
