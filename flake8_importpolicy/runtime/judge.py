"""Judging a runtime run: which forbidden modules executed, by which runtime chain, and how that
compares with the static prediction.

- a forbidden module that executed and was predicted is a failure ("forbidden module executed");
- a forbidden module that executed but was not predicted is a failure of its own kind ("static
  missed"), shown with its runtime chain so the miss can be understood;
- a predicted forbidden module that did not execute is listed as "not observed" and does not fail;
- a false or raising ``after-import`` expression, an import that raised, a timeout and a dead
  interpreter are failures too.

Only each module's *first* importer is observable at runtime, so runtime chains are one chain per
module, rendered like static chains (hops of kind ``runtime``; the verifier's own import of the light
module shows as ``parent-package`` hops for the light module's parent packages).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from flake8_importpolicy.model.graph import Flag, Hop, HopKind
from flake8_importpolicy.model.ignore import IgnoreRule
from flake8_importpolicy.model.policy import HeavyRule
from flake8_importpolicy.output.render import single_line
from flake8_importpolicy.runtime.run import AfterImportCheck, RuntimeRun
from flake8_importpolicy.runtime.timing import ImportTime

__all__ = [
    "ForbiddenExecution",
    "LightResult",
    "VerifyReport",
    "is_covered",
    "judge_run",
    "runtime_chain",
]


@dataclass(frozen=True)
class ForbiddenExecution:
    """A forbidden module that executed when a light module was imported.

    Attributes:
        module: the forbidden module.
        pattern: the ``[heavy]``/``forbid`` pattern it matched; reason: why it is heavy.
        chain: the runtime chain from the light module to it (empty for ``unrecorded`` modules).
        predicted: True if the static check predicted it, False if it missed it, ``None`` when no
            static comparison was made (:func:`verify_import`).
        flags: the executed module's flags (``unrecorded``).
        hint: for a static miss, why the static check did not see the chain, when it can be told
            (an import run by ``exec``, a module the static check does not follow, an import
            with no static edge), else ``None``.
    """

    module: str
    pattern: str
    reason: str
    chain: tuple[Hop, ...]
    predicted: bool | None
    flags: tuple[str, ...] = ()
    hint: str | None = None


@dataclass(frozen=True)
class LightResult:
    """The verdict for one light module.

    Attributes:
        light: the light module.
        run: what the subprocess did.
        forbidden: forbidden modules that executed and were predicted statically (with no static
            side: every forbidden module that executed first, not through another forbidden one).
        static_missed: forbidden modules that executed, first (not through another forbidden
            module), and were not predicted statically.
        not_observed: forbidden modules predicted statically that did not execute, sorted.

    Like the static check's ``also``, ``forbidden`` and ``static_missed`` hold only the outermost
    modules: ``unittest.mock`` is left out when ``unittest`` is reported too, and a module counts as
    predicted when it or one of its parent packages is.
        accepted: forbidden modules that executed only through an ``[[ignore]]``-d import, sorted.
        static_checked: True if the static prediction was compared.
        module_count: what executed, counted as a ``max-modules`` budget counts it (None when not
            counted: the module has no budget and import times were not asked for).
        max_modules: the budget (``max-modules``), or None.
        import_time: the measured import time (``--import-time``, or ``max-import-ms``), or None.
        max_import_ms: ``max-import-ms``, or None.
        fail_on_time: ``--fail-on-time``: an import time over ``max_import_ms`` fails.
        baselined: forbidden modules that executed and were predicted by a finding the baseline
            records (IPL001): accepted, not a failure.
        budget_baselined: the baseline records the budget finding (IPL008): a module count over
            ``max-modules`` is not a failure.
    """

    light: str
    run: RuntimeRun
    forbidden: tuple[ForbiddenExecution, ...]
    static_missed: tuple[ForbiddenExecution, ...]
    not_observed: tuple[str, ...]
    accepted: tuple[str, ...] = ()
    static_checked: bool = True
    module_count: int | None = None
    max_modules: int | None = None
    import_time: ImportTime | None = None
    max_import_ms: float | None = None
    fail_on_time: bool = False
    baselined: tuple[ForbiddenExecution, ...] = ()
    budget_baselined: bool = False

    @property
    def over_budget(self) -> bool:
        """True when what executed counts more modules than ``max-modules``."""
        return (self.max_modules is not None and self.module_count is not None
                and self.module_count > self.max_modules)

    @property
    def budget_failed(self) -> bool:
        """True when :attr:`over_budget` and the baseline does not record the budget finding."""
        return self.over_budget and not self.budget_baselined

    @property
    def over_time(self) -> bool:
        """True when the median import time is over ``max-import-ms`` (fails only with
        :attr:`fail_on_time`)."""
        return (self.max_import_ms is not None and self.import_time is not None
                and self.import_time.error is None
                and self.import_time.median_ms > self.max_import_ms)

    @property
    def failed_checks(self) -> tuple[AfterImportCheck, ...]:
        """The ``after-import`` expressions that were false or raised."""
        return tuple(check for check in self.run.after_import if not check.passed)

    @property
    def failed(self) -> bool:
        """True if anything failed: a forbidden module executed (predicted or not), an
        ``after-import`` expression, or the import itself (raised, timed out, crashed)."""
        return bool(
            self.run.outcome != "imported"
            or self.forbidden
            or self.static_missed
            or self.failed_checks
            or self.budget_failed
            or (self.fail_on_time and self.over_time)
        )

    def summary(self) -> str:
        """One line: what failed (``forbidden module executed: torch; import raised ...``), or
        ``ok``."""
        parts = []
        if self.forbidden:
            names = ", ".join(f.module for f in self.forbidden)
            parts.append(f"forbidden module executed: {names}")
        if self.static_missed:
            parts.append(f"static missed: {', '.join(f.module for f in self.static_missed)}")
        if self.run.outcome == "raised":
            parts.append(f"import raised {single_line(self.run.error or '')}")
        elif self.run.outcome != "imported":
            parts.append(single_line(str(self.run.error)))
        parts.extend(f"after-import failed: {c.expression}" for c in self.failed_checks)
        if self.budget_failed:
            parts.append(f"{self.module_count} modules executed, over max-modules = "
                         f"{self.max_modules}")
        if self.fail_on_time and self.over_time and self.import_time is not None:
            parts.append(f"import took {self.import_time.median_ms:g} ms, over max-import-ms = "
                         f"{self.max_import_ms:g}")
        if parts:
            return "; ".join(parts)
        accepted = [f.module for f in self.baselined]
        if self.over_budget:
            accepted.append(f"{self.module_count} modules, over max-modules = {self.max_modules}")
        return f"ok (in the baseline: {', '.join(accepted)})" if accepted else "ok"


@dataclass(frozen=True)
class VerifyReport:
    """The result of :func:`verify_policy`.

    Attributes:
        results: one per light module, sorted by module name.
        problems: policy problems found while planning (a wildcard light pattern that matches no
            module), one message each.
        python: the interpreter used; version: its ``sys.version_info[:3]`` as the recorder
            reported it (``(major, minor)`` if no subprocess reported it).
        seconds: wall time of the whole verification, in seconds.
    """

    results: tuple[LightResult, ...]
    problems: tuple[str, ...]
    python: str
    version: tuple[int, ...]
    seconds: float

    @property
    def exit_code(self) -> int:
        """1 if any light module failed or there is a problem, else 0."""
        return 1 if self.problems or any(r.failed for r in self.results) else 0


def runtime_chain(run: RuntimeRun, module: str) -> tuple[Hop, ...]:
    """The runtime chain from ``run.module`` to ``module``, following each module's first importer.

    Each hop is ``Hop(importer, importing file, line, 0, HopKind.RUNTIME, imported, flags)``; the light
    module's parent packages, which the verifier's own ``import`` ran, are ``parent-package`` hops
    from the light module's file, line 1 (as in static chains). When the importing frame belongs to
    a module that did not run during this import (a function of a module loaded at start-up, such
    as ``codecs``), the hop comes from the module whose import-time code was running, at its line,
    with ``via`` set to the module that made the import (shown as the flag ``via <module>``). The
    chain is shorter than the path to the light module when an importer is unknown; empty for the
    light module itself and for ``unrecorded`` modules.
    """
    light = run.module
    by_name = {record.name: record for record in run.executed}
    light_path = by_name[light].path if light in by_name else None
    hops: list[Hop] = []
    current = module
    seen = {module}
    while current != light:
        record = by_name.get(current)
        if record is None or "unrecorded" in record.flags:
            break
        if record.importer is None:
            if light.startswith(current + "."):
                hops.append(Hop(light, light_path, 1, 0, HopKind.PARENT_PACKAGE, current))
            break
        importer, at, line = record.importer, record.at, record.line
        flags = tuple(sorted(Flag(flag) for flag in record.flags))
        via: str | None = None
        known = importer == light or importer in by_name
        parent = record.parent
        if not known and parent is not None and (parent == light or parent in by_name):
            via = importer
            importer, at, line = parent, record.parent_at, record.parent_line
        hops.append(Hop(importer, at, line, 0, HopKind.RUNTIME, current, flags, via))
        if importer in seen:
            break
        seen.add(importer)
        current = importer
    return tuple(reversed(hops))


def judge_run(
    run: RuntimeRun,
    forbidden: Callable[[str], HeavyRule | None],
    predicted: frozenset[str] | None,
    ignores: Sequence[IgnoreRule] = (),
) -> LightResult:
    """Compare what executed with the policy and the static prediction.

    Args:
        run: the subprocess's observation.
        forbidden: the forbid rule a module name matches (``allow`` already applied), or None.
        predicted: the forbidden modules the static check predicts (the union of each violation's
            ``heavy`` and ``also``), or ``None`` for no static comparison.
        ignores: the policy's ``[[ignore]]`` rules; a forbidden module whose runtime chain uses an
            ignored import is accepted.

    Returns:
        The :class:`LightResult`. A forbidden module counts when its code started to run (not when
        it merely is in ``sys.modules``). "First" forbidden modules are those whose runtime chain
        passes through no other forbidden module; only those can be "static missed", since the
        static check stops at the first forbidden module of each chain. A module counts as
        predicted when it or a parent package is predicted, and submodules of a reported module
        are left out (the static check's ``also`` lists only outermost modules too).
    """
    light = run.module
    confirmed: list[ForbiddenExecution] = []
    missed: list[ForbiddenExecution] = []
    accepted: set[str] = set()
    executed_forbidden: set[str] = set()
    executed_names = {record.name for record in run.executed}
    for record in run.executed:
        if record.name == light:
            continue
        rule = forbidden(record.name)
        if rule is None:
            continue
        chain = runtime_chain(run, record.name)
        if any(ignore.matches(hop.module, hop.imported) for hop in chain for ignore in ignores):
            accepted.add(record.name)
            continue
        executed_forbidden.add(record.name)
        if "unrecorded" in record.flags:
            first = not any(
                parent in executed_names and forbidden(parent) is not None
                for parent in _parents(record.name)
            )
        else:
            first = not any(
                hop.module != light and forbidden(hop.module) is not None for hop in chain
            )
        covered = predicted is not None and is_covered(record.name, predicted)
        finding = ForbiddenExecution(
            module=record.name,
            pattern=rule.pattern.text,
            reason=rule.shown_reason,
            chain=chain,
            predicted=None if predicted is None else covered,
            flags=tuple(f for f in record.flags if f == "unrecorded"),
        )
        if covered or (predicted is None and first):
            confirmed.append(finding)
        elif first:
            missed.append(finding)
    reported = {finding.module for finding in (*confirmed, *missed)}
    not_observed = () if predicted is None else tuple(sorted(predicted - executed_forbidden))
    return LightResult(
        light=light,
        run=run,
        forbidden=_outermost(confirmed, reported),
        static_missed=_outermost(missed, reported),
        not_observed=tuple(name for name in not_observed if name not in accepted),
        accepted=tuple(sorted(accepted)),
        static_checked=predicted is not None,
    )


def _parents(name: str) -> list[str]:
    """The dotted parent packages of ``name``, outermost first (``a``, ``a.b`` for ``a.b.c``)."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def is_covered(name: str, predicted: frozenset[str]) -> bool:
    """True if ``name`` or one of its parent packages is predicted (the static check lists only
    the outermost forbidden modules: ``unittest`` stands for ``unittest.mock`` too)."""
    return name in predicted or any(parent in predicted for parent in _parents(name))


def _outermost(
    findings: Sequence[ForbiddenExecution], reported: set[str]
) -> tuple[ForbiddenExecution, ...]:
    """``findings`` without the submodules of another reported forbidden module, as the static
    check's ``also``."""
    return tuple(
        finding for finding in findings
        if not any(parent in reported for parent in _parents(finding.module))
    )
