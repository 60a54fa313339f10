"""The baseline: findings accepted today, so that a check on an existing project reports only new
ones; an entry that no longer occurs is IPL009, so the file only shrinks.

Entries are finding identities (:attr:`~flake8_importpolicy.model.findings.Violation.identity`:
code, light module, forbidden module or call, the node the first hop runs), never lines, so moving
code keeps them. :func:`apply_baseline` is the one place a report is filtered by a baseline; the
file is read and written by :mod:`flake8_importpolicy.config.baseline`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from flake8_importpolicy import codes
from flake8_importpolicy.model.findings import Problem, Report, Violation

__all__ = ["BASELINE_CODES", "Baseline", "BaselineEntry", "apply_baseline", "entries_of"]

BASELINE_CODES: Final = (codes.IPL001.id, codes.IPL008.id)
"""The codes a baseline records (violations; problems are fixed in the policy itself)."""


@dataclass(frozen=True, order=True)
class BaselineEntry:
    """One accepted finding.

    Attributes:
        code: ``IPL001`` or ``IPL008``.
        light: the light module.
        forbidden: the forbidden module or call (``torch.cuda.init()``); for IPL008
            ``max-modules=N``.
        first_hop: the node the light module's first hop runs (empty for IPL008).
        line: the entry's 1-based line in the baseline file, when read from one (not compared).
    """

    code: str
    light: str
    forbidden: str
    first_hop: str
    line: int | None = dataclasses.field(default=None, compare=False)

    @property
    def identity(self) -> tuple[str, str, str, str]:
        """The finding identity this entry accepts."""
        return (self.code, self.light, self.forbidden, self.first_hop)

    @property
    def text(self) -> str:
        """``IPL001 app.ops -> app.config (first hop app.ops.fused)``; ``IPL008 app.cli
        max-modules=40``: how messages name the entry."""
        if not self.first_hop:
            return f"{self.code} {self.light} {self.forbidden}"
        return f"{self.code} {self.light} -> {self.forbidden} (first hop {self.first_hop})"


@dataclass(frozen=True)
class Baseline:
    """A baseline file's content.

    Attributes:
        path: the file (absolute).
        entries: its entries, in file order.
        digest: SHA-256 of the file's bytes (for caches of answers).
    """

    path: Path
    entries: tuple[BaselineEntry, ...]
    digest: str = ""


def entries_of(violations: Iterable[Violation]) -> tuple[BaselineEntry, ...]:
    """The baseline entries that record ``violations`` (those of :data:`BASELINE_CODES`), sorted,
    without repeats."""
    return tuple(sorted({
        BaselineEntry(*violation.identity) for violation in violations
        if violation.code.id in BASELINE_CODES
    }))


def apply_baseline(report: Report, baseline: Baseline) -> Report:
    """``report`` without the violations ``baseline`` records (counted in ``baselined``), plus an
    IPL009 problem at each entry that matches no violation of ``report`` (sorted with the others)."""
    accepted = {entry.identity for entry in baseline.entries}
    found = {violation.identity for violation in report.violations}
    kept = tuple(v for v in report.violations if v.identity not in accepted)
    stale = [
        Problem.of(codes.IPL009, baseline.path, entry.line, entry=entry.text)
        for entry in baseline.entries if entry.identity not in found
    ]
    problems = tuple(sorted(
        (*report.problems, *stale),
        key=lambda p: (str(p.path or ""), p.line or 0, p.code.id, p.message),
    ))
    return dataclasses.replace(
        report, violations=kept, problems=problems,
        baselined=report.baselined + len(report.violations) - len(kept),
    )
