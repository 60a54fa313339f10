"""Computing answers with the engine, when no cached answer is fresh: the one slow path of the command
line, the flake8 checker and the mypy plugin.

:func:`run_engine` checks a policy with the facts cache and the cached interpreter facts
(:func:`find_interpreter_info`), and returns the report with what it depends on, for the caller's
answer index (:mod:`flake8_importpolicy.answers.warm_index`).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.analysis.resolve import query_interpreter
from flake8_importpolicy.answers.cache_dir import ensure_cache_dir
from flake8_importpolicy.answers.facts_cache import open_facts_cache
from flake8_importpolicy.answers.freshness import interpreter_paths, stamp_paths
from flake8_importpolicy.answers.jsonfile import MALFORMED, read_json_sealed, write_json_atomic
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.model.environment import interpreter_key
from flake8_importpolicy.model.facts import SourceRead
from flake8_importpolicy.model.findings import Report
from flake8_importpolicy.model.interpreter import InterpreterInfo
from flake8_importpolicy.model.policy import Policy

if TYPE_CHECKING:
    from flake8_importpolicy.model.baseline import Baseline

__all__ = ["EngineAnswer", "find_interpreter_info", "run_engine", "run_engine_for"]

_INTERPRETERS_FORMAT = 4


@dataclass(frozen=True)
class EngineAnswer:
    """A report the engine computed, and what it depends on.

    Attributes:
        policy: the policy checked.
        info: the interpreter's facts it was checked with.
        report: the report.
        files: every source file the engine read, with what was read (an empty digest for a file
            that could not be read or came from an editor's buffer).
        directories: every directory path search listed (including ones that did not exist).
        baseline: the baseline the report was filtered by (``settings.baseline``), or None.
    """

    policy: Policy
    info: InterpreterInfo
    report: Report
    files: Mapping[Path, SourceRead]
    directories: tuple[Path, ...]
    baseline: Baseline | None = None


def run_engine(
    policy: Policy,
    *,
    interpreter: str | None = None,
    target_versions: Iterable[tuple[int, int]] = (),
    overrides: Mapping[Path, bytes] | None = None,
    use_cache: bool = True,
    jobs: int = 1,
    progress: Callable[[int, int, str], None] | None = None,
    baseline: str | None = None,
    reading: Callable[[str], None] | None = None,
) -> EngineAnswer:
    """Check ``policy`` with the engine, and filter the report by its baseline
    (:func:`~flake8_importpolicy.config.baseline.load_policy_baseline`;
    :func:`~flake8_importpolicy.model.baseline.apply_baseline`).

    Args:
        policy: the loaded policy.
        interpreter: overrides ``settings.interpreter``.
        target_versions: override ``settings.target-versions``.
        overrides: source to use instead of a file on disk (an editor's unsaved buffer).
        use_cache: False: neither the facts cache nor the cached interpreter facts (``--no-cache``).
        jobs: processes extracting facts in parallel on a cold run.
        progress, reading: passed to :meth:`~flake8_importpolicy.analysis.engine.PolicyEngine.check`.
        baseline: None: the policy's ``settings.baseline``; a path (``--baseline FILE``) that file
            instead; ``""`` none.

    Raises:
        flake8_importpolicy.model.errors.BaselineError: if the baseline cannot be read or is not
            valid (read before anything is checked).
        flake8_importpolicy.model.errors.InterpreterError: if the interpreter cannot be queried.
    """
    accepted = None
    if baseline or (baseline is None and policy.settings.baseline):  # most policies have none
        from flake8_importpolicy.config.baseline import load_policy_baseline

        accepted = load_policy_baseline(policy, baseline)
    executable = policy.settings.interpreter_executable(interpreter)
    info = find_interpreter_info(policy, executable) if use_cache else None
    with PolicyEngine(
        policy,
        interpreter=executable,
        target_versions=tuple(target_versions),
        overrides=overrides,
        facts_cache=open_facts_cache(policy) if use_cache else None,
        interpreter_info=info,
        jobs=jobs,
    ) as engine:
        report = engine.check(progress, reading)
    files, directories = engine.find_dependencies()
    if accepted is not None:
        from flake8_importpolicy.model.baseline import apply_baseline

        report = apply_baseline(report, accepted)
    return EngineAnswer(policy, engine.interpreter, report, files, directories, accepted)


def run_engine_for(policy_path: str, *, overrides: Mapping[Path, bytes] | None = None) -> EngineAnswer:
    """:func:`run_engine` for the policy file at ``policy_path`` (loaded first), with the defaults
    but ``overrides`` (an editor's unsaved buffer).

    Raises:
        flake8_importpolicy.model.errors.PolicyError: if the policy (or its baseline) cannot be
            loaded.
        flake8_importpolicy.model.errors.InterpreterError: if the interpreter cannot be queried.
    """
    return run_engine(load_policy(Path(policy_path)), overrides=overrides)


def find_interpreter_info(policy: Policy, executable: str) -> InterpreterInfo:
    """The facts of the interpreter ``executable``, from the policy's cache directory while what
    decides them is unchanged (the entry's key: the interpreter as located, its flags and the
    environment it is queried in, :func:`~flake8_importpolicy.model.environment.interpreter_key`;
    its stamps: :func:`~flake8_importpolicy.answers.freshness.interpreter_paths`), else queried and
    stored.

    Raises:
        flake8_importpolicy.model.errors.InterpreterError: if the interpreter cannot be queried.
    """
    key = json.dumps([_INTERPRETERS_FORMAT, *interpreter_key(executable)])
    entry = policy.settings.cache_dir / "interpreters" / f"{zlib.crc32(key.encode()):08x}.json"
    try:
        data: Any = read_json_sealed(entry)
        if data["key"] == key:
            cached = InterpreterInfo.from_json(data["info"])
            if data["paths"] == stamp_paths(interpreter_paths(cached)):
                return cached
    except MALFORMED:
        pass
    info = query_interpreter(executable)
    try:
        ensure_cache_dir(policy.settings.cache_dir)
    except OSError:
        return info
    write_json_atomic(entry, {
        "key": key,
        "paths": stamp_paths(interpreter_paths(info)),
        "info": info.to_json(),
    })
    return info
