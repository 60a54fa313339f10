"""The JSON of ``importpolicy check --format json`` and ``importpolicy why --format json``
(documented in docs/output.md). Functions return text and print nothing."""

from __future__ import annotations

import json

from flake8_importpolicy.model.findings import Report, WhyResult
from flake8_importpolicy.output.render import PathFormatter, hop_to_json

__all__ = ["format_report_json", "format_why_json"]


def format_report_json(report: Report, relpath: PathFormatter) -> str:
    """The JSON report documented in ``docs/output.md``::

        {"violations": [{"code", "light", "heavy", "pattern", "reason", "path", "line", "col",
                         "also", "covers", "chain": [hop, ...]}],
         "problems": [{"code", "message", "path", "line"}]}
    """
    data = {
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
            }
            for v in report.violations
        ],
        "problems": [
            {
                "code": p.code.id,
                "message": p.message,
                "path": relpath(p.path) if p.path is not None else None,
                "line": p.line,
            }
            for p in report.problems
        ],
    }
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


def format_why_json(why: WhyResult, relpath: PathFormatter, *, closure: bool) -> str:
    """JSON for ``why``: with ``closure`` the whole predicted closure
    ``{"modules": [{"module", "path", "chain"}]}``, else the forbidden modules reached."""
    if closure:
        modules = []
        for name, chain in sorted(why.closure.items()):
            modules.append({
                "module": name,
                "path": _module_path(why, name, relpath),
                "chain": [hop_to_json(hop, relpath) for hop in chain],
            })
        return json.dumps({"modules": modules}, indent=2) + "\n"
    return json.dumps(
        {
            "module": why.module,
            "forbidden": [
                {
                    "module": name,
                    "pattern": rule.pattern.text,
                    "reason": rule.reason,
                    "chain": [hop_to_json(hop, relpath) for hop in why.closure[name]],
                }
                for name, rule in why.forbidden
            ],
            "unknown": [
                {"module": u.module, "path": relpath(u.path) if u.path else None,
                 "line": u.line, "detail": u.detail}
                for u in why.unknown
            ],
            "problems": [
                {"module": m, "line": p.line, "message": p.message} for m, p in why.problems
            ],
        },
        indent=2,
    ) + "\n"


def _module_path(why: WhyResult, name: str, relpath: PathFormatter) -> str | None:
    path = why.paths.get(name)
    return relpath(path) if path is not None else None
