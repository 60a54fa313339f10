"""Sealed, atomic JSON files: the one way every cache of this package writes to disk and reads back.

- Atomic: an entry is written to a temporary file in the same directory and renamed into place with
  ``os.replace`` (atomic on POSIX and Windows), so concurrent flake8 and mypy workers never read a
  partial entry.
- Sealed: the file is ``{"crc32":"<8 hex digits>","entry":<the entry>}``, the checksum taken over the
  entry's bytes as written. :func:`read_json_sealed` recomputes it before it parses anything, so a
  truncated entry, a hand edit (``"sites": []``) or a damaged disk block is a miss, never an answer.
  The checksum guards against accidents, not forgers: whoever recomputes it on purpose is out of
  scope (docs/design.md, "Caches").

:func:`write_text_atomic` writes any other file the same way, unsealed (the baseline). The
``expect_*`` functions read an entry's values back by type and range: a value of another type (a
list where a string belongs, ``true`` for a number) or out of range (a negative line, a number of
5,000 digits) is a miss, never an answer (docs/design.md, "Caches"). Stdlib only and cheap to import
(``zlib``, not ``hashlib``): the flake8 checker's warm path uses it.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import zlib
from pathlib import Path
from typing import Final

from flake8_importpolicy.model.reading import MAX_FILE_BYTES, read_regular_file

__all__ = [
    "MALFORMED",
    "MAX_POSITION",
    "expect_bool",
    "expect_int",
    "expect_list",
    "expect_object",
    "expect_optional_str",
    "expect_str",
    "read_json_sealed",
    "write_json_atomic",
    "write_text_atomic",
]

MALFORMED: Final = (
    OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError, OverflowError,
)
"""What reading and rebuilding a cache entry raises when the entry is missing, damaged or of another
shape (``int(1e400)`` is an OverflowError, ``None.items()`` an AttributeError): every one is a miss."""

MAX_POSITION: Final = MAX_FILE_BYTES + 1
"""The largest line or column (or count of them) an entry may hold: no file the tool reads has more
lines or columns than its 10 MiB limit has bytes."""

_HEAD: Final = b'{"crc32":"'
_MIDDLE: Final = b'","entry":'
_BODY_START: Final = len(_HEAD) + 8 + len(_MIDDLE)


def expect_str(value: object) -> str:
    """``value`` if it is a string.

    Raises:
        TypeError: it is not.
    """
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def expect_optional_str(value: object) -> str | None:
    """``value`` if it is a string or ``null``.

    Raises:
        TypeError: it is neither.
    """
    return None if value is None else expect_str(value)


def expect_int(value: object, low: int = 0, high: int = MAX_POSITION) -> int:
    """``value`` if it is an integer (not a boolean) from ``low`` to ``high``.

    Raises:
        TypeError: it is not an integer; ValueError: it is out of range.
    """
    if type(value) is not int:
        raise TypeError(f"expected an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{value} is out of range {low}..{high}")
    return value


def expect_bool(value: object) -> bool:
    """``value`` if it is ``true`` or ``false``.

    Raises:
        TypeError: it is not.
    """
    if not isinstance(value, bool):
        raise TypeError(f"expected a boolean, got {type(value).__name__}")
    return value


def expect_list(value: object) -> list[object]:
    """``value`` if it is an array.

    Raises:
        TypeError: it is not.
    """
    if not isinstance(value, list):
        raise TypeError(f"expected an array, got {type(value).__name__}")
    return value


def expect_object(value: object) -> dict[str, object]:
    """``value`` if it is an object (its keys are strings, as JSON's are).

    Raises:
        TypeError: it is not.
    """
    if not isinstance(value, dict):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return value


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

    As writing the file in place would: a symbolic link is written through (its target is
    replaced and the link stays, so a baseline shared by a link is updated), an existing file keeps
    its permission bits, and a new one gets those the umask leaves of ``0o666``.

    Raises:
        OSError: if the directory is not usable, the file cannot be replaced, or ``location`` is a
            symbolic link loop (``ELOOP``).
    """
    target = os.path.realpath(location)
    if os.path.islink(target):  # realpath stops at a loop
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), os.fspath(location))
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    _write_atomic(target, text.encode("utf-8"), mode)


def _umask() -> int:
    """The process's umask (read by setting it, then putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_atomic(location: str | Path, data: bytes, mode: int | None = None) -> None:
    """``data`` to ``location`` through a temporary file beside it, renamed into place; the file
    gets ``mode`` if given (else the temporary file's ``0o600``).

    Raises:
        OSError: if the directory is not usable or the file cannot be replaced.
    """
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.fspath(location)) or ".", prefix=".tmp-",
                               suffix=".json")
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(data)
        os.replace(tmp, location)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
