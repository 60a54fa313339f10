"""Runtime verification (``importpolicy verify``): the runtime proof of the static check.

For each light module of a policy, a fresh interpreter (the policy's ``interpreter``, or
``--python``) imports the module with the policy's source roots first on ``sys.path`` and nothing
else added from the caller's environment (it runs with ``-E``; ``PYTHON*`` variables are dropped).
Inside it, the stdlib-only script ``recorder.py`` (run by path, Python 3.9+) records every module
whose code *executes*, with the importing module and the importing frame's file and line, and
writes the events to a file as JSON lines (never to the subprocess's stdout, which the imported
code owns). This module runs those subprocesses, in parallel and with a timeout, and compares what
executed with the static prediction of :class:`~flake8_importpolicy.analysis.engine.PolicyEngine`, as sets
of modules:

- a forbidden module that executed and was predicted is a failure ("forbidden module executed");
- a forbidden module that executed but was not predicted is a failure of its own kind
  ("static missed"), shown with its runtime chain so the miss can be understood;
- a predicted forbidden module that did not execute is listed as "not observed" (conditional,
  guarded or platform-specific) and does not fail;
- a false or raising ``after-import`` expression, an import that raised, a timeout and a dead
  interpreter are failures too, each a clear per-module result.

"Executed" means the module's code started to run: a module that is only in ``sys.modules``
(``lazy_loader.load()`` and ``importlib.util.LazyLoader`` put unexecuted modules there) does not
count. Only each module's *first* importer is observable at runtime, so runtime chains are one
chain per module, rendered like static chains (hops of kind ``runtime``; the verifier's own import
of the light module shows as ``parent-package`` hops for the light module's parent packages).

verify runs project code by design; ``check``, ``why``, flake8 and mypy never do.

This module imports neither flake8, mypy nor pytest.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Final, Literal

from flake8_importpolicy.analysis.engine import FactsCache, PolicyEngine
from flake8_importpolicy.analysis.graph import PARENT_PACKAGE, Hop
from flake8_importpolicy.model.patterns import ModulePattern, parse_pattern
from flake8_importpolicy.config.load import HeavyRule, IgnoreRule, LightRule, Policy
from flake8_importpolicy.output.text import _chain_lines, hop_to_json
from flake8_importpolicy.analysis.resolve import InterpreterError, query_interpreter

__all__ = [
    "DEFAULT_TIMEOUT",
    "RUNTIME",
    "AfterImportCheck",
    "ExecutedModule",
    "ForbiddenExecution",
    "LightPlan",
    "LightResult",
    "Outcome",
    "UnknownLightModule",
    "RuntimeRun",
    "Verifier",
    "VerifyReport",
    "assert_import_light",
    "format_light_result_text",
    "format_verify_json",
    "format_verify_text",
    "judge_run",
    "light_result_to_json",
    "recorder_path",
    "run_import",
    "runtime_chain",
    "verify_import",
    "verify_policy",
]

DEFAULT_TIMEOUT: Final = 60.0
"""Seconds one light module's subprocess may run before it is killed."""

RUNTIME: Final = "runtime"
"""The :attr:`Hop.kind` of a hop observed at runtime."""

RECORDER_NAME: Final = "recorder.py"
_STDERR_TAIL_LINES: Final = 8

Outcome = Literal["imported", "raised", "timeout", "crashed"]
"""How a light module's subprocess ended: the import succeeded, raised, ran out of time, or the
interpreter died (or the recorder could not run)."""

PathFormatter = Callable[[Path], str]
Progress = Callable[[int, int, "LightResult"], None]
"""Called after each light module with ``(done, total, result)``."""


class UnknownLightModule(ValueError):
    """A module asked for is not a light module of the policy (a usage error)."""


def recorder_path() -> Path:
    """The recorder script shipped in this package (run by path, never imported)."""
    return Path(__file__).with_name(RECORDER_NAME)


# --------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class ExecutedModule:
    """A module whose code started to run during the import of a light module.

    Attributes:
        name: the dotted module name.
        path: the file that ran (``None`` for builtin, frozen and namespace modules).
        importer: the module of the importing frame, or ``None`` when the verifier's own
            ``import light`` made it run (the light module itself and its parent packages) or when
            it was not observed (``unrecorded`` in ``flags``).
        at: the importing frame's file (for code compiled from a string, the nearest real file's
            frame, with ``exec`` in ``flags``); ``None`` when unknown.
        line: the importing frame's 1-based line (0 when unknown).
        flags: sorted subset of ``exec`` (imported by code compiled from a string) and
            ``unrecorded`` (loaded without the recorder seeing it: by a finder placed ahead of it,
            or put into ``sys.modules`` by hand; assumed executed, without an importer).
        parent: the module whose import-time code was running when this one started (differs from
            ``importer`` when a function of another module did the import), or ``None``.
        parent_at: ``parent``'s frame file at that moment; parent_line: its line (0 if unknown).
        error: ``"Type: message"`` if the module's code raised, else ``None``.
    """

    name: str
    path: Path | None
    importer: str | None
    at: Path | None
    line: int
    flags: tuple[str, ...] = ()
    parent: str | None = None
    parent_at: Path | None = None
    parent_line: int = 0
    error: str | None = None


@dataclass(frozen=True)
class AfterImportCheck:
    """One ``after-import`` expression, evaluated in the subprocess after the import.

    Attributes:
        expression: the Python expression as written in the policy.
        passed: True if it evaluated to a true value.
        error: why it failed (``is False``, ``raised NameError: ...``), or ``None`` if it passed.
    """

    expression: str
    passed: bool
    error: str | None


@dataclass(frozen=True)
class RuntimeRun:
    """What one fresh interpreter did when importing a module (no policy judgement yet).

    Attributes:
        module: the module imported.
        python: the interpreter that ran (its ``sys.executable`` when the recorder started, else
            the command's path).
        version: the interpreter's ``sys.version_info[:3]`` (empty if the recorder never started).
        outcome: ``imported``, ``raised``, ``timeout`` or ``crashed``.
        executed: every module whose code started to run, in the order it started.
        running: for ``timeout``/``crashed``, the modules whose code had started and not finished,
            outermost first (the last one is where it hung or died).
        error: for anything but ``imported``, what happened (``RuntimeError: boom``, ``timed out
            after 60 s``, ``killed by signal SIGSEGV``), else ``None``.
        error_at: the innermost non-importlib file of a raised import's traceback; error_line:
            its 1-based line (0 if unknown).
        after_import: the ``after-import`` checks, in policy order (empty unless imported).
        seconds: wall time of the subprocess, in seconds.
        returncode: the subprocess's exit status (negative: killed by that signal), or ``None``.
        stderr: the last lines of the subprocess's stderr (for a crash or a timeout).
    """

    module: str
    python: str
    version: tuple[int, ...]
    outcome: Outcome
    executed: tuple[ExecutedModule, ...]
    running: tuple[str, ...] = ()
    error: str | None = None
    error_at: Path | None = None
    error_line: int = 0
    after_import: tuple[AfterImportCheck, ...] = ()
    seconds: float = 0.0
    returncode: int | None = None
    stderr: str = ""


@dataclass(frozen=True)
class ForbiddenExecution:
    """A forbidden module that executed when a light module was imported.

    Attributes:
        module: the forbidden module.
        pattern: the ``[heavy]``/``forbid`` pattern it matched; reason: why it is heavy.
        chain: the runtime chain from the light module to it (empty for ``unrecorded`` modules).
        predicted: True if the static check predicted it, False if it missed it, ``None`` when no
            static comparison was made (:func:`verify_import`).
        flags: the executed module's flags (``unrecorded``).
        hint: for a static miss, why the static check did not see the chain, when it can be told
            (an import run by ``exec``, a module the static check does not follow, an import
            with no static edge), else ``None``.
    """

    module: str
    pattern: str
    reason: str
    chain: tuple[Hop, ...]
    predicted: bool | None
    flags: tuple[str, ...] = ()
    hint: str | None = None


@dataclass(frozen=True)
class LightResult:
    """The verdict for one light module.

    Attributes:
        light: the light module.
        run: what the subprocess did.
        forbidden: forbidden modules that executed and were predicted statically (with no static
            side: every forbidden module that executed first, not through another forbidden one).
        static_missed: forbidden modules that executed, first (not through another forbidden
            module), and were not predicted statically.
        not_observed: forbidden modules predicted statically that did not execute, sorted.

    Like the static check's ``also``, ``forbidden`` and ``static_missed`` hold only the outermost
    modules: ``unittest.mock`` is left out when ``unittest`` is reported too, and a module counts as
    predicted when it or one of its parent packages is.
        accepted: forbidden modules that executed only through an ``[[ignore]]``-d import, sorted.
        static_checked: True if the static prediction was compared.
    """

    light: str
    run: RuntimeRun
    forbidden: tuple[ForbiddenExecution, ...]
    static_missed: tuple[ForbiddenExecution, ...]
    not_observed: tuple[str, ...]
    accepted: tuple[str, ...] = ()
    static_checked: bool = True

    @property
    def failed_checks(self) -> tuple[AfterImportCheck, ...]:
        """The ``after-import`` expressions that were false or raised."""
        return tuple(check for check in self.run.after_import if not check.passed)

    @property
    def failed(self) -> bool:
        """True if anything failed: a forbidden module executed (predicted or not), an
        ``after-import`` expression, or the import itself (raised, timed out, crashed)."""
        return bool(
            self.run.outcome != "imported"
            or self.forbidden
            or self.static_missed
            or self.failed_checks
        )

    def summary(self) -> str:
        """One line: what failed (``forbidden module executed: torch; import raised ...``), or
        ``ok``."""
        parts = []
        if self.forbidden:
            names = ", ".join(f.module for f in self.forbidden)
            parts.append(f"forbidden module executed: {names}")
        if self.static_missed:
            parts.append(f"static missed: {', '.join(f.module for f in self.static_missed)}")
        if self.run.outcome == "raised":
            parts.append(f"import raised {self.run.error}")
        elif self.run.outcome != "imported":
            parts.append(str(self.run.error))
        parts.extend(f"after-import failed: {c.expression}" for c in self.failed_checks)
        return "; ".join(parts) if parts else "ok"


@dataclass(frozen=True)
class VerifyReport:
    """The result of :func:`verify_policy`.

    Attributes:
        results: one per light module, sorted by module name.
        problems: policy problems found while planning (a wildcard light pattern that matches no
            module), one message each.
        python: the interpreter used; version: its ``sys.version_info[:3]`` as the recorder
            reported it (``(major, minor)`` if no subprocess reported it).
        seconds: wall time of the whole verification, in seconds.
    """

    results: tuple[LightResult, ...]
    problems: tuple[str, ...]
    python: str
    version: tuple[int, ...]
    seconds: float

    @property
    def exit_code(self) -> int:
        """1 if any light module failed or there is a problem, else 0."""
        return 1 if self.problems or any(r.failed for r in self.results) else 0


# --------------------------------------------------------------------------------------------
# Running one import


def run_import(
    module: str,
    *,
    python: str | None = None,
    source_roots: Sequence[Path] = (),
    after_import: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    cwd: Path | None = None,
) -> RuntimeRun:
    """Import ``module`` in a fresh interpreter under the recorder and collect what executed.

    Args:
        module: dotted name of the module to import.
        python: the interpreter (default: the one running this code).
        source_roots: directories put first on the subprocess's ``sys.path`` (in order).
        after_import: Python expressions evaluated after a successful import.
        timeout: seconds before the subprocess (and its process group) is killed.
        cwd: working directory of the subprocess (default: this process's).

    Returns:
        The :class:`RuntimeRun`. A failing, hanging or dying import is a result, not an exception.

    Raises:
        InterpreterError: if the interpreter cannot be started at all.
    """
    exe = python or sys.executable
    argv = [exe, "-E", str(recorder_path()), "", module]
    for root in source_roots:
        argv += ["--root", str(root)]
    for expression in after_import:
        argv += ["--after", expression]
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="importpolicy-verify-") as tmp:
        events_path = Path(tmp) / "events.jsonl"
        stderr_path = Path(tmp) / "stderr.txt"
        events_path.touch()
        argv[3] = str(events_path)
        with open(stderr_path, "wb") as stderr:
            try:
                process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    cwd=cwd,
                    env=env,
                    start_new_session=os.name == "posix",
                )
            except OSError as exc:
                raise InterpreterError(f"cannot run interpreter {exe}: {exc}") from exc
            timed_out = False
            try:
                returncode: int | None = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill(process)
                returncode = process.wait()
            except BaseException:
                _kill(process)
                process.wait()
                raise
        seconds = time.perf_counter() - started
        events = _read_events(events_path)
        stderr_tail = _tail(stderr_path)
    return _build_run(module, exe, events, timed_out, timeout, returncode, seconds, stderr_tail)


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kill the subprocess and, on POSIX, every process of its session."""
    if os.name == "posix":
        try:
            os.killpg(process.pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            pass
    try:
        process.kill()
    except ProcessLookupError:
        pass


def _read_events(path: Path) -> list[dict[str, object]]:
    """The JSON-lines events; a partial last line (a killed writer) is dropped."""
    events: list[dict[str, object]] = []
    try:
        data = path.read_bytes()
    except OSError:
        return events
    for raw in data.splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _tail(path: Path) -> str:
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-_STDERR_TAIL_LINES:])


def _str(event: dict[str, object], key: str) -> str | None:
    value = event.get(key)
    return value if isinstance(value, str) else None


def _int(event: dict[str, object], key: str) -> int:
    value = event.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _build_run(
    module: str,
    exe: str,
    events: list[dict[str, object]],
    timed_out: bool,
    timeout: float,
    returncode: int | None,
    seconds: float,
    stderr: str,
) -> RuntimeRun:
    """Turn the recorder's events and the exit status into a :class:`RuntimeRun`."""
    python = exe
    version: tuple[int, ...] = ()
    order: list[str] = []
    records: dict[str, dict[str, object]] = {}
    errors: dict[str, str] = {}
    finished: set[str] = set()
    unrecorded: list[ExecutedModule] = []
    imported: dict[str, object] | None = None
    checks: list[AfterImportCheck] = []
    finish = False
    for event in events:
        kind = event.get("e")
        name = _str(event, "m")
        if kind == "start":
            python = _str(event, "executable") or exe
            raw_version = event.get("version")
            if isinstance(raw_version, list):
                version = tuple(v for v in raw_version if isinstance(v, int))
        elif kind == "exec" and name is not None and name not in records:
            records[name] = event
            order.append(name)
        elif kind == "done" and name is not None:
            finished.add(name)
        elif kind == "fail" and name is not None:
            finished.add(name)
            errors[name] = _str(event, "error") or "raised"
        elif kind == "imported":
            imported = event
        elif kind == "unrecorded":
            modules = event.get("modules")
            for item in modules if isinstance(modules, list) else ():
                if isinstance(item, list) and item and isinstance(item[0], str):
                    file = item[1] if len(item) > 1 and isinstance(item[1], str) else None
                    unrecorded.append(
                        ExecutedModule(item[0], _path(file), None, None, 0, ("unrecorded",))
                    )
        elif kind == "after":
            expression = _str(event, "expr") or ""
            ok = event.get("ok") is True
            checks.append(AfterImportCheck(expression, ok, None if ok else _str(event, "error")))
        elif kind == "finish":
            finish = True
    executed = [
        ExecutedModule(
            name=name,
            path=_path(_str(records[name], "file")),
            importer=_str(records[name], "by"),
            at=_path(_str(records[name], "at")),
            line=_int(records[name], "line"),
            flags=tuple(sorted(
                v for v in _list(records[name].get("via")) if isinstance(v, str)
            )),
            parent=_str(records[name], "parent"),
            parent_at=_path(_str(records[name], "pat")),
            parent_line=_int(records[name], "pline"),
            error=errors.get(name),
        )
        for name in order
    ]
    executed.extend(unrecorded)
    running = tuple(name for name in order if name not in finished)
    outcome: Outcome = "imported"
    error: str | None = None
    error_at: Path | None = None
    error_line = 0
    if timed_out:
        outcome = "timeout"
        where = f" while executing {running[-1]}" if running else ""
        error = f"timed out after {timeout:g} s{where}"
        checks = []
    elif imported is None or not finish:
        outcome = "crashed"
        if not version:
            error = "the recorder did not start"
        elif returncode is not None and returncode < 0:
            error = f"the interpreter was killed by signal {_signal_name(-returncode)}"
        else:
            error = f"the interpreter exited with status {returncode}"
        if imported is None and running:
            error += f" while executing {running[-1]}"
        elif imported is not None:
            error += " after the import, while evaluating after-import expressions"
    elif imported.get("ok") is not True:
        outcome = "raised"
        error = _str(imported, "error") or "the import raised"
        error_at = _path(_str(imported, "at"))
        error_line = _int(imported, "line")
    return RuntimeRun(
        module=module,
        python=python,
        version=version,
        outcome=outcome,
        executed=tuple(executed),
        running=running if outcome in ("timeout", "crashed") else (),
        error=error,
        error_at=error_at,
        error_line=error_line,
        after_import=tuple(checks),
        seconds=seconds,
        returncode=returncode,
        stderr=stderr,
    )


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


# --------------------------------------------------------------------------------------------
# Judging a run


def runtime_chain(run: RuntimeRun, module: str) -> tuple[Hop, ...]:
    """The runtime chain from ``run.module`` to ``module``, following each module's first importer.

    Each hop is ``Hop(importer, importing file, line, 0, "runtime", imported, flags)``; the light
    module's parent packages, which the verifier's own ``import`` ran, are ``parent-package`` hops
    from the light module's file, line 1 (as in static chains). When the importing frame belongs to
    a module that did not run during this import (a function of a module loaded at start-up, such
    as ``codecs``), the hop comes from the module whose import-time code was running, at its line,
    with flag ``via <that module>``. The chain is shorter than the path to the light module when an
    importer is unknown; empty for the light module itself and for ``unrecorded`` modules.
    """
    light = run.module
    by_name = {record.name: record for record in run.executed}
    light_path = by_name[light].path if light in by_name else None
    hops: list[Hop] = []
    current = module
    seen = {module}
    while current != light:
        record = by_name.get(current)
        if record is None or "unrecorded" in record.flags:
            break
        if record.importer is None:
            if light.startswith(current + "."):
                hops.append(Hop(light, light_path, 1, 0, PARENT_PACKAGE, current))
            break
        importer, at, line, flags = record.importer, record.at, record.line, record.flags
        known = importer == light or importer in by_name
        parent = record.parent
        if not known and parent is not None and (parent == light or parent in by_name):
            flags = (*flags, f"via {importer}")
            importer, at, line = parent, record.parent_at, record.parent_line
        hops.append(Hop(importer, at, line, 0, RUNTIME, current, tuple(sorted(flags))))
        if importer in seen:
            break
        seen.add(importer)
        current = importer
    return tuple(reversed(hops))


def judge_run(
    run: RuntimeRun,
    forbidden: Callable[[str], HeavyRule | None],
    predicted: frozenset[str] | None,
    ignores: Sequence[IgnoreRule] = (),
) -> LightResult:
    """Compare what executed with the policy and the static prediction.

    Args:
        run: the subprocess's observation.
        forbidden: the forbid rule a module name matches (``allow`` already applied), or None.
        predicted: the forbidden modules the static check predicts (the union of each violation's
            ``heavy`` and ``also``), or ``None`` for no static comparison.
        ignores: the policy's ``[[ignore]]`` rules; a forbidden module whose runtime chain uses an
            ignored import is accepted.

    Returns:
        The :class:`LightResult`. A forbidden module counts when its code started to run (not when
        it merely is in ``sys.modules``). "First" forbidden modules are those whose runtime chain
        passes through no other forbidden module; only those can be "static missed", since the
        static check stops at the first forbidden module of each chain. A module counts as
        predicted when it or a parent package is predicted, and submodules of a reported module
        are left out (the static check's ``also`` lists only outermost modules too).
    """
    light = run.module
    confirmed: list[ForbiddenExecution] = []
    missed: list[ForbiddenExecution] = []
    accepted: set[str] = set()
    executed_forbidden: set[str] = set()
    executed_names = {record.name for record in run.executed}
    for record in run.executed:
        if record.name == light:
            continue
        rule = forbidden(record.name)
        if rule is None:
            continue
        chain = runtime_chain(run, record.name)
        if any(ignore.matches(hop.module, hop.imported) for hop in chain for ignore in ignores):
            accepted.add(record.name)
            continue
        executed_forbidden.add(record.name)
        if "unrecorded" in record.flags:
            first = not any(
                parent in executed_names and forbidden(parent) is not None
                for parent in _parents(record.name)
            )
        else:
            first = not any(
                hop.module != light and forbidden(hop.module) is not None for hop in chain
            )
        covered = predicted is not None and _covered(record.name, predicted)
        finding = ForbiddenExecution(
            module=record.name,
            pattern=rule.pattern.text,
            reason=rule.reason,
            chain=chain,
            predicted=None if predicted is None else covered,
            flags=tuple(f for f in record.flags if f == "unrecorded"),
        )
        if covered or (predicted is None and first):
            confirmed.append(finding)
        elif first:
            missed.append(finding)
    reported = {finding.module for finding in (*confirmed, *missed)}
    not_observed = () if predicted is None else tuple(sorted(predicted - executed_forbidden))
    return LightResult(
        light=light,
        run=run,
        forbidden=_outermost(confirmed, reported),
        static_missed=_outermost(missed, reported),
        not_observed=tuple(name for name in not_observed if name not in accepted),
        accepted=tuple(sorted(accepted)),
        static_checked=predicted is not None,
    )


def _parents(name: str) -> list[str]:
    """The dotted parent packages of ``name``, outermost first (``a``, ``a.b`` for ``a.b.c``)."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _covered(name: str, predicted: frozenset[str]) -> bool:
    """True if ``name`` or one of its parent packages is predicted (the static check lists only
    the outermost forbidden modules: ``unittest`` stands for ``unittest.mock`` too)."""
    return name in predicted or any(parent in predicted for parent in _parents(name))


def _outermost(
    findings: Sequence[ForbiddenExecution], reported: set[str]
) -> tuple[ForbiddenExecution, ...]:
    """``findings`` without the submodules of another reported forbidden module, as the static
    check's ``also``."""
    return tuple(
        finding for finding in findings
        if not any(parent in reported for parent in _parents(finding.module))
    )


# --------------------------------------------------------------------------------------------
# Verifying a policy


@dataclass(frozen=True)
class LightPlan:
    """One light module to verify, with every light rule that names it.

    Attributes:
        module: the light module.
        rules: the ``[light]`` rules whose pattern matches it exactly, in policy order.
        predicted: the forbidden modules the static check predicts for it (the union, over the
            rules, of each violation's ``heavy`` and ``also``).
    """

    module: str
    rules: tuple[LightRule, ...]
    predicted: frozenset[str]

    @property
    def after_import(self) -> tuple[str, ...]:
        """Every rule's ``after-import`` expressions, in order, without repeats."""
        return tuple(dict.fromkeys(e for rule in self.rules for e in rule.after_import))

    def forbidden_rule(self, module: str) -> HeavyRule | None:
        """The first rule's forbid rule that ``module`` matches (``allow`` applied), or None."""
        for rule in self.rules:
            heavy = rule.forbidden_rule(module)
            if heavy is not None:
                return heavy
        return None


class Verifier:
    """Plans and runs the verification of a policy's light modules (used by the CLI and the pytest
    plugin).

    Args:
        policy: the loaded policy.
        python: the interpreter to run (default: the policy's ``interpreter``, else this one).
        timeout: seconds per light module (must be > 0).
        facts_cache: an optional on-disk facts cache for the static side.

    The static prediction is made for the interpreter's own version and the policy's platform.

    Raises:
        InterpreterError: if the interpreter cannot be queried.
        ValueError: if ``timeout`` is not positive.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        python: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        facts_cache: FactsCache | None = None,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.policy = policy
        interpreter = policy.settings.interpreter
        self.python = python or (str(interpreter) if interpreter is not None else sys.executable)
        self.timeout = timeout
        info = query_interpreter(self.python)
        self.version = info.version
        self._lock = threading.Lock()
        self.engine = PolicyEngine(
            policy,
            interpreter=self.python,
            target_versions=(info.version,),
            facts_cache=facts_cache,
            interpreter_info=info,
        )

    def plan(self) -> tuple[tuple[LightPlan, ...], tuple[str, ...]]:
        """The light modules to verify (sorted) and the planning problems.

        A non-wildcard light pattern is verified even if the static index cannot find it (the
        runtime decides); a wildcard pattern matching nothing is a problem.
        """
        rules_by_module: dict[str, list[LightRule]] = {}
        problems: list[str] = []
        for rule in self.policy.light:
            modules = self.engine.find_light_modules(rule)
            if not modules and not rule.pattern.is_wildcard:
                modules = (rule.pattern.text,)
            if not modules:
                problems.append(f"light pattern {rule.pattern.text!r} matches no module")
            for module in modules:
                rules_by_module.setdefault(module, []).append(rule)
        plans = []
        for module in sorted(rules_by_module):
            rules = tuple(rules_by_module[module])
            predicted: set[str] = set()
            for rule in rules:
                violations, _problems = self.engine.check_light_module(module, rule)
                for violation in violations:
                    predicted.add(violation.heavy)
                    predicted.update(violation.also)
            plans.append(LightPlan(module, rules, frozenset(predicted)))
        return tuple(plans), tuple(problems)

    def verify(self, plan: LightPlan) -> LightResult:
        """Import ``plan.module`` in a fresh interpreter and judge it (thread-safe).

        Raises:
            InterpreterError: if the interpreter cannot be started.
        """
        run = run_import(
            plan.module,
            python=self.python,
            source_roots=self.policy.settings.source_roots,
            after_import=plan.after_import,
            timeout=self.timeout,
            cwd=self.policy.root,
        )
        result = judge_run(run, plan.forbidden_rule, plan.predicted, self.policy.ignores)
        if not result.static_missed:
            return result
        with self._lock:  # the engine's caches are not thread-safe
            missed = tuple(
                replace(finding, hint=self.explain_miss(plan, finding.chain))
                for finding in result.static_missed
            )
        return replace(result, static_missed=missed)

    def explain_miss(self, plan: LightPlan, chain: Sequence[Hop]) -> str | None:
        """Why the static check did not predict a runtime chain, when it can be told.

        The first hop that explains it wins: an import made by code compiled from a string, an
        importer the static check does not follow (``settings.external``) or cannot read (an
        extension module), or a hop with no static import edge.
        """
        engine = self.engine
        patterns = [heavy.pattern for rule in plan.rules for heavy in rule.forbid]
        expand = engine.make_expander(plan.forbidden_rule, patterns)
        external = self.policy.settings.external
        for hop in chain:
            if hop.kind == PARENT_PACKAGE:
                continue
            where = f"{hop.module} -> {hop.imported}"
            if "exec" in hop.flags:
                return f"{where} is made by code compiled from a string (exec/eval), which static " \
                    "analysis cannot see"
            resolved = engine.index.resolve_module(hop.module)
            if resolved.kind == "extension":
                return f"{hop.module} is an extension module: its imports are unknown statically"
            if hop.module != plan.module and not expand(hop.module):
                return (
                    f"the static check does not follow {resolved.origin} module {hop.module} "
                    f'(settings.external = "{external}"; "follow" follows it)'
                )
            edges = {edge.imported for edge in engine.graph.find_import_time_edges(hop.module)}
            if hop.imported not in edges:
                detail = next((f for f in hop.flags if f.startswith("via ")), None)
                how = f" (imported {detail}, a function called at import time)" if detail else ""
                return (
                    f"no static import edge {where}{how}: a dynamic import, a name built at "
                    "runtime, or code the static rules do not model"
                )
        return None


def verify_policy(
    policy: Policy,
    *,
    python: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    jobs: int | None = None,
    modules: Iterable[str] = (),
    facts_cache: FactsCache | None = None,
    progress: Progress | None = None,
) -> VerifyReport:
    """Verify every light module of ``policy`` at runtime, in parallel.

    Args:
        policy: the loaded policy.
        python: the interpreter (default: the policy's ``interpreter``, else this one).
        timeout: seconds per light module.
        jobs: subprocesses at a time (default and maximum: the CPU count).
        modules: only these light modules (default: all).
        facts_cache: an optional on-disk facts cache for the static side.
        progress: called after each light module with ``(done, total, result)``.

    Raises:
        InterpreterError: if the interpreter cannot be queried or started.
        UnknownLightModule: if ``modules`` names a module that is not a light module of the
            policy.
        ValueError: if ``timeout`` is not positive.
    """
    from concurrent.futures import ThreadPoolExecutor, as_completed

    started = time.perf_counter()
    verifier = Verifier(policy, python=python, timeout=timeout, facts_cache=facts_cache)
    plans, problems = verifier.plan()
    wanted = list(dict.fromkeys(modules))
    if wanted:
        known = {plan.module for plan in plans}
        unknown = [name for name in wanted if name not in known]
        if unknown:
            raise UnknownLightModule(
                f"not a light module of {policy.relpath(policy.path)}: {', '.join(unknown)}"
            )
        plans = tuple(plan for plan in plans if plan.module in wanted)
        problems = ()
    cpus = os.cpu_count() or 1
    workers = max(1, min(jobs or cpus, cpus, len(plans) or 1))
    results: list[LightResult] = []
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="importpolicy") as pool:
        futures = [pool.submit(verifier.verify, plan) for plan in plans]
        try:
            for future in as_completed(futures):
                result = future.result()
                results.append(result)
                if progress is not None:
                    progress(len(results), len(plans), result)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    reported = next((r.run.version for r in results if r.run.version), verifier.version)
    return VerifyReport(
        results=tuple(sorted(results, key=lambda r: r.light)),
        problems=problems,
        python=verifier.python,
        version=reported,
        seconds=time.perf_counter() - started,
    )


# --------------------------------------------------------------------------------------------
# Hand-written tests


def verify_import(
    module: str,
    forbid: Iterable[str | HeavyRule],
    *,
    allow: Iterable[str] = (),
    source_roots: Sequence[Path] = (),
    python: str | None = None,
    after_import: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    cwd: Path | None = None,
) -> LightResult:
    """Import ``module`` in a fresh interpreter and report which ``forbid`` patterns executed.

    No policy file and no static comparison: ``forbidden`` lists every module matching a
    ``forbid`` entry that executed first, not through another forbidden module. An entry is a
    module pattern (``*``/``**`` wildcards, submodules included) or a policy's
    :class:`~flake8_importpolicy.config.load.HeavyRule` (whose reason is then shown).

    Raises:
        flake8_importpolicy.model.patterns.PatternError: if a pattern is malformed.
        InterpreterError: if the interpreter cannot be started.
    """
    rules = tuple(
        p if isinstance(p, HeavyRule) else HeavyRule(parse_pattern(p), f"forbidden by {p!r}")
        for p in forbid
    )
    allowed: tuple[ModulePattern, ...] = tuple(parse_pattern(p) for p in allow)

    def forbidden(name: str) -> HeavyRule | None:
        if any(pattern.matches(name) for pattern in allowed):
            return None
        return next((rule for rule in rules if rule.pattern.matches(name)), None)

    run = run_import(
        module,
        python=python,
        source_roots=source_roots,
        after_import=after_import,
        timeout=timeout,
        cwd=cwd,
    )
    return judge_run(run, forbidden, None)


def assert_import_light(
    module: str,
    forbid: Iterable[str | HeavyRule],
    *,
    allow: Iterable[str] = (),
    source_roots: Sequence[Path] = (),
    python: str | None = None,
    after_import: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    cwd: Path | None = None,
) -> LightResult:
    """Assert that importing ``module`` in a fresh interpreter executes none of ``forbid``.

    Arguments as for :func:`verify_import`.

    Returns:
        The :class:`LightResult` when the assertion holds.

    Raises:
        AssertionError: if a forbidden module executed, an ``after-import`` expression failed,
            or the import raised, timed out or crashed; the message has the runtime chains.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function
    result = verify_import(
        module,
        forbid,
        allow=allow,
        source_roots=source_roots,
        python=python,
        after_import=after_import,
        timeout=timeout,
        cwd=cwd,
    )
    if result.failed:
        roots = [Path(root) for root in source_roots] or [cwd or Path.cwd()]
        raise AssertionError(format_light_result_text(result, _relative_to(roots)))
    return result


def _relative_to(roots: Sequence[Path]) -> PathFormatter:
    resolved = [root.resolve() for root in roots]

    def relpath(path: Path) -> str:
        if not path.is_absolute():
            return str(path)
        for root in resolved:
            try:
                return path.relative_to(root).as_posix()
            except ValueError:
                continue
        return str(path)

    return relpath


# --------------------------------------------------------------------------------------------
# Rendering


def _shown(relpath: PathFormatter) -> PathFormatter:
    """``relpath`` for real files; pseudo-files such as ``<frozen codecs>`` as they are."""

    def show(path: Path) -> str:
        return relpath(path) if path.is_absolute() else str(path)

    return show


def _chain_text(chain: Sequence[Hop], relpath: PathFormatter, indent: str) -> list[str]:
    # The same per-hop format as the static report.
    return [indent + line.lstrip() for line in _chain_lines(chain, relpath)]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def format_light_result_text(result: LightResult, relpath: PathFormatter) -> str:
    """One light module's block: a status line, then one entry per finding with its chain.

    ``relpath`` turns absolute paths into the strings shown (e.g. :meth:`Policy.relpath`).
    """
    show = _shown(relpath)
    run = result.run
    status = "FAIL" if result.failed else "ok  "
    executed = _plural(len(run.executed), "module")
    out = [f"{status} {result.light} ({run.seconds:.2f}s, {executed} executed)"]
    for finding in result.forbidden:
        out.append(f"  forbidden module executed: {finding.module} ({finding.reason})")
        out.extend(_finding_chain(finding, show))
    for finding in result.static_missed:
        out.append(
            f"  static missed: {finding.module} executed but the static check did not predict it "
            f"({finding.reason})"
        )
        out.extend(_finding_chain(finding, show))
    if run.outcome == "raised":
        where = ""
        if run.error_at is not None:
            where = f" at {show(run.error_at)}:{run.error_line}"
        out.append(f"  import raised {run.error}{where}")
    elif run.outcome in ("timeout", "crashed"):
        out.append(f"  {run.error}")
        stack = [name for name in run.running]
        if stack:
            out.append(f"    running: {' -> '.join(stack)}")
        if run.stderr:
            out.extend(f"    stderr: {line}" for line in run.stderr.splitlines())
    for check in result.failed_checks:
        out.append(f"  after-import failed: {json.dumps(check.expression)} {check.error}")
    for name in result.not_observed:
        out.append(
            f"  not observed: {name} (predicted statically, did not execute here: conditional, "
            "guarded or platform-specific)"
        )
    for name in result.accepted:
        out.append(f"  accepted: {name} executed through an [[ignore]]-d import")
    return "\n".join(out) + "\n"


def _finding_chain(finding: ForbiddenExecution, show: PathFormatter) -> list[str]:
    if finding.hint:
        return [f"    why missed: {finding.hint}", *_chain_text(finding.chain, show, "    ")]
    if "unrecorded" in finding.flags:
        return ["    (loaded without the recorder seeing it: by a finder placed ahead of it or put "
                "into sys.modules by hand; no chain)"]
    return _chain_text(finding.chain, show, "    ")


def format_verify_text(report: VerifyReport, relpath: PathFormatter) -> str:
    """The text report: one block per light module (failures first), problems, a summary line."""
    out: list[str] = []
    ordered = sorted(report.results, key=lambda r: (not r.failed, r.light))
    for result in ordered:
        out.append(format_light_result_text(result, relpath).rstrip("\n"))
    for problem in report.problems:
        out.append(f"problem: {problem}")
    version = ".".join(str(v) for v in report.version)
    lights = _plural(len(report.results), "light module")
    failed = sum(1 for r in report.results if r.failed)
    where = f"with Python {version} ({report.python}) in {report.seconds:.1f}s"
    if report.exit_code == 0:
        out.append(f"\nOK: {lights} verified {where}; no forbidden module executed.")
    else:
        parts = []
        counts = (
            (sum(len(r.forbidden) for r in report.results), "forbidden module executed",
             "forbidden modules executed"),
            (sum(len(r.static_missed) for r in report.results), "static miss", "static misses"),
            (sum(len(r.failed_checks) for r in report.results), "after-import failure",
             "after-import failures"),
            (sum(1 for r in report.results if r.run.outcome == "raised"), "import raised",
             "imports raised"),
            (sum(1 for r in report.results if r.run.outcome == "timeout"), "timeout", "timeouts"),
            (sum(1 for r in report.results if r.run.outcome == "crashed"), "crash", "crashes"),
            (len(report.problems), "problem", "problems"),
        )
        for count, one, many in counts:
            if count:
                parts.append(f"{count} {one if count == 1 else many}")
        out.append(
            f"\nFAILED: {failed} of {lights} {where}: {', '.join(parts)}."
        )
    return "\n".join(out) + "\n"


def _finding_json(finding: ForbiddenExecution, show: PathFormatter) -> dict[str, object]:
    return {
        "module": finding.module,
        "pattern": finding.pattern,
        "reason": finding.reason,
        "predicted": finding.predicted,
        "flags": list(finding.flags),
        "hint": finding.hint,
        "chain": [hop_to_json(hop, show) for hop in finding.chain],
    }


def light_result_to_json(result: LightResult, relpath: PathFormatter) -> dict[str, object]:
    """One light module's result as JSON-able data (see ``docs/verify.md``)."""
    show = _shown(relpath)
    run = result.run
    return {
        "light": result.light,
        "status": "failed" if result.failed else "ok",
        "outcome": run.outcome,
        "seconds": round(run.seconds, 3),
        "forbidden": [_finding_json(f, show) for f in result.forbidden],
        "static_missed": [_finding_json(f, show) for f in result.static_missed],
        "not_observed": list(result.not_observed),
        "accepted": list(result.accepted),
        "after_import": [
            {"expression": c.expression, "passed": c.passed, "error": c.error}
            for c in run.after_import
        ],
        "error": run.error,
        "error_path": show(run.error_at) if run.error_at is not None else None,
        "error_line": run.error_line or None,
        "running": list(run.running),
        "returncode": run.returncode,
        "stderr": run.stderr,
        "executed": [record.name for record in run.executed],
    }


def format_verify_json(report: VerifyReport, relpath: PathFormatter) -> str:
    """The JSON report documented in ``docs/verify.md``."""
    data = {
        "python": report.python,
        "version": list(report.version),
        "seconds": round(report.seconds, 3),
        "results": [light_result_to_json(r, relpath) for r in report.results],
        "problems": list(report.problems),
    }
    return json.dumps(data, indent=2) + "\n"


# --------------------------------------------------------------------------------------------
# The command


def run_command(
    policy: Policy,
    *,
    python: str | None,
    timeout: float,
    jobs: int | None,
    modules: Sequence[str],
    output_format: str,
    facts_cache: FactsCache | None,
    stdout: IO[str],
    stderr: IO[str],
) -> int:
    """``importpolicy verify``: verify, print the report, return the exit code (0 or 1).

    A progress line is drawn on ``stderr`` when it is a terminal.

    Raises:
        InterpreterError: if the interpreter cannot be queried or started.
        UnknownLightModule: for a ``modules`` entry that is not a light module of the policy.
    """
    progress: Progress | None = None

    def draw(done: int, total: int, result: LightResult) -> None:
        mark = "FAIL" if result.failed else "ok"
        line = f"[{done}/{total}] {mark} {result.light}"
        stderr.write("\r\x1b[K" + line[:200])
        if done == total:
            stderr.write("\r\x1b[K")
        stderr.flush()

    if stderr.isatty():
        progress = draw

    report = verify_policy(
        policy,
        python=python,
        timeout=timeout,
        jobs=jobs,
        modules=modules,
        facts_cache=facts_cache,
        progress=progress,
    )
    if output_format == "json":
        stdout.write(format_verify_json(report, policy.relpath))
    else:
        stdout.write(format_verify_text(report, policy.relpath))
    return report.exit_code
