"""The import-time graph: which modules each module makes run when it is imported, and the chains.

Nodes are dotted module names (``str``). An edge (a :class:`Hop`) says: executing ``module`` runs the
statement at ``path:line`` which makes ``imported`` run. Edges are built lazily, one module at a time,
from the facts of :mod:`flake8_importpolicy.analysis.extract` and path search in
:mod:`flake8_importpolicy.analysis.resolve`; only modules that are reached are parsed.

Edges follow CPython's import system (docs/semantics.md):

- ``import a.b.c`` runs ``a``, ``a.b`` and ``a.b.c`` (rule 1; the hops to ``a`` and ``a.b`` have kind
  ``parent-package``);
- ``from p import name`` runs ``p`` and, when ``p`` does not bind ``name`` and a submodule ``p.name``
  exists, ``p.name`` (rule 2, ``importlib._bootstrap._handle_fromlist``);
- ``from p import *`` runs ``p`` and the submodules listed in ``p.__all__`` that ``p`` does not bind
  (rule 3);
- relative imports resolve against ``__package__`` (rule 4, ``importlib._bootstrap._resolve_name``);
- a call at import time to a first-party function runs its body (rule 16): the function is a node
  named ``module:qualname`` (``mypkg.helpers:setup``, ``mypkg.models:Model.__init__``) reached by a
  hop of kind ``call``; calls are followed ``call_depth`` deep;
- ``from p import name``, where ``p`` does not bind ``name`` and defines a module-level
  ``__getattr__``, runs that ``__getattr__`` (rule 15, PEP 562; ``_handle_fromlist`` calls
  ``hasattr``): hop kind ``getattr-trigger``;
- a call to a ``[heavy-calls]`` function is a leaf node named ``qualname()`` (``torch.cuda.init()``);
- a PEP 810 lazy import runs only where import-time code uses a name it binds: hop kind
  ``lazy-used`` at the use's line (rule 17).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final

from flake8_importpolicy.analysis.resolve import ModuleIndex
from flake8_importpolicy.model.facts import (
    CallSite,
    FunctionFacts,
    ImportSite,
    ModuleFacts,
    SourceProblem,
)
from flake8_importpolicy.model.graph import (
    CallNode,
    Flag,
    FunctionNode,
    Hop,
    HopKind,
    UnknownImport,
    module_of,
)
from flake8_importpolicy.model.interpreter import ResolvedModule

__all__ = ["ImportGraph", "is_compiled_only", "resolve_relative"]

_CLASS_HOOKS: Final = {
    "call": ("__new__", "__init__"),
    "class-attribute": ("__new__", "__init__", "__set_name__"),
    "metaclass": ("__prepare__", "__new__", "__init__"),
    "subclass": ("__init_subclass__",),
    "decorator-factory": ("__new__", "__init__"),
}
_ALIAS_DEPTH: Final = 5


FactsProvider = Callable[[ResolvedModule], ModuleFacts]
"""Returns the import facts of a module with source (parses it, or reads a cache)."""

FunctionFactsProvider = Callable[[ResolvedModule, str], FunctionFacts | SourceProblem | None]
"""Returns the facts of one function body of a module (asked only when a call reaches it), None
if the module has no function of that qualified name, or why the module's source cannot be analysed
(a syntax error inside that body: module facts come from a parse without function bodies)."""


class ImportGraph:
    """Lazily built graph of import-time edges between modules.

    Args:
        index: resolves module names to files.
        facts: returns a module's :class:`ModuleFacts` (parsing is done there, so it can be cached).
        ignore: optional predicate ``(importer, imported) -> bool``; matching edges are removed (the
            policy's ``[[ignore]]`` entries). It is called once per distinct edge.
        call_depth: how many nested import-time calls are followed (``settings.call-depth``).
        is_heavy_call: optional predicate on a called function's dotted name (``[heavy-calls]``).
        function_facts: returns the facts of one function body of a module (default: those in its
            :class:`ModuleFacts`).
    """

    def __init__(
        self,
        index: ModuleIndex,
        facts: FactsProvider,
        ignore: Callable[[str, str], bool] | None = None,
        *,
        call_depth: int = 3,
        is_heavy_call: Callable[[str], bool] | None = None,
        function_facts: FunctionFactsProvider | None = None,
    ) -> None:
        self.index = index
        self._facts_provider = facts
        self._ignore = ignore
        self.call_depth = call_depth
        self._is_heavy_call = is_heavy_call
        self._function_facts_provider = function_facts
        self._function_facts: dict[tuple[str, str], FunctionFacts | None] = {}
        self._function_problems: dict[tuple[str, str], SourceProblem] = {}
        self._edges: dict[str, tuple[Hop, ...]] = {}
        self._first_star: dict[str, int] = {}  # package -> line of its first star import (or 1e9)
        self._facts: dict[str, ModuleFacts | None] = {}
        self._unknown: dict[str, tuple[UnknownImport, ...]] = {}

    # -- per-module queries ------------------------------------------------------------------------

    def get_facts(self, module: str) -> ModuleFacts | None:
        """The import facts of ``module``, or None if it has no analysable source."""
        module = module_of(module)
        if module not in self._facts:
            resolved = self.index.resolve_module(module)
            if resolved.has_source:
                self._facts[module] = self._facts_provider(resolved)
            elif is_compiled_only(resolved):  # runs code nobody can read: unanalysable (IPL005)
                self._facts[module] = ModuleFacts(problem=SourceProblem(1, _COMPILED_ONLY))
            else:
                self._facts[module] = None
        return self._facts[module]

    def get_function_facts(self, module: str, qualname: str) -> FunctionFacts | None:
        """The facts of the function body ``qualname`` of ``module`` (None if it has no such
        function, or no analysable source)."""
        module = module_of(module)
        key = (module, qualname)
        if key in self._function_facts:
            return self._function_facts[key]
        facts = self.get_facts(module)
        found: FunctionFacts | None = None
        if facts is not None and facts.problem is None:
            if facts.functions or self._function_facts_provider is None:
                found = facts.functions.get(qualname)
            else:
                provided = self._function_facts_provider(self.index.resolve_module(module), qualname)
                if isinstance(provided, SourceProblem):
                    self._function_problems[key] = provided
                else:
                    found = provided
        self._function_facts[key] = found
        return found

    def find_problem(self, module: str) -> SourceProblem | None:
        """Why ``module``'s source could not be analysed, or None. For a function node
        (``"a.b:f"``): also a syntax error in that function's body, which the module-level
        extraction does not parse (so the call's chain stops there)."""
        if isinstance(module, CallNode):
            return None
        facts = self.get_facts(module_of(module))
        if facts is None or facts.problem is not None or not isinstance(module, FunctionNode):
            return facts.problem if facts is not None else None
        self.get_function_facts(module.module, module.qualname)
        return self._function_problems.get((module.module, module.qualname))

    def find_import_time_edges(self, module: str) -> tuple[Hop, ...]:
        """The hops from ``module`` to every module its own import-time statements make run.

        Sorted by ``(line, col, imported)``. Empty for modules whose code is not analysed (extension,
        namespace, builtin, unresolved, or a source with a syntax error). Parent packages of ``module``
        itself are not included (see :meth:`find_parent_hops`).
        """
        cached = self._edges.get(module)
        if cached is not None:
            return cached
        owner = module_of(module)
        facts = None if isinstance(module, CallNode) else self.get_facts(owner)
        hops: list[Hop] = []
        unknown: list[UnknownImport] = []
        if facts is not None and facts.problem is None:
            resolved = self.index.resolve_module(owner)
            sites: tuple[ImportSite, ...] = facts.sites
            calls: tuple[CallSite, ...] = facts.calls
            if isinstance(module, FunctionNode):
                function_facts = self.get_function_facts(owner, module.qualname)
                sites = function_facts.sites if function_facts else ()
                calls = function_facts.calls if function_facts else ()
            for site in sites:
                if site.target is None:
                    unknown.append(
                        UnknownImport(module, resolved.path, site.line, site.col, site.detail)
                    )
                    continue
                hops.extend(self._hops_for_site(module, resolved, site))
            for call in calls:
                hops.extend(self._hops_for_call(module, resolved, call))
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
        hops = (
            Hop(module, path, 1, 0, HopKind.PARENT_PACKAGE, ".".join(parts[:i]))
            for i in range(1, len(parts))
        )
        return tuple(h for h in hops if not (self._ignore and self._ignore(module, h.imported)))

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
            if hop.kind is HopKind.CALL and self.call_depth < 1:
                continue
            if hop.imported not in visited:
                visited.add(hop.imported)
                queue.append((hop.imported, (hop,)))
        while queue:
            name, chain = queue.popleft()
            yield name, chain
            if expand is not None and not expand(name):
                continue
            nested_calls = _trailing_calls(chain)
            for hop in self.find_import_time_edges(name):
                if hop.kind is HopKind.CALL and nested_calls + 1 > self.call_depth:
                    continue
                if hop.imported not in visited:
                    visited.add(hop.imported)
                    queue.append((hop.imported, (*chain, hop)))

    # -- edge construction -------------------------------------------------------------------------

    def _hops_for_site(
        self, node: str, resolved: ResolvedModule, site: ImportSite
    ) -> Iterator[Hop]:
        module = module_of(node)
        base = resolve_relative(site, module, resolved.is_package)
        if base is None:
            return
        path = resolved.path
        parts = base.split(".")
        kind = HopKind(site.kind)
        line, col = site.line, site.col
        if site.lazy_use_line is not None:
            kind, line, col = HopKind.LAZY_USED, site.lazy_use_line, 0
        for i in range(1, len(parts)):
            yield Hop(node, path, line, col, HopKind.PARENT_PACKAGE, ".".join(parts[:i]), site.flags)
        yield Hop(node, path, line, col, kind, base, site.flags)
        if site.kind == "from-import" or (site.kind == "importlib" and site.names):
            # ``__import__("p", fromlist=[...])`` handles its fromlist like ``from p import ...``
            fromlist_flags: tuple[Flag, ...] | None = None
            for name in site.names:
                found = self._submodule_run_by_fromlist(base, name, module, site.line)
                if found is not None:
                    if fromlist_flags is None:  # the base's facts are read only when needed
                        fromlist_flags = self._fromlist_flags(base, module, site.flags)
                    submodule, uncertain = found
                    hop_flags = (
                        tuple(sorted({*fromlist_flags, Flag.CONDITIONAL})) if uncertain else fromlist_flags
                    )
                    yield Hop(node, path, line, col, kind, submodule, hop_flags)
                trigger = self._getattr_trigger(base, name, module)
                if trigger is not None:
                    yield Hop(node, path, line, col, HopKind.GETATTR_TRIGGER, trigger, site.flags)
        elif site.kind == "star-import":
            base_facts = self.get_facts(base)
            if base_facts is not None and base_facts.all_names:
                flags = site.flags
                if base_facts.all_conditional:
                    flags = tuple(sorted({*flags, Flag.CONDITIONAL}))
                for name in base_facts.all_names:
                    found = self._submodule_run_by_fromlist(base, name, module, site.line)
                    if found is not None:
                        submodule, uncertain = found
                        hop_flags = tuple(sorted({*flags, Flag.CONDITIONAL})) if uncertain else flags
                        yield Hop(node, path, line, col, kind, submodule, hop_flags)
            elif base_facts is not None and base_facts.all_names is None:
                trigger = self._getattr_trigger(base, "__all__", module)
                if trigger is not None:
                    yield Hop(node, path, line, col, HopKind.GETATTR_TRIGGER, trigger, site.flags)

    def _fromlist_flags(
        self, base: str, module: str, flags: tuple[Flag, ...]
    ) -> tuple[Flag, ...]:
        """The flags of a submodule run by a fromlist: ``conditional`` added when ``base`` has a
        star-import, which may bind the name first (then ``_handle_fromlist`` imports nothing)."""
        base_facts = self.get_facts(base) if base != module else None
        if base_facts is not None and any(s.kind == "star-import" for s in base_facts.sites):
            return tuple(sorted({*flags, Flag.CONDITIONAL}))
        return flags

    def _getattr_trigger(self, package: str, name: str, importer: str) -> FunctionNode | None:
        """``from package import name`` calls ``package.__getattr__(name)`` when the module binds no
        ``name`` and defines a module-level ``__getattr__`` (PEP 562; ``_handle_fromlist`` calls
        ``hasattr(package, name)`` first). Returns the function node, or None."""
        if package == importer or self.index.resolve_module(package).origin != "first-party":
            return None
        facts = self.get_facts(package)
        if facts is None or not facts.defines_getattr or name in facts.bindings:
            return None
        return FunctionNode(package, "__getattr__")

    def _hops_for_call(self, node: str, resolved: ResolvedModule, call: CallSite) -> Iterator[Hop]:
        module = module_of(node)
        for target in self._resolve_call(module, resolved.is_package, call):
            yield Hop(node, resolved.path, call.line, call.col, HopKind.CALL, target, call.flags)

    def _resolve_call(self, module: str, is_package: bool, call: CallSite) -> list[str]:
        """The nodes a call runs: first-party function bodies, or a ``[heavy-calls]`` leaf."""
        if call.local:
            return self._lookup(module, call.callee, call.kind, 0)
        name = _absolute(call.callee, module, is_package)
        if name is None:
            return []
        return self._lookup_dotted(name, call.kind, 0)

    def _lookup_dotted(self, name: str, kind: str, depth: int) -> list[str]:
        if self._is_heavy_call is not None and self._is_heavy_call(name):
            return [CallNode(name)]
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            owner = ".".join(parts[:cut])
            resolved = self.index.resolve_module(owner)
            if resolved.kind == "unresolved":
                continue
            if resolved.origin != "first-party" or not resolved.has_source:
                return []
            return self._lookup(owner, ".".join(parts[cut:]), kind, depth)
        return []

    def _lookup(self, module: str, attribute: str, kind: str, depth: int) -> list[str]:
        """Function nodes run by calling ``attribute`` (dotted) of first-party ``module``."""
        facts = self.get_facts(module)
        if facts is None or facts.problem is not None or depth > _ALIAS_DEPTH:
            return []
        if attribute in facts.function_names or attribute in facts.functions:
            nodes: list[str] = [FunctionNode(module, attribute)]
            if kind == "decorator-factory":
                body = self.get_function_facts(module, attribute)
                returned = body.returns if body is not None else ()
                nodes += [FunctionNode(module, f"{attribute}.<locals>.{name}") for name in returned]
            if kind in ("call", "decorator-factory"):
                return nodes
            return []
        if attribute in facts.classes:
            return [
                FunctionNode(module, f"{attribute}.{hook}")
                for hook in _CLASS_HOOKS.get(kind, ())
                if f"{attribute}.{hook}" in facts.function_names
                or f"{attribute}.{hook}" in facts.functions
            ]
        first, _, rest = attribute.partition(".")
        target = facts.aliases.get(first)
        if target is None:
            return []
        resolved = self.index.resolve_module(module)
        absolute = _absolute(f"{target}.{rest}" if rest else target, module, resolved.is_package)
        if absolute is None:
            return []
        return self._lookup_dotted(absolute, kind, depth + 1)

    def _submodule_run_by_fromlist(
        self, package: str, name: str, importer: str, line: int = 0
    ) -> tuple[str, bool] | None:
        """``from package import name`` runs ``package.name`` if it is a submodule not bound by package.

        Source: ``importlib._bootstrap._handle_fromlist``, which imports ``package.name`` only when
        ``not hasattr(package, name)``. A package whose source is not analysed (not followed,
        extension, namespace) is assumed not to bind the name. In the package itself
        (``from . import name`` in its ``__init__``) the binding is made by this very import, so it
        does not count.

        Returns:
            ``(submodule, uncertain)``, or None when no submodule runs. ``uncertain`` is True when the
            answer depends on import order (a circular import may see the package half-initialised).
        """
        resolved_package = self.index.resolve_module(package)
        candidate = f"{package}.{name}"
        if resolved_package.kind == "unresolved":
            return (candidate, False) if name.isidentifier() else None
        if not resolved_package.is_package:
            return None
        if self.index.resolve_module(candidate).kind == "unresolved":
            return None
        if package == importer:
            return self._self_fromlist(package, name, line, candidate)
        facts = self.get_facts(package)
        if facts is not None and name in facts.bindings:
            if self._bound_after_importer_runs(package, facts, name, importer):
                # Circular import: the package's __init__ may still be running, so ``name`` may not
                # be bound yet and the submodule runs. Flagged conditional: it depends on the
                # order of imports.
                return candidate, True
            return None
        return candidate, False

    def _bound_after_importer_runs(
        self, package: str, facts: ModuleFacts, name: str, importer: str
    ) -> bool:
        """True if ``importer`` may run while ``package``'s ``__init__`` has not bound ``name`` yet.

        Two shapes: ``importer`` is inside the package and ``name`` is bound at or after the
        package's first import of its own submodules (a binding made by an import statement exists
        only once that import returns); or the statement that binds ``name`` runs ``importer`` (it
        imports ``importer`` or a module inside it: ``from other.registry import name``, where
        ``other.registry`` does ``from package import name``).
        """
        line = facts.binding_lines.get(name, 0)
        if importer.startswith(package + ".") and line >= self._first_internal_import(package, facts):
            return True
        for site in facts.sites:
            imported = resolve_relative(site, package, True) if site.line == line else None
            if imported is None:
                continue
            for module in (imported, *(f"{imported}.{sub}" for sub in site.names)):
                if module == importer or module.startswith(importer + "."):
                    return True
        return False

    def _self_fromlist(
        self, package: str, name: str, line: int, candidate: str
    ) -> tuple[str, bool] | None:
        """``from . import name`` in the package's own ``__init__`` at ``line``: the submodule runs
        unless ``name`` was bound by an earlier statement; an earlier star import may have bound it
        (uncertain)."""
        facts = self.get_facts(package)
        if facts is None:
            return candidate, False
        if facts.binding_lines.get(name, line) < line:
            return None
        first_star = self._first_star.get(package)
        if first_star is None:  # once per package: an __init__ of 10,000 from-imports asks 10,000 times
            lines = [site.line for site in facts.sites if site.kind == "star-import"]
            first_star = self._first_star[package] = min(lines, default=10**9)
        return candidate, first_star < line

    def _first_internal_import(self, package: str, facts: ModuleFacts) -> int:
        """The first line at which ``package``'s own code imports one of its submodules (or 1e9)."""
        lines = [
            site.line for site in facts.sites
            if site.level > 0 or (site.target or "").startswith(package + ".")
        ]
        return min(lines, default=10**9)


_COMPILED_ONLY: Final = "no source, only compiled bytecode (.pyc)"


def is_compiled_only(resolved: ResolvedModule) -> bool:
    """A first-party module found as a ``.pyc`` file without its source: it runs, but what it imports
    cannot be known (reported as unanalysable, not taken to import nothing)."""
    return resolved.kind == "bytecode" and resolved.origin == "first-party" and resolved.path is not None


def _trailing_calls(chain: Sequence[Hop]) -> int:
    count = 0
    for hop in reversed(chain):
        if hop.kind is not HopKind.CALL:
            break
        count += 1
    return count


def _absolute(dotted: str, module: str, is_package: bool) -> str | None:
    """Resolve a possibly relative dotted name (``.helpers.setup``) against ``module``."""
    level = len(dotted) - len(dotted.lstrip("."))
    if not level:
        return dotted
    site = ImportSite(line=0, col=0, kind="import", target=dotted[level:], level=level)
    return resolve_relative(site, module, is_package)


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
