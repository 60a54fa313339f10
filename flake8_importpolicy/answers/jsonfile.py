"""Atomic JSON files: the one way every cache of this package writes to disk.

Entries are written to a temporary file in the same directory and renamed into place with
``os.replace`` (atomic on POSIX and Windows), so concurrent flake8 and mypy workers never read a partial
entry. Stdlib only and cheap to import: the flake8 checker's warm path uses it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["write_json_atomic", "write_text_atomic"]


def write_json_atomic(location: str | Path, data: object) -> bool:
    """Write ``data`` as compact JSON to ``location``, creating its directory.

    Returns:
        True if written; False (silently) when the directory is not usable (missing permissions, a
        read-only file system, a file where the directory should be). Never raises ``OSError``.

    Raises:
        TypeError, ValueError: if ``data`` is not JSON-serialisable (a programming error).
    """
    # dumps, not dump: only a one-shot encoding uses the C encoder (dump is pure Python)
    text = json.dumps(data, separators=(",", ":"))
    try:
        os.makedirs(os.path.dirname(os.fspath(location)), exist_ok=True)
        write_text_atomic(location, text)
    except OSError:
        return False
    return True


def write_text_atomic(location: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``location`` through a temporary file in the same
    directory renamed into place, so that a reader sees the old file or the new one, never a part.

    Raises:
        OSError: if the directory is not usable or the file cannot be replaced.
    """
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.fspath(location)) or ".", prefix=".tmp-",
                               suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, location)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
