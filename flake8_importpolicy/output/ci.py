"""CI outputs of ``importpolicy check``: GitHub Actions annotations and SARIF 2.1.0.

- :func:`format_report_github`: ``--format github``, workflow commands
  (``::error file=...,line=...,col=...,title=IPL001::message``) that show each finding on the pull
  request's diff;
- :func:`format_report_sarif`: ``--format sarif``, a SARIF 2.1.0 log for code-scanning tools, its
  rules taken from the code table (:mod:`flake8_importpolicy.codes`).

Paths are relative to the CI workspace (:func:`workspace_relpath`). Functions return text, print
nothing, and order everything deterministically.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from flake8_importpolicy import __version__, codes, docs_url
from flake8_importpolicy.model.findings import Problem, Report, Unresolved, Violation
from flake8_importpolicy.model.graph import Hop
from flake8_importpolicy.model.paths import relpath_under
from flake8_importpolicy.output.render import (
    PathFormatter,
    format_covers,
    format_hop_kind,
    format_hop_line,
    format_policy_problem,
    format_problem,
    format_summary,
    format_unresolved_message,
    format_violation_header,
)

if TYPE_CHECKING:  # a broken policy only: a warm check never loads the policy errors
    from flake8_importpolicy.model.errors import PolicyProblem
    from flake8_importpolicy.model.fixes import Fix

__all__ = [
    "SARIF_SCHEMA",
    "escape_github_data",
    "escape_github_property",
    "find_workspace",
    "format_policy_error_github",
    "format_policy_error_sarif",
    "format_report_github",
    "format_report_sarif",
    "workspace_relpath",
]

SARIF_SCHEMA: Final = "https://json.schemastore.org/sarif-2.1.0.json"
CODES_URL: Final = docs_url("codes.md")
"""SARIF's ``informationUri``: the codes' documentation in the repository (the package is not on
the package index, so no page there is named)."""


# --------------------------------------------------------------------------------------------
# Paths


def find_workspace(environ: Mapping[str, str] | None = None) -> Path:
    """The directory CI annotations are relative to: ``$GITHUB_WORKSPACE`` when set (GitHub Actions),
    else the working directory."""
    value = (os.environ if environ is None else environ).get("GITHUB_WORKSPACE")
    return Path(value) if value else Path.cwd()


def workspace_relpath(root: Path) -> PathFormatter:
    """A path formatter for CI annotations: paths relative to ``root`` (``/`` separators) when inside
    it, else absolute.

    GitHub resolves an annotation's ``file`` against the repository checkout (``$GITHUB_WORKSPACE``),
    not against the policy file's directory, so the CLI passes that directory (or the working
    directory outside GitHub Actions).
    """
    roots = (root.absolute(), root.resolve())
    return lambda path: relpath_under(roots, path)


# --------------------------------------------------------------------------------------------
# GitHub Actions workflow commands


def escape_github_data(text: str) -> str:
    """Escape a workflow command's message as GitHub's toolkit does (``%``, ``\\r``, ``\\n``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_github_property(text: str) -> str:
    """Escape a workflow command's property value: as the message, plus ``:`` and ``,``."""
    return escape_github_data(text).replace(":", "%3A").replace(",", "%2C")


def _github_command(
    properties: Iterable[tuple[str, object | None]], message: str, command: str = "error"
) -> str:
    """``::command key=value,...::message``; properties whose value is None are left out."""
    rendered = ",".join(
        f"{key}={escape_github_property(str(value))}" for key, value in properties if value is not None
    )
    return f"::{command} {rendered}::{escape_github_data(message)}"


def format_report_github(report: Report, relpath: PathFormatter) -> str:
    """The report as GitHub Actions ``::error`` workflow commands, one per violation and problem.

    Each violation is annotated at its first-hop statement (``col`` 1-based, as GitHub expects), titled
    with its code; the message is the text report's header followed by the chain, one hop per line.
    Problems follow (``file``/``line`` left out when unknown). The last line is the text report's
    summary, which the log shows as plain text.

    Args:
        report: the report of ``importpolicy check``.
        relpath: formats each path; see :func:`workspace_relpath`.

    Returns:
        Newline-terminated lines in report order (violations, then problems).
    """
    lines = [_github_violation(v, relpath) for v in report.violations]
    level = "error" if report.unresolved_fails else "notice"
    lines.extend(_github_unresolved(u, relpath, level) for u in report.unresolved)
    lines.extend(_github_problem(p, relpath) for p in report.problems)
    lines.extend(_github_problem(p, relpath, "notice") for p in report.notes)
    lines.append(format_summary(report))
    return "\n".join(lines) + "\n"


def _github_violation(violation: Violation, relpath: PathFormatter) -> str:
    message = [format_violation_header(violation, short=True)]
    message.extend(format_hop_line(hop, relpath) for hop in violation.chain)
    if violation.also:
        message.append(f"also reaches: {', '.join(violation.also)}")
    if violation.covers:
        message.append(format_covers(violation))
    return _github_command(
        [
            ("file", relpath(violation.path)),
            ("line", violation.line),
            ("col", violation.col + 1),
            ("title", violation.code.id),
        ],
        "\n".join(message),
    )


def _unresolved_where(unresolved: Unresolved, relpath: PathFormatter) -> tuple[str, int, int]:
    """Where a CI annotation of an unresolved site goes: the site when it is in the workspace, else
    (third-party code) the light module's statement that leads there. ``(path, line, 1-based col)``."""
    site = unresolved.site
    if site.path is not None and not os.path.isabs(relpath(site.path)):
        return relpath(site.path), site.line, site.col + 1
    path, line, col = unresolved.first_hop
    return (relpath(path) if path is not None else "", line, col + 1)


def _github_unresolved(unresolved: Unresolved, relpath: PathFormatter, command: str) -> str:
    where, line, col = _unresolved_where(unresolved, relpath)
    message = [format_unresolved_message(unresolved, relpath)]
    return _github_command(
        [("file", where or None), ("line", line), ("col", col), ("title", unresolved.code.id)],
        "\n".join(message),
        command,
    )


def _github_problem(problem: Problem, relpath: PathFormatter, command: str = "error") -> str:
    return _github_command(
        [
            ("file", relpath(problem.path) if problem.path is not None else None),
            ("line", problem.line),
            ("title", problem.code.id),
        ],
        format_problem(problem),
        command,
    )


def format_policy_error_github(problems: Sequence[PolicyProblem], path: str | None) -> str:
    """``check --format github`` when the policy cannot be used: one ``::error`` per problem, at the
    policy file's line and column where known, titled IPL900.

    Args:
        problems: the problems, with their 1-based line and column where known.
        path: the policy file, relative to the workspace (``None`` when there is none).
    """
    lines = [
        _github_command(
            [("file", path), ("line", problem.line), ("col", problem.column),
             ("title", codes.IPL900.id)],
            f"{codes.IPL900.id} {format_policy_problem(problem)}",
        )
        for problem in problems
    ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# SARIF 2.1.0


def format_report_sarif(report: Report, relpath: PathFormatter,
                        fixes: Mapping[Violation, Sequence[Fix]] | None = None) -> str:
    """The report as a minimal SARIF 2.1.0 log (one run, JSON, 2-space indent)::

        {"$schema", "version": "2.1.0", "runs": [{"tool": {"driver": {"name", "version",
         "informationUri", "rules": [{"id", "name", "shortDescription", "defaultConfiguration"}]}},
         "columnKind": "unicodeCodePoints", "results": [result, ...]}]}

    The rules are the finding codes of :data:`flake8_importpolicy.codes.CODES`, in id order. A
    violation's result has its first-hop statement as location and its chain as a code flow (one
    thread-flow location per hop, at the hop's statement; none for IPL008, whose budget has no
    chain). Artifact URIs are relative references
    (``src/pkg/mod.py``) when ``relpath`` gives relative paths, ``file://`` URIs otherwise.

    Args:
        report: the report of ``importpolicy check``.
        relpath: formats each path; see :func:`workspace_relpath`.
        fixes: the verified fixes of violations (``importpolicy fix``), as each result's SARIF
            ``fixes`` (an artifact change per file, a replacement per edit).
    """
    rules = [code for code in codes.CODES if code.finding]
    index = {code.id: number for number, code in enumerate(rules)}
    results: list[dict[str, object]] = []
    for violation in report.violations:
        result: dict[str, object] = {
            "ruleId": violation.code.id,
            "ruleIndex": index[violation.code.id],
            "level": "error",
            "message": {"text": format_violation_header(violation).partition(" ")[2]},
            "locations": [_sarif_location(relpath(violation.path), violation.line, violation.col + 1)],
            "codeFlows": [{"threadFlows": [{"locations": [
                _sarif_hop(hop, relpath) for hop in violation.chain
            ]}]}],
            "partialFingerprints": _fingerprints(violation.identity),
        }
        if not violation.chain:  # IPL008: a budget, no chain (a thread flow needs a location)
            del result["codeFlows"]
        if violation.also:
            result["properties"] = {"also": list(violation.also)}
        if fixes and fixes.get(violation):
            result["fixes"] = [_sarif_fix(fix, relpath) for fix in fixes[violation]]
        if violation.covers:
            covered = format_covers(violation)
            result["relatedLocations"] = [
                {"id": number, "message": {"text": covered},
                 **_sarif_location(relpath(violation.path), line, None)}
                for number, line in enumerate(violation.covers)
            ]
        results.append(result)
    for unresolved in report.unresolved:
        where, line, col = _unresolved_where(unresolved, relpath)
        result = {
            "ruleId": unresolved.code.id,
            "ruleIndex": index[unresolved.code.id],
            "level": "error" if report.unresolved_fails else "note",
            "message": {"text": format_unresolved_message(unresolved, relpath).partition(" ")[2]},
            "locations": [_sarif_location(where, line, col)] if where else [],
            "codeFlows": [{"threadFlows": [{"locations": [
                _sarif_hop(hop, relpath) for hop in unresolved.chain
            ]}]}] if unresolved.chain else [],
            "partialFingerprints": _fingerprints(unresolved.identity),
        }
        if not result["codeFlows"]:
            del result["codeFlows"]
        results.append(result)
    for problem, level in [*((p, "error") for p in report.problems), *((p, "note") for p in report.notes)]:
        result = {
            "ruleId": problem.code.id,
            "ruleIndex": index[problem.code.id],
            "level": level,
            "message": {"text": problem.message},
            "partialFingerprints": _fingerprints(problem.identity),
        }
        if problem.path is not None:
            result["locations"] = [_sarif_location(relpath(problem.path), problem.line, None)]
        results.append(result)
    return json.dumps(_sarif_log(results), indent=2) + "\n"


def _sarif_log(results: list[dict[str, object]]) -> dict[str, Any]:
    """A SARIF 2.1.0 log of one run of importpolicy, its rules the finding codes."""
    rules = [code for code in codes.CODES if code.finding]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "importpolicy",
                "version": __version__,
                "informationUri": CODES_URL,
                "rules": [_sarif_rule(code) for code in rules],
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def format_policy_error_sarif(problems: Sequence[PolicyProblem], path: str | None) -> str:
    """``check --format sarif`` when the policy cannot be used: still a valid SARIF 2.1.0 log, with no
    results, ``invocations[0].executionSuccessful`` false and one tool execution notification (IPL900)
    per problem, at the policy file's line and column where known.

    Args:
        problems: the problems, with their 1-based line and column where known.
        path: the policy file, relative to the workspace (``None`` when there is none).
    """
    notifications = []
    for problem in problems:
        notification: dict[str, object] = {
            "level": "error",
            "message": {"text": format_policy_problem(problem)},
            "descriptor": {"id": codes.IPL900.id},
        }
        if path is not None:
            notification["locations"] = [_sarif_location(path, problem.line, problem.column)]
        notifications.append(notification)
    log = _sarif_log([])
    run = log["runs"][0]
    run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": notifications}]
    return json.dumps(log, indent=2) + "\n"


_FINGERPRINT: Final = "importpolicyIdentity/v1"
_RELATIVE_LINK: Final = re.compile(r"\[([^\]]+)\]\((?![a-z]+:)[^)]*\)")


def _fingerprints(identity: Sequence[str]) -> dict[str, str]:
    """``partialFingerprints`` of a result: a hash of the finding's identity (code, light module,
    forbidden node, first hop's node for a violation), never of its lines."""
    digest = hashlib.sha256("\x1f".join(identity).encode("utf-8")).hexdigest()
    return {_FINGERPRINT: digest}


def _sarif_rule(code: codes.Code) -> dict[str, object]:
    """A rule of the code table: id, slug, summary, and from its docs/codes.md section the "What it
    does" paragraph as ``fullDescription`` and the whole section as ``help`` (Markdown; links to the
    other docs pages are kept as their text, as the docs are not published: no ``helpUri``)."""
    markdown = _RELATIVE_LINK.sub(r"\1", code.help)
    what = next((p for p in markdown.split("\n\n") if p.startswith("**What it does.**")), code.summary)
    plain = " ".join(what.removeprefix("**What it does.**").split())
    rule: dict[str, object] = {
        "id": code.id,
        "name": code.slug,
        "shortDescription": {"text": code.summary},
        "fullDescription": {"text": plain},
        "defaultConfiguration": {"level": "note" if code is codes.IPL006 else "error"},
    }
    if markdown:
        rule["help"] = {"text": markdown.replace("**", ""), "markdown": markdown}
    return rule


def _sarif_uri(shown: str) -> str:
    """A SARIF artifact URI for a formatted path: a relative reference, or a ``file://`` URI."""
    from urllib.parse import quote

    if os.path.isabs(shown):
        return Path(shown).as_uri()
    return quote(shown.replace(os.sep, "/"))


def _sarif_location(shown: str, line: int | None, column: int | None) -> dict[str, object]:
    physical: dict[str, object] = {"artifactLocation": {"uri": _sarif_uri(shown)}}
    if line is not None:
        region: dict[str, int] = {"startLine": line}
        if column is not None:
            region["startColumn"] = column
        physical["region"] = region
    return {"physicalLocation": physical}


def _sarif_fix(fix: Fix, relpath: PathFormatter) -> dict[str, object]:
    """A SARIF ``fix``: its title, and per file the replacements (columns 1-based code points)."""
    files: dict[Path, list[dict[str, object]]] = {}
    for edit in fix.edits:
        files.setdefault(edit.path, []).append({
            "deletedRegion": {"startLine": edit.start[0], "startColumn": edit.start[1] + 1,
                              "endLine": edit.end[0], "endColumn": edit.end[1] + 1},
            "insertedContent": {"text": edit.new_text},
        })
    return {
        "description": {"text": fix.title},
        "artifactChanges": [
            {"artifactLocation": {"uri": _sarif_uri(relpath(path))}, "replacements": replacements}
            for path, replacements in files.items()
        ],
    }


def _sarif_hop(hop: Hop, relpath: PathFormatter) -> dict[str, object]:
    location: dict[str, object] = {
        "message": {"text": f"{hop.module} -> {hop.imported} ({format_hop_kind(hop)})"}
    }
    if hop.path is not None:
        location.update(_sarif_location(relpath(hop.path), hop.line, hop.col + 1))
    return {"location": location}
