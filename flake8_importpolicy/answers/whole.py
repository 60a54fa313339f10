"""The command line's answers: the :class:`~flake8_importpolicy.model.findings.Report` of a policy, reused
while nothing it depends on has changed.

CI runs and pre-commit hooks ask the same question again and again. The report is kept in an answer
index (:mod:`flake8_importpolicy.answers.warm_index`, directory ``answers``) with what it depends on;
:func:`find_cached_report` reads it with the standard library and the value objects of
:mod:`flake8_importpolicy.model` alone, so a warm ``importpolicy check`` never imports the engine.
:func:`check_policy_cached` checks with the engine on a miss and stores the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flake8_importpolicy import codes
from flake8_importpolicy.answers.jsonfile import (
    expect_bool,
    expect_int,
    expect_list,
    expect_object,
    expect_optional_str,
    expect_str,
)
from flake8_importpolicy.answers.warm_index import load_index, store_index
from flake8_importpolicy.model.findings import Problem, Report, Unresolved, Violation
from flake8_importpolicy.model.graph import Construct, Flag, Hop, HopKind, UnresolvedCode, parse_node

if TYPE_CHECKING:
    from flake8_importpolicy.model.budget import Budget
    from flake8_importpolicy.model.policy import Policy

__all__ = ["check_policy_cached", "find_cached_report", "report_from_json", "report_to_json"]

_FORMAT = 10
_INDEX_DIR = "answers"
_MAX_COUNT = 2**63 - 1
"""The largest count (of modules, suppressed findings...) an entry may hold."""


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
    reading: Callable[[str], None] | None = None,
) -> Report:
    """The policy's report, from the answer index when still fresh, else checked and stored.

    Args:
        policy: the loaded policy.
        interpreter: overrides ``settings.interpreter``.
        target_versions: override ``settings.target-versions``.
        use_cache: False bypasses every cache (``--no-cache``).
        progress, reading: passed to the engine's check (not called when the answer is cached).
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
        jobs=jobs, progress=progress, baseline=baseline, reading=reading,
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


def _hop(row: object) -> Hop:
    module, path, line, col, kind, imported, flags, via, assumed = expect_list(row)
    return Hop(parse_node(expect_str(module)), _path(path), expect_int(line), expect_int(col),
               HopKind(expect_str(kind)), parse_node(expect_str(imported)), _flags(flags),
               expect_optional_str(via), tuple(expect_str(a) for a in expect_list(assumed)))


def _path(value: object) -> Path | None:
    text = expect_optional_str(value)
    return _path_of(text) if text else None


@lru_cache(maxsize=16384)
def _path_of(text: str) -> Path:
    """``Path(text)``, made once per text: a report of a closure through torch repeats a few
    thousand paths in tens of thousands of hops, and building a ``Path`` was most of the time an
    answer-cache hit took (paths are immutable, so sharing one is safe)."""
    return Path(text)


def _flags(value: object) -> tuple[Flag, ...]:
    return tuple(Flag(expect_str(flag)) for flag in expect_list(value))


def _strings(value: object) -> tuple[str, ...]:
    return tuple(expect_str(item) for item in expect_list(value))


def report_to_json(report: Report) -> dict[str, object]:
    """A JSON-able form of a report with absolute paths (inverse: :func:`report_from_json`).

    Each distinct hop is held once, in ``"hops"``, and a chain is the list of its hops' positions
    there; each distinct unresolved site once, in ``"sites"``, named by its position: the
    unresolved sites of a closure through torch share their chains' hops (10,920 hops, 854
    distinct, in ``benchmarks/real_env.py``) and two light modules meet the same sites (1,446
    entries, 736 sites), and decoding each once is what keeps an answer-cache hit short."""
    hops: list[list[object]] = []
    position: dict[Hop, int] = {}
    sites: list[list[object]] = []
    site_position: dict[UnresolvedCode, int] = {}

    def site_row(site: UnresolvedCode) -> int:
        at = site_position.get(site)
        if at is None:
            at = site_position[site] = len(sites)
            sites.append(unresolved_code_row(site))
        return at

    def chain_row(chain: Iterable[Hop]) -> list[int]:
        row = []
        for hop in chain:
            at = position.get(hop)
            if at is None:
                at = position[hop] = len(hops)
                hops.append(_hop_row(hop))
            row.append(at)
        return row

    return {
        "violations": [
            [v.code.id, v.light, v.heavy, v.pattern, v.reason, str(v.path), v.line, v.col,
             str(v.kind), list(v.also), chain_row(v.chain), list(v.covers),
             None if v.budget is None else [v.budget.count, v.budget.limit,
                                            [list(c) for c in v.budget.contributors]]]
            for v in report.violations
        ],
        "problems": [_problem_row(p) for p in report.problems],
        "suppressed": report.suppressed,
        "light_modules": list(report.light_modules),
        "notes": [_problem_row(p) for p in report.notes],
        "unresolved": [
            [u.light, site_row(u.site), chain_row(u.chain),
             str(u.light_path) if u.light_path else None, u.installed]
            for u in report.unresolved
        ],
        "unresolved_fails": report.unresolved_fails,
        "baselined": report.baselined,
        "hops": hops,
        "sites": sites,
    }


def unresolved_code_row(site: UnresolvedCode) -> list[object]:
    """A JSON-able row of an unresolved site (inverse: :func:`unresolved_code_from_row`)."""
    return [site.module, str(site.path) if site.path else None, site.line, site.col,
            str(site.construct), site.detail, [str(flag) for flag in site.flags]]


def unresolved_code_from_row(row: object) -> UnresolvedCode:
    """Inverse of :func:`unresolved_code_row`.

    Raises:
        TypeError, ValueError: if ``row`` is malformed (a value of another type, or out of range).
    """
    module, path, line, col, construct, detail, flags = expect_list(row)
    return UnresolvedCode(parse_node(expect_str(module)), _path(path), expect_int(line),
                          expect_int(col), Construct(expect_str(construct)), expect_str(detail),
                          _flags(flags))


def _problem_row(problem: Problem) -> list[object]:
    return [problem.code.id, [list(pair) for pair in problem.arguments],
            str(problem.path) if problem.path else None, problem.line]


def _problem(row: object) -> Problem:
    code, arguments, path, line = expect_list(row)
    pairs = []
    for pair in expect_list(arguments):
        key, value = expect_list(pair)
        pairs.append((expect_str(key), expect_str(value)))
    return Problem(codes.BY_ID[expect_str(code)], tuple(pairs), _path(path),
                   None if line is None else expect_int(line))


def report_from_json(data: object) -> Report:
    """Rebuild a report from :func:`report_to_json` output, every value checked by type and range.

    Raises:
        KeyError, TypeError, ValueError, IndexError: if ``data`` is malformed.
    """
    data = expect_object(data)
    hops = [_hop(row) for row in expect_list(data["hops"])]
    sites = [unresolved_code_from_row(row) for row in expect_list(data["sites"])]
    chains: dict[str, tuple[Hop, ...]] = {}

    def chain(row: object) -> tuple[Hop, ...]:
        # Two light modules' sites share many chains: each distinct row is checked and built once,
        # known by its repr (which tells true from 1, unlike the row's own equality).
        key = repr(expect_list(row))
        found = chains.get(key)
        if found is None:
            found = chains[key] = tuple(
                hops[expect_int(at, high=len(hops) - 1)] for at in expect_list(row))
        return found

    violations = []
    for row in expect_list(data["violations"]):
        code, light, heavy, pattern, reason, path, line, col, kind, also, hops_of, covers, budget = (
            expect_list(row))
        kind = expect_str(kind)
        violations.append(Violation(
            light=expect_str(light), heavy=parse_node(expect_str(heavy)),
            pattern=expect_str(pattern), reason=expect_str(reason), path=Path(expect_str(path)),
            line=expect_int(line), col=expect_int(col), kind=HopKind(kind) if kind else "",
            also=_strings(also), chain=chain(hops_of),
            code=codes.BY_ID[expect_str(code)],
            covers=tuple(expect_int(c) for c in expect_list(covers)),
            budget=None if budget is None else _budget_from_json(budget),
        ))
    unresolved = []
    for row in expect_list(data["unresolved"]):
        light, site, hops_of, light_path, installed = expect_list(row)
        unresolved.append(Unresolved(expect_str(light),
                                     sites[expect_int(site, high=len(sites) - 1)],
                                     chain(hops_of), _path(light_path),
                                     installed=expect_str(installed)))
    return Report(
        violations=tuple(violations),
        problems=tuple(_problem(row) for row in expect_list(data["problems"])),
        suppressed=expect_int(data["suppressed"], high=_MAX_COUNT),
        light_modules=_strings(data["light_modules"]),
        notes=tuple(_problem(row) for row in expect_list(data["notes"])),
        unresolved=tuple(unresolved),
        unresolved_fails=expect_bool(data["unresolved_fails"]),
        baselined=expect_int(data["baselined"], high=_MAX_COUNT),
    )


def _budget_from_json(row: object) -> Budget:
    """An IPL008 violation's budget, ``[count, limit, [[first hop, modules], ...]]`` (the module is
    imported only for a report that has one)."""
    from flake8_importpolicy.model.budget import Budget

    count, limit, contributors = expect_list(row)
    pairs = []
    for pair in expect_list(contributors):
        name, modules = expect_list(pair)
        pairs.append((expect_str(name), expect_int(modules, high=_MAX_COUNT)))
    return Budget(expect_int(count, high=_MAX_COUNT), expect_int(limit, high=_MAX_COUNT),
                  tuple(pairs))
