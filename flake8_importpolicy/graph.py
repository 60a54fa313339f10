"""The import-time graph: which modules each module makes run when it is imported, and the chains.

Nodes are dotted module names (``str``). An edge (a :class:`Hop`) says: executing ``module`` runs the
statement at ``path:line`` which makes ``imported`` run. Edges are built lazily, one module at a time,
from the facts of :mod:`flake8_importpolicy.extract` and path search in
:mod:`flake8_importpolicy.resolve`; only modules that are reached are parsed.

Edges follow CPython's import system (``shared/SEMANTICS.md``):

- ``import a.b.c`` runs ``a``, ``a.b`` and ``a.b.c`` (rule 1; the hops to ``a`` and ``a.b`` have kind
  ``parent-package``);
- ``from p import name`` runs ``p`` and, when ``p`` does not bind ``name`` and a submodule ``p.name``
  exists, ``p.name`` (rule 2, ``importlib._bootstrap._handle_fromlist``);
- ``from p import *`` runs ``p`` and the submodules listed in ``p.__all__`` that ``p`` does not bind
  (rule 3);
- relative imports resolve against ``__package__`` (rule 4, ``importlib._bootstrap._resolve_name``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from flake8_importpolicy.extract import ImportSite, ModuleFacts, SourceProblem
from flake8_importpolicy.resolve import ModuleIndex, ResolvedModule

__all__ = [
    "PARENT_PACKAGE",
    "Hop",
    "ImportGraph",
    "UnknownImport",
    "resolve_relative",
]

PARENT_PACKAGE: Final = "parent-package"


@dataclass(frozen=True, order=True)
class Hop:
    """One edge of an import chain: running ``module`` makes ``imported`` run.

    Attributes:
        module: the importing module.
        path: the importing module's file (``None`` only for modules without a file).
        line: 1-based first line of the importing statement (1 for a light module's parent packages).
        col: 0-based column of that statement.
        kind: ``import``, ``from-import``, ``star-import``, ``importlib`` or ``parent-package``.
        imported: the module the statement makes run.
        flags: sorted subset of ``guarded``, ``conditional``, ``fallback``.
    """

    module: str
    path: Path | None
    line: int
    col: int
    kind: str
    imported: str
    flags: tuple[str, ...] = ()

    def sort_key(self) -> tuple[int, int, str]:
        """The tie-break order between hops of equal chain length: ``(line, col, imported)``."""
        return (self.line, self.col, self.imported)


@dataclass(frozen=True)
class UnknownImport:
    """A dynamic import whose target is not a literal (``importlib.import_module(name)``).

    Attributes:
        module: the module that runs it; path, line, col: where; detail: the call's source text.
    """

    module: str
    path: Path | None
    line: int
    col: int
    detail: str


FactsProvider = Callable[[ResolvedModule], ModuleFacts]
"""Returns the import facts of a module with source (parses it, or reads a cache)."""


class ImportGraph:
    """Lazily built graph of import-time edges between modules.

    Args:
        index: resolves module names to files.
        facts: returns a module's :class:`ModuleFacts` (parsing is done there, so it can be cached).
        ignore: optional predicate ``(importer, imported) -> bool``; matching edges are removed (the
            policy's ``[[ignore]]`` entries). It is called once per distinct edge.
    """

    def __init__(
        self,
        index: ModuleIndex,
        facts: FactsProvider,
        ignore: Callable[[str, str], bool] | None = None,
    ) -> None:
        self.index = index
        self._facts_provider = facts
        self._ignore = ignore
        self._edges: dict[str, tuple[Hop, ...]] = {}
        self._facts: dict[str, ModuleFacts | None] = {}
        self._unknown: dict[str, tuple[UnknownImport, ...]] = {}

    # -- per-module queries ------------------------------------------------------------------------

    def get_facts(self, module: str) -> ModuleFacts | None:
        """The import facts of ``module``, or None if it has no analysable source."""
        if module not in self._facts:
            resolved = self.index.resolve_module(module)
            self._facts[module] = self._facts_provider(resolved) if resolved.has_source else None
        return self._facts[module]

    def find_problem(self, module: str) -> SourceProblem | None:
        """Why ``module``'s source could not be analysed, or None."""
        facts = self.get_facts(module)
        return facts.problem if facts is not None else None

    def find_import_time_edges(self, module: str) -> tuple[Hop, ...]:
        """The hops from ``module`` to every module its own import-time statements make run.

        Sorted by ``(line, col, imported)``. Empty for modules whose code is not analysed (extension,
        namespace, builtin, unresolved, or a source with a syntax error). Parent packages of ``module``
        itself are not included (see :meth:`find_parent_hops`).
        """
        cached = self._edges.get(module)
        if cached is not None:
            return cached
        facts = self.get_facts(module)
        hops: list[Hop] = []
        unknown: list[UnknownImport] = []
        if facts is not None and facts.problem is None:
            resolved = self.index.resolve_module(module)
            for site in facts.sites:
                if site.target is None:
                    unknown.append(
                        UnknownImport(module, resolved.path, site.line, site.col, site.detail)
                    )
                    continue
                hops.extend(self._hops_for_site(module, resolved, site))
        unique = {(h.line, h.col, h.imported): h for h in hops if h.imported != module}
        edges = tuple(sorted(
            (h for h in unique.values() if not (self._ignore and self._ignore(module, h.imported))),
            key=Hop.sort_key,
        ))
        self._edges[module] = edges
        self._unknown[module] = tuple(unknown)
        return edges

    def find_unknown_imports(self, module: str) -> tuple[UnknownImport, ...]:
        """Dynamic imports of ``module`` whose target is not a literal."""
        self.find_import_time_edges(module)
        return self._unknown.get(module, ())

    def find_parent_hops(self, module: str) -> tuple[Hop, ...]:
        """Pseudo-hops from ``module`` to its parent packages, which run before it (rule 1).

        Each has kind ``parent-package`` at line 1, column 0 of ``module``'s file.
        """
        path = self.index.resolve_module(module).path
        parts = module.split(".")
        return tuple(
            Hop(module, path, 1, 0, PARENT_PACKAGE, ".".join(parts[:i]))
            for i in range(1, len(parts))
        )

    # -- traversal ---------------------------------------------------------------------------------

    def find_import_time_closure(
        self, module: str, *, expand: Callable[[str], bool] | None = None
    ) -> dict[str, tuple[Hop, ...]]:
        """Every module that importing ``module`` makes run, each with one shortest chain to it.

        Args:
            module: the module imported in a fresh interpreter.
            expand: predicate deciding whether a reached module's own imports are followed (default:
                all). Modules not expanded are still in the result (as leaves).

        Returns:
            ``{module name: chain}``, where the chain is the tuple of hops from ``module`` (empty for
            ``module`` itself), shortest first, ties broken by ``(line, col, imported)`` of each hop.
            Parent packages of ``module`` are included.
        """
        start = (*self.find_parent_hops(module), *self.find_import_time_edges(module))
        result: dict[str, tuple[Hop, ...]] = {module: ()}
        for name, chain in self.iter_breadth_first(start, expand=expand, seen={module}):
            result[name] = chain
        return result

    def iter_breadth_first(
        self,
        start: Sequence[Hop],
        *,
        expand: Callable[[str], bool] | None = None,
        seen: Iterable[str] = (),
    ) -> Iterator[tuple[str, tuple[Hop, ...]]]:
        """Yield ``(module, chain)`` for every module reachable from the hops ``start``.

        Modules come in breadth-first order, each once with its shortest chain; among chains of equal
        length the one whose hops compare smallest in order by ``(line, col, imported)`` wins (``start``
        is taken in that order, and each module's edges are sorted the same way).
        """
        visited = set(seen)
        queue: deque[tuple[str, tuple[Hop, ...]]] = deque()
        for hop in sorted(start, key=Hop.sort_key):
            if hop.imported not in visited:
                visited.add(hop.imported)
                queue.append((hop.imported, (hop,)))
        while queue:
            name, chain = queue.popleft()
            yield name, chain
            if expand is not None and not expand(name):
                continue
            for hop in self.find_import_time_edges(name):
                if hop.imported not in visited:
                    visited.add(hop.imported)
                    queue.append((hop.imported, (*chain, hop)))

    # -- edge construction -------------------------------------------------------------------------

    def _hops_for_site(
        self, module: str, resolved: ResolvedModule, site: ImportSite
    ) -> Iterator[Hop]:
        base = resolve_relative(site, module, resolved.is_package)
        if base is None:
            return
        path = resolved.path
        parts = base.split(".")
        kind = site.kind
        for i in range(1, len(parts)):
            yield Hop(module, path, site.line, site.col, PARENT_PACKAGE, ".".join(parts[:i]),
                      site.flags)
        yield Hop(module, path, site.line, site.col, kind, base, site.flags)
        if kind == "from-import":
            for name in site.names:
                submodule = self._submodule_run_by_fromlist(base, name, module)
                if submodule is not None:
                    yield Hop(module, path, site.line, site.col, kind, submodule, site.flags)
        elif kind == "star-import":
            base_facts = self.get_facts(base)
            if base_facts is not None and base_facts.all_names:
                for name in base_facts.all_names:
                    submodule = self._submodule_run_by_fromlist(base, name, module)
                    if submodule is not None:
                        yield Hop(module, path, site.line, site.col, kind, submodule, site.flags)

    def _submodule_run_by_fromlist(self, package: str, name: str, importer: str) -> str | None:
        """``from package import name`` runs ``package.name`` if it is a submodule not bound by package.

        Source: ``importlib._bootstrap._handle_fromlist``, which imports ``package.name`` only when
        ``not hasattr(package, name)``. A package whose source is not analysed (not followed,
        extension, namespace) is assumed not to bind the name. In the package itself
        (``from . import name`` in its ``__init__``) the binding is made by this very import, so it
        does not count.
        """
        resolved_package = self.index.resolve_module(package)
        candidate = f"{package}.{name}"
        if resolved_package.kind == "unresolved":
            return candidate if name.isidentifier() else None
        if not resolved_package.is_package:
            return None
        if self.index.resolve_module(candidate).kind == "unresolved":
            return None
        facts = self.get_facts(package) if package != importer else None
        if facts is not None and name in facts.bindings:
            return None
        return candidate


def resolve_relative(site: ImportSite, module: str, is_package: bool) -> str | None:
    """The absolute module name an import site names, or None if it climbs above the top level.

    Relative imports resolve against ``__package__`` — ``module`` itself for a package's
    ``__init__``, its parent otherwise — climbing one package per extra dot (PEP 328;
    ``importlib._bootstrap._resolve_name``). ``import_module(".x", __name__)`` resolves against the
    module's own name.
    """
    target = site.target or ""
    if site.level == 0:
        return target or None
    if site.anchor == "__name__":
        anchor = module
    elif site.anchor == "__package__":
        anchor = module if is_package else module.rpartition(".")[0]
    else:
        anchor = site.anchor
    bits = anchor.rsplit(".", site.level - 1) if anchor else []
    if not anchor or len(bits) < site.level:
        return None
    base = bits[0]
    return f"{base}.{target}" if target else base
