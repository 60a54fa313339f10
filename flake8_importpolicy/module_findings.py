"""Findings by module, for the mypy plugin: answered without importing the engine when nothing changed.

mypy asks on every run, for every module, whether the plugin's data for it changed; on a warm run
importing the engine would cost more than everything else the plugin does. So the answer is kept in a
small index beside the facts cache (``<cache-dir>/mypy/<key>.json``, JSON only), read with the
standard library alone. The index records the findings of every module that has any, a digest of them
per module, the policy's bytes (size, mtime, SHA-256), a stamp of this package's code, the interpreter
running us and ``PYTHONPATH``, and what the report depends on: every source file parsed (path, size,
mtime, SHA-256) and every directory listed by path search, with the interpreter's path entries. Checking
it costs a ``stat`` per dependency; a file whose ``stat`` changed but whose bytes hash the same still
counts as unchanged. Any change means a fresh check with the engine (the facts cache keeps that cheap),
which rewrites the index atomically.

What a module shows:

- IPL001 in the light module, at its first-hop statement, with the text of
  :func:`flake8_importpolicy.report.format_violation_message` (what the flake8 checker prints);
- IPL003 and IPL004 (stale light pattern, unused ``[[ignore]]``) in the first light module (by name),
  at line 1, followed by the policy location ``(policy.toml:LINE)``: mypy can only show findings in
  the modules it checks. IPL002 and IPL005 are not included (the first would go stale on warm runs,
  as intermediate modules are not in the digest; mypy reports the second's syntax errors itself).

This module imports neither flake8 nor mypy, and the engine only on a miss.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from flake8_importpolicy import __version__
from flake8_importpolicy.jsonfile import write_json_atomic

if TYPE_CHECKING:
    from flake8_importpolicy.check import Report
    from flake8_importpolicy.policy import Policy

__all__ = [
    "Finding",
    "find_light_matcher",
    "ModuleFindings",
    "PolicyUnusable",
    "find_module_findings",
    "find_module_findings_quickly",
    "find_policy_quickly",
    "start_index_build",
]

_FORMAT = 1
_INDEX_DIR = "mypy"
_DEFAULT_CACHE_DIR = ".importpolicy_cache"
_PROBLEM_CODES = ("IPL003", "IPL004")

Finding = tuple[int, int, str]
"""``(line, 0-based column, message)``; the message starts with the code."""


class ModuleFindings(NamedTuple):
    """What every module shows.

    Attributes:
        findings: module name -> its findings, sorted by position; only modules with findings.
        digests: module name -> a digest of its findings, the package version, the engine's code and
            the policy's bytes (the same modules as ``findings``).
        files: light module name -> the file the engine analysed (modules with IPL001 findings).
    """

    findings: dict[str, list[Finding]]
    digests: dict[str, str]
    files: dict[str, str]


class PolicyUnusable(Exception):
    """The policy cannot be used; ``error`` says why.

    Attributes:
        error: a :class:`~flake8_importpolicy.policy.PolicyError` (the policy cannot be loaded), an
            :class:`~flake8_importpolicy.resolve.InterpreterError` (its interpreter cannot be queried),
            or a :class:`ValueError` (no light pattern matches a module, while the policy has problems
            to show: there is no module to show them in).
    """

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def find_policy_quickly(start: str) -> str | None:
    """:func:`flake8_importpolicy.policy.find_policy` from the directory ``start``, as a string; the
    policy module is imported only for a ``pyproject.toml`` that mentions ``importpolicy``."""
    current = os.path.abspath(start)
    while True:
        candidate = os.path.join(current, "policy.toml")
        if os.path.isfile(candidate):
            return os.path.realpath(candidate)
        pyproject = os.path.join(current, "pyproject.toml")
        try:
            with open(pyproject, "rb") as handle:
                mentions = b"importpolicy" in handle.read()
        except OSError:
            mentions = False
        if mentions:
            from flake8_importpolicy.policy import find_policy

            found = find_policy(Path(current))
            return str(found) if found is not None else None
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def find_module_findings(policy_path: str) -> ModuleFindings:
    """The findings by module of the policy at ``policy_path`` (from the index when still valid).

    Raises:
        PolicyUnusable: the policy cannot be loaded or its interpreter queried, or it has problems to
            show but no light module.
    """
    found = _load_index(policy_path)
    if found is not None:
        return found
    from flake8_importpolicy.policy import PolicyError
    from flake8_importpolicy.resolve import InterpreterError

    try:
        return _build_index(policy_path)
    except (PolicyError, InterpreterError) as err:
        raise PolicyUnusable(err) from None


def find_module_findings_quickly(policy_path: str) -> ModuleFindings | None:
    """The findings from the index alone (the engine is not imported); None if it is missing or stale."""
    return _load_index(policy_path)


def find_light_matcher(policy_path: str) -> Callable[[str], bool]:
    """Whether a module name matches a ``[light]`` pattern: only those modules can show findings.

    Loads the policy (the policy module, not the engine), so it also reports a broken policy early.

    Raises:
        PolicyUnusable: if the policy cannot be loaded.
    """
    from flake8_importpolicy.policy import PolicyError, load_policy

    try:
        patterns = tuple(rule.pattern for rule in load_policy(Path(policy_path)).light)
    except PolicyError as err:
        raise PolicyUnusable(err) from None
    return lambda module: any(pattern.matches_exactly(module) for pattern in patterns)


def start_index_build(policy_path: str) -> subprocess.Popen[bytes]:
    """Start ``python -m flake8_importpolicy.module_findings POLICY``, which writes the index.

    A caller with other work to do meanwhile (mypy parsing the project) starts this, and later waits for
    the process and calls :func:`find_module_findings`, which then reads the index; a helper that fails
    (a broken policy) leaves no index, and :func:`find_module_findings` reports why.
    """
    return subprocess.Popen(
        [sys.executable, "-m", "flake8_importpolicy.module_findings", policy_path],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


# -- the quick path: the index, standard library only ---------------------------------------------


def _key(policy_path: str) -> str:
    """What besides the policy decides the answers (as in :mod:`flake8_importpolicy.answers`)."""
    return json.dumps([_FORMAT, policy_path, os.path.realpath(sys.executable),
                       os.environ.get("PYTHONPATH", "")])


def _location(policy_path: str, data: bytes, key: str) -> str | None:
    """``<cache-dir>/mypy/<crc32 of key>.json``; None if the cache directory cannot be known."""
    root = os.path.dirname(policy_path)
    if b"cache-dir" in data or b"\\u" in data or b"\\U" in data:
        import tomllib

        try:
            table: object = tomllib.loads(data.decode("utf-8-sig"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
            return None
        keys = ("tool", "importpolicy", "settings") if policy_path.endswith("pyproject.toml") else (
            "settings",)
        for name in keys:
            table = table.get(name, {}) if isinstance(table, dict) else None
        value = table.get("cache-dir", _DEFAULT_CACHE_DIR) if isinstance(table, dict) else None
        if not isinstance(value, str) or not value or "\0" in value:
            return None
        cache_dir = os.path.normpath(os.path.join(root, value))
    else:
        cache_dir = os.path.join(root, _DEFAULT_CACHE_DIR)
    return os.path.join(cache_dir, _INDEX_DIR, f"{zlib.crc32(key.encode()):08x}.json")


def _code_stamp() -> str:
    """Changes whenever a module of this package (the engine included) or the version changes."""
    rows = [__version__]
    try:
        entries = sorted(os.scandir(os.path.dirname(os.path.abspath(__file__))), key=lambda e: e.name)
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


def _load_index(policy_path: str) -> ModuleFindings | None:
    """The index if it exists and nothing it depends on changed, else None."""
    try:
        with open(policy_path, "rb") as handle:
            data = handle.read()
        key = _key(policy_path)
        location = _location(policy_path, data, key)
        if location is None:
            return None
        with open(location, "rb") as handle:
            entry = json.loads(handle.read())
        size, mtime, digest = entry["policy"]
        if (entry["format"] != _FORMAT or entry["key"] != key or entry["code"] != _code_stamp()
                or not (len(data) == size and _mtime(policy_path) == mtime or _sha256(data) == digest)):
            return None
        if any(_mtime(path) != stamp for path, stamp in entry["directories"]):
            return None
        if not all(_unchanged(path, size, mtime, digest) for path, size, mtime, digest in entry["files"]):
            return None
        findings = {str(m): [(int(line), int(col), str(text)) for line, col, text in rows]
                    for m, rows in entry["findings"].items()}
        return ModuleFindings(findings, dict(entry["digests"]), dict(entry["files_of"]))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def _mtime(path: str) -> int | None:
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
    try:
        with open(path, "rb") as handle:
            return digest is not None and _sha256(handle.read()) == digest
    except OSError:
        return False


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


# -- the slow path: the engine --------------------------------------------------------------------


def _build_index(policy_path: str) -> ModuleFindings:
    """Check the policy with the engine, store the index (best effort) and return the findings."""
    from flake8_importpolicy.answers import _interpreter_info
    from flake8_importpolicy.cache import ENGINE_FINGERPRINT, open_facts_cache
    from flake8_importpolicy.check import PolicyEngine
    from flake8_importpolicy.policy import load_policy

    policy = load_policy(Path(policy_path))
    try:
        with open(policy_path, "rb") as handle:
            data = handle.read()
        policy_stat = os.stat(policy_path)
    except OSError:
        data, policy_stat = b"", None
    executable = str(policy.settings.interpreter) if policy.settings.interpreter else None
    info = _interpreter_info(policy, executable)
    engine = PolicyEngine(policy, facts_cache=open_facts_cache(policy), interpreter_info=info)
    report = engine.check()
    findings, files_of = _translate(policy, report)
    digests = {
        module: _sha256(json.dumps([__version__, ENGINE_FINGERPRINT, policy.digest, rows]).encode())[:32]
        for module, rows in findings.items()
    }
    result = ModuleFindings(findings, digests, files_of)
    files, directories = engine.find_dependencies()
    unreadable = {  # a file that could not be read: watched by its stat alone
        str(p.path) for p in report.problems if p.code == "IPL005" and p.path and p.path not in files}
    rows = _file_rows(files, unreadable)
    key = _key(policy_path)
    location = _location(policy_path, data, key)
    if rows is None or policy_stat is None or _sha256(data) != policy.digest:
        return result  # something changed while it was checked: answer, but do not store
    if location is None or os.path.dirname(os.path.dirname(location)) != os.path.normpath(
            policy.settings.cache_dir):
        return result  # the quick path would not find it where the policy puts its cache
    stamped = (*map(str, directories), executable or sys.executable, *info.sys_path)
    write_json_atomic(location, {
        "format": _FORMAT,
        "key": key,
        "policy": [policy_stat.st_size, policy_stat.st_mtime_ns, policy.digest],
        "code": _code_stamp(),
        "files": rows,
        "directories": [[path, _mtime(path)] for path in stamped],
        "findings": findings,
        "digests": digests,
        "files_of": files_of,
    })
    return result


def _translate(policy: Policy, report: Report) -> tuple[dict[str, list[Finding]], dict[str, str]]:
    """The report's IPL001, IPL003 and IPL004 by module, and the file of each IPL001 module."""
    from flake8_importpolicy.report import format_violation_message

    root = os.path.join(policy.root, "")

    def relpath(path: Path) -> str:  # Policy.relpath, fast for the absolute paths under the root
        text = str(path)
        return text[len(root):].replace(os.sep, "/") if text.startswith(root) else policy.relpath(path)

    found: dict[str, list[Finding]] = {}
    files_of: dict[str, str] = {}
    for violation in report.violations:
        found.setdefault(violation.light, []).append(
            (violation.line, violation.col, format_violation_message(violation, relpath)))
        files_of[violation.light] = str(violation.path)
    problems = [p for p in report.problems if p.code in _PROBLEM_CODES]
    if problems and not report.light_modules:
        raise PolicyUnusable(ValueError("no [light] pattern matches a module; check settings.source-roots"))
    for problem in problems:
        where = (relpath(problem.path) if problem.path else "<policy>") + (
            f":{problem.line}" if problem.line else "")
        found.setdefault(report.light_modules[0], []).append(
            (1, 0, f"{problem.code} {problem.message} ({where})"))
    return {module: sorted(rows) for module, rows in found.items()}, files_of


def _file_rows(files: dict[Path, str], unreadable: set[str]) -> list[list[object]] | None:
    """``[path, size, mtime_ns, sha256]`` per file, stat-ed before hashing again so that a later
    change is always seen (None if a file no longer has the bytes that were analysed); an unreadable
    file is ``[path, size, mtime_ns, None]`` (``[path, None, None, None]`` if it does not exist)."""
    rows: list[list[object]] = []
    for path, digest in sorted(files.items()):
        try:
            st = os.stat(path)
            with open(path, "rb") as handle:
                if _sha256(handle.read()) != digest:
                    return None
        except OSError:
            return None
        rows.append([str(path), st.st_size, st.st_mtime_ns, digest])
    for name in sorted(unreadable):
        try:
            st = os.stat(name)
            rows.append([name, st.st_size, st.st_mtime_ns, None])
        except OSError:
            rows.append([name, None, None, None])
    return rows


if __name__ == "__main__":  # the helper of start_index_build
    try:
        find_module_findings(sys.argv[1])
    except PolicyUnusable:
        sys.exit(1)
