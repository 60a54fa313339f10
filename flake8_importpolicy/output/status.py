"""The transient progress line on a terminal ("checking light module 3/5: ..."), shared by ``check``
and ``verify``: silent on anything that is not a terminal, and under ``TERM=dumb``."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["StatusLine", "open_status_line"]


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
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        delay: float = 1.0,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        columns: Callable[[], int] | None = None,
    ) -> None:
        self._stream = stream
        self._delay = delay
        self._interval = interval
        self._clock = clock
        self._columns = columns or (lambda: shutil.get_terminal_size().columns)
        self._start = clock()
        self._last: float | None = None
        self._shown = False

    def __call__(self, done: int, total: int, name: str) -> None:
        """``checking light module <done + 1>/<total>: <name>`` (see :meth:`show`)."""
        self.show(f"checking light module {done + 1}/{total}: {name}")

    def show(self, text: str) -> None:
        """Replace the line with ``text`` (cut to the terminal's width), unless the delay or the
        interval since the last update has not passed yet."""
        now = self._clock()
        if now - self._start < self._delay:
            return
        if self._last is not None and now - self._last < self._interval:
            return
        self._last = now
        width = max(self._columns() - 1, 10)
        if len(text) > width:
            text = text[: width - 3] + "..."
        self._stream.write(f"\r\x1b[K{text}")
        self._stream.flush()
        self._shown = True

    def clear(self) -> None:
        """Erase the status line, if one was written."""
        if self._shown:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._shown = False


def open_status_line(
    stream: TextIO, *, delay: float = 1.0, interval: float = 0.1
) -> StatusLine | None:
    """A :class:`StatusLine` on ``stream`` if it is a terminal, else None (no progress, no cost).

    Args:
        stream: usually ``sys.stderr``; ``TERM=dumb`` counts as no terminal.
        delay, interval: as for :class:`StatusLine`.
    """
    try:
        is_terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return None
    if not is_terminal or os.environ.get("TERM") == "dumb":
        return None
    return StatusLine(stream, delay=delay, interval=interval)
