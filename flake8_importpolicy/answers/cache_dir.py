"""The cache directory (``settings.cache-dir``): created and tagged by the tool, cleared only of what
the tool wrote there.

Every cache of the package lives in one directory, marked as the tool's by a ``CACHEDIR.TAG``
(https://bford.info/cachedir/) and a ``.gitignore`` of ``*``. Each kind of entry has a subdirectory of
its own (:data:`ENTRY_DIRS`). Standard library only.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Final

from flake8_importpolicy.model.files import CACHE_TAG

__all__ = ["ENTRY_DIRS", "TAG_TEXT", "clear_cache", "ensure_cache_dir"]

ENTRY_DIRS: Final = ("facts", "answers", "interpreters", "per-file", "mypy")
"""The subdirectories of the cache directory the tool writes: per-file facts, the command line's
answers, interpreter facts, the flake8 checker's and the mypy plugin's indexes."""

TAG_TEXT: Final = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by flake8-importpolicy.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)
_GITIGNORE: Final = "# Created by flake8-importpolicy; everything here is a cache.\n*\n"


def ensure_cache_dir(directory: Path) -> None:
    """Create the cache directory, tagged with ``CACHEDIR.TAG`` and a ``.gitignore`` of ``*``.

    The tag files are written only into a directory this call creates (or one already tagged by this
    tool), and never over an existing file, so a ``cache-dir`` pointing into the project cannot
    clobber the project's own ``.gitignore``.

    Raises:
        OSError: if the directory cannot be created.
    """
    existed = directory.is_dir()
    directory.mkdir(parents=True, exist_ok=True)
    tag = directory / CACHE_TAG
    if existed and not tag.is_file():
        return
    for name, text in ((CACHE_TAG, TAG_TEXT), (".gitignore", _GITIGNORE)):
        try:
            with open(directory / name, "x", encoding="utf-8") as handle:
                handle.write(text)
        except FileExistsError:
            pass


def clear_cache(directory: Path) -> bool:
    """Delete this tool's entries in the cache directory ``directory``; True if any were removed.

    Only the tool's own subdirectories (:data:`ENTRY_DIRS`) are removed, and the tag files if nothing
    else is left, so a ``cache-dir`` that points into the project never deletes project files.
    """
    removed = False
    for name in ENTRY_DIRS:
        entry = directory / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed = True
    try:
        leftovers = set(os.listdir(directory))
    except OSError:
        return removed
    if leftovers <= {CACHE_TAG, ".gitignore"} and CACHE_TAG in leftovers:
        tag_text = (directory / CACHE_TAG).read_text(encoding="utf-8", errors="replace")
        if "flake8-importpolicy" in tag_text:
            for name in leftovers:
                try:
                    (directory / name).unlink()
                except OSError:
                    pass
            try:
                directory.rmdir()
            except OSError:
                pass
            removed = True
    return removed
