"""The transient progress line on a terminal ("checking light module 3/5: ..."), shared by ``check``,
``bisect`` and ``verify``: silent on anything that is not a terminal, and under ``TERM=dumb``.

The line appears after about a second of silence, also when no progress has been reported yet: a
cold check reads and analyses the sources before its first light module, which takes seconds on a
large project, so a timer shows the latest text (at first the caller's, "reading the sources")
when the delay has passed, rather than waiting for the next report."""

from __future__ import annotations

import os
import shutil
import time
import threading
from collections.abc import Callable
from typing import Final, TextIO

__all__ = ["DELAY", "StatusLine", "open_status_line"]

DELAY: Final = 1.0
"""Seconds of a run before its status line appears: a shorter run stays silent."""

Schedule = Callable[[float, Callable[[], None]], Callable[[], None]]
"""``schedule(seconds, callback)`` runs ``callback`` once after ``seconds`` and returns a function
that cancels it."""


def _timer(seconds: float, callback: Callable[[], None]) -> Callable[[], None]:
    """:data:`Schedule` on a daemon :class:`threading.Timer` (never keeps the process alive)."""
    timer = threading.Timer(seconds, callback)
    timer.daemon = True
    timer.start()
    return timer.cancel


class StatusLine:
    """A transient one-line status on a terminal: ``PolicyEngine.check(progress=...)`` calls it as
    ``status(done, total, name)`` before each light module; ``verify`` shows its own text with
    :meth:`show`. Nothing is written during the first
    ``delay`` seconds (a short run stays silent), then at most once per ``interval`` seconds:
    ``\\r`` + erase-line + ``checking light module <done + 1>/<total>: <name>``, cut to the terminal's
    width. :meth:`clear` erases the line (if one was written) so the report starts on a clean line.

    Args:
        stream: the terminal (``sys.stderr``); use :func:`open_status_line` to get None elsewhere.
        delay: seconds before the first update.
        interval: minimum seconds between updates.
        clock: monotonic seconds (injectable for tests).
        columns: returns the terminal width (default: :func:`shutil.get_terminal_size`).
        text: shown when ``delay`` has passed with nothing shown yet (with ``schedule``).
        schedule: runs the check at ``delay`` (:data:`Schedule`); None: the line appears only when
            something is reported after the delay. Its callback may run on another thread: writes
            and :meth:`clear` take a lock, and nothing is written after :meth:`clear`.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        delay: float = DELAY,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        columns: Callable[[], int] | None = None,
        text: str = "",
        schedule: Schedule | None = None,
    ) -> None:
        self._stream = stream
        self._delay = delay
        self._interval = interval
        self._clock = clock
        self._columns = columns or (lambda: shutil.get_terminal_size().columns)
        self._start = clock()
        self._last: float | None = None
        self._shown = False
        self._pending = text  # the latest text not shown because the delay had not passed
        self._closed = False
        self._light = ""  # the latest light module reported, that :meth:`reading` adds to
        self._lock = threading.Lock()
        self._cancel = schedule(delay, self._on_silence) if schedule is not None else None

    def __call__(self, done: int, total: int, name: str) -> None:
        """``checking light module <done + 1>/<total>: <name>`` (see :meth:`show`)."""
        self._light = f"checking light module {done + 1}/{total}: {name}"
        self.show(self._light)

    def reading(self, what: str) -> None:
        """What a long cold run reads now, after the light module: ``checking light module 1/3:
        app.light (reading installed package torch)``; before the first light module ``reading
        installed package torch``."""
        self.show(f"{self._light} (reading {what})" if self._light else f"reading {what}")

    def show(self, text: str) -> None:
        """Replace the line with ``text`` (cut to the terminal's width), unless the delay or the
        interval since the last update has not passed yet."""
        now = self._clock()
        with self._lock:
            if self._closed:
                return
            if now - self._start < self._delay:
                self._pending = text
                return
            if self._last is not None and now - self._last < self._interval:
                return
            self._last = now
            self._write(text)

    def clear(self) -> None:
        """Erase the status line, if one was written; nothing is shown after it."""
        if self._cancel is not None:
            self._cancel()
        with self._lock:
            self._closed = True
            if self._shown:
                self._stream.write("\r\x1b[K")
                self._stream.flush()
                self._shown = False

    def _on_silence(self) -> None:
        """At ``delay``: show the latest text if nothing has been shown (the schedule's callback)."""
        with self._lock:
            if not self._closed and not self._shown and self._pending:
                self._last = self._clock()
                self._write(self._pending)

    def _write(self, text: str) -> None:
        """Replace the line with ``text`` cut to the terminal's width (the lock held)."""
        width = max(self._columns() - 1, 10)
        if len(text) > width:
            text = text[: width - 3] + "..."
        self._stream.write(f"\r\x1b[K{text}")
        self._stream.flush()
        self._shown = True


def open_status_line(
    stream: TextIO, *, delay: float = DELAY, interval: float = 0.1, text: str = ""
) -> StatusLine | None:
    """A :class:`StatusLine` on ``stream`` if it is a terminal, else None (no progress, no cost).

    Args:
        stream: usually ``sys.stderr``; ``TERM=dumb`` counts as no terminal.
        delay, interval: as for :class:`StatusLine`.
        text: what the line says when ``delay`` passes before any report (a timer shows it, or
            the latest report held back by the delay); empty: no timer.
    """
    try:
        is_terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return None
    if not is_terminal or os.environ.get("TERM") == "dumb":
        return None
    return StatusLine(stream, delay=delay, interval=interval, text=text,
                      schedule=_timer if text else None)
