"""Reading a file the tool did not write: regular files only, never blocking, never without bound.

Every file read by the tool goes through :func:`read_regular_file`: policies, source files, cache
entries, the cache directory's tag. A FIFO, a socket or a device put where one of them should be (or
``--policy /dev/zero``) is refused at once, and a file over :data:`MAX_FILE_BYTES` is refused without
being read whole: a 10 MB one-line module would otherwise take gigabytes to parse. Standard library
only (the warm paths use it).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Final

__all__ = ["MAX_ENTRIES", "MAX_FILE_BYTES", "count_entries", "describe_file_type", "read_regular_file"]

MAX_FILE_BYTES: Final = 10 * 1024 * 1024
"""The largest policy, source file or cache entry the tool reads (10 MiB)."""

MAX_ENTRIES: Final = 50_000
"""The most entries a policy file (keys and array items of all its tables) or a baseline may hold:
beyond it a file is refused with one message before it is validated, so that no client spends
minutes on it (a real policy holds tens to hundreds; 50,000 load in about a second)."""

_TOO_LARGE: Final = "larger than 10 MiB, the limit for the files importpolicy reads"

_KINDS: Final = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def count_entries(document: object) -> int:
    """How many entries a parsed file holds, for :data:`MAX_ENTRIES`: every key of every table and
    every item of every array, nested ones included (counted without recursion)."""
    count = 0
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            count += len(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            count += len(value)
            stack.extend(value)
    return count


def describe_file_type(mode: int) -> str:
    """``"a FIFO"``, ``"a character device"``... for a ``st_mode`` that is not a regular file."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "a special file"


def read_regular_file(
    path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES
) -> tuple[os.stat_result, bytes]:
    """``(stat, bytes)`` of the regular file at ``path`` (symbolic links followed).

    The file is opened without blocking (a FIFO never waits for a writer) and checked with ``fstat``
    before anything is read; its ``stat`` is taken before the read.

    Args:
        path: the file.
        limit: the most bytes accepted (a file that grows past it while it is read is refused too).

    Raises:
        OSError: the file cannot be opened or read; it is a directory (``EISDIR``); it is not a
            regular file (``EINVAL``, ``strerror`` "not a regular file (a FIFO)"); or it is larger
            than ``limit`` (``EFBIG``). ``strerror`` is always set, for messages.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
                 | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise OSError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        if not stat.S_ISREG(st.st_mode):
            raise OSError(
                errno.EINVAL, f"not a regular file ({describe_file_type(st.st_mode)})", os.fspath(path)
            )
        if st.st_size > limit:
            raise OSError(errno.EFBIG, _TOO_LARGE, os.fspath(path))
        chunks = [os.read(fd, st.st_size + 1)]  # all of it, as a rule; then the end of file
        size = len(chunks[0])
        while chunks[-1]:
            if size > limit:
                raise OSError(errno.EFBIG, _TOO_LARGE, os.fspath(path))
            chunks.append(os.read(fd, 65536))
            size += len(chunks[-1])
        return st, b"".join(chunks)
    finally:
        os.close(fd)
