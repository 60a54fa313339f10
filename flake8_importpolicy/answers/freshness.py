"""Is this still fresh? One answer for every cache: the package's own code, source files and paths.

- :func:`code_stamp`: changes whenever any file of this package (subpackages included) or its
  version changes; :func:`find_package_files` lists what it covers (the engine fingerprint of the
  facts cache hashes the same files).
- :func:`stamp_file` / :func:`is_file_unchanged`: a source file an answer was computed from, as
  ``[path, size, mtime_ns, sha256, racy]``. Unchanged while its ``stat`` is the same; a file whose
  ``stat`` changed but whose bytes hash the same still counts as unchanged (CI checkouts reset
  mtimes). A file modified within :data:`RACY_NS` of being stamped is *racy* (an edit in the same
  timestamp tick would keep its ``stat``): its bytes are always compared. Only regular files are
  opened, so a FIFO or device where a module was never blocks a reader.
- :func:`stamp_path`: a directory listed by path search, an interpreter, a ``sys.path`` entry, as
  ``[mtime_ns, size]`` (``None`` when missing); :func:`interpreter_paths`: what an interpreter's
  answer is read from (its file, ``pyvenv.cfg``, its user site and ``sys.path``).

Standard library only and cheap to import (``hashlib`` is imported only when bytes are compared): the
warm paths of the command line, the flake8 checker and the mypy plugin check freshness before
anything else.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from flake8_importpolicy import __version__
from flake8_importpolicy.model.reading import read_regular_file

from flake8_importpolicy.model.environment import locate_interpreter

if TYPE_CHECKING:
    from flake8_importpolicy.model.facts import SourceRead
    from flake8_importpolicy.model.interpreter import InterpreterInfo

__all__ = [
    "RACY_NS",
    "code_stamp",
    "find_package_files",
    "interpreter_paths",
    "is_file_unchanged",
    "sha256",
    "stamp_file",
    "stamp_read",
    "stamp_path",
    "stamp_paths",
]

RACY_NS: Final = 2_000_000_000
"""A file modified less than this many nanoseconds before it was stamped is compared by content on
every check (file systems keep mtimes in ticks of up to 2 s; FAT's are 2 s)."""

_PACKAGE: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_package_files() -> list[tuple[str, str]]:
    """Every source file of this package, subpackages included, as sorted ``(name relative to the
    package, absolute path)`` pairs with ``/`` separators."""
    found: list[tuple[str, str]] = []
    for directory, subdirectories, files in os.walk(_PACKAGE):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        relative = os.path.relpath(directory, _PACKAGE)
        for name in files:
            if name.endswith(".py"):
                shown = name if relative == os.curdir else f"{relative}/{name}".replace(os.sep, "/")
                found.append((shown, os.path.join(directory, name)))
    return sorted(found)


def code_stamp() -> str:
    """A stamp of this package's code: the version, and the size and mtime of every file of
    :func:`find_package_files`."""
    rows = [__version__]
    for name, path in find_package_files():
        try:
            st = os.stat(path)
        except OSError:
            continue
        rows.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    return ";".join(rows)


def sha256(data: bytes) -> str:
    """The SHA-256 hex digest of ``data`` (``hashlib`` is imported on the first call only)."""
    import hashlib

    return hashlib.sha256(data).hexdigest()


def stamp_read(path: str, read: SourceRead, *, shown: str | None = None) -> list[object] | None:
    """The stamp of a source file as the engine read it: ``[path, size, mtime_ns, digest, racy]``,
    or None when it cannot vouch for the answer: the file could not be read, came from an editor's
    buffer, or its ``stat`` changed since it was read (it was edited while it was checked).

    Args:
        path: the file.
        read: what the engine read (:class:`~flake8_importpolicy.model.facts.SourceRead`).
        shown: the path to record instead of ``path`` (a real path, say).
    """
    if not read.digest or read.size is None or read.mtime_ns is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    if (st.st_size, st.st_mtime_ns) != (read.size, read.mtime_ns):
        return None
    racy = read.read_ns - read.mtime_ns < RACY_NS
    return [path if shown is None else shown, read.size, read.mtime_ns, read.digest, racy]


def stamp_file(path: str, digest: str | None, *, shown: str | None = None) -> list[object] | None:
    """The stamp of a source file whose analysed bytes have SHA-256 ``digest``:
    ``[path, size, mtime_ns, digest, racy]``, or None when the file no longer has those bytes (it
    changed while it was checked: the answer must not be kept).

    Args:
        path: the file.
        digest: the SHA-256 of the bytes that were analysed; None for a file that could not be read
            (then its ``stat`` alone is recorded: ``[path, None, None, None, False]`` if missing).
        shown: the path to record instead of ``path`` (a real path, say).
    """
    name = path if shown is None else shown
    now = time.time_ns()
    if digest is None:
        try:
            st = os.stat(path)
        except OSError:
            return [name, None, None, None, False]
        return [name, st.st_size, st.st_mtime_ns, None, now - st.st_mtime_ns < RACY_NS]
    try:
        st, data = read_regular_file(path)
    except OSError:
        return None
    if sha256(data) != digest:
        return None
    return [name, st.st_size, st.st_mtime_ns, digest, now - st.st_mtime_ns < RACY_NS]


def is_file_unchanged(row: list[object]) -> bool:
    """True if the file a :func:`stamp_file` row describes still has the same bytes (for a file
    recorded without a digest: the same ``stat``; for a missing one: still missing).

    Raises:
        ValueError, TypeError: for a malformed row.
    """
    path, size, mtime, digest, racy = row
    try:
        st = os.stat(str(path))
    except OSError:
        return size is None
    if st.st_size == size and st.st_mtime_ns == mtime and not racy:
        return True
    if digest is None:
        return st.st_size == size and st.st_mtime_ns == mtime
    try:
        return sha256(read_regular_file(str(path))[1]) == digest
    except OSError:
        return False


def stamp_path(path: str) -> list[int] | None:
    """``[mtime_ns, size]`` of a directory, an interpreter or a ``sys.path`` entry; None if missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def stamp_paths(paths: Iterable[str]) -> list[list[object]]:
    """``[path, stamp_path(path)]`` of each path, in order."""
    return [[path, stamp_path(path)] for path in paths]


def interpreter_paths(info: InterpreterInfo) -> list[str]:
    """Every path whose change can change what the interpreter ``info`` describes reports, for
    :func:`stamp_paths`: the interpreter (a venv's link is stamped through to its target), the
    ``pyvenv.cfg`` a venv's interpreter is found by (beside it or one level up, present or not), its
    user site directory while enabled (``site`` puts it on ``sys.path`` once it exists), and its
    ``sys.path`` entries (a ``.pth`` file added to a site directory changes that directory's
    stamp)."""
    executable = locate_interpreter(info.executable)
    directory = os.path.dirname(executable)
    paths = [
        executable, os.path.join(directory, "pyvenv.cfg"),
        os.path.join(os.path.dirname(directory), "pyvenv.cfg"),
    ]
    if info.user_site is not None:
        paths.append(info.user_site)
    paths.extend(info.sys_path)
    return paths
