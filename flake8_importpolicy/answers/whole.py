"""A cache of whole answers: the :class:`~flake8_importpolicy.model.findings.Report` of a policy, reused
while
nothing it depends on has changed.

Editors start a new flake8 process per lint and CI runs many workers; each needs the same report. The
answer is stored as JSON beside the facts cache with what it depends on: every source file parsed
(path, size, mtime and SHA-256 of its bytes) and every directory listed by path search (its mtime, or
that it was missing). Checking that costs a ``stat`` per dependency; a file whose ``stat`` changed but
whose bytes hash the same still counts as unchanged (CI checkouts reset mtimes). Any change, a corrupt
entry, or a different policy, engine or interpreter means a fresh check.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from flake8_importpolicy import codes
from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.analysis.resolve import query_interpreter, read_source
from flake8_importpolicy.answers.facts_cache import (
    ENGINE_FINGERPRINT,
    ensure_cache_dir,
    open_facts_cache,
)
from flake8_importpolicy.answers.jsonfile import write_json_atomic
from flake8_importpolicy.model.facts import Flag
from flake8_importpolicy.model.findings import Problem, Report, Violation
from flake8_importpolicy.model.graph import Hop, HopKind, parse_node
from flake8_importpolicy.model.interpreter import InterpreterInfo
from flake8_importpolicy.model.policy import Policy

__all__ = ["check_policy_cached", "find_interpreter_info", "report_from_json", "report_to_json"]

_FORMAT = 2


def check_policy_cached(
    policy: Policy,
    *,
    interpreter: str | None = None,
    target_versions: Iterable[tuple[int, int]] = (),
    use_cache: bool = True,
    progress: Callable[[int, int, str], None] | None = None,
    jobs: int = 1,
) -> Report:
    """The policy's report, from the answers cache when still valid, else freshly checked.

    Args:
        policy: the loaded policy.
        interpreter: overrides ``settings.interpreter``.
        target_versions: override ``settings.target-versions``.
        use_cache: False bypasses both the answers and the facts cache (``--no-cache``).
        progress: passed to :meth:`PolicyEngine.check` (not called when the answer is cached).
        jobs: processes extracting facts in parallel on a cold run (see :class:`PolicyEngine`).

    Raises:
        flake8_importpolicy.analysis.resolve.InterpreterError: if the interpreter cannot be queried.
    """
    versions = tuple(target_versions)
    if not use_cache:
        with PolicyEngine(
            policy, interpreter=interpreter, target_versions=versions, jobs=jobs
        ) as engine:
            return engine.check(progress)
    exe = policy.settings.interpreter_executable(interpreter)
    info = find_interpreter_info(policy, exe)
    key = _answer_key(policy, info, versions)
    entry = policy.settings.cache_dir / "answers" / f"{key}.json"
    cached = _load_valid(entry)
    if cached is not None:
        return cached
    with PolicyEngine(
        policy,
        target_versions=versions,
        facts_cache=open_facts_cache(policy),
        interpreter_info=info,
        jobs=jobs,
    ) as engine:
        report = engine.check(progress)
    files, directories = engine.find_dependencies()
    _store(entry, report, files, directories)
    return report


# -- interpreter facts, cached on disk ----------------------------------------------------------------


def find_interpreter_info(policy: Policy, executable: str | None) -> InterpreterInfo:
    """The facts of the interpreter ``executable`` (None: the one running us), from the cache in the
    policy's cache directory while the interpreter's and its path entries' stats are unchanged, else
    queried and stored.

    Raises:
        flake8_importpolicy.analysis.resolve.InterpreterError: if the interpreter cannot be queried.
    """
    import sys

    exe = executable or sys.executable
    key = hashlib.sha256(
        f"{os.path.realpath(exe)}\0{os.environ.get('PYTHONPATH', '')}\0{_FORMAT}".encode()
    ).hexdigest()[:32]
    entry = policy.settings.cache_dir / "interpreters" / f"{key}.json"
    try:
        data = json.loads(entry.read_bytes())
        if data["stamp"] == _stamps([exe]) and data["paths"] == _stamps(data["info"]["sys_path"]):
            return InterpreterInfo.from_json(data["info"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        pass
    info = query_interpreter(executable)
    _write_json(entry, {
        "stamp": _stamps([exe]),
        "paths": _stamps(info.sys_path),
        "info": info.to_json(),
    })
    return info


def _stamps(paths: Iterable[str]) -> list[object]:
    out: list[object] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
            continue
        out.append([st.st_mtime_ns, st.st_size])
    return out


# -- answers ---------------------------------------------------------------------------------------


def _answer_key(policy: Policy, info: InterpreterInfo, versions: tuple[tuple[int, int], ...]) -> str:
    material = json.dumps([
        _FORMAT, ENGINE_FINGERPRINT, str(policy.path), policy.digest, info.executable,
        list(info.sys_path), [list(v) for v in versions],
    ])
    return hashlib.sha256(material.encode()).hexdigest()[:32]


def _load_valid(entry: Path) -> Report | None:
    try:
        data = json.loads(entry.read_bytes())
        if data["format"] != _FORMAT:
            return None
        for directory, stamp in data["directories"]:
            if _dir_stamp(Path(directory)) != stamp:
                return None
        for path, size, mtime, digest in data["files"]:
            try:
                st = os.stat(path)
            except OSError:
                return None
            if st.st_size == size and st.st_mtime_ns == mtime:
                continue
            if hashlib.sha256(read_source(Path(path))).hexdigest() != digest:
                return None
        return report_from_json(data["report"])
    except (OSError, ValueError, KeyError, TypeError, IndexError, RecursionError):
        return None


def _dir_stamp(directory: Path) -> int | None:
    try:
        return os.stat(directory).st_mtime_ns
    except OSError:
        return None


def _store(
    entry: Path, report: Report, files: dict[Path, str], directories: tuple[Path, ...]
) -> None:
    rows = []
    for path, digest in sorted(files.items()):
        if not digest:
            return  # a file could not be read: its state is not captured, so do not cache
        try:
            st = os.stat(path)
        except OSError:
            return  # a file vanished while checking: do not cache this answer
        rows.append([str(path), st.st_size, st.st_mtime_ns, digest])
    _write_json(entry, {
        "format": _FORMAT,
        "directories": [[str(d), _dir_stamp(d)] for d in directories],
        "files": rows,
        "report": report_to_json(report),
    })


def _write_json(entry: Path, data: object) -> None:
    """Write atomically into the tagged cache directory; silently skip when it is not usable."""
    try:
        ensure_cache_dir(entry.parent.parent)
    except OSError:
        return
    write_json_atomic(entry, data)


# -- (de)serialising reports -------------------------------------------------------------------------


def _hop_row(hop: Hop) -> list[object]:
    return [hop.module, str(hop.path) if hop.path else None, hop.line, hop.col, str(hop.kind),
            hop.imported, [str(flag) for flag in hop.flags], hop.via]


def _hop(row: list[object]) -> Hop:
    module, path, line, col, kind, imported, flags, via = row
    if not isinstance(flags, list):
        raise TypeError("flags")
    return Hop(parse_node(str(module)), Path(str(path)) if path else None, int(str(line)),
               int(str(col)), HopKind(str(kind)), parse_node(str(imported)),
               tuple(Flag(str(f)) for f in flags), None if via is None else str(via))


def report_to_json(report: Report) -> dict[str, object]:
    """A JSON-able form of a report with absolute paths (inverse: :func:`report_from_json`)."""
    return {
        "violations": [
            [v.code.id, v.light, v.heavy, v.pattern, v.reason, str(v.path), v.line, v.col,
             str(v.kind), list(v.also), [_hop_row(h) for h in v.chain]]
            for v in report.violations
        ],
        "problems": [
            [p.code.id, [list(pair) for pair in p.arguments], str(p.path) if p.path else None,
             p.line]
            for p in report.problems
        ],
        "suppressed": report.suppressed,
        "light_modules": list(report.light_modules),
    }


def report_from_json(data: dict[str, object]) -> Report:
    """Rebuild a report from :func:`report_to_json` output.

    Raises:
        KeyError, TypeError, ValueError, IndexError: if ``data`` is malformed.
    """
    violations = []
    for row in data["violations"]:  # type: ignore[attr-defined]
        code, light, heavy, pattern, reason, path, line, col, kind, also, chain = row
        violations.append(Violation(
            light=str(light), heavy=parse_node(str(heavy)), pattern=str(pattern),
            reason=str(reason), path=Path(path), line=int(line), col=int(col), kind=HopKind(kind),
            also=tuple(str(a) for a in also), chain=tuple(_hop(h) for h in chain),
            code=codes.BY_ID[code],
        ))
    problems = [
        Problem(codes.BY_ID[code], tuple((str(k), str(v)) for k, v in arguments),
                Path(path) if path else None, None if line is None else int(line))
        for code, arguments, path, line in data["problems"]  # type: ignore[attr-defined]
    ]
    return Report(
        violations=tuple(violations),
        problems=tuple(problems),
        suppressed=int(data["suppressed"]),  # type: ignore[call-overload]
        light_modules=tuple(data["light_modules"]),  # type: ignore[arg-type]
    )
