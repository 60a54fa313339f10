"""How a path is shown to users, in one place (standard library only: the warm paths use it)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["module_name_under", "relpath_under"]


def relpath_under(roots: Sequence[Path], path: Path) -> str:
    """``path`` relative to the first of ``roots`` (absolute directories) it is inside, as written or
    with symbolic links resolved, with ``/`` separators; else ``str`` of the absolute path. A path
    whose links cannot all be resolved (a symbolic link loop) keeps the unresolved part as written.

    Compared as strings (``os.path.realpath``, resolved only when the path as written is outside
    every root): a report renders one path per hop."""
    absolute = str(path if path.is_absolute() else path.absolute())
    shown = _inside(roots, absolute)
    if shown is None:
        try:
            resolved = os.path.realpath(absolute)
        except (OSError, ValueError):
            resolved = absolute
        shown = _inside(roots, resolved) if resolved != absolute else None
    return absolute if shown is None else shown


def _inside(roots: Sequence[Path], path: str) -> str | None:
    """``path`` relative to the first of ``roots`` that contains it, with ``/`` separators, or
    None."""
    for root in roots:
        text = str(root)
        if path == text:
            return "."
        prefix = text if text.endswith(os.sep) else text + os.sep
        if path.startswith(prefix):
            return path[len(prefix):].replace(os.sep, "/")
    return None


def module_name_under(roots: Sequence[Path], path: Path) -> str | None:
    """The dotted module name of the source file ``path`` (absolute, resolved) under the first of
    the source roots ``roots`` that holds it (``pkg/sub/__init__.py`` is ``pkg.sub``, the
    Language Reference 5.2.1 "Regular packages"); None outside every root, or for the root itself."""
    for root in roots:
        try:
            relative = path.relative_to(root)
        except ValueError:
            continue
        parts = list(relative.with_suffix("").parts)
        if parts and parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts) if parts else None
    return None
