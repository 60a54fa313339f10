"""The project as the git index has it: what a commit would record, for ``importpolicy check --staged``.

A pre-commit hook checks what is being committed. pre-commit sets unstaged edits of tracked files aside
while hooks run, but untracked files stay in the work tree, and a module nobody added (a scratch
``fast_impl.py`` a light module tries to import) would decide the answer. :func:`staged_tree` writes the
index's files (``git checkout-index --all``, which honours ``GIT_INDEX_FILE``: the index of the commit
being made) into a temporary directory, where the check then runs in the same place relative to the
repository's root; paths in the report, relative to the policy's directory, read the same.

An interpreter is no part of a commit: a project's ``.venv`` is not tracked, so the copy has none.
While a copy is in use, :func:`in_work_tree` gives a path of the copy as the work tree has it, which
``settings.interpreter`` (a path relative to the policy file) is resolved with.

Standard library and the ``git`` command only; :mod:`subprocess` and :mod:`tempfile` are imported
when a copy is made, since reading any policy imports :func:`in_work_tree`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from flake8_importpolicy.model.errors import ImportPolicyError

__all__ = ["StagedTree", "StagedTreeError", "in_work_tree", "staged_tree"]


class StagedTreeError(ImportPolicyError):
    """The index cannot be read: not in a git repository, or ``git`` failed; the message says why."""


def _git(cwd: Path, *args: str) -> str:
    import subprocess

    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise StagedTreeError(f"--staged: cannot run git: {error}") from None
    if done.returncode != 0:
        reason = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        raise StagedTreeError(f"--staged: git {args[0]} failed: {reason}")
    return done.stdout


class StagedTree:
    """A temporary copy of a repository's git index.

    Attributes:
        top: the repository's root (its work tree).
        copy: the copy's root.
    """

    def __init__(self, top: Path, copy: Path) -> None:
        self.top = top
        self.copy = copy

    def map(self, path: Path) -> Path:
        """``path`` (in the work tree) as the copy has it; a path outside the repository is kept."""
        try:
            return self.copy / path.resolve().relative_to(self.top.resolve())
        except ValueError:
            return path

    def unmap(self, path: Path) -> Path:
        """``path`` (in the copy) as the work tree has it; a path outside the copy is kept."""
        try:
            return self.top / path.relative_to(self.copy)
        except ValueError:
            return path


_ACTIVE: ContextVar[StagedTree | None] = ContextVar("importpolicy_staged_tree", default=None)


def in_work_tree(path: Path) -> Path:
    """``path`` as the work tree has it when it is in the copy of the index :func:`staged_tree`
    is yielding (for what a commit never holds: the interpreter); otherwise ``path`` itself."""
    tree = _ACTIVE.get()
    return path if tree is None else tree.unmap(path)


@contextmanager
def staged_tree(start: Path) -> Iterator[StagedTree]:
    """A temporary copy of the git index of the repository holding ``start`` (removed on exit).

    Raises:
        StagedTreeError: ``start`` is in no git repository, or ``git`` cannot write the files.
    """
    import tempfile

    top = Path(_git(start, "rev-parse", "--show-toplevel").strip())
    # Resolved, as the working directory inside it will be (a symbolic link in the temporary
    # directory's path would make :meth:`StagedTree.unmap` miss the paths read from there).
    copy = Path(tempfile.mkdtemp(prefix="importpolicy-staged-")).resolve()
    try:
        _git(top, "checkout-index", "--all", "--force", f"--prefix={copy}{os.sep}")
        tree = StagedTree(top, copy)
        token = _ACTIVE.set(tree)
        try:
            yield tree
        finally:
            _ACTIVE.reset(token)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
