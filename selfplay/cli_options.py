"""Command-line options generated from the config dataclasses, so that each default is written once.

``add_field_options`` adds one option per named field of a config dataclass: the flag is the field's
name with dashes (``num_envs`` → ``--num-envs``), the type follows its annotation (``int``, ``float``,
``str``, ``bool`` → a switch, ``X | None`` → X, ``list[int]`` → comma-separated integers,
``list[str]`` → comma-separated names) and the help is the field's documentation: the docstring
under the field, or else the comment at the end of its line. The fields are read from the module's
source (``ast``), without importing it, so that ``selfplay --help`` stays fast.

The default that ``--help`` prints is the one the command actually uses: options are added with
``argparse.SUPPRESS`` (an option not given is absent from the parsed arguments, and the command
takes the dataclass's or its preset's value), and ``ConfigHelpFormatter`` asks the option's
``default_text()`` for the text when help is printed — computed from the dataclasses and presets
themselves, never restated.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class FieldDoc:
    """One field of a config dataclass as its source states it."""

    name: str
    annotation: str  # the annotation's source text, e.g. "int | None"
    doc: str


def field_docs(module: str, class_name: str) -> dict[str, FieldDoc]:
    """The fields of dataclass ``class_name`` in ``module`` (its bases from the same module first), read
    from the source without importing it; a field's doc is its docstring, else its line's ``#`` comment."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ValueError(f"module {module!r} not found")
    with open(spec.origin, encoding="utf-8") as f:
        source = f.read()
    tree = ast.parse(source)
    lines = source.splitlines()
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    if class_name not in classes:
        raise ValueError(f"class {class_name!r} not found in {module}")

    def read(node: ast.ClassDef) -> dict[str, FieldDoc]:
        out: dict[str, FieldDoc] = {}
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in classes:
                out.update(read(classes[base.id]))
        body = node.body
        for i, item in enumerate(body):
            if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
                continue
            doc = ""
            nxt = body[i + 1] if i + 1 < len(body) else None
            if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
                doc = " ".join(nxt.value.value.replace("``", "").split())
            else:
                line = lines[item.end_lineno - 1]
                if "#" in line[item.end_col_offset:]:
                    doc = line[item.end_col_offset:].split("#", 1)[1].replace("``", "").strip()
            out[item.target.id] = FieldDoc(item.target.id, ast.unparse(item.annotation), doc)
        return out

    return read(classes[class_name])


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


TYPES: dict[str, Callable[[str], object]] = {"int": int, "float": float, "str": str, "list[int]": _ints,
                                              "list[str]": _names}


def add_field_options(parser: argparse.ArgumentParser, module: str, class_name: str, names: list[str],
                      default_text: Callable[[str], str], types: dict[str, Callable] | None = None,
                      flags: dict[str, list[str]] | None = None) -> None:
    """One option per field in ``names`` of ``module.class_name`` (module docstring).

    ``default_text(name)``: the default as ``--help`` states it, called only when help is printed;
    ``types``: a parser per field where the annotation's own is not the one (e.g. scheme specs, whose
    parameters hold commas); ``flags``: the option strings of a field other than ``--field-name``."""
    docs = field_docs(module, class_name)
    for name in names:
        if name not in docs:
            raise ValueError(f"{class_name} has no field {name!r}")
        field = docs[name]
        if not field.doc:
            raise ValueError(f"{class_name}.{name} has no documentation to be its help: give it a docstring")
        option_strings = (flags or {}).get(name, ["--" + name.replace("_", "-")])
        annotation = field.annotation.removesuffix(" | None")
        kwargs: dict = {"dest": name, "default": argparse.SUPPRESS, "help": field.doc}
        if annotation == "bool":
            kwargs["action"] = "store_true"
        else:
            kind = (types or {}).get(name) or TYPES.get(annotation)
            if kind is None:
                raise ValueError(f"{class_name}.{name}: no command-line type for annotation {field.annotation!r}")
            kwargs["type"] = kind
        action = parser.add_argument(*option_strings, **kwargs)
        action.default_text = (lambda n=name: default_text(n))


def given(args: argparse.Namespace, names) -> dict:
    """The options among ``names`` that were given on the command line (generated options are absent otherwise)."""
    return {n: getattr(args, n) for n in names if hasattr(args, n)}


def describe(values: list[tuple[str, object]]) -> str:
    """``[("", 3000), ("--quick", 600), ("on SMAC", 6000)]`` → ``"3000; --quick: 600; on SMAC: 6000"``:
    the first value, then each other one that differs from the one listed before it."""
    parts = [_show(values[0][1])]
    for (_, before), (label, value) in zip(values, values[1:]):
        if value != before:
            parts.append(f"{label}: {_show(value)}")
    return "; ".join(parts)


def _show(value) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


class ConfigHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Defaults as the command uses them: a generated option's ``default_text()``, and argparse's own
    default for the others (never "(default: None)" or "(default: ==SUPPRESS==)")."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = getattr(action, "default_text", None)
        if text is not None:
            return f"{action.help} (default: {text()})".replace("%", "%%")
        if action.default is None or action.default is argparse.SUPPRESS or action.default is False:
            return action.help
        return super()._get_help_string(action)
