"""A run's resumable state as data: a JSON tree and its arrays in one ``.npz`` (no pickle).

The state is a tree of dicts, lists, tuples, strings, numbers, booleans, ``None``, numpy arrays and
scalars, and torch tensors. ``encode`` writes the tree as JSON, each array or tensor replaced by a
reference to a member of the archive; the few things JSON cannot say are tagged objects:

    {"__tuple__": [...]}              a tuple
    {"__rows__": [[...], ...]}        a list of tuples of plain values (a table's rows)
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
import os
import re
import zipfile
from itertools import chain
from typing import Any

import numpy as np

TREE = "tree"
_SPLICED = "spliced"  # not a member name (_MEMBER): where ``_encode`` keeps the ``Encoded`` texts
_MEMBER = re.compile(r"^[at]\d+$")
_TAGS = ("__tuple__", "__rows__", "__dict__", "__ndarray__", "__tensor__", "__np__")
_SCALARS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "float32", "float64")


class StateFileError(ValueError):
    """A file that is not a state file written by ``encode``."""


class Encoded:
    """A value that is already this module's JSON text (``plain_text``): ``encode`` writes ``text`` where
    the value stands, as the value itself would have been written. The parts of a state that grow by
    appending (a run's match rows, menagerie entries, payoff pairs) are encoded once per item this way."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def plain_text(value: Any) -> str:
    """The JSON text ``encode`` writes for ``value``, which holds no arrays or tensors (``TypeError``)."""
    arrays: dict = {}
    text = _dumps(_encode(value, arrays))
    if arrays:
        raise TypeError("plain_text: the value holds arrays or tensors")
    return text


def rows_text(rows: list[str]) -> str:
    """The text ``encode`` writes for a list of tuples of plain values (a table) whose rows' texts
    (``plain_text(list(row))``) are ``rows``."""
    return "{\"__rows__\":[" + ",".join(rows) + "]}" if rows else "[]"


def _dumps(tree: Any) -> str:
    return json.dumps(tree, allow_nan=True, separators=(",", ":"))


def encode(state: Any) -> bytes:
    """The ``.npz`` bytes of ``state`` (see the module docstring); ``TypeError`` for anything else."""
    arrays: dict[str, np.ndarray] = {}
    if isinstance(state, dict):  # name the top-level entry that cannot be stored
        tree = {}
        for key, value in state.items():
            try:
                tree[key] = _encode(value, arrays)
            except TypeError as error:
                raise TypeError(f"state[{key!r}]: {error}") from None
        tree = _encode_dict(tree, arrays, encoded=True)
    else:
        tree = _encode(state, arrays)
    spliced = arrays.pop(_SPLICED, None)
    text = _dumps(tree)
    if spliced:  # each placeholder string (quoted once in the text) becomes its value's text
        parts = text.split(f'"{spliced["mark"]}')
        text = parts[0] + "".join(spliced["texts"][int(part[:part.index('"')])] + part[part.index('"') + 1:]
                                  for part in parts[1:])
    text = text.encode("utf-8")
    buffer = io.BytesIO()
    np.savez(buffer, **{TREE: np.frombuffer(text, dtype=np.uint8)}, **arrays)
    return buffer.getvalue()


_PLAIN = frozenset((str, int, float, bool, type(None)))  # exact types JSON writes and reads back as they were


def _plain(values) -> bool:
    return all(type(v) in _PLAIN for v in values)


def _encode_dict(x: dict, arrays: dict, encoded: bool = False) -> Any:
    if all(type(k) is str and not k.startswith("__") for k in x):
        return x if encoded else {k: v if type(v) in _PLAIN else _encode(v, arrays) for k, v in x.items()}
    return {"__dict__": [[_encode(k, arrays), v if encoded else _encode(v, arrays)] for k, v in x.items()]}


def _encode(x: Any, arrays: dict) -> Any:
    kind = type(x)
    if kind in _PLAIN:
        return x
    if kind is list:
        if _plain(x):
            return x
        if all(type(v) is tuple for v in x) and _plain(chain.from_iterable(x)):  # table rows (matches)
            return {"__rows__": x}  # json writes tuples as arrays
        return [_encode(v, arrays) for v in x]
    if isinstance(x, dict):  # OrderedDict (torch state dicts), defaultdict: read back as dicts
        return _encode_dict(x, arrays)
    if kind is Encoded:
        spliced = arrays.setdefault(_SPLICED, {"mark": f"@spliced-{os.urandom(8).hex()}:", "texts": []})
        spliced["texts"].append(x.text)
        return f"{spliced['mark']}{len(spliced['texts']) - 1}"

    if isinstance(x, tuple):  # torch.Size too: read back as a tuple
        return {"__tuple__": list(x) if _plain(x) else [_encode(v, arrays) for v in x]}
    if isinstance(x, list):
        return [_encode(v, arrays) for v in x]
    if isinstance(x, np.generic):
        name = x.dtype.name
        if name not in _SCALARS:
            raise TypeError(f"a numpy scalar of dtype {name} cannot be stored as data")
        return {"__np__": name, "v": x.item()}
    for base in (bool, int, float, str):  # subclasses of plain types (IntEnum, ...) as the plain value
        if isinstance(x, base):
            return base(x)
    if isinstance(x, np.ndarray):
        if x.dtype.hasobject:
            raise TypeError("an object array cannot be stored as data")
        key = f"a{len(arrays) - (_SPLICED in arrays)}"
        arrays[key] = x
        return {"__ndarray__": key}
    if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        key = f"t{len(arrays) - (_SPLICED in arrays)}"
        try:
            arrays[key] = x.detach().cpu().numpy()
        except TypeError as error:  # a dtype numpy lacks (bfloat16)
            raise TypeError(f"a tensor of dtype {x.dtype} cannot be stored as data ({error})") from None
        return {"__tensor__": key}
    raise TypeError(f"{type(x).__name__} cannot be stored as data")


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
    kind = type(x)
    if kind in _PLAIN:
        return x
    if kind is list:
        return x if _plain(x) else [_decode(v, arrays) for v in x]
    if kind is not dict:
        raise StateFileError(f"unexpected JSON value {x!r}")
    tags = [k for k in x if k.startswith("__")]
    if not tags:
        return {k: v if type(v) in _PLAIN else _decode(v, arrays) for k, v in x.items()}
    tag = tags[0]
    if tag not in _TAGS or len(tags) != 1:
        raise StateFileError(f"unknown tag {tag!r}")
    value = x[tag]
    if tag == "__rows__" and type(value) is list and all(type(r) is list for r in value) \
            and _plain(chain.from_iterable(value)):
        return list(map(tuple, value))
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
