"""``importpolicy cache clear``: delete what the tool wrote in its cache directory, and nothing else.

Only a directory holding the tool's ``CACHEDIR.TAG`` is touched, only files named as the tool names
its entries are deleted, and a symbolic link is never followed (docs/design.md, "Caches"). A module
of its own so that no check loads it. Standard library only.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from flake8_importpolicy.answers.cache_dir import ENTRY_DIRS, GITIGNORE_TEXT
from flake8_importpolicy.config.locate import has_cache_tag
from flake8_importpolicy.model.files import CACHE_TAG
from flake8_importpolicy.model.reading import read_regular_file

__all__ = ["Cleared", "clear_cache"]

_FACTS_SHARD: Final = re.compile(r"[0-9a-f]{2}")
"""``facts/<2 hex digits>/``: the first two digits of a facts entry's key."""
_FACTS_ENTRY: Final = re.compile(r"[0-9a-f]{62}\.json")
"""``facts/<shard>/<the other 62 hex digits of the key>.json``."""
_INDEX_ENTRY: Final = re.compile(r"[0-9a-f]{8}\.json")
"""``<index dir>/<CRC-32 of the key, 8 hex digits>.json``: answers, why, interpreters, per-file,
mypy."""
_TEMPORARY: Final = re.compile(r"\.tmp-[A-Za-z0-9_]+\.json")
"""An entry being written (:func:`~flake8_importpolicy.answers.jsonfile.write_json_atomic`)."""


@dataclass(frozen=True)
class Cleared:
    """What :func:`clear_cache` did.

    Attributes:
        found: the directory is the tool's cache directory (else nothing was looked at).
        removed: the entries deleted.
        kept: what was left because the tool did not write it (paths relative to the directory,
            ``/`` separators, sorted): the directory itself is then kept too.
        link: the directory is a symbolic link, to this target: nothing was deleted through it
            (it may be another project's cache), and the link is kept; else None.
    """

    found: bool
    removed: int = 0
    kept: tuple[str, ...] = ()
    link: str | None = None


def clear_cache(directory: Path) -> Cleared:
    """Delete the tool's entries in the cache directory ``directory``, and the directory itself if
    nothing else is left.

    Only a directory holding the tool's ``CACHEDIR.TAG`` is touched. In it, only files named as the
    tool names its entries are deleted, in the subdirectories of :data:`ENTRY_DIRS`; a symbolic link
    is never followed (one named like an entry is removed itself, any other is kept); the tag and
    ``.gitignore`` are removed last, when nothing else is left. A ``directory`` that is itself a
    symbolic link is not followed either: its target may be the cache of another project. Never
    raises ``OSError``.
    """
    if not has_cache_tag(directory):
        return Cleared(False)
    if os.path.islink(directory):
        try:
            target = os.readlink(directory)
        except OSError:
            target = "?"
        return Cleared(True, link=target)
    removed = 0
    kept: list[str] = []
    for name in ENTRY_DIRS:
        path = os.path.join(directory, name)
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if not stat.S_ISDIR(mode):
            kept.append(name)
            continue
        removed += _clear_entries(path, name, _FACTS_ENTRY if name == "facts" else _INDEX_ENTRY, kept)
    try:
        leftovers = set(os.listdir(directory))
    except OSError:
        leftovers = set()
    tag_files = {CACHE_TAG, ".gitignore"}
    kept.extend(name for name in leftovers - tag_files - set(ENTRY_DIRS))
    if not leftovers - tag_files and _is_own_gitignore(os.path.join(directory, ".gitignore")):
        for name in sorted(tag_files & leftovers, reverse=True):  # the tag last
            _unlink(os.path.join(directory, name))
        try:
            os.rmdir(directory)
        except OSError:
            pass
    elif not kept:
        kept.append(".gitignore")  # a .gitignore the tool did not write
    return Cleared(True, removed, tuple(sorted(kept)))


def _clear_entries(path: str, shown: str, entry: re.Pattern[str], kept: list[str]) -> int:
    """Delete the entries (files named by ``entry``, or being written) in the real directory
    ``path`` (``shown`` relative to the cache), then ``path`` itself if it is empty; facts entries
    are one level down, in shards. Names of what is kept are added to ``kept``."""
    removed = 0
    try:
        found = list(os.scandir(path))
    except OSError:
        return 0
    for item in found:
        name = f"{shown}/{item.name}"
        try:
            is_dir = item.is_dir(follow_symlinks=False)
        except OSError:
            is_dir = False
        if is_dir and shown == "facts" and _FACTS_SHARD.fullmatch(item.name):
            removed += _clear_entries(item.path, name, entry, kept)
        elif not is_dir and shown != "facts" and (
            entry.fullmatch(item.name) or _TEMPORARY.fullmatch(item.name)
        ):
            if _unlink(item.path):
                removed += 1
            else:
                kept.append(name)
        else:
            kept.append(name)
    try:
        os.rmdir(path)
    except OSError:
        pass
    return removed


def _is_own_gitignore(path: str) -> bool:
    """True if the ``.gitignore`` at ``path`` is missing or is the one the tool writes."""
    if os.path.islink(path):
        return False
    try:
        return read_regular_file(path, limit=len(GITIGNORE_TEXT))[1] == GITIGNORE_TEXT.encode()
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
    except OSError:
        return False
    return True
