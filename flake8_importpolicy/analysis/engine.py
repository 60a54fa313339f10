"""Checking a policy: every chain by which a light module runs a forbidden module at import time.

A :class:`PolicyEngine` puts the analysis together for one policy and one target: the modules'
facts (:mod:`~flake8_importpolicy.analysis.sources`), the import-time graph
(:mod:`~flake8_importpolicy.analysis.graph`), which code is followed
(:mod:`~flake8_importpolicy.analysis.follow`), the check of each light module and its contract
(:mod:`~flake8_importpolicy.analysis.light_check`: one violation per cause, shortest chains) and
the report's other codes (:mod:`~flake8_importpolicy.analysis.checks`). ``# noqa`` /
``# noqa: IPL001`` on a statement's first line suppresses its violation (not the statements it
covers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from flake8_importpolicy import codes
from flake8_importpolicy.analysis.checks import (
    IgnoreTracker,
    ProblemKey,
    check_budget,
    check_entries,
    check_ignores_used,
    check_light_patterns,
    check_misplaced,
    check_unanalysable,
    count_closure,
    find_misplaced_packages,
)
from flake8_importpolicy.analysis.follow import FollowedCode
from flake8_importpolicy.analysis.graph import ImportGraph
from flake8_importpolicy.analysis.light_check import (
    LightModuleCheck,
    LightModuleChecker,
    find_outermost,
    too_deep_code,
)
from flake8_importpolicy.analysis.noqa import is_suppressed
from flake8_importpolicy.analysis.parallel import Extracted, FactsPool
from flake8_importpolicy.analysis.sources import FactsSource
from flake8_importpolicy.model.facts import SourceProblem, SourceRead
from flake8_importpolicy.model.findings import Problem, Report, Unresolved, Violation
from flake8_importpolicy.model.graph import CallNode, FunctionNode, Hop, UnresolvedCode, module_of
from flake8_importpolicy.model.interpreter import InterpreterInfo
from flake8_importpolicy.model.patterns import ModulePattern
from flake8_importpolicy.model.policy import HeavyRule, LightRule, ModuleRules, Policy
from flake8_importpolicy.model.ports import FactsCache

if TYPE_CHECKING:
    from flake8_importpolicy.model.why import UnknownImport, WhyResult

__all__ = ["LightModuleCheck", "PolicyEngine"]


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
        self._ignores = IgnoreTracker(policy.ignores)
        heavy_calls = policy.heavy_calls

        def is_heavy_call(name: str) -> bool:
            return any(rule.pattern.matches(name) for rule in heavy_calls)

        def unless_environ(name: str) -> tuple[tuple[tuple[str, str], ...], ...]:
            """The ``unless-environ`` pairs of each rule matching heavy call ``name``; none when
            one of them has none (the call is heavy whatever the environment)."""
            matching = [rule.unless_environ for rule in heavy_calls if rule.pattern.matches(name)]
            return () if not all(matching) else tuple(matching)

        self._follow = FollowedCode(policy, self.index)
        self.graph = ImportGraph(
            self.index,
            self._facts_source.module_facts,
            self._ignores,
            call_depth=policy.settings.call_depth,
            is_heavy_call=is_heavy_call if heavy_calls else None,
            heavy_call_environ=(
                (unless_environ, dict(self.target.environ))
                if any(rule.unless_environ for rule in heavy_calls) else None
            ),
            function_facts=self._facts_source.function_facts,
            follows=self._follow.follows,
        )
        self._light_check = LightModuleChecker(self.graph, self._follow, policy.root)
        # the same dict, kept up to date
        self.files_read: dict[Path, SourceRead] = self._facts_source.files_read
        # A reference cycle on purpose: an engine is freed by the garbage collector, never as soon
        # as its last reference goes. A command-line check pauses the collector and leaves with
        # os._exit, so the facts and graph it built are never torn down one object at a time
        # (docs/performance.md, "No heap teardown at exit": vLLM's cold check, 9 M instructions);
        # a longer-lived process gets the memory back at the next collection.
        self._cycle = self

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
        """The predicate deciding which reached modules have their own imports followed
        (:meth:`FollowedCode.make_expander
        <flake8_importpolicy.analysis.follow.FollowedCode.make_expander>`)."""
        return self._follow.make_expander(forbidden, patterns)

    def first_party_tops(self) -> frozenset[str]:
        """Top-level first-party module names (cached)."""
        return self._follow.first_party_tops()

    # -- the check ---------------------------------------------------------------------------------

    def check(
        self,
        progress: Callable[[int, int, str], None] | None = None,
        reading: Callable[[str], None] | None = None,
    ) -> Report:
        """Check every light module (:mod:`~flake8_importpolicy.analysis.light_check` gives the
        contract), and the policy itself (:mod:`~flake8_importpolicy.analysis.checks`).

        Args:
            progress: called as ``progress(done, total, light_module)`` before each light module.
            reading: called with what is read when the traversal moves to another installed package
                (``"installed package torch"``) or to the standard library.
        """
        policy = self.policy
        self._facts_source.reading = reading
        violations: dict[tuple[str, int, int, str], Violation] = {}
        unresolved: list[Unresolved] = []
        suppressed = 0
        misplaced = find_misplaced_packages(policy, self.index)
        found_lights, problems = check_light_patterns(policy, self.find_light_modules, misplaced)
        problems.update(check_misplaced(policy, misplaced))
        lights = sorted(found_lights)
        for light in lights:  # which statements more than one light module has
            self._light_check.count_statements(light, policy.rules_for(light))
        for number, light in enumerate(lights):
            if progress is not None:
                progress(number, len(lights), light)
            rules = policy.rules_for(light)
            found, bad_modules, cannot = self.check_light_module(light, rules)
            unresolved.extend(u for u in cannot if not self._is_accepted(u))
            for violation in found:
                key = (violation.light, violation.line, violation.col, violation.kind)
                if key in violations:
                    continue
                if self._is_suppressed(violation):
                    suppressed += 1
                    continue
                violations[key] = violation
            over = self.check_budget(light, rules)
            if over is not None:
                if self._is_suppressed(over):
                    suppressed += 1
                else:
                    violations[(light, 0, 0, str(codes.IPL008.id))] = over
            problems.update(check_unanalysable(bad_modules, self.index))
        notes: dict[ProblemKey, Problem] = {}
        for more_problems, more_notes in (  # the codes' keys differ: nothing is replaced
            check_entries(policy, self.index, self._facts_source.module_facts, misplaced),
            check_ignores_used(policy, self.index, self._ignores),
        ):
            problems.update(more_problems)
            notes.update(more_notes)
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
            unresolved_fails=policy.settings.unresolved == "error",
        )

    def check_light_module(self, light: str, rules: ModuleRules) -> LightModuleCheck:
        """Violations of one light module under the rules that apply to it, the unanalysable
        modules met, and the import-time code met that cannot be resolved (IPL006)
        (:meth:`LightModuleChecker.check
        <flake8_importpolicy.analysis.light_check.LightModuleChecker.check>`)."""
        return self._light_check.check(light, rules)

    def check_budget(self, light: str, rules: ModuleRules) -> Violation | None:
        """IPL008 when ``light``'s import-time closure counts more modules than ``max-modules``
        (:meth:`count_closure`, followed as its check follows it); None when within it or when no
        budget applies."""
        if rules.max_modules is None:
            return None
        resolved = self.index.resolve_module(light)
        path = resolved.path or (resolved.locations[0] if resolved.locations else self.policy.root)
        return check_budget(light, rules, self.find_budget_closure(light, rules), self.index, path,
                            self.graph.find_import_time_edges)

    def find_closure(self, module: str, rules: ModuleRules) -> dict[str, tuple[Hop, ...]]:
        """``module``'s import-time closure followed as its check follows it (forbidden modules are
        leaves; external code per ``settings.external`` and the rules' forbidden patterns)."""
        expand = self.make_expander(rules.forbidden_rule, (h.pattern for h in rules.forbid))
        return self.graph.find_import_time_closure(module, expand=expand)

    def find_budget_closure(
        self, module: str, rules: ModuleRules, closure: Mapping[str, tuple[Hop, ...]] | None = None,
    ) -> Mapping[str, tuple[Hop, ...]]:
        """``module``'s import-time closure as a ``max-modules`` budget counts it: followed as its
        check follows it (``closure``, when the caller has it), but through forbidden modules too:
        what a forbidden module imports also runs, and ``verify`` counts it (model/budget.py: one
        rule for both). The same closure when it reaches no forbidden module."""
        if closure is None:
            closure = self.find_closure(module, rules)
        forbidden = rules.forbidden_rule
        if not any(forbidden(name) is not None for name in closure if name != module):
            return closure
        expand = self.make_expander(_nothing_forbidden, (h.pattern for h in rules.forbid))
        return self.graph.find_import_time_closure(module, expand=expand)

    def count_closure(self, closure: Mapping[str, tuple[Hop, ...]]) -> dict[str, tuple[Hop, ...]]:
        """The units a ``max-modules`` budget counts in ``closure``, each with the shortest chain
        that first reaches it (:func:`~flake8_importpolicy.analysis.checks.count_closure`)."""
        return count_closure(closure, self.index, self.graph.find_import_time_edges)

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
        from flake8_importpolicy.model.why import WhyResult  # a check never loads it

        if heavy is not None:
            named = "named by --heavy"
            applied = ModuleRules(module, (), (HeavyRule(heavy, named), HeavyRule(heavy, named, True)))
        else:
            applied = self.policy.rules_for(module)
        rules = applied.forbid
        forbidden = applied.forbidden_rule
        self._follow.widen(r.pattern for r in rules)

        expand = self.make_expander(forbidden, (r.pattern for r in rules))
        deep: list[UnresolvedCode] = []
        closure = self.graph.find_import_time_closure(
            module, expand=expand, too_deep=lambda hop, _chain: deep.append(too_deep_code(hop))
        )
        unfollowed = self._follow.find_unfollowed_origins(applied)
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
                unresolved.extend(self._follow.find_unexpanded(name, closure[name], unfollowed))
        outermost = set(find_outermost(name for name, _ in found if not isinstance(name, CallNode)))
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
            count=len(self.count_closure(self.find_budget_closure(module, applied, closure))),
        )

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


_LAZY_ATTACHERS = ("lazy_loader.attach", "lazy_loader.attach_stub")


def _is_lazy_attacher(callee: str) -> bool:
    return callee.endswith(_LAZY_ATTACHERS) or callee.rpartition(".")[2] == "_LazyModule"


def _nothing_forbidden(name: str) -> None:
    """The forbidden test of a budget's closure (:meth:`PolicyEngine.find_budget_closure`): no module
    is a leaf for being forbidden."""
    return None
