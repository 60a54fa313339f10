"""The cache directory (``settings.cache-dir``): created and tagged by the tool, cleared only of what
the tool wrote there.

Every cache of the package lives in one directory, marked as the tool's by a ``CACHEDIR.TAG``
(https://bford.info/cachedir/) and a ``.gitignore`` of ``*``. Each kind of entry has a subdirectory of
its own (:data:`ENTRY_DIRS`), and every entry a name of the tool's own making (hexadecimal digits and
``.json``). The tool writes only into a directory holding its tag, and ``cache clear``
(:mod:`flake8_importpolicy.answers.cache_clear`) deletes only files with those names there, never
following a symbolic link (docs/design.md, "Caches"). Standard library only.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Final, Literal

from flake8_importpolicy.config.locate import has_cache_tag
from flake8_importpolicy.model.files import CACHE_TAG, CACHE_TAG_TEXT

__all__ = ["ENTRY_DIRS", "GITIGNORE_TEXT", "USER_CACHE_VARIABLE", "ensure_cache_dir", "find_user_cache_dir"]

USER_CACHE_VARIABLE: Final = "IMPORTPOLICY_CACHE_DIR"
"""The environment variable that moves the user-level cache (empty: no user-level cache)."""

ENTRY_DIRS: Final = ("facts", "answers", "why", "interpreters", "per-file", "mypy")
"""The subdirectories of the cache directory the tool writes: per-file facts, the command line's
answers (``check``'s and ``why``'s), interpreter facts, the flake8 checker's and the mypy plugin's
indexes."""

GITIGNORE_TEXT: Final = "# Created by flake8-importpolicy; everything here is a cache.\n*\n"
"""The ``.gitignore`` the tool writes beside its tag (``cache clear`` removes only this one)."""


def ensure_cache_dir(directory: Path) -> None:
    """Make sure ``directory`` is the tool's cache directory, creating it if it does not exist.

    The tag appears complete: a new cache directory is made under a temporary name beside
    ``directory``, with its ``CACHEDIR.TAG`` and a ``.gitignore`` of ``*``, and renamed into place; an
    existing empty directory gets its tag as a hard link to one written there. So another process
    never sees the cache directory untagged (and never takes it for a directory of the project's).

    Raises:
        OSError: if it cannot be created, or if something that is not the tool's cache directory is
            there (a directory that is neither empty nor tagged by the tool, a file, a dangling link):
            the tool never writes into it.
    """
    if has_cache_tag(directory):
        return
    empty = os.path.isdir(directory) and not os.listdir(directory)
    if os.path.lexists(directory) and not empty:
        raise OSError(errno.EEXIST, "not importpolicy's cache directory", str(directory))
    parent = directory.parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{directory.name}.tmp-", dir=parent)
    try:
        for name, text in ((CACHE_TAG, CACHE_TAG_TEXT), (".gitignore", GITIGNORE_TEXT)):
            with open(os.path.join(staging, name), "x", encoding="utf-8") as handle:
                handle.write(text)
        if empty:
            os.link(os.path.join(staging, CACHE_TAG), os.path.join(directory, CACHE_TAG))
            os.link(os.path.join(staging, ".gitignore"), os.path.join(directory, ".gitignore"))
        else:
            os.rename(staging, directory)
    except OSError:
        if not has_cache_tag(directory):  # else another process made it meanwhile
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def find_user_cache_dir(configured: Path | Literal[False] | None = None) -> Path | None:
    """The user-level cache directory, shared by every project, that keeps the facts of installed
    files (site-packages, the standard library); None if there is none.

    ``$IMPORTPOLICY_CACHE_DIR`` if set (empty: none; a relative path is taken from the working
    directory), else ``configured`` (``settings.user-cache-dir``: a directory, or False for none),
    else ``importpolicy`` in the platform's user cache directory, as pip's: Windows
    ``%LOCALAPPDATA%\\importpolicy\\Cache``, macOS ``~/Library/Caches/importpolicy``, elsewhere
    ``$XDG_CACHE_HOME/importpolicy`` (``~/.cache/importpolicy``; the XDG Base Directory
    Specification). None if the home directory is unknown. The directory is made only on the first
    write (:func:`ensure_cache_dir`).
    """
    moved = os.environ.get(USER_CACHE_VARIABLE)
    if moved is not None:
        return Path(os.path.abspath(moved)) if moved else None
    if configured is not None:
        return configured or None
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
        return Path(base, "importpolicy", "Cache") if base else None
    home = os.path.expanduser("~")
    if home == "~" or not os.path.isabs(home):
        return None
    if sys.platform == "darwin":
        return Path(home, "Library", "Caches", "importpolicy")
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(home, ".cache")
    return Path(base, "importpolicy")
