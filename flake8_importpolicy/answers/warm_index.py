"""Answer indexes: the answers of a check kept beside the facts cache, read without the engine.

The command line (:mod:`flake8_importpolicy.answers.whole`), the flake8 checker
(:mod:`flake8_importpolicy.answers.per_file`) and the mypy plugin
(:mod:`flake8_importpolicy.answers.by_module`) each keep their answers in an index
(``<cache-dir>/<index dir>/<key>.json``, JSON only, never pickle). Importing the engine costs more
than everything else a warm run does, so an index is read with the standard library alone:

- its location: the policy's ``settings.cache-dir``
  (:func:`~flake8_importpolicy.config.locate.find_cache_dir`), and a key of what besides the policy
  decides the answers (the interpreter running us as started, with its ``sys.prefix`` and flags,
  the environment variables that change an interpreter's ``sys.path``, the caller's options);
- it is valid only while nothing it depends on changed (:mod:`flake8_importpolicy.answers.freshness`):
  the policy's bytes and those of every base file and preset it ``extends``, the baseline's bytes
  (``settings.baseline``: the answers are filtered by it), this package's
  code, every source file the engine read, every directory path
  search listed, the target interpreter and its path entries, and what each source root as the
  policy names it, and each file read through a symbolic link, resolves to (a ``src -> srcA`` link
  re-pointed to ``srcB`` changes the answers, not a file);
- it is written after the engine checked the policy, atomically, and only when nothing changed while
  it was checked.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from flake8_importpolicy.answers.freshness import (
    code_stamp,
    interpreter_paths,
    is_file_unchanged,
    stamp_file,
    stamp_path,
    stamp_paths,
    stamp_read,
)
from flake8_importpolicy.answers.jsonfile import (
    MALFORMED,
    expect_int,
    expect_list,
    expect_str,
    read_json_sealed,
)
from flake8_importpolicy.config.locate import find_cache_dir, has_cache_tag
from flake8_importpolicy.model.environment import interpreter_key
from flake8_importpolicy.model.reading import read_regular_file

if TYPE_CHECKING:
    from pathlib import Path

    from flake8_importpolicy.model.baseline import Baseline
    from flake8_importpolicy.model.facts import SourceRead
    from flake8_importpolicy.model.findings import Report
    from flake8_importpolicy.model.interpreter import InterpreterInfo
    from flake8_importpolicy.model.policy import Policy

__all__ = ["Finding", "load_index", "parse_finding", "store_index"]

_T = TypeVar("_T")


class Finding(NamedTuple):
    """One diagnostic at a line of a file, as a linter shows it (the flake8 checker's and the mypy
    plugin's answers).

    Attributes:
        line: 1-based line of the statement.
        col: 0-based column of the statement.
        code: the code's id (``"IPL001"``).
        text: the message, starting with the code.
    """

    line: int
    col: int
    code: str
    text: str


def parse_finding(row: object) -> Finding:
    """A :class:`Finding` from its row in an index, ``[line, col, code, text]``, checked by type and
    range: a line from 1, a column from 0, a code ``IPL`` and three digits that the text starts with.

    Raises:
        TypeError, ValueError: if ``row`` is malformed.
    """
    line, col, code, text = expect_list(row)
    code, text = expect_str(code), expect_str(text)
    if not (len(code) == 6 and code.startswith("IPL") and code[3:].isdigit() and text.startswith(code)):
        raise ValueError(f"not a finding: {code!r}")
    return Finding(expect_int(line, 1), expect_int(col), code, text)


def _index_key(fmt: int, policy_path: str, options: Sequence[object]) -> str:
    """What besides the policy and the files it stamps decides the answers: the interpreter running
    us (the default target, and the parser of every source) as started, not the base interpreter a
    venv's links to (its path, version, ``sys.prefix``, its flags and the environment it and any
    other target are queried in: :func:`~flake8_importpolicy.model.environment.interpreter_key`),
    and the caller's options."""
    return json.dumps([
        fmt, policy_path, sys.version, sys.prefix, sys.exec_prefix, *interpreter_key(),
        list(options),
    ])


def _index_location(policy_path: str, data: bytes, index_dir: str, key: str) -> str | None:
    """``<cache-dir>/<index_dir>/<crc32 of key>.json`` (the entry holds the key, so a collision is
    only a miss; no hashlib here, whose import alone costs milliseconds); None if the cache
    directory cannot be known."""
    cache_dir = find_cache_dir(policy_path, data)
    if cache_dir is None:
        return None
    return os.path.join(cache_dir, index_dir, f"{zlib.crc32(key.encode()):08x}.json")


def load_index(
    policy_path: str,
    index_dir: str,
    fmt: int,
    parse: Callable[[Any], _T],
    options: Sequence[object] = (),
) -> _T | None:
    """``parse(entry)`` of the policy's index in ``index_dir`` if it exists, has format ``fmt``, was
    made with the same ``options`` and nothing it depends on changed; else None. ``parse`` raising
    one of :data:`~flake8_importpolicy.answers.jsonfile.MALFORMED` (a malformed entry) also means
    None."""
    try:
        data = read_regular_file(policy_path)[1]
    except OSError:
        return None
    key = _index_key(fmt, policy_path, options)
    location = _index_location(policy_path, data, index_dir, key)
    if location is None or not has_cache_tag(os.path.dirname(os.path.dirname(location))):
        return None  # no cache, or not the tool's: the loader says why
    try:
        entry: Any = read_json_sealed(location)
        if (
            entry["format"] != fmt
            or entry["key"] != key
            or entry["code"] != code_stamp()
            or not is_file_unchanged([policy_path, *entry["policy"]])
        ):
            return None
        for row in entry["bases"]:  # the files and presets the policy extends
            if not is_file_unchanged(row):
                return None
        if entry["baseline"] is not None and not is_file_unchanged(entry["baseline"]):
            return None
        for path, stamp in entry["paths"]:
            if stamp_path(path) != stamp:
                return None
        for path, real in entry["links"]:  # a source root or module reached through a link
            if os.path.realpath(path) != real:
                return None
        for row in entry["files"]:
            if not is_file_unchanged(row):
                return None
        return parse(entry)
    except MALFORMED:
        return None


def store_index(
    policy_path: str,
    index_dir: str,
    fmt: int,
    *,
    policy: Policy,
    info: InterpreterInfo,
    report: Report,
    files: Mapping[Path, SourceRead],
    directories: Iterable[Path],
    fields: Mapping[str, object],
    options: Sequence[object] = (),
    real_paths: bool = False,
    baseline: Baseline | None = None,
) -> bool:
    """Write the policy's index into ``index_dir`` (best effort, atomically): ``fields`` (the
    caller's answers) and what they depend on.

    Args:
        policy_path: the policy file, as the quick path will name it.
        policy, info, report: what the engine checked, and with which interpreter.
        files, directories: the engine's
            :meth:`~flake8_importpolicy.analysis.engine.PolicyEngine.find_dependencies`.
        options: the caller's options that decide the answers (part of the key).
        real_paths: record each source file by its real path.
        baseline: the baseline the answers were filtered by (its bytes are a dependency).

    Returns:
        True if written. Nothing is written if a file or the policy changed while it was checked
        (:func:`~flake8_importpolicy.answers.freshness.stamp_file`), or if the quick path would not
        find the index where the policy puts its cache.
    """
    named: Callable[[str], str] = os.path.realpath if real_paths else str
    rows: list[list[object]] = []
    settings = policy.settings
    links = [[str(path), str(root)] for path, root in zip(settings.source_roots_as_written,
                                                          settings.source_roots)]
    links.extend([str(p), real] for p in sorted(files) if (real := os.path.realpath(p)) != str(p))
    for path, read in sorted(files.items()):
        row = stamp_read(str(path), read, shown=named(str(path)))
        if row is None:
            return False  # a file changed while it was checked, or could not be read
        rows.append(row)
    analysed = set(map(str, files))
    unreadable = sorted({  # a file that could not be read: watched by its stat alone
        str(p.path) for p in report.problems
        if p.code.id == "IPL005" and p.path is not None and str(p.path) not in analysed
    })
    rows.extend(row for name in unreadable if (row := stamp_file(name, None, shown=named(name))))
    policy_row = stamp_file(policy_path, policy.file_digest or policy.digest)
    if policy_row is None:
        return False  # the policy changed while it was checked
    bases = [stamp_file(str(source.path), source.digest) for source in policy.sources]
    if any(row is None for row in bases):
        return False  # a base changed while the policy was checked
    baseline_row = None
    if baseline is not None:
        baseline_row = stamp_file(str(baseline.path), baseline.digest)
        if baseline_row is None:
            return False  # the baseline changed while the policy was checked
    paths = (*map(str, directories), *interpreter_paths(info))
    key = _index_key(fmt, policy_path, options)
    try:
        location = _index_location(policy_path, read_regular_file(policy_path)[1], index_dir, key)
    except OSError:
        location = None
    if location is None or os.path.dirname(os.path.dirname(location)) != str(policy.settings.cache_dir):
        return False
    from flake8_importpolicy.answers.cache_dir import ensure_cache_dir
    from flake8_importpolicy.answers.jsonfile import write_json_atomic

    try:
        ensure_cache_dir(policy.settings.cache_dir)
    except OSError:
        return False
    return write_json_atomic(location, {
        "format": fmt,
        "key": key,
        "policy": policy_row[1:],
        "bases": bases,
        "baseline": baseline_row,
        "code": code_stamp(),
        "files": rows,
        "paths": stamp_paths(paths),
        "links": links,
        **fields,
    })
