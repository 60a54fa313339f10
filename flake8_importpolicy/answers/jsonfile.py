"""Sealed, atomic JSON files: the one way every cache of this package writes to disk and reads back.

- Atomic: an entry is written to a temporary file in the same directory and renamed into place with
  ``os.replace`` (atomic on POSIX and Windows), so concurrent flake8 and mypy workers never read a
  partial entry.
- Sealed: the file is ``{"crc32":"<8 hex digits>","entry":<the entry>}``, the checksum taken over the
  entry's bytes as written. :func:`read_json_sealed` recomputes it before it parses anything, so a
  truncated entry, a hand edit (``"sites": []``) or a damaged disk block is a miss, never an answer.
  The checksum guards against accidents, not forgers: whoever recomputes it on purpose is out of
  scope (docs/design.md, "Caches").

Stdlib only and cheap to import (``zlib``, not ``hashlib``): the flake8 checker's warm path uses it.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Final

from flake8_importpolicy.model.reading import read_regular_file

__all__ = ["MALFORMED", "read_json_sealed", "write_json_atomic"]

MALFORMED: Final = (
    OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError, OverflowError,
)
"""What reading and rebuilding a cache entry raises when the entry is missing, damaged or of another
shape (``int(1e400)`` is an OverflowError, ``None.items()`` an AttributeError): every one is a miss."""

_HEAD: Final = b'{"crc32":"'
_MIDDLE: Final = b'","entry":'
_BODY_START: Final = len(_HEAD) + 8 + len(_MIDDLE)


def _seal(body: bytes) -> bytes:
    return b"%s%08x%s%s}" % (_HEAD, zlib.crc32(body), _MIDDLE, body)


def write_json_atomic(location: str | Path, data: object) -> bool:
    """Write ``data`` as compact JSON, sealed, to ``location``, creating its directory.

    Returns:
        True if written; False (silently) when the directory is not usable (missing permissions, a
        read-only file system, a file where the directory should be). Never raises ``OSError``.

    Raises:
        TypeError, ValueError: if ``data`` is not JSON-serialisable (a programming error).
    """
    import tempfile

    # dumps, not dump: only a one-shot encoding uses the C encoder (dump is pure Python)
    sealed = _seal(json.dumps(data, separators=(",", ":")).encode("utf-8"))
    directory = os.path.dirname(os.fspath(location))
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(sealed)
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


def read_json_sealed(location: str | Path) -> object:
    """The entry :func:`write_json_atomic` wrote at ``location``, parsed.

    Only a regular file is read (:func:`~flake8_importpolicy.model.reading.read_regular_file`).

    Raises:
        OSError: the file cannot be read (missing, not a regular file, too large).
        ValueError: it is not a sealed entry, or its checksum does not match its bytes (truncated,
            edited, damaged), or it is not JSON (``json.JSONDecodeError``); RecursionError: JSON nested
            too deeply.
    """
    data = read_regular_file(location)[1]
    body = data[_BODY_START:-1]
    if (
        not data.startswith(_HEAD)
        or data[_BODY_START - len(_MIDDLE):_BODY_START] != _MIDDLE
        or not data.endswith(b"}")
        or data[len(_HEAD):len(_HEAD) + 8] != b"%08x" % zlib.crc32(body)
    ):
        raise ValueError(f"{os.fspath(location)}: not a sealed cache entry, or damaged")
    return json.loads(body)
