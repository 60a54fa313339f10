"""Import sites and their PEP 810 bookkeeping (docs/semantics.md rules 1-4 and 17) and a module's
``__all__``, recorded for the import-time walker; it never calls back into the walker."""

from __future__ import annotations

import ast
import dataclasses

from flake8_importpolicy.analysis.importtime.flow import Flow
from flake8_importpolicy.model.facts import Guard, ImportSite, SiteKind, Target
from flake8_importpolicy.model.graph import Flag

__all__ = ["SiteRecorder", "literal_strings"]


class SiteRecorder:
    """The import sites a walker found, in order, what decides whether a PEP 810 lazy one runs at
    import time (the names it binds, the lines names are used on), and a literal ``__all__``."""

    def __init__(self, target: Target, flow: Flow, lazy_lines: dict[int, int] | None) -> None:
        self.target = target
        self.flow = flow
        self.sites: list[ImportSite] = []
        # PEP 810: ``{line: column}`` of statements written ``lazy import ...``
        self.lazy_lines: dict[int, int] = {} if lazy_lines is None else lazy_lines
        self.lazy_bound: dict[int, tuple[str, ...]] = {}  # site index -> names a lazy import binds
        self.bound_by_line: dict[int, tuple[str, ...]] = {}  # module-level import line -> names
        self.top_level_lines: set[int] = set()  # lines of imports outside any class body
        self.used_names: dict[str, list[int]] = {}  # name -> lines import-time code reads it on
        self.lazy_modules: list[str] = []  # ``__lazy_modules__``
        self.all_names: list[str] | None = None
        self.all_unknown: bool = False
        self.all_conditional: bool = False

    def forget_all(self) -> None:
        """``del __all__``."""
        self.all_names, self.all_unknown, self.all_conditional = None, False, False

    def lazy_col(self, stmt: ast.stmt) -> int | None:
        """The original column of a ``lazy import`` statement, or None for an eager import."""
        if self.flow.module_level() and stmt.lineno in self.lazy_lines:
            return self.lazy_lines[stmt.lineno]
        return None

    def add(
        self,
        stmt: ast.stmt | ast.expr,
        kind: SiteKind,
        target: str | None,
        flags: frozenset[Flag],
        *,
        level: int = 0,
        anchor: str = "__package__",
        names: tuple[str, ...] = (),
        detail: str = "",
        col: int | None = None,
        lazy_names: tuple[str, ...] | None = None,
    ) -> None:
        if lazy_names is not None:
            self.lazy_bound[len(self.sites)] = lazy_names
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) and self.flow.module_level():
            bound = tuple(alias.asname or alias.name.split(".", 1)[0] for alias in stmt.names)
            self.bound_by_line[stmt.lineno] = bound
            if not self.flow.class_path:
                self.top_level_lines.add(stmt.lineno)
        self.sites.append(
            ImportSite(
                line=stmt.lineno,
                col=stmt.col_offset if col is None else col,
                kind=kind,
                target=target,
                level=level,
                anchor=anchor,
                names=names,
                flags=tuple(sorted(flags)),
                detail=detail,
                guard=Guard.of(self.flow.requirement),
                assumed=self.flow.assumed_once(),
                after=self.flow.after,
                loaded=self.flow.loaded,
                when=self.flow.when,
            )
        )

    def finish(self) -> list[ImportSite]:
        """The import sites with PEP 810 applied for the target versions and lazy-imports mode.

        A lazy import runs at import time only if a name it binds is used by import-time code after
        it (then ``lazy_use_line`` is that use's line). ``__lazy_modules__`` makes imports of the
        listed modules lazy on Python 3.15+ only; with older target versions too they stay eager,
        flagged ``eager-before-3.15``.
        """
        mode = self.target.lazy_imports
        new_enough = [version >= (3, 15) for version in self.target.versions]
        listed = set(self.lazy_modules)
        out: list[ImportSite] = []
        for index, site in enumerate(self.sites):
            names = self.lazy_bound.get(index)
            if mode == "all" and names is None and site.kind in ("import", "from-import"):
                if site.line not in self.top_level_lines or Flag.GUARDED in site.flags \
                        or Flag.FALLBACK in site.flags:
                    names = None
                else:
                    names = self.bound_by_line.get(site.line)
            if names is None and listed and site.target in listed and site.level == 0:
                if all(new_enough):
                    names = self.bound_by_line.get(site.line)
                elif any(new_enough):
                    site = _with_flag(site, Flag.EAGER_BEFORE_315)
            if names is None or mode == "none":
                out.append(site)
                continue
            uses = [line for name in names for line in self.used_names.get(name, ()) if line > site.line]
            if uses:
                out.append(dataclasses.replace(site, lazy_use_line=min(uses)))
        return out

    def record_all(
        self, stmt: ast.Assign | ast.AnnAssign | ast.AugAssign, flags: frozenset[Flag]
    ) -> None:
        """Track a literal ``__all__``. ``+=`` of a non-literal keeps the names known so far; an
        assignment under a condition that cannot be evaluated adds to them (both branches may run)."""
        targets: list[ast.expr] = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return
        names = literal_strings(stmt.value)
        if isinstance(stmt, ast.AugAssign) or Flag.CONDITIONAL in flags:
            self.all_names = [*(self.all_names or []), *(names or [])]
            self.all_conditional = self.all_conditional or Flag.CONDITIONAL in flags
        elif names is None:
            self.all_unknown = True
        else:
            self.all_names = list(names)
            self.all_unknown = False

    def all_mutation(self, call: ast.Call) -> None:
        func = call.func
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "__all__"
            and self.flow.module_level()
        ):
            return
        if func.attr == "extend" and len(call.args) == 1:
            names = literal_strings(call.args[0])
        elif func.attr == "append" and len(call.args) == 1:
            names = literal_strings(ast.List(elts=[call.args[0]]))
        else:
            names = None
        self.all_names = [*(self.all_names or []), *(names or [])]


def _with_flag(site: ImportSite, flag: Flag) -> ImportSite:
    return dataclasses.replace(site, flags=tuple(sorted({*site.flags, flag})))


def literal_strings(node: ast.expr | None) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        out: list[str] = []
        for element in node.elts:
            if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
                return None
            out.append(element.value)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = literal_strings(node.left), literal_strings(node.right)
        return None if left is None or right is None else left + right
    return None
