"""The fixes ``importpolicy fix`` offers for an IPL001 whose first hop is a re-export in a light
package's ``__init__.py`` (docs/bisect-and-fix.md): values, and which fixes a finding's shape
admits. :mod:`flake8_importpolicy.analysis.fixes` plans and verifies them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from flake8_importpolicy.model.findings import Violation
from flake8_importpolicy.model.graph import Hop, HopKind
from flake8_importpolicy.model.reading import read_regular_file

__all__ = [
    "ALIASED", "NOT_AT_TOP_LEVEL", "SHARES_A_LINE", "UNLISTED", "Fix", "FixKind", "Importer", "TextEdit",
    "find_reexport_hop", "fix_refusals", "module_level_binding_lines", "offered_fix_kinds",
    "reexport_statements", "version_refusals",
]


class FixKind(StrEnum):
    """The fixes real projects use for a heavy re-export (the value is what JSON and text show).

    - ``lazy-reexport``: the name stays importable from the package, loaded on first access: a
      PEP 562 module ``__getattr__`` with an explicit map (``__all__`` and ``__dir__`` kept), or
      ``lazy from .x import name`` (PEP 810) when every target version is 3.15 or newer;
    - ``direct-imports``: the re-export is removed and every first-party importer of the name
      imports it from the submodule that defines it.
    """

    LAZY_REEXPORT = "lazy-reexport"
    DIRECT_IMPORTS = "direct-imports"


@dataclass(frozen=True, order=True)
class TextEdit:
    """Replace a range of a file's text by ``new_text``.

    Attributes:
        path: the file (absolute).
        start, end: ``(line, column)`` of the range's first character and of the character after
            it: lines 1-based as every finding's line, columns 0-based and counted in characters
            (code points) of the line as decoded from UTF-8. ``start == end`` inserts.
        new_text: the text put there (its line breaks are the file's own).
    """

    path: Path
    start: tuple[int, int]
    end: tuple[int, int]
    new_text: str


@dataclass(frozen=True)
class Importer:
    """An importer of a re-exported name that the direct-imports fix cannot rewrite.

    Attributes:
        path: its file; line: the 1-based line of the use.
        module: its module name when known (else ``""``).
        why: what the use is (``getattr(pkg, name) with a name that is not a literal``, ``outside
            the source roots and the project``).
    """

    path: Path
    line: int
    module: str
    why: str


@dataclass(frozen=True)
class Fix:
    """One way to remove an IPL001 re-export, as edits of files.

    Attributes:
        kind: which fix.
        title: one line for a person (an editor's code action title).
        light: the light package; path, line: its ``__init__.py`` and the re-export's first line.
        names: the names the re-export binds that the fix moves.
        edits: the edits, sorted, none overlapping; applied together they are the fix.
        blockers: for ``direct-imports``: the importers it cannot rewrite (the fix refuses to
            remove the names while any remain, unless forced).
        verified: the engine checked the patched tree in memory: the finding is gone and no
            finding or unanalysable module is new.
        note: what the fix keeps as it was (an existing ``__dir__``), or ``""``.
    """

    kind: FixKind
    title: str
    light: str
    path: Path
    line: int
    names: tuple[str, ...]
    edits: tuple[TextEdit, ...]
    blockers: tuple[Importer, ...] = ()
    verified: bool = False
    note: str = ""


def find_reexport_hop(violation: Violation) -> Hop | None:
    """The first hop of an IPL001 when it is a re-export in a light package's ``__init__.py``: a
    from-import or star import of one of the package's own submodules (``from .x import name``,
    ``from .x import *``, ``from . import x``); else None."""
    if violation.budget is not None or violation.is_call or not violation.chain:
        return None
    hop = violation.chain[0]
    if violation.path.name != "__init__.py" or hop.module != violation.light:
        return None
    if hop.kind not in (HopKind.FROM_IMPORT, HopKind.STAR_IMPORT):
        return None
    if not str(hop.imported).startswith(violation.light + "."):
        return None
    return hop


NOT_AT_TOP_LEVEL = ("the re-export is not a statement of the module's top level (under an if or "
                    "a try, or after a semicolon)")
"""Why a re-export of the right shape gets no fix (:func:`offered_fix_kinds`)."""

SHARES_A_LINE = "the re-export shares its line with another statement (a semicolon)"
ALIASED = "an aliased name (from .x import a as b)"
UNLISTED = ("a star import of a module whose names cannot be listed (no literal __all__, and a star "
            "import of its own or no source)")


def reexport_statements(violation: Violation, tree: ast.Module) -> list[ast.ImportFrom]:
    """The top-level statements of the package's ``__init__.py`` (its syntax tree ``tree``) that a
    fix of ``violation`` replaces: its re-export, then every other top-level from-import of the same
    submodule (isort's one-name-a-line style, ``from .x import a`` / ``from .x import b``: the second
    still runs the submodule when only the first is fixed); empty when the finding's first hop is
    not a re-export statement of the top level (:func:`find_reexport_hop`)."""
    hop = find_reexport_hop(violation)
    if hop is None or hop.col != 0:
        return []
    first = next((node for node in tree.body if isinstance(node, ast.ImportFrom)
                  and node.lineno == hop.line and node.col_offset == 0), None)
    if first is None:
        return []
    base = _from_base(violation.light, first)
    if base is None or base == violation.light:  # from . import x, y: each its own submodule
        return [first]
    return [first, *(node for node in tree.body if isinstance(node, ast.ImportFrom)
                     and node is not first and node.col_offset == 0
                     and _from_base(violation.light, node) == base)]


def version_refusals(target_versions: Iterable[tuple[int, int]]) -> dict[FixKind, str]:
    """The fixes the target versions rule out: the lazy re-export when one of them is older than
    3.7 (a module ``__getattr__`` is PEP 562's, 3.7; before it the name would be gone). Empty
    versions are the interpreter's (taken to have it)."""
    versions = tuple(target_versions)
    if versions and min(versions) < (3, 7):
        oldest = ".".join(map(str, min(versions)))
        return {FixKind.LAZY_REEXPORT: "a module __getattr__ (PEP 562) needs Python 3.7, and the "
                                       f"target versions include {oldest}"}
    return {}


def fix_refusals(violation: Violation, source: bytes | None = None,
                 target_versions: Iterable[tuple[int, int]] = ()) -> dict[FixKind, str]:
    """Why each fix ``importpolicy fix`` cannot write for a re-export finding is not offered, from
    the statement, the package's ``__init__.py`` (its bytes ``source``; read from
    ``violation.path`` when None) and the target versions (:func:`version_refusals`):
    ``{kind: why}``, every kind when the finding is not a re-export statement of the module's top
    level, none for a finding that is not a re-export at all."""
    if find_reexport_hop(violation) is None:
        return {}
    versions = version_refusals(target_versions)
    everything = dict.fromkeys(FixKind, NOT_AT_TOP_LEVEL)
    try:
        data = source if source is not None else read_regular_file(violation.path)[1]
        tree = ast.parse(data, str(violation.path))
    except (OSError, SyntaxError, ValueError):
        return everything
    statements = reexport_statements(violation, tree)
    if not statements:
        return everything
    taken = {line for node in tree.body if not any(node is s for s in statements)
             for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)}
    if any(s.lineno in taken or s.end_lineno in taken for s in statements):
        return dict.fromkeys(FixKind, SHARES_A_LINE)
    if any(_star_names_unknown(violation, s) for s in statements):
        return dict.fromkeys(FixKind, UNLISTED)
    refusals: dict[FixKind, str] = dict(versions)
    if any(s.module and alias.asname and alias.asname != alias.name
           for s in statements for alias in s.names):
        refusals[FixKind.LAZY_REEXPORT] = ALIASED  # the map would need a second column
    getattrs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]
    others = [line for line in module_level_binding_lines(tree, "__getattr__")
              if line not in {g.lineno for g in getattrs}]
    if len(getattrs) > 1 or others:
        # an appended or merged one would not be the one that runs (or not always)
        line = sorted({*others, *(g.lineno for g in getattrs)})[-1]
        refusals[FixKind.LAZY_REEXPORT] = (
            f"the package binds __getattr__ at line {line} other than by one top-level def "
            "(under an if or a try, by assignment, or twice): merge the lazy names into it by hand")
    elif getattrs and not (getattrs[0].args.posonlyargs or getattrs[0].args.args):
        refusals[FixKind.LAZY_REEXPORT] = (
            f"the package's __getattr__ at line {getattrs[0].lineno} takes no name")
    elif getattrs and any(_replaces_function(d) for d in getattrs[0].decorator_list):
        decorator = next(d for d in getattrs[0].decorator_list if _replaces_function(d))
        refusals[FixKind.LAZY_REEXPORT] = (
            f"the package's __getattr__ at line {getattrs[0].lineno} is decorated "
            f"(@{ast.unparse(decorator)}): what runs is the decorator's result, merge the lazy names "
            "into it by hand")
    return {**refusals, **versions}


_CALLING_DECORATORS = frozenset({"functools.lru_cache", "lru_cache", "functools.cache", "cache"})
"""Decorators whose result calls the function they decorate (the lazy lookup merged into it runs)."""


def _replaces_function(decorator: ast.expr) -> bool:
    """Whether a decorator may make the name mean a function other than the one written (any
    decorator but functools' caches, :data:`_CALLING_DECORATORS`)."""
    called = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(called) not in _CALLING_DECORATORS


def offered_fix_kinds(violation: Violation, source: bytes | None = None,
                      target_versions: Iterable[tuple[int, int]] = ()) -> tuple[FixKind, ...]:
    """The fixes ``importpolicy fix`` can offer for a finding: for a re-export in a light package's
    ``__init__.py`` (:func:`find_reexport_hop`) that is a statement of the module's top level, on
    lines of its own, each kind :func:`fix_refusals` does not rule out; none otherwise. The one
    decision whether a fix is offered: ``check``'s "use instead" text and SARIF ``fixes``,
    ``importpolicy fix`` and the editor's code actions all ask it (``source``: the bytes of the
    package's ``__init__.py``, read from ``violation.path`` when None; ``target_versions``: the
    check's, ``--target-version`` or the policy's ``target-versions``). A re-export under an ``if``
    or a ``try`` is left to a person (:data:`NOT_AT_TOP_LEVEL`): which branch binds the name is the
    package's decision. ``fix`` verifies each offered fix before writing it: a name the package
    itself uses, or an importer it cannot rewrite, rules one out."""
    if find_reexport_hop(violation) is None:
        return ()
    refused = fix_refusals(violation, source, target_versions)
    return tuple(kind for kind in FixKind if kind not in refused)


def _star_names_unknown(violation: Violation, node: ast.ImportFrom) -> bool:
    """Whether ``from .x import *`` binds names that cannot be listed from the submodule's source
    next to the package's ``__init__.py``: it has no literal ``__all__`` and a star import of its
    own, or it has no source (the planner lists the names the same way)."""
    base = _from_base(violation.light, node)
    if not any(alias.name == "*" for alias in node.names) or base is None:
        return False
    parts = base[len(violation.light) + 1:].split(".") if base != violation.light else []
    where = violation.path.parent.joinpath(*parts)
    for candidate in (where.with_name(where.name + ".py"), where / "__init__.py"):
        try:
            tree = ast.parse(read_regular_file(candidate)[1], str(candidate))
        except (OSError, SyntaxError, ValueError):
            continue
        for statement in tree.body:
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and any(
                    isinstance(t, ast.Name) and t.id == "__all__"
                    for t in (statement.targets if isinstance(statement, ast.Assign)
                              else [statement.target])):
                value = statement.value
                return not (isinstance(value, (ast.List, ast.Tuple)) and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts))
        return any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
                   for n in tree.body)
    return True


def _from_base(package: str, node: ast.ImportFrom) -> str | None:
    """The absolute module a from-import in the package's ``__init__.py`` names."""
    if not node.level:
        return node.module
    parts = package.split(".")
    if node.level - 1 >= len(parts):
        return None
    base = parts[:len(parts) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def module_level_binding_lines(tree: ast.Module, name: str) -> list[int]:
    """The lines of every module-level binding of ``name``: a ``def``/``class``, an assignment
    target, an import, also under ``if``/``try``/``with``/``for`` (function and class bodies are
    their own scopes and left out)."""
    lines: list[int] = []
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                lines.append(node.lineno)
            continue
        if isinstance(node, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
            lines.append(node.lineno)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            lines.extend(node.lineno for a in node.names
                         if (a.asname or a.name.partition(".")[0]) == name)
        pending.extend(ast.iter_child_nodes(node))
    return sorted(lines)
