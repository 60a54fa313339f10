"""The runtime proof's reports: text and JSON of ``importpolicy verify``, and the failure text of the
pytest plugin and of :func:`~flake8_importpolicy.runtime.verify.assert_import_light`."""

from __future__ import annotations

import json
from pathlib import Path

from flake8_importpolicy.output.render import PathFormatter, hop_to_json, plural, single_line
from flake8_importpolicy.output.text import format_chain_lines
from flake8_importpolicy.runtime.judge import (
    ForbiddenExecution,
    LightResult,
    VerifyReport,
)

__all__ = [
    "format_light_result_text",
    "format_verify_json",
    "format_verify_text",
    "light_result_to_json",
]


def _shown(relpath: PathFormatter) -> PathFormatter:
    """``relpath`` for real files; pseudo-files such as ``<frozen codecs>`` as they are."""

    def show(path: Path) -> str:
        return relpath(path) if path.is_absolute() else str(path)

    return show


def format_light_result_text(result: LightResult, relpath: PathFormatter) -> str:
    """One light module's block: a status line, then one entry per finding with its chain.

    ``relpath`` turns absolute paths into the strings shown (e.g. :meth:`Policy.relpath`).
    """
    show = _shown(relpath)
    run = result.run
    status = "FAIL" if result.failed else "ok  "
    executed = plural(len(run.executed), "module")
    out = [f"{status} {result.light} ({run.seconds:.2f}s, {executed} executed)"]
    for finding in result.forbidden:
        out.append(f"  forbidden module executed: {finding.module} ({single_line(finding.reason)})")
        out.extend(_finding_chain(finding, show))
    for finding in result.static_missed:
        out.append(
            f"  static missed: {finding.module} executed but the static check did not predict it "
            f"({single_line(finding.reason)})"
        )
        out.extend(_finding_chain(finding, show))
    if run.outcome == "raised":
        where = ""
        if run.error_at is not None:
            where = f" at {show(run.error_at)}:{run.error_line}"
        out.append(f"  import raised {single_line(run.error or '')}{where}")
    elif run.outcome in ("timeout", "crashed"):
        out.append(f"  {single_line(run.error or '')}")
        stack = [name for name in run.running]
        if stack:
            out.append(f"    running: {' -> '.join(stack)}")
        if run.stderr:
            out.extend(f"    stderr: {line}" for line in run.stderr.splitlines())
    for check in result.failed_checks:
        out.append(f"  after-import failed: {json.dumps(check.expression)} {single_line(check.error or '')}")
    for name in result.not_observed:
        out.append(f"  not observed: {name} (predicted statically, did not execute here: "
                   f"{_why_not_observed(result)})")
    for finding in result.baselined:
        out.append(f"  in the baseline: {finding.module} executed, as the baseline accepts "
                   f"({single_line(finding.reason)})")
        out.extend(_finding_chain(finding, show))
    for name in result.accepted:
        out.append(f"  accepted: {name} executed through an [[ignore]]-d import")
    if result.max_modules is not None:
        verdict = "over" if result.over_budget else "within"
        if result.over_budget and result.budget_baselined:
            verdict = "in the baseline, over"
        out.append(f"  modules: {result.module_count} executed, counted as max-modules counts "
                   f"({verdict} max-modules = {result.max_modules})")
    out.extend(_time_lines(result))
    return "\n".join(out) + "\n"


def _time_lines(result: LightResult) -> list[str]:
    """The import time (median of the runs), against ``max-import-ms``, and the biggest
    contributors (self time)."""
    timed = result.import_time
    if timed is None:
        return []
    if timed.error is not None:
        return [f"  import time: not measured ({single_line(timed.error)})"]
    limit = ""
    if result.max_import_ms is not None:
        verdict = "over" if result.over_time else "within"
        noted = "" if result.fail_on_time or not result.over_time else "; reported, not failed"
        limit = f"; {verdict} max-import-ms = {result.max_import_ms:g}{noted}"
    lines = [f"  import time: {timed.median_ms:.1f} ms (median of {len(timed.runs_ms)} runs, "
             f"-X importtime){limit}"]
    if timed.contributors:
        lines.append("    biggest (own time): " + ", ".join(
            f"{name} {ms:.1f} ms" for name, ms in timed.contributors))
    return lines


def _why_not_observed(result: LightResult) -> str:
    """Why a predicted forbidden module did not execute: the import stopped early, else the chain is
    conditional, guarded or platform-specific."""
    outcome = result.run.outcome
    if outcome == "raised":
        return "the import raised before it got there"
    if outcome == "timeout":
        return "the import timed out before it got there"
    if outcome == "crashed":
        return "the interpreter died before it got there"
    return "conditional, guarded or platform-specific"


def _finding_chain(finding: ForbiddenExecution, show: PathFormatter) -> list[str]:
    if finding.hint:
        return [f"    why missed: {finding.hint}", *format_chain_lines(finding.chain, show, "    ")]
    if "unrecorded" in finding.flags:
        return ["    (loaded without the recorder seeing it: by a finder placed ahead of it or put "
                "into sys.modules by hand; no chain)"]
    return format_chain_lines(finding.chain, show, "    ")


def format_verify_text(report: VerifyReport, relpath: PathFormatter) -> str:
    """The text report: one block per light module (failures first), problems, a summary line."""
    out: list[str] = []
    ordered = sorted(report.results, key=lambda r: (not r.failed, r.light))
    for result in ordered:
        out.append(format_light_result_text(result, relpath).rstrip("\n"))
    for problem in report.problems:
        out.append(f"problem: {problem}")
    version = ".".join(str(v) for v in report.version)
    lights = plural(len(report.results), "light module")
    failed = sum(1 for r in report.results if r.failed)
    where = f"with Python {version} ({report.python}) in {report.seconds:.1f}s"
    if report.exit_code == 0:
        accepted = sum(len(r.baselined) + (r.over_budget and r.budget_baselined)
                       for r in report.results)
        out.append(f"\nOK: {lights} verified {where}; no forbidden module executed"
                   + (f" but what the baseline accepts ({plural(accepted, 'finding')})."
                      if accepted else "."))
    else:
        parts = []
        counts = (
            (sum(len(r.forbidden) for r in report.results), "forbidden module executed",
             "forbidden modules executed"),
            (sum(len(r.static_missed) for r in report.results), "static miss", "static misses"),
            (sum(len(r.failed_checks) for r in report.results), "after-import failure",
             "after-import failures"),
            (sum(1 for r in report.results if r.run.outcome == "raised"), "import raised",
             "imports raised"),
            (sum(1 for r in report.results if r.run.outcome == "timeout"), "timeout", "timeouts"),
            (sum(1 for r in report.results if r.run.outcome == "crashed"), "crash", "crashes"),
            (sum(1 for r in report.results if r.budget_failed), "module budget exceeded",
             "module budgets exceeded"),
            (sum(1 for r in report.results if r.fail_on_time and r.over_time),
             "import time over max-import-ms", "import times over max-import-ms"),
            (len(report.problems), "problem", "problems"),
        )
        for count, one, many in counts:
            if count:
                parts.append(f"{count} {one if count == 1 else many}")
        out.append(
            f"\nFAILED: {failed} of {lights} {where}: {', '.join(parts)}."
        )
    return "\n".join(out) + "\n"


def _finding_json(finding: ForbiddenExecution, show: PathFormatter) -> dict[str, object]:
    return {
        "module": finding.module,
        "pattern": finding.pattern,
        "reason": finding.reason,
        "predicted": finding.predicted,
        "flags": list(finding.flags),
        "hint": finding.hint,
        "chain": [hop_to_json(hop, show) for hop in finding.chain],
    }


def light_result_to_json(result: LightResult, relpath: PathFormatter) -> dict[str, object]:
    """One light module's result as JSON-able data (see ``docs/verify.md``)."""
    show = _shown(relpath)
    run = result.run
    return {
        "light": result.light,
        "status": "failed" if result.failed else "ok",
        "outcome": run.outcome,
        "seconds": round(run.seconds, 3),
        "forbidden": [_finding_json(f, show) for f in result.forbidden],
        "static_missed": [_finding_json(f, show) for f in result.static_missed],
        "not_observed": list(result.not_observed),
        "accepted": list(result.accepted),
        "baselined": [_finding_json(f, show) for f in result.baselined],
        "budget_baselined": result.budget_baselined,
        "after_import": [
            {"expression": c.expression, "passed": c.passed, "error": c.error}
            for c in run.after_import
        ],
        "error": run.error,
        "error_path": show(run.error_at) if run.error_at is not None else None,
        "error_line": run.error_line or None,
        "running": list(run.running),
        "returncode": run.returncode,
        "stderr": run.stderr,
        "executed": [record.name for record in run.executed],
        "modules": result.module_count,
        "max_modules": result.max_modules,
        "import_time": None if result.import_time is None else {
            "median_ms": result.import_time.median_ms,
            "runs_ms": list(result.import_time.runs_ms),
            "contributors": [{"module": m, "self_ms": ms} for m, ms in result.import_time.contributors],
            "error": result.import_time.error,
        },
        "max_import_ms": result.max_import_ms,
    }


def format_verify_json(report: VerifyReport, relpath: PathFormatter) -> str:
    """The JSON report documented in ``docs/verify.md``."""
    data = {
        "python": report.python,
        "version": list(report.version),
        "seconds": round(report.seconds, 3),
        "results": [light_result_to_json(r, relpath) for r in report.results],
        "problems": list(report.problems),
    }
    return json.dumps(data, indent=2) + "\n"
