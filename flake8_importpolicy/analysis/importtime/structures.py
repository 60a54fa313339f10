"""Import structures built imperatively at module level (docs/semantics.md rule 19): transformers
4.x's ``_import_structure = {...}`` followed by ``_import_structure["x"] = [...]``,
``_import_structure["x"] += [...]``, ``_import_structure["x"].extend([...])`` / ``.append(n)``,
``_import_structure.update({...})`` and ``.setdefault("x", [...])``, often under conditions, before
``sys.modules[__name__] = _LazyModule(__name__, ..., _import_structure, ...)``; and transformers
4.5x's end of it: ``_import_structure = {k: set(v) for k, v in _import_structure.items()}`` (the
same structure), ``import_structure = define_import_structure(Path(__file__).parent / "models",
prefix="models")`` (every ``__all__`` under a subpackage) and
``import_structure[frozenset({})].update(_import_structure)`` (one structure merged into another).
Recorded for the lazy recorder, which makes the module's lazy mapping of it; it never calls back."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from flake8_importpolicy.analysis.conditions import UNKNOWN, Literal
from flake8_importpolicy.analysis.importtime.bindings import Binding, Scope
from flake8_importpolicy.model.facts import LazyAttach
from flake8_importpolicy.model.graph import Flag

__all__ = ["ImportStructures"]

_MAY_NOT_RUN: Final = frozenset({Flag.CONDITIONAL, Flag.FALLBACK, Flag.GUARDED})
"""Flags of code that may not run: what it adds to a structure may be there or not."""
_ADDING: Final = frozenset({"extend", "append", "update", "setdefault"})


@dataclass
class _Structure:
    """One name's structure: ``{submodule: names}`` added by code that always runs, added by code
    that may not (``maybe``), and the submodules whose names are not computable (``any_name``)."""

    binding: Binding | None
    certain: dict[str, list[str]] = field(default_factory=dict)
    maybe: dict[str, list[str]] = field(default_factory=dict)
    any_name: list[str] = field(default_factory=list)
    broken: bool = False  # a change the engine cannot follow: the structure is not computable
    changed: bool = False  # changed since it was bound (unchanged, the literal path decides)
    scan: str | None = None  # ``define_import_structure`` of this subpackage ("": the package)

    def add(self, sub: str, names: list[str] | None, flags: frozenset[Flag], *, replace: bool) -> None:
        self.changed = True
        if names is None:
            if sub not in self.any_name:
                self.any_name.append(sub)
            return
        if _MAY_NOT_RUN & flags:
            kept = self.maybe.setdefault(sub, [])
        else:
            kept = self.certain.setdefault(sub, [])
            if replace:
                kept.clear()
        kept.extend(n for n in names if n not in kept)

    def attach(self) -> LazyAttach:
        certain = {sub: tuple(sorted(names)) for sub, names in self.certain.items()}
        maybe = {sub: tuple(sorted(names)) for sub, names in self.maybe.items()}
        return LazyAttach(tuple(sorted({*certain, *maybe})), certain, maybe_attrs=maybe,
                          any_name=tuple(sorted(self.any_name)), scan_package=self.scan is not None,
                          scan_prefix=self.scan or "")

    def merge(self, other: _Structure, flags: frozenset[Flag]) -> None:
        """``self.update(other)``: what ``other`` holds is added (what it holds for certain only
        may be there when the update may not run)."""
        self.changed = True
        self.broken = self.broken or other.broken
        for sub, names in other.certain.items():
            self.add(sub, names, flags, replace=True)
        for sub, names in other.maybe.items():
            self.add(sub, names, flags | {Flag.CONDITIONAL}, replace=False)
        for sub in other.any_name:
            self.add(sub, None, flags, replace=False)


class ImportStructures:
    """The module-level names bound to a ``{submodule: [names]}`` dict, and what was added to them.

    Args:
        scope: the module's bindings (a name rebound since its structure was made has none).
        constant: the value of an expression, :data:`UNKNOWN` when not computable.
    """

    def __init__(self, scope: Scope, constant: Callable[[ast.expr], object]) -> None:
        self._scope = scope
        self._constant = constant
        self._by_name: dict[str, _Structure] = {}

    def assigned(self, stmt: ast.Assign | ast.AnnAssign | ast.AugAssign, flags: frozenset[Flag]) -> None:
        """A module-level assignment: ``NAME = {...}`` starts a structure (any other binding of
        ``NAME`` ends it), ``NAME[key] = names`` and ``NAME[key] += names`` add to one."""
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                structure = self._by_name.get(target.value.id)
                if structure is not None and stmt.value is not None:
                    self._add_item(structure, target.slice, stmt.value, flags,
                                   replace=not isinstance(stmt, ast.AugAssign))
            elif isinstance(target, ast.Name) and not isinstance(stmt, ast.AugAssign):
                previous = self._by_name.pop(target.id, None)
                if len(targets) == 1 and not _MAY_NOT_RUN & flags:
                    if previous is not None and _same_keys(stmt.value, target.id):
                        previous.binding = self._scope.lookup(target.id)  # ``{k: set(v) ...}``
                        self._by_name[target.id] = previous
                        continue
                    scan = _scanned(stmt.value)
                    if scan is not None:
                        self._by_name[target.id] = _Structure(
                            self._scope.lookup(target.id), changed=True, scan=scan,
                        )
                        continue
                value = self._constant(stmt.value) if stmt.value is not None else UNKNOWN
                mapping = _mapping(value)
                if mapping is not None and len(targets) == 1 and not _MAY_NOT_RUN & flags:
                    structure = _Structure(self._scope.lookup(target.id))
                    for sub, names in mapping.items():
                        structure.add(sub, names, flags, replace=True)
                    structure.changed = False
                    self._by_name[target.id] = structure
            elif isinstance(target, ast.Name):  # ``NAME += ...``: not a structure any more
                self._by_name.pop(target.id, None)

    def called(self, call: ast.Call, flags: frozenset[Flag]) -> None:
        """A module-level expression statement ``NAME.update({...})``, ``NAME.setdefault(key,
        names)``, ``NAME[key].extend(names)`` or ``NAME[key].append(name)``. Another method of a
        structure (``pop``, ``clear``) makes it not computable."""
        func = call.func
        if not isinstance(func, ast.Attribute):
            return
        owner = func.value
        if isinstance(owner, ast.Call):  # ``NAME.setdefault(key, []).append(name)``
            inner = owner.func
            if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) \
                    and inner.value.id in self._by_name:
                self._by_name[inner.value.id].broken = True
            return
        if isinstance(owner, ast.Name) and owner.id in self._by_name:
            structure = self._by_name[owner.id]
            if func.attr == "update" and len(call.args) <= 1:
                value = self._constant(call.args[0]) if call.args else {}
                mapping = _mapping(value)
                if mapping is None:
                    structure.broken = True
                    return
                for sub, names in mapping.items():
                    structure.add(sub, names, flags, replace=True)
                for keyword in call.keywords:
                    if keyword.arg is None:
                        structure.broken = True
                    else:
                        structure.add(keyword.arg, _names(self._constant(keyword.value)), flags,
                                      replace=True)
            elif func.attr == "setdefault" and len(call.args) in (1, 2) and not call.keywords:
                key = self._constant(call.args[0])
                if not isinstance(key, str):
                    structure.broken = True
                    return
                if key not in structure.certain and key not in structure.maybe:
                    default = self._constant(call.args[1]) if len(call.args) == 2 else UNKNOWN
                    structure.add(key, _names(default), flags, replace=False)
            elif func.attr not in {"get", "items", "keys", "values", "copy"}:
                structure.broken = True
        elif (
            isinstance(owner, ast.Subscript) and isinstance(owner.value, ast.Name)
            and owner.value.id in self._by_name
        ):
            structure = self._by_name[owner.value.id]
            merged = call.args[0] if len(call.args) == 1 and not call.keywords else None
            if (
                func.attr == "update" and structure.scan is not None
                and isinstance(merged, ast.Name) and merged.id in self._by_name
            ):  # ``import_structure[frozenset({})].update(_import_structure)``: its names too
                structure.merge(self._by_name[merged.id], flags)
            elif func.attr == "extend" and len(call.args) == 1 and not call.keywords:
                self._add_item(structure, owner.slice, call.args[0], flags, replace=False)
            elif func.attr == "append" and len(call.args) == 1 and not call.keywords:
                key, name = self._constant(owner.slice), self._constant(call.args[0])
                if not isinstance(key, str):
                    structure.broken = True
                else:
                    structure.add(key, [name] if isinstance(name, str) else None, flags, replace=False)
            elif func.attr in _ADDING or func.attr in {"remove", "pop", "clear", "insert"}:
                structure.broken = True

    def deleted(self, target: ast.expr) -> None:
        """``del NAME[key]``: the structure is not computable any more (``del NAME``: no structure)."""
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            structure = self._by_name.get(target.value.id)
            if structure is not None:
                structure.broken = True
        elif isinstance(target, ast.Name):
            self._by_name.pop(target.id, None)

    def structure(self, node: ast.expr) -> LazyAttach | bool | None:
        """The lazy mapping of ``node`` when it names a structure still bound as it was made:
        False when it is not computable, None when ``node`` names no structure."""
        if not isinstance(node, ast.Name):
            return None
        structure = self._by_name.get(node.id)
        if (
            structure is None or not (structure.changed or structure.broken)
            or not _same_binding(self._scope.lookup(node.id), structure.binding)
        ):
            return None  # unchanged, or rebound in a way not followed here: the literal path decides
        if structure.broken:
            return False
        return structure.attach()

    def _add_item(
        self, structure: _Structure, key_node: ast.expr, value_node: ast.expr,
        flags: frozenset[Flag], *, replace: bool,
    ) -> None:
        key = self._constant(key_node)
        if not isinstance(key, str):
            structure.broken = True  # which submodule is not known
            return
        structure.add(key, _names(self._constant(value_node)), flags, replace=replace)


def _same_binding(now: Binding | None, made: Binding | None) -> bool:
    """Whether the name is still bound by the statement that made its structure (a later step of
    the same statement may replace the binding: ``x = define_import_structure(...)`` is a call's)."""
    return now is made or (now is not None and made is not None and now.line == made.line)


def _same_keys(value: ast.expr | None, name: str) -> bool:
    """Whether ``value`` is ``{k: f(v) for k, v in NAME.items()}``: the same submodules with the
    same names (``set(v)``, ``list(v)``, ``tuple(v)``, ``sorted(v)`` or ``v`` itself)."""
    if not isinstance(value, ast.DictComp) or len(value.generators) != 1:
        return False
    comp = value.generators[0]
    target, source = comp.target, comp.iter
    if (
        comp.ifs or comp.is_async or not isinstance(target, ast.Tuple) or len(target.elts) != 2
        or not all(isinstance(e, ast.Name) for e in target.elts)
        or not isinstance(source, ast.Call) or source.args or source.keywords
        or not isinstance(source.func, ast.Attribute) or source.func.attr != "items"
        or not isinstance(source.func.value, ast.Name) or source.func.value.id != name
    ):
        return False
    key, item = (e.id for e in target.elts if isinstance(e, ast.Name))
    names = value.value
    if (
        isinstance(names, ast.Call) and isinstance(names.func, ast.Name)
        and names.func.id in {"set", "list", "tuple", "sorted", "frozenset"}
        and len(names.args) == 1 and not names.keywords
    ):
        names = names.args[0]
    return (isinstance(value.key, ast.Name) and value.key.id == key
            and isinstance(names, ast.Name) and names.id == item)


def _scanned(value: ast.expr | None) -> str | None:
    """The subpackage ``value`` reads every ``__all__`` of: ``define_import_structure(__file__)``
    (the package itself, "") or ``define_import_structure(Path(__file__).parent / "models",
    prefix="models")`` (a subpackage, its keys under the prefix), else None."""
    if not isinstance(value, ast.Call) or len(value.args) != 1:
        return None
    func = value.func
    callee = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if callee != "define_import_structure":
        return None
    prefix: object = None
    for keyword in value.keywords:
        if keyword.arg != "prefix" or not isinstance(keyword.value, ast.Constant):
            return None
        prefix = keyword.value.value
    where = value.args[0]
    if isinstance(where, ast.BinOp) and isinstance(where.op, ast.Div):
        sub = where.right
        parent = where.left
        if (
            isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value == prefix
            and sub.value.isidentifier()
            and isinstance(parent, ast.Attribute) and parent.attr == "parent" and _names_file(parent.value)
        ):
            return sub.value
        return None
    return "" if prefix is None and _names_file(where) else None


def _names_file(node: ast.expr) -> bool:
    """``__file__``, ``globals()["__file__"]``, ``Path(__file__)`` or a name bound to one of them
    (``_file``): the module's own file, as transformers' inits write it."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        return _names_file(node.args[0])  # ``Path(__file__)``
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and key.value == "__file__"
    return isinstance(node, ast.Name) and node.id in {"__file__", "_file"}


def _names(value: object) -> list[str] | None:
    """The names of a constant list, tuple or set of strings, else None (not computable)."""
    if isinstance(value, Literal):
        value = value.value
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(n, str) for n in value):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    return None


def _mapping(value: object) -> dict[str, list[str] | None] | None:
    """``{submodule: names}`` of a constant dict with string keys, else None."""
    if isinstance(value, Literal):
        value = value.value
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        return None
    return {k: _names(v) for k, v in value.items()}
