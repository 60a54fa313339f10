"""Module patterns: dotted module names with ``*`` and ``**`` wildcard segments.

A pattern is a dotted name such as ``"mypkg.models.*.ops"``. Each segment is a Python identifier,
``*`` (exactly one segment) or ``**`` (one or more segments), as in import-linter. Wildcards must be
whole segments: ``"foo*"`` is an error.

Two kinds of matching are offered:

* :meth:`ModulePattern.matches` (``[heavy]``, ``forbid``, ``allow``): the module matches the pattern
  or is a submodule of a module that does (``"torch"`` matches ``"torch.cuda"``);
* :meth:`ModulePattern.matches_exactly` (``[light]`` and ``[[ignore]]``): the module matches the
  pattern itself (``"torch"`` does not match ``"torch.cuda"``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, Generic, TypeAlias, TypeVar

__all__ = [
    "ModulePattern",
    "PatternError",
    "PatternIndex",
    "canonical_assumption_key",
    "is_constant_argument",
    "normalize_name",
    "parse_pattern",
]

_ONE = "*"
_MANY = "**"
_WILDCARDS = frozenset((_ONE, _MANY))


def _quote(text: str) -> str:
    """Return ``text`` as a TOML basic string (``"a.b"``)."""
    return json.dumps(text, ensure_ascii=False)


class PatternError(ValueError):
    """A module pattern is malformed.

    ``str(err)`` is ``invalid module pattern "<text>": <reason>``, for example
    ``invalid module pattern "a..b": empty segment (a doubled, leading or trailing dot)``.

    Attributes:
        text: the pattern as written.
        reason: what is wrong with it (without the pattern prefix).
    """

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason
        super().__init__(f"invalid module pattern {_quote(text)}: {reason}")


def normalize_name(text: str) -> str:
    """``text`` in NFKC, as CPython normalises identifiers (PEP 3131): ``import ｚｏｏ`` imports
    ``zoo``, so a pattern written ``"ｚｏｏ.ｈｅａｖｙ"`` means ``zoo.heavy``."""
    if text.isascii():
        return text
    import unicodedata

    return unicodedata.normalize("NFKC", text)


def _check_segments(text: str, written: str) -> tuple[str, ...]:
    """Split ``text`` (normalised) into segments, raising :class:`PatternError` (quoting the pattern
    as ``written``) for the first bad one."""
    if not text:
        raise PatternError(written, "empty")
    segments = tuple(text.split("."))
    for segment in segments:
        if segment in _WILDCARDS:
            continue
        if not segment:
            raise PatternError(written, "empty segment (a doubled, leading or trailing dot)")
        if "*" in segment:
            raise PatternError(
                written,
                f'wildcards must be whole segments ("*" or "**"), not part of {_quote(segment)}',
            )
        if not segment.isidentifier():
            raise PatternError(written, f"{_quote(segment)} is not a Python identifier")
    return segments


_ANY_SEGMENTS: Final = None
"""A token for zero or more segments (``**`` is one segment, ``*``, then this)."""
_Token: TypeAlias = "str | None"


def _tokens(segments: tuple[str, ...]) -> tuple[_Token, ...]:
    """Segments as tokens for :func:`_matches`: names, ``*`` (one segment), :data:`_ANY_SEGMENTS`."""
    tokens: list[_Token] = []
    for segment in segments:
        tokens.extend((_ONE, _ANY_SEGMENTS) if segment == _MANY else (segment,))
    return tuple(tokens)


def _matches(tokens: tuple[_Token, ...], parts: list[str]) -> bool:
    """Whether the module segments ``parts`` match ``tokens``.

    Glob matching over segments with one point to come back to, the last zero-or-more token: at most
    ``len(tokens) * len(parts)`` steps, never the exponential backtracking a regular expression of
    several ``**`` does on a deep module name (``"**.**.**.**.**.**.torch"`` over a name of 200
    segments took more than ten minutes).
    """
    i = j = 0
    star, mark = -1, 0
    while j < len(parts):
        if i < len(tokens) and tokens[i] is _ANY_SEGMENTS:
            star, mark = i, j
            i += 1
        elif i < len(tokens) and tokens[i] in (_ONE, parts[j]):
            i += 1
            j += 1
        elif star >= 0:  # the last zero-or-more token takes one more segment
            mark += 1
            i, j = star + 1, mark
        else:
            return False
    return all(token is _ANY_SEGMENTS for token in tokens[i:])


@dataclass(frozen=True)
class ModulePattern:
    """A parsed, validated module pattern; build it with :func:`parse_pattern` (or directly).

    Equality and hashing use ``text`` only. Matching is prepared once per pattern, and linear in the
    pattern's and the module's segments.

    Attributes:
        text: the pattern as written, e.g. ``"mypkg.*.ops"``, NFKC-normalised as Python identifiers
            are (:func:`normalize_name`).

    Raises:
        PatternError: (from the constructor) if ``text`` is not a valid pattern.
    """

    text: str
    _segments: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _exact: tuple[_Token, ...] | None = field(init=False, repr=False, compare=False)
    _with_submodules: tuple[_Token, ...] | None = field(init=False, repr=False, compare=False)
    _prefix: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        written = self.text
        object.__setattr__(self, "text", normalize_name(written))
        segments = _check_segments(self.text, written)
        object.__setattr__(self, "_segments", segments)
        if any(segment in _WILDCARDS for segment in segments):
            exact = _tokens(segments)
            object.__setattr__(self, "_exact", exact)
            object.__setattr__(self, "_with_submodules", (*exact, _ANY_SEGMENTS))
        else:
            object.__setattr__(self, "_exact", None)
            object.__setattr__(self, "_with_submodules", None)
        object.__setattr__(self, "_prefix", self.text + ".")

    def __str__(self) -> str:
        return self.text

    def matches(self, module: str) -> bool:
        """Return True if ``module`` (a dotted name) matches, or is a submodule of a match.

        This is the ``[heavy]`` / ``forbid`` / ``allow`` meaning: ``"torch"`` matches ``"torch"``
        and ``"torch.cuda"`` but not ``"torchvision"``; ``"a.*"`` matches ``"a.b"`` and ``"a.b.c"``
        but not ``"a"``.
        """
        tokens = self._with_submodules
        if tokens is None:
            return module == self.text or module.startswith(self._prefix)
        return _matches(tokens, module.split("."))

    def matches_exactly(self, module: str) -> bool:
        """Return True if ``module`` matches the pattern itself, without the submodule extension.

        This is the ``[light]`` meaning: ``"a.*"`` matches ``"a.b"`` but not ``"a.b.c"``;
        ``"a.**"`` matches both.
        """
        tokens = self._exact
        if tokens is None:
            return module == self.text
        return _matches(tokens, module.split("."))

    @property
    def segments(self) -> tuple[str, ...]:
        """The dotted segments, wildcards included: ``("a", "*", "c")``."""
        return self._segments

    @property
    def is_wildcard(self) -> bool:
        """True if some segment is ``*`` or ``**``."""
        return self._exact is not None

    @property
    def static_prefix(self) -> str:
        """The dotted segments before the first wildcard (``""`` if the pattern starts with one).

        ``"a.b.*.c"`` -> ``"a.b"``; ``"a.b"`` -> ``"a.b"``; ``"**.c"`` -> ``""``.
        """
        static: list[str] = []
        for segment in self._segments:
            if segment in _WILDCARDS:
                break
            static.append(segment)
        return ".".join(static)

    @property
    def top_level(self) -> str | None:
        """The first segment (a top-level package name), or None if it is a wildcard."""
        first = self._segments[0]
        return None if first in _WILDCARDS else first


def parse_pattern(text: str) -> ModulePattern:
    """Parse and validate a module pattern.

    Args:
        text: a dotted name whose segments are Python identifiers, ``*`` or ``**``.

    Returns:
        The :class:`ModulePattern`.

    Raises:
        PatternError: if ``text`` is empty, has an empty segment (``"a..b"``, ``".a"``, ``"a."``),
            a partial wildcard (``"foo*"``) or a segment that is not an identifier (``"a-b"``).
    """
    return ModulePattern(text)


_T = TypeVar("_T")


class PatternIndex(Generic[_T]):
    """Items keyed by module patterns, for asking which patterns name a module exactly
    (:meth:`ModulePattern.matches_exactly`): patterns without wildcards are looked up by name, only
    the wildcard ones are tried one by one (20,000 ``[light]`` keys made every question 20,000
    matches).

    Args:
        items: ``(pattern, item)`` pairs, in the order answers keep.
    """

    def __init__(self, items: Iterable[tuple[ModulePattern, _T]]) -> None:
        self._exact: dict[str, list[tuple[int, _T]]] = {}
        self._wildcards: list[tuple[int, ModulePattern, _T]] = []
        for number, (pattern, item) in enumerate(items):
            if pattern.is_wildcard:
                self._wildcards.append((number, pattern, item))
            else:
                self._exact.setdefault(pattern.text, []).append((number, item))

    def find_exact(self, module: str) -> list[_T]:
        """The items whose pattern names ``module`` exactly, in the order given."""
        found = list(self._exact.get(module, ()))
        wild = [
            (number, item) for number, pattern, item in self._wildcards if pattern.matches_exactly(module)
        ]
        if wild:
            found = sorted(found + wild, key=lambda pair: pair[0])
        return [item for _, item in found]


def canonical_assumption_key(text: str) -> str:
    """The canonical form of an ``[assume]`` key: a dotted name (``vllm.envs.VLLM_USE_V1``) or a call
    of one with constant arguments (``vllm.platforms.current_platform.is_rocm()``,
    ``torch.cuda.get_device_capability(0)``), with the arguments written as ``ast.unparse`` writes
    them, so that ``f( 0 )`` and ``f(0)`` are one key. The engine builds the same form for a name or
    call in analysed code (through its imports and aliases) and compares.

    Raises:
        PatternError: if ``text`` is not such a name or call (wildcards, other expressions, keyword
            arguments, a leading dot).
    """
    import ast

    stripped = text.strip()
    try:
        tree = ast.parse(stripped, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    arguments: list[str] | None = None
    if isinstance(tree, ast.Call) and not tree.keywords:
        if all(is_constant_argument(arg) for arg in tree.args):
            arguments = [ast.unparse(arg) for arg in tree.args]
            tree = tree.func
        else:
            tree = None
    parts: list[str] = []
    while isinstance(tree, ast.Attribute):
        parts.append(tree.attr)
        tree = tree.value
    if not isinstance(tree, ast.Name):
        raise PatternError(
            text, "expected a dotted name (a.b.NAME) or a call of one with constant arguments "
            "(a.b.f(), a.b.f(0)); no wildcards, keyword arguments or other expressions",
        )
    parts.append(tree.id)
    if len(parts) < 2:
        raise PatternError(text, "name the module too: a dotted name such as mypkg.config.DEBUG or "
                           "mypkg.platforms.current_platform.is_rocm()")
    name = ".".join(reversed(parts))
    return name if arguments is None else f"{name}({', '.join(arguments)})"


def is_constant_argument(node: object) -> bool:
    """Whether an ``ast`` node is a literal argument of an ``[assume]``-d call: a constant
    (``f(0)``, ``f("x")``) or a negative number (``f(-1)``), which ``ast`` parses as an operation."""
    import ast

    if isinstance(node, ast.Constant):
        return True
    return (
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float))
    )
