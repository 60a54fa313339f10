"""What a Cython module runs at import time, as Python source the extraction reads (rule 6).

A Cython extension module's init function runs the module-level statements of its ``.pyx`` in
order, Python ``import`` statements among them (Cython documentation, "Language basics": the
module body runs when the module is imported; ``cimport`` is resolved at compile time and imports
nothing then). A wheel that ships the ``.pyx`` beside the compiled module (pyarrow's ``lib.pyx``
beside ``lib.cpython-311-x86_64-linux-gnu.so``, whose ``try: import numpy as np`` runs when
``pyarrow`` is imported) tells what the extension imports. :func:`python_skeleton` keeps of it the
module-level imports and the ``try``/``except``/``else``/``finally``/``if``/``elif`` blocks around
them, each on its own line; a test that is not Python is a name the engine cannot evaluate (both
branches may run, rule 13); every other statement is dropped, and so is any block it opens
(``def``, ``cdef``, ``class``, ``with``, ``for``, ...: not imports that run at module level, or
not ones the engine follows). ``include "x.pxi"`` inserts that file's text where it stands
(Cython's textual include): its imports are kept the same way and placed after the last line of
the ``.pyx``, so the ``.pyx``'s own lines keep their numbers; an included file that is not
shipped (or is found on a build-time include path) is left out (the module stays IPL006
``extension-module``: what it does beyond its imports is not read anyway).
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from flake8_importpolicy.model.reading import read_regular_file

__all__ = ["PYX_SUFFIX", "python_skeleton"]

PYX_SUFFIX: Final = ".pyx"

_HEADERS: Final = frozenset({"try", "except", "else", "finally", "if", "elif"})
_CONTINUATIONS: Final = frozenset({"except", "else", "finally", "elif"})
_UNKNOWN_TEST: Final = "__cython_compile_time_or_c_test__"
"""The test written for an ``if`` whose test is not Python: a name no module binds (undecided)."""
_MAX_INCLUDE_DEPTH: Final = 8


@dataclass
class _Block:
    indent: int
    kept: bool
    header_row: int = 0
    has_body: bool = False


def python_skeleton(path: Path, data: bytes) -> bytes:
    """The module-level imports of the Cython source ``data`` (of ``path``) and the blocks around
    them, as Python source with the ``.pyx``'s line numbers (module docstring above).

    Returns ``data`` unchanged when it does not tokenize (then the module is reported as not
    analysable, IPL005, rather than read as importing nothing).
    """
    rows: dict[int, str] = {}
    try:
        _keep(data.decode("utf-8"), rows, 0, path.parent, 0)
    except (UnicodeDecodeError, tokenize.TokenError, SyntaxError, ValueError):
        return data
    if not rows:
        return b""
    height = max(rows)
    return "\n".join(rows.get(row, "") for row in range(1, height + 1)).encode() + b"\n"


def _logical_lines(text: str) -> list[tuple[int, int, int, list[tokenize.TokenInfo]]]:
    """``(first row, last row, indent column, tokens)`` of each logical line of ``text``, comments
    and blank lines left out."""
    found: list[tuple[int, int, int, list[tokenize.TokenInfo]]] = []
    current: list[tokenize.TokenInfo] = []
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in skip:
            continue
        if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            if current:
                found.append((current[0].start[0], current[-1].end[0], current[0].start[1], current))
            current = []
            continue
        current.append(token)
    return found


def _keep(text: str, rows: dict[int, str], offset: int, directory: Path, depth: int) -> int:
    """Write into ``rows`` (at row + ``offset``) what :func:`python_skeleton` keeps of ``text``;
    returns the last row used. Included files go after it, each below the last."""
    lines = text.splitlines()
    stack: list[_Block] = []
    closed: dict[int, _Block] = {}  # the last block closed at each indent
    includes: list[Path] = []

    def close(indent: int) -> None:
        while stack and indent <= stack[-1].indent:
            block = stack.pop()
            if block.kept and not block.has_body:
                rows[block.header_row] += " pass"
            closed[block.indent] = block

    for first, last, indent, tokens in _logical_lines(text):
        close(indent)
        if stack and not stack[-1].kept:
            continue
        level = len(stack)
        word = tokens[0].string if tokens[0].type == tokenize.NAME else ""
        ends_block = tokens[-1].type == tokenize.OP and tokens[-1].string == ":"
        previous = closed.get(indent)
        if word in _CONTINUATIONS and not (previous is not None and previous.kept):
            if ends_block:
                stack.append(_Block(indent, kept=False))
            continue
        closed.pop(indent, None)
        if word in _HEADERS and ends_block:
            header = _header(word, text, tokens)
            row = first + offset
            rows[row] = "    " * level + header
            if stack:
                stack[-1].has_body = True
            stack.append(_Block(indent, kept=True, header_row=row))
            continue
        if ends_block:
            stack.append(_Block(indent, kept=False))
            continue
        if word == "include" and not level and len(tokens) == 2 and tokens[1].type == tokenize.STRING:
            try:
                included = ast.literal_eval(tokens[1].string)
            except (ValueError, SyntaxError):  # an f-string: not a file name Cython accepts
                continue
            if isinstance(included, str) and depth < _MAX_INCLUDE_DEPTH:
                includes.append(directory / included)
            continue
        if _is_runtime_import(tokens):
            statement = lines[first - 1:last]
            statement[0] = statement[0][indent:]
            for number, line in enumerate(statement):
                rows[first + offset + number] = ("    " * level if number == 0 else "") + line
            if stack:
                stack[-1].has_body = True
    close(-1)
    end = max(max(rows, default=offset), offset + len(lines))
    for included in includes:
        try:
            _, data = read_regular_file(included)
        except OSError:
            continue  # not shipped (or found on a build-time include path): its imports are unknown
        end = _keep(data.decode("utf-8"), rows, end, included.parent, depth + 1)
    return end


def _header(word: str, text: str, tokens: list[tokenize.TokenInfo]) -> str:
    """A block's header as Python: as written when it parses, else with a test the engine cannot
    evaluate (``if``/``elif``) or any exception (``except``)."""
    inner = _source_between(text, tokens[0].end, tokens[-1].start).strip()
    written = f"{word} {inner}:" if inner else f"{word}:"
    probe = {"try": "try: pass\nexcept: pass", "except": "try: pass\n{}",
             "else": "if 1: pass\n{}", "finally": "try: pass\n{}",
             "if": "{}", "elif": "if 1: pass\n{}"}[word]
    try:
        ast.parse(probe.format(written + " pass") if "{}" in probe else probe)
    except (SyntaxError, ValueError):
        return f"{word} {_UNKNOWN_TEST}:" if word in ("if", "elif") else "except:"
    return written


def _source_between(text: str, start: tuple[int, int], end: tuple[int, int]) -> str:
    lines = text.splitlines()
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1]:end[1]]
    parts = [lines[start[0] - 1][start[1]:], *lines[start[0]:end[0] - 1], lines[end[0] - 1][:end[1]]]
    return " ".join(part.strip() for part in parts)


def _is_runtime_import(tokens: list[tokenize.TokenInfo]) -> bool:
    """``import x`` or ``from x import y`` that runs (not a ``cimport``, not of the compile-time
    ``cython`` module)."""
    names = [t.string for t in tokens if t.type == tokenize.NAME]
    if not names or names[0] not in ("import", "from") or "cimport" in names:
        return False
    if names[0] == "from" and "import" not in names:
        return False
    module = names[1] if len(names) > 1 else ""
    return module != "cython" and not module.startswith("cython.")
