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
import re
from dataclasses import dataclass, field

__all__ = [
    "ModulePattern", "PatternError", "canonical_assumption_key", "is_constant_argument", "parse_pattern"
]

_ONE = "*"
_MANY = "**"
_WILDCARDS = frozenset((_ONE, _MANY))
_SEGMENT_RE = r"[^.]+"
_SUBMODULES_RE = r"(?:\.[^.]+)*"


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


def _check_segments(text: str) -> tuple[str, ...]:
    """Split ``text`` into segments, raising :class:`PatternError` for the first bad one."""
    if not text:
        raise PatternError(text, "empty")
    segments = tuple(text.split("."))
    for segment in segments:
        if segment in _WILDCARDS:
            continue
        if not segment:
            raise PatternError(text, "empty segment (a doubled, leading or trailing dot)")
        if "*" in segment:
            raise PatternError(
                text,
                f'wildcards must be whole segments ("*" or "**"), not part of {_quote(segment)}',
            )
        if not segment.isidentifier():
            raise PatternError(text, f"{_quote(segment)} is not a Python identifier")
    return segments


def _segment_regex(segment: str) -> str:
    """Return the regular expression for one pattern segment."""
    if segment == _ONE:
        return _SEGMENT_RE
    if segment == _MANY:
        return _SEGMENT_RE + _SUBMODULES_RE
    return re.escape(segment)


@dataclass(frozen=True)
class ModulePattern:
    """A parsed, validated module pattern; build it with :func:`parse_pattern` (or directly).

    Equality and hashing use ``text`` only. Matching is precompiled once per pattern.

    Attributes:
        text: the pattern as written, e.g. ``"mypkg.*.ops"``.

    Raises:
        PatternError: (from the constructor) if ``text`` is not a valid pattern.
    """

    text: str
    _segments: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _exact: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _with_submodules: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _prefix: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        segments = _check_segments(self.text)
        object.__setattr__(self, "_segments", segments)
        if any(segment in _WILDCARDS for segment in segments):
            body = r"\.".join(_segment_regex(segment) for segment in segments)
            object.__setattr__(self, "_exact", re.compile(body))
            object.__setattr__(self, "_with_submodules", re.compile(body + _SUBMODULES_RE))
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
        regex = self._with_submodules
        if regex is None:
            return module == self.text or module.startswith(self._prefix)
        return regex.fullmatch(module) is not None

    def matches_exactly(self, module: str) -> bool:
        """Return True if ``module`` matches the pattern itself, without the submodule extension.

        This is the ``[light]`` meaning: ``"a.*"`` matches ``"a.b"`` but not ``"a.b.c"``;
        ``"a.**"`` matches both.
        """
        regex = self._exact
        if regex is None:
            return module == self.text
        return regex.fullmatch(module) is not None

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
