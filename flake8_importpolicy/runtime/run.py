"""Running one import under the recorder: a fresh interpreter imports a module, and what executed.

The interpreter (the policy's ``interpreter``, or ``--python``) imports the module with the policy's
source roots first on ``sys.path`` and nothing else added from the caller's environment (it runs with
``-E``; ``PYTHON*`` variables are dropped). Inside it, the stdlib-only script ``recorder.py`` (run by
path, Python 3.9+) records every module whose code *executes*, with the importing module and the
importing frame's file and line, and writes the events as JSON lines to a pipe (never to the
subprocess's stdout, which the imported code owns), ending with a ``finish`` event: an import that
ends the process early leaves none and reads as a crash. The whole process group is killed when the
subprocess ends, so nothing the imported code forked keeps running. "Executed" means the module's
code started to run: a module that is only in ``sys.modules`` (``lazy_loader.load()`` and
``importlib.util.LazyLoader`` put unexecuted modules there) does not count.

This runs project code by design; ``check``, ``why``, flake8 and mypy never do.
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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from flake8_importpolicy.model.errors import InterpreterError

__all__ = [
    "DEFAULT_TIMEOUT",
    "AfterImportCheck",
    "ExecutedModule",
    "Outcome",
    "RuntimeRun",
    "recorder_path",
    "run_import",
]


DEFAULT_TIMEOUT: Final = 60.0
"""Seconds one light module's subprocess may run before it is killed."""

RECORDER_NAME: Final = "recorder.py"

_STDERR_TAIL_LINES: Final = 8

Outcome = Literal["imported", "raised", "timeout", "crashed"]
"""How a light module's subprocess ended: the import succeeded, raised, ran out of time, or the
interpreter died (or the recorder could not run)."""


def recorder_path() -> Path:
    """The recorder script shipped in this package (run by path, never imported)."""
    return Path(__file__).with_name(RECORDER_NAME)


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
        stderr_path = Path(tmp) / "stderr.txt"
        events = _Events(Path(tmp))
        argv[3] = events.argument
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
                    pass_fds=events.pass_fds,
                )
            except OSError as exc:
                events.close()
                raise InterpreterError(f"cannot run interpreter {exe}: {exc}") from exc
            events.started()
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
                events.close()
                raise
            _kill(process)  # what the import forked and left running goes with it
        seconds = time.perf_counter() - started
        recorded = events.collect()
        stderr_tail = _tail(stderr_path)
    return _build_run(module, exe, recorded, timed_out, timeout, returncode, seconds, stderr_tail)


class _Events:
    """Where the recorder writes its events: a pipe (POSIX), so the imported code can neither rewrite
    nor cut short what was written (an early exit leaves no ``finish`` event: a crash); elsewhere a
    file in the run's temporary directory. A module that writes the recorder's protocol itself is
    out of scope."""

    def __init__(self, directory: Path) -> None:
        self._file: Path | None = None
        self._read = self._write = -1
        self._chunks: list[bytes] = []
        self._thread: threading.Thread | None = None
        if os.name == "posix":
            self._read, self._write = os.pipe()
        else:
            self._file = directory / "events.jsonl"
            self._file.touch()

    @property
    def argument(self) -> str:
        """The recorder's ``OUT`` argument: ``fd:N`` or the file's path."""
        return f"fd:{self._write}" if self._file is None else str(self._file)

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (self._write,) if self._file is None else ()

    def started(self) -> None:
        """The recorder is running: keep no write end here, and drain the pipe as it fills."""
        if self._file is None:
            os.close(self._write)
            self._write = -1
            self._thread = threading.Thread(target=self._drain, daemon=True)
            self._thread.start()

    def _drain(self) -> None:
        while chunk := os.read(self._read, 65536):
            self._chunks.append(chunk)

    def collect(self) -> list[dict[str, object]]:
        """The events written, once the recorder's process (group) has ended."""
        if self._thread is not None:
            self._thread.join(timeout=5.0)  # the write end may outlive the group (a new session)
        self.close()
        data = b"".join(self._chunks)
        if self._file is not None:
            try:
                data = self._file.read_bytes()
            except OSError:
                data = b""
        return _parse_events(data)

    def close(self) -> None:
        for fd in (self._write, self._read):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._read = self._write = -1


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kill the subprocess and, on POSIX, every process of its process group (it leads one: also
    the processes the imported code forked, once the subprocess itself has exited)."""
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


def _parse_events(data: bytes) -> list[dict[str, object]]:
    """The JSON-lines events; a partial last line (a killed writer) is dropped."""
    events: list[dict[str, object]] = []
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
