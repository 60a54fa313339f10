"""What ``importpolicy bisect`` finds: the first commit of a range at which each finding shows.

Values only; :mod:`flake8_importpolicy.history` computes them from git objects and
:mod:`flake8_importpolicy.output.bisect` words them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from flake8_importpolicy.model.errors import ImportPolicyError
from flake8_importpolicy.model.graph import Hop

__all__ = [
    "BisectFinding",
    "BisectResult",
    "BisectStatus",
    "Commit",
    "HistoryError",
    "SkippedCommit",
]


class HistoryError(ImportPolicyError):
    """``importpolicy bisect`` cannot run: not a git repository, a revision that does not exist, no
    policy at ``--bad``, a source root outside the repository (exit status 2)."""


@dataclass(frozen=True)
class Commit:
    """A commit: its full hash (``hash[:12]`` is shown) and the first line of its message."""

    hash: str
    subject: str

    @property
    def short(self) -> str:
        """The abbreviated hash shown in text output (12 hex digits)."""
        return self.hash[:12]


class BisectStatus(StrEnum):
    """How the search for one finding ended (JSON and text show the value).

    - ``found``: :attr:`BisectFinding.commit` is the first commit that shows the finding (its
      parent in the range, or ``--good``, does not);
    - ``ambiguous``: commits that had to be skipped leave several candidates
      (:attr:`BisectFinding.candidates`), as ``git bisect skip`` does;
    - ``at-good``: the finding shows at ``--good`` already (the range does not hold its start);
    - ``not-at-bad``: a finding asked for (a light module named) does not show at ``--bad``.
    """

    FOUND = "found"
    AMBIGUOUS = "ambiguous"
    AT_GOOD = "at-good"
    NOT_AT_BAD = "not-at-bad"


@dataclass(frozen=True)
class BisectFinding:
    """The search for one finding: a light module reaching one forbidden module (IPL001), or going
    over its ``max-modules`` budget (IPL008).

    Attributes:
        code: ``"IPL001"`` or ``"IPL008"``.
        light: the light module.
        heavy: for IPL001 the forbidden pattern reached (the ``[heavy]`` or ``[heavy-calls]`` key,
            or the ``forbid`` entry: a submodule of ``vllm.config`` counts as ``vllm.config``);
            ``"max-modules=N"`` for IPL008.
        status: how the search ended.
        commit: the first commit that shows it (``found``), else None.
        candidates: with ``ambiguous``, the commits it could be (oldest first).
        chain: the chain at :attr:`commit` (or at ``--bad`` when not found), paths relative to the
            repository's top directory; empty for IPL008.
        added: the hop of :attr:`chain` whose statement :attr:`commit` added (one of its lines is
            among the lines the commit's diff adds to that file, and the parent's file does not hold the
            same statement in the same blocks: a comment appended to an old line is not adding
            it), or None when the commit added none (it removed a line, changed a condition,
            changed the policy's inputs elsewhere).
    """

    code: str
    light: str
    heavy: str
    status: BisectStatus
    commit: Commit | None = None
    candidates: tuple[Commit, ...] = ()
    chain: tuple[Hop, ...] = ()
    added: Hop | None = None


@dataclass(frozen=True)
class SkippedCommit:
    """A commit the search could not judge, and went around (``git bisect skip``).

    Attributes:
        commit: the commit.
        reason: why (``"light module a.b does not exist"``, ``"a/b.py: line 3: invalid syntax"``).
    """

    commit: Commit
    reason: str


@dataclass(frozen=True)
class BisectResult:
    """The result of ``importpolicy bisect``.

    Attributes:
        good, bad: the two ends of the range.
        policy: the policy file, relative to the repository's top directory.
        policy_origin: where its bytes came from: ``"--bad"`` (the policy at the bad commit) or
            ``"--policy"`` (the file on disk).
        first_parent: True unless ``--all-parents``.
        commits: how many commits the range holds (``git rev-list good..bad``, in the mode).
        checked: how many commits were checked (``--good`` and ``--bad`` included).
        findings: one per finding searched for, sorted by (light, code, heavy).
        skipped: the commits skipped, oldest first.
        unreadable: the paths of a checked commit's tree (under the source roots) whose files
            bisect cannot read, each with why: a git submodule, a symbolic link to outside the
            repository. A finding through them does not show, so "not found" is not an answer
            then (exit status 2).
    """

    good: Commit
    bad: Commit
    policy: str
    policy_origin: str
    first_parent: bool
    commits: int
    checked: int
    findings: tuple[BisectFinding, ...]
    skipped: tuple[SkippedCommit, ...]
    unreadable: tuple[tuple[str, str], ...] = ()

    @property
    def exit_code(self) -> int:
        """0 when the first commit was found for every finding searched for (and there was one);
        else 2 when a commit's tree holds files bisect cannot read (:attr:`unreadable`), else 1."""
        found = [f.status == BisectStatus.FOUND for f in self.findings]
        if found and all(found):
            return 0
        return 2 if self.unreadable else 1
