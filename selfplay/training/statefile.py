"""A run's resumable state as data: a JSON tree and its arrays in one ``.npz`` (no pickle).

The state is a tree of dicts, lists, tuples, strings, numbers, booleans, ``None``, numpy arrays and
scalars, and torch tensors. ``encode`` writes the tree as JSON, each array or tensor replaced by a
reference to a member of the archive; the few things JSON cannot say are tagged objects:

    {"__tuple__": [...]}              a tuple
    {"__dict__": [[key, value], ...]} a dict whose keys are not all plain strings (ints, tuples)
    {"__ndarray__": "a3"}             numpy array stored as archive member ``a3``
    {"__tensor__": "t7"}              torch tensor stored (as a numpy array) as archive member ``t7``
    {"__np__": "float32", "v": x}     a numpy scalar of that dtype

``decode`` reads the archive with ``numpy.load(allow_pickle=False)`` and rebuilds the tree from
exactly these tags, so reading a state file never runs code: an object array, an unknown tag or
member, or anything that is not such an archive is a ``StateFileError`` naming the problem.
"""

from __future__ import annotations

import io
import json
import math
import re
import zipfile
from typing import Any

import numpy as np

TREE = "tree"
_MEMBER = re.compile(r"^[at]\d+$")
_TAGS = ("__tuple__", "__dict__", "__ndarray__", "__tensor__", "__np__")
_SCALARS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "float32", "float64")


class StateFileError(ValueError):
    """A file that is not a state file written by ``encode``."""


def encode(state: Any) -> bytes:
    """The ``.npz`` bytes of ``state`` (see the module docstring); ``TypeError`` for anything else."""
    arrays: dict[str, np.ndarray] = {}
    tree = _encode(state, arrays, "state")
    text = json.dumps(tree, allow_nan=True, separators=(",", ":")).encode("utf-8")
    buffer = io.BytesIO()
    np.savez(buffer, **{TREE: np.frombuffer(text, dtype=np.uint8)}, **arrays)
    return buffer.getvalue()


def _encode(x: Any, arrays: dict, where: str) -> Any:
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return x
    if isinstance(x, np.generic):
        name = x.dtype.name
        if name not in _SCALARS:
            raise TypeError(f"{where}: numpy scalar of dtype {name} cannot be stored as data")
        return {"__np__": name, "v": x.item()}
    if isinstance(x, np.ndarray):
        if x.dtype.hasobject:
            raise TypeError(f"{where}: an object array cannot be stored as data")
        key = f"a{len(arrays)}"
        arrays[key] = x
        return {"__ndarray__": key}
    if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        key = f"t{len(arrays)}"
        try:
            arrays[key] = x.detach().cpu().numpy()
        except TypeError as error:  # a dtype numpy lacks (bfloat16)
            raise TypeError(f"{where}: tensor of dtype {x.dtype} cannot be stored as data ({error})") from None
        return {"__tensor__": key}
    if isinstance(x, tuple):
        return {"__tuple__": [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(x)]}
    if isinstance(x, list):
        return [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(x)]
    if isinstance(x, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in x):
            return {k: _encode(v, arrays, f"{where}.{k}") for k, v in x.items()}
        return {"__dict__": [[_encode(k, arrays, f"{where} key"), _encode(v, arrays, f"{where}[{k!r}]")]
                             for k, v in x.items()]}
    raise TypeError(f"{where}: {type(x).__name__} cannot be stored as data")


def decode(data: bytes) -> Any:
    """The state ``encode`` wrote; ``StateFileError`` for any other file."""
    try:
        archive = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
        raise StateFileError(f"not a state archive ({type(error).__name__})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise StateFileError("not a state archive (a single array)")
    with archive:
        names = set(archive.files)
        if TREE not in names or any(not _MEMBER.match(n) for n in names - {TREE}):
            raise StateFileError(f"not a state archive (members {sorted(names)[:5]})")
        try:
            arrays = {n: archive[n] for n in names}
            tree = json.loads(arrays.pop(TREE).tobytes().decode("utf-8"))
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
            raise StateFileError(f"a member cannot be read as data ({type(error).__name__}: {error})") from None
    return _decode(tree, arrays)


def _decode(x: Any, arrays: dict) -> Any:
    if x is None or isinstance(x, (bool, str, int)):
        return x
    if isinstance(x, float):
        return x
    if isinstance(x, list):
        return [_decode(v, arrays) for v in x]
    if not isinstance(x, dict):
        raise StateFileError(f"unexpected JSON value {x!r}")
    tags = [k for k in x if k.startswith("__")]
    if not tags:
        return {k: _decode(v, arrays) for k, v in x.items()}
    tag = tags[0]
    if tag not in _TAGS or len(tags) != 1:
        raise StateFileError(f"unknown tag {tag!r}")
    value = x[tag]
    if tag == "__tuple__" and isinstance(value, list):
        return tuple(_decode(v, arrays) for v in value)
    if tag == "__dict__" and isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value):
        out = {}
        for k, v in value:
            key = _decode(k, arrays)
            try:
                out[key] = _decode(v, arrays)
            except TypeError:
                raise StateFileError(f"dict key {key!r} is not hashable") from None
        return out
    if tag in ("__ndarray__", "__tensor__") and isinstance(value, str) and value in arrays:
        array = arrays[value]
        if tag == "__ndarray__":
            return array
        import torch

        return torch.from_numpy(np.array(array, copy=True))
    if tag == "__np__" and value in _SCALARS and isinstance(x.get("v"), (bool, int, float)):
        v = x["v"]
        if isinstance(v, float) and math.isnan(v) and not value.startswith("float"):
            raise StateFileError(f"NaN for a numpy {value}")
        return np.dtype(value).type(v)
    raise StateFileError(f"malformed {tag} entry")


def json_object(data: bytes) -> dict:
    """``data`` parsed as a JSON object (a manifest, an index); ``ValueError`` for anything else."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError) as error:
        raise ValueError(f"not JSON ({type(error).__name__})") from None
    if not isinstance(value, dict):
        raise ValueError(f"a JSON {type(value).__name__}, not an object")
    return value
