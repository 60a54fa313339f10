"""How a path is shown to users, in one place (standard library only: the warm paths use it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["relpath_under"]


def relpath_under(roots: Sequence[Path], path: Path) -> str:
    """``path`` relative to the first of ``roots`` (absolute directories) it is inside, as written or
    with symbolic links resolved, with ``/`` separators; else ``str`` of the absolute path. A path
    that cannot be resolved (a symbolic link loop) is compared as written."""
    absolute = path if path.is_absolute() else path.absolute()
    candidates = [absolute]
    try:
        candidates.append(absolute.resolve())
    except (OSError, RuntimeError):
        pass
    for candidate in candidates:
        for root in roots:
            try:
                return candidate.relative_to(root).as_posix()
            except ValueError:
                continue
    return str(absolute)
