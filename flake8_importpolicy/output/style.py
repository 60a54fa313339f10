"""Colour in the text report on a terminal: paths bold, codes coloured by what they mean, the
summary coloured by the outcome, as flake8 and ruff colour theirs. Never in a pipe or a file, and
never in the machine formats (JSON, SARIF, GitHub annotations), which never ask for it.

Whether to colour (:func:`use_colour`) follows the conventions every colouring tool shares:
``NO_COLOR`` (https://no-color.org) set to anything but the empty string turns colour off, and wins;
``FORCE_COLOR`` (https://force-color.org) set to anything but the empty string turns it on, also in a
pipe; otherwise only a terminal gets colour, and not under ``TERM=dumb``. CPython 3.13's own
``_colorize.can_colorize`` decides in the same order.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal, TextIO

__all__ = ["PLAIN", "Style", "use_colour"]

Level = Literal["error", "info", "note"]
Outcome = Literal["ok", "blind", "failed"]

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_LEVELS: dict[Level, str] = {"error": "\x1b[1;31m", "info": "\x1b[1;33m", "note": "\x1b[1;36m"}
_OUTCOMES: dict[Outcome, str] = {"ok": "\x1b[1;32m", "blind": "\x1b[1;33m", "failed": "\x1b[1;31m"}


class Style:
    """How the text report paints its parts: ANSI SGR sequences when ``enabled``, else the text
    unchanged (:data:`PLAIN`). Each method returns its text painted and reset."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def path(self, text: str) -> str:
        """A file path (bold)."""
        return self._paint(_BOLD, text)

    def code(self, text: str, level: Level = "error") -> str:
        """A code (``IPL001``): red for a finding, yellow for information (IPL006), cyan for a
        note."""
        return self._paint(_LEVELS[level], text)

    def summary(self, text: str, outcome: Outcome) -> str:
        """The report's last line: green when clean, yellow over blind spots, red when it fails."""
        return self._paint(_OUTCOMES[outcome], text)

    def _paint(self, sequence: str, text: str) -> str:
        return f"{sequence}{text}{_RESET}" if self.enabled and text else text


PLAIN = Style(False)
"""No colour (pipes, files, and every caller that does not ask for it)."""


def use_colour(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether text written to ``stream`` gets colour: ``NO_COLOR`` (not empty) never,
    ``FORCE_COLOR`` (not empty) always, else when ``stream`` is a terminal and ``TERM`` is not
    ``dumb``. ``environ`` defaults to ``os.environ``."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    if env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False
