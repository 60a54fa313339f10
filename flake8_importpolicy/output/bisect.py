"""The text and JSON of ``importpolicy bisect`` (docs/bisect-and-fix.md). Functions return text and
print nothing; every path is relative to the repository's top directory."""

from __future__ import annotations

import json
from pathlib import Path

from flake8_importpolicy.model.history import BisectFinding, BisectResult, BisectStatus, Commit
from flake8_importpolicy.output.render import format_hop_line, hop_to_json, plural

__all__ = ["format_bisect_json", "format_bisect_text"]


def _relpath(path: Path) -> str:
    return path.as_posix()


def _commit(commit: Commit) -> str:
    return f"{commit.short} {commit.subject}".rstrip()


def format_bisect_text(result: BisectResult) -> str:
    """The text report: the range and the policy, then per finding its first commit, the hop the
    commit added and the chain, then the commits skipped and a summary line."""
    mode = "first-parent history" if result.first_parent else "all parents"
    origin = (f"at --bad {result.bad.short}" if result.policy_origin == "--bad"
              else "from --policy (the file on disk)")
    out = [
        f"range: {result.good.short}..{result.bad.short}, {plural(result.commits, 'commit')} "
        f"({mode})",
        f"policy: {result.policy} {origin}",
        "",
    ]
    for finding in result.findings:
        out.extend(_finding_lines(finding))
        out.append("")
    if result.skipped:
        out.append(f"skipped {plural(len(result.skipped), 'commit')} (as git bisect skip):")
        out.extend(f"  {_commit(s.commit)}: {s.reason}" for s in result.skipped)
        out.append("")
    if result.unreadable:
        out.append("cannot read (a finding through these does not show, so bisect cannot say it "
                   "is not there; importpolicy check reads the working tree):")
        out.extend(f"  {path}: {reason}" for path, reason in result.unreadable)
        out.append("")
    found = sum(f.status is BisectStatus.FOUND for f in result.findings)
    if not result.findings and result.unreadable:
        out.append(f"no finding seen at --bad {result.bad.short} that is not at --good "
                   f"{result.good.short}, but the tree holds "
                   f"{plural(len(result.unreadable), 'path')} bisect cannot read; checked "
                   f"{plural(result.checked, 'commit')}")
    elif not result.findings:
        out.append(f"no finding at --bad {result.bad.short} that is not at --good "
                   f"{result.good.short}; checked {plural(result.checked, 'commit')}")
    else:
        out.append(f"{found} of {plural(len(result.findings), 'finding')} traced to the commit "
                   f"that introduced it; checked {result.checked} of "
                   f"{plural(result.commits + 1, 'commit')} (--good included)")
    return "\n".join(out) + "\n"


def _finding_lines(finding: BisectFinding) -> list[str]:
    if finding.code == "IPL008":
        what = f"{finding.light} over its budget ({finding.heavy})"
    else:  # a light module named without a finding at --bad has no forbidden module to name
        what = f"{finding.light} -> {finding.heavy}" if finding.heavy else finding.light
    out = [f"{finding.code} {what}"]
    if finding.status is BisectStatus.FOUND and finding.commit is not None:
        out.append(f"  first commit: {_commit(finding.commit)}")
        if finding.added is not None:
            out.append(f"  it added: {format_hop_line(finding.added, _relpath)}")
        elif finding.chain:
            out.append("  it added no statement of the chain (it changed or removed one)")
    elif finding.status is BisectStatus.AMBIGUOUS:
        out.append("  skipped commits leave the first commit open; it is one of:")
        out.extend(f"    {_commit(commit)}" for commit in finding.candidates)
    elif finding.status is BisectStatus.AT_GOOD:
        out.append("  already shows at --good: the range does not hold the commit that introduced it")
    else:
        out.append("  no finding of this light module at --bad")
    if finding.chain:
        out.append("  chain:")
        out.extend(f"    {format_hop_line(hop, _relpath)}" for hop in finding.chain)
    return out


def format_bisect_json(result: BisectResult) -> str:
    """The JSON report::

        {"good": commit, "bad": commit, "policy": {"path", "from"}, "first_parent", "commits",
         "checked", "findings": [{"code", "light", "heavy", "status", "commit", "candidates",
         "added", "chain"}], "skipped": [{"commit", "reason"}], "unreadable": [{"path",
         "reason"}]}

    where a commit is ``{"hash", "subject"}`` and a hop is as in ``check --format json``.
    """
    def commit(value: Commit | None) -> dict[str, str] | None:
        return None if value is None else {"hash": value.hash, "subject": value.subject}

    data = {
        "good": commit(result.good),
        "bad": commit(result.bad),
        "policy": {"path": result.policy, "from": result.policy_origin},
        "first_parent": result.first_parent,
        "commits": result.commits,
        "checked": result.checked,
        "findings": [
            {
                "code": f.code,
                "light": f.light,
                "heavy": f.heavy,
                "status": str(f.status),
                "commit": commit(f.commit),
                "candidates": [commit(c) for c in f.candidates],
                "added": hop_to_json(f.added, _relpath) if f.added is not None else None,
                "chain": [hop_to_json(hop, _relpath) for hop in f.chain],
            }
            for f in result.findings
        ],
        "skipped": [{"commit": commit(s.commit), "reason": s.reason} for s in result.skipped],
        "unreadable": [{"path": path, "reason": reason} for path, reason in result.unreadable],
    }
    return json.dumps(data, indent=2) + "\n"
