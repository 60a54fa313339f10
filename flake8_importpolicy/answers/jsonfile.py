"""Sealed, atomic JSON files: the one way every cache of this package writes to disk and reads back.

- Atomic: an entry is written to a temporary file in the same directory and renamed into place with
  ``os.replace`` (atomic on POSIX and Windows), so concurrent flake8 and mypy workers never read a
  partial entry.
- Sealed: the file is ``{"crc32":"<8 hex digits>","entry":<the entry>}``, the checksum taken over the
  entry's bytes as written. :func:`read_json_sealed` recomputes it before it parses anything, so a
  truncated entry, a hand edit (``"sites": []``) or a damaged disk block is a miss, never an answer.
  The checksum guards against accidents, not forgers: whoever recomputes it on purpose is out of
  scope (docs/design.md, "Caches").

:func:`write_text_atomic` writes any other file the same way, unsealed (the baseline). Stdlib only
and cheap to import (``zlib``, not ``hashlib``): the flake8 checker's warm path uses it.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Final

from flake8_importpolicy.model.reading import read_regular_file

__all__ = ["MALFORMED", "read_json_sealed", "write_json_atomic", "write_text_atomic"]

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
    # dumps, not dump: only a one-shot encoding uses the C encoder (dump is pure Python)
    sealed = _seal(json.dumps(data, separators=(",", ":")).encode("utf-8"))
    try:
        os.makedirs(os.path.dirname(os.fspath(location)), exist_ok=True)
        _write_atomic(location, sealed)
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


def write_text_atomic(location: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``location`` through a temporary file in the same
    directory renamed into place, so that a reader sees the old file or the new one, never a part.

    Raises:
        OSError: if the directory is not usable or the file cannot be replaced.
    """
    _write_atomic(location, text.encode("utf-8"))


def _write_atomic(location: str | Path, data: bytes) -> None:
    """``data`` to ``location`` through a temporary file beside it, renamed into place.

    Raises:
        OSError: if the directory is not usable or the file cannot be replaced.
    """
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.fspath(location)) or ".", prefix=".tmp-",
                               suffix=".json")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, location)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
