"""Per-file answers: the IPL001/IPL002 findings one source file shows, fast enough to ask per file.

Editors start a new flake8 process for every lint, so each process needs the answer for one file, and
importing the engine alone costs more than the budget. This module answers from a small per-file index
written beside the facts cache (``<cache-dir>/per-file/<key>.json``) and reads it without importing the
engine (standard library only):

- the policy is found from the file's path, walking up (``policy.toml``, else a ``pyproject.toml``
  with ``[tool.importpolicy]``; :func:`flake8_importpolicy.policy.find_policy` decides whenever the
  quick test is unsure);
- the index records the findings of every file that has any, and what they depend on: the policy
  file, a stamp of this package's code, the interpreter's path entries, every source file parsed
  (path, size, mtime, SHA-256) and every directory listed by path search. Checking it costs a
  ``stat`` per dependency (``hashlib`` is not even imported); a file whose ``stat`` changed but whose
  bytes hash the same still counts as unchanged. Any change means a fresh check with the engine (the
  facts cache keeps that cheap), which rewrites the index atomically (JSON, never pickle);
- a buffer that differs from the file on disk (an editor's unsaved edits) is checked with the engine,
  the buffer standing in for the file — unless the file is outside every light module's closure, where
  its content cannot change any answer.

IPL001 is reported at the light module's first-hop statement; IPL002 at every other hop of a reported
chain (the chains of :func:`flake8_importpolicy.check.check_policy`, not every path), naming the light
module(s) the hop makes heavy. This module imports neither flake8 nor mypy.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tokenize
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from flake8_importpolicy import __version__

if TYPE_CHECKING:
    from flake8_importpolicy.check import FactsCache, Report
    from flake8_importpolicy.policy import Policy
    from flake8_importpolicy.resolve import InterpreterInfo

__all__ = ["Finding", "PerFileChecker", "PolicyUnusable", "find_findings_by_file"]

_FORMAT = 1
_INDEX_DIR = "per-file"
_POLICY = "policy.toml"
_PYPROJECT = "pyproject.toml"
_DEFAULT_CACHE_DIR = ".importpolicy_cache"


class Finding(NamedTuple):
    """One diagnostic in one file.

    Attributes:
        line: 1-based line of the statement.
        col: 0-based column of the statement.
        code: ``"IPL001"`` or ``"IPL002"``.
        text: the message, starting with the code (what flake8 prints).
    """

    line: int
    col: int
    code: str
    text: str


class PolicyUnusable(Exception):
    """The policy cannot be loaded or its interpreter queried; ``str()`` is the complete message
    (from :class:`~flake8_importpolicy.policy.PolicyError` or
    :class:`~flake8_importpolicy.resolve.InterpreterError`)."""


# -- findings from a report ---------------------------------------------------------------------------


def find_findings_by_file(
    report: Report, relpath: Callable[[Path], str]
) -> dict[str, tuple[Finding, ...]]:
    """The findings of every file a report touches, keyed by the file's real path.

    IPL001 at each violation's first-hop statement in the light module's file; IPL002 at each later
    hop of its chain, in the importing module's file. Hops of several chains at the same statement
    that reach the same forbidden module (same reason) make one IPL002 naming every light module,
    with the chain of the first light module. Each file's findings are sorted by position.
    """
    from flake8_importpolicy import codes
    from flake8_importpolicy.report import format_chain_compact, format_violation_message

    found: dict[str, list[Finding]] = {}
    hops: dict[tuple[str, int, int, str, str], list[tuple[str, str]]] = {}
    for violation in report.violations:
        text = format_violation_message(violation, relpath)
        found.setdefault(os.path.realpath(violation.path), []).append(
            Finding(violation.line, violation.col, codes.IPL001.id, text)
        )
        chain = format_chain_compact(violation.chain, relpath)
        for hop in violation.chain[1:]:
            if hop.path is not None:
                key = (os.path.realpath(hop.path), hop.line, hop.col, violation.heavy,
                       violation.reason)
                hops.setdefault(key, []).append((violation.light, chain))
    for (path, line, col, heavy, reason), lights in hops.items():
        lights.sort()
        names = ", ".join(sorted({light for light, _ in lights}))
        head = codes.IPL002.format(lights=names, heavy=heavy, reason=reason)
        found.setdefault(path, []).append(
            Finding(line, col, codes.IPL002.id, f"{head}: {lights[0][1]}")
        )
    return {path: tuple(sorted(items)) for path, items in found.items()}


# -- the per-process checker --------------------------------------------------------------------------


class _Index:
    """A loaded per-file index (see the module docstring)."""

    __slots__ = ("prefixes", "files", "findings")

    def __init__(
        self, roots: tuple[str, ...], files: frozenset[str], findings: dict[str, tuple[Finding, ...]]
    ) -> None:
        self.prefixes = tuple(root.rstrip(os.sep) + os.sep for root in roots)
        self.files = files
        self.findings = findings

    def covers(self, path: str) -> bool:
        """True if ``path`` lies under a source root."""
        return path.startswith(self.prefixes)


class PerFileChecker:
    """Answers "what does this file show" for files of any number of policies; one per process.

    Args:
        policy: an explicit policy file for every file (else each file's policy is found by walking
            up from its directory).

    Everything found is kept for the life of the object (the policy of each directory, the index of
    each policy), so a process checking many files validates each index once.
    """

    def __init__(self, *, policy: Path | None = None) -> None:
        self._explicit = os.path.abspath(policy) if policy is not None else None
        self._policies: dict[str, str | None] = {}
        self._indexes: dict[str, _Index] = {}

    def find_findings(self, path: Path | str, text: str | None = None) -> tuple[Finding, ...]:
        """The IPL001/IPL002 findings of the file ``path``, sorted by position.

        Args:
            path: the file (relative paths are relative to the working directory).
            text: the file's content as the caller sees it (an editor buffer); None reads the disk.

        Returns:
            No findings for a file under no policy or outside its source roots.

        Raises:
            PolicyUnusable: the policy is broken or its interpreter cannot be queried.
        """
        real = os.path.realpath(os.path.abspath(path))
        policy = self._policy_for(os.path.dirname(real))
        if policy is None:
            return ()
        index = self._indexes.get(policy)
        if index is None:
            index = self._indexes[policy] = _load_index(policy) or _build_index(policy)
        if not index.covers(real):
            return ()
        if text is not None and real in index.files and not _same_text(real, text):
            return self._check_buffer(policy, real, text)
        return index.findings.get(real, ())

    def _policy_for(self, directory: str) -> str | None:
        """The policy file for the files in ``directory`` (see :func:`_find_policy_quickly`)."""
        if self._explicit is not None:
            return self._explicit
        if directory in self._policies:
            return self._policies[directory]
        found = _find_policy_quickly(directory)
        policy = found[0] if found is not None else None
        if found is not None and not found[1] and found[0] not in self._indexes:
            index = _load_index(found[0])  # only a policy that was loaded has an index
            if index is not None:
                self._indexes[found[0]] = index
            else:
                from flake8_importpolicy.policy import find_policy

                exact = find_policy(Path(directory))
                policy = str(exact) if exact is not None else None
        self._policies[directory] = policy
        return policy

    def _check_buffer(self, policy_path: str, real: str, text: str) -> tuple[Finding, ...]:
        from flake8_importpolicy.check import PolicyEngine

        policy, info = _load_policy(policy_path)
        engine = PolicyEngine(
            policy,
            overrides={Path(real): _encode(text)},
            facts_cache=_facts_cache(policy),
            interpreter_info=info,
        )
        return find_findings_by_file(engine.check(), policy.relpath).get(real, ())


# -- the quick path: no engine imports ----------------------------------------------------------------


def _find_policy_quickly(directory: str) -> tuple[str, bool] | None:
    """``(policy file, certain)`` for files in ``directory``, or None when there is none.

    Same walk as :func:`~flake8_importpolicy.policy.find_policy`; a ``pyproject.toml`` that mentions
    ``importpolicy`` is a candidate that is not certain (it may only mention it in a comment): the
    caller trusts it only when a valid index exists for it, else asks ``find_policy``.
    """
    current = directory
    while True:
        candidate = os.path.join(current, _POLICY)
        if os.path.isfile(candidate):
            return candidate, True
        pyproject = os.path.join(current, _PYPROJECT)
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


def _cache_dir_quickly(policy_path: str, data: bytes) -> str | None:
    """``settings.cache-dir`` of the policy with these bytes, as the policy module computes it;
    None if the file cannot be read that way (the engine then reports why)."""
    root = os.path.dirname(policy_path)
    if b"cache-dir" not in data and b"\\u" not in data and b"\\U" not in data:
        return os.path.normpath(os.path.join(root, _DEFAULT_CACHE_DIR))
    import tomllib

    try:
        table: object = tomllib.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return None
    keys = ("tool", "importpolicy", "settings") if os.path.basename(policy_path) == _PYPROJECT \
        else ("settings",)
    for key in keys:
        table = table.get(key, {}) if isinstance(table, dict) else None
    if not isinstance(table, dict):
        return None
    value = table.get("cache-dir", _DEFAULT_CACHE_DIR)
    if not isinstance(value, str) or not value or "\0" in value:
        return None
    return os.path.normpath(os.path.join(root, value))


def _index_key(policy_path: str) -> str:
    """What besides the policy decides the answers: the interpreter running us (the default
    target) and ``PYTHONPATH``, as in :mod:`flake8_importpolicy.answers`."""
    return json.dumps([
        _FORMAT, policy_path, os.path.realpath(sys.executable), os.environ.get("PYTHONPATH", ""),
    ])


def _index_location(policy_path: str, data: bytes, key: str) -> str | None:
    """``<cache-dir>/per-file/<crc32 of key>.json`` (the entry holds the key, so a collision is
    only a miss; no hashlib here, whose import alone costs milliseconds)."""
    cache_dir = _cache_dir_quickly(policy_path, data)
    if cache_dir is None:
        return None
    return os.path.join(cache_dir, _INDEX_DIR, f"{zlib.crc32(key.encode()):08x}.json")


def _code_stamp() -> str:
    """Changes whenever any module of this package (the engine included) or the version changes."""
    rows = [__version__]
    package = os.path.dirname(os.path.abspath(__file__))
    try:
        entries = sorted(os.scandir(package), key=lambda entry: entry.name)
    except OSError:
        return ""
    for entry in entries:
        if entry.name.endswith(".py"):
            try:
                st = entry.stat()
            except OSError:
                continue
            rows.append(f"{entry.name}:{st.st_size}:{st.st_mtime_ns}")
    return ";".join(rows)


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _load_index(policy_path: str) -> _Index | None:
    """The policy's index if it exists and nothing it depends on changed, else None."""
    try:
        with open(policy_path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    key = _index_key(policy_path)
    location = _index_location(policy_path, data, key)
    if location is None:
        return None
    try:
        with open(location, "rb") as handle:
            entry = json.loads(handle.read())
        size, mtime, digest = entry["policy"]
        if (
            entry["format"] != _FORMAT
            or entry["key"] != key
            or entry["code"] != _code_stamp()
            or not (len(data) == size and _stamp(policy_path) == mtime or _sha256(data) == digest)
        ):
            return None
        for path, stamp in entry["directories"]:
            if _stamp(path) != stamp:
                return None
        for path, size, mtime, digest in entry["files"]:
            if not _unchanged(path, size, mtime, digest):
                return None
        findings: dict[str, list[Finding]] = {}
        for path, line, col, code, text in entry["findings"]:
            findings.setdefault(path, []).append(Finding(int(line), int(col), str(code), str(text)))
        return _Index(
            tuple(str(root) for root in entry["roots"]),
            frozenset(str(row[0]) for row in entry["files"]),
            {path: tuple(items) for path, items in findings.items()},
        )
    except (OSError, ValueError, KeyError, TypeError, IndexError):
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
    if digest is None:
        return False
    try:
        with open(path, "rb") as handle:
            return _sha256(handle.read()) == digest
    except OSError:
        return False


def _same_text(path: str, text: str) -> bool:
    """True if the file at ``path`` decodes to ``text`` the way flake8 reads files: the declared
    encoding, else Latin-1 (flake8's fallback); newlines and a BOM normalised."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        disk = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        disk = data.decode("latin-1")
    return _normalise(disk) == _normalise(text)


def _normalise(text: str) -> str:
    return text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _encode(text: str) -> bytes:
    """The buffer as bytes in the encoding its coding cookie declares (UTF-8 by default)."""
    data = text.encode("utf-8", "surrogateescape")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        if encoding not in ("utf-8", "utf-8-sig"):
            return text.encode(encoding)
    except (SyntaxError, UnicodeError, LookupError):
        pass
    return data


# -- the slow path: the engine ------------------------------------------------------------------------


def _load_policy(policy_path: str) -> tuple[Policy, InterpreterInfo]:
    """Load the policy and its interpreter's facts (cached on disk), as :class:`PolicyUnusable`."""
    from flake8_importpolicy.answers import _interpreter_info
    from flake8_importpolicy.policy import PolicyError, load_policy
    from flake8_importpolicy.resolve import InterpreterError

    try:
        policy = load_policy(Path(policy_path))
        exe = str(policy.settings.interpreter) if policy.settings.interpreter else None
        return policy, _interpreter_info(policy, exe)
    except (PolicyError, InterpreterError) as exc:
        raise PolicyUnusable(str(exc)) from None


def _facts_cache(policy: Policy) -> FactsCache:
    from flake8_importpolicy.cache import open_facts_cache

    return open_facts_cache(policy)


def _build_index(policy_path: str) -> _Index:
    """Check the policy with the engine, store the index (best effort) and return it."""
    from flake8_importpolicy.check import PolicyEngine

    policy, info = _load_policy(policy_path)
    engine = PolicyEngine(policy, facts_cache=_facts_cache(policy), interpreter_info=info)
    report = engine.check()
    files, directories = engine.find_dependencies()
    findings = find_findings_by_file(report, policy.relpath)
    roots = tuple(os.path.realpath(root) for root in policy.settings.source_roots)
    unreadable = {  # a file that could not be read: watch it by stat alone
        str(p.path) for p in report.problems
        if p.code == "IPL005" and p.path is not None and p.path not in files
    }
    rows = _file_rows(files, unreadable)
    index = _Index(roots, frozenset(os.path.realpath(path) for path in files), findings)
    if rows is None:
        return index  # a file changed while it was checked: answer, but do not store
    executable = str(policy.settings.interpreter or sys.executable)
    stamps = [[path, _stamp(path)] for path in (executable, *info.sys_path)]
    try:
        policy_stat = os.stat(policy_path)
        with open(policy_path, "rb") as handle:
            policy_bytes = handle.read()
    except OSError:
        return index
    if _sha256(policy_bytes) != policy.digest:
        return index  # the policy changed while it was checked
    key = _index_key(policy_path)
    data = {
        "format": _FORMAT,
        "key": key,
        "policy": [policy_stat.st_size, policy_stat.st_mtime_ns, policy.digest],
        "code": _code_stamp(),
        "roots": list(roots),
        "files": rows,
        "directories": [[str(d), _stamp(str(d))] for d in directories] + stamps,
        "findings": [
            [path, item.line, item.col, item.code, item.text]
            for path, items in sorted(findings.items()) for item in items
        ],
    }
    location = _index_location(policy_path, policy_bytes, key)
    if location is not None and os.path.dirname(os.path.dirname(location)) == str(
        policy.settings.cache_dir
    ):
        _write_json(location, data)
    return index


def _file_rows(files: dict[Path, str], unreadable: Iterable[str]) -> list[list[object]] | None:
    """``[path, size, mtime_ns, sha256]`` per file, stat-ed before hashing again so that a later
    change is always seen; None if a file no longer has the bytes that were analysed."""
    rows: list[list[object]] = []
    for path, digest in sorted(files.items()):
        name = str(path)
        try:
            st = os.stat(name)
            with open(name, "rb") as handle:
                if _sha256(handle.read()) != digest:
                    return None
        except OSError:
            return None
        rows.append([os.path.realpath(name), st.st_size, st.st_mtime_ns, digest])
    for name in sorted(unreadable):
        try:
            st = os.stat(name)
            rows.append([os.path.realpath(name), st.st_size, st.st_mtime_ns, None])
        except OSError:
            rows.append([os.path.realpath(name), None, None, None])
    return rows


def _write_json(location: str, data: object) -> None:
    """Write atomically; silently skip when the directory is not usable."""
    from flake8_importpolicy.jsonfile import write_json_atomic  # only on a cache miss

    write_json_atomic(location, data)
