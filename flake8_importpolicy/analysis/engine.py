"""Checking a policy: every chain by which a light module runs a forbidden module at import time.

This is the contract every adapter shares (CLI, flake8, mypy):

- one :class:`Violation` per (light module, first-hop statement): the statement in the light module's
  file whose execution leads to a forbidden module, or a pseudo-statement at line 1, column 0 with kind
  ``parent-package`` when the light module's own parent packages lead there;
- its chain is the shortest path from that statement to the nearest forbidden module, ties broken by
  comparing hops in order by ``(line, col, imported)``; other forbidden modules reachable from the same
  statement are listed in ``also``;
- ``# noqa`` / ``# noqa: IPL001`` on the statement's first line suppresses the violation.
"""

from __future__ import annotations

import functools
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flake8_importpolicy import codes
from flake8_importpolicy.analysis.graph import ImportGraph, is_compiled_only
from flake8_importpolicy.analysis.noqa import is_suppressed
from flake8_importpolicy.analysis.parallel import Extracted, FactsPool
from flake8_importpolicy.analysis.sources import FactsSource
from flake8_importpolicy.model.facts import SourceProblem, SourceRead
from flake8_importpolicy.model.findings import Problem, Report, Violation, WhyResult
from flake8_importpolicy.model.graph import (
    CallNode,
    FunctionNode,
    Hop,
    HopKind,
    UnknownImport,
    module_of,
)
from flake8_importpolicy.model.interpreter import InterpreterInfo
from flake8_importpolicy.model.patterns import ModulePattern, normalize_name
from flake8_importpolicy.model.policy import (
    HeavyRule,
    IgnoreRule,
    LightRule,
    ModuleRules,
    Policy,
)
from flake8_importpolicy.model.ports import FactsCache
from flake8_importpolicy.model.reading import read_regular_file

__all__ = ["PolicyEngine"]


@dataclass
class _IgnoreTracker:
    rules: tuple[IgnoreRule, ...]
    used: set[int] = field(default_factory=set)

    def __call__(self, importer: str, imported: str) -> bool:
        for number, rule in enumerate(self.rules):
            if rule.importer.matches_exactly(importer) and rule.imported.matches_exactly(imported):
                self.used.add(number)
                return True
        return False


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

        self.graph = ImportGraph(
            self.index,
            self._facts_source.module_facts,
            self._ignores,
            call_depth=settings.call_depth,
            is_heavy_call=is_heavy_call if heavy_calls else None,
            function_facts=self._facts_source.function_facts,
        )
        self._first_party_tops: frozenset[str] | None = None
        self._shared_reach: OrderedDict[object, _SharedReach] = OrderedDict()
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
        ``settings.external`` (``stop``: never; ``follow``: always; ``auto``: third-party only when a
        forbidden pattern names a non-first-party module, stdlib only when one names a stdlib module).
        Forbidden modules and modules already imported at interpreter start-up are never followed.
        """
        external = self.policy.settings.external
        follow_third = external == "follow"
        follow_stdlib = external == "follow"
        if external == "auto":
            tops = self.first_party_tops()
            for pattern in patterns:
                top = pattern.top_level
                if top is None:
                    follow_third = True
                elif top not in tops:
                    origin = self.index.resolve_module(top).origin
                    if origin == "stdlib":
                        follow_stdlib = True
                    else:
                        follow_third = True

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
        suppressed = 0
        found_lights: set[str] = set()
        stale: list[str] = []
        for rule in self.policy.light:
            modules = self.find_light_modules(rule)
            if not modules:
                stale.append(rule.pattern.text)
            found_lights.update(modules)
        lines = _lines_of(self.policy.path, stale)
        for text in stale:
            problems[(codes.IPL003.id, text)] = Problem.of(
                codes.IPL003, self.policy.path, lines.get(text), pattern=text
            )
        lights = sorted(found_lights)
        for number, light in enumerate(lights):
            if progress is not None:
                progress(number, len(lights), light)
            found, bad_modules = self.check_light_module(light, self.policy.rules_for(light))
            for violation in found:
                key = (violation.light, violation.line, violation.col, violation.kind)
                if key in violations:
                    continue
                if self._is_suppressed(violation):
                    suppressed += 1
                    continue
                violations[key] = violation
            for module, problem in bad_modules:
                path = self.index.resolve_module(module).path
                problems[(codes.IPL005.id, module)] = Problem.of(
                    codes.IPL005, path, problem.line,
                    module=module, problem=f"line {problem.line}: {problem.message}",
                )
        for number, ignore in enumerate(self.policy.ignores):
            if number not in self._ignores.used:
                problems[(codes.IPL004.id, ignore.text)] = Problem.of(
                    codes.IPL004, self.policy.path, ignore.line, import_=ignore.text
                )
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
        )

    def check_light_module(
        self, light: str, rules: ModuleRules
    ) -> tuple[list[Violation], list[tuple[str, SourceProblem]]]:
        """Violations of one light module under the rules that apply to it, and the unanalysable
        modules met.

        Returns:
            ``(violations, [(module, problem), ...])``; violations are not yet filtered by ``noqa``.
        """
        # Both are pure for one check; the traversal asks them again for every statement.
        forbidden_rule = functools.cache(rules.forbidden_rule)
        expand = functools.cache(self.make_expander(forbidden_rule, (h.pattern for h in rules.forbid)))
        resolved = self.index.resolve_module(light)
        path = resolved.path or (resolved.locations[0] if resolved.locations else self.policy.root)
        statements: dict[tuple[int, int, bool], list[Hop]] = {}
        for hop in self.graph.find_parent_hops(light):
            statements.setdefault((hop.line, hop.col, True), []).append(hop)
        for hop in self.graph.find_import_time_edges(light):
            statements.setdefault((hop.line, hop.col, False), []).append(hop)
        violations: list[Violation] = []
        bad: dict[str, SourceProblem] = {}
        light_problem = self.graph.find_problem(light)
        if light_problem is not None:
            bad[light] = light_problem
        for (line, col, is_parent), hops in sorted(statements.items()):
            reached: list[tuple[str, tuple[Hop, ...], HeavyRule]] = []
            for name, chain in self._reach(light, hops, rules, expand, forbidden_rule):
                heavy = forbidden_rule(name)
                if heavy is not None and not self.index.resolve_module(name).preloaded:
                    reached.append((name, chain, heavy))
                elif expand(name):
                    problem = self.graph.find_problem(name)
                    if problem is not None:
                        bad[module_of(name)] = problem
            if not reached:
                continue
            heavy_name, chain, heavy_rule = reached[0]
            violations.append(
                Violation(
                    light=light,
                    heavy=heavy_name,
                    pattern=heavy_rule.pattern.text,
                    reason=heavy_rule.reason,
                    path=path,
                    line=line,
                    col=col,
                    kind=HopKind.PARENT_PACKAGE if is_parent else chain[0].kind,
                    also=tuple(
                        name for name in _outermost(name for name, _, _ in reached)
                        if name != heavy_name
                    ),
                    chain=chain,
                )
            )
        return violations, sorted(bad.items())

    def _reach(
        self,
        light: str,
        hops: list[Hop],
        rules: ModuleRules,
        expand: Callable[[str], bool],
        forbidden_rule: Callable[[str], HeavyRule | None],
    ) -> list[tuple[str, tuple[Hop, ...]]]:
        """What the check of one statement of ``light`` looks at: the nodes its ``hops`` reach
        without passing through ``light`` that are forbidden, or followed and unanalysable, each with
        its chain, in the order of :meth:`ImportGraph.iter_breadth_first
        <flake8_importpolicy.analysis.graph.ImportGraph.iter_breadth_first>`.

        Light modules whose statements name the same modules under the same rules (siblings, through
        their parent package; modules that import one hub) share one traversal, made without any
        module left out: leaving ``light`` out changes nothing when the traversal never reached it,
        or reached it and found nothing new from it and it matters to nobody; otherwise ``light``
        gets a traversal of its own. Without this, ``"big.**"`` over a package whose ``__init__``
        imports its 10,000 modules took 10,000 traversals of 10,000 modules.
        """
        ordered = sorted(hops, key=Hop.sort_key)
        key = (rules.forbid, rules.allow, tuple((hop.imported, hop.kind) for hop in ordered))

        def matters(name: str) -> bool:
            return forbidden_rule(name) is not None or (
                expand(name) and self.graph.find_problem(name) is not None)

        shared = self._shared_reach.get(key)
        if shared is None:
            reached_now: set[str] = set()
            discovering: set[str] = set()  # the nodes that reached another node first
            found = []
            for name, chain in self.graph.iter_breadth_first(ordered, expand=expand):
                reached_now.add(name)
                if len(chain) > 1:
                    discovering.add(chain[-2].imported)
                if matters(name):
                    found.append((name, chain))
            shared = (
                frozenset(reached_now), frozenset(discovering), frozenset(n for n, _ in found), found
            )
            self._shared_reach[key] = shared
            if len(self._shared_reach) > _SHARED_KEPT:
                self._shared_reach.popitem(last=False)
        else:
            self._shared_reach.move_to_end(key)
        reached, discoverers, mattering, found = shared
        if light in reached and (light in discoverers or light in mattering):
            return [(name, chain) for name, chain in self.graph.iter_breadth_first(
                hops, expand=expand, seen={light}) if matters(name)]
        first = {hop.imported: hop for hop in reversed(ordered)}  # this light's own first hops
        return [(name, (first[chain[0].imported], *chain[1:])) for name, chain in found]

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
        if heavy is not None:
            named = "named by --heavy"
            applied = ModuleRules(module, (), (HeavyRule(heavy, named), HeavyRule(heavy, named, True)))
        else:
            applied = self.policy.rules_for(module)
        rules = applied.forbid
        forbidden = applied.forbidden_rule

        expand = self.make_expander(forbidden, (r.pattern for r in rules))
        closure = self.graph.find_import_time_closure(module, expand=expand)
        found: list[tuple[str, HeavyRule]] = []
        unknown: list[UnknownImport] = []
        lazy: list[UnknownImport] = []
        bad: dict[str, SourceProblem] = {}  # by module: several called functions may share one
        for name in closure:
            rule = forbidden(name)
            if rule is not None and name != module:
                found.append((name, rule))
                continue
            if name == module or expand(name):
                unknown.extend(self.graph.find_unknown_imports(name))
                lazy.extend(self._lazy_attachments(name))
                problem = self.graph.find_problem(name)
                if problem is not None:
                    bad.setdefault(module_of(name), problem)
        return WhyResult(
            module=module,
            resolved=self.index.resolve_module(module),
            closure=closure,
            paths={
                name: self.index.resolve_module(module_of(name)).path for name in closure
            },
            forbidden=tuple(found),
            unknown=tuple(unknown),
            lazy=tuple(lazy),
            problems=tuple(bad.items()),
        )


_SharedReach = tuple[
    frozenset[str], frozenset[str], frozenset[str], list[tuple[str, tuple[Hop, ...]]]
]
"""A traversal shared by light modules (see ``PolicyEngine._reach``): the nodes reached, those that
reached a node first, those that matter to the check, and those with their chains, in order."""
_SHARED_KEPT = 64
"""Shared traversals kept (the most recently used): light modules are checked in sorted order, so
siblings come together."""

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
