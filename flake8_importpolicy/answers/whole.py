"""The command line's answers: the :class:`~flake8_importpolicy.model.findings.Report` of a policy, reused
while nothing it depends on has changed.

CI runs and pre-commit hooks ask the same question again and again. The report is kept in an answer
index (:mod:`flake8_importpolicy.answers.warm_index`, directory ``answers``) with what it depends on;
:func:`find_cached_report` reads it with the standard library and the value objects of
:mod:`flake8_importpolicy.model` alone, so a warm ``importpolicy check`` never imports the engine.
:func:`check_policy_cached` checks with the engine on a miss and stores the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flake8_importpolicy import codes
from flake8_importpolicy.answers.warm_index import load_index, store_index
from flake8_importpolicy.model.findings import Problem, Report, Unresolved, Violation
from flake8_importpolicy.model.graph import Construct, Flag, Hop, HopKind, UnresolvedCode, parse_node

if TYPE_CHECKING:
    from flake8_importpolicy.model.budget import Budget
    from flake8_importpolicy.model.policy import Policy

__all__ = ["check_policy_cached", "find_cached_report", "report_from_json", "report_to_json"]

_FORMAT = 7
_INDEX_DIR = "answers"


def _options(
    interpreter: str | None, target_versions: Sequence[tuple[int, int]], baseline: str | None
) -> list[object]:
    return [interpreter, [list(version) for version in target_versions], baseline]


def find_cached_report(
    policy_path: str,
    *,
    interpreter: str | None = None,
    target_versions: Sequence[tuple[int, int]] = (),
    baseline: str | None = None,
) -> Report | None:
    """The report of the policy at ``policy_path`` checked with these options (``baseline`` as for
    :func:`check_policy_cached`), if a stored one is still fresh; else None. Imports no analysis
    module."""
    return load_index(
        policy_path, _INDEX_DIR, _FORMAT, _parse_entry,
        _options(interpreter, target_versions, baseline),
    )


def _parse_entry(entry: Any) -> Report:
    return report_from_json(entry["report"])


def check_policy_cached(
    policy: Policy,
    *,
    interpreter: str | None = None,
    target_versions: Iterable[tuple[int, int]] = (),
    use_cache: bool = True,
    progress: Callable[[int, int, str], None] | None = None,
    jobs: int = 1,
    baseline: str | None = None,
) -> Report:
    """The policy's report, from the answer index when still fresh, else checked and stored.

    Args:
        policy: the loaded policy.
        interpreter: overrides ``settings.interpreter``.
        target_versions: override ``settings.target-versions``.
        use_cache: False bypasses every cache (``--no-cache``).
        progress: passed to the engine's check (not called when the answer is cached).
        jobs: processes extracting facts in parallel on a cold run.
        baseline: None filters the report by the policy's own ``settings.baseline``; a path
            (``--baseline FILE``, absolute) by that file instead; ``""`` by none (the whole report,
            as ``--write-baseline`` records it). Part of the answer's key; the baseline's bytes are
            one of its dependencies.

    Raises:
        flake8_importpolicy.model.errors.BaselineError: if the baseline cannot be used.
        flake8_importpolicy.model.errors.InterpreterError: if the interpreter cannot be queried.
    """
    versions = tuple(target_versions)
    if baseline is not None:
        import dataclasses

        settings = dataclasses.replace(policy.settings, baseline=Path(baseline) if baseline else None)
        policy = dataclasses.replace(policy, settings=settings)
    path = str(policy.path)
    if use_cache:
        cached = find_cached_report(
            path, interpreter=interpreter, target_versions=versions, baseline=baseline
        )
        if cached is not None:
            return cached
    from flake8_importpolicy.answers.compute import run_engine

    answer = run_engine(
        policy, interpreter=interpreter, target_versions=versions, use_cache=use_cache,
        jobs=jobs, progress=progress,
    )
    if use_cache:
        store_index(
            path, _INDEX_DIR, _FORMAT, policy=policy, info=answer.info, report=answer.report,
            files=answer.files, directories=answer.directories,
            fields={"report": report_to_json(answer.report)},
            options=_options(interpreter, versions, baseline), baseline=answer.baseline,
        )
    return answer.report


# -- (de)serialising reports -------------------------------------------------------------------------


def _hop_row(hop: Hop) -> list[object]:
    return [hop.module, str(hop.path) if hop.path else None, hop.line, hop.col, str(hop.kind),
            hop.imported, [str(flag) for flag in hop.flags], hop.via, list(hop.assumed)]


def _hop(row: list[object]) -> Hop:
    module, path, line, col, kind, imported, flags, via, assumed = row
    if not isinstance(flags, list) or not isinstance(assumed, list):
        raise TypeError("flags")
    return Hop(parse_node(str(module)), Path(str(path)) if path else None, int(str(line)),
               int(str(col)), HopKind(str(kind)), parse_node(str(imported)),
               tuple(Flag(str(f)) for f in flags), None if via is None else str(via),
               tuple(str(a) for a in assumed))


def report_to_json(report: Report) -> dict[str, object]:
    """A JSON-able form of a report with absolute paths (inverse: :func:`report_from_json`)."""
    return {
        "violations": [
            [v.code.id, v.light, v.heavy, v.pattern, v.reason, str(v.path), v.line, v.col,
             str(v.kind), list(v.also), [_hop_row(h) for h in v.chain], list(v.covers),
             None if v.budget is None else [v.budget.count, v.budget.limit,
                                            [list(c) for c in v.budget.contributors]]]
            for v in report.violations
        ],
        "problems": [_problem_row(p) for p in report.problems],
        "suppressed": report.suppressed,
        "light_modules": list(report.light_modules),
        "notes": [_problem_row(p) for p in report.notes],
        "unresolved": [
            [u.light, unresolved_code_row(u.site), [_hop_row(h) for h in u.chain],
             str(u.light_path) if u.light_path else None]
            for u in report.unresolved
        ],
        "unresolved_fails": report.unresolved_fails,
        "baselined": report.baselined,
    }


def unresolved_code_row(site: UnresolvedCode) -> list[object]:
    """A JSON-able row of an unresolved site (inverse: :func:`unresolved_code_from_row`)."""
    return [site.module, str(site.path) if site.path else None, site.line, site.col,
            str(site.construct), site.detail, [str(flag) for flag in site.flags]]


def unresolved_code_from_row(row: object) -> UnresolvedCode:
    """Inverse of :func:`unresolved_code_row`.

    Raises:
        TypeError, ValueError: if ``row`` is malformed.
    """
    if not isinstance(row, list):
        raise TypeError("unresolved site")
    module, path, line, col, construct, detail, flags = row
    return UnresolvedCode(parse_node(str(module)), Path(str(path)) if path else None,
                          int(line), int(col), Construct(str(construct)), str(detail),
                          tuple(Flag(str(f)) for f in flags))


def _problem_row(problem: Problem) -> list[object]:
    return [problem.code.id, [list(pair) for pair in problem.arguments],
            str(problem.path) if problem.path else None, problem.line]


def _problem(row: list[object]) -> Problem:
    code, arguments, path, line = row
    if not isinstance(arguments, list):
        raise TypeError("arguments")
    return Problem(codes.BY_ID[str(code)], tuple((str(k), str(v)) for k, v in arguments),
                   Path(str(path)) if path else None, None if line is None else int(str(line)))


def report_from_json(data: Mapping[str, Any]) -> Report:
    """Rebuild a report from :func:`report_to_json` output (JSON: each value is checked by the
    conversion that reads it).

    Raises:
        KeyError, TypeError, ValueError, IndexError: if ``data`` is malformed.
    """
    violations = []
    for row in data["violations"]:
        code, light, heavy, pattern, reason, path, line, col, kind, also, chain, covers, budget = row
        violations.append(Violation(
            light=str(light), heavy=parse_node(str(heavy)), pattern=str(pattern),
            reason=str(reason), path=Path(path), line=int(line), col=int(col),
            kind=HopKind(kind) if kind else "",
            also=tuple(str(a) for a in also), chain=tuple(_hop(h) for h in chain),
            code=codes.BY_ID[code], covers=tuple(int(c) for c in covers),
            budget=None if budget is None else _budget_from_json(budget),
        ))
    problems = [_problem(row) for row in data["problems"]]
    return Report(
        violations=tuple(violations),
        problems=tuple(problems),
        suppressed=int(data["suppressed"]),
        light_modules=tuple(data["light_modules"]),
        notes=tuple(_problem(row) for row in data["notes"]),
        unresolved=tuple(
            Unresolved(str(light), unresolved_code_from_row(site), tuple(_hop(h) for h in chain),
                       Path(str(light_path)) if light_path else None)
            for light, site, chain, light_path in data["unresolved"]
        ),
        unresolved_fails=bool(data["unresolved_fails"]),
        baselined=int(data["baselined"]),
    )


def _budget_from_json(row: Any) -> Budget:
    """An IPL008 violation's budget, ``[count, limit, [[first hop, modules], ...]]`` (the module is
    imported only for a report that has one)."""
    from flake8_importpolicy.model.budget import Budget

    return Budget(int(row[0]), int(row[1]), tuple((str(n), int(c)) for n, c in row[2]))
