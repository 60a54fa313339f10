"""Where a key of a TOML file is written: line and column of key paths such as ``settings.external``,
``light."a.b".forbid[0]`` or ``ignore[2].reason`` (the key paths of
:class:`~flake8_importpolicy.model.errors.PolicyProblem`).

``tomllib`` gives values, not positions; this is a small scanner of the TOML syntax that matters for
positions (table headers, arrays of tables, dotted and quoted keys, arrays, inline tables, strings and
comments). It never raises: text it does not follow ends the scan, and a key it did not see has no
position (best effort, for messages only).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Final

__all__ = ["KeyPath", "find_key_positions", "locate_key", "parse_key_path"]

KeyPath = tuple[str | int, ...]
"""A key path: table and key names, and 0-based indexes of array items and array-of-tables entries."""

_BARE: Final = re.compile(r"[A-Za-z0-9_-]+")
_BASIC: Final = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERAL: Final = re.compile(r"'[^'\n]*'")
_PATH_PART: Final = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|([A-Za-z0-9_-]+)|\[(\d+)\])\s*\.?')


def parse_key_path(text: str) -> KeyPath | None:
    """A problem's key path as components: ``light."a.b".forbid[0]`` -> ``("light", "a.b", "forbid", 0)``;
    None if it is not one."""
    parts: list[str | int] = []
    position = 0
    while position < len(text):
        match = _PATH_PART.match(text, position)
        if match is None or match.end() == position:
            return None
        quoted, bare, index = match.groups()
        if quoted is not None:
            try:
                parts.append(str(json.loads(quoted)))
            except ValueError:
                return None
        elif bare is not None:
            parts.append(bare)
        else:
            parts.append(int(index))
        position = match.end()
    return tuple(parts) or None


class _Scanner:
    """Walks TOML text once, recording the 1-based (line, column) of every key path it meets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.found: dict[KeyPath, tuple[int, int]] = {}
        self.tables: dict[KeyPath, int] = {}  # array-of-tables path -> entries seen

    def where(self, pos: int) -> tuple[int, int]:
        line_start = self.text.rfind("\n", 0, pos) + 1
        return self.text.count("\n", 0, pos) + 1, pos - line_start + 1

    def skip_space(self, newlines: bool) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t" or (newlines and char in "\r\n"):
                self.pos += 1
            elif char == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            else:
                return

    def key(self) -> list[str]:
        """A dotted key at the position (possibly empty when there is none)."""
        parts: list[str] = []
        while True:
            self.skip_space(False)
            for pattern in (_BASIC, _LITERAL, _BARE):
                match = pattern.match(self.text, self.pos)
                if match:
                    token = match.group()
                    if token[0] == '"':
                        try:
                            parts.append(str(json.loads(token)))
                        except ValueError:
                            parts.append(token[1:-1])
                    elif token[0] == "'":
                        parts.append(token[1:-1])
                    else:
                        parts.append(token)
                    self.pos = match.end()
                    break
            else:
                return parts
            self.skip_space(False)
            if self.text.startswith(".", self.pos):
                self.pos += 1
                continue
            return parts

    def value(self, path: KeyPath) -> None:
        """Skip one value, recording the positions of array items and inline-table keys."""
        self.skip_space(False)
        text = self.text
        if text.startswith(('"""', "'''"), self.pos):
            end = text.find(text[self.pos:self.pos + 3], self.pos + 3)
            self.pos = len(text) if end < 0 else end + 3
            while text.startswith(text[self.pos - 1], self.pos):  # up to two more quotes belong to it
                self.pos += 1
            return
        for pattern in (_BASIC, _LITERAL):
            match = pattern.match(text, self.pos)
            if match:
                self.pos = match.end()
                return
        if text.startswith("[", self.pos):
            count = [0]

            def item() -> None:
                where = (*path, count[0])
                self.found.setdefault(where, self.where(self.pos))
                self.value(where)
                count[0] += 1

            self.items("]", True, item)
            return
        if text.startswith("{", self.pos):
            self.items("}", False, lambda: self.pair(path))
            return
        match = re.compile(r"[^\s,\]}#]+").match(text, self.pos)  # numbers, booleans, dates
        if match is None:
            raise ValueError("unknown value")
        self.pos = match.end()

    def items(self, close: str, newlines: bool, each: Callable[[], None]) -> None:
        """An array (``close`` is ``]``, line breaks allowed) or an inline table (``}``) from its
        opening bracket: ``each()`` reads one item at the position."""
        self.pos += 1
        while True:
            self.skip_space(newlines)
            if self.pos >= len(self.text) or self.text[self.pos] == close:
                self.pos += 1
                return
            if self.text[self.pos] == ",":
                self.pos += 1
                continue
            start = self.pos
            each()
            if self.pos == start:
                raise ValueError("stuck")

    def pair(self, table: KeyPath) -> None:
        start = self.pos
        key = self.key()
        if not key or not self.text.startswith("=", self.pos):
            raise ValueError("not a key/value pair")
        self.pos += 1
        path = (*table, *key)
        self.found.setdefault(path, self.where(start))
        self.value(path)

    def scan(self) -> None:
        table: KeyPath = ()
        text = self.text
        while True:
            self.skip_space(True)
            if self.pos >= len(text):
                return
            start = self.pos
            if text.startswith("[[", self.pos):
                self.pos += 2
                name = tuple(self.key())
                count = self.tables.get(name, 0)
                self.tables[name] = count + 1
                table = (*name, count)
                self.found.setdefault(name, self.where(start))
                self.found.setdefault(table, self.where(start))
                self.pos = text.find("]]", self.pos) + 2
            elif text.startswith("[", self.pos):
                self.pos += 1
                table = tuple(self.key())
                self.found.setdefault(table, self.where(start))
                self.pos = text.find("]", self.pos) + 1
            else:
                self.pair(table)
            if self.pos <= start:
                return


def find_key_positions(text: str) -> dict[KeyPath, tuple[int, int]]:
    """The 1-based ``(line, column)`` of every key path written in TOML ``text``: keys (where the key
    starts), table headers, array items (where the item starts) and array-of-tables entries (their
    header). Best effort: what follows text the scanner does not follow has no position."""
    scanner = _Scanner(text)
    try:
        scanner.scan()
    except (ValueError, IndexError, RecursionError):
        pass
    return scanner.found


def locate_key(positions: dict[KeyPath, tuple[int, int]], key: str) -> tuple[int, int] | None:
    """Where a problem's key path (``light."a".reason``) is written, or where its nearest written
    parent is (a missing key: its table), or None."""
    path = parse_key_path(key)
    while path:
        if path in positions:
            return positions[path]
        path = path[:-1]
    return None
