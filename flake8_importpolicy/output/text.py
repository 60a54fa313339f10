"""The text report of ``importpolicy check`` and the tree of ``importpolicy why``.

Paths are shown relative to the policy file's directory when inside it, absolute otherwise. Every
function returns text and prints nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

from flake8_importpolicy.model.findings import Problem, Report, Violation
from flake8_importpolicy.model.graph import CallNode, FunctionNode, Hop
from flake8_importpolicy.output.render import (
    PathFormatter,
    format_covers,
    format_fix_offer,
    format_hop_kind,
    format_hop_line,
    format_problem,
    format_summary,
    UnresolvedGroup,
    format_unresolved_group_header,
    format_unresolved_header,
    format_violation_header,
    group_unresolved,
    format_where,
    format_why_notes,
    plural,
    single_line,
)
from flake8_importpolicy.output.style import PLAIN, Level, Outcome, Style

if TYPE_CHECKING:  # annotations only: a warm check loads no policy model (tests/test_cli.py)
    from flake8_importpolicy.model.baseline import BaselineEntry
    from flake8_importpolicy.model.bases import Preset
    from flake8_importpolicy.model.policy import HeavyRule
    from flake8_importpolicy.model.why import WhyResult

__all__ = [
    "GROUPS_SHOWN",
    "LINES_PER_LIGHT_MODULE",
    "WHY_INDENT_LEVELS",
    "WHY_RUN_HOPS",
    "format_baseline_refused",
    "format_baseline_written",
    "format_chain_lines",
    "format_report_text",
    "format_why_text",
    "group_by_cause",
]


def format_chain_lines(chain: Sequence[Hop], relpath: PathFormatter, indent: str = "    ") -> list[str]:
    """One indented line per hop (:func:`~flake8_importpolicy.output.render.format_hop_line`)."""
    return [f"{indent}{format_hop_line(hop, relpath)}" for hop in chain]


LINES_PER_LIGHT_MODULE = 25
"""The most lines the text report shows for one light module's violations and first-party IPL006
sites, the blank line after each block included: the middle of long chains, and the blocks past
that, are summarised (a 1,000-module import cycle with a ``cyc.*`` light pattern printed 502,000
lines). ``--format json`` keeps everything."""


def format_report_text(report: Report, relpath: PathFormatter, style: Style = PLAIN, *,
                       command_relpath: PathFormatter | None = None,
                       policy_option: str = "",
                       target_versions: Sequence[tuple[int, int]] = ()) -> str:
    """The text report: one entry per cause (see :func:`group_by_cause`: a header, then one hop per
    line, then each further statement of the light module that reaches the same forbidden package,
    indented under it), then one block per first-party unresolved site (IPL006, at the site, with
    the chain from the light module), at most :data:`LINES_PER_LIGHT_MODULE` lines per light module
    for both (see :func:`_plan_lines`); then one line per installed distribution (and the standard
    library) holding unresolved sites, for the whole run, at the first light-module statement that
    leads there, with their count and constructs
    (:func:`~flake8_importpolicy.output.render.group_unresolved` across light modules), at most
    :data:`GROUPS_SHOWN` lines; then problems, then a summary line. ``style`` colours the paths of
    the reported lines, their codes and the summary (:mod:`~flake8_importpolicy.output.style`; none
    by default). ``command_relpath`` and ``policy_option`` make the ``importpolicy fix`` command
    of a "use instead" line one that works where ``check`` ran (see
    :func:`~flake8_importpolicy.output.render.format_fix_offer`; by default: ``relpath``), and
    ``target_versions`` (the check's) which fixes it names."""
    out: list[str] = []
    violations = report.violations
    unresolved_entries = group_unresolved(report.unresolved, across_light_modules=True)
    # Display order: each entry's head, then the statements it gathers.
    shown_order = [(number, position > 0) for group in group_by_cause(violations)
                   for position, number in enumerate(group)]
    blocks = [  # a gathered statement's "also reaches ..., from ...:" line takes its header's place
        (violations[number].light, len(violations[number].chain),
         bool(violations[number].also) + bool(violations[number].covers)
         + bool(format_fix_offer(violations[number], relpath, target_versions=target_versions))
         + (not member))  # an entry's head is followed by a blank line
        for number, member in shown_order
    ] + [(entry.light, len(entry.chain), 1) for entry in unresolved_entries
         if not isinstance(entry, UnresolvedGroup)]
    allowed, untold = _plan_lines(blocks)
    last_shown = {blocks[number][0]: number for number in sorted(allowed)}

    def untold_line(number: int, light: str) -> None:
        if light in untold and last_shown[light] == number:
            out.append(f"    ... {plural(untold[light], 'more finding')} of light module {light} "
                       "(--format json lists them all)")

    head: Violation | None = None
    for block, (number, member) in enumerate(shown_order):
        violation = violations[number]
        if not member:
            head = violation
            if out and out[-1] != "":
                out.append("")
        if block not in allowed:
            continue
        indent = "    "
        if member and head is not None:
            out.append(f"    {_gathered_line(violation, head, relpath, style)}")
            indent = "        "
        else:
            out.append(_reported(relpath(violation.path), f":{violation.line}:{violation.col + 1}: ",
                                 format_violation_header(violation), style))
        out.extend(_bounded_chain(violation.chain, relpath, allowed[block], indent))
        if violation.also:
            out.append(f"{indent}also reaches: {', '.join(violation.also)}")
        if violation.covers:
            out.append(f"{indent}{format_covers(violation)}")
        offer = format_fix_offer(violation, command_relpath or relpath, policy_option,
                                 target_versions)
        if offer:
            out.append(f"{indent}{offer}")
        untold_line(block, violation.light)
    if out and out[-1] != "":
        out.append("")
    for offset, entry in enumerate(unresolved_entries, start=len(violations)):
        if isinstance(entry, UnresolvedGroup) or offset not in allowed:
            continue
        site = entry.site
        out.append(_reported(relpath(site.path) if site.path is not None else "?",
                             f":{site.line}:{site.col + 1}: ", format_unresolved_header(entry),
                             style, "info"))
        out.extend(_bounded_chain(entry.chain, relpath, allowed[offset]))
        untold_line(offset, entry.light)
        out.append("")
    groups = [entry for entry in unresolved_entries if isinstance(entry, UnresolvedGroup)]
    shown_groups = groups if len(groups) <= GROUPS_SHOWN else groups[:GROUPS_SHOWN - 1]
    for group in shown_groups:
        at, line, col = group.first_hop
        out.append(_reported(relpath(at) if at is not None else "?", f":{line}:{col + 1}: ",
                             format_unresolved_group_header(group), style, "info"))
    if len(shown_groups) < len(groups):
        out.append(f"... {plural(len(groups) - len(shown_groups), 'more installed package')}"
                   " with sites not resolved (--format json lists them all)")
    if groups:
        out.append("")
    for problem in report.problems:
        out.append(_problem_line(problem, relpath, style=style))
    for note in report.notes:
        out.append(_problem_line(note, relpath, note=True, style=style))
    if report.problems or report.notes:
        out.append("")
    outcome: Outcome = "failed" if report.exit_code else "blind" if report.unresolved else "ok"
    out.append(style.summary(format_summary(report, len(unresolved_entries)), outcome))
    return "\n".join(out) + "\n"


GROUPS_SHOWN = 10
"""The most lines the IPL006 sites in installed distributions and the standard library take (one
line each, the last one counting the rest when there are more): with the first-party sites'
:data:`LINES_PER_LIGHT_MODULE`, the report of one light module of vLLM with torch installed stays
under 40 lines (issue 25)."""


def group_by_cause(violations: Sequence[Violation]) -> list[list[int]]:
    """One cause, one entry: the indexes of ``violations`` (report order), grouped so that the
    statements of one light module that reach the same forbidden package are one entry of the text
    report: a later IPL001 of that light module joins the earlier one whose forbidden module is the
    same, a parent package or a submodule of its own (``deepspeed`` at line 3, ``deepspeed.ops`` at
    line 9: the second "also reaches" under the first). A call of a ``[heavy-calls]`` function
    joins only the same call; a budget (IPL008) is an entry of its own. Each group lists its head
    first, then the others in report order; groups are in the order of their heads. flake8, mypy,
    GitHub annotations, JSON and SARIF keep one finding per statement, where the user acts."""
    groups: list[list[int]] = []
    heads: dict[str, list[int]] = {}  # light module -> the groups of its IPL001 heads
    for number, violation in enumerate(violations):
        if violation.budget is None:
            for group in heads.get(violation.light, ()):
                if _same_package(violations[groups[group][0]], violation):
                    groups[group].append(number)
                    break
            else:
                heads.setdefault(violation.light, []).append(len(groups))
                groups.append([number])
        else:
            groups.append([number])
    return groups


def _same_package(head: Violation, other: Violation) -> bool:
    """Whether ``other`` reaches the forbidden package ``head`` reaches: the same module, or one a
    submodule of the other (calls: the same call)."""
    if head.code != other.code or head.is_call or other.is_call:
        return head.code == other.code and head.heavy == other.heavy
    first, second = str(head.heavy), str(other.heavy)
    return (first == second or second.startswith(first + ".")
            or first.startswith(second + "."))


def _gathered_line(violation: Violation, head: Violation, relpath: PathFormatter,
                   style: Style) -> str:
    """The line of a statement an entry gathers under ``head``: ``also reaches ds.ops (its reason,
    when not the head's), from app/light.py:4:1:`` (``also calls pkg.f()`` for a call)."""
    verb = "calls" if violation.is_call else "reaches"
    reason = f" ({single_line(violation.reason)})" if violation.reason != head.reason else ""
    where = style.path(relpath(violation.path))
    return f"also {verb} {violation.heavy}{reason}, from {where}:{violation.line}:{violation.col + 1}:"


def _reported(path: str, position: str, header: str, style: Style, level: Level = "error") -> str:
    """``path:line:col: CODE message`` with the path and the code (the header's first word)
    painted by ``style``."""
    code, _, message = header.partition(" ")
    return f"{style.path(path)}{position}{style.code(code, level)} {message}"


def _plan_lines(blocks: Sequence[tuple[str, int, int]]) -> tuple[dict[int, int], dict[str, int]]:
    """How many chain lines each block gets, so that no light module takes more than
    :data:`LINES_PER_LIGHT_MODULE` lines: every block shown gets its header, its other lines and at
    least its last hop (behind a line counting the hops left out), in report order while they fit,
    with a line kept to count the others; lines left over go to the chains in order.

    Args:
        blocks: ``(light module, hops in the chain, other lines)`` of each violation and
            first-party unresolved site, in report order (other lines: the blank line after it
            too).

    Returns:
        ``({index of a block shown: its chain lines}, {light module: blocks not shown})``.
    """
    by_light: dict[str, list[int]] = {}
    for number, (light, _, _) in enumerate(blocks):
        by_light.setdefault(light, []).append(number)
    allowed: dict[int, int] = {}
    untold: dict[str, int] = {}
    for light, numbers in by_light.items():
        used = 0
        shown: list[int] = []
        for position, number in enumerate(numbers):
            _, hops, other = blocks[number]
            cost = 1 + other + min(hops, 2)
            summary = 1 if position + 1 < len(numbers) else 0
            if used + cost + summary > LINES_PER_LIGHT_MODULE:
                untold[light] = len(numbers) - position
                break
            used += cost
            shown.append(number)
            allowed[number] = min(hops, 2)
        spare = LINES_PER_LIGHT_MODULE - used - (1 if light in untold else 0)
        for number in shown:
            more = min(spare, blocks[number][1] - allowed[number])
            allowed[number] += more
            spare -= more
    return allowed, untold


def _bounded_chain(
    chain: Sequence[Hop], relpath: PathFormatter, most: int, indent: str = "    "
) -> list[str]:
    """The chain's lines, at most ``most`` (at least 1): a longer chain keeps its first and last hops
    around one line saying how many are left out."""
    if len(chain) <= most:
        return format_chain_lines(chain, relpath, indent)
    head = (most - 1) // 2
    tail = most - 1 - head
    return [
        *format_chain_lines(chain[:head], relpath, indent),
        f"{indent}... {plural(len(chain) - head - tail, 'more hop')} (--format json lists them all)",
        *format_chain_lines(chain[len(chain) - tail:], relpath, indent),
    ]


def _problem_line(
    problem: Problem, relpath: PathFormatter, note: bool = False, style: Style = PLAIN
) -> str:
    """``path[:line]: CODE message``; ``path[:line]: note: CODE message`` for a note."""
    where = style.path(relpath(problem.path) if problem.path is not None else "<policy>")
    if problem.line is not None:
        where += f":{problem.line}"
    code, _, message = format_problem(problem).partition(" ")
    return f"{where}: {'note: ' if note else ''}{style.code(code, 'note' if note else 'error')} {message}"


def format_why_text(why: WhyResult, relpath: PathFormatter) -> str:
    """An indented tree of the shortest import-time chain to each forbidden module reached (one chain
    per forbidden module, not every path), then how many modules and functions the import runs."""
    resolved = why.resolved
    where = relpath(resolved.path) if resolved.path is not None else resolved.kind
    out = [f"{why.module} ({where})"]
    tree: _Tree = {}
    for name, _rule in why.forbidden:
        node = tree
        for hop in why.closure[name]:
            node = node.setdefault(hop, {})
    reasons = {name: rule for name, rule in why.forbidden}
    _render_tree(tree, out, "", reasons, relpath)
    functions = sum(1 for name in why.closure if isinstance(name, FunctionNode))
    modules = sum(1 for name in why.closure if not isinstance(name, (FunctionNode, CallNode))) - 1
    runs = f"import {why.module} runs {plural(modules, 'other module')}"
    if functions:
        runs += f" and {plural(functions, 'function')} called at import time"
    runs += f" (max-modules counts {why.count})"
    if why.forbidden:
        out.append(f"{runs}; {plural(len(why.forbidden), 'forbidden module')} reached.")
    else:
        out.append(f"{runs}; no forbidden module is reached.")
    out.extend(format_why_notes(why, relpath))
    return "\n".join(out) + "\n"


_Tree: TypeAlias = dict[Hop, "_Tree"]
"""``why``'s tree of chains: each hop to the hops after it."""


WHY_RUN_HOPS = 20
"""``why``'s tree shows at most this many hops of a run of hops without a branch: a longer run
keeps its first and last hops around ``... N more hops`` (``--format json`` lists them all)."""
WHY_INDENT_LEVELS = 40
"""``why``'s tree indents at most this many levels; deeper hops are drawn at that depth, each
marked with its level, so that a tree thousands of hops deep stays linear in size."""


def _render_tree(
    tree: _Tree,
    out: list[str],
    indent: str,
    reasons: Mapping[str, HeavyRule],
    relpath: PathFormatter,
) -> None:
    """Draw ``tree`` (hop -> its subtree) into ``out``, without recursion (a chain may be thousands
    of hops long): runs longer than :data:`WHY_RUN_HOPS` are shortened, indentation stops at
    :data:`WHY_INDENT_LEVELS`."""
    # each entry: (hop, children, last among its siblings, indent, level)
    stack: list[tuple[Hop, _Tree, bool, str, int]] = []

    def push(children: _Tree, at: str, level: int) -> None:
        items = sorted(children.items(), key=lambda item: item[0].sort_key())
        for number in range(len(items) - 1, -1, -1):
            hop, below = items[number]
            stack.append((hop, below, number == len(items) - 1, at, level))

    push(tree, indent, 0)
    while stack:
        hop, children, last, at, level = stack.pop()
        run: list[tuple[Hop, _Tree]] = [(hop, children)]
        while len(children) == 1:  # a run of hops without a branch
            hop, children = next(iter(children.items()))
            run.append((hop, children))
        shown: list[tuple[Hop, _Tree] | None] = list(run)
        if len(run) > WHY_RUN_HOPS:
            tail = WHY_RUN_HOPS // 2
            shown = [*run[:WHY_RUN_HOPS - tail], None, *run[len(run) - tail:]]
        for item in shown:
            branch = "└── " if last else "├── "
            depth = f"[level {level + 1}] " if level >= WHY_INDENT_LEVELS else ""
            if item is None:
                left_out = len(run) - WHY_RUN_HOPS
                out.append(f"{at}{branch}{depth}... {left_out:,} more hops (--format json lists "
                           "them all)")
                level += left_out - 1
            else:
                node, below = item
                out.append(f"{at}{branch}{depth}{_tree_line(node, bool(below), reasons, relpath)}")
            if level < WHY_INDENT_LEVELS:
                at += "    " if last else "│   "
            level += 1
            last = True  # a run's later hops are each the only child of the one before
        push(children, at, level)


def _tree_line(
    hop: Hop, branches: bool, reasons: Mapping[str, HeavyRule], relpath: PathFormatter
) -> str:
    where = format_where(hop.path, hop.line, relpath) if hop.path is not None else "?"
    mark = ""
    rule = reasons.get(hop.imported)
    if rule is not None and not branches:
        mark = f"  FORBIDDEN: {single_line(rule.shown_reason)}"
    return f"{hop.imported}  [{format_hop_kind(hop)} at {where}]{mark}"


def format_presets_text(presets: Sequence[Preset]) -> str:
    """``importpolicy presets``: each built-in preset with its header (what it is, where it comes
    from) and every entry with its reason, which ends with the entry's source."""
    out: list[str] = []
    for preset in presets:
        tables = sorted({table for table, _, _ in preset.entries})
        counts = ", ".join(
            f"{sum(1 for t, _, _ in preset.entries if t == table)} [{table}]" for table in tables
        )
        out.append(f'{preset.name} ({counts}; extends = ["{preset.name}"])')
        out.extend(f"  # {single_line(line)}" for line in preset.header if line)
        for table, key, reason in preset.entries:
            shown = f"{key}()" if table == "heavy-calls" else key
            out.append(f"  {shown}: {single_line(reason)}")
        out.append("")
    return "\n".join(out)


def format_baseline_written(
    shown: str, entries: int, added: int, removed: int, setting: str | None
) -> str:
    """What ``check --write-baseline`` says: ``wrote importpolicy-baseline.json: 3 entries (1
    added, 2 removed)``, and, when the policy does not use that file yet, how to make it
    (``setting``: the path to write in ``[settings] baseline``)."""
    lines = [f"wrote {shown}: {plural(entries, 'entry').replace('entrys', 'entries')} "
             f"({added} added, {removed} removed)"]
    if setting is not None:
        lines.append(f'use it: add baseline = "{setting}" under [settings] in the policy, or pass '
                     f"--baseline {shown}")
    return "\n".join(lines) + "\n"


def format_baseline_refused(shown: str, added: Sequence[BaselineEntry]) -> str:
    """Why ``check --write-baseline`` did not write: today's findings the existing baseline does not
    record, one per line."""
    lines = [f"importpolicy: {shown} does not record {plural(len(added), 'finding')} of today's "
             "check; fix them, or pass --add to record them too (nothing was written):"]
    lines.extend(f"  {entry.text}" for entry in added)
    return "\n".join(lines)
