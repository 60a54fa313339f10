"""The on-disk cache of per-file import facts, shared by the CLI, flake8 workers and mypy workers.

- Keyed by the SHA-256 of the file's bytes plus the engine fingerprint and the target (versions and
  platform) — never by mtime, which CI checkouts reset.
- One small JSON file per entry under ``<cache-dir>/facts/``; JSON only, never pickle (loading a
  pickle from a repository directory would be code execution).
- Safe under concurrency: entries are written to a temporary file and renamed into place
  (``os.replace`` is atomic on POSIX and Windows); a reader that finds a partial, corrupt or
  old-format entry recomputes. A missing, read-only or unwritable directory silently means no cache.
- Bounded: beyond :data:`MAX_ENTRIES` entries the oldest are removed; ``importpolicy cache clear``
  removes everything.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Final

from flake8_importpolicy import __version__
from flake8_importpolicy.check import FactsCache
from flake8_importpolicy.extract import ImportSite, ModuleFacts, SourceProblem, Target
from flake8_importpolicy.policy import Policy

__all__ = ["ENGINE_FINGERPRINT", "MAX_ENTRIES", "DiskFactsCache", "clear_cache", "open_facts_cache"]

MAX_ENTRIES: Final = 100_000
"""Entries kept at most; pruning removes the least recently written beyond this."""

_FORMAT: Final = 1


_ENGINE_MODULES: Final = (
    "extract.py", "resolve.py", "graph.py", "check.py", "policy.py", "patterns.py", "noqa.py",
)


def _fingerprint() -> str:
    digest = hashlib.sha256(f"{__version__};{_FORMAT}".encode())
    for name in _ENGINE_MODULES:
        try:
            digest.update((Path(__file__).parent / name).read_bytes())
        except OSError:
            pass
    return digest.hexdigest()[:16]


ENGINE_FINGERPRINT: Final = _fingerprint()
"""Changes whenever the engine's code or the package version changes (part of every cache key)."""

_TAG: Final = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by flake8-importpolicy.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)


class DiskFactsCache(FactsCache):
    """Per-file import facts in ``directory`` (created on first write).

    Args:
        directory: the cache directory (``.importpolicy_cache`` beside policy.toml by default).
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._facts_dir = directory / "facts"
        self._usable: bool | None = None
        self.hits = 0
        self.misses = 0

    def _path(self, digest: str, target: Target) -> Path:
        key = hashlib.sha256(f"{digest}\0{ENGINE_FINGERPRINT}\0{target.key()}".encode())
        name = key.hexdigest()
        return self._facts_dir / name[:2] / f"{name[2:]}.json"

    def get(self, digest: str, target: Target) -> ModuleFacts | None:
        """Cached facts for the source with SHA-256 ``digest`` and this target, or None (missing or
        unreadable entries count as missing)."""
        try:
            data = json.loads(self._path(digest, target).read_bytes())
            facts = facts_from_json(data)
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            self.misses += 1
            return None
        self.hits += 1
        return facts

    def put(self, digest: str, target: Target, facts: ModuleFacts) -> None:
        """Store facts atomically; silently does nothing if the directory is not writable."""
        if self._usable is False:
            return
        path = self._path(digest, target)
        try:
            if self._usable is None:
                self._prepare()
            path.parent.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(facts_to_json(facts), handle, separators=(",", ":"))
                os.replace(tmp, path)
            except BaseException:
                _unlink(Path(tmp))
                raise
        except OSError:
            self._usable = False

    def _prepare(self) -> None:
        self._facts_dir.mkdir(parents=True, exist_ok=True)
        tag = self.directory / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text(_TAG, encoding="utf-8")
            (self.directory / ".gitignore").write_text(
                "# Created by flake8-importpolicy; everything here is a cache.\n*\n",
                encoding="utf-8",
            )
        self._usable = True
        prune_cache(self.directory)


def open_facts_cache(policy: Policy) -> DiskFactsCache:
    """The facts cache for ``policy`` (its ``settings.cache-dir``)."""
    return DiskFactsCache(policy.settings.cache_dir)


def prune_cache(directory: Path, limit: int = MAX_ENTRIES) -> int:
    """Remove the oldest entries beyond ``limit``; returns how many were removed (never raises)."""
    facts_dir = directory / "facts"
    try:
        entries = [entry for sub in facts_dir.iterdir() for entry in sub.iterdir()]
    except OSError:
        return 0
    if len(entries) <= limit:
        return 0

    def mtime(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    entries.sort(key=mtime)
    removed = 0
    for entry in entries[: len(entries) - limit]:
        removed += _unlink(entry)
    return removed


def clear_cache(directory: Path) -> bool:
    """Delete the cache directory ``directory``; True if something was removed.

    Refuses (returns False) to delete a directory without the ``CACHEDIR.TAG`` this tool writes.
    """
    if not (directory / "CACHEDIR.TAG").is_file():
        return False
    shutil.rmtree(directory, ignore_errors=True)
    return True


def _unlink(path: Path) -> int:
    try:
        path.unlink()
    except OSError:
        return 0
    return 1


def facts_to_json(facts: ModuleFacts) -> dict[str, object]:
    """A JSON-able form of :class:`ModuleFacts` (inverse: :func:`facts_from_json`)."""
    return {
        "sites": [
            [s.line, s.col, s.kind, s.target, s.level, s.anchor, list(s.names), list(s.flags),
             s.detail]
            for s in facts.sites
        ],
        "bindings": sorted(facts.bindings),
        "all": list(facts.all_names) if facts.all_names is not None else None,
        "getattr": facts.defines_getattr,
        "problem": [facts.problem.line, facts.problem.message] if facts.problem else None,
    }


def facts_from_json(data: object) -> ModuleFacts:
    """Rebuild :class:`ModuleFacts` from :func:`facts_to_json` output.

    Raises:
        KeyError, TypeError, ValueError, IndexError: if ``data`` is malformed.
    """
    if not isinstance(data, dict):
        raise TypeError("not an object")
    sites = []
    for row in data["sites"]:
        line, col, kind, target, level, anchor, names, flags, detail = row
        if kind not in ("import", "from-import", "star-import", "importlib"):
            raise ValueError(kind)
        sites.append(ImportSite(
            line=int(line), col=int(col), kind=kind,
            target=None if target is None else str(target), level=int(level), anchor=str(anchor),
            names=tuple(str(n) for n in names), flags=tuple(str(f) for f in flags),
            detail=str(detail),
        ))
    problem = data["problem"]
    all_names = data["all"]
    return ModuleFacts(
        sites=tuple(sites),
        bindings=frozenset(str(b) for b in data["bindings"]),
        all_names=None if all_names is None else tuple(str(n) for n in all_names),
        defines_getattr=bool(data["getattr"]),
        problem=None if problem is None else SourceProblem(int(problem[0]), str(problem[1])),
    )
