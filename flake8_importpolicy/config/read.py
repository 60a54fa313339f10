"""Reading one policy file: its bytes, its text (UTF-8), its TOML table (``[tool.importpolicy]`` for a
``pyproject.toml``), and where its ``[[ignore]]`` entries are written.

Errors about the file as a whole (unreadable, not UTF-8, not TOML) are one problem with the file's
line and column, compiler style::

    policy.toml:3:7: invalid TOML: Expected '=' after a key in a key/value pair
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import re
import tomllib
from pathlib import Path
from typing import Final

from flake8_importpolicy import docs_url
from flake8_importpolicy.config.fields import describe, key_part, quote
from flake8_importpolicy.model.errors import PolicyError, PolicyProblem
from flake8_importpolicy.model.files import POLICY_FILENAME, PYPROJECT_FILENAME, PYPROJECT_TABLE
from flake8_importpolicy.model.reading import MAX_ENTRIES, count_entries, read_regular_file

__all__ = ["TOO_DEEP", "Source", "ignore_lines", "parse_text", "read_source"]

TOO_DEEP: Final = PolicyProblem("", "tables or arrays nested too deeply")

# tomllib's messages (compiled on first use, by ``re``'s cache: a valid policy needs none)
_TOML_POSITION: Final = r"^(.*) \(at line (\d+), column (\d+)\)$"
_TOML_END: Final = r"^(.*) \(at end of document\)$"
_TOML_DECLARE: Final = r"^Cannot declare (\(.*\)) twice$"


class Source:
    """One file a policy is read from: the policy file, a base file or a preset's data file.

    A plain class, not a dataclass: the loader's private record is made on every run, and a
    dataclass costs its creation at every import (docs/performance.md, "What the cold path avoids").

    Attributes:
        path: the file.
        label: None for the policy file itself; else how messages name it (``../base.toml``,
            ``preset torch-cuda``).
        text: its text.
        prefix: ``tool.importpolicy`` for a ``pyproject.toml``, else ``""``.
        table: its policy table (TOML).
        digest: the sha256 hex digest of its bytes.
    """

    __slots__ = ("path", "label", "text", "prefix", "table", "digest")

    def __init__(
        self, path: Path, label: str | None, text: str, prefix: str, table: dict[str, object],
        digest: str,
    ) -> None:
        self.path = path
        self.label = label
        self.text = text
        self.prefix = prefix
        self.table = table
        self.digest = digest


def read_source(path: Path, label: str | None, *, preset: bool = False) -> Source:
    """Read and parse one policy file (a base's ``[tool.importpolicy]`` for a ``pyproject.toml``).

    Raises:
        PolicyError: the file cannot be read, is not UTF-8 or TOML, or is a ``pyproject.toml``
            without ``[tool.importpolicy]``; its problem carries ``file=label``.
    """
    def fail(problem: PolicyProblem) -> PolicyError:
        return PolicyError(path, [dataclasses.replace(problem, file=label)])

    try:
        raw = read_regular_file(path)[1]  # a FIFO or a device is refused, never waited for
    except OSError as exc:
        raise fail(PolicyProblem("", f"cannot read: {exc.strerror or exc}")) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        byte_line, byte_column = _byte_position(raw, exc.start)
        raise fail(PolicyProblem(
            "", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", byte_line, byte_column
        )) from None
    try:
        document: dict[str, object] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message, line, column = _toml_error(text, str(exc))
        raise fail(PolicyProblem("", f"invalid TOML: {message}", line, column)) from None
    except RecursionError:
        raise fail(TOO_DEEP) from None
    entries = count_entries(document)  # before validation: its cost grows with the entries
    if entries > MAX_ENTRIES:
        raise fail(PolicyProblem("", f"{entries:,} entries (keys and array items); a policy file "
                                 f"holds at most {MAX_ENTRIES:,} ({docs_url('policy.md', 'bounds')})"))
    table: dict[str, object] = document
    prefix = ""
    if path.name == PYPROJECT_FILENAME and not preset:
        prefix = PYPROJECT_TABLE
        tool = document.get("tool")
        if not isinstance(tool, dict) or "importpolicy" not in tool:
            raise fail(PolicyProblem(
                "",
                f"no [{PYPROJECT_TABLE}] table; add one, "
                f"or write the policy in {POLICY_FILENAME}",
            ))
        section = tool["importpolicy"]
        if not isinstance(section, dict):
            raise fail(PolicyProblem(prefix, f"expected a table, got {describe(section)}"))
        table = section
    return Source(path, label, text, prefix, table, hashlib.sha256(raw).hexdigest())


def parse_text(text: str, path: Path) -> Source:
    """``text`` as the policy file ``path`` (which need not exist), read as ``policy.toml``.

    Raises:
        PolicyError: ``text`` is not TOML.
    """
    raw = text.encode("utf-8")
    try:
        table: dict[str, object] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message, line, column = _toml_error(text, str(exc))
        raise PolicyError(path, [PolicyProblem("", f"invalid TOML: {message}", line, column)]) from None
    return Source(path, None, text, "", table, hashlib.sha256(raw).hexdigest())


def _byte_position(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based (line, column) of byte ``offset`` in ``raw`` (column counted in bytes)."""
    line_start = raw.rfind(b"\n", 0, offset) + 1
    return raw.count(b"\n", 0, offset) + 1, offset - line_start + 1


def _toml_error(text: str, error: str) -> tuple[str, int | None, int | None]:
    """Split a ``tomllib`` message into (message, line, column)."""
    match = re.match(_TOML_POSITION, error, re.DOTALL)
    if match:
        message, line, column = match.group(1), int(match.group(2)), int(match.group(3))
    else:
        end = re.match(_TOML_END, error, re.DOTALL)
        if end is None:
            return error, None, None
        message = end.group(1)
        line = text.count("\n") + 1
        column = len(text) - (text.rfind("\n") + 1) + 1
    if message == "Cannot overwrite a value":
        message += " (is a key set twice?)"
    declared = re.match(_TOML_DECLARE, message, re.DOTALL)
    if declared:  # "Cannot declare ('light', 'a.b') twice" -> "Cannot declare [light."a.b"] twice"
        try:
            names = ast.literal_eval(declared.group(1))
        except (ValueError, SyntaxError):
            names = None
        if isinstance(names, tuple) and names and all(isinstance(n, str) for n in names):
            message = f"Cannot declare [{'.'.join(key_part(name) for name in names)}] twice"
    return message, line, column


def ignore_lines(text: str, imports: list[object], prefix: str) -> list[int]:
    """Best-effort 1-based line of each ``[[ignore]]`` entry's ``import = ...`` key (1 if none)."""
    lines = text.split("\n")  # TOML lines: splitlines() would also split on \f, \u2028, ...
    table = r"\s*\.\s*".join(re.escape(part) for part in [*prefix.split("."), "ignore"] if part)
    header_re = re.compile(rf"\s*\[\[\s*{table}\s*\]\]")
    import_re = re.compile(r"\s*(?:import|unresolved|\"import\"|'import')\s*=")
    headers = [index for index, line in enumerate(lines) if header_re.match(line)]
    result: list[int] = []
    if len(headers) == len(imports):
        for number, start in enumerate(headers):
            end = headers[number + 1] if number + 1 < len(headers) else len(lines)
            found = next((i for i in range(start + 1, end) if import_re.match(lines[i])), start)
            result.append(found + 1)
        return result
    cursor = 0
    for value in imports:
        line = 1
        if isinstance(value, str) and value:
            needle = quote(value)
            hit = next((i for i in range(cursor, len(lines)) if needle in lines[i]), None)
            if hit is None:
                hit = next((i for i in range(len(lines)) if value in lines[i]), None)
            if hit is not None:
                line = hit + 1
                cursor = hit + 1
        result.append(line)
    return result
