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
- Facts of files outside the project's source roots (site-packages, the standard library) are kept
  in the user-level cache (:func:`~flake8_importpolicy.answers.cache_dir.find_user_cache_dir`), shared
  by every project and checkout: the key is the same as in the project's cache (it names no project
  and no path), so sharing can only make an answer faster, never different. It is a cache directory
  like the project's: tagged, sealed entries verified on read, bounded, pruned, never pickle.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final, cast, get_args

from flake8_importpolicy import __version__
from flake8_importpolicy.answers.cache_dir import ensure_cache_dir, find_user_cache_dir
from flake8_importpolicy.answers.roots import is_under_roots, root_prefixes
from flake8_importpolicy.answers.freshness import find_package_files
from flake8_importpolicy.answers.jsonfile import (
    MALFORMED,
    expect_bool,
    expect_int,
    expect_list,
    expect_object,
    expect_optional_str,
    expect_str,
    read_json_sealed,
    write_json_atomic,
)
from flake8_importpolicy.model.facts import (
    AttributeRead,
    CallBinding,
    CallKind,
    CallSite,
    FunctionFacts,
    Guard,
    ImportSite,
    LazyAttach,
    ModuleAll,
    ModuleClasses,
    ModuleFacts,
    ModuleGetattr,
    ModuleValues,
    PathChange,
    SourceProblem,
    Target,
    UnresolvedSite,
)
from flake8_importpolicy.model.graph import BoundArgument, Construct, Flag
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

_FORMAT: Final = 27

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
        shared: the user-level cache that keeps the facts of files outside ``source_roots``, or None
            (every entry in ``directory``).
        source_roots: absolute, resolved directories of the project's first-party code.
    """

    def __init__(
        self,
        directory: Path,
        shared: DiskFactsCache | None = None,
        source_roots: tuple[Path, ...] = (),
    ) -> None:
        self.directory: Path = directory
        self.shared: DiskFactsCache | None = shared
        self._roots = root_prefixes(str(root) for root in source_roots)
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

    def _store(self, path: Path | None) -> DiskFactsCache:
        """Where the entry of the file at ``path`` is kept: the shared cache for a file outside the
        source roots, else this one (a buffer without a path is the project's)."""
        if self.shared is None or path is None:
            return self
        return self if is_under_roots(str(path), self._roots) else self.shared

    def get(self, digest: str, target: Target, path: Path | None = None) -> ModuleFacts | None:
        """Cached facts for the source with SHA-256 ``digest`` and this target, or None (missing,
        damaged or foreign entries count as missing). ``path`` decides only which cache is read."""
        store = self._store(path)
        if store is not self:
            return store.get(digest, target)
        try:
            facts = facts_from_json(self._read(self._key(digest, target)))
        except MALFORMED:
            self.misses += 1
            return None
        self.hits += 1
        return facts

    def get_function(
        self,
        digest: str,
        target: Target,
        qualname: str,
        argument: BoundArgument = None,
        path: Path | None = None,
    ) -> tuple[FunctionFacts | None] | None:
        """Cached facts of one function body (its first parameter bound to ``argument``, if given):
        ``(facts,)``, ``(None,)`` if the module is known to have no such function, or None if not
        cached."""
        store = self._store(path)
        if store is not self:
            return store.get_function(digest, target, qualname, argument)
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
        argument: BoundArgument = None,
        path: Path | None = None,
    ) -> None:
        """Store one function body's facts (None: no such function) atomically (best effort)."""
        store = self._store(path)
        if store is not self:
            store.put_function(digest, target, qualname, facts, argument)
            return
        row = None if facts is None else functions_to_json({qualname: facts})[qualname]
        self._write(self._key(digest, target, _function_kind(qualname, argument)), row)

    def put(
        self, digest: str, target: Target, facts: ModuleFacts, path: Path | None = None
    ) -> None:
        """Store facts atomically; silently does nothing if the directory is not writable."""
        store = self._store(path)
        if store is not self:
            store.put(digest, target, facts)
            return
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


def _function_kind(qualname: str, argument: BoundArgument) -> str:
    """The part of a function entry's key that names the function (and its bound argument)."""
    return f"function:{qualname}" if argument is None else f"function:{qualname}({argument!r})"


def open_facts_cache(policy: Policy) -> DiskFactsCache:
    """The facts cache for ``policy``: its ``settings.cache-dir``, and the user-level cache
    (:func:`~flake8_importpolicy.answers.cache_dir.find_user_cache_dir`, ``settings.user-cache-dir``)
    for the facts of files outside its source roots, unless there is none or it is the project's own
    directory."""
    directory = policy.settings.cache_dir
    user = find_user_cache_dir(policy.settings.user_cache_dir)
    if user is None or os.path.abspath(user) == os.path.abspath(directory):
        return DiskFactsCache(directory)
    roots = policy.settings.source_roots + policy.settings.source_roots_as_written
    return DiskFactsCache(directory, DiskFactsCache(user), roots)


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
            list(site.flags), site.detail, site.lazy_use_line, *_guard_row(site.guard),
            list(site.assumed), list(site.after), list(site.loaded),
            [[name, truth] for name, truth in site.when]]


def _site(row: object) -> ImportSite:
    (line, col, kind, target, level, anchor, names, flags, detail, lazy_use_line, guard,
     guard_resolves, assumed, after, loaded, when) = expect_list(row)
    if kind not in ("import", "from-import", "star-import", "importlib"):
        raise ValueError(kind)
    return ImportSite(
        line=expect_int(line), col=expect_int(col), kind=kind,
        target=expect_optional_str(target), level=expect_int(level), anchor=expect_str(anchor),
        names=_strings(names), flags=_flags(flags), detail=expect_str(detail),
        lazy_use_line=None if lazy_use_line is None else expect_int(lazy_use_line),
        guard=_guard(guard, guard_resolves),
        assumed=_strings(assumed), after=_strings(after), loaded=_strings(loaded),
        when=tuple(_truth_of_name(item) for item in expect_list(when)),
    )


def _guard_row(guard: Guard | None) -> list[object]:
    return [[], True] if guard is None else [list(guard.modules), guard.resolves]


def _guard(modules: object, resolves: object) -> Guard | None:
    return Guard.of((_strings(modules), expect_bool(resolves)))


def _truth_of_name(row: object) -> tuple[str, bool]:
    name, truth = expect_list(row)
    return expect_str(name), expect_bool(truth)


def _strings(value: object) -> tuple[str, ...]:
    return tuple(expect_str(item) for item in expect_list(value))


def _flags(value: object) -> tuple[Flag, ...]:
    return tuple(Flag(expect_str(flag)) for flag in expect_list(value))


def _call_row(call: CallSite) -> list[object]:
    return [call.line, call.col, call.callee, call.local, call.kind, list(call.flags),
            list(call.assumed), [list(write) for write in call.environ], list(call.arguments),
            *_guard_row(call.guard)]


_CALL_KINDS: Final = frozenset(get_args(CallKind))
"""The kinds a cached call may have: :data:`~flake8_importpolicy.model.facts.CallKind`'s values."""


def _call(row: object) -> CallSite:
    line, col, callee, local, kind, flags, assumed, environ, arguments, guard, guard_resolves = (
        expect_list(row)
    )
    if kind not in _CALL_KINDS:
        raise ValueError(kind)
    return CallSite(expect_int(line), expect_int(col), expect_str(callee), expect_bool(local),
                    cast(CallKind, kind), _flags(flags), _strings(assumed),
                    tuple(_environ_write(write) for write in expect_list(environ)),
                    tuple(expect_optional_str(value) for value in expect_list(arguments)),
                    _guard(guard, guard_resolves))


def _environ_write(row: object) -> tuple[str, str | None, bool]:
    name, value, certain = expect_list(row)
    return expect_str(name), None if value is None else expect_str(value), expect_bool(certain)


def _read_row(read: AttributeRead) -> list[object]:
    return [read.line, read.col, read.name, read.target, read.attr, list(read.flags), read.deleted,
            list(read.then)]


def _read(row: object) -> AttributeRead:
    line, col, name, target, attr, flags, deleted, then = expect_list(row)
    return AttributeRead(expect_int(line), expect_int(col), expect_str(name),
                         expect_optional_str(target), expect_str(attr), _flags(flags),
                         expect_bool(deleted), tuple(expect_str(a) for a in expect_list(then)))


def _unresolved_row(site: UnresolvedSite) -> list[object]:
    return [site.line, site.col, str(site.construct), site.detail, list(site.flags)]


def _unresolved(row: object) -> UnresolvedSite:
    line, col, construct, detail, flags = expect_list(row)
    return UnresolvedSite(expect_int(line), expect_int(col), Construct(expect_str(construct)),
                          expect_str(detail), _flags(flags))


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
    functions = {}
    for name, row in expect_object(data).items():
        (line, sites, calls, returns, reads, self_imports, self_calls, self_params, lazy_params,
         unresolved) = expect_list(row)
        functions[name] = FunctionFacts(
            line=expect_int(line), sites=tuple(_site(s) for s in expect_list(sites)),
            calls=tuple(_call(c) for c in expect_list(calls)), returns=_strings(returns),
            attribute_reads=tuple(_read(r) for r in expect_list(reads)),
            self_imports=_strings(self_imports), self_calls=_strings(self_calls),
            self_params=tuple(_param(pair) for pair in expect_list(self_params)),
            lazy_params=tuple(expect_int(i) for i in expect_list(lazy_params)),
            unresolved=tuple(_unresolved(u) for u in expect_list(unresolved)),
        )
    return functions


def _param(pair: object) -> tuple[str, int]:
    attribute, index = expect_list(pair)
    return expect_str(attribute), expect_int(index)


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
            {sub: list(names) for sub, names in facts.lazy_attach.maybe_attrs.items()},
            list(facts.lazy_attach.any_name),
            facts.lazy_attach.scan_prefix,
        ],
        "unresolved": [_unresolved_row(u) for u in facts.unresolved],
        "path_changes": [[c.line, c.col, c.up, list(c.parts)] for c in facts.path_changes],
        "name_values": {
            name: [[dotted, undecided] for dotted, undecided in choices]
            for name, choices in facts.name_values.items()
        },
        "truths": dict(facts.values.truths),
    }


def facts_from_json(data: object) -> ModuleFacts:
    """Rebuild :class:`ModuleFacts` from :func:`facts_to_json` output, every value checked by type
    and range.

    Raises:
        KeyError, TypeError, ValueError, IndexError: if ``data`` is malformed.
    """
    data = expect_object(data)
    problem = data["problem"]
    all_names = data["all"]
    functions = functions_from_json(data["functions"])
    attach = data["attach"]
    return ModuleFacts(
        sites=tuple(_site(row) for row in expect_list(data["sites"])),
        bindings=frozenset(_strings(data["bindings"])),
        exports=ModuleAll(
            None if all_names is None else _strings(all_names), expect_bool(data["all_conditional"])
        ),
        getattr_hook=ModuleGetattr(
            expect_bool(data["getattr"]), None if attach is None else _lazy_attach(attach)
        ),
        binding_lines={k: expect_int(v) for k, v in expect_object(data["binding_lines"]).items()},
        problem=None if problem is None else _problem(problem),
        calls=tuple(_call(row) for row in expect_list(data["calls"])),
        functions=functions,
        function_names=frozenset(_strings(data["function_names"])),
        class_tree=ModuleClasses(
            frozenset(_strings(data["classes"])),
            {k: _strings(v) for k, v in expect_object(data["class_bases"]).items()},
        ),
        aliases={k: expect_str(v) for k, v in expect_object(data["aliases"]).items()},
        attribute_reads=tuple(_read(r) for r in expect_list(data["reads"])),
        values=ModuleValues(
            {name: _call_binding(row) for name, row in expect_object(data["call_bindings"]).items()},
            {
                name: tuple(_choice(row) for row in expect_list(choices))
                for name, choices in expect_object(data["name_values"]).items()
            },
            {name: expect_bool(truth) for name, truth in expect_object(data["truths"]).items()},
        ),
        unresolved=tuple(_unresolved(u) for u in expect_list(data["unresolved"])),
        path_changes=tuple(_path_change(row) for row in expect_list(data["path_changes"])),
    )


def _choice(row: object) -> tuple[str, bool]:
    dotted, undecided = expect_list(row)
    return expect_str(dotted), expect_bool(undecided)


def _problem(row: object) -> SourceProblem:
    line, message = expect_list(row)
    return SourceProblem(expect_int(line), expect_str(message))


def _call_binding(row: object) -> CallBinding:
    line, callee, local, args, keywords = expect_list(row)
    return CallBinding(
        expect_int(line), expect_str(callee), expect_bool(local),
        tuple(expect_optional_str(a) for a in expect_list(args)),
        tuple(_keyword(pair) for pair in expect_list(keywords)),
    )


def _keyword(pair: object) -> tuple[str, str]:
    name, value = expect_list(pair)
    return expect_str(name), expect_str(value)


def _lazy_attach(row: object) -> LazyAttach:
    submodules, attrs, scan_package, maybe_attrs, any_name, scan_prefix = expect_list(row)
    return LazyAttach(
        _strings(submodules), {sub: _strings(names) for sub, names in expect_object(attrs).items()},
        expect_bool(scan_package),
        {sub: _strings(names) for sub, names in expect_object(maybe_attrs).items()},
        _strings(any_name), expect_str(scan_prefix),
    )


def _path_change(row: object) -> PathChange:
    line, col, up, parts = expect_list(row)
    return PathChange(expect_int(line), expect_int(col), expect_int(up), _strings(parts))
