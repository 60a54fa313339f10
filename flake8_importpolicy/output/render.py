"""How a finding reads, in one place: messages, hop lines, chains and the summary line.

Every output format (text, JSON, GitHub annotations, SARIF, flake8, mypy, the runtime proof) builds its
words from these functions, so no two clients word the same finding differently. Paths are shown
through a :data:`PathFormatter` the caller chooses (relative to the policy's directory, or to the CI
workspace).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from flake8_importpolicy import codes
from flake8_importpolicy.codes import Code
from flake8_importpolicy.model.findings import (
    STANDARD_LIBRARY,
    Problem,
    Report,
    Unresolved,
    Violation,
)
from flake8_importpolicy.model.graph import Hop

if TYPE_CHECKING:  # a check never loads what only why shows, nor a warm one the policy errors
    from flake8_importpolicy.model.errors import PolicyProblem
    from flake8_importpolicy.model.why import WhyResult

__all__ = [
    "PathFormatter",
    "COMPACT_CHAIN_HOPS",
    "format_chain_compact",
    "format_covers",
    "find_error_line",
    "format_error_diagnostic",
    "format_fix_offer",
    "format_error_line",
    "format_hop_kind",
    "format_hop_line",
    "format_message",
    "format_policy_problem",
    "format_problem",
    "format_summary",
    "format_unresolved_entry",
    "format_unresolved_group_header",
    "GROUP_LIGHTS_NAMED",
    "format_unresolved_header",
    "format_unresolved_message",
    "group_unresolved",
    "UnresolvedGroup",
    "format_violation_header",
    "format_violation_message",
    "format_where",
    "format_why_notes",
    "hop_to_json",
    "plural",
    "escape_line_breaks",
    "shorten_reason",
    "single_line",
]

PathFormatter = Callable[[Path], str]
"""Turns an absolute path into the string shown to the user."""


def format_message(code: Code, *, call: bool = False, **fields: str) -> str:
    """``"<code> <message>"``: ``code``'s template filled from ``fields`` (its call template when
    ``call``: the ``heavy`` field names a ``[heavy-calls]`` function). Each field is
    :func:`single_line`: reasons are user text (a multi-line TOML string), and a message is one line
    in every format (a line break would split flake8's and mypy's records, or start a line with a
    GitHub workflow command).

    Raises:
        KeyError: if a field the template names is missing.
    """
    return code.format(call=call, **{name: single_line(value) for name, value in fields.items()})


SHORT_REASON: Final = 100
"""The longest reason a single-line format (flake8, mypy, GitHub annotations) shows whole; a longer
one is cut at a word (:func:`shorten_reason`). ``check`` text, JSON and SARIF show it whole."""


def shorten_reason(reason: str) -> str:
    """``reason`` on one line, cut at a word to at most :data:`SHORT_REASON` characters with `` …``
    at the end when it is longer (a reason of 765 characters made flake8 lines of 920)."""
    text = single_line(reason)
    if len(text) <= SHORT_REASON:
        return text
    cut = textwrap.shorten(text, width=SHORT_REASON, placeholder=" …")
    return cut if cut != "…" else text[:SHORT_REASON - 1] + "…"  # one word longer than the width


def format_violation_header(violation: Violation, *, short: bool = False) -> str:
    """``IPL001 light module <light> imports <heavy> at import time (<reason>)`` (or ``calls``);
    for a budget (IPL008): ``... runs 57 modules at import time, over its budget of max-modules =
    40; most through: mypkg.plugins (31), json (2)``. ``short``: the reason cut by
    :func:`shorten_reason`, for the single-line formats."""
    fields = violation.arguments
    if short and "reason" in fields:
        fields = {**fields, "reason": shorten_reason(fields["reason"])}
    if violation.budget is not None:
        contributors = ", ".join(
            f"{node} ({count})" for node, count in violation.budget.contributors
        ) or "the light module itself"
        return format_message(violation.code, call=False, **fields, contributors=contributors)
    return format_message(violation.code, call=violation.is_call, **fields)


def format_problem(problem: Problem) -> str:
    """``"<code> <message>"`` of a problem, on one line (see :func:`single_line`)."""
    return f"{problem.code.id} {single_line(problem.message)}"


def format_where(path: Path | None, line: int, relpath: PathFormatter) -> str:
    """``path:line`` of a statement (``?:line`` when the module has no file); a line break in a file
    name is shown escaped (``\\n``)."""
    return f"{escape_line_breaks(relpath(path)) if path is not None else '?'}:{line}"


def format_hop_kind(hop: Hop) -> str:
    """``kind[, flag, ...]``: the hop's kind and its flags, as every format shows them."""
    return ", ".join((hop.kind, *hop.shown_flags()))


def format_hop_line(hop: Hop, relpath: PathFormatter) -> str:
    """``path:line: importer -> imported (kind[, flags])``; ``?`` for a hop without a file."""
    where = format_where(hop.path, hop.line, relpath) if hop.path is not None else "?"
    return f"{where}: {hop.module} -> {hop.imported} ({format_hop_kind(hop)})"


COMPACT_CHAIN_HOPS: Final = 20
"""The most hops a one-line chain shows (flake8's and mypy's messages): a longer chain keeps its
first and last hops around ``... N more hops ...``, so that a 10,000-hop chain is not a message of
a megabyte on each of its files (``importpolicy check --format json`` lists every hop)."""


def format_chain_compact(chain: Sequence[Hop], relpath: PathFormatter) -> str:
    """One-line chain: ``a -> b (path:line) -> c (path:line)``; each ``(path:line)`` is the hop's
    statement in the importing module. At most :data:`COMPACT_CHAIN_HOPS` hops are shown."""
    if not chain:
        return ""

    def hops(part: Sequence[Hop]) -> list[str]:
        return [f"{hop.imported} ({format_where(hop.path, hop.line, relpath)})" for hop in part]

    if len(chain) <= COMPACT_CHAIN_HOPS:
        return " -> ".join([chain[0].module, *hops(chain)])
    head = COMPACT_CHAIN_HOPS // 2
    tail = COMPACT_CHAIN_HOPS - head
    left_out = len(chain) - head - tail
    return " -> ".join([
        chain[0].module, *hops(chain[:head]), f"... {left_out:,} more hops ...",
        *hops(chain[len(chain) - tail:]),
    ])


def format_violation_message(violation: Violation, relpath: PathFormatter) -> str:
    """``IPL001 light module ... (reason): <compact chain>``: the one-line form of flake8 and mypy
    (the header alone for a finding without a chain: IPL008's budget), the reason cut to
    :data:`SHORT_REASON` characters."""
    header = format_violation_header(violation, short=True)
    return f"{header}: {format_chain_compact(violation.chain, relpath)}" if violation.chain else header


def format_fix_offer(violation: Violation, relpath: PathFormatter, policy_option: str = "",
                     target_versions: Sequence[tuple[int, int]] = ()) -> str:
    """The IPL001 "use instead" line naming the fixes ``importpolicy fix`` offers for a re-export
    in a light package's ``__init__.py`` (``""`` for any other finding): ``use instead: a lazy
    re-export or direct imports (importpolicy fix path:line writes the first, --kind direct the
    second)``, or the one of them it offers (:func:`~flake8_importpolicy.model.fixes.offered_fix_kinds`
    reads the statement); ``fix`` verifies each before it offers it.

    Args:
        relpath: how the command names the file: as ``fix`` reads it where the command is pasted
            (``check`` passes the path relative to its working directory, shell-quoted).
        policy_option: ``--policy PATH`` when ``check`` was given one (``fix`` finds the same
            policy then), else empty.
        target_versions: the check's (``--target-version``, else the policy's): a lazy re-export
            is not named when one of them has no module ``__getattr__``.
    """
    from flake8_importpolicy.model.fixes import FixKind, offered_fix_kinds  # no engine

    offered = offered_fix_kinds(violation, target_versions=target_versions)
    if not offered:
        return ""
    where = format_where(violation.path, violation.line, relpath)
    fix = " ".join(part for part in ("importpolicy fix", policy_option) if part)
    if len(offered) == 2:
        return (f"use instead: a lazy re-export or direct imports ({fix} {where} writes "
                "the first, --kind direct the second)")
    if offered[0] is FixKind.LAZY_REEXPORT:
        return f"use instead: a lazy re-export ({fix} {where} writes it)"
    return f"use instead: direct imports ({fix} --kind direct {where} writes them)"


def format_covers(violation: Violation) -> str:
    """What a violation's statement already ran for later statements (``""`` when none):
    ``same cause: lines 11, 12 reach only what this statement already ran``."""
    if not violation.covers:
        return ""
    lines = ", ".join(str(line) for line in violation.covers)
    which = f"line {lines} reaches" if len(violation.covers) == 1 else f"lines {lines} reach"
    return f"same cause: {which} only what this statement already ran"


def format_unresolved_header(unresolved: Unresolved) -> str:
    """``IPL006 light module <light> runs import-time code that cannot be resolved: <construct>
    <detail>``, on one line."""
    arguments = unresolved.arguments
    return unresolved.code.format(
        light=arguments["light"], construct=arguments["construct"],
        detail=single_line(arguments["detail"]),
    )


def format_unresolved_message(unresolved: Unresolved, relpath: PathFormatter) -> str:
    """The one-line form of flake8 and mypy, reported at the light module's statement:
    the header, the site, and the compact chain when the site is not in the light module."""
    site = unresolved.site
    where = format_where(site.path, site.line, relpath) if site.path is not None else "?"
    message = f"{format_unresolved_header(unresolved)} at {where}"
    if unresolved.chain:
        message += f": {format_chain_compact(unresolved.chain, relpath)}"
    return message


class UnresolvedGroup:
    """The IPL006 sites in one installed distribution (or the standard library) shown as one entry
    (:func:`group_unresolved`): of one light module (flake8, mypy), or of every light module that
    reaches the package (``check`` text).

    Attributes:
        sites: in report order, at least one, all of one
            :attr:`~flake8_importpolicy.model.findings.Unresolved.installed` (and of one light
            module unless grouped across light modules).
        lead: the site whose light-module statement comes first: the entry is reported there.
    """

    __slots__ = ("sites", "lead")

    def __init__(self, sites: Sequence[Unresolved]) -> None:
        self.sites = tuple(sites)
        self.lead = min(self.sites, key=lambda u: (str(u.first_hop[0]), *u.first_hop[1:], u.light))

    @property
    def light(self) -> str:
        """The lead site's light module."""
        return self.lead.light

    @property
    def lights(self) -> tuple[str, ...]:
        """Every light module that reaches the sites, in report order."""
        return tuple(dict.fromkeys(site.light for site in self.sites))

    @property
    def distinct_sites(self) -> tuple[Unresolved, ...]:
        """One of each site (the first in report order): several light modules reach the same one."""
        seen: dict[tuple[object, ...], Unresolved] = {}
        for site in self.sites:
            code = site.site
            seen.setdefault((str(code.module), code.path, code.line, code.col,
                             str(code.construct), code.detail), site)
        return tuple(seen.values())

    @property
    def light_path(self) -> Path | None:
        """The lead site's light module's file."""
        return self.lead.light_path

    @property
    def code(self) -> Code:
        """:data:`~flake8_importpolicy.codes.IPL006`."""
        return self.lead.code

    @property
    def first_hop(self) -> tuple[Path | None, int, int]:
        """Where the entry is reported: the lead site's first hop."""
        return self.lead.first_hop


def group_unresolved(
    unresolved: Sequence[Unresolved], *, across_light_modules: bool = False
) -> list[Unresolved | UnresolvedGroup]:
    """The entries the text report, flake8 and mypy show for ``unresolved``: first each
    first-party site (or one without a file) on its own, in report order; then the sites in one
    installed distribution, or in the standard library, as one :class:`UnresolvedGroup`, however
    few (a light module reaching ``torch`` meets hundreds, none of them the user's to fix), most
    sites first, then by name. flake8 and mypy report per file, so they group the sites of each
    light module apart; ``check`` text groups them ``across_light_modules`` (twenty light modules
    of peft reaching one ``tqdm`` site were twenty entries). JSON, SARIF and GitHub annotations
    keep every site."""
    members: dict[tuple[str, str], list[Unresolved]] = {}
    entries: list[Unresolved | UnresolvedGroup] = []
    for site in unresolved:
        if site.installed:
            key = ("" if across_light_modules else site.light, site.installed)
            members.setdefault(key, []).append(site)
        else:
            entries.append(site)
    groups = [UnresolvedGroup(sites) for sites in members.values()]
    groups.sort(key=lambda group: (group.lead.light if not across_light_modules else "",
                                   -len(group.distinct_sites), group.lead.installed))
    return [*entries, *groups]


def format_unresolved_entry(entry: Unresolved | UnresolvedGroup, relpath: PathFormatter) -> str:
    """The one-line form of flake8 and mypy of an entry of :func:`group_unresolved`: a site's
    (:func:`format_unresolved_message`) or a group's (:func:`format_unresolved_group_header`)."""
    if isinstance(entry, UnresolvedGroup):
        return format_unresolved_group_header(entry)
    return format_unresolved_message(entry, relpath)


GROUP_LIGHTS_NAMED: Final = 3
"""The most light modules a group's header names; the others are counted (``and 17 more``)."""


def format_unresolved_group_header(group: UnresolvedGroup) -> str:
    """``IPL006 light module <light> runs import-time code that cannot be resolved in installed
    package torch: 212 sites (call-through-variable 150, call-depth 40, getattr-import 22);
    --format json lists them`` (``in the standard library``); constructs by count, most first, each
    site once. A group of several light modules names how many and the first
    :data:`GROUP_LIGHTS_NAMED`: ``20 light modules (peft, peft.auto, peft.config and 17 more) run
    ...``."""
    sites = group.distinct_sites
    counts: dict[str, int] = {}
    for site in sites:
        construct = str(site.site.construct)
        counts[construct] = counts.get(construct, 0) + 1
    constructs = ", ".join(f"{name} {count}" for name, count in
                           sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    installed = group.lead.installed
    where = ("the standard library" if installed == STANDARD_LIBRARY
             else f"installed package {installed}")
    lights = group.lights
    head = group.lead.code.template.partition(":")[0].format(light=lights[0])
    if len(lights) > 1:
        named = ", ".join(lights[:GROUP_LIGHTS_NAMED])
        if len(lights) > GROUP_LIGHTS_NAMED:
            named += f" and {len(lights) - GROUP_LIGHTS_NAMED} more"
        runs = head.partition(f"light module {lights[0]} runs ")[2]
        head = f"{len(lights)} light modules ({named}) run {runs}"
    return (f"{group.lead.code.id} {head} in {where}: {plural(len(sites), 'site')} "
            f"({constructs}); --format json lists {'it' if len(sites) == 1 else 'them'}")


def format_why_notes(why: WhyResult, relpath: PathFormatter) -> list[str]:
    """What ``why`` found but cannot draw as a chain: import-time code that cannot be resolved
    (IPL006's sites), lazy attachments and unanalysable modules, one line each, in that order."""
    notes = [
        f"not resolved: {format_where(u.path, u.line, relpath) if u.path else '?'}: "
        f"{u.construct} {single_line(u.detail)}"
        for u in why.unresolved
    ]
    notes.extend(
        f"lazily attached: {format_where(a.path, a.line, relpath)}: {single_line(a.detail)}(...) "
        "(its targets are not run at import time)"
        for a in why.lazy
    )
    notes.extend(
        f"cannot analyse {module}: line {problem.line}: {single_line(problem.message)}"
        for module, problem in why.problems
    )
    return notes


def plural(count: int, noun: str) -> str:
    """``"1 violation"``, ``"2 violations"``."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def format_summary(report: Report, unresolved_entries: int | None = None) -> str:
    """The last line of a report: ``OK: ...`` when clean, ``Nothing was checked: ...`` when the policy
    names no light module, else what was found (``Found 3 violations in 1 of 4 light modules, 1
    problem.``: the light modules that have violations, of those checked). ``unresolved_entries``:
    how many entries the report above shows the IPL006 sites as (:func:`group_unresolved`), said
    when fewer than the sites (``200 import-time sites not resolved (IPL006) in 9 entries``)."""
    lights = len(report.light_modules)
    checked = plural(lights, "light module")
    suppressed = f"{report.suppressed} suppressed by noqa" if report.suppressed else ""
    if report.baselined:
        accepted = f"{report.baselined} in the baseline"
        suppressed = f"{suppressed}, {accepted}" if suppressed else accepted
    blind = (
        f"{plural(len(report.unresolved), 'import-time site')} not resolved ({codes.IPL006.id})"
        if report.unresolved else ""
    )
    if blind and unresolved_entries is not None and unresolved_entries < len(report.unresolved):
        blind += f" in {unresolved_entries} {'entry' if unresolved_entries == 1 else 'entries'}"
    if not report.violations and not report.problems:
        if not lights:
            return "Nothing was checked: no [light] pattern of the policy names a module."
        extra = f" ({suppressed})" if suppressed else ""
        if blind:  # never "OK" over a blind spot
            return f"No violations in {checked}{extra}; {blind}."
        return f"OK: {checked} checked, no forbidden import-time imports{extra}."
    parts = []
    if report.violations:
        affected = len({violation.light for violation in report.violations})
        within = checked if affected == lights == 1 else f"{affected} of {checked}"
        parts.append(f"{plural(len(report.violations), 'violation')} in {within}")
    if report.problems:
        parts.append(plural(len(report.problems), "problem"))
    if suppressed:
        parts.append(suppressed)
    if blind:
        parts.append(blind)
    found = f"Found {', '.join(parts)}"
    if report.violations:
        return f"{found}."
    return f"{found}; {checked} checked." if lights else f"{found}; no light module was checked."


def hop_to_json(hop: Hop, relpath: PathFormatter) -> dict[str, object]:
    """A hop as ``{"module", "path", "line", "col", "kind", "imported", "flags"}``."""
    return {
        "module": hop.module,
        "path": relpath(hop.path) if hop.path is not None else None,
        "line": hop.line,
        "col": hop.col,
        "kind": str(hop.kind),
        "imported": str(hop.imported),
        "flags": list(hop.shown_flags()),
    }


_LINE_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}
"""Each character ``str.splitlines`` breaks at, to its Python escape (``repr`` writes the same as the
``unicode_escape`` codec for these, without loading the codec)."""


def escape_line_breaks(text: str) -> str:
    """``text`` with every character that ``str.splitlines`` breaks at written as its Python escape
    (``\\n``, ``\\u2028``): for names that must stay exact, such as file paths."""
    return text.translate(_LINE_BREAKS)


def single_line(text: str) -> str:
    """``text`` with every run of whitespace (line breaks included) as one space: for formats whose
    records are lines (flake8, mypy, GitHub annotations' titles)."""
    return " ".join(text.split())


def format_policy_problem(problem: PolicyProblem) -> str:
    """One problem of an unusable policy, on one line: ``<key path>: <message>`` (the message alone
    for a problem with the whole file)."""
    key = problem.shown_key
    return single_line(f"{key}: {problem.message}" if key else problem.message)


def find_error_line(error: Exception) -> int | None:
    """The 1-based line of the policy file a policy error is about: its first problem's line, else
    the line where that problem's key (or its nearest parent) is written
    (:func:`~flake8_importpolicy.config.positions.locate_key`); None when not known (no problem in
    the policy file itself, or the file cannot be read)."""
    path = getattr(error, "path", None)
    for problem in getattr(error, "problems", None) or ():
        if problem.file is not None:
            continue
        if problem.line is not None:
            return int(problem.line)
        if not problem.key or path is None or not str(path).endswith(".toml"):
            return None
        from flake8_importpolicy.config.positions import find_key_positions, locate_key
        from flake8_importpolicy.model.reading import read_regular_file

        try:
            text = read_regular_file(path)[1].decode("utf-8-sig", "replace")
        except OSError:
            return None
        found = locate_key(find_key_positions(text), problem.key)
        return found[0] if found else None
    return None


def format_error_line(error: Exception, location: str) -> str:
    """An error that stops a client, as the one line a linter prints:
    ``<location>[:line]: error: <message>`` (the line of :func:`find_error_line`); a policy error
    with several problems lists them all, separated by ``; ``
    (``not valid (N problems): key: message; ...``).

    Args:
        error: a :class:`~flake8_importpolicy.model.errors.ImportPolicyError` (or any exception).
        location: the file the error is about, as shown (a baseline's error names its own file, and
            what named it: :attr:`~flake8_importpolicy.model.errors.BaselineError.location`).
    """
    where, text = _error_parts(error, location)
    return f"{where}: error: {text}"


def format_error_diagnostic(error: Exception, location: str) -> str:
    """An error that stops the check, as the message of the IPL900 diagnostic an editor shows at line
    1 of each checked file (the flake8 checker, the language server):
    ``IPL900 <location>[:line]: <message>``, the words of :func:`format_error_line`."""
    where, text = _error_parts(error, location)
    return f"{codes.IPL900.id} {where}: {text}"


def _error_parts(error: Exception, location: str) -> tuple[str, str]:
    location = getattr(error, "location", None) or location  # a baseline's: its file, what named it
    problems = getattr(error, "problems", None)
    if not problems:
        return location, single_line(str(error))
    line = find_error_line(error)
    parts = [f"{p.shown_key}: {p.message}" if p.shown_key else p.message for p in problems]
    head = f"not valid ({len(parts)} problems): " if len(parts) > 1 else ""
    return (f"{location}:{line}" if line else location), single_line(head + "; ".join(parts))
