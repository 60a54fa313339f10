"""The text report of ``importpolicy check`` and the tree of ``importpolicy why``.

Paths are shown relative to the policy file's directory when inside it, absolute otherwise. Every
function returns text and prints nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from flake8_importpolicy.model.findings import Problem, Report, Violation, WhyResult
from flake8_importpolicy.model.graph import Hop
from flake8_importpolicy.model.policy import HeavyRule
from flake8_importpolicy.output.render import (
    PathFormatter,
    format_hop_kind,
    format_hop_line,
    format_problem,
    format_summary,
    format_violation_header,
    format_where,
    format_why_notes,
    plural,
)

__all__ = ["LINES_PER_LIGHT_MODULE", "format_chain_lines", "format_report_text", "format_why_text"]


def format_chain_lines(chain: Sequence[Hop], relpath: PathFormatter, indent: str = "    ") -> list[str]:
    """One indented line per hop (:func:`~flake8_importpolicy.output.render.format_hop_line`)."""
    return [f"{indent}{format_hop_line(hop, relpath)}" for hop in chain]


LINES_PER_LIGHT_MODULE = 20
"""The most lines the text report shows for one light module (blank lines aside): the middle of long
chains, and the violations past that, are summarised (a 1,000-module import cycle with a ``cyc.*``
light pattern printed 502,000 lines). ``--format json`` keeps everything."""


def format_report_text(report: Report, relpath: PathFormatter) -> str:
    """The text report: one block per violation (header, then one hop per line; at most
    :data:`LINES_PER_LIGHT_MODULE` lines per light module, see :func:`_plan_lines`), then problems,
    then a summary line."""
    out: list[str] = []
    allowed, untold = _plan_lines(report.violations)
    last_shown = {report.violations[number].light: number for number in sorted(allowed)}
    for number, violation in enumerate(report.violations):
        if number not in allowed:
            continue
        out.append(
            f"{relpath(violation.path)}:{violation.line}:{violation.col + 1}: "
            + format_violation_header(violation)
        )
        out.extend(_bounded_chain(violation.chain, relpath, allowed[number]))
        if violation.also:
            out.append(f"    also reaches: {', '.join(violation.also)}")
        if violation.light in untold and last_shown[violation.light] == number:
            out.append(f"    ... {plural(untold[violation.light], 'more violation')} of light module "
                       f"{violation.light} (--format json lists them all)")
        out.append("")
    for problem in report.problems:
        out.append(_problem_line(problem, relpath))
    if report.problems:
        out.append("")
    out.append(format_summary(report))
    return "\n".join(out) + "\n"


def _plan_lines(violations: Sequence[Violation]) -> tuple[dict[int, int], dict[str, int]]:
    """How many chain lines each violation gets, so that no light module takes more than
    :data:`LINES_PER_LIGHT_MODULE` lines: every violation shown gets its header and at least its
    last hop (behind a line counting the hops left out), in report order while they fit, with a line
    kept to count the others; lines left over go to the chains in order.

    Returns:
        ``({index of a violation shown: its chain lines}, {light module: violations not shown})``.
    """
    by_light: dict[str, list[int]] = {}
    for number, violation in enumerate(violations):
        by_light.setdefault(violation.light, []).append(number)
    allowed: dict[int, int] = {}
    untold: dict[str, int] = {}
    for light, numbers in by_light.items():
        used = 0
        shown: list[int] = []
        for position, number in enumerate(numbers):
            violation = violations[number]
            cost = 1 + bool(violation.also) + min(len(violation.chain), 2)
            summary = 1 if position + 1 < len(numbers) else 0
            if used + cost + summary > LINES_PER_LIGHT_MODULE:
                untold[light] = len(numbers) - position
                break
            used += cost
            shown.append(number)
            allowed[number] = min(len(violation.chain), 2)
        spare = LINES_PER_LIGHT_MODULE - used - (1 if light in untold else 0)
        for number in shown:
            more = min(spare, len(violations[number].chain) - allowed[number])
            allowed[number] += more
            spare -= more
    return allowed, untold


def _bounded_chain(chain: Sequence[Hop], relpath: PathFormatter, most: int) -> list[str]:
    """The chain's lines, at most ``most`` (at least 1): a longer chain keeps its first and last hops
    around one line saying how many are left out."""
    if len(chain) <= most:
        return format_chain_lines(chain, relpath)
    head = (most - 1) // 2
    tail = most - 1 - head
    return [
        *format_chain_lines(chain[:head], relpath),
        f"    ... {plural(len(chain) - head - tail, 'more hop')} (--format json lists them all)",
        *format_chain_lines(chain[len(chain) - tail:], relpath),
    ]


def _problem_line(problem: Problem, relpath: PathFormatter) -> str:
    where = relpath(problem.path) if problem.path is not None else "<policy>"
    if problem.line is not None:
        where += f":{problem.line}"
    return f"{where}: {format_problem(problem)}"


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
            f"{plural(len(why.forbidden), 'forbidden module')} reached."
        )
    else:
        out.append(f"import {why.module} runs {count} other modules; no forbidden module is reached.")
    out.extend(format_why_notes(why, relpath))
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
        where = format_where(hop.path, hop.line, relpath) if hop.path is not None else "?"
        mark = ""
        rule = reasons.get(hop.imported)
        if rule is not None and not children:
            mark = f"  FORBIDDEN: {rule.reason}"
        out.append(f"{indent}{'└── ' if last else '├── '}{hop.imported}  "
                   f"[{format_hop_kind(hop)} at {where}]{mark}")
        _render_tree(children, out, indent + ("    " if last else "│   "),  # type: ignore[arg-type]
                     reasons, relpath)
