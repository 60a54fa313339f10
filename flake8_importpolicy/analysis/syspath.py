"""Directories an import-time ``sys.path`` change adds, computed from ``__file__`` (rule 7).

setuptools' ``__init__`` runs ``sys.path.extend(... * [vendor_path := os.path.join(
os.path.dirname(os.path.dirname(__file__)), 'setuptools', '_vendor')])``; the modules of its
``_vendor`` directory are then found by path search. The directory is computed here without running
anything: ``__file__`` and what ``os.path``/``pathlib`` make of it with constant strings.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Final

from flake8_importpolicy.analysis.conditions import dotted_name

__all__ = [
    "FINDER_ADDERS", "PathValue", "SYS_PATH_CHANGERS", "evaluate_path", "find_added_paths", "may_be_path",
]


@dataclass(frozen=True)
class PathValue:
    """A path relative to the module's file: the file itself (``is_file``), or the directory ``up``
    levels above the module's directory, then ``parts``."""

    up: int = 0
    parts: tuple[str, ...] = ()
    is_file: bool = False

    def parent(self) -> PathValue:
        """``os.path.dirname`` of this path."""
        if self.is_file:
            return PathValue()
        if self.parts:
            return PathValue(self.up, self.parts[:-1])
        return PathValue(self.up + 1)

    def joined(self, text: str) -> PathValue | None:
        """``os.path.join(self, text)`` (None for an absolute ``text`` or a path below a file)."""
        if self.is_file or text.startswith(("/", "\\")) or ":" in text or "\x00" in text:
            return None
        value = self
        for part in text.replace("\\", "/").split("/"):
            if part in ("", "."):
                continue
            value = value.parent() if part == ".." else PathValue(value.up, (*value.parts, part))
        return value


SYS_PATH_CHANGERS: Final = frozenset({"sys.path.append", "sys.path.insert", "sys.path.extend"})
FINDER_ADDERS: Final = frozenset({
    f"sys.{hooks}.{method}"
    for hooks in ("meta_path", "path_hooks") for method in ("append", "insert", "extend")
})
"""Calls that add an import finder (``sys.meta_path``) or path hook: the imports it serves are not
found by path search and what it runs for them is not known (rule 7, IPL006 ``sys-path``)."""

_SAME: Final = frozenset({
    "os.path.abspath", "os.path.realpath", "os.path.normpath", "os.fspath", "str",
    "posixpath.abspath", "posixpath.realpath", "posixpath.normpath",
})
_DIRNAME: Final = frozenset({"os.path.dirname", "posixpath.dirname"})
_JOIN: Final = frozenset({"os.path.join", "posixpath.join"})
_PATH: Final = frozenset({"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"})
_KNOWN: Final = _SAME | _DIRNAME | _JOIN | _PATH


def find_added_paths(
    call: ast.Call,
    method: str,
    aliases: Mapping[str, str],
    constant: Callable[[ast.expr], object],
    names: MutableMapping[str, PathValue],
) -> list[PathValue] | None:
    """The directories ``sys.path.<method>(...)`` adds, or None if one is not computable.

    Args:
        call: the call; method: ``append``, ``insert`` or ``extend``.
        aliases: the scope's import aliases (``os``, ``from os.path import join``).
        constant: the scope's evaluator of constant strings.
        names: paths bound to names so far (``here = os.path.dirname(__file__)``); walrus
            bindings inside the call are added.
    """
    for node in ast.walk(call):
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            value = evaluate_path(node.value, aliases, constant, names)
            if value is None:
                names.pop(node.target.id, None)
            else:
                names[node.target.id] = value
    if method == "append" and len(call.args) == 1:
        items: list[ast.expr] = [call.args[0]]
    elif method == "insert" and len(call.args) == 2:
        items = [call.args[1]]
    elif method == "extend" and len(call.args) == 1:
        found = _list_items(call.args[0])
        if found is None:
            return None
        items = found
    else:
        return None
    out: list[PathValue] = []
    for item in items:
        value = evaluate_path(item, aliases, constant, names)
        if value is None or value.is_file:
            return None
        out.append(value)
    return out


def _list_items(node: ast.expr) -> list[ast.expr] | None:
    """The items of ``[a, b]``, ``(a, b)``, or of ``cond * [a]`` (a list repeated 0 or 1 times)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return list(node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for side in (node.left, node.right):
            if isinstance(side, (ast.List, ast.Tuple)):
                return list(side.elts)
    return None


_LAST_NAMES: Final = frozenset(name.rpartition(".")[2] for name in _KNOWN) | {"resolve", "absolute"}


def may_be_path(node: ast.expr) -> bool:
    """A cheap test before :func:`evaluate_path`: whether ``node`` has a path's shape at all
    (``__file__``, a name, ``x.parent``, ``x / "y"``, or a call of a function named like a path
    function)."""
    if isinstance(node, (ast.Name, ast.BinOp)):
        return True
    if isinstance(node, ast.Attribute):
        return node.attr == "parent"
    if isinstance(node, ast.Call):
        func = node.func
        last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return last in _LAST_NAMES
    return False


def evaluate_path(
    node: ast.expr,
    aliases: Mapping[str, str],
    constant: Callable[[ast.expr], object],
    names: Mapping[str, PathValue],
) -> PathValue | None:
    """``node`` as a path relative to the module's file, or None if it is not computable."""
    if isinstance(node, ast.Name):
        if node.id == "__file__":
            return PathValue(is_file=True)
        return names.get(node.id)
    if isinstance(node, ast.NamedExpr):
        return evaluate_path(node.value, aliases, constant, names)
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        base = evaluate_path(node.value, aliases, constant, names)
        return None if base is None else base.parent()
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        base = evaluate_path(node.left, aliases, constant, names)
        text = constant(node.right)
        return base.joined(text) if base is not None and isinstance(text, str) else None
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in ("resolve", "absolute") and not node.args:
        return evaluate_path(func.value, aliases, constant, names)
    name = dotted_name(func, aliases)
    if name is None or not node.args or name not in _KNOWN:
        return None
    first = evaluate_path(node.args[0], aliases, constant, names)
    if first is None:
        return None
    rest = node.args[1:]
    if name in _DIRNAME and not rest:
        return first.parent()
    if name in _SAME and not rest:
        return first
    if name in _JOIN or name in _PATH:
        value: PathValue | None = first
        for arg in rest:
            text = constant(arg)
            if value is None or not isinstance(text, str):
                return None
            value = value.joined(text)
        return value
    return None
