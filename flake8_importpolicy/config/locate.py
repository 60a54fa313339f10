"""Where is the policy, and where is its cache: answered here once, for every client.

:func:`find_policy` is the one discovery walk. Each client calls it from its own start directory
(docs/policy.md, "Discovery"): the command line from the working directory, the flake8 checker from
the checked file's directory, the mypy plugin from its configuration file's directory, the pytest
plugin from pytest's rootdir. :func:`find_cache_dir` computes ``settings.cache-dir`` from a policy's
bytes, as the loader does, for the warm paths that answer without loading the policy.

Standard library only (``tomllib`` only for a ``pyproject.toml`` that mentions importpolicy, or a
policy that sets ``cache-dir``): the warm paths of every client import this module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Final

from flake8_importpolicy.model.files import (
    CACHE_TAG,
    CACHE_TAG_TEXT,
    DEFAULT_CACHE_DIR,
    POLICY_FILENAME,
    PYPROJECT_FILENAME,
)
from flake8_importpolicy.model.reading import read_regular_file

__all__ = [
    "OWN_TABLES",
    "find_cache_dir",
    "find_policy",
    "has_cache_tag",
    "has_policy_table",
    "is_own_policy",
    "resolve_cache_dir",
]


def find_policy(
    start: str | os.PathLike[str], skipped: Callable[[Path], None] | None = None
) -> Path | None:
    """The policy file for ``start`` (a directory, or a file whose directory is meant).

    Walks up from ``start`` to the filesystem root; in each directory ``policy.toml`` (one that is
    ours: :func:`is_own_policy`) wins, then a ``pyproject.toml`` that has a ``[tool.importpolicy]``
    table (:func:`has_policy_table`). So the nearest ``pyproject.toml`` with that table wins over a
    ``policy.toml`` in a parent directory, and another tool's ``policy.toml`` (the name is common)
    is passed over, as are directories that cannot be read. A ``policy.toml`` that is not a regular
    file (a FIFO, a directory, a dangling or looping link) is found, so that loading it says what
    is wrong instead of a client going on as if there were no policy.

    Args:
        skipped: called with each ``policy.toml`` passed over as not ours (``--verbose`` says so).

    Returns:
        The absolute path of the file with symbolic links resolved, or None if there is none.
    """
    here = os.path.realpath(start)
    if not os.path.isdir(here):
        here = os.path.dirname(here)
    while True:
        candidate = os.path.join(here, POLICY_FILENAME)
        if os.path.lexists(candidate):
            if is_own_policy(candidate):  # one that cannot be read is: the loader says why
                return Path(candidate)
            if skipped is not None:
                skipped(Path(candidate))
        pyproject = os.path.join(here, PYPROJECT_FILENAME)
        if os.path.isfile(pyproject) and has_policy_table(pyproject):
            return Path(pyproject)
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


OWN_TABLES: Final = ("version", "extends", "settings", "heavy", "heavy-calls", "light", "ignore", "assume")
"""The top-level keys of an importpolicy policy (flake8_importpolicy/schema/policy.schema.json)."""
_HEADER: Final = re.compile(rb'^[ \t]*\[\[?[ \t]*["\']?([A-Za-z0-9_-]+)', re.MULTILINE)
_TOP_KEY: Final = re.compile(rb'^[ \t]*["\']?([A-Za-z0-9_-]+)["\']?[ \t]*[.=]', re.MULTILINE)


def is_own_policy(path: str | os.PathLike[str]) -> bool:
    """True if the ``policy.toml`` at ``path`` holds one of importpolicy's tables
    (:data:`OWN_TABLES`): a table header or a top-level key naming one; also when it holds no table
    or key at all (an empty policy), and when it cannot be read (the loader then says why). Read
    without a TOML parser, so a broken file of ours (which the loader reports) is still ours, and a
    warm path pays no ``tomllib``."""
    try:
        data = read_regular_file(path)[1].removeprefix(b"\xef\xbb\xbf")
    except OSError:
        return True
    own = {name.encode() for name in OWN_TABLES}
    first = _HEADER.search(data)
    top = data if first is None else data[:first.start()]
    names = [m.group(1) for m in _HEADER.finditer(data)] + [m.group(1) for m in _TOP_KEY.finditer(top)]
    return not names or any(name in own for name in names)


def has_policy_table(pyproject: str | os.PathLike[str]) -> bool:
    """True if a ``pyproject.toml`` has a ``[tool.importpolicy]`` table, or is broken TOML that
    mentions it (so that loading it reports the syntax error). ``tomllib`` parses only files that
    mention ``importpolicy`` at all."""
    try:
        data = read_regular_file(pyproject)[1]
    except OSError:
        return False
    if b"importpolicy" not in data:
        return False
    import tomllib

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return False
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return True
    except RecursionError:
        return True
    tool = document.get("tool")
    return isinstance(tool, dict) and "importpolicy" in tool


def resolve_cache_dir(root: str | os.PathLike[str], value: str = DEFAULT_CACHE_DIR) -> str:
    """The absolute cache directory for a ``settings.cache-dir`` value, relative to the policy
    file's directory ``root`` (not resolved: a symbolic link stays as written)."""
    return os.path.normpath(os.path.join(root, value))


def has_cache_tag(directory: str | os.PathLike[str]) -> bool:
    """True if ``directory`` is this tool's cache directory: it holds a ``CACHEDIR.TAG`` that is a
    regular file (not a symbolic link) with the text the tool writes there."""
    tag = os.path.join(directory, CACHE_TAG)
    try:
        if os.path.islink(tag):
            return False
        data = read_regular_file(tag, limit=len(CACHE_TAG_TEXT) + 1)[1]
    except OSError:
        return False
    return data == CACHE_TAG_TEXT.encode()


def find_cache_dir(policy_path: str, data: bytes) -> str | None:
    """``settings.cache-dir`` of the policy at ``policy_path`` whose bytes are ``data``, as the loader
    computes it (:func:`resolve_cache_dir`); None if it cannot be read that way (the loader then
    reports why).

    A policy that sets it on one plain line (``cache-dir = "..."`` under ``[settings]``, no escapes,
    no multi-line strings) is read without a TOML parser (``tomllib`` costs milliseconds on a warm
    path). The warm paths only look for their index there, and every index says which policy it
    answers for, so a misread here could only cost a cache miss.
    """
    root = os.path.dirname(policy_path)
    if b"cache-dir" not in data and b"\\u" not in data and b"\\U" not in data:
        return resolve_cache_dir(root)
    quick = _quick_cache_dir(data, os.path.basename(policy_path) == PYPROJECT_FILENAME)
    if quick is not None:
        return resolve_cache_dir(root, quick)
    import tomllib

    try:
        table: object = tomllib.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None
    pyproject = os.path.basename(policy_path) == PYPROJECT_FILENAME
    for key in ("tool", "importpolicy", "settings") if pyproject else ("settings",):
        table = table.get(key, {}) if isinstance(table, dict) else None
    if not isinstance(table, dict):
        return None
    value = table.get("cache-dir", DEFAULT_CACHE_DIR)
    if not isinstance(value, str) or not value or "\0" in value:
        return None
    return resolve_cache_dir(root, value)


_QUICK_CACHE_DIR: Final = re.compile(rb'[ \t]*cache-dir[ \t]*=[ \t]*"([^"\\\r\n]+)"[ \t]*(?:#[^\r\n]*)?')
_TABLE_HEADER: Final = re.compile(rb"[ \t]*\[([^\[\]\r\n]*)\][ \t]*(?:#[^\r\n]*)?")


def _quick_cache_dir(data: bytes, pyproject: bool) -> str | None:
    """``cache-dir`` when the policy sets it on one plain line of its settings table; else None."""
    if data.count(b"cache-dir") != 1 or b'"""' in data or b"'''" in data or b"\\" in data:
        return None
    table = b"tool.importpolicy.settings" if pyproject else b"settings"
    current = b""
    for line in data.splitlines():
        header = _TABLE_HEADER.fullmatch(line)
        if header is not None:
            current = header.group(1).replace(b" ", b"").replace(b"\t", b"")
            continue
        found = _QUICK_CACHE_DIR.fullmatch(line)
        if found is not None:
            try:
                return found.group(1).decode("utf-8") if current == table else None
            except UnicodeDecodeError:
                return None
    return None
