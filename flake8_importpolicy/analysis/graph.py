"""The import-time graph: which modules each module makes run when it is imported, and the chains.

Nodes are dotted module names (``str``). An edge (a :class:`Hop`) says: executing ``module`` runs the
statement at ``path:line`` which makes ``imported`` run. Edges are built lazily, one module at a time,
from the facts of :mod:`flake8_importpolicy.analysis.extract` and path search in
:mod:`flake8_importpolicy.analysis.resolve`; only modules that are reached are parsed.

Each kind of import-time code has one owner in :mod:`flake8_importpolicy.analysis.hops`, which turns
its facts into hops by CPython's rules (docs/semantics.md):

- import statements (rules 1-4, 12 and 17): :mod:`~flake8_importpolicy.analysis.hops.sites`;
- calls of first-party functions, which run their bodies, and ``[heavy-calls]`` leaves (rule 16):
  :mod:`~flake8_importpolicy.analysis.hops.calls`;
- PEP 562 ``__getattr__`` triggers and attribute reads that import a module (rules 15 and 19):
  :mod:`~flake8_importpolicy.analysis.hops.lazy`;
- the facts of the modules reached, asked for once: :mod:`~flake8_importpolicy.analysis.hops.lookup`.

This module puts a module's hops together (with the directories it adds to ``sys.path``, rule 7,
and what cannot be resolved, IPL006) and walks them breadth first.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import filterfalse
from typing import Final

from flake8_importpolicy.analysis.hops.calls import CallResolver, HeavyCallEnviron
from flake8_importpolicy.analysis.hops.lazy import AttributeReads, ModuleGetattr
from flake8_importpolicy.analysis.hops.lookup import (
    FactsLookup,
    FactsProvider,
    FunctionFactsProvider,
    is_compiled_only,
    resolve_relative,
)
from flake8_importpolicy.analysis.hops.sites import ImportSites
from flake8_importpolicy.analysis.pyx import PYX_SUFFIX
from flake8_importpolicy.analysis.resolve import ModuleIndex
from flake8_importpolicy.model.facts import (
    AttributeRead,
    CallSite,
    FunctionFacts,
    ImportSite,
    ModuleFacts,
    PathChange,
    SourceProblem,
    UnresolvedSite,
)
from flake8_importpolicy.model.graph import (
    BoundArgument,
    CallNode,
    Construct,
    Flag,
    FunctionNode,
    Hop,
    HopKind,
    module_of,
    UnresolvedCode,
)
from flake8_importpolicy.model.interpreter import ResolvedModule

__all__ = [
    "FactsProvider",
    "FunctionFactsProvider",
    "ImportGraph",
    "is_compiled_only",
    "resolve_relative",
]

_ATTRIBUTE_HOOKS: Final = frozenset({"__getattr__", "__getattribute__", "__dir__"})


class ImportGraph:
    """Lazily built graph of import-time edges between modules.

    Args:
        index: resolves module names to files.
        facts: returns a module's :class:`ModuleFacts` (parsing is done there, so it can be cached).
        ignore: optional predicate ``(importer, imported) -> bool``; matching edges are removed (the
            policy's ``[[ignore]]`` entries). It is called once per distinct edge.
        call_depth: how many nested import-time calls are followed (``settings.call-depth``).
        is_heavy_call: optional predicate on a called function's dotted name (``[heavy-calls]``).
        heavy_call_environ: the ``unless-environ`` pairs of the rules matching a heavy call, and
            the policy's ``[assume.environ]`` (``CallResolver``).
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
        heavy_call_environ: HeavyCallEnviron | None = None,
        function_facts: FunctionFactsProvider | None = None,
        follows: Callable[[str], bool] | None = None,
    ) -> None:
        self.index = index
        self.call_depth = call_depth
        self._ignore = ignore
        lookup = FactsLookup(index, facts, function_facts, follows)
        getattr_hooks = ModuleGetattr(lookup)
        calls = CallResolver(lookup, is_heavy_call, heavy_call_environ)
        calls.lazy_module = getattr_hooks.find_lazy_module
        self._lookup = lookup
        self._sites = ImportSites(lookup, getattr_hooks)
        self._calls = calls
        self._reads = AttributeReads(lookup, getattr_hooks, calls)
        self._edges: dict[str, tuple[Hop, ...]] = {}
        self._steps: dict[str, _Steps] = {}  # the same edges as the traversal reads them
        self._unresolved: dict[str, tuple[UnresolvedCode, ...]] = {}
        self._quiet: dict[str, bool] = {}  # function nodes: :meth:`_runs_nothing`

    # -- per-module queries ------------------------------------------------------------------------

    def get_facts(self, module: str) -> ModuleFacts | None:
        """The import facts of ``module``, or None if it has no analysable source
        (:meth:`FactsLookup.get_facts
        <flake8_importpolicy.analysis.hops.lookup.FactsLookup.get_facts>`)."""
        return self._lookup.get_facts(module)

    def get_function_facts(
        self, module: str, qualname: str, argument: BoundArgument = None
    ) -> FunctionFacts | None:
        """The facts of one function body of ``module`` (:meth:`FactsLookup.get_function_facts
        <flake8_importpolicy.analysis.hops.lookup.FactsLookup.get_function_facts>`)."""
        return self._lookup.get_function_facts(module, qualname, argument)

    def find_problem(self, module: str) -> SourceProblem | None:
        """Why ``module``'s source (or a function node's body) could not be analysed, or None
        (:meth:`FactsLookup.find_problem
        <flake8_importpolicy.analysis.hops.lookup.FactsLookup.find_problem>`)."""
        return self._lookup.find_problem(module)

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
        facts = None if isinstance(module, CallNode) else self._lookup.get_facts(owner)
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
                function_facts = self._lookup.get_function_facts(owner, module.qualname, module.argument)
                sites = function_facts.sites if function_facts else ()
                calls = function_facts.calls if function_facts else ()
                reads = function_facts.attribute_reads if function_facts else ()
                cannot = function_facts.unresolved if function_facts else ()
                if module.qualname.rpartition(".")[2] in _ATTRIBUTE_HOOKS:
                    dynamic = Construct.GETATTR_IMPORT
            else:
                _add_search_locations(self.index, resolved, facts.path_changes)
                if resolved.compiled and resolved.path is not None and (
                    resolved.path.suffix == PYX_SUFFIX and resolved.origin != "stdlib"
                ):
                    # the imports of its .pyx are followed; what its other module-level code runs
                    # (calls of cdef functions and classes, a cimport's generated init) is not known
                    unresolved.append(UnresolvedCode(
                        module, resolved.path, 1, 0, Construct.EXTENSION_MODULE,
                        f"{module} (compiled by Cython: the imports of its .pyx are followed, not its"
                        " other code)", (),
                    ))
            site_hops, guard_lets_run = self._sites.find_hops, self._sites.guard_lets_run
            for site in sites:
                if site.guard and not guard_lets_run(site, module, resolved):
                    continue  # e.g. the ``except ImportError`` fallback of imports that are found
                if site.after and self._sites.raised_before(site):
                    continue  # after ``import torch`` without torch installed: never reached
                if site.when and not self._lookup.when_lets_run(site, owner, resolved.is_package):
                    continue  # ``if SLOW:`` with ``SLOW`` false where it is defined
                if site.target is None:
                    unresolved.append(UnresolvedCode(
                        module, resolved.path, site.line, site.col, dynamic, site.detail, site.flags
                    ))
                    continue
                requires = (
                    tuple(n for n in site.loaded if n not in self.index.interpreter.preloaded)
                    if site.loaded else ()
                )
                for hop in site_hops(module, resolved, site):
                    if site.assumed or requires:
                        hop = dataclasses.replace(hop, assumed=site.assumed, requires=requires)
                    hops.append(hop)
            for call in calls:
                if call.guard and not guard_lets_run(call, module, resolved):
                    continue  # ``if HAS_X:`` with x missing, a fallback whose imports are found
                hops.extend(self._calls.find_hops(module, resolved, call, unresolved))
            for read in reads:
                hops.extend(self._reads.find_hops(module, resolved, read, unresolved))
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
        self._steps[module] = _steps_of(edges)
        self._unresolved[module] = tuple(sorted(unresolved, key=lambda u: (u.line, u.col)))
        return edges

    def _runs_nothing(self, node: str) -> bool:
        """Whether calling the function ``node`` imports nothing and runs no code the engine
        cannot resolve, nor does any function it calls (up to :data:`_QUIET_DEPTH` calls further):
        following it past ``call_depth`` tells what following it at any depth would
        (``typing.get_args``, a dataclass helper), so such a call is no IPL006 ``call-depth``."""
        known = self._quiet.get(node)
        if known is None:
            known = self._quiet_calls(node, set(), 0)
        return known

    def _quiet_calls(self, node: str, busy: set[str], depth: int) -> bool:
        """:meth:`_runs_nothing` of ``node`` while the functions ``busy`` are being decided (a
        recursive call adds no import of its own). Only a result that did not lean on ``busy`` is
        remembered."""
        known = self._quiet.get(node)
        if known is not None:
            return known
        if not isinstance(node, FunctionNode) or depth > _QUIET_DEPTH:
            return False
        edges = self.find_import_time_edges(node)
        quiet = not self._unresolved.get(node)
        leaned = False
        busy.add(node)
        for hop in edges if quiet else ():
            if hop.kind is not _CALL:
                quiet = False
            elif hop.imported in busy:
                leaned = True
            else:
                quiet = self._quiet_calls(hop.imported, busy, depth + 1)
                leaned = leaned or hop.imported not in self._quiet
            if not quiet:
                break
        busy.discard(node)
        if not quiet or not leaned:
            self._quiet[node] = quiet
        return quiet

    def find_unresolved(self, module: str) -> tuple[UnresolvedCode, ...]:
        """What ``module``'s own import-time code does that cannot be resolved (IPL006), sorted by
        position: dynamic imports of names that are not computable, ``exec`` of strings that are
        not constant, calls through variables, ``sys.path`` changes that are not computable, lazy
        module objects whose module is not computable."""
        self.find_import_time_edges(module)
        return self._unresolved.get(module, ())

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
        select: Callable[[str], bool] | None = None,
        parents: dict[str, tuple[Hop, str | None] | None] | None = None,
    ) -> Iterator[tuple[str, tuple[Hop, ...]]]:
        """Yield ``(module, chain)`` for every module reachable from the hops ``start``.

        Modules come in breadth-first order, each once with its shortest chain; among chains of equal
        length the one whose hops compare smallest in order by ``(line, col, imported)`` wins (``start``
        is taken in that order, and each module's edges are sorted the same way). A call hop
        deeper than ``call_depth`` is not followed; ``too_deep(hop, chain to its caller)`` hears
        of it. A hop that :attr:`~Hop.requires` modules (``if "sphinx" in sys.modules:``) waits
        until the traversal has reached them all: when nothing else is left, the waiting hops whose
        modules were reached are followed, until none is (rule 13); the others are never followed.

        Args:
            select: if given, only the modules for which it is true are yielded (the traversal is
                the same): a chain is built only for a module yielded or a call too deep, which
                makes a search that looks at few of the modules it reaches cheaper (a light
                module's check: torch's 3,000 modules, some dozens of which matter).
            parents: if given, filled with the breadth-first tree: each module reached maps to
                ``(hop, the module whose hop it is)``, a start hop's to ``(hop, None)``, each of
                ``seen`` to None.
        """
        tree: dict[str, tuple[Hop, str | None] | None] = {} if parents is None else parents
        for name in seen:
            tree[name] = None
        chains: dict[str, tuple[Hop, ...]] = {}

        def chain_of(name: str) -> tuple[Hop, ...]:
            """``name``'s chain, built from the tree (each module's once, without recursion: a
            chain may be longer than the interpreter's recursion limit)."""
            missing: list[tuple[str, Hop]] = []
            node: str | None = name
            chain: tuple[Hop, ...] = ()
            while node is not None:
                known = chains.get(node)
                if known is not None:
                    chain = known
                    break
                link = tree[node]
                if link is None:
                    break
                missing.append((node, link[0]))
                node = link[1]
            for node_name, hop in reversed(missing):
                chain = (*chain, hop)
                chains[node_name] = chain
            return chain

        call_depth = self.call_depth
        is_reached = tree.__contains__
        steps_of = self._steps  # the edges of find_import_time_edges, read before calling it
        # (node, how many call hops end its chain)
        queue: deque[tuple[str, int]] = deque()
        waiting: list[tuple[Hop, str | None, int]] = []  # hops whose ``requires`` wait
        for hop in sorted(start, key=Hop.sort_key):
            is_call = hop.kind is _CALL
            if is_call and call_depth < 1:
                if too_deep is not None:
                    too_deep(hop, ())
                continue
            if hop.requires:
                waiting.append((hop, None, 1 if is_call else 0))
            elif hop.imported not in tree:
                tree[hop.imported] = (hop, None)
                queue.append((hop.imported, 1 if is_call else 0))
        while queue or waiting:
            if not queue:
                ready = [w for w in waiting if all(n in tree for n in w[0].requires)]
                if not ready:
                    break
                waiting = [w for w in waiting if not all(n in tree for n in w[0].requires)]
                for hop, parent, calls in ready:
                    if hop.imported not in tree:
                        tree[hop.imported] = (hop, parent)
                        queue.append((hop.imported, calls))
                continue
            name, nested_calls = queue.popleft()
            if select is None or select(name):
                yield name, chain_of(name)
            if expand is not None and not expand(name):
                continue
            steps = steps_of.get(name)
            if steps is None:
                self.find_import_time_edges(name)
                steps = steps_of[name]
            first, has_call, mixed = steps
            if first is not None and (nested_calls < call_depth or not has_call):
                # no call of this node's is too deep: each node it leads to is reached by its
                # first hop there, if not yet reached (the common case)
                for imported in filterfalse(is_reached, first):
                    hop, is_call = first[imported]
                    tree[imported] = (hop, name)
                    queue.append((imported, nested_calls + 1 if is_call else 0))
                continue
            for imported, is_call, requires, hop in mixed:
                calls = 0
                if is_call:
                    calls = nested_calls + 1
                    if calls > call_depth and not self._runs_nothing(imported):
                        if too_deep is not None:
                            too_deep(hop, chain_of(name))
                        continue
                if imported not in tree:
                    if requires:
                        waiting.append((hop, name, calls))
                        continue
                    tree[imported] = (hop, name)
                    queue.append((imported, calls))


_Steps = tuple[
    "dict[str, tuple[Hop, bool]] | None", bool, "tuple[tuple[str, bool, tuple[str, ...], Hop], ...]",
]
"""A node's edges as :meth:`ImportGraph.iter_breadth_first` follows them (:func:`_steps_of`)."""


def _steps_of(edges: tuple[Hop, ...]) -> _Steps:
    """``edges`` (sorted) as the traversal follows them: ``(first, has a call, steps)``.

    ``steps`` is ``((imported, is a call, requires, hop), ...)`` in order, without the hops that
    change nothing: one that is neither a call nor :attr:`~Hop.requires` modules, to a node that
    an earlier such hop leads to (reached by then: ``import a.b`` and ``import a.c`` both run
    ``a``; a third of torch's closure's edges). ``first`` is ``{imported: (hop, is a call)}`` of
    each node's first hop, in order, or None when a hop requires modules: while no call is deeper
    than ``call_depth`` a later hop to a node changes nothing either, so the traversal takes
    ``first`` without looking at each hop."""
    first: dict[str, tuple[Hop, bool]] | None = {}
    plain: set[str] = set()
    steps: list[tuple[str, bool, tuple[str, ...], Hop]] = []
    has_call = False
    for hop in edges:
        is_call = hop.kind is _CALL
        has_call = has_call or is_call
        if hop.requires:
            first = None
        elif first is not None and hop.imported not in first:
            first[hop.imported] = (hop, is_call)
        if not is_call and not hop.requires:
            if hop.imported in plain:
                continue
            plain.add(hop.imported)
        steps.append((hop.imported, is_call, hop.requires, hop))
    return first, has_call, tuple(steps)


_QUIET_DEPTH: Final = 8
"""How many calls beyond ``call_depth`` :meth:`ImportGraph._runs_nothing` looks through."""

_CALL: Final = HopKind.CALL
"""Read in the traversal's inner loop, where an enum member read through its class costs about 50 ns
more than a module global (torch's closures: 3 % of a cold check)."""


def _add_search_locations(
    index: ModuleIndex, resolved: ResolvedModule, changes: tuple[PathChange, ...]
) -> None:
    """Directories a module adds to ``sys.path`` at import time are searched, after the
    others, for names not found otherwise (rule 7)."""
    if not changes or resolved.path is None:
        return
    for change in changes:
        directory = resolved.path.parent
        for _ in range(change.up):
            directory = directory.parent
        index.add_search_location(directory.joinpath(*change.parts))
