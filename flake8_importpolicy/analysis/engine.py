"""Checking a policy: every chain by which a light module runs a forbidden module at import time.

This is the contract every adapter shares (CLI, flake8, mypy):

- one :class:`Violation` per (light module, first-hop statement): the statement in the light module's
  file whose execution leads to a forbidden module, or a pseudo-statement at line 1, column 0 with kind
  ``parent-package`` when the light module's own parent packages lead there;
- its chain is the shortest path from that statement to the nearest forbidden module, ties broken by
  comparing hops in order by ``(line, col, imported)``; other forbidden modules reachable from the same
  statement are listed in ``also``;
- one cause, one report: a statement whose every forbidden node was already run by an earlier
  statement (the light module's parent packages first, then in order) is not reported; its line is
  listed in the earlier one's ``covers``;
- ``# noqa`` / ``# noqa: IPL001`` on the statement's first line suppresses the violation (not the
  statements it covers).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Final, NamedTuple
from pathlib import Path

from flake8_importpolicy import codes
from flake8_importpolicy.analysis.graph import ImportGraph, is_compiled_only
from flake8_importpolicy.analysis.noqa import is_suppressed
from flake8_importpolicy.analysis.parallel import Extracted, FactsPool
from flake8_importpolicy.analysis.sources import FactsSource
from flake8_importpolicy.model.errors import find_close_match
from flake8_importpolicy.model.facts import SourceProblem, SourceRead
from flake8_importpolicy.model.findings import Problem, Report, Unresolved, Violation
from flake8_importpolicy.model.graph import (
    Construct,
    CallNode,
    FunctionNode,
    Hop,
    HopKind,
    UnresolvedCode,
    module_of,
)
from flake8_importpolicy.model.interpreter import InterpreterInfo
from flake8_importpolicy.model.patterns import ModulePattern, normalize_name
from flake8_importpolicy.model.policy import (
    HeavyRule,
    LightRule,
    ModuleRules,
    PatternEntry,
    Policy,
)
from flake8_importpolicy.model.ports import FactsCache
from flake8_importpolicy.model.reading import read_regular_file

if TYPE_CHECKING:
    from flake8_importpolicy.model.ignore import IgnoreRule
    from flake8_importpolicy.model.why import UnknownImport, WhyResult

__all__ = ["PolicyEngine"]


class _IgnoreTracker:
    """The policy's ``[[ignore]]`` entries, and which of them accepted something (IPL004 for the
    others). A plain class: one is made per engine, and a dataclass costs more to define than it
    saves here (docs/performance.md, "Value classes a run does not use are not created")."""

    def __init__(self, rules: tuple[IgnoreRule, ...]) -> None:
        self.rules = rules
        self.used: set[int] = set()

    def __call__(self, importer: str, imported: str) -> bool:
        for number, rule in enumerate(self.rules):
            if rule.matches(importer, imported):
                self.used.add(number)
                return True
        return False

    def accepts_unresolved(self, module: str) -> bool:
        """Whether an ``unresolved = ...`` entry accepts the unresolved code of ``module``."""
        for number, rule in enumerate(self.rules):
            if rule.accepts_unresolved(module):
                self.used.add(number)
                return True
        return False


class LightModuleCheck(NamedTuple):
    """What checking one light module finds (see :meth:`PolicyEngine.check_light_module`).

    Attributes:
        violations: not yet filtered by ``noqa``.
        problems: ``[(module, problem), ...]`` for the unanalysable modules met, sorted.
        unresolved: the import-time code met that cannot be resolved, each site once with its
            shortest chain; not yet filtered by ``noqa`` or ``[[ignore]]``.
    """

    violations: list[Violation]
    problems: list[tuple[str, SourceProblem]]
    unresolved: list[Unresolved]


class PolicyEngine:
    """The import-time graph of a policy's project, with the checks on top of it.

    The modules' facts come from a :class:`~flake8_importpolicy.analysis.sources.FactsSource` the
    engine makes (editor buffers, worker processes, the facts cache); the engine checks and explains.

    Args:
        policy: the loaded policy (source roots, interpreter, targets, rules).
        interpreter, target_versions, overrides, facts_cache, interpreter_info: as for
            :class:`~flake8_importpolicy.analysis.sources.FactsSource` (``--interpreter``,
            ``--target-version``, editor buffers, the facts cache, an interpreter already queried).
        jobs: processes that extract facts in parallel (see :mod:`flake8_importpolicy.analysis.parallel`);
            1 (the default) extracts everything in this process. Answers do not depend on it.

    Attributes:
        policy, interpreter, target, index, graph: the policy, the target interpreter's facts, the
            target, path search and the import-time graph.
        files_read: ``{path: what was read}`` of every file parsed so far (see
            :meth:`find_dependencies`).

    Call :meth:`close` (or use the engine as a context manager) to stop the worker processes.

    Raises:
        flake8_importpolicy.model.errors.InterpreterError: if the target interpreter cannot be queried.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        interpreter: str | None = None,
        target_versions: Iterable[tuple[int, int]] = (),
        overrides: Mapping[Path, bytes] | None = None,
        facts_cache: FactsCache | None = None,
        interpreter_info: InterpreterInfo | None = None,
        jobs: int = 1,
    ) -> None:
        self.policy = policy
        settings = policy.settings
        self._facts_source = FactsSource(
            policy,
            interpreter=interpreter,
            target_versions=target_versions,
            overrides=overrides,
            facts_cache=facts_cache,
            interpreter_info=interpreter_info,
            jobs=jobs,
        )
        self.interpreter = self._facts_source.interpreter
        self.target = self._facts_source.target
        self.index = self._facts_source.index
        self._ignores = _IgnoreTracker(policy.ignores)
        heavy_calls = policy.heavy_calls

        def is_heavy_call(name: str) -> bool:
            return any(rule.pattern.matches(name) for rule in heavy_calls)

        self._first_party_tops: frozenset[str] | None = None
        # Which code outside the source roots has its import-time calls and PEP 562 __getattr__
        # followed: what any light module's forbidden patterns need (third party, stdlib).
        every = [*policy.heavy, *policy.heavy_calls, *(h for r in policy.light for h in r.forbid)]
        self._scope = list(self._external_scope(h.pattern for h in every))
        self.graph = ImportGraph(
            self.index,
            self._facts_source.module_facts,
            self._ignores,
            call_depth=settings.call_depth,
            is_heavy_call=is_heavy_call if heavy_calls else None,
            function_facts=self._facts_source.function_facts,
            follows=self._follows,
        )
        self._shared_reach: OrderedDict[object, _SharedReach] = OrderedDict()
        self._statement_count: dict[object, int] = {}  # light modules with each statement key
        self._unclear: dict[str, bool] = {}
        # the same dict, kept up to date
        self.files_read: dict[Path, SourceRead] = self._facts_source.files_read

    # -- facts (from the FactsSource) --------------------------------------------------------------

    def __enter__(self) -> PolicyEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker processes, if any (the engine still works afterwards, serially)."""
        self._facts_source.close()

    @property
    def _pool(self) -> FactsPool:
        """The worker pool of the facts source (tests drive it)."""
        return self._facts_source.pool

    @property
    def _early(self) -> dict[Path, Extracted]:
        """The facts the facts source extracted early and the traversal has not used yet (tests
        look at them)."""
        return self._facts_source.early

    def find_dependencies(self) -> tuple[dict[Path, SourceRead], tuple[Path, ...]]:
        """What the answers computed so far depend on, for caches of whole answers: ``(files,
        directories)`` as :meth:`FactsSource.find_dependencies
        <flake8_importpolicy.analysis.sources.FactsSource.find_dependencies>` gives them (if none of
        these changed, the same questions get the same answers)."""
        return self._facts_source.find_dependencies()

    # -- light modules -----------------------------------------------------------------------------

    def find_light_modules(self, rule: LightRule) -> tuple[str, ...]:
        """The modules a light pattern names (exact name, or every match of a wildcard pattern).

        A non-wildcard name counts only if it resolves; sorted.
        """
        pattern = rule.pattern
        if not pattern.is_wildcard:
            found = self.index.resolve_module(pattern.text).kind != "unresolved"
            return (pattern.text,) if found else ()
        prefix = pattern.static_prefix
        if prefix:
            if self.index.resolve_module(prefix).kind == "unresolved":
                return ()
            candidates = [prefix, *self.index.find_descendants(prefix)]
        else:
            candidates = []
            for top in self.index.find_first_party_top_levels():
                candidates.extend([top, *self.index.find_descendants(top)])
        return tuple(sorted({c for c in candidates if pattern.matches_exactly(c)}))

    def make_expander(self, forbidden: Callable[[str], object | None],
                      patterns: Iterable[ModulePattern]) -> Callable[[str], bool]:
        """The predicate deciding which reached modules have their own imports followed.

        First-party modules with source are followed (and first-party ``.pyc`` files without source,
        which are reported as unanalysable); third-party and stdlib ones per
        ``settings.external`` (``stop``: never; ``follow``: always; ``auto``: wherever a forbidden
        module can still be reached: third-party code whenever a forbidden pattern names a
        third-party or standard-library module (third-party code imports both), the standard library
        only when one names a standard-library module (it imports nothing else). A forbidden
        first-party module is assumed unreachable from third-party code, as a wildcard pattern
        without a fixed top level is not: it makes both followed. Forbidden modules and modules
        already imported at interpreter start-up are never followed.
        """
        follow_third, follow_stdlib = self._external_scope(patterns)

        def expand(name: str) -> bool:
            if forbidden(name) is not None or isinstance(name, CallNode):
                return False
            if isinstance(name, FunctionNode):
                name = name.module
                if forbidden(name) is not None:
                    return False
            resolved = self.index.resolve_module(name)
            if resolved.preloaded or not (resolved.has_source or is_compiled_only(resolved)):
                return False
            if resolved.origin == "first-party":
                return True
            if resolved.origin == "stdlib":
                return follow_stdlib
            return follow_third

        return expand

    def _external_scope(
        self, patterns: Iterable[ModulePattern], external: str | None = None
    ) -> tuple[bool, bool]:
        """``(follow third-party code, follow the standard library)`` for forbidden ``patterns``, per
        ``settings.external`` or ``external`` (see :meth:`make_expander`)."""
        external = external or self.policy.settings.external
        if external != "auto":
            return external == "follow", external == "follow"
        follow_third = follow_stdlib = False
        tops = self.first_party_tops()
        for pattern in patterns:
            top = pattern.top_level
            if top is None:
                return True, True
            if top not in tops:
                follow_third = True
                if self.index.resolve_module(top).origin == "stdlib":
                    follow_stdlib = True
        return follow_third, follow_stdlib

    def _follows(self, module: str) -> bool:
        """Whether ``module``'s import-time calls and PEP 562 ``__getattr__`` are followed: always in
        first-party code, elsewhere when some light module's forbidden patterns need its origin
        followed (see :meth:`make_expander`)."""
        resolved = self.index.resolve_module(module)
        if resolved.preloaded or not resolved.has_source:
            return False
        if resolved.origin == "first-party":
            return True
        return self._scope[1] if resolved.origin == "stdlib" else self._scope[0]

    def first_party_tops(self) -> frozenset[str]:
        """Top-level first-party module names (cached)."""
        if self._first_party_tops is None:
            self._first_party_tops = frozenset(self.index.find_first_party_top_levels())
        return self._first_party_tops

    # -- the check ---------------------------------------------------------------------------------

    def check(self, progress: Callable[[int, int, str], None] | None = None) -> Report:
        """Check every light module; see the module docstring for the contract.

        Args:
            progress: called as ``progress(done, total, light_module)`` before each light module.
        """
        violations: dict[tuple[str, int, int, str], Violation] = {}
        problems: dict[tuple[str, str], Problem] = {}
        unresolved: list[Unresolved] = []
        suppressed = 0
        found_lights: set[str] = set()
        stale_patterns: list[str] = []
        for rule in self.policy.light:
            modules = self.find_light_modules(rule)
            if not modules:
                stale_patterns.append(rule.pattern.text)
            found_lights.update(modules)
        lines = _lines_of(self.policy.path, stale_patterns)
        for text in stale_patterns:
            problems[(codes.IPL003.id, text)] = Problem.of(
                codes.IPL003, self.policy.path, lines.get(text), pattern=text
            )
        lights = sorted(found_lights)
        for light in lights:  # which statements more than one light module has (see _reach)
            rules = self.policy.rules_for(light)
            for hops in self._statements(light).values():
                key = _statement_key(rules, hops)
                self._statement_count[key] = self._statement_count.get(key, 0) + 1
        for number, light in enumerate(lights):
            if progress is not None:
                progress(number, len(lights), light)
            found, bad_modules, cannot = self.check_light_module(light, self.policy.rules_for(light))
            unresolved.extend(u for u in cannot if not self._is_accepted(u))
            for violation in found:
                key = (violation.light, violation.line, violation.col, violation.kind)
                if key in violations:
                    continue
                if self._is_suppressed(violation):
                    suppressed += 1
                    continue
                violations[key] = violation
            over = self.check_budget(light, self.policy.rules_for(light))
            if over is not None:
                if self._is_suppressed(over):
                    suppressed += 1
                else:
                    violations[(light, 0, 0, str(codes.IPL008.id))] = over
            for module, problem in bad_modules:
                path = self.index.resolve_module(module).path
                problems[(codes.IPL005.id, module)] = Problem.of(
                    codes.IPL005, path, problem.line,
                    module=module, problem=f"line {problem.line}: {problem.message}",
                )
        notes: dict[tuple[str, str], Problem] = {}
        for rule in self.policy.light:
            for entry in rule.entries:
                stale = self._check_entry(entry, self._source_path(rule.source))
                if stale is not None:
                    (notes if stale[1] else problems).setdefault((codes.IPL007.id, entry.key), stale[0])
        for number, ignore in enumerate(self.policy.ignores):
            if number not in self._ignores.used:
                unused = Problem.of(
                    codes.IPL004, self._source_path(ignore.source), ignore.line, import_=ignore.text
                )
                # Accepted blind spots of a package not installed here (an optional dependency,
                # a compiled module of another platform) are a note, as IPL007's are.
                from flake8_importpolicy.model.ignore import NodePattern  # loaded with the entry

                side = ignore.importer
                absent = ignore.unresolved and self._is_absent(
                    side.module if isinstance(side, NodePattern) else side
                )
                (notes if absent else problems)[(codes.IPL004.id, ignore.text)] = unused
        return Report(
            violations=tuple(sorted(
                violations.values(),
                key=lambda v: (str(v.path), v.line, v.col, v.light, v.heavy),
            )),
            problems=tuple(sorted(
                problems.values(),
                key=lambda p: (str(p.path or ""), p.line or 0, p.code.id, p.message),
            )),
            suppressed=suppressed,
            light_modules=tuple(sorted(lights)),
            notes=tuple(notes.values()),
            unresolved=tuple(sorted(
                unresolved,
                key=lambda u: (u.light, str(u.site.path or ""), u.site.line, u.site.col,
                               u.site.construct, u.site.detail),
            )),
            unresolved_fails=self.policy.settings.unresolved == "error",
        )

    def _source_path(self, source: str) -> Path:
        """The file an entry of the policy came from: the policy file, or the base it ``extends``."""
        return next((s.path for s in self.policy.sources if s.label == source and source),
                    self.policy.path)

    def _is_absent(self, pattern: ModulePattern) -> bool:
        """Whether the top-level package a pattern names is not installed here."""
        top = pattern.top_level
        return top is not None and self.index.resolve_module(top).kind == "unresolved"

    def _check_entry(self, entry: PatternEntry, path: Path | None = None) -> tuple[Problem, bool] | None:
        """A ``forbid``/``allow`` entry that names no module: IPL007 (with a "did you mean" when a
        known name is close), or, when its top-level package is simply not installed here (heavy GPU
        packages on CI), a note: ``(problem, is_note)``; None when it names a module (a wildcard
        pattern: when its part before the first wildcard does)."""
        prefix = entry.pattern.static_prefix
        if not prefix or self.index.resolve_module(prefix).kind != "unresolved":
            return None
        parts = prefix.split(".")
        known = next((".".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)
                      if self.index.resolve_module(".".join(parts[:n])).kind != "unresolved"), None)
        if known is not None:
            candidates = list(self.index.find_children(known))
            missing = ".".join(parts[:known.count(".") + 2])
        else:
            candidates = list(self.index.find_top_levels())
            missing = parts[0]
        close = find_close_match(missing, candidates, cutoff=0.8)
        if close:
            hint = f"; did you mean {entry.pattern.text.replace(missing, close, 1)!r}?"
        elif known is None:
            hint = f"; package {missing!r} is not installed for this interpreter"
        else:
            hint = ""
        problem = Problem.of(codes.IPL007, path or self.policy.path, entry.line, key=entry.key,
                             entry=entry.pattern.text, hint=hint)
        return problem, known is None and not close

    def check_light_module(self, light: str, rules: ModuleRules) -> LightModuleCheck:
        """Violations of one light module under the rules that apply to it, the unanalysable
        modules met, and the import-time code met that cannot be resolved (IPL006)."""
        # Both are pure for one check; the traversal asks them again for every statement.
        forbidden_rule = functools.cache(rules.forbidden_rule)
        expand = functools.cache(self.make_expander(forbidden_rule, (h.pattern for h in rules.forbid)))
        resolved = self.index.resolve_module(light)
        path = resolved.path or (resolved.locations[0] if resolved.locations else self.policy.root)
        statements = self._statements(light)
        violations: list[Violation] = []
        covers: list[list[int]] = []
        ran: dict[str, int] = {}  # forbidden node -> the violation whose statement ran it first
        bad: dict[str, SourceProblem] = {}
        light_problem = self.graph.find_problem(light)
        if light_problem is not None:
            bad[light] = light_problem
        blind = _BlindSpots(light, path if resolved.path else None)
        blind.add(self.graph.find_unresolved(light), ())
        unfollowed = self._unfollowed_origins(rules)
        # The light module's parent packages run first, then its statements in order.
        for (line, col, is_parent), hops in sorted(statements.items(), key=lambda s: (not s[0][2], s[0])):
            reached: list[tuple[str, tuple[Hop, ...], HeavyRule]] = []
            for name, chain in self._reach(
                light, hops, rules, expand, forbidden_rule, unfollowed, blind.add_too_deep
            ):
                heavy = forbidden_rule(name)
                if heavy is not None and not self.index.resolve_module(name).preloaded:
                    reached.append((name, chain, heavy))
                elif expand(name):
                    problem = self.graph.find_problem(name)
                    if problem is not None:
                        bad[module_of(name)] = problem
                    blind.add(self.graph.find_unresolved(name), chain)
                elif heavy is None:
                    blind.add(self._unexpanded(name, chain, unfollowed), chain)
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
                        name for name in _outermost(name for name, _, _ in fresh)
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

    def check_budget(self, light: str, rules: ModuleRules) -> Violation | None:
        """IPL008 when ``light``'s import-time closure counts more modules than ``max-modules``
        (:meth:`count_closure`, followed as its check follows it); None when within it or when no
        budget applies."""
        limit = rules.max_modules
        if limit is None:
            return None
        units = self.count_closure(self.find_closure(light, rules))
        if len(units) <= limit:
            return None
        through: dict[str, int] = {}
        for chain in units.values():
            if chain:
                first = str(chain[0].imported)
                through[first] = through.get(first, 0) + 1
        biggest = sorted(through.items(), key=lambda item: (-item[1], item[0]))[:3]
        resolved = self.index.resolve_module(light)
        path = resolved.path or (resolved.locations[0] if resolved.locations else self.policy.root)
        from flake8_importpolicy.model.budget import Budget  # most policies set no budget

        return Violation(
            light=light, heavy="", pattern="", reason=rules.reason, path=path, line=1, col=0,
            kind="", also=(), chain=(), code=codes.IPL008,
            budget=Budget(len(units), limit, tuple(biggest)),
        )

    def find_closure(self, module: str, rules: ModuleRules) -> dict[str, tuple[Hop, ...]]:
        """``module``'s import-time closure followed as its check follows it (forbidden modules are
        leaves; external code per ``settings.external`` and the rules' forbidden patterns)."""
        expand = self.make_expander(rules.forbidden_rule, (h.pattern for h in rules.forbid))
        return self.graph.find_import_time_closure(module, expand=expand)

    def count_closure(self, closure: Mapping[str, tuple[Hop, ...]]) -> dict[str, tuple[Hop, ...]]:
        """The units a ``max-modules`` budget counts in ``closure``
        (:func:`~flake8_importpolicy.model.budget.count_units`: each first-party module, each
        top-level package of other code), each with the shortest chain that first reaches it.
        Function bodies, heavy calls, modules preloaded at start-up and unresolved names do not
        count."""
        from flake8_importpolicy.model.budget import unit_of  # most policies set no budget

        units: dict[str, tuple[Hop, ...]] = {}
        for name, chain in closure.items():
            if isinstance(name, (FunctionNode, CallNode)):
                continue
            resolved = self.index.resolve_module(name)
            if resolved.preloaded or resolved.kind == "unresolved":
                continue
            unit = unit_of(name, resolved.origin == "first-party")
            if unit not in units or len(chain) < len(units[unit]):
                units[unit] = chain
        return units

    def _unfollowed_origins(self, rules: ModuleRules) -> frozenset[str]:
        """The origins (``third-party``, ``stdlib``) whose packages a light module's forbidden
        modules could be reached through but that ``external = "stop"`` does not analyse."""
        if self.policy.settings.external != "stop":
            return frozenset()
        third, stdlib = self._external_scope((h.pattern for h in rules.forbid), external="auto")
        return frozenset(o for o, on in (("third-party", third), ("stdlib", stdlib)) if on)

    def _unexpanded(
        self, name: str, chain: tuple[Hop, ...], unfollowed: frozenset[str]
    ) -> tuple[UnresolvedCode, ...]:
        """A reached node whose code is not analysed, when that hides what it imports: a compiled
        module without a ``.py`` twin outside the standard library, or a package that
        ``external = "stop"`` leaves out although a forbidden module could be reached through it."""
        if isinstance(name, (FunctionNode, CallNode)) or not chain:
            return ()
        resolved = self.index.resolve_module(name)
        if resolved.preloaded:
            return ()
        last = chain[-1]
        if resolved.kind == "extension" and resolved.origin != "stdlib":
            detail = f"{name} (compiled: its imports are not known)"
            construct = Construct.EXTENSION_MODULE
        elif resolved.has_source and resolved.origin in unfollowed:
            name = name.partition(".")[0]
            detail = f"{name} (not analysed: external = \"stop\")"
            construct = Construct.UNFOLLOWED_PACKAGE
        else:
            return ()
        return (UnresolvedCode(name, last.path, last.line, last.col, construct, detail, last.flags),)

    def _is_accepted(self, unresolved: Unresolved) -> bool:
        """An unresolved site accepted by ``# noqa: IPL006`` on its line (in first-party code) or on
        the light module's statement that leads there, or by an ``[[ignore]] unresolved`` entry."""
        site = unresolved.site
        if self._ignores.accepts_unresolved(site.module):
            return True
        lines = [(unresolved.first_hop[0], unresolved.first_hop[1])]
        if site.path is not None and self.index.origin_of_path(site.path) == "first-party":
            lines.append((site.path, site.line))
        for path, line in lines:
            text = None if path is None else self._facts_source.source_line(path, line)
            if text is not None and is_suppressed(text, codes.IPL006.id):
                return True
        return False

    def _reach(
        self,
        light: str,
        hops: list[Hop],
        rules: ModuleRules,
        expand: Callable[[str], bool],
        forbidden_rule: Callable[[str], HeavyRule | None],
        unfollowed: frozenset[str],
        too_deep: Callable[[Hop, tuple[Hop, ...]], None],
    ) -> Iterator[tuple[str, tuple[Hop, ...]]]:
        """What the check of one statement of ``light`` looks at: the nodes its ``hops`` reach
        without passing through ``light`` that are forbidden, or followed and unanalysable, or hold
        import-time code that cannot be resolved (followed or not: :meth:`_unexpanded`), each with
        its chain, in the order of :meth:`ImportGraph.iter_breadth_first
        <flake8_importpolicy.analysis.graph.ImportGraph.iter_breadth_first>`, which calls
        ``too_deep`` in between as it does.

        A statement that only one light module has (:meth:`check` counts them first) gets a
        traversal of its own. Light modules whose statements name the same modules under the same
        rules (siblings, through their parent package; modules that import one hub) share one
        traversal, made without any module left out: leaving ``light`` out changes nothing when the
        traversal never reached it, or reached it and found nothing from it (no new node, no call
        too deep) and it matters to nobody; otherwise ``light`` gets a traversal of its own. Without
        this, ``"big.**"`` over a package whose ``__init__`` imports its 10,000 modules took 10,000
        traversals of 10,000 modules.
        """
        ordered = sorted(hops, key=Hop.sort_key)
        key = _statement_key(rules, ordered)

        def matters(name: str, chain: tuple[Hop, ...]) -> bool:
            if forbidden_rule(name) is not None:
                return True
            if expand(name):
                return self._is_unclear(name)
            return bool(self._unexpanded(name, chain, unfollowed))

        shared = self._shared_reach.get(key)
        if shared is None and self._statement_count.get(key, 0) < 2:
            # Most statements are one light module's own, and a light module that its own closure
            # reaches (a package whose __init__ imports it) makes a shared traversal useless: building
            # one for every statement visited twice the nodes on torch.
            for name, chain in self.graph.iter_breadth_first(
                ordered, expand=expand, seen={light}, too_deep=too_deep
            ):
                if matters(name, chain):
                    yield name, chain
            return
        if shared is None:
            reached_now: set[str] = set()
            busy: set[str] = set()  # nodes that reached a node first, or met a call too deep
            events: list[tuple[str | None, Hop | None, tuple[Hop, ...]]] = []

            def deep(hop: Hop, chain: tuple[Hop, ...]) -> None:
                if chain:
                    busy.add(chain[-1].imported)
                events.append((None, hop, chain))

            for name, chain in self.graph.iter_breadth_first(ordered, expand=expand, too_deep=deep):
                reached_now.add(name)
                if len(chain) > 1:
                    busy.add(chain[-2].imported)
                if matters(name, chain):
                    events.append((name, None, chain))
            mattering = frozenset(name for name, _, _ in events if name is not None)
            shared = (frozenset(reached_now), frozenset(busy), mattering, events)
            self._shared_reach[key] = shared
            if len(self._shared_reach) > _SHARED_KEPT:
                self._shared_reach.popitem(last=False)
        else:
            self._shared_reach.move_to_end(key)
        reached, busy_nodes, mattering, recorded = shared
        if light in reached and (light in busy_nodes or light in mattering):
            for name, chain in self.graph.iter_breadth_first(
                hops, expand=expand, seen={light}, too_deep=too_deep
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
        (asked for every node every traversal reaches: answered once per node)."""
        unclear = self._unclear.get(node)
        if unclear is None:
            unclear = self._unclear[node] = (
                self.graph.find_problem(node) is not None or bool(self.graph.find_unresolved(node))
            )
        return unclear

    def _lazy_attachments(self, node: str) -> list[UnknownImport]:
        """Calls in ``node``'s import-time code that attach submodules lazily (rule 18)."""
        owner = module_of(node)
        facts = self.graph.get_facts(owner)
        if facts is None:
            return []
        calls = facts.calls
        if isinstance(node, FunctionNode):
            function_facts = self.graph.get_function_facts(owner, node.qualname)
            calls = function_facts.calls if function_facts else ()
        path = self.index.resolve_module(owner).path
        from flake8_importpolicy.model.why import UnknownImport  # why only: a check never loads it

        return [
            UnknownImport(node, path, call.line, call.col, call.callee)
            for call in calls
            if call.kind == "call" and _is_lazy_attacher(call.callee)
        ]

    def _is_suppressed(self, violation: Violation) -> bool:
        text = self._facts_source.source_line(violation.path, violation.line)
        return text is not None and is_suppressed(text, violation.code.id)

    # -- why ---------------------------------------------------------------------------------------

    def find_why(self, module: str, heavy: ModulePattern | None = None) -> WhyResult:
        """Everything ``import module`` runs, and the forbidden modules it reaches.

        Args:
            module: any importable module (first-party or installed).
            heavy: a pattern to look for instead of the policy's rules. Without it, the forbid rules of
                the light rule that names ``module`` are used, else every ``[heavy]`` rule.
        """
        from flake8_importpolicy.model.why import UnknownImport, WhyResult  # a check never loads it

        if heavy is not None:
            named = "named by --heavy"
            applied = ModuleRules(module, (), (HeavyRule(heavy, named), HeavyRule(heavy, named, True)))
        else:
            applied = self.policy.rules_for(module)
        rules = applied.forbid
        forbidden = applied.forbidden_rule
        widened = self._external_scope(r.pattern for r in rules)
        self._scope = [a or b for a, b in zip(self._scope, widened)]

        expand = self.make_expander(forbidden, (r.pattern for r in rules))
        deep: list[UnresolvedCode] = []
        closure = self.graph.find_import_time_closure(
            module, expand=expand, too_deep=lambda hop, _chain: deep.append(_too_deep(hop))
        )
        unfollowed = self._unfollowed_origins(applied)
        found: list[tuple[str, HeavyRule]] = []
        unresolved: list[UnresolvedCode] = list(self.graph.find_unresolved(module))
        lazy: list[UnknownImport] = []
        bad: dict[str, SourceProblem] = {}  # by module: several called functions may share one
        for name in closure:
            rule = forbidden(name)
            if rule is not None and name != module:
                found.append((name, rule))
                continue
            if name == module or expand(name):
                if name != module:
                    unresolved.extend(self.graph.find_unresolved(name))
                lazy.extend(self._lazy_attachments(name))
                problem = self.graph.find_problem(name)
                if problem is not None:
                    bad.setdefault(module_of(name), problem)
            elif rule is None:
                unresolved.extend(self._unexpanded(name, closure[name], unfollowed))
        outermost = set(_outermost(name for name, _ in found if not isinstance(name, CallNode)))
        return WhyResult(
            module=module,
            resolved=self.index.resolve_module(module),
            closure=closure,
            paths={
                name: self.index.resolve_module(module_of(name)).path for name in closure
            },
            # as check's "also": a forbidden package's submodules count as that package
            forbidden=tuple(
                (name, rule) for name, rule in found
                if isinstance(name, CallNode) or name in outermost
            ),
            unresolved=tuple(unresolved + deep),
            lazy=tuple(lazy),
            problems=tuple(bad.items()),
            count=len(self.count_closure(closure)),
        )


_SharedReach = tuple[
    frozenset[str], frozenset[str], frozenset[str],
    list[tuple["str | None", "Hop | None", tuple[Hop, ...]]],
]
"""A traversal shared by light modules (see ``PolicyEngine._reach``): the nodes reached, those that
reached a node first or met a call too deep, those that matter to the check, and what the check
hears, in order: a node that matters ``(name, None, chain)``, a call too deep ``(None, hop, chain
to its caller)``."""
_SHARED_KEPT = 64
"""Shared traversals kept (the most recently used): light modules are checked in sorted order, so
siblings come together."""


def _statement_key(rules: ModuleRules, hops: Iterable[Hop]) -> object:
    """What a traversal from a statement depends on: the rules, and the modules and kinds of its
    hops in order (light modules whose statements have the same key may share one)."""
    ordered = sorted(hops, key=Hop.sort_key)
    return (rules.forbid, rules.allow, tuple((hop.imported, hop.kind) for hop in ordered))


def _too_deep(hop: Hop) -> UnresolvedCode:
    return UnresolvedCode(
        hop.module, hop.path, hop.line, hop.col, Construct.CALL_DEPTH,
        f"{hop.imported} (a call deeper than settings.call-depth)", hop.flags,
    )


_ONCE_PER_MODULE: Final = frozenset({Construct.EXTENSION_MODULE, Construct.UNFOLLOWED_PACKAGE})


class _BlindSpots:
    """The unresolved sites met while checking one light module: each once, with the first chain
    that reached it (breadth first, statements in order: the shortest)."""

    def __init__(self, light: str, light_path: Path | None) -> None:
        self.light = light
        self.light_path = light_path
        self._found: dict[tuple[str, int, int, str, str], Unresolved] = {}

    def add(self, sites: Iterable[UnresolvedCode], chain: tuple[Hop, ...]) -> None:
        for site in sites:
            key: tuple[str, int, int, str, str] = (
                str(site.path), site.line, site.col, str(site.construct), str(site.module)
            )
            if site.construct in _ONCE_PER_MODULE:  # one blind spot, however often imported
                key = ("", 0, 0, str(site.construct), str(site.module))
            if key not in self._found:
                self._found[key] = Unresolved(self.light, site, chain, self.light_path)

    def add_too_deep(self, hop: Hop, chain: tuple[Hop, ...]) -> None:
        """A call not followed because it is deeper than ``call-depth`` (IPL006 call-depth)."""
        self.add((_too_deep(hop),), chain)

    def found(self) -> list[Unresolved]:
        return list(self._found.values())


_LAZY_ATTACHERS = ("lazy_loader.attach", "lazy_loader.attach_stub")


def _is_lazy_attacher(callee: str) -> bool:
    return callee.endswith(_LAZY_ATTACHERS) or callee.rpartition(".")[2] == "_LazyModule"


def _outermost(names: Iterable[str]) -> tuple[str, ...]:
    """The sorted set of ``names`` without those that are submodules of another of them."""
    unique = sorted(set(names))
    kept: list[str] = []
    for name in unique:
        if not any(name.startswith(parent + ".") for parent in kept):
            kept.append(name)
    return tuple(kept)


_QUOTED = re.compile(r'"((?:[^"\\\n]|\\.)*)"|\'([^\'\n]*)\'')


def _lines_of(path: Path, needles: Iterable[str]) -> dict[str, int]:
    """The 1-based line of the first line of ``path`` that quotes each needle (a key of the policy,
    NFKC-normalised as patterns are), read once (best effort: needles not found are left out)."""
    wanted = set(needles)
    found: dict[str, int] = {}
    if not wanted:
        return found
    try:
        text = read_regular_file(path)[1].decode("utf-8", "replace")
    except OSError:
        return found
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _QUOTED.finditer(line):
            quoted = normalize_name(match.group(1) if match.group(1) is not None else match.group(2))
            if quoted in wanted and quoted not in found:
                found[quoted] = number
    return found
