"""The on-disk cache of per-file import facts, shared by the CLI, flake8 workers and mypy workers.

- Keyed by everything the facts depend on: the SHA-256 of the file's bytes, the engine fingerprint,
  the target (versions, platform, lazy-imports mode) and the interpreter that parses the source
  (:data:`PARSER`) — never by mtime, which CI checkouts reset. Each entry holds its key and is
  sealed with a checksum of its bytes (:mod:`flake8_importpolicy.answers.jsonfile`): a truncated,
  edited or damaged entry, or one copied from another key, is recomputed.
- One small JSON file per entry under ``<cache-dir>/facts/``; JSON only, never pickle (loading a
  pickle from a repository directory would be code execution).
- Safe under concurrency: entries are written to a temporary file and renamed into place
  (``os.replace`` is atomic on POSIX and Windows); a reader that finds a partial, corrupt or
  old-format entry recomputes. A missing, read-only or unwritable directory silently means no cache.
- Bounded: beyond :data:`MAX_ENTRIES` entries the oldest are removed, once per run by the process that
  owns the cache (never by a worker's copy); ``importpolicy cache clear`` removes everything.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final, get_args

from flake8_importpolicy import __version__
from flake8_importpolicy.answers.cache_dir import ensure_cache_dir
from flake8_importpolicy.answers.freshness import find_package_files
from flake8_importpolicy.answers.jsonfile import MALFORMED, read_json_sealed, write_json_atomic
from flake8_importpolicy.model.facts import (
    AttributeRead,
    CallBinding,
    CallKind,
    CallSite,
    FunctionFacts,
    ImportSite,
    LazyAttach,
    ModuleFacts,
    PathChange,
    SourceProblem,
    Target,
    UnresolvedSite,
)
from flake8_importpolicy.model.graph import Construct, Flag
from flake8_importpolicy.model.policy import Policy

__all__ = [
    "MAX_ENTRIES",
    "PARSER",
    "DiskFactsCache",
    "engine_fingerprint",
    "open_facts_cache",
]

MAX_ENTRIES: Final = 100_000
"""Entries kept at most; pruning removes the least recently written beyond this."""

_FORMAT: Final = 13

PARSER: Final = f"{sys.implementation.name}-{'.'.join(map(str, sys.version_info[:3]))}"
"""The interpreter whose ``ast`` parses the sources (part of every key): with ``target-versions =
["3.11"]``, Python 3.12 parses ``type X = int`` and 3.11 cannot (IPL005)."""


@functools.cache
def engine_fingerprint() -> str:
    """A digest of the package version, the entry format and every file of the package (part of
    every cache key): it changes whenever the engine's code does. Computed on first use (a run
    without the facts cache never reads the package's files)."""
    digest = hashlib.sha256(f"{__version__};{_FORMAT}".encode())
    for name, path in find_package_files():
        digest.update(f"\0{name}\0".encode())
        try:
            digest.update(Path(path).read_bytes())
        except OSError:
            pass
    return digest.hexdigest()[:16]


class DiskFactsCache:
    """Per-file import facts in ``directory`` (created on first write).

    Args:
        directory: the cache directory (``.importpolicy_cache`` beside policy.toml by default).
    """

    def __init__(self, directory: Path) -> None:
        self.directory: Path = directory
        self._facts_dir = directory / "facts"
        engine_fingerprint()  # now, before any entry is written: the code that is running
        self._usable: bool | None = None
        self._owner = True
        self.hits = 0
        self.misses = 0

    def __getstate__(self) -> dict[str, object]:
        """A copy sent to a worker process is not the owner: it never prunes the cache (pruning
        lists every entry; once per run is enough)."""
        return {**self.__dict__, "_owner": False}

    def _key(self, digest: str, target: Target, kind: str = "module") -> list[str]:
        """Everything the facts depend on: the source's SHA-256, the engine, the target, what is
        cached (``module``, or ``function:<qualname>`` and its bound argument) and the interpreter
        parsing the source."""
        return [digest, engine_fingerprint(), target.key(), kind, PARSER]

    def _path(self, key: list[str]) -> Path:
        name = hashlib.sha256("\0".join(key).encode()).hexdigest()
        return self._facts_dir / name[:2] / f"{name[2:]}.json"

    def _read(self, key: list[str]) -> object:
        """The ``facts`` of the entry for ``key``.

        Raises:
            OSError, ValueError, ...: (:data:`~flake8_importpolicy.answers.jsonfile.MALFORMED`) a
                missing or damaged entry, or one written for another key.
        """
        entry = read_json_sealed(self._path(key))
        if not isinstance(entry, dict) or entry.get("key") != key:
            raise ValueError("an entry of another key")
        return entry["facts"]

    def get(self, digest: str, target: Target) -> ModuleFacts | None:
        """Cached facts for the source with SHA-256 ``digest`` and this target, or None (missing,
        damaged or foreign entries count as missing)."""
        try:
            facts = facts_from_json(self._read(self._key(digest, target)))
        except MALFORMED:
            self.misses += 1
            return None
        self.hits += 1
        return facts

    def get_function(
        self, digest: str, target: Target, qualname: str, argument: str | None = None
    ) -> tuple[FunctionFacts | None] | None:
        """Cached facts of one function body (its first parameter bound to ``argument``, if given):
        ``(facts,)``, ``(None,)`` if the module is known to have no such function, or None if not
        cached."""
        try:
            row = self._read(self._key(digest, target, _function_kind(qualname, argument)))
            return (None,) if row is None else (functions_from_json({qualname: row})[qualname],)
        except MALFORMED:
            return None

    def put_function(
        self,
        digest: str,
        target: Target,
        qualname: str,
        facts: FunctionFacts | None,
        argument: str | None = None,
    ) -> None:
        """Store one function body's facts (None: no such function) atomically (best effort)."""
        row = None if facts is None else functions_to_json({qualname: facts})[qualname]
        self._write(self._key(digest, target, _function_kind(qualname, argument)), row)

    def put(self, digest: str, target: Target, facts: ModuleFacts) -> None:
        """Store facts atomically; silently does nothing if the directory is not writable."""
        self._write(self._key(digest, target), facts_to_json(facts))

    def _write(self, key: list[str], data: object) -> None:
        if self._usable is False:
            return
        try:
            if self._usable is None:
                self._prepare()
        except OSError:
            self._usable = False
            return
        if not write_json_atomic(self._path(key), {"key": key, "facts": data}):
            self._usable = False

    def _prepare(self) -> None:
        ensure_cache_dir(self.directory)
        self._facts_dir.mkdir(exist_ok=True)
        self._usable = True
        if self._owner:
            prune_cache(self.directory)


def _function_kind(qualname: str, argument: str | None) -> str:
    """The part of a function entry's key that names the function (and its bound argument)."""
    return f"function:{qualname}" if argument is None else f"function:{qualname}({argument!r})"


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


def _unlink(path: Path) -> int:
    try:
        path.unlink()
    except OSError:
        return 0
    return 1


def _site_row(site: ImportSite) -> list[object]:
    return [site.line, site.col, site.kind, site.target, site.level, site.anchor, list(site.names),
            list(site.flags), site.detail, site.lazy_use_line, list(site.guard), site.guard_resolves,
            list(site.assumed)]


def _site(row: object) -> ImportSite:
    if not isinstance(row, list):
        raise TypeError("site")
    (line, col, kind, target, level, anchor, names, flags, detail, lazy_use_line, guard,
     guard_resolves, assumed) = row
    if kind not in ("import", "from-import", "star-import", "importlib"):
        raise ValueError(kind)
    return ImportSite(
        line=int(line), col=int(col), kind=kind,
        target=None if target is None else str(target), level=int(level), anchor=str(anchor),
        names=tuple(str(n) for n in names), flags=tuple(Flag(str(f)) for f in flags), detail=str(detail),
        lazy_use_line=None if lazy_use_line is None else int(lazy_use_line),
        guard=tuple(str(g) for g in guard), guard_resolves=bool(guard_resolves),
        assumed=tuple(str(a) for a in assumed),
    )


def _call_row(call: CallSite) -> list[object]:
    return [call.line, call.col, call.callee, call.local, call.kind, list(call.flags),
            list(call.assumed)]


_CALL_KINDS: Final = frozenset(get_args(CallKind))
"""The kinds a cached call may have: :data:`~flake8_importpolicy.model.facts.CallKind`'s values."""


def _call(row: object) -> CallSite:
    if not isinstance(row, list):
        raise TypeError("call")
    line, col, callee, local, kind, flags, assumed = row
    if kind not in _CALL_KINDS:
        raise ValueError(kind)
    return CallSite(int(line), int(col), str(callee), bool(local), kind,
                    tuple(Flag(str(f)) for f in flags), tuple(str(a) for a in assumed))


def _read_row(read: AttributeRead) -> list[object]:
    return [read.line, read.col, read.name, read.target, read.attr, list(read.flags), read.deleted]


def _read(row: object) -> AttributeRead:
    if not isinstance(row, list):
        raise TypeError("attribute read")
    line, col, name, target, attr, flags, deleted = row
    return AttributeRead(int(line), int(col), str(name), None if target is None else str(target),
                         str(attr), tuple(Flag(str(f)) for f in flags), bool(deleted))


def _unresolved_row(site: UnresolvedSite) -> list[object]:
    return [site.line, site.col, str(site.construct), site.detail, list(site.flags)]


def _unresolved(row: object) -> UnresolvedSite:
    if not isinstance(row, list):
        raise TypeError("unresolved site")
    line, col, construct, detail, flags = row
    return UnresolvedSite(int(line), int(col), Construct(str(construct)), str(detail),
                          tuple(Flag(str(f)) for f in flags))


def functions_to_json(functions: Mapping[str, FunctionFacts]) -> dict[str, object]:
    """A JSON-able form of ``{qualname: FunctionFacts}``."""
    return {
        name: [f.line, [_site_row(s) for s in f.sites], [_call_row(c) for c in f.calls],
               list(f.returns), [_read_row(r) for r in f.attribute_reads], list(f.self_imports),
               list(f.self_calls), [list(p) for p in f.self_params], list(f.lazy_params),
               [_unresolved_row(u) for u in f.unresolved]]
        for name, f in functions.items()
    }


def functions_from_json(data: object) -> dict[str, FunctionFacts]:
    """Inverse of :func:`functions_to_json`.

    Raises:
        KeyError, TypeError, ValueError, IndexError: if ``data`` is malformed.
    """
    if not isinstance(data, dict):
        raise TypeError("functions")
    functions = {}
    for name, row in data.items():
        (line, sites, calls, returns, reads, self_imports, self_calls, self_params, lazy_params,
         unresolved) = row
        functions[str(name)] = FunctionFacts(
            line=int(line), sites=tuple(_site(s) for s in sites),
            calls=tuple(_call(c) for c in calls), returns=tuple(str(r) for r in returns),
            attribute_reads=tuple(_read(r) for r in reads),
            self_imports=tuple(str(a) for a in self_imports),
            self_calls=tuple(str(c) for c in self_calls),
            self_params=tuple((str(a), int(i)) for a, i in self_params),
            lazy_params=tuple(int(i) for i in lazy_params),
            unresolved=tuple(_unresolved(u) for u in unresolved),
        )
    return functions


def facts_to_json(facts: ModuleFacts) -> dict[str, object]:
    """A JSON-able form of :class:`ModuleFacts` (inverse: :func:`facts_from_json`)."""
    return {
        "sites": [_site_row(s) for s in facts.sites],
        "bindings": sorted(facts.bindings),
        "all": list(facts.all_names) if facts.all_names is not None else None,
        "getattr": facts.defines_getattr,
        "all_conditional": facts.all_conditional,
        "binding_lines": dict(facts.binding_lines),
        "problem": [facts.problem.line, facts.problem.message] if facts.problem else None,
        "calls": [_call_row(c) for c in facts.calls],
        "functions": functions_to_json(facts.functions),
        "function_names": sorted(facts.function_names),
        "classes": sorted(facts.classes),
        "class_bases": {name: list(bases) for name, bases in facts.class_bases.items()},
        "aliases": dict(facts.aliases),
        "reads": [_read_row(r) for r in facts.attribute_reads],
        "call_bindings": {
            name: [b.line, b.callee, b.local, list(b.args), [list(kw) for kw in b.keywords]]
            for name, b in facts.call_bindings.items()
        },
        "attach": None if facts.lazy_attach is None else [
            list(facts.lazy_attach.submodules),
            {sub: list(names) for sub, names in facts.lazy_attach.submod_attrs.items()},
            facts.lazy_attach.scan_package,
        ],
        "unresolved": [_unresolved_row(u) for u in facts.unresolved],
        "path_changes": [[c.line, c.col, c.up, list(c.parts)] for c in facts.path_changes],
    }


def facts_from_json(data: object) -> ModuleFacts:
    """Rebuild :class:`ModuleFacts` from :func:`facts_to_json` output.

    Raises:
        KeyError, TypeError, ValueError, IndexError: if ``data`` is malformed.
    """
    if not isinstance(data, dict):
        raise TypeError("not an object")
    problem = data["problem"]
    all_names = data["all"]
    functions = functions_from_json(data["functions"])
    aliases = data["aliases"]
    if not isinstance(aliases, dict):
        raise TypeError("aliases")
    return ModuleFacts(
        sites=tuple(_site(row) for row in data["sites"]),
        bindings=frozenset(str(b) for b in data["bindings"]),
        all_names=None if all_names is None else tuple(str(n) for n in all_names),
        defines_getattr=bool(data["getattr"]),
        all_conditional=bool(data["all_conditional"]),
        binding_lines={str(k): int(v) for k, v in data["binding_lines"].items()},
        problem=None if problem is None else SourceProblem(int(problem[0]), str(problem[1])),
        calls=tuple(_call(row) for row in data["calls"]),
        functions=functions,
        function_names=frozenset(str(n) for n in data["function_names"]),
        classes=frozenset(str(c) for c in data["classes"]),
        class_bases={str(k): tuple(str(b) for b in v) for k, v in data["class_bases"].items()},
        aliases={str(k): str(v) for k, v in aliases.items()},
        attribute_reads=tuple(_read(r) for r in data["reads"]),
        call_bindings={
            str(name): CallBinding(
                int(line), str(callee), bool(local),
                tuple(None if a is None else str(a) for a in args),
                tuple((str(k), str(v)) for k, v in keywords),
            )
            for name, (line, callee, local, args, keywords) in data["call_bindings"].items()
        },
        lazy_attach=None if data["attach"] is None else LazyAttach(
            tuple(str(s) for s in data["attach"][0]),
            {str(sub): tuple(str(n) for n in names) for sub, names in data["attach"][1].items()},
            bool(data["attach"][2]),
        ),
        unresolved=tuple(_unresolved(u) for u in data["unresolved"]),
        path_changes=tuple(
            PathChange(int(line), int(col), int(up), tuple(str(p) for p in parts))
            for line, col, up, parts in data["path_changes"]
        ),
    )
