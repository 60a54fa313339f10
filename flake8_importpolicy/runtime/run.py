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

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final, Literal

from flake8_importpolicy.analysis.resolve import kill_process_group
from flake8_importpolicy.model.errors import InterpreterError

__all__ = [
    "DEFAULT_MEMORY_MIB",
    "DEFAULT_TIMEOUT",
    "STDERR_KEPT",
    "AfterImportCheck",
    "Confined",
    "ExecutedModule",
    "Outcome",
    "RuntimeRun",
    "recorder_path",
    "run_confined",
    "run_import",
]


DEFAULT_TIMEOUT: Final = 60.0
"""Seconds one light module's subprocess may run before it is killed."""

RECORDER_NAME: Final = "recorder.py"

_STDERR_TAIL_LINES: Final = 8
_STDERR_LINE_CHARACTERS: Final = 300

DEFAULT_MEMORY_MIB: Final = 4096
"""The data limit of one light module's subprocess (``RLIMIT_DATA``, Linux), in MiB: an import that
allocates more fails with ``MemoryError`` instead of taking the machine's memory (importing torch
needs about 250 MiB). ``verify --max-memory`` sets it."""
STDERR_KEPT: Final = 64 * 1024
"""Bytes of a light module's stderr kept, from its end: a module that writes more costs verify no
memory and no time (the rest is read and dropped)."""

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
    memory_mib: int = DEFAULT_MEMORY_MIB,
) -> RuntimeRun:
    """Import ``module`` in a fresh interpreter under the recorder and collect what executed.

    Args:
        module: dotted name of the module to import.
        python: the interpreter (default: the one running this code).
        source_roots: directories put first on the subprocess's ``sys.path`` (in order).
        after_import: Python expressions evaluated after a successful import.
        timeout: seconds before the subprocess (and everything it started) is killed.
        cwd: working directory of the subprocess (default: this process's).
        memory_mib: the subprocess's data limit in MiB (:data:`DEFAULT_MEMORY_MIB`; 0: none).

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
        events = _Events(Path(tmp))
        argv[3] = events.argument
        try:
            done = run_confined(
                argv, timeout=timeout, cwd=cwd, env=env, pass_fds=events.pass_fds,
                memory_mib=memory_mib, started=events.started,
            )
        finally:
            recorded = events.collect()
        seconds = time.perf_counter() - started
    run = _build_run(module, exe, recorded, done.timed_out, timeout, done.returncode, seconds,
                     _tail(done))
    if memory_mib and run.error is not None and run.error.startswith("MemoryError"):
        run = dataclasses.replace(run, error=f"{run.error} (verify's memory limit is {memory_mib} "
                                  "MiB of data per light module; --max-memory sets it)")
    return run


@dataclass(frozen=True)
class Confined:
    """How a subprocess of :func:`run_confined` ended.

    Attributes:
        returncode: its exit status (negative: killed by that signal).
        timed_out: it ran out of time and was killed.
        stderr: what it wrote to stderr: the first ``stderr_head`` and the last ``stderr_tail``
            bytes (the rest is dropped as it is read, so a flood costs no memory).
        stderr_bytes: how many bytes it wrote to stderr in all.
    """

    returncode: int
    timed_out: bool
    stderr: bytes
    stderr_bytes: int


def run_confined(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: Path | None,
    env: dict[str, str],
    memory_mib: int,
    pass_fds: Sequence[int] = (),
    stderr_head: int = 0,
    stderr_tail: int = STDERR_KEPT,
    started: Callable[[], None] | None = None,
) -> Confined:
    """Run ``argv`` (an interpreter running project code) so that nothing outlives it, its memory
    and its stderr are bounded, and its time limit holds.

    On Linux it runs under ``reaper.py`` (its subreaper, with ``RLIMIT_DATA`` of ``memory_mib``
    MiB): a daemon the code forks, even one that left the session, is killed and reaped when the
    process ends or times out. Elsewhere its process group is killed. stdin and stdout are
    ``/dev/null`` (the imported code owns them); stderr is read as it comes, keeping only its head
    and tail.

    Args:
        argv: the command.
        timeout: seconds before it and everything it started is killed.
        cwd, env: its working directory and environment.
        memory_mib: its data limit in MiB (Linux; 0: none).
        pass_fds: descriptors it inherits.
        stderr_head, stderr_tail: how many bytes of stderr to keep from its start and its end.
        started: called once the process is running.

    Raises:
        InterpreterError: if ``argv[0]`` cannot be started.
    """
    command = list(argv)
    reaped = sys.platform.startswith("linux")
    if reaped:
        command = [sys.executable, "-I", "-S", str(_reaper_path()), str(memory_mib << 20), "--",
                   *command]
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=os.name == "posix",
            pass_fds=tuple(pass_fds),
        )
    except OSError as exc:
        raise InterpreterError(f"cannot run interpreter {argv[0]}: {exc}") from exc
    if started is not None:
        started()
    assert process.stderr is not None
    stderr = _Capture(process.stderr, stderr_head, stderr_tail)
    timed_out = False
    try:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop(process, reaped)
    except BaseException:
        _stop(process, reaped)
        raise
    finally:
        kill_process_group(process)  # what the import forked and left running goes with it
        stderr.close()
    returncode = process.returncode
    data = stderr.data()
    if reaped and returncode == _CANNOT_RUN and data.startswith(_REAPER_FAILED):
        message = data.decode("utf-8", "replace").strip().splitlines()[0]
        raise InterpreterError(message.removeprefix(_REAPER_FAILED.decode()).strip().replace(
            "cannot run", "cannot run interpreter", 1))
    return Confined(returncode, timed_out, data, stderr.total)


_CANNOT_RUN: Final = 127
_REAPER_FAILED: Final = b"importpolicy-reaper: "
_STOP_GRACE: Final = 10.0
"""Seconds the reaper has to kill what ran under it once verify's timeout asks it to."""


def _reaper_path() -> Path:
    return Path(__file__).with_name("reaper.py")


def _stop(process: subprocess.Popen[bytes], reaped: bool) -> None:
    """Stop a subprocess and everything it started: the reaper on ``SIGTERM`` (it kills and reaps
    everything below it), else, or if it does not stop in time, the whole process group."""
    if reaped and process.poll() is None:
        try:
            process.terminate()
            process.wait(timeout=_STOP_GRACE)
            return
        except (OSError, subprocess.TimeoutExpired):
            pass
    kill_process_group(process)
    process.wait()


class _Capture:
    """A subprocess's stderr, read by a thread as it comes: its first ``head`` and last ``tail``
    bytes are kept, and how many it wrote in all."""

    def __init__(self, stream: IO[bytes], head: int, tail: int) -> None:
        self._stream = stream
        self._head_limit = head
        self._tail_limit = tail
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        fd = self._stream.fileno()
        while chunk := os.read(fd, 65536):
            self.total += len(chunk)
            room = self._head_limit - len(self._head)
            if room > 0:
                self._head += chunk[:room]
                chunk = chunk[room:]
            self._tail += chunk
            if len(self._tail) > 2 * self._tail_limit:
                del self._tail[:len(self._tail) - self._tail_limit]

    def close(self) -> None:
        """Wait for the end of the stream (a process left behind by the code could hold it open:
        then give up after a few seconds), and close it."""
        self._thread.join(timeout=5.0)
        if not self._thread.is_alive():
            self._stream.close()

    def data(self) -> bytes:
        tail = bytes(self._tail[-self._tail_limit:]) if self._tail_limit else b""
        return bytes(self._head) + tail


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


def _tail(done: Confined) -> str:
    """The last lines of a run's stderr, each at most :data:`_STDERR_LINE_CHARACTERS` long, after a
    line saying how much came before when it was more than was kept."""
    text = done.stderr.decode("utf-8", "replace")
    lines = [
        line if len(line) <= _STDERR_LINE_CHARACTERS else line[:_STDERR_LINE_CHARACTERS] + " [...]"
        for line in text.rstrip().splitlines()[-_STDERR_TAIL_LINES:]
    ]
    shown = sum(len(line.encode("utf-8", "replace")) + 1 for line in lines)
    if done.stderr_bytes > shown + 1:
        lines.insert(0, f"[... {done.stderr_bytes - shown:,} bytes of stderr before these lines]")
    return "\n".join(lines)


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
        error = (f"timed out after {timeout:g} s{where} (a cold torch import on a loaded machine "
                 "can take longer: raise it with verify --timeout SECONDS, or pytest "
                 "--importpolicy-timeout)")
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
