"""What ``importpolicy fix`` prints: the unified diff of the changes (``git apply`` takes it) and one
line per finding saying which fix was chosen, or why none (docs/bisect-and-fix.md). Functions return
text and print nothing."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path

from flake8_importpolicy.model.findings import Violation
from flake8_importpolicy.model.fixes import Fix, Importer
from flake8_importpolicy.output.render import PathFormatter, format_where

__all__ = ["format_fix_diff", "format_fix_summary"]


def format_fix_diff(changes: Mapping[Path, tuple[bytes, bytes]], relpath: PathFormatter) -> str:
    """A unified diff (``a/`` and ``b/`` prefixes, as ``git diff`` writes them) of ``{path: (old
    bytes, new bytes)}``, files sorted; a last line without a line break is marked as git marks it
    (``\\ No newline at end of file``); lines end at a line feed, as git's do (a file whose
    lines end in a lone CR is one line to git). The files' bytes are read as UTF-8 with
    ``surrogateescape``: written back with it (the command writes the diff's bytes so), a file in
    another encoding (PEP 263: ``# -*- coding: latin-1 -*-``) keeps its bytes, as ``git apply``
    needs."""
    out: list[str] = []
    for path in sorted(changes, key=lambda p: relpath(p)):
        old, new = changes[path]
        if old == new:
            continue
        shown = relpath(path)
        lines = difflib.unified_diff(
            _git_lines(old.decode("utf-8", "surrogateescape")),
            _git_lines(new.decode("utf-8", "surrogateescape")),
            f"a/{shown}", f"b/{shown}",
        )
        for line in lines:
            if line.endswith("\n"):
                out.append(line)
            else:
                out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _git_lines(text: str) -> list[str]:
    """``text``'s lines as git and patch count them: each ends at a line feed (a CRLF line keeps
    its CR; a file whose lines end in a lone CR is one line), the last one perhaps without."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def format_fix_summary(violation: Violation, fix: Fix | None, reason: str,
                       offered: Sequence[Fix], relpath: PathFormatter) -> str:
    """``path:line: light -> heavy: <what was done or why not>``, with the importers that cannot be
    rewritten and what each offered fix would do."""
    where = format_where(violation.path, violation.line, relpath)
    head = f"{where}: {violation.light} -> {violation.heavy}: "
    lines = []
    if fix is not None:
        state = "verified" if fix.verified else "not verified"
        lines.append(head + f"{fix.title} [{fix.kind}, {state}]")
        if fix.note:
            lines.append(f"    note: {fix.note}")
        if reason:
            lines.append(f"    {reason}")
    else:
        lines.append(head + f"not fixed: {reason}")
        for other in offered:
            lines.append(f"    offered: {other.title} [{other.kind}]")
    # once each: both fixes list the package's own uses
    blockers: list[Importer] = list(dict.fromkeys(b for f in ([fix] if fix else offered)
                                                  for b in f.blockers))
    for blocker in blockers:
        lines.append(f"    cannot keep {format_where(blocker.path, blocker.line, relpath)} working: "
                     f"{blocker.why}")
    return "\n".join(lines) + "\n"
