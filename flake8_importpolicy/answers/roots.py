"""The one answer to "does this path lie under a source root" (the facts caches and the per-file
index both ask it)."""

from __future__ import annotations

import os
from collections.abc import Iterable


def root_prefixes(roots: Iterable[str]) -> tuple[str, ...]:
    """The prefixes that :func:`is_under_roots` tests, one per root of ``roots`` (absolute, resolved
    directories; a trailing separator is ignored).

    Returns:
        tuple[str, ...]: each root ending in exactly one ``os.sep`` (``/a/src`` becomes ``/a/src/``,
        so ``/a/src2`` is not under it).
    """
    strip = os.sep + (os.altsep or "")
    return tuple(root.rstrip(strip) + os.sep for root in roots)


def is_under_roots(path: str, prefixes: tuple[str, ...]) -> bool:
    """True if ``path`` is a root of ``prefixes`` (from :func:`root_prefixes`) or lies below one.

    The test is on the text: callers pass real paths (``os.path.realpath``) on both sides, so a
    symbolic link is judged by where it points.
    """
    return (path.rstrip(os.sep) + os.sep).startswith(prefixes)
