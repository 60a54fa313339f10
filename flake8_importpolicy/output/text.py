"""Reporting: text and JSON renderings of reports, chains and ``why`` results.

Paths are shown relative to the policy file's directory when inside it, absolute otherwise. Every
function returns text (or JSON-able data) and prints nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from typing import TYPE_CHECKING

from flake8_importpolicy import codes
from flake8_importpolicy.config.load import HeavyRule

if TYPE_CHECKING:  # types only: the command line imports this module before the engine
    from flake8_importpolicy.analysis.engine import Problem, Report, Violation, WhyResult
    from flake8_importpolicy.analysis.graph import Hop

__all__ = [
    "PathFormatter",
    "format_chain_compact",
    "format_report_json",
    "format_report_text",
    "format_violation_message",
    "format_why_json",
    "format_why_text",
    "hop_to_json",
]

PathFormatter = Callable[[Path], str]
"""Turns an absolute path into the string shown to the user."""


def format_chain_compact(chain: Sequence[Hop], relpath: PathFormatter) -> str:
    """One-line chain: ``a -> b (path:line) -> c (path:line)``; each ``(path:line)`` is the hop's
    statement in the importing module."""
    if not chain:
        return ""
    parts = [chain[0].module]
    for hop in chain:
        where = f"{relpath(hop.path)}:{hop.line}" if hop.path is not None else f"?:{hop.line}"
        parts.append(f"{hop.imported} ({where})")
    return " -> ".join(parts)


def format_violation_message(violation: Violation, relpath: PathFormatter) -> str:
    """``IPL001 light module ... (reason): <compact chain>`` — the one-line form used by flake8/mypy."""
    head = codes.IPL001.format(
        light=violation.light, heavy=violation.heavy, reason=violation.reason
    )
    return f"{head}: {format_chain_compact(violation.chain, relpath)}"


def hop_to_json(hop: Hop, relpath: PathFormatter) -> dict[str, object]:
    """A hop as ``{"module", "path", "line", "col", "kind", "imported", "flags"}``."""
    return {
        "module": hop.module,
        "path": relpath(hop.path) if hop.path is not None else None,
        "line": hop.line,
        "col": hop.col,
        "kind": hop.kind,
        "imported": hop.imported,
        "flags": list(hop.flags),
    }


def format_report_text(report: Report, relpath: PathFormatter) -> str:
    """The text report: one block per violation (header, then one hop per line), then problems,
    then a summary line."""
    out: list[str] = []
    for violation in report.violations:
        out.append(
            f"{relpath(violation.path)}:{violation.line}:{violation.col + 1}: "
            + codes.IPL001.format(
                light=violation.light, heavy=violation.heavy, reason=violation.reason
            )
        )
        out.extend(_chain_lines(violation.chain, relpath))
        if violation.also:
            out.append(f"    also reaches: {', '.join(violation.also)}")
        out.append("")
    for problem in report.problems:
        out.append(_problem_line(problem, relpath))
    if report.problems:
        out.append("")
    out.append(_summary(report))
    return "\n".join(out) + "\n"


def _chain_lines(chain: Sequence[Hop], relpath: PathFormatter) -> list[str]:
    lines = []
    for hop in chain:
        where = f"{relpath(hop.path)}:{hop.line}" if hop.path is not None else "?"
        flags = f", {', '.join(hop.flags)}" if hop.flags else ""
        lines.append(f"    {where}: {hop.module} -> {hop.imported} ({hop.kind}{flags})")
    return lines


def _problem_line(problem: Problem, relpath: PathFormatter) -> str:
    where = relpath(problem.path) if problem.path is not None else "<policy>"
    if problem.line is not None:
        where += f":{problem.line}"
    return f"{where}: {problem.code} {problem.message}"


def _summary(report: Report) -> str:
    lights = len(report.light_modules)
    noun = "light module" if lights == 1 else "light modules"
    if not report.violations and not report.problems:
        extra = f" ({report.suppressed} suppressed by noqa)" if report.suppressed else ""
        return f"OK: {lights} {noun} checked, no forbidden import-time imports{extra}."
    parts = [_plural(len(report.violations), "violation")]
    if report.problems:
        parts.append(_plural(len(report.problems), "problem"))
    if report.suppressed:
        parts.append(f"{report.suppressed} suppressed by noqa")
    return f"Found {', '.join(parts)} in {lights} {noun}."


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def format_report_json(report: Report, relpath: PathFormatter) -> str:
    """The JSON report documented in ``docs/output.md``::

        {"violations": [{"code", "light", "heavy", "pattern", "reason", "path", "line", "col",
                         "also", "chain": [hop, ...]}],
         "problems": [{"code", "message", "path", "line"}]}
    """
    data = {
        "violations": [
            {
                "code": v.code,
                "light": v.light,
                "heavy": v.heavy,
                "pattern": v.pattern,
                "reason": v.reason,
                "path": relpath(v.path),
                "line": v.line,
                "col": v.col,
                "also": list(v.also),
                "chain": [hop_to_json(hop, relpath) for hop in v.chain],
            }
            for v in report.violations
        ],
        "problems": [
            {
                "code": p.code,
                "message": p.message,
                "path": relpath(p.path) if p.path is not None else None,
                "line": p.line,
            }
            for p in report.problems
        ],
    }
    return json.dumps(data, indent=2, sort_keys=False) + "\n"


def format_why_text(why: WhyResult, relpath: PathFormatter) -> str:
    """An indented tree of the shortest import-time chain to each forbidden module reached."""
    resolved = why.resolved
    where = relpath(resolved.path) if resolved.path is not None else resolved.kind
    out = [f"{why.module} ({where})"]
    tree: dict[Hop, dict[Hop, object]] = {}
    for name, _rule in why.forbidden:
        node = tree
        for hop in why.closure[name]:
            node = node.setdefault(hop, {})  # type: ignore[assignment]
    reasons = {name: rule for name, rule in why.forbidden}
    _render_tree(tree, out, "", reasons, relpath)
    count = len(why.closure) - 1
    if why.forbidden:
        out.append(
            f"import {why.module} runs {count} other modules; "
            f"{_plural(len(why.forbidden), 'forbidden module')} reached."
        )
    else:
        out.append(f"import {why.module} runs {count} other modules; no forbidden module is reached.")
    for unknown in why.unknown:
        path = relpath(unknown.path) if unknown.path is not None else "?"
        out.append(f"unknown import: {path}:{unknown.line}: {unknown.detail} (target not a literal)")
    for attachment in why.lazy:
        path = relpath(attachment.path) if attachment.path is not None else "?"
        out.append(
            f"lazily attached: {path}:{attachment.line}: {attachment.detail}(...) "
            "(its targets are not run at import time)"
        )
    for module, problem in why.problems:
        out.append(f"cannot analyse {module}: line {problem.line}: {problem.message}")
    return "\n".join(out) + "\n"


def _render_tree(
    tree: dict[Hop, dict[Hop, object]],
    out: list[str],
    indent: str,
    reasons: Mapping[str, HeavyRule],
    relpath: PathFormatter,
) -> None:
    items = sorted(tree.items(), key=lambda item: item[0].sort_key())
    for number, (hop, children) in enumerate(items):
        last = number == len(items) - 1
        where = f"{relpath(hop.path)}:{hop.line}" if hop.path is not None else "?"
        flags = f", {', '.join(hop.flags)}" if hop.flags else ""
        mark = ""
        rule = reasons.get(hop.imported)
        if rule is not None and not children:
            mark = f"  FORBIDDEN: {rule.reason}"
        out.append(f"{indent}{'└── ' if last else '├── '}{hop.imported}  "
                   f"[{hop.kind}{flags} at {where}]{mark}")
        _render_tree(children, out, indent + ("    " if last else "│   "),  # type: ignore[arg-type]
                     reasons, relpath)


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
