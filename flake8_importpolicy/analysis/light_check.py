"""Checking one light module: every chain by which it runs a forbidden module at import time (IPL001),
and the unanalysable modules (IPL005) and unresolved import-time code (IPL006) its traversals meet.

The contract every adapter shares (CLI, flake8, mypy):

- one :class:`Violation` per (light module, first-hop statement): the statement in the light module's
  file whose execution leads to a forbidden module, or a pseudo-statement at line 1, column 0 with kind
  ``parent-package`` when the light module's own parent packages lead there;
- its chain is the shortest path from that statement to the nearest forbidden module, ties broken by
  comparing hops in order by ``(line, col, imported)``; other forbidden modules reachable from the same
  statement are listed in ``also``;
- one cause, one report: a statement whose every forbidden node was already run by an earlier
  statement (the light module's parent packages first, then in order) is not reported; its line is
  listed in the earlier one's ``covers``. A forbidden module's function that runs (its PEP 562
  ``__getattr__``, which ``from m import name`` calls) counts as that module.

Light modules whose statements name the same modules under the same rules share one traversal
(:class:`SharedTraversals`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Final, NamedTuple

from flake8_importpolicy.analysis.follow import FollowedCode
from flake8_importpolicy.analysis.graph import ImportGraph
from flake8_importpolicy.model.facts import SourceProblem
from flake8_importpolicy.model.findings import STANDARD_LIBRARY, Unresolved, Violation
from flake8_importpolicy.model.graph import (
    Construct,
    FunctionNode,
    Hop,
    HopKind,
    UnresolvedCode,
    module_of,
)
from flake8_importpolicy.model.policy import HeavyRule, ModuleRules

__all__ = ["LightModuleCheck", "LightModuleChecker", "find_outermost", "too_deep_code"]


class LightModuleCheck(NamedTuple):
    """What checking one light module finds (see :meth:`LightModuleChecker.check`).

    Attributes:
        violations: not yet filtered by ``noqa``.
        problems: ``[(module, problem), ...]`` for the unanalysable modules met, sorted.
        unresolved: the import-time code met that cannot be resolved, each site once with its
            shortest chain; not yet filtered by ``noqa`` or ``[[ignore]]``.
    """

    violations: list[Violation]
    problems: list[tuple[str, SourceProblem]]
    unresolved: list[Unresolved]


class LightModuleChecker:
    """Checks light modules one by one on one import-time graph.

    Args:
        graph: the import-time graph.
        follow: which code is followed.
        root: the policy's root (the path of a light module without a file of its own).
    """

    def __init__(self, graph: ImportGraph, follow: FollowedCode, root: Path) -> None:
        self.graph = graph
        self.index = graph.index
        self._follow = follow
        self._root = root
        self._traversals = SharedTraversals(graph)
        self._unclear: dict[str, bool] = {}

    def _installed_of(self, site: UnresolvedCode, chain: tuple[Hop, ...]) -> str:
        """:attr:`~flake8_importpolicy.model.findings.Unresolved.installed` of ``site``, by where
        its file lies (:meth:`~flake8_importpolicy.analysis.resolve.ModuleIndex.origin_of_path`):
        empty when first-party or without a file, else the installed distribution that provides
        the top-level package of the module whose statement it is
        (:meth:`~flake8_importpolicy.analysis.resolve.ModuleIndex.distribution_of`: ``torchgen``
        is ``torch``'s), or the standard library."""
        if site.path is None:
            return ""
        origin = self.index.origin_of_path(site.path)
        if origin == "first-party":
            return ""
        if origin == "stdlib":
            return STANDARD_LIBRARY
        # these sites are at the statement that imports the module they name
        owner = chain[-1].module if site.construct in _ONCE_PER_MODULE and chain else site.module
        return self.index.distribution_of(module_of(owner).partition(".")[0])

    def count_statements(self, light: str, rules: ModuleRules) -> None:
        """Count ``light``'s statements among those that light modules have (before any light module
        is checked: a statement that more than one has gets a shared traversal)."""
        for hops in self._statements(light).values():
            self._traversals.count(rules, hops)

    def check(self, light: str, rules: ModuleRules) -> LightModuleCheck:
        """Violations of one light module under the rules that apply to it, the unanalysable
        modules met, and the import-time code met that cannot be resolved (IPL006)."""
        # Both are pure for one check; the traversal asks them again for every statement.
        forbidden_rule = functools.cache(rules.forbidden_rule)
        expand = functools.cache(
            self._follow.make_expander(forbidden_rule, (h.pattern for h in rules.forbid))
        )
        resolved = self.index.resolve_module(light)
        path = resolved.path or (resolved.locations[0] if resolved.locations else self._root)
        statements = self._statements(light)
        violations: list[Violation] = []
        covers: list[list[int]] = []
        ran: dict[str, int] = {}  # forbidden node -> the violation whose statement ran it first
        bad: dict[str, SourceProblem] = {}
        light_problem = self.graph.find_problem(light)
        if light_problem is not None:
            bad[light] = light_problem
        blind = _BlindSpots(light, path if resolved.path else None, self._installed_of)
        blind.add(self.graph.find_unresolved(light), ())
        unfollowed = self._follow.find_unfollowed_origins(rules)
        find_unexpanded = self._follow.find_unexpanded
        unclear = self._unclear

        def may_matter(name: str) -> bool:
            """What of :func:`matters` does not depend on the chain, asked once per node: the
            traversals build chains only for the nodes it selects."""
            if forbidden_rule(name) is not None:
                return True
            if expand(name):
                known = unclear.get(name)
                return self._is_unclear(name) if known is None else known
            return self._follow.may_find_unexpanded(name, unfollowed)

        selected = functools.cache(may_matter)

        def matters(name: str, chain: tuple[Hop, ...]) -> bool:
            if forbidden_rule(name) is not None:
                return True
            if expand(name):
                return True  # selected: unclear
            return bool(find_unexpanded(name, chain, unfollowed))

        # The light module's parent packages run first, then its statements in order.
        for (line, col, is_parent), hops in sorted(statements.items(), key=lambda s: (not s[0][2], s[0])):
            reached: list[tuple[str, tuple[Hop, ...], HeavyRule]] = []
            for name, chain in self._traversals.find_reached(
                light, hops, rules, expand, (selected, matters), blind.add_too_deep
            ):
                heavy = forbidden_rule(name)
                if heavy is not None and not self.index.resolve_module(name).preloaded:
                    # a forbidden module's function (its PEP 562 __getattr__ a from-import runs)
                    # is code of that module: the finding names the module
                    reached.append((module_of(name) if isinstance(name, FunctionNode) else name,
                                    chain, heavy))
                elif expand(name):
                    problem = self.graph.find_problem(name)
                    if problem is not None:
                        bad[module_of(name)] = problem
                    blind.add(self.graph.find_unresolved(name), chain)
                elif heavy is None:
                    blind.add(find_unexpanded(name, chain, unfollowed), chain)
            if not reached:
                continue
            fresh = [found for found in reached if found[0] not in ran]
            if not fresh:
                covers[ran[reached[0][0]]].append(line)
                continue
            heavy_name, chain, heavy_rule = fresh[0]
            for name, _, _ in fresh:
                ran[name] = len(violations)
            covers.append([])
            violations.append(
                Violation(
                    light=light,
                    heavy=heavy_name,
                    pattern=heavy_rule.pattern.text,
                    reason=heavy_rule.shown_reason,
                    path=path,
                    line=line,
                    col=col,
                    kind=HopKind.PARENT_PACKAGE if is_parent else chain[0].kind,
                    also=tuple(
                        name for name in find_outermost(name for name, _, _ in fresh)
                        if name != heavy_name
                    ),
                    chain=chain,
                )
            )
        violations = [
            dataclasses.replace(violation, covers=tuple(sorted(set(lines)))) if lines else violation
            for violation, lines in zip(violations, covers)
        ]
        return LightModuleCheck(violations, sorted(bad.items()), blind.found())

    def _statements(self, light: str) -> dict[tuple[int, int, bool], list[Hop]]:
        """``light``'s statements that run at import time, ``(line, col, is parent package)`` to
        their hops: its parent packages' (rule 1) and its own."""
        statements: dict[tuple[int, int, bool], list[Hop]] = {}
        for hop in self.graph.find_parent_hops(light):
            statements.setdefault((hop.line, hop.col, True), []).append(hop)
        for hop in self.graph.find_import_time_edges(light):
            statements.setdefault((hop.line, hop.col, False), []).append(hop)
        return statements

    def _is_unclear(self, node: str) -> bool:
        """Whether ``node`` cannot be analysed or holds import-time code that cannot be resolved
        (answered once per node, kept in ``_unclear``)."""
        unclear = self._unclear[node] = (
            self.graph.find_problem(node) is not None or bool(self.graph.find_unresolved(node))
        )
        return unclear


class SharedTraversals:
    """The traversals from light modules' statements, shared where light modules have the same
    statement (see :meth:`find_reached`).

    Args:
        graph: the import-time graph.
    """

    def __init__(self, graph: ImportGraph) -> None:
        self.graph = graph
        self._shared: OrderedDict[object, _SharedReach] = OrderedDict()
        self._count: dict[object, int] = {}  # light modules with each statement key

    def count(self, rules: ModuleRules, hops: Iterable[Hop]) -> None:
        """One more light module has the statement of ``hops`` under ``rules``."""
        key = _statement_key(rules, hops)
        self._count[key] = self._count.get(key, 0) + 1

    def find_reached(
        self,
        light: str,
        hops: list[Hop],
        rules: ModuleRules,
        expand: Callable[[str], bool],
        matter: tuple[Callable[[str], bool], Callable[[str, tuple[Hop, ...]], bool]],
        too_deep: Callable[[Hop, tuple[Hop, ...]], None],
    ) -> Iterator[tuple[str, tuple[Hop, ...]]]:
        """What the check of one statement of ``light`` looks at: the nodes its ``hops`` reach
        without passing through ``light`` for which ``matters(node, chain)`` (forbidden, or
        followed and unanalysable, or holding import-time code that cannot be resolved), each with
        its chain, in the order of :meth:`ImportGraph.iter_breadth_first
        <flake8_importpolicy.analysis.graph.ImportGraph.iter_breadth_first>`, which calls
        ``too_deep`` in between as it does. ``matter`` is ``(selected, matters)``: ``selected(node)``
        is false for a node that matters by no chain (the traversal builds no chain for it).

        A statement that only one light module has (:meth:`count` counts them first) gets a
        traversal of its own. Light modules whose statements name the same modules under the same
        rules (siblings, through their parent package; modules that import one hub) share one
        traversal, made without any module left out: leaving ``light`` out changes nothing when the
        traversal never reached it, or reached it and found nothing from it (no new node, no call
        too deep) and it matters to nobody; otherwise ``light`` gets a traversal of its own. Without
        this, ``"big.**"`` over a package whose ``__init__`` imports its 10,000 modules took 10,000
        traversals of 10,000 modules.
        """
        selected, matters = matter
        ordered = sorted(hops, key=Hop.sort_key)
        key = _statement_key(rules, ordered)
        shared = self._shared.get(key)
        if shared is None and self._count.get(key, 0) < 2:
            # Most statements are one light module's own, and a light module that its own closure
            # reaches (a package whose __init__ imports it) makes a shared traversal useless: building
            # one for every statement visited twice the nodes on torch.
            for name, chain in self.graph.iter_breadth_first(
                ordered, expand=expand, seen={light}, too_deep=too_deep, select=selected
            ):
                if matters(name, chain):
                    yield name, chain
            return
        if shared is None:
            tree: dict[str, tuple[Hop, str | None] | None] = {}
            busy: set[str] = set()  # nodes that reached a node first, or met a call too deep
            events: list[tuple[str | None, Hop | None, tuple[Hop, ...]]] = []

            def deep(hop: Hop, chain: tuple[Hop, ...]) -> None:
                if chain:
                    busy.add(chain[-1].imported)
                events.append((None, hop, chain))

            for name, chain in self.graph.iter_breadth_first(
                ordered, expand=expand, too_deep=deep, select=selected, parents=tree
            ):
                if matters(name, chain):
                    events.append((name, None, chain))
            busy.update(link[1] for link in tree.values() if link is not None and link[1] is not None)
            mattering = frozenset(name for name, _, _ in events if name is not None)
            shared = (frozenset(tree), frozenset(busy), mattering, events)
            self._shared[key] = shared
            if len(self._shared) > _SHARED_KEPT:
                self._shared.popitem(last=False)
        else:
            self._shared.move_to_end(key)
        reached, busy_nodes, mattering, recorded = shared
        if light in reached and (light in busy_nodes or light in mattering):
            for name, chain in self.graph.iter_breadth_first(
                hops, expand=expand, seen={light}, too_deep=too_deep, select=selected
            ):
                if matters(name, chain):
                    yield name, chain
            return
        first = {hop.imported: hop for hop in reversed(ordered)}  # this light's own first hops
        for node, hop, chain in recorded:
            mine = (first[chain[0].imported], *chain[1:]) if chain else chain
            if node is None:
                assert hop is not None
                too_deep(hop if chain else first[hop.imported], mine)
            else:
                yield node, mine


_SharedReach = tuple[
    frozenset[str], frozenset[str], frozenset[str],
    list[tuple["str | None", "Hop | None", tuple[Hop, ...]]],
]
"""A traversal shared by light modules (see :meth:`SharedTraversals.find_reached`): the nodes
reached, those that reached a node first or met a call too deep, those that matter to the check, and
what the check hears, in order: a node that matters ``(name, None, chain)``, a call too deep
``(None, hop, chain to its caller)``."""
_SHARED_KEPT = 64
"""Shared traversals kept (the most recently used): light modules are checked in sorted order, so
siblings come together."""


def _statement_key(rules: ModuleRules, hops: Iterable[Hop]) -> object:
    """What a traversal from a statement depends on: the rules, and the modules and kinds of its
    hops in order (light modules whose statements have the same key may share one)."""
    ordered = sorted(hops, key=Hop.sort_key)
    return (rules.forbid, rules.allow, tuple((hop.imported, hop.kind) for hop in ordered))


def too_deep_code(hop: Hop) -> UnresolvedCode:
    """The IPL006 site of a call not followed because it is deeper than ``settings.call-depth``."""
    return UnresolvedCode(
        hop.module, hop.path, hop.line, hop.col, Construct.CALL_DEPTH,
        f"{hop.imported} (a call deeper than settings.call-depth)", hop.flags,
    )


_ONCE_PER_MODULE: Final = frozenset(
    {Construct.EXTENSION_MODULE, Construct.UNFOLLOWED_PACKAGE, Construct.NOT_INSTALLED}
)


class _BlindSpots:
    """The unresolved sites met while checking one light module: each once, with the first chain
    that reached it (breadth first, statements in order: the shortest), and where its code is
    installed (``installed_of``: :meth:`LightModuleChecker._installed_of`)."""

    def __init__(
        self, light: str, light_path: Path | None,
        installed_of: Callable[[UnresolvedCode, tuple[Hop, ...]], str],
    ) -> None:
        self.light = light
        self.light_path = light_path
        self._installed_of = installed_of
        self._found: dict[tuple[str, int, int, str, str], Unresolved] = {}

    def add(self, sites: Iterable[UnresolvedCode], chain: tuple[Hop, ...]) -> None:
        for site in sites:
            key: tuple[str, int, int, str, str] = (
                str(site.path), site.line, site.col, str(site.construct), str(site.module)
            )
            if site.construct in _ONCE_PER_MODULE:  # one blind spot, however often imported
                key = ("", 0, 0, str(site.construct), str(site.module))
            if key not in self._found:
                self._found[key] = Unresolved(self.light, site, chain, self.light_path,
                                              installed=self._installed_of(site, chain))

    def add_too_deep(self, hop: Hop, chain: tuple[Hop, ...]) -> None:
        """A call not followed because it is deeper than ``call-depth`` (IPL006 call-depth)."""
        self.add((too_deep_code(hop),), chain)

    def found(self) -> list[Unresolved]:
        return list(self._found.values())


def find_outermost(names: Iterable[str]) -> tuple[str, ...]:
    """The sorted set of ``names`` without those that are submodules of another of them (a
    forbidden package's submodules count as that package)."""
    unique = sorted(set(names))
    kept: list[str] = []
    for name in unique:
        if not any(name.startswith(parent + ".") for parent in kept):
            kept.append(name)
    return tuple(kept)
