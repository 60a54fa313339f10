"""Runtime verification (``importpolicy verify``): the runtime proof of the static check.

For each light module of a policy, :mod:`flake8_importpolicy.runtime.run` imports it in a fresh
interpreter under the recorder, :mod:`flake8_importpolicy.runtime.judge` compares what executed with
the static prediction of :class:`~flake8_importpolicy.analysis.engine.PolicyEngine` (the rules of
:meth:`~flake8_importpolicy.model.policy.Policy.rules_for`, as ``check`` applies them), and
:mod:`flake8_importpolicy.runtime.render` reports it. This module plans the light modules, runs them in
parallel with a timeout, and holds the helpers for hand-written tests.

verify runs project code by design; ``check``, ``why``, flake8 and mypy never do. This module imports
neither flake8, mypy nor pytest.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.analysis.resolve import query_interpreter
from flake8_importpolicy.config.baseline import load_policy_baseline
from flake8_importpolicy.model.budget import count_units
from flake8_importpolicy.model.graph import Flag, Hop, HopKind
from flake8_importpolicy.model.paths import relpath_under
from flake8_importpolicy.model.patterns import parse_pattern
from flake8_importpolicy.model.assume import Assumption
from flake8_importpolicy.model.baseline import Baseline
from flake8_importpolicy.model.policy import HeavyRule, ModuleRules, Policy
from flake8_importpolicy.model.ports import FactsCache
from flake8_importpolicy.output.render import PathFormatter, single_line
from flake8_importpolicy.output.status import open_status_line
from flake8_importpolicy.runtime.judge import LightResult, VerifyReport, is_covered, judge_run
from flake8_importpolicy.runtime.render import (
    format_light_result_text,
    format_verify_json,
    format_verify_text,
)
from flake8_importpolicy.runtime.run import (
    DEFAULT_MEMORY_MIB,
    DEFAULT_TIMEOUT,
    RuntimeRun,
    run_import,
)
from flake8_importpolicy.runtime.timing import measure_import_time

__all__ = [
    "LightPlan",
    "TORCH_CUDA_CHECK",
    "UnknownLightModule",
    "Verifier",
    "assumption_check",
    "assert_import_light",
    "run_command",
    "verify_import",
    "verify_policy",
]

Progress = Callable[[int, int, LightResult], None]
"""Called after each light module with ``(done, total, result)``."""


class UnknownLightModule(ValueError):
    """A module asked for is not a light module of the policy (a usage error)."""


@dataclass(frozen=True)
class LightPlan:
    """One light module to verify, with the rules that apply to it.

    Attributes:
        module: the light module.
        rules: what :meth:`~flake8_importpolicy.model.policy.Policy.rules_for` says applies to it
            (every ``[light]`` rule that names it, merged), as ``check`` applies them.
        predicted: the forbidden modules the static check predicts for it (each violation's
            ``heavy`` and ``also``).
        checks: what is evaluated after the import besides ``after-import``: each ``[assume]``
            entry (:func:`assumption_check`) and, with preset ``torch-cuda`` in effect,
            :data:`TORCH_CUDA_CHECK`.
        baselined: the part of ``predicted`` whose static findings the baseline records (IPL001).
        budget_baselined: the baseline records its budget finding (IPL008).
    """

    module: str
    rules: ModuleRules
    predicted: frozenset[str]
    checks: tuple[str, ...] = ()
    baselined: frozenset[str] = frozenset()
    budget_baselined: bool = False

    @property
    def after_import(self) -> tuple[str, ...]:
        """The expressions to evaluate after the import: :data:`TORCH_CUDA_CHECK` first (before any
        other expression can initialise CUDA), then ``after-import``, then the other :attr:`checks`."""
        cuda = tuple(check for check in self.checks if check == TORCH_CUDA_CHECK)
        others = tuple(check for check in self.checks if check != TORCH_CUDA_CHECK)
        return (*cuda, *self.rules.after_import, *others)

    def forbidden_rule(self, module: str) -> HeavyRule | None:
        """The forbid rule that ``module`` matches (``allow`` applied), or None."""
        return self.rules.forbidden_rule(module)


TORCH_CUDA_CHECK = (
    "'torch.cuda' not in sys.modules or not sys.modules['torch.cuda'].is_initialized()"
    "  # preset torch-cuda: torch.cuda.is_initialized() after the import, when torch was loaded"
)
"""With preset ``torch-cuda`` in effect, ``verify`` evaluates this after each light module's import:
CUDA initialised at import time fails (torch's ``_is_in_bad_fork`` makes a forked child's first CUDA
call raise; docs/presets.md)."""


def assumption_check(assumption: Assumption, is_module: Callable[[str], bool]) -> str:
    """The expression ``verify`` evaluates after the import for an ``[assume]`` entry: true when the
    assumption holds, false or raising when it does not; an entry whose module the import did not
    load holds (nothing that ran depended on it). It ends with a comment naming the entry.

    Args:
        assumption: the entry.
        is_module: whether a dotted name is a module (the longest such prefix of the entry's name
            is looked up in ``sys.modules``; the rest are attributes).
    """
    label = f"  # {assumption.label}"
    if assumption.environ:
        if assumption.value is None:
            return f"{assumption.key!r} not in os.environ{label}"
        return f"os.environ.get({assumption.key!r}) == {assumption.value!r}{label}"
    name, paren, arguments = assumption.key.partition("(")
    parts = name.split(".")
    cut = next((n for n in range(len(parts) - 1, 0, -1) if is_module(".".join(parts[:n]))), 1)
    module = ".".join(parts[:cut])
    expression = f"sys.modules[{module!r}]" + "".join(f".{part}" for part in parts[cut:])
    expression += paren + arguments
    if assumption.value is True:
        test = f"bool({expression})"
    elif assumption.value is False:
        test = f"not ({expression})"
    else:
        test = f"({expression}) == {assumption.value!r}"
    return f"{module!r} not in sys.modules or {test}{label}"


class Verifier:
    """Plans and runs the verification of a policy's light modules (used by the CLI and the pytest
    plugin).

    Args:
        policy: the loaded policy.
        python: the interpreter to run (default: the policy's ``interpreter``, else this one).
        timeout: seconds per light module (must be > 0).
        facts_cache: an optional on-disk facts cache for the static side.
        import_time: also measure every light module's import time (``--import-time``); a light
            module with ``max-import-ms`` is always measured.
        runs: fresh interpreters per measurement (the median is reported).
        fail_on_time: an import time over ``max-import-ms`` fails (``--fail-on-time``).
        memory_mib: each subprocess's data limit in MiB (``--max-memory``; 0: none).
        baseline: the findings ``check`` accepts (:func:`~flake8_importpolicy.config.baseline.load_baseline`):
            a forbidden module predicted by a recorded IPL001 finding, and a budget a recorded IPL008
            finding exceeds, do not fail (``verify --no-baseline`` passes None).

    The static prediction is made for the interpreter's own version and the policy's platform.

    Raises:
        BaselineError: if the policy's ``settings.baseline`` cannot be used (as for ``check``).
        InterpreterError: if the interpreter cannot be queried.
        ValueError: if ``timeout`` is not positive.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        python: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        facts_cache: FactsCache | None = None,
        import_time: bool = False,
        runs: int = 5,
        fail_on_time: bool = False,
        memory_mib: int = DEFAULT_MEMORY_MIB,
        baseline: Baseline | None = None,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        load_policy_baseline(policy)  # a baseline that cannot be used fails verify as it fails check
        self.policy = policy
        self.python = policy.settings.interpreter_executable(python) or sys.executable
        self.timeout = timeout
        self.import_time = import_time
        self.runs = max(1, runs)
        self.fail_on_time = fail_on_time
        self.memory_mib = memory_mib
        self.baseline = baseline
        info = query_interpreter(self.python)
        self.version = info.version
        self._lock = threading.Lock()
        self.engine = PolicyEngine(
            policy,
            interpreter=self.python,
            target_versions=(info.version,),
            facts_cache=facts_cache,
            interpreter_info=info,
        )

    def plan(self) -> tuple[tuple[LightPlan, ...], tuple[str, ...]]:
        """The light modules to verify (sorted) and the planning problems.

        A non-wildcard light pattern is verified even if the static index cannot find it (the
        runtime decides); a wildcard pattern matching nothing is a problem.
        """
        modules: set[str] = set()
        problems: list[str] = []
        for rule in self.policy.light:
            found = self.engine.find_light_modules(rule)
            if not found and not rule.pattern.is_wildcard:
                found = (rule.pattern.text,)
            if not found:
                problems.append(f"light pattern {rule.pattern.text!r} matches no module")
            modules.update(found)
        plans = []
        checks = tuple(
            assumption_check(a, lambda name: self.engine.index.resolve_module(name).kind != "unresolved")
            for a in self.policy.assumptions
        )
        if "torch-cuda" in self.policy.presets:
            checks += (TORCH_CUDA_CHECK,)
        accepted = {entry.identity for entry in self.baseline.entries} if self.baseline else set()
        for module in sorted(modules):
            rules = self.policy.rules_for(module)
            predicted: set[str] = set()
            baselined: set[str] = set()
            budget_baselined = False
            violations = self.engine.check_light_module(module, rules).violations
            if accepted and rules.max_modules is not None:
                over = self.engine.check_budget(module, rules)
                budget_baselined = over is not None and over.identity in accepted
            for violation in violations:
                predicted.add(violation.heavy)
                predicted.update(violation.also)
                if violation.identity in accepted:
                    baselined.add(violation.heavy)
                    baselined.update(violation.also)
            plans.append(LightPlan(module, rules, frozenset(predicted), checks,
                                   frozenset(baselined), budget_baselined))
        return tuple(plans), tuple(problems)

    def verify(self, plan: LightPlan) -> LightResult:
        """Import ``plan.module`` in a fresh interpreter and judge it (thread-safe).

        Raises:
            InterpreterError: if the interpreter cannot be started.
        """
        run = run_import(
            plan.module,
            python=self.python,
            source_roots=self.policy.settings.source_roots,
            after_import=plan.after_import,
            timeout=self.timeout,
            cwd=self.policy.root,
            memory_mib=self.memory_mib,
        )
        result = judge_run(run, plan.forbidden_rule, plan.predicted, self.policy.ignores)
        if plan.baselined or plan.budget_baselined:
            # what check accepts through the baseline is no failure here either: a forbidden
            # module predicted by a recorded finding, or a recorded budget finding
            result = replace(
                result,
                forbidden=tuple(f for f in result.forbidden if not is_covered(f.module, plan.baselined)),
                baselined=tuple(f for f in result.forbidden if is_covered(f.module, plan.baselined)),
                budget_baselined=plan.budget_baselined,
            )
        timed = None
        if self.import_time or plan.rules.max_import_ms is not None:
            timed = measure_import_time(
                plan.module, python=self.python, source_roots=self.policy.settings.source_roots,
                cwd=self.policy.root, runs=self.runs, timeout=self.timeout,
                memory_mib=self.memory_mib,
            )
        result = replace(
            result, module_count=self.count_executed(run), max_modules=plan.rules.max_modules,
            import_time=timed, max_import_ms=plan.rules.max_import_ms,
            fail_on_time=self.fail_on_time,
        )
        if not result.static_missed:
            return result
        with self._lock:  # the engine's caches are not thread-safe
            missed = tuple(
                replace(finding, hint=self.explain_miss(plan, finding.chain))
                for finding in result.static_missed
            )
        return replace(result, static_missed=missed)

    def count_executed(self, run: RuntimeRun) -> int:
        """What executed, counted as a ``max-modules`` budget counts a closure
        (:func:`~flake8_importpolicy.model.budget.counts`): each first-party module (a file
        under a source root), each other top-level package once when a first-party module's code
        imported it (or the verifier's own import did); what outside code imported is not counted
        (thread-safe)."""
        with self._lock:  # the index's caches are not thread-safe
            index = self.engine.index
            first_party = {
                record.name: (index.origin_of_path(record.path) if record.path is not None and
                              record.path.is_absolute() else index.resolve_module(record.name).origin)
                == "first-party"
                for record in run.executed
            }

            def by_first_party(importer: str | None) -> bool:
                if importer is None:  # the verifier's own import, or not observed
                    return True
                known = first_party.get(importer)
                if known is None:
                    known = index.resolve_module(importer).origin == "first-party"
                return known

            return len(count_units(
                (record.name, first_party[record.name], by_first_party(record.importer))
                for record in run.executed
            ))

    def explain_miss(self, plan: LightPlan, chain: Sequence[Hop]) -> str | None:
        """Why the static check did not predict a runtime chain, when it can be told.

        The first hop that explains it wins: an import made by code compiled from a string, an
        importer the static check does not follow (``settings.external``) or cannot read (an
        extension module), or a hop with no static import edge.
        """
        engine = self.engine
        patterns = [heavy.pattern for heavy in plan.rules.forbid]
        expand = engine.make_expander(plan.forbidden_rule, patterns)
        external = self.policy.settings.external
        for hop in chain:
            if hop.kind == HopKind.PARENT_PACKAGE:
                continue
            where = f"{hop.module} -> {hop.imported}"
            if Flag.EXEC in hop.flags:
                return f"{where} is made by code compiled from a string (exec/eval), which static " \
                    "analysis cannot see"
            resolved = engine.index.resolve_module(hop.module)
            if resolved.kind == "extension":
                return (f"{hop.module} is an extension module: its imports are unknown statically "
                        "(IPL006 extension-module)")
            if hop.module != plan.module and not expand(hop.module):
                return (
                    f"the static check does not follow {resolved.origin} module {hop.module} "
                    f'(settings.external = "{external}"; "follow" follows it)'
                )
            edges = {edge.imported for edge in engine.graph.find_import_time_edges(hop.module)}
            if hop.imported not in edges:
                how = ""
                if hop.via is not None:
                    how = f" (imported via {hop.via}, a function called at import time)"
                cannot = engine.graph.find_unresolved(hop.via or hop.module)
                if cannot:
                    first = cannot[0]
                    return (
                        f"no static import edge {where}{how}: {hop.via or hop.module} runs "
                        f"import-time code the static check cannot resolve (IPL006 "
                        f"{first.construct}: {single_line(first.detail)}, line {first.line})"
                    )
                return (
                    f"no static import edge {where}{how}: a dynamic import, a name built at "
                    "runtime, or code the static rules do not model"
                )
        return None


def verify_policy(
    policy: Policy,
    *,
    python: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    jobs: int | None = None,
    modules: Iterable[str] = (),
    facts_cache: FactsCache | None = None,
    progress: Progress | None = None,
    import_time: bool = False,
    runs: int = 5,
    fail_on_time: bool = False,
    memory_mib: int = DEFAULT_MEMORY_MIB,
    baseline: Baseline | None = None,
) -> VerifyReport:
    """Verify every light module of ``policy`` at runtime, in parallel.

    Args:
        policy: the loaded policy.
        python: the interpreter (default: the policy's ``interpreter``, else this one).
        timeout: seconds per light module.
        jobs: subprocesses at a time (default and maximum: the CPU count).
        modules: only these light modules (default: all).
        facts_cache: an optional on-disk facts cache for the static side.
        progress: called after each light module with ``(done, total, result)``.
        import_time, runs, fail_on_time, memory_mib, baseline: as for :class:`Verifier`.

    Raises:
        InterpreterError: if the interpreter cannot be queried or started.
        UnknownLightModule: if ``modules`` names a module that is not a light module of the
            policy.
        ValueError: if ``timeout`` is not positive.
    """
    from concurrent.futures import ThreadPoolExecutor, as_completed

    started = time.perf_counter()
    verifier = Verifier(policy, python=python, timeout=timeout, facts_cache=facts_cache,
                        import_time=import_time, runs=runs, fail_on_time=fail_on_time,
                        memory_mib=memory_mib, baseline=baseline)
    plans, problems = verifier.plan()
    wanted = list(dict.fromkeys(modules))
    if wanted:
        known = {plan.module for plan in plans}
        unknown = [name for name in wanted if name not in known]
        if unknown:
            raise UnknownLightModule(
                f"not a light module of {policy.relpath(policy.path)}: {', '.join(unknown)}"
            )
        plans = tuple(plan for plan in plans if plan.module in wanted)
        problems = ()
    cpus = os.cpu_count() or 1
    workers = max(1, min(jobs or cpus, cpus, len(plans) or 1))
    results: list[LightResult] = []
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="importpolicy") as pool:
        futures = [pool.submit(verifier.verify, plan) for plan in plans]
        try:
            for future in as_completed(futures):
                result = future.result()
                results.append(result)
                if progress is not None:
                    progress(len(results), len(plans), result)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    reported = next((r.run.version for r in results if r.run.version), verifier.version)
    return VerifyReport(
        results=tuple(sorted(results, key=lambda r: r.light)),
        problems=problems,
        python=verifier.python,
        version=reported,
        seconds=time.perf_counter() - started,
    )


def verify_import(
    module: str,
    forbid: Iterable[str | HeavyRule],
    *,
    allow: Iterable[str] = (),
    source_roots: Sequence[Path] = (),
    python: str | None = None,
    after_import: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    cwd: Path | None = None,
) -> LightResult:
    """Import ``module`` in a fresh interpreter and report which ``forbid`` patterns executed.

    No policy file and no static comparison: ``forbidden`` lists every module matching a
    ``forbid`` entry that executed first, not through another forbidden module. An entry is a
    module pattern (``*``/``**`` wildcards, submodules included) or a policy's
    :class:`~flake8_importpolicy.model.policy.HeavyRule` (whose reason is then shown).

    Raises:
        flake8_importpolicy.model.patterns.PatternError: if a pattern is malformed.
        InterpreterError: if the interpreter cannot be started.
    """
    rules = ModuleRules(
        module,
        (),
        tuple(
            p if isinstance(p, HeavyRule) else HeavyRule(parse_pattern(p), f"forbidden by {p!r}")
            for p in forbid
        ),
        tuple(parse_pattern(p) for p in allow),
    )
    run = run_import(
        module,
        python=python,
        source_roots=source_roots,
        after_import=after_import,
        timeout=timeout,
        cwd=cwd,
    )
    return judge_run(run, rules.forbidden_rule, None)


def assert_import_light(
    module: str,
    forbid: Iterable[str | HeavyRule],
    *,
    allow: Iterable[str] = (),
    source_roots: Sequence[Path] = (),
    python: str | None = None,
    after_import: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    cwd: Path | None = None,
) -> LightResult:
    """Assert that importing ``module`` in a fresh interpreter executes none of ``forbid``.

    Arguments as for :func:`verify_import`.

    Returns:
        The :class:`LightResult` when the assertion holds.

    Raises:
        AssertionError: if a forbidden module executed, an ``after-import`` expression failed,
            or the import raised, timed out or crashed; the message has the runtime chains.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function
    result = verify_import(
        module,
        forbid,
        allow=allow,
        source_roots=source_roots,
        python=python,
        after_import=after_import,
        timeout=timeout,
        cwd=cwd,
    )
    if result.failed:
        roots = [Path(root) for root in source_roots] or [cwd or Path.cwd()]
        raise AssertionError(format_light_result_text(result, _relative_to(roots)))
    return result


def _relative_to(roots: Sequence[Path]) -> PathFormatter:
    resolved = [root.resolve() for root in roots]
    return lambda path: relpath_under(resolved, path)


def run_command(
    policy: Policy,
    *,
    python: str | None,
    timeout: float,
    jobs: int | None,
    modules: Sequence[str],
    output_format: str,
    facts_cache: FactsCache | None,
    stdout: TextIO,
    stderr: TextIO,
    import_time: bool = False,
    runs: int = 5,
    fail_on_time: bool = False,
    memory_mib: int = DEFAULT_MEMORY_MIB,
    baseline: Baseline | None = None,
) -> int:
    """``importpolicy verify``: verify, print the report, return the exit code (0 or 1).

    A progress line is drawn on ``stderr`` when it is a terminal (not under ``TERM=dumb``).

    Raises:
        InterpreterError: if the interpreter cannot be queried or started.
        UnknownLightModule: for a ``modules`` entry that is not a light module of the policy.
    """
    status = open_status_line(stderr, delay=0, interval=0)

    def draw(done: int, total: int, result: LightResult) -> None:
        if status is not None:
            status.show(f"[{done}/{total}] {'FAIL' if result.failed else 'ok'} {result.light}")

    progress: Progress | None = draw if status is not None else None
    try:
        report = verify_policy(
            policy,
            python=python,
            timeout=timeout,
            jobs=jobs,
            modules=modules,
            facts_cache=facts_cache,
            progress=progress,
            import_time=import_time,
            runs=runs,
            fail_on_time=fail_on_time,
            memory_mib=memory_mib,
            baseline=baseline,
        )
    finally:
        if status is not None:
            status.clear()
    if output_format == "json":
        stdout.write(format_verify_json(report, policy.relpath))
    else:
        stdout.write(format_verify_text(report, policy.relpath))
    return report.exit_code
