"""The warm-path core of the adapters' answer indexes: what they share, standard library only.

The flake8 checker (:mod:`flake8_importpolicy.answers.per_file`) and the mypy plugin
(:mod:`flake8_importpolicy.answers.by_module`) each keep a small index of their answers beside the facts
cache (``<cache-dir>/<index dir>/<key>.json``, JSON only), read without importing the engine: importing
it (check, policy, answers, hashlib) costs more than everything else a warm run does. This module is
what both indexes have in common:

- finding the policy from a directory, walking up (``policy.toml``, else a ``pyproject.toml`` that
  mentions ``importpolicy``, which only :func:`flake8_importpolicy.config.load.find_policy` can confirm);
- the cache directory, as :mod:`flake8_importpolicy.config.load` computes it, and the index's location
  and key (the interpreter running us and ``PYTHONPATH``);
- reading an index: valid only while nothing it depends on changed (the policy's bytes, a stamp of
  this package's code, every source file parsed, every directory listed by path search and the
  interpreter's path entries). Checking it costs a ``stat`` per dependency; a file whose ``stat``
  changed but whose bytes hash the same still counts as unchanged (``hashlib`` is imported only then);
- writing an index after the engine checked the policy, atomically, and only when nothing changed
  while it was checked.

The adapters check with the engine on a miss; this module never imports it (writing an index imports
:mod:`flake8_importpolicy.answers.jsonfile`, standard library only).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from flake8_importpolicy import __version__
from flake8_importpolicy.answers.freshness import find_package_files

if TYPE_CHECKING:
    from pathlib import Path

    from flake8_importpolicy.model.findings import Report
    from flake8_importpolicy.model.interpreter import InterpreterInfo
    from flake8_importpolicy.model.policy import Policy

__all__ = [
    "DEFAULT_CACHE_DIR",
    "POLICY_FILENAME",
    "PYPROJECT_FILENAME",
    "find_cache_dir",
    "find_policy_candidate",
    "load_index",
    "sha256",
    "store_index",
]

POLICY_FILENAME = "policy.toml"
PYPROJECT_FILENAME = "pyproject.toml"
DEFAULT_CACHE_DIR = ".importpolicy_cache"
"""Those of :mod:`flake8_importpolicy.config.load` (a test checks it), without importing it."""

_T = TypeVar("_T")


# -- finding the policy and its cache directory -------------------------------------------------------


def find_policy_candidate(directory: str) -> tuple[str, bool] | None:
    """``(policy file, certain)`` for files in ``directory``, or None when there is none.

    Same walk as :func:`~flake8_importpolicy.config.load.find_policy`; a ``pyproject.toml`` that mentions
    ``importpolicy`` is a candidate that is not certain (it may only mention it in a comment): the
    caller trusts it only when a valid index exists for it, or asks ``find_policy``.
    """
    current = directory
    while True:
        candidate = os.path.join(current, POLICY_FILENAME)
        if os.path.isfile(candidate):
            return candidate, True
        pyproject = os.path.join(current, PYPROJECT_FILENAME)
        if os.path.isfile(pyproject):
            try:
                with open(pyproject, "rb") as handle:
                    mentions = b"importpolicy" in handle.read()
            except OSError:
                mentions = False
            if mentions:
                return pyproject, False
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def find_cache_dir(policy_path: str, data: bytes) -> str | None:
    """``settings.cache-dir`` of the policy with these bytes, as the policy module computes it;
    None if the file cannot be read that way (the engine then reports why)."""
    root = os.path.dirname(policy_path)
    if b"cache-dir" not in data and b"\\u" not in data and b"\\U" not in data:
        return os.path.normpath(os.path.join(root, DEFAULT_CACHE_DIR))
    import tomllib

    try:
        table: object = tomllib.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None
    keys = ("tool", "importpolicy", "settings") if os.path.basename(policy_path) == PYPROJECT_FILENAME \
        else ("settings",)
    for key in keys:
        table = table.get(key, {}) if isinstance(table, dict) else None
    if not isinstance(table, dict):
        return None
    value = table.get("cache-dir", DEFAULT_CACHE_DIR)
    if not isinstance(value, str) or not value or "\0" in value:
        return None
    return os.path.normpath(os.path.join(root, value))


# -- reading an index: no engine imports --------------------------------------------------------------


def _index_key(fmt: int, policy_path: str) -> str:
    """What besides the policy decides the answers: the interpreter running us (the default
    target) and ``PYTHONPATH``, as in :mod:`flake8_importpolicy.answers.whole`."""
    return json.dumps([
        fmt, policy_path, os.path.realpath(sys.executable), os.environ.get("PYTHONPATH", ""),
    ])


def _index_location(policy_path: str, data: bytes, index_dir: str, key: str) -> str | None:
    """``<cache-dir>/<index_dir>/<crc32 of key>.json`` (the entry holds the key, so a collision is
    only a miss; no hashlib here, whose import alone costs milliseconds); None if the cache
    directory cannot be known."""
    cache_dir = find_cache_dir(policy_path, data)
    if cache_dir is None:
        return None
    return os.path.join(cache_dir, index_dir, f"{zlib.crc32(key.encode()):08x}.json")


def _code_stamp() -> str:
    """Changes whenever any module of this package (the engine and its subpackages included) or the
    version changes."""
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


def load_index(policy_path: str, index_dir: str, fmt: int, parse: Callable[[Any], _T]) -> _T | None:
    """``parse(entry)`` of the policy's index in ``index_dir`` if it exists, has format ``fmt`` and
    nothing it depends on changed; else None. ``parse`` raising ``OSError``, ``ValueError``,
    ``KeyError``, ``TypeError`` or ``IndexError`` (a malformed entry) also means None."""
    try:
        with open(policy_path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    key = _index_key(fmt, policy_path)
    location = _index_location(policy_path, data, index_dir, key)
    if location is None:
        return None
    try:
        with open(location, "rb") as handle:
            entry = json.loads(handle.read())
        size, mtime, digest = entry["policy"]
        if (
            entry["format"] != fmt
            or entry["key"] != key
            or entry["code"] != _code_stamp()
            or not (len(data) == size and _stamp(policy_path) == mtime or sha256(data) == digest)
        ):
            return None
        for path, stamp in entry["directories"]:
            if _stamp(path) != stamp:
                return None
        for path, size, mtime, digest in entry["files"]:
            if not _unchanged(path, size, mtime, digest):
                return None
        return parse(entry)
    except (OSError, ValueError, KeyError, TypeError, IndexError, RecursionError):
        return None


def _stamp(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _unchanged(path: str, size: int | None, mtime: int | None, digest: str | None) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return size is None
    if st.st_size == size and st.st_mtime_ns == mtime:
        return True
    if digest is None or not stat.S_ISREG(st.st_mode):
        return False  # never open a FIFO or device now where a module was: it could block
    try:
        with open(path, "rb") as handle:
            return sha256(handle.read()) == digest
    except OSError:
        return False


# -- writing an index, after the engine checked the policy (on a miss) ------------------------------


def store_index(
    policy_path: str,
    index_dir: str,
    fmt: int,
    *,
    policy: Policy,
    info: InterpreterInfo,
    report: Report,
    files: Mapping[Path, str],
    directories: Iterable[Path],
    fields: Mapping[str, object],
    real_paths: bool = False,
) -> None:
    """Write the policy's index into ``index_dir`` (best effort, atomically): ``fields`` (the
    adapter's answers) and what they depend on.

    Args:
        policy_path: the policy file, as the quick path will name it.
        policy, info, report: what the engine checked, and with which interpreter.
        files, directories: the engine's
            :meth:`~flake8_importpolicy.analysis.engine.PolicyEngine.find_dependencies`.
        real_paths: record each source file by its real path.

    Nothing is written if a file or the policy changed while it was checked, or if the quick path
    would not find the index where the policy puts its cache.
    """
    unreadable = {  # a file that could not be read: watched by its stat alone
        str(p.path) for p in report.problems
        if p.code.id == "IPL005" and p.path is not None and p.path not in files
    }
    rows = _file_rows(files, unreadable, real_paths)
    if rows is None:
        return  # a file changed while it was checked
    executable = str(policy.settings.interpreter or sys.executable)
    stamped = (*map(str, directories), executable, *info.sys_path)
    try:
        policy_stat = os.stat(policy_path)
        with open(policy_path, "rb") as handle:
            policy_bytes = handle.read()
    except OSError:
        return
    if sha256(policy_bytes) != policy.digest:
        return  # the policy changed while it was checked
    key = _index_key(fmt, policy_path)
    location = _index_location(policy_path, policy_bytes, index_dir, key)
    if location is None or os.path.dirname(os.path.dirname(location)) != str(policy.settings.cache_dir):
        return
    from flake8_importpolicy.answers.jsonfile import write_json_atomic

    write_json_atomic(location, {
        "format": fmt,
        "key": key,
        "policy": [policy_stat.st_size, policy_stat.st_mtime_ns, policy.digest],
        "code": _code_stamp(),
        "files": rows,
        "directories": [[path, _stamp(path)] for path in stamped],
        **fields,
    })


def _file_rows(
    files: Mapping[Path, str], unreadable: Iterable[str], real_paths: bool
) -> list[list[object]] | None:
    """``[path, size, mtime_ns, sha256]`` per file, stat-ed before hashing again so that a later
    change is always seen (None if a file no longer has the bytes that were analysed); an unreadable
    file is ``[path, size, mtime_ns, None]`` (``[path, None, None, None]`` if it does not exist)."""
    named: Callable[[str], str] = os.path.realpath if real_paths else str
    rows: list[list[object]] = []
    for path, digest in sorted(files.items()):
        name = str(path)
        try:
            st = os.stat(name)
            with open(name, "rb") as handle:
                if sha256(handle.read()) != digest:
                    return None
        except OSError:
            return None
        rows.append([named(name), st.st_size, st.st_mtime_ns, digest])
    for name in sorted(unreadable):
        try:
            st = os.stat(name)
            rows.append([named(name), st.st_size, st.st_mtime_ns, None])
        except OSError:
            rows.append([named(name), None, None, None])
    return rows
