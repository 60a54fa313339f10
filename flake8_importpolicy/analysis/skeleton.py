"""Function bodies blanked out of a source before it is parsed: the module-level skeleton.

A cold check needs, of each module in a closure, what runs at import time: module-level code, class
bodies, and of each ``def`` its decorators, defaults, annotations, name and line span
(docs/semantics.md rules 8-9). The bodies themselves are read only for the few functions an
import-time call reaches (:class:`~flake8_importpolicy.analysis.extract.FunctionIndex` re-parses those lines
then). Yet in real packages most of the text is function bodies (59 % of the lines of torch's
import-time closure), and ``ast.parse`` pays for every line it builds nodes for. So before parsing,
:func:`blank_function_bodies` replaces each body that is an indented block with blank lines and one
``pass`` on its last line: the skeleton parses four to five times faster (lexing it costs about as
much again), and every line number, column and ``def`` span stays what it was.

Finding the bodies takes a lexer, not a parser: string literals, comments, brackets and explicit line
joins decide where logical lines start (Language reference, "Lexical analysis", 2.1 and 2.4), and a
block ends at the first logical line indented no deeper than its ``def`` (2.1.8). String and comment
tokens are matched by one regular expression (C code); the rest is ``bytes.count`` and ``re.search``
per ``def``. Whatever this lexer is not sure of it leaves alone, and the caller parses the whole
source instead:

- sources that are not UTF-8 (a PEP 263 cookie naming another encoding), or contain NUL, a form
  feed, a lone carriage return or a tab in indentation (tab columns follow rules of their own);
- a quote that opens no complete string (an unterminated string, a syntax error);
- a line of only blanks and a backslash joining it to the next (CPython takes the indentation of
  such a logical line from the first of its lines indented more than zero columns);
- on Python 3.12+, an f-string (3.14+: t-string) with a replacement field that is not a complete
  literal on its own: PEP 701 lets fields contain the f-string's own quote and span lines, which a
  regular expression cannot follow; such tokens are checked with ``ast.parse``;
- unbalanced brackets.

What a blanked body cannot give any more is its syntax errors: a module whose only error is inside a
function body parses (CPython would raise ``SyntaxError`` when importing it). The error is found
when an import-time call reaches that body (it is parsed then), and not otherwise. See
docs/design.md.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import sys
import tokenize
from typing import Final

__all__ = ["blank_function_bodies"]

_TOKEN_START: Final = re.compile(rb"""['"#\\]""")
"""Where a string literal, a comment or an explicit line join may start (a character set: the regular
expression engine skips to it in C)."""

_SINGLE_QUOTED: Final = {
    quote: re.compile(rb"Q[^Q\n\\]*(?:\\.[^Q\n\\]*)*Q".replace(b"Q", bytes([quote])), re.DOTALL)
    for quote in b"'\""
}
"""``{quote byte: a complete single-quoted literal}`` (without its prefix). A backslash escapes the
next character, a line feed included, in raw literals too (their quote cannot end them either;
Language reference 2.4.1); a bare line feed cannot be in one. Triple-quoted literals are ended by
:func:`_triple_end`."""

_PAIRS: Final = ((b"(", b")"), (b"[", b"]"), (b"{", b"}"))
_ROUND: Final = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS: Final = bytes(byte for byte in range(256) if byte not in b"()[]{}")
_PREFIX_LETTERS: Final = frozenset(b"rRbBuUfFtT")
_WORD: Final = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") | frozenset(
    range(0x80, 0x100))

_DEF: Final = re.compile(rb"def[ \t\\]")
"""The keyword ``def`` (in the code text, where no string or comment is left; searched for as a
literal, which is fast, and then checked to start its line: see :func:`_def_indent`)."""

_ASYNC_DEF_LINE: Final = re.compile(rb"( *)async[ \t]+")

_FIRST_STATEMENT: Final = re.compile(rb"^( *)[^ \n]", re.MULTILINE)

_TO_BLANK: Final = bytes(0x01 if byte == 0x0A else 0x20 for byte in range(256))
"""Every byte to a space, except a line feed to ``\\x01`` (a line break that starts no logical line)."""

_FIELD_CHECK: Final = sys.version_info >= (3, 12)
_TEMPLATE_PREFIX: Final = b"fFtT" if sys.version_info >= (3, 14) else b"fF"


class _Unsure(Exception):
    """The lexer met something it does not follow exactly: parse the whole source instead."""


def blank_function_bodies(source: bytes) -> bytes | None:
    """``source`` with every function body that is an indented block replaced by blank lines and a
    ``pass`` on the block's last line, or None when the source should be parsed whole (see the module
    docstring for when).

    Args:
        source: a module's source as bytes (as read from its file). CR LF line ends are accepted.

    Returns:
        bytes of the same number of lines, where every line outside the blanked bodies is unchanged
        (so ``ast.parse`` of it gives the same module-level nodes at the same lines and columns, and
        each function's ``lineno``/``end_lineno``), or None. A source without any block body is
        returned as it is. Never raises.
    """
    if b"def" not in source:
        return source  # nothing to blank: the lexer would only cost time
    if b"\r" in source:
        source = source.replace(b"\r\n", b"\n")
        if b"\r" in source:
            return None
    if b"\0" in source or b"\f" in source or (
        b"\t" in source and re.search(rb"^ *\t", source, re.MULTILINE)  # the pattern is slow
    ):
        return None
    if not _utf8(source):
        return None
    bom = b"\xef\xbb\xbf" if source.startswith(b"\xef\xbb\xbf") else b""
    source = source[len(bom):]
    try:
        code = _code_text(source)
    except _Unsure:
        return None
    blanked = _blank(source, code)
    return blanked if blanked is None or not bom else bom + blanked


def _utf8(source: bytes) -> bool:
    """True if the source is UTF-8 by PEP 263 (no cookie, a UTF-8 cookie, or a BOM), as
    :func:`tokenize.detect_encoding` reads it."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError:  # an unknown or contradictory cookie: the whole parse reports it
        return False
    return encoding in ("utf-8", "utf-8-sig")


def _code_text(source: bytes) -> bytearray:
    """``source`` of the same length with each string literal replaced by ``0`` + blanks + ``0``,
    each comment by blanks, and each line break inside a literal or after an explicit line join by
    ``\\x01``: what is left of a line feed starts a new physical line that may start a logical one.

    Raises:
        _Unsure: an unterminated quote, a backslash outside a literal that joins no lines or that
            is all its line holds, or a PEP 701 field this lexer cannot follow.
    """
    code = bytearray(source)
    search = _TOKEN_START.search
    end = 0
    while (match := search(source, end)) is not None:
        start = match.start()
        first = source[start]
        if first == 0x23:  # "#": a comment, to the end of the line
            end = source.find(b"\n", start)
            end = len(source) if end < 0 else end
            code[start:end] = b" " * (end - start)
            continue
        if first == 0x5C:  # "\\": only before a line feed, outside a literal
            if source[start + 1:start + 2] != b"\n":
                raise _Unsure
            if not code[code.rfind(b"\n", 0, start) + 1:start].strip(b" "):
                raise _Unsure  # a line of only blanks and the join: CPython indents it oddly
            end = start + 2
            code[start:end] = b" \x01"
            continue
        if source[start + 1:start + 3] == bytes((first, first)):
            end = _triple_end(source, start)
        else:
            literal = _SINGLE_QUOTED[first].match(source, start)
            if literal is None:
                raise _Unsure  # a quote that opens no complete literal
            end = literal.end()
        if _FIELD_CHECK:
            _check_fields(source, start, end)
        inner = source[start + 1:end - 1]
        code[start:end] = b"0" + (inner.translate(_TO_BLANK) if b"\n" in inner
                                  else b" " * len(inner)) + b"0"
    return code


def _triple_end(source: bytes, start: int) -> int:
    """The end offset of the triple-quoted literal opened at ``start``: after the first three quotes
    not escaped by an odd run of backslashes (``bytes.find``, so long docstrings cost little).

    Raises:
        _Unsure: the literal is not closed.
    """
    delimiter = source[start:start + 3]
    content = start + 3
    position = content
    while True:
        end = source.find(delimiter, position)
        if end < 0:
            raise _Unsure
        backslash = end
        while backslash > content and source[backslash - 1] == 0x5C:
            backslash -= 1
        if (end - backslash) % 2 == 0:
            return end + 3
        position = end + 1


def _check_fields(source: bytes, start: int, end: int) -> None:
    """Raise :class:`_Unsure` if ``source[start:end]``, a literal as the pre-3.12 rules delimit it, is
    an f-string (t-string) with a field that may not be what it seems: PEP 701 lets a field hold the
    literal's own quote, which ends the regular expression's match inside the field, and such a
    prefix of the true literal does not parse on its own (its last quote opens a string it never
    closes)."""
    if b"{" not in source[start:end]:
        return
    prefix = start
    while prefix > 0 and start - prefix < 2 and source[prefix - 1] in _PREFIX_LETTERS:
        prefix -= 1
    if prefix == start or (prefix > 0 and source[prefix - 1] in _WORD):
        return  # no prefix, or letters of a name before the quote
    if not any(letter in _TEMPLATE_PREFIX for letter in source[prefix:start]):
        return
    try:
        ast.parse(source[prefix:end], mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise _Unsure from None


def _blank(source: bytes, code: bytearray) -> bytes | None:
    """Blank the bodies found in ``code`` (see :func:`_code_text`) out of ``source``."""
    brackets = code.translate(None, _NOT_BRACKETS)  # six counts of a few bytes, not of the file
    if any(brackets.count(opening) != brackets.count(closing) for opening, closing in _PAIRS):
        return None
    code = code.translate(_ROUND)  # from here on only the depth counts: two counts instead of six
    pieces: list[bytes] = []
    copied = 0  # source[:copied] is in pieces
    for match in _DEF.finditer(code):
        if match.start() < copied:
            continue  # nested in a body already blanked
        line_start = code.rfind(b"\n", 0, match.start()) + 1
        indent = _def_indent(code, line_start, match.start())
        if indent is None:
            continue
        body = _body(code, line_start, indent)
        if body is None:
            continue
        first, last = body
        line_end = source.find(b"\n", last)
        line_end = len(source) if line_end < 0 else line_end
        statement = _FIRST_STATEMENT.search(code, first)
        body_indent = len(statement.group(1)) if statement is not None else indent + 1
        pieces.append(source[copied:first])
        pieces.append(b"\n" * source.count(b"\n", first, line_end) + b" " * body_indent + b"pass")
        copied = line_end
    if not pieces:
        return source
    pieces.append(source[copied:])
    return b"".join(pieces)


def _def_indent(code: bytearray, line_start: int, keyword: int) -> int | None:
    """The indentation of the ``def`` statement whose keyword is at ``keyword``, or None if the line
    has anything but blanks (or ``async`` and blanks) before it."""
    before = code[line_start:keyword]
    indent = len(before) - len(before.lstrip(b" "))
    if indent == len(before):
        return indent
    match = _ASYNC_DEF_LINE.fullmatch(code, line_start, keyword)
    return None if match is None else len(match.group(1))


def _body(code: bytearray, start: int, indent: int) -> tuple[int, int] | None:
    """The body of the ``def`` at offset ``start`` (indented ``indent`` spaces): (offset of its first
    line, offset of its last non-blank byte), or None if it is not an indented block (``def f(): ...``
    on one line) or its extent is unclear."""
    # The header's logical line ends at the first line feed after which the brackets balance (the
    # depth is counted on from the last line feed, not again from the start: signatures of fifty
    # lines are common).
    end = start
    depth = 0
    while True:
        counted = end
        end = code.find(b"\n", end + 1)
        if end < 0:
            return None
        depth += _depth(code, counted, end)
        if depth == 0:
            break
    if not code[start:end].rstrip().endswith(b":"):
        return None
    first = end + 1
    # The block ends before the first logical line indented ``indent`` or less.
    stop = _stop(indent)
    search_from = end  # the header's own line feed: a body may be empty
    counted, depth = first, 0  # the depth of code[first:counted]
    while True:
        found = stop.search(code, search_from)
        if found is None:
            finish = len(code)
            break
        depth += _depth(code, counted, found.start())
        counted = found.start()
        if depth == 0:
            finish = found.start()
            break
        search_from = found.start() + 1
    body = code[first:finish].rstrip(b" \n\x01")  # a trailing join adds no line to the body
    if not body.strip(b" \n\x01"):
        return None  # nothing indented after the header: not a block we understand
    return first, first + len(body) - 1


@functools.cache
def _stop(indent: int) -> re.Pattern[bytes]:
    """A line feed followed by a line indented at most ``indent`` spaces that is not blank."""
    return re.compile(rb"\n {0,%d}(?=[^ \n\x01])" % indent)


def _depth(code: bytearray, start: int, end: int) -> int:
    """Open brackets minus closed ones in ``code[start:end]`` (no strings or comments left in it,
    every bracket made round)."""
    return code.count(b"(", start, end) - code.count(b")", start, end)
