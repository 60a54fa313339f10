"""What a check finds: violations, problems and the report (``why``'s result is in
:mod:`flake8_importpolicy.model.why`).

Findings carry their :class:`~flake8_importpolicy.codes.Code` and the arguments of its message; they are
rendered to text only at the edge (:mod:`flake8_importpolicy.output`), so every client words them alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from flake8_importpolicy import codes
from flake8_importpolicy.codes import Code
from flake8_importpolicy.model.graph import CallNode, Hop, UnresolvedCode

if TYPE_CHECKING:  # annotations only: a warm answer rebuilds reports without loading these
    from flake8_importpolicy.model.budget import Budget

__all__ = ["STANDARD_LIBRARY", "Problem", "Report", "Unresolved", "Violation"]

STANDARD_LIBRARY = "<stdlib>"
""":attr:`Unresolved.installed` of a site in the standard library (no module name has ``<``)."""


@dataclass(frozen=True)
class Violation:
    """A light module runs a forbidden module, or calls a heavy function, at import time (IPL001).

    Attributes:
        light: the light module.
        heavy: the nearest forbidden node the statement leads to (a module, or a
            :class:`~flake8_importpolicy.model.graph.CallNode` for a ``[heavy-calls]`` function).
        pattern: the ``[heavy]``/``forbid`` pattern that ``heavy`` matched.
        reason: why that module is heavy (from the policy).
        path: the light module's file; line, col: the first-hop statement (1-based line, 0-based col).
        kind: the first hop's kind (``parent-package`` for the pseudo-statement).
        also: other forbidden modules reachable from the same statement, sorted.
        chain: the hops from the light module to ``heavy``.
        code: :data:`~flake8_importpolicy.codes.IPL001`.
        covers: lines of later statements of the light module whose every forbidden node this
            statement's import already ran (one cause, one report), sorted; they are not reported
            on their own, and a ``# noqa`` on this statement does not bring them back.
        budget: for :data:`~flake8_importpolicy.codes.IPL008` (the import-time closure is over the
            light rule's ``max-modules``): the count, the budget and the biggest first hops; then
            ``heavy``, ``pattern`` and ``kind`` are empty, ``chain`` and ``also`` too, and the
            violation is at line 1, column 0 of the light module's file.
    """

    light: str
    heavy: str
    pattern: str
    reason: str
    path: Path
    line: int
    col: int
    kind: str
    also: tuple[str, ...]
    chain: tuple[Hop, ...]
    code: Code = codes.IPL001
    covers: tuple[int, ...] = ()
    budget: Budget | None = None

    @property
    def arguments(self) -> dict[str, str]:
        """The fields of the code's message (``light``, ``heavy``, ``reason``; for a budget
        violation ``light``, ``count`` and ``limit``: the contributors are worded by the caller)."""
        if self.budget is not None:
            return {"light": self.light, "count": str(self.budget.count),
                    "limit": str(self.budget.limit)}
        return {"light": self.light, "heavy": self.heavy, "reason": self.reason}

    @property
    def is_call(self) -> bool:
        """True when ``heavy`` is a call of a ``[heavy-calls]`` function."""
        return isinstance(self.heavy, CallNode)

    @property
    def identity(self) -> tuple[str, str, str, str]:
        """What makes this finding the same one across edits: ``(code, light module, forbidden module
        or call, the node the first hop runs)`` — never line numbers, so moving code keeps it. SARIF
        fingerprints and baselines use it. A budget violation (IPL008) is ``(code, light module,
        "max-modules=N", "")``: raising or lowering the budget makes it another finding."""
        if self.budget is not None:
            return (self.code.id, self.light, f"max-modules={self.budget.limit}", "")
        first = str(self.chain[0].imported) if self.chain else ""
        return (self.code.id, self.light, str(self.heavy), first)


@dataclass(frozen=True)
class Unresolved:
    """Import-time code on a light module's import-time path that the engine cannot resolve, so the
    check cannot tell what it imports (IPL006).

    Attributes:
        light: the light module.
        site: what and where (:class:`~flake8_importpolicy.model.graph.UnresolvedCode`).
        chain: the hops from the light module to the node whose code it is (empty when it is the
            light module's own code); the shortest, ties broken as for violations.
        light_path: the light module's file.
        code: :data:`~flake8_importpolicy.codes.IPL006`.
        installed: where the site's code is installed: the name of the installed distribution
            (``torch``) that provides the top-level package of the module whose code it is (for
            ``extension-module``, ``unfollowed-package`` and ``not-installed``, the module whose
            statement imports it; the top-level package's name when no distribution's metadata
            names it), :data:`STANDARD_LIBRARY` for the standard library, empty for first-party
            code (found in a source root) or a site without a file. The text report shows one
            line per distribution, flake8 and mypy one per light module and distribution
            (:func:`~flake8_importpolicy.output.render.group_unresolved`).
    """

    light: str
    site: UnresolvedCode
    chain: tuple[Hop, ...]
    light_path: Path | None
    code: Code = codes.IPL006
    installed: str = ""

    @property
    def first_hop(self) -> tuple[Path | None, int, int]:
        """``(path, line, col)`` of the light module's statement that leads to the site (the site
        itself when it is in the light module): where flake8 and mypy report it."""
        if self.chain:
            return self.light_path, self.chain[0].line, self.chain[0].col
        return self.site.path, self.site.line, self.site.col

    @property
    def arguments(self) -> dict[str, str]:
        """The fields of the code's message."""
        return {
            "light": self.light, "construct": str(self.site.construct), "detail": self.site.detail,
        }

    @property
    def identity(self) -> tuple[str, ...]:
        """What makes this finding the same one across edits (never a line): code, light module, the
        node whose code it is, construct and source text."""
        return (self.code.id, self.light, str(self.site.module), str(self.site.construct),
                self.site.detail)


@dataclass(frozen=True)
class Problem:
    """Something that is not a violation but makes the check incomplete or the policy stale.

    Attributes:
        code: ``IPL003`` (light pattern matches nothing), ``IPL004`` (unused ignore), ``IPL005``
            (module cannot be analysed).
        arguments: the fields of the code's message template, as ``(name, value)`` pairs.
        path: the file it is about (``None`` if none); line: 1-based line or ``None``.
    """

    code: Code
    arguments: tuple[tuple[str, str], ...]
    path: Path | None
    line: int | None

    @classmethod
    def of(cls, code: Code, path: Path | None, line: int | None, **arguments: str) -> Problem:
        """A problem of ``code`` whose message template is filled from ``arguments``."""
        return cls(code, tuple(sorted(arguments.items())), path, line)

    @property
    def message(self) -> str:
        """The message after the code (the template filled from :attr:`arguments`; a ``{hint}``
        not given is empty)."""
        return self.code.template.format(**{"hint": "", **dict(self.arguments)})

    @property
    def identity(self) -> tuple[str, ...]:
        """What makes this problem the same one across edits: its code and message arguments (never
        its line)."""
        return (self.code.id, *(f"{name}={value}" for name, value in self.arguments))


@dataclass(frozen=True)
class Report:
    """The result of checking a policy.

    Attributes:
        violations: sorted by (path, line, col, light, heavy).
        problems: sorted by (path, line, code, message).
        suppressed: how many violations a ``# noqa`` comment suppressed.
        light_modules: every light module checked, sorted.
        notes: remarks that are not findings (they do not change the exit status): an entry of the
            policy whose top-level package is not installed here (IPL007's note).
        unresolved: import-time code on light modules' paths that cannot be resolved (IPL006),
            sorted by (light module, path, line, col).
        unresolved_fails: ``unresolved = "error"`` (or ``--unresolved=error``): unresolved sites
            make the check fail; by default they are information.
        baselined: how many violations the baseline accepted (they are not in ``violations``).
    """

    violations: tuple[Violation, ...]
    problems: tuple[Problem, ...]
    suppressed: int = 0
    light_modules: tuple[str, ...] = ()
    notes: tuple[Problem, ...] = ()
    unresolved: tuple[Unresolved, ...] = ()
    unresolved_fails: bool = False
    baselined: int = 0

    @property
    def exit_code(self) -> int:
        """0 when clean, 1 when there is any violation or problem, or an unresolved site when
        :attr:`unresolved_fails`."""
        failing = self.unresolved_fails and bool(self.unresolved)
        return 1 if self.violations or self.problems or failing else 0
