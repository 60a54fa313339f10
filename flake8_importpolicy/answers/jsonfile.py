"""Atomic JSON files: the one way every cache of this package writes to disk.

Entries are written to a temporary file in the same directory and renamed into place with
``os.replace`` (atomic on POSIX and Windows), so concurrent flake8 and mypy workers never read a partial
entry. Stdlib only and cheap to import: the flake8 checker's warm path uses it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["write_json_atomic"]


def write_json_atomic(location: str | Path, data: object) -> bool:
    """Write ``data`` as compact JSON to ``location``, creating its directory.

    Returns:
        True if written; False (silently) when the directory is not usable (missing permissions, a
        read-only file system, a file where the directory should be). Never raises ``OSError``.

    Raises:
        TypeError, ValueError: if ``data`` is not JSON-serialisable (a programming error).
    """
    import tempfile

    directory = os.path.dirname(os.fspath(location))
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                # dumps, not dump: only a one-shot encoding uses the C encoder (dump is pure Python)
                handle.write(json.dumps(data, separators=(",", ":")))
            os.replace(tmp, location)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        return False
    return True
