"""``# noqa`` comments, read the way flake8 reads them, so suppression is the same in every adapter.

The pattern is flake8's ``defaults.NOQA_INLINE_REGEX``: ``# noqa`` alone suppresses every code on the
line; ``# noqa: IPL001,IPL002`` (comma or space separated) suppresses the listed codes and their
prefixes are not expanded.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["is_suppressed"]

_NOQA: Final = re.compile(
    # Copied in spirit from flake8/defaults.py (MIT): "# noqa" optionally followed by ":" and codes.
    r"# noqa"
    r"(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?",
    re.IGNORECASE,
)
_SEPARATOR: Final = re.compile(r"[,\s]")


def is_suppressed(line: str, code: str) -> bool:
    """True if the physical source ``line`` carries a ``# noqa`` that covers ``code``.

    Args:
        line: one source line (with or without its newline).
        code: a code id such as ``"IPL001"``.
    """
    match = _NOQA.search(line)
    if match is None:
        return False
    codes = match.group("codes")
    if not codes:
        return True
    listed = tuple(c.upper() for c in _SEPARATOR.split(codes) if c)
    return code.upper().startswith(listed)  # as flake8: ``# noqa: IPL0`` covers IPL006
