"""Is this still fresh? One answer for every cache: the package's own files, and stamps of files.

Standard library only, and cheap to import: the warm paths of the command line, the flake8 checker
and the mypy plugin load it before anything else.
"""

from __future__ import annotations

import os

__all__ = ["find_package_files"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_package_files() -> list[tuple[str, str]]:
    """Every source file of this package, subpackages included, as sorted ``(name relative to the
    package, absolute path)`` pairs with ``/`` separators: what the engine fingerprint and the warm
    indexes' code stamp cover, so that no edit to any module can leave an answer stale."""
    found: list[tuple[str, str]] = []
    for directory, subdirectories, files in os.walk(_PACKAGE):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        relative = os.path.relpath(directory, _PACKAGE)
        for name in files:
            if name.endswith(".py"):
                shown = name if relative == os.curdir else f"{relative}/{name}".replace(os.sep, "/")
                found.append((shown, os.path.join(directory, name)))
    return sorted(found)
