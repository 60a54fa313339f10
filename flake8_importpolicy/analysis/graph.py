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

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final

from flake8_importpolicy.analysis.resolve import ModuleIndex
from flake8_importpolicy.model.facts import (
    AttributeRead,
    CallBinding,
    CallSite,
    FunctionFacts,
    ImportSite,
    ModuleFacts,
    PathChange,
    SourceProblem,
    UnresolvedSite,
)
from flake8_importpolicy.model.graph import (
    Construct,
    CallNode,
    Flag,
    FunctionNode,
    Hop,
    HopKind,
    UnresolvedCode,
    module_of,
)
from flake8_importpolicy.model.interpreter import ResolvedModule

__all__ = ["ImportGraph", "is_compiled_only", "resolve_relative"]

_CLASS_HOOKS: Final = {
    # ``__post_init__``: a dataclass's generated ``__init__`` calls it
    "call": ("__new__", "__init__", "__post_init__"),
    "with": ("__enter__", "__exit__"),
    "class-attribute": ("__new__", "__init__", "__post_init__", "__set_name__"),
    "metaclass": ("__prepare__", "__new__", "__init__"),
    "subclass": ("__init_subclass__",),
    "decorator-factory": ("__new__", "__init__", "__post_init__"),
}
_ALIAS_DEPTH: Final = 5
_MAX_BASES: Final = 64
"""Classes visited at most when a member is looked up in the bases of one class."""
_ATTRIBUTE_HOOKS: Final = frozenset({"__getattr__", "__getattribute__", "__dir__"})
_MAX_GETATTR_NAMES: Final = 64
"""Names a module's ``__getattr__`` is analysed for one by one; beyond them it is analysed once
for any name (its conditions on the name unknown), so the cost stays bounded."""

_LAZY_MODULE_UNKNOWN: Final = -1
"""What :meth:`ImportGraph._lazy_class` returns for a class whose instances import a module on
attribute access when which module is not computable (a stored argument it cannot follow)."""
_NOT_COMPUTABLE: Final = "<not computable>"
"""What :meth:`ImportGraph._lazy_module_bound` returns for a lazy module object whose module is
not computable (never a module name: it is not an identifier)."""


FactsProvider = Callable[[ResolvedModule], ModuleFacts]
"""Returns the import facts of a module with source (parses it, or reads a cache)."""

FunctionFactsProvider = Callable[
    [ResolvedModule, str, "str | None"], FunctionFacts | SourceProblem | None
]
"""Returns the facts of one function body of a module (asked only when a call reaches it), with its
first parameter bound to the given string if any; None if the module has no function of that
qualified name, or why the module's source cannot be analysed (a syntax error inside that body:
module facts come from a parse without function bodies)."""


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
        follows: whether a module's import-time calls and PEP 562 ``__getattr__`` are followed
            (default: first-party modules only).
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
        follows: Callable[[str], bool] | None = None,
    ) -> None:
        self.index = index
        self._facts_provider = facts
        self._ignore = ignore
        self.call_depth = call_depth
        self._is_heavy_call = is_heavy_call
        self._function_facts_provider = function_facts
        self._follows = follows
        self._function_facts: dict[tuple[str, str, str | None], FunctionFacts | None] = {}
        self._function_problems: dict[tuple[str, str, str | None], SourceProblem] = {}
        self._edges: dict[str, tuple[Hop, ...]] = {}
        self._first_star: dict[str, int] = {}  # package -> line of its first star import (or 1e9)
        self._facts: dict[str, ModuleFacts | None] = {}
        self._unresolved: dict[str, tuple[UnresolvedCode, ...]] = {}
        self._lazy_makers: dict[str, int | None] = {}
        self._getattr_names: dict[str, set[str]] = {}  # names each module's __getattr__ is run for
        self._unconditional: dict[str, dict[str, int]] = {}
        self._inherited_found: dict[tuple[str, str, str], list[str]] = {}

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

    def get_function_facts(
        self, module: str, qualname: str, argument: str | None = None
    ) -> FunctionFacts | None:
        """The facts of the function body ``qualname`` of ``module`` (None if it has no such
        function, or no analysable source), with its first parameter bound to ``argument`` when
        that is given (a PEP 562 ``__getattr__`` run for one name)."""
        module = module_of(module)
        key = (module, qualname, argument)
        if key in self._function_facts:
            return self._function_facts[key]
        facts = self.get_facts(module)
        found: FunctionFacts | None = None
        if facts is not None and facts.problem is None:
            if self._function_facts_provider is None or (facts.functions and argument is None):
                found = facts.functions.get(qualname)
            else:
                provided = self._function_facts_provider(
                    self.index.resolve_module(module), qualname, argument
                )
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
        key = (module.module, module.qualname, module.argument)
        self.get_function_facts(*key)
        return self._function_problems.get(key)

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
        unresolved: list[UnresolvedCode] = []
        if facts is not None and facts.problem is None:
            resolved = self.index.resolve_module(owner)
            sites: tuple[ImportSite, ...] = facts.sites
            calls: tuple[CallSite, ...] = facts.calls
            reads: tuple[AttributeRead, ...] = facts.attribute_reads
            cannot: tuple[UnresolvedSite, ...] = facts.unresolved
            dynamic = Construct.DYNAMIC_IMPORT
            if isinstance(module, FunctionNode):
                function_facts = self.get_function_facts(owner, module.qualname, module.argument)
                sites = function_facts.sites if function_facts else ()
                calls = function_facts.calls if function_facts else ()
                reads = function_facts.attribute_reads if function_facts else ()
                cannot = function_facts.unresolved if function_facts else ()
                if module.qualname.rpartition(".")[2] in _ATTRIBUTE_HOOKS:
                    dynamic = Construct.GETATTR_IMPORT
            else:
                self._add_search_locations(resolved, facts.path_changes)
            for site in sites:
                if site.guard and self._all_found(site.guard, module, resolved) != site.guard_resolves:
                    continue  # e.g. the ``except ImportError`` fallback of imports that are found
                if site.target is None:
                    unresolved.append(UnresolvedCode(
                        module, resolved.path, site.line, site.col, dynamic, site.detail, site.flags
                    ))
                    continue
                for hop in self._hops_for_site(module, resolved, site):
                    hops.append(dataclasses.replace(hop, assumed=site.assumed) if site.assumed else hop)
            for call in calls:
                hops.extend(self._hops_for_call(module, resolved, call))
            for read in reads:
                hops.extend(self._hops_for_read(module, resolved, read, unresolved))
            unresolved.extend(
                UnresolvedCode(module, resolved.path, u.line, u.col, u.construct, u.detail, u.flags)
                for u in cannot
            )
        if not isinstance(module, (FunctionNode, CallNode)):
            found = self.index.resolve_module(module)
            if found.found_as is not None:  # the finder imports the real module's parents first
                parts = found.found_as.split(".")
                hops.extend(
                    Hop(module, found.path, 1, 0, HopKind.FINDER, ".".join(parts[:i]))
                    for i in range(1, len(parts))
                )
        unique = {(h.line, h.col, h.imported): h for h in hops if h.imported != module}
        edges = tuple(sorted(
            (
                self._mark_compiled(h) for h in unique.values()
                if not (self._ignore and self._ignore(module, h.imported))
            ),
            key=Hop.sort_key,
        ))
        self._edges[module] = edges
        self._unresolved[module] = tuple(sorted(unresolved, key=lambda u: (u.line, u.col)))
        return edges

    def _all_found(self, names: tuple[str, ...], node: str, resolved: ResolvedModule) -> bool:
        """Whether every module of ``names`` (relative to ``node``'s module) imports without an
        ImportError as far as can be told: path search finds it (an extension module counts) and
        none of its own unconditional imports names a module path search does not find."""
        module = module_of(node)
        for entry in names:
            name, _, imported = entry.partition(":")
            absolute = _absolute(name, module, resolved.is_package)
            if absolute is None or not self._imports_cleanly(absolute):
                return False
            if imported and not all(self._provides(absolute, n) for n in imported.split(",")):
                return False
        return True

    def _provides(self, module: str, name: str) -> bool:
        """Whether ``from module import name`` finds ``name``: bound by the module's code, or a
        submodule (rule 2). An extension module is taken to provide what is imported from it (its
        names cannot be read); a module with a PEP 562 ``__getattr__`` or without analysable
        source otherwise is not known to provide it."""
        facts = self.get_facts(module)
        if facts is None:
            return self.index.resolve_module(module).kind == "extension"
        if facts.problem is not None or facts.defines_getattr:
            return False
        if name in facts.bindings:
            return True
        return self.index.resolve_module(f"{module}.{name}").kind != "unresolved"

    def _imports_cleanly(self, name: str) -> bool:
        found = self.index.resolve_module(name)
        if found.kind == "unresolved":
            return False
        facts = self.get_facts(name)
        if facts is None or facts.problem is not None:
            return facts is None
        for site in facts.sites:
            if site.flags or site.target is None or site.guard:
                continue
            target = resolve_relative(site, name, found.is_package)
            if target is None or self.index.resolve_module(target).kind == "unresolved":
                return False
            if site.kind == "from-import":
                for imported in site.names:
                    if target == name:  # ``from . import x`` in the package itself: a submodule
                        if self.index.resolve_module(f"{name}.{imported}").kind == "unresolved":
                            return False
                    elif not self._provides(target, imported):
                        return False
        return True

    def find_unresolved(self, module: str) -> tuple[UnresolvedCode, ...]:
        """What ``module``'s own import-time code does that cannot be resolved (IPL006), sorted by
        position: dynamic imports of names that are not computable, ``exec`` of strings that are
        not constant, calls through variables, ``sys.path`` changes that are not computable, lazy
        module objects whose module is not computable."""
        self.find_import_time_edges(module)
        return self._unresolved.get(module, ())

    def _add_search_locations(
        self, resolved: ResolvedModule, changes: tuple[PathChange, ...]
    ) -> None:
        """Directories a module adds to ``sys.path`` at import time are searched, after the
        others, for names not found otherwise (rule 7)."""
        if not changes or resolved.path is None:
            return
        for change in changes:
            directory = resolved.path.parent
            for _ in range(change.up):
                directory = directory.parent
            self.index.add_search_location(directory.joinpath(*change.parts))

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
        return tuple(
            self._mark_compiled(h) for h in hops
            if not (self._ignore and self._ignore(module, h.imported))
        )

    def _mark_compiled(self, hop: Hop) -> Hop:
        """``hop`` with the flag ``compiled-twin`` when it runs a mypyc-compiled module (analysed
        through its ``.py`` source)."""
        if isinstance(hop.imported, (FunctionNode, CallNode)):
            return hop
        if not self.index.resolve_module(hop.imported).compiled:
            return hop
        return dataclasses.replace(hop, flags=tuple(sorted({*hop.flags, Flag.COMPILED_TWIN})))

    # -- traversal ---------------------------------------------------------------------------------

    def find_import_time_closure(
        self, module: str, *, expand: Callable[[str], bool] | None = None,
        too_deep: Callable[[Hop, tuple[Hop, ...]], None] | None = None,
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
        for name, chain in self.iter_breadth_first(
            start, expand=expand, seen={module}, too_deep=too_deep
        ):
            result[name] = chain
        return result

    def iter_breadth_first(
        self,
        start: Sequence[Hop],
        *,
        expand: Callable[[str], bool] | None = None,
        seen: Iterable[str] = (),
        too_deep: Callable[[Hop, tuple[Hop, ...]], None] | None = None,
    ) -> Iterator[tuple[str, tuple[Hop, ...]]]:
        """Yield ``(module, chain)`` for every module reachable from the hops ``start``.

        Modules come in breadth-first order, each once with its shortest chain; among chains of equal
        length the one whose hops compare smallest in order by ``(line, col, imported)`` wins (``start``
        is taken in that order, and each module's edges are sorted the same way). A call hop
        deeper than ``call_depth`` is not followed; ``too_deep(hop, chain to its caller)`` hears
        of it.
        """
        visited = set(seen)
        queue: deque[tuple[str, tuple[Hop, ...]]] = deque()
        for hop in sorted(start, key=Hop.sort_key):
            if hop.kind is _CALL and self.call_depth < 1:
                if too_deep is not None:
                    too_deep(hop, ())
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
                if hop.kind is _CALL and nested_calls + 1 > self.call_depth:
                    if too_deep is not None:
                        too_deep(hop, chain)
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
                trigger = None
                if not self._imports_submodule(node, f"{base}.{name}", before=site.line):
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

    def _getattr_trigger(self, package: str, name: str, importer: str) -> str | None:
        """``from package import name`` calls ``package.__getattr__(name)`` when the module binds no
        ``name`` and defines a module-level ``__getattr__`` (PEP 562; ``_handle_fromlist`` calls
        ``hasattr(package, name)`` first); so does reading ``package.name`` (rule 19). Returns the
        function node run with ``name``, the submodule a ``lazy_loader.attach`` mapping imports for
        it, or None."""
        if package == importer or not self._is_followed(package, self.index.resolve_module(package)):
            return None
        facts = self.get_facts(package)
        if facts is None or not facts.defines_getattr or name in facts.bindings:
            return None
        if self._imports_submodule(package, f"{package}.{name}"):
            return None  # importing a submodule binds it on its package: no __getattr__ call
        attach = facts.lazy_attach
        if attach is not None:
            if name in attach.submodules:
                return f"{package}.{name}"
            found = next((sub for sub, names in attach.submod_attrs.items() if name in names), None)
            if found is None and attach.scan_package:
                found = self._submodule_exporting(package, name)
            return f"{package}.{found}" if found is not None else None
        names = self._getattr_names.setdefault(package, set())
        if name not in names and len(names) >= _MAX_GETATTR_NAMES:
            return FunctionNode(package, "__getattr__")  # any name: every branch may run
        names.add(name)
        return FunctionNode(package, "__getattr__", name)

    def _imports_submodule(self, node: str, submodule: str, before: int | None = None) -> bool:
        """Whether ``node``'s module-level code imports ``submodule`` unconditionally (before line
        ``before``, when given): its package then has the attribute (rule 2)."""
        if isinstance(node, FunctionNode):
            return False
        line = self._unconditional_imports(module_of(node)).get(submodule)
        return line is not None and (before is None or line < before)

    def _unconditional_imports(self, module: str) -> dict[str, int]:
        """Each module that ``module``'s module-level code imports unconditionally (an ``import``'s
        module, a from-import's base and ``base.name`` for each name), with its first line; computed
        once per module."""
        found = self._unconditional.get(module)
        if found is not None:
            return found
        found = {}
        facts = self.get_facts(module)
        if facts is not None and facts.problem is None:
            is_package = self.index.resolve_module(module).is_package
            for site in facts.sites:
                if site.flags or site.target is None:
                    continue
                base = resolve_relative(site, module, is_package)
                if base is None:
                    continue
                names = [f"{base}.{name}" for name in site.names] if site.kind == "from-import" else []
                for imported in (base, *names):
                    if site.line < found.get(imported, site.line + 1):
                        found[imported] = site.line
        self._unconditional[module] = found
        return found

    def _submodule_exporting(self, package: str, name: str) -> str | None:
        """The submodule of ``package`` that is ``name`` or lists it in its literal ``__all__``
        (transformers' ``define_import_structure``), or None."""
        children = self.index.find_children(package)
        if f"{package}.{name}" in children:
            return name
        for child in children:
            facts = self.get_facts(child)
            if facts is not None and facts.all_names and name in facts.all_names:
                return child.rpartition(".")[2]
        return None

    def _hops_for_read(
        self, node: str, resolved: ResolvedModule, read: AttributeRead,
        unresolved: list[UnresolvedCode],
    ) -> Iterator[Hop]:
        """An attribute read at import time that imports a module (rule 19): on a lazy module
        object (``xgr.GrammarMatcher`` after ``xgr = LazyLoader("xgr", globals(), "xgrammar")``), or
        of a name a module's PEP 562 ``__getattr__`` serves (``np.random``). A lazy module object
        whose module is not computable is added to ``unresolved``."""
        module = module_of(node)
        if read.target is None:
            imported = self._lazy_module_bound(module, resolved.is_package, read.name)
            if imported is None:
                # a dunder (``obj.__dict__``) is found without ``__getattr__``, and ``del obj.x``
                # runs ``__delattr__``
                dunder = read.attr.startswith("__") and read.attr.endswith("__")
                hook = None if dunder or read.deleted else self._instance_getattr(
                    module, resolved.is_package, read.name
                )
                if hook is not None:  # ``obj.x`` may miss and run ``type(obj).__getattr__``
                    yield Hop(node, resolved.path, read.line, read.col, HopKind.CALL, hook,
                              tuple(sorted({*read.flags, Flag.CONDITIONAL})))
                return
            if imported is _NOT_COMPUTABLE:
                unresolved.append(UnresolvedCode(
                    node, resolved.path, read.line, read.col, Construct.GETATTR_IMPORT,
                    f"{read.name}.{read.attr} (a lazy module object of a module not computable)",
                    read.flags,
                ))
                return
        else:
            base = _absolute(read.target, module, resolved.is_package)
            imported = None
            if base is not None and self.index.resolve_module(base).kind != "unresolved":
                imported = self._getattr_trigger(base, read.attr, module)
        if imported is not None:
            yield Hop(node, resolved.path, read.line, read.col, HopKind.LAZY_ATTR, imported, read.flags)

    def _instance_getattr(self, module: str, is_package: bool, name: str) -> str | None:
        """The ``__getattr__`` of the class whose instance is bound to ``name`` in ``module``
        (``obj = C()``), own or inherited, in followed code; None if there is none. Python runs it
        when normal lookup of an attribute fails (Language reference 3.3.2.1)."""
        bound = self._call_binding(module, is_package, name)
        found = self._definition(bound[1], 0) if bound is not None else None
        if found is None or not found[2]:
            return None
        owner, cls, _ = found
        hook = self._member(owner, cls, "__getattr__")
        return hook[0] if hook else None

    def _call_binding(
        self, module: str, is_package: bool, name: str
    ) -> tuple[CallBinding, str] | None:
        """The call whose result ``module`` bound to ``name`` (``name = callee(...)``), with the
        callee's absolute dotted name; None if there is none."""
        facts = self.get_facts(module)
        binding = facts.call_bindings.get(name) if facts is not None else None
        if binding is None:
            return None
        if binding.local:
            return binding, f"{module}.{binding.callee}"
        callee = _absolute(binding.callee, module, is_package)
        return None if callee is None else (binding, callee)

    def _lazy_module_bound(self, module: str, is_package: bool, name: str) -> str | None:
        """The module a lazy module object bound to ``name`` in ``module`` stands for, None if
        ``name`` is not one, :data:`_NOT_COMPUTABLE` if its module is not computable."""
        bound = self._call_binding(module, is_package, name)
        if bound is None:
            return None
        binding, callee = bound
        index = self._lazy_maker(callee)
        if index is None:
            return None
        made = binding.args[index] if 0 <= index < len(binding.args) else None
        if made is None or not all(part.isidentifier() for part in made.split(".")):
            return _NOT_COMPUTABLE
        return made

    def _lazy_maker(self, callee: str) -> int | None:
        """Which positional argument of ``callee`` names the module of the lazy module object it
        returns, or None if it makes none: ``lazy_loader.load``; a function that makes one with
        ``importlib.util.LazyLoader``; a class whose ``__getattr__`` (or a method it calls on
        ``self``) imports a module named by what its ``__init__`` stored (rule 19)."""
        if callee in self._lazy_makers:
            return self._lazy_makers[callee]
        self._lazy_makers[callee] = None  # a recursive definition makes nothing
        index: int | None = 0 if callee == "lazy_loader.load" else None
        found = self._definition(callee, 0)
        if index is None and found is not None:
            owner, qualname, is_class = found
            if is_class:
                index = self._lazy_class(owner, qualname)
            else:
                facts = self.get_function_facts(owner, qualname)
                index = facts.lazy_params[0] if facts is not None and facts.lazy_params else None
        self._lazy_makers[callee] = index
        return index

    def _lazy_class(self, module: str, cls: str) -> int | None:
        """The ``__init__`` parameter whose value a class's instances import on attribute access."""
        imported: set[str] = set()
        dynamic = False  # an import of a name not computable: the object is lazy, its module unknown
        for hook in ("__getattr__", "__getattribute__"):
            facts = self.get_function_facts(module, f"{cls}.{hook}")
            if facts is None:
                continue
            bodies = [facts, *filter(None, (
                self.get_function_facts(module, f"{cls}.{method}") for method in facts.self_calls
            ))]
            for body in bodies:
                imported.update(body.self_imports)
                dynamic = dynamic or any(site.target is None for site in body.sites)
        if not imported and not dynamic:
            return None
        init = self.get_function_facts(module, f"{cls}.__init__")
        stored = dict(init.self_params) if init is not None else {}
        found = next((stored[attr] for attr in sorted(imported) if attr in stored), None)
        return _LAZY_MODULE_UNKNOWN if found is None else found

    def _definition(self, name: str, depth: int) -> tuple[str, str, bool] | None:
        """``(module, qualname, is_class)`` of the function or class a dotted name refers to,
        following re-exports, in code whose calls are followed; None if not found."""
        found = self._split_owner(name)
        if found is None:
            return None
        owner, attribute, resolved = found
        facts = self.get_facts(owner)
        if facts is None or facts.problem is not None or depth > _ALIAS_DEPTH:
            return None
        if attribute in facts.classes:
            return owner, attribute, True
        if _defines(facts, attribute):
            return owner, attribute, False
        first, _, rest = attribute.partition(".")
        target = facts.aliases.get(first)
        if target is None:
            return None
        absolute = _absolute(f"{target}.{rest}" if rest else target, owner, resolved.is_package)
        return self._definition(absolute, depth + 1) if absolute is not None else None

    def _split_owner(self, name: str) -> tuple[str, str, ResolvedModule] | None:
        """``(module, attribute, resolved module)`` for a dotted name: its longest prefix that is
        a module, and the rest; None when there is none, or its code is not followed."""
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            owner = ".".join(parts[:cut])
            resolved = self.index.resolve_module(owner)
            if resolved.kind == "unresolved":
                continue
            if not resolved.has_source or not self._is_followed(owner, resolved):
                return None
            return owner, ".".join(parts[cut:]), resolved
        return None

    def _is_followed(self, module: str, resolved: ResolvedModule) -> bool:
        """Whether calls into ``module`` and its PEP 562 ``__getattr__`` are followed."""
        if self._follows is not None:
            return self._follows(module)
        return resolved.origin == "first-party"

    def _hops_for_call(self, node: str, resolved: ResolvedModule, call: CallSite) -> Iterator[Hop]:
        module = module_of(node)
        nested = call.local and call.kind == "call" and "<locals>" in call.callee
        targets = self._nested_call(module, call) if nested else None
        for target in targets if targets is not None else self._resolve_call(
            module, resolved.is_package, call
        ):
            yield Hop(node, resolved.path, call.line, call.col, HopKind.CALL, target, call.flags,
                      assumed=call.assumed)

    def _nested_call(self, module: str, call: CallSite) -> list[str]:
        """A call in a function body of a function or class defined in that body, which the
        extractor names ``outer.<locals>.inner`` (Python's scoping: the local name wins over a
        module-level one): that function, or the hooks of the class that instantiating it runs."""
        if self.get_function_facts(module, call.callee) is not None:
            return [FunctionNode(module, call.callee)]
        return [
            FunctionNode(module, f"{call.callee}.{hook}") for hook in _CLASS_HOOKS["call"]
            if self.get_function_facts(module, f"{call.callee}.{hook}") is not None
        ]

    def _resolve_call(self, module: str, is_package: bool, call: CallSite) -> list[str]:
        """The nodes a call runs: first-party function bodies, or a ``[heavy-calls]`` leaf (also for
        a function of the calling module itself, ``probe()`` in ``pkg.plat`` for ``pkg.plat.probe``)."""
        if call.local:
            own = f"{module}.{call.callee}"
            if self._is_heavy_call is not None and self._is_heavy_call(own):
                return [CallNode(own)]
            return self._lookup(module, call.callee, call.kind, 0)
        name = _absolute(call.callee, module, is_package)
        if name is None:
            return []
        return self._lookup_dotted(name, call.kind, 0)

    def _member(self, module: str, cls: str, member: str, *, inherited: bool = True) -> list[str]:
        """The function ``member`` of class ``cls`` of ``module``: its own, else (with
        ``inherited``) the one its bases give it (:meth:`_inherited`); [] if there is none."""
        facts = self.get_facts(module)
        if facts is not None and _defines(facts, f"{cls}.{member}"):
            return [FunctionNode(module, f"{cls}.{member}")]
        return self._inherited(module, cls, member) if inherited else []

    def _inherited(self, module: str, cls: str, member: str) -> list[str]:
        """The function ``member`` that class ``cls`` of ``module`` gets from its bases: the first
        base, depth-first and left to right, that defines it (the method resolution order of single
        inheritance; an approximation of C3 for multiple: docs/semantics.md rule 16), or [] if no
        analysed base does (a base outside the followed code, or ``object``)."""
        key = (module, cls, member)
        if key not in self._inherited_found:
            self._inherited_found[key] = self._find_inherited(module, cls, member)
        return self._inherited_found[key]

    def _find_inherited(self, module: str, cls: str, member: str) -> list[str]:
        stack = list(reversed(self._bases(module, cls)))
        seen: set[tuple[str, str]] = set()
        while stack and len(seen) < _MAX_BASES:
            base_module, base = stack.pop()
            if (base_module, base) in seen:
                continue
            seen.add((base_module, base))
            facts = self.get_facts(base_module)
            if facts is None or facts.problem is not None:
                continue
            if _defines(facts, f"{base}.{member}"):
                return [FunctionNode(base_module, f"{base}.{member}")]
            stack.extend(reversed(self._bases(base_module, base)))
        return []

    def _bases(self, module: str, cls: str) -> list[tuple[str, str]]:
        """``(module, class)`` of each base of ``cls`` that is in followed code, in order."""
        facts = self.get_facts(module)
        if facts is None:
            return []
        found: list[tuple[str, str]] = []
        for base in facts.class_bases.get(cls, ()):
            if base in facts.classes:
                found.append((module, base))
                continue
            absolute = _absolute(base, module, self.index.resolve_module(module).is_package)
            if absolute is None:
                continue
            top = absolute.partition(".")[0]
            resolved = self.index.resolve_module(top)
            if not resolved.has_source or not self._is_followed(top, resolved):
                continue  # code that is not followed (``torch.nn.Module``): no path search in it
            owner = self._split_owner(absolute)
            if owner is not None:
                found.append((owner[0], owner[1]))
        return found

    def _lookup_dotted(self, name: str, kind: str, depth: int) -> list[str]:
        if self._is_heavy_call is not None and self._is_heavy_call(name):
            return [CallNode(name)]
        found = self._split_owner(name)
        return [] if found is None else self._lookup(found[0], found[1], kind, depth)

    def _lookup(self, module: str, attribute: str, kind: str, depth: int) -> list[str]:
        """Function nodes run by calling ``attribute`` (dotted) of first-party ``module``."""
        facts = self.get_facts(module)
        if facts is None or facts.problem is not None or depth > _ALIAS_DEPTH:
            return []
        if kind == "super":  # ``super().m()`` in a method of class ``owner``
            owner, _, member = attribute.rpartition(".")
            return self._inherited(module, owner, member)
        if _defines(facts, attribute):
            nodes: list[str] = [FunctionNode(module, attribute)]
            if kind == "decorator-factory":
                body = self.get_function_facts(module, attribute)
                returned = body.returns if body is not None else ()
                nodes += [FunctionNode(module, f"{attribute}.<locals>.{name}") for name in returned]
            if kind in ("call", "decorator-factory"):
                return nodes
            return []
        if attribute in facts.classes:
            # ``__post_init__``: a dataclass's own (its bases' are not looked up)
            return [
                node for hook in _CLASS_HOOKS.get(kind, ())
                for node in self._member(module, attribute, hook, inherited=hook != "__post_init__")
            ]
        owner, _, member = attribute.rpartition(".")
        if kind == "call" and owner in facts.classes:  # ``C.m()``: a method ``C`` inherits
            return self._inherited(module, owner, member)
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


_CALL: Final = HopKind.CALL
"""Read in the traversal's inner loop, where an enum member read through its class costs about 50 ns
more than a module global (torch's closures: 3 % of a cold check)."""


def _trailing_calls(chain: Sequence[Hop]) -> int:
    count = 0
    for hop in reversed(chain):
        if hop.kind is not _CALL:
            break
        count += 1
    return count


def _defines(facts: ModuleFacts, qualname: str) -> bool:
    """Whether the module defines the function ``qualname`` (``"f"``, ``"C.m"``)."""
    return qualname in facts.function_names or qualname in facts.functions


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
