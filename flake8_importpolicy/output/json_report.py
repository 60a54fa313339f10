"""The JSON of ``importpolicy check --format json`` and ``importpolicy why --format json``
(documented in docs/output.md). Functions return text and print nothing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from flake8_importpolicy.model.findings import Problem, Report, Violation
from flake8_importpolicy.model.graph import UnresolvedCode
from flake8_importpolicy.codes import IPL900
from flake8_importpolicy.output.render import PathFormatter, format_policy_problem, hop_to_json

if TYPE_CHECKING:  # annotations only: a warm check loads no policy model (tests/test_cli.py)
    from flake8_importpolicy.model.errors import PolicyProblem
    from flake8_importpolicy.model.bases import Preset
    from flake8_importpolicy.model.why import WhyResult

__all__ = [
    "WHY_CLOSURE_HOPS",
    "count_closure_hops",
    "format_policy_error_json",
    "format_report_json",
    "format_why_json",
]


def format_report_json(report: Report, relpath: PathFormatter) -> str:
    """The JSON report documented in ``docs/output.md``::

        {"violations": [{"code", "light", "heavy", "pattern", "reason", "path", "line", "col",
                         "also", "covers", "chain": [hop, ...]}],
         "problems": [{"code", "message", "path", "line"}],
         "unresolved": [{"code", "light", "path", "line", "col", "construct", "detail",
                         "module", "flags", "chain": [hop, ...]}]}

    plus ``"notes"`` (the same shape as problems) when there are any.
    """
    data: dict[str, object] = {
        "violations": [
            {
                "code": v.code.id,
                "light": v.light,
                "heavy": str(v.heavy),
                "pattern": v.pattern,
                "reason": v.reason,
                "path": relpath(v.path),
                "line": v.line,
                "col": v.col,
                "also": list(v.also),
                "covers": list(v.covers),
                "chain": [hop_to_json(hop, relpath) for hop in v.chain],
                **_budget_json(v),
            }
            for v in report.violations
        ],
        "problems": [_problem_json(p, relpath) for p in report.problems],
        "unresolved": [
            {
                "code": u.code.id,
                "light": u.light,
                **_unresolved_site_json(u.site, relpath),
                "chain": [hop_to_json(hop, relpath) for hop in u.chain],
            }
            for u in report.unresolved
        ],
    }
    if report.notes:
        data["notes"] = [_problem_json(p, relpath) for p in report.notes]
    if report.baselined:
        data["baselined"] = report.baselined
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


def _budget_json(violation: Violation) -> dict[str, object]:
    """An IPL008 violation's ``count``, ``max_modules`` and ``contributors`` (``[{"first_hop",
    "modules"}]``, most first); nothing for other violations."""
    budget = violation.budget
    if budget is None:
        return {}
    return {
        "count": budget.count,
        "max_modules": budget.limit,
        "contributors": [{"first_hop": node, "modules": n} for node, n in budget.contributors],
    }


def _unresolved_site_json(site: UnresolvedCode, relpath: PathFormatter) -> dict[str, object]:
    return {
        "path": relpath(site.path) if site.path is not None else None,
        "line": site.line,
        "col": site.col,
        "construct": str(site.construct),
        "detail": site.detail,
        "module": str(site.module),
        "flags": [str(flag) for flag in site.flags],
    }


def _problem_json(problem: Problem, relpath: PathFormatter) -> dict[str, object]:
    return {
        "code": problem.code.id,
        "message": problem.message,
        "path": relpath(problem.path) if problem.path is not None else None,
        "line": problem.line,
    }


def format_policy_error_json(problems: Sequence[PolicyProblem], path: str | None) -> str:
    """``check --format json`` when the policy cannot be used: no violations, and one IPL900 problem
    per problem of the policy::

        {"violations": [], "problems": [{"code": "IPL900", "message", "path", "line", "col"}],
         "unresolved": []}

    (``unresolved`` is always present, as in every ``check --format json`` output.)

    Args:
        problems: the problems, with their 1-based line and column where known.
        path: the policy file as shown (``None`` when there is none).
    """
    data = {
        "violations": [],
        "problems": [
            {
                "code": IPL900.id,
                "message": format_policy_problem(problem),
                "path": path,
                "line": problem.line,
                "col": problem.column - 1 if problem.column is not None else None,
            }
            for problem in problems
        ],
        "unresolved": [],
    }
    return json.dumps(data, indent=2) + "\n"


WHY_CLOSURE_HOPS = 200_000
"""The most hops ``why --format json`` lists for a whole closure (each module with its chain):
beyond it the output would grow with the square of the closure's depth (a 3,000-module chain is
4.5 million hops, a gigabyte), so the command says so instead (``--heavy`` lists one chain per
forbidden module)."""


def count_closure_hops(why: WhyResult) -> int:
    """How many hops :func:`format_why_json` lists for ``why``'s whole closure."""
    return sum(len(chain) for chain in why.closure.values())


def format_why_json(why: WhyResult, relpath: PathFormatter, *, closure: bool) -> str:
    """JSON for ``why``: with ``closure`` the whole predicted closure
    ``{"count", "modules": [{"module", "path", "chain"}], "unresolved": [...]}`` (every IPL006 site
    of the closure, first-party and installed), else the forbidden modules reached;
    ``count`` is the closure as a ``max-modules`` budget counts it."""
    if closure:
        modules = []
        for name, chain in sorted(why.closure.items()):
            modules.append({
                "module": name,
                "path": _module_path(why, name, relpath),
                "chain": [hop_to_json(hop, relpath) for hop in chain],
            })
        return json.dumps({
            "count": why.count,
            "modules": modules,
            "unresolved": [_unresolved_site_json(u, relpath) for u in why.unresolved],
        }, indent=2) + "\n"
    return json.dumps(
        {
            "module": why.module,
            "count": why.count,
            "forbidden": [
                {
                    "module": name,
                    "pattern": rule.pattern.text,
                    "reason": rule.reason,
                    "source": rule.source,
                    "chain": [hop_to_json(hop, relpath) for hop in why.closure[name]],
                }
                for name, rule in why.forbidden
            ],
            "unresolved": [_unresolved_site_json(u, relpath) for u in why.unresolved],
            "problems": [
                {"module": m, "line": p.line, "message": p.message} for m, p in why.problems
            ],
        },
        indent=2,
    ) + "\n"


def _module_path(why: WhyResult, name: str, relpath: PathFormatter) -> str | None:
    path = why.paths.get(name)
    return relpath(path) if path is not None else None


def format_presets_json(presets: Sequence[Preset]) -> str:
    """``importpolicy presets --format json``: ``{"presets": [{"name", "file", "header",
    "entries": [{"table", "key", "reason"}]}]}``."""
    return json.dumps({"presets": [
        {
            "name": preset.name,
            "file": preset.path.name,
            "header": list(preset.header),
            "entries": [
                {"table": table, "key": key, "reason": reason}
                for table, key, reason in preset.entries
            ],
        }
        for preset in presets
    ]}, indent=2, ensure_ascii=False) + "\n"
