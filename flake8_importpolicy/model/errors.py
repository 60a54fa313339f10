"""The package's exceptions: one base, :class:`ImportPolicyError`, for every error a user can act on.

- :class:`PolicyError` (and :class:`PolicyNotFound`): the policy cannot be found, read or validated;
  ``str()`` lists every problem at once with its key path (see :mod:`flake8_importpolicy.config.load`);
- :class:`InterpreterError`: the target interpreter cannot be run or queried.

Every client reports these as IPL900 (exit status 2 on the command line), never as a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from flake8_importpolicy import docs_url
from flake8_importpolicy.model.files import POLICY_FILENAME, PYPROJECT_FILENAME

__all__ = [
    "BaselineError",
    "ImportPolicyError",
    "InterpreterError",
    "NoLightModule",
    "PolicyError",
    "PolicyNotFound",
    "PolicyProblem",
    "display_path",
    "find_close_match",
]


def find_close_match(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The candidate closest to ``word`` for a "did you mean" hint, or None if none is close enough
    (``difflib.get_close_matches(word, candidates, n=1, cutoff=cutoff)``; ``difflib`` is imported
    only here, when a hint is needed: a valid policy never pays for it)."""
    import difflib

    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=cutoff)
    return close[0] if close else None


class ImportPolicyError(Exception):
    """Base of every error the package raises for bad input or an unusable environment."""


class InterpreterError(ImportPolicyError):
    """The target interpreter could not be run or queried; the message says which and why."""


class NoLightModule(ImportPolicyError):
    """No ``[light]`` pattern of the policy names a module that exists, while the policy has problems
    to show: a client that shows findings in modules (mypy) has no module to show them in."""


@dataclass(frozen=True)
class PolicyProblem:
    """One problem found in a policy file.

    Attributes:
        key: TOML-ish key path (``settings.external``, ``light."a.b".forbid[0]``), or ``""`` for
            a problem with the file as a whole.
        message: what is wrong, and how to fix it when that is known.
        line: 1-based line in the file, when known.
        column: 1-based column, when known (only with ``line``).
        file: for a problem in a base the policy ``extends``, which one: its path relative to the
            policy file's directory, or ``preset NAME``; None for the policy file itself (``line``
            and ``column`` are then positions in that base).
    """

    key: str
    message: str
    line: int | None = None
    column: int | None = None
    file: str | None = None

    @property
    def shown_key(self) -> str:
        """The key path as messages show it: prefixed with ``<file>: `` for a problem in a base."""
        if self.file is None:
            return self.key
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.key}" if self.key else where


def display_path(path: Path) -> str:
    """Return ``path`` relative to the working directory if it is inside it, else absolute."""
    absolute = path if path.is_absolute() else path.absolute()
    try:
        cwd = Path.cwd()
    except OSError:
        return str(absolute)
    try:
        pairs = [(absolute, cwd), (absolute.resolve(), cwd.resolve())]
    except (OSError, RuntimeError):  # a symlink loop
        pairs = [(absolute, cwd)]
    for candidate, base in pairs:
        try:
            return str(candidate.relative_to(base))
        except ValueError:
            continue
    return str(absolute)


def _render(display: str, problems: tuple[PolicyProblem, ...]) -> str:
    """Render problems as ``str(PolicyError)`` does."""
    if len(problems) == 1 and not problems[0].key and problems[0].file is None:
        problem = problems[0]
        location = display
        if problem.line is not None:
            location += f":{problem.line}"
            if problem.column is not None:
                location += f":{problem.column}"
        return f"{location}: {problem.message}"
    count = len(problems)
    lines = [f"{display} is not valid ({count} problem{'' if count == 1 else 's'}):"]
    for problem in problems:
        key = problem.shown_key
        lines.append(f"  {key}: {problem.message}" if key else f"  {problem.message}")
    return "\n".join(lines)


class PolicyError(ImportPolicyError):
    """The policy cannot be loaded: unreadable, not TOML, or invalid.

    ``str(err)`` is the full message: for a single problem with the whole file, one line
    ``<file>[:LINE[:COL]]: <message>``; otherwise a header ``<file> is not valid (N problems):``
    and one indented ``<key>: <message>`` line per problem. ``<file>`` is the path relative to the
    working directory when inside it, else absolute.

    Attributes:
        path: the policy file (as given).
        problems: every problem found, in file-section order.
        message: the rendered message (``str(err)``).
    """

    def __init__(self, path: Path, problems: Iterable[PolicyProblem]) -> None:
        self.path = path
        self.problems = tuple(problems)
        self.message = _render(display_path(path), self.problems)
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class PolicyNotFound(PolicyError):
    """No policy file in the start directory or any parent.

    ``str(err)``: ``no policy.toml or pyproject.toml with [tool.importpolicy] found in <dir> or
    any parent; create one (see <docs_url("policy.md")>) or pass --policy PATH`` (``<dir>``
    absolute).

    Attributes:
        path: the absolute directory the search started from.
    """

    def __init__(self, start: Path) -> None:
        directory = start.absolute()
        if not directory.is_dir():
            directory = directory.parent
        message = (
            f"no {POLICY_FILENAME} or {PYPROJECT_FILENAME} with [tool.importpolicy] found in "
            f"{directory} or any parent; create one (see {docs_url('policy.md')}) or pass --policy PATH"
        )
        super().__init__(directory, [PolicyProblem("", message)])
        self.message = message
        self.args = (message,)


class BaselineError(PolicyError):
    """The baseline file (``[settings] baseline``, ``--baseline``) cannot be used: unreadable, not
    JSON, or not a baseline. ``str(err)`` renders like :class:`PolicyError`'s, the key paths being
    JSON paths (``entries[2].code``), the file followed by what named it
    (``b.json (settings.baseline in policy.toml): ...``); every client reports it as it reports a
    broken policy (exit status 2 on the command line).

    Attributes:
        path: the baseline file (as given).
        problems: every problem found.
        named_by: what named the file (``settings.baseline in policy.toml``, ``--baseline``), or
            None.
        location: the file and what named it, as messages show them.
    """

    def __init__(
        self, path: Path, problems: Iterable[PolicyProblem], named_by: str | None = None
    ) -> None:
        super().__init__(path, problems)
        self.named_by = named_by
        self.location = display_path(path) + (f" ({named_by})" if named_by else "")
        self.message = _render(self.location, self.problems)
        self.args = (self.message,)
