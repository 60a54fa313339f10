"""The policy file: parsing and validating ``policy.toml`` (schema version 1).

A policy lives in ``policy.toml``, or in the ``[tool.importpolicy]`` table of ``pyproject.toml``
(same schema). :func:`discover_policy` takes an explicit path or walks up from a directory with
:func:`~flake8_importpolicy.config.locate.find_policy`; :func:`load_policy` parses and validates one
file into a :class:`~flake8_importpolicy.model.policy.Policy`.

Validation reports every problem at once: :class:`PolicyError` carries one :class:`PolicyProblem`
per problem, each with a TOML-ish key path (``settings.external``, ``heavy."torch"``,
``light."a.b".forbid[0]``, ``ignore[2].reason``; indexes are 0-based; prefixed with
``tool.importpolicy.`` in ``pyproject.toml``), and ``str(err)`` renders them all::

    policy.toml is not valid (2 problems):
      settings.externl: unknown key; did you mean 'external'?
      light."a.b".reason: missing; every light module needs a reason (why it must stay light)

Errors about the file as a whole (unreadable, not UTF-8, not TOML) are one line, compiler style::

    policy.toml:3:7: invalid TOML: Expected '=' after a key in a key/value pair

This module imports neither flake8 nor mypy.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from flake8_importpolicy.config.locate import find_policy, has_cache_tag, resolve_cache_dir
from flake8_importpolicy.model.errors import (
    PolicyError,
    PolicyNotFound,
    PolicyProblem,
    find_close_match,
)
from flake8_importpolicy.model.files import (
    CACHE_TAG,
    DEFAULT_CACHE_DIR,
    POLICY_FILENAME,
    PYPROJECT_FILENAME,
    PYPROJECT_TABLE,
)
from flake8_importpolicy.model.patterns import (
    ModulePattern,
    PatternError,
    canonical_assumption_key,
    parse_pattern,
)
from flake8_importpolicy.model.policy import (
    External,
    HeavyRule,
    LightRule,
    PatternEntry,
    Policy,
    Settings,
)
from flake8_importpolicy.model.reading import read_regular_file

if TYPE_CHECKING:  # loaded when a policy has [assume], extends or [[ignore]] (tests/test_cli.py)
    from flake8_importpolicy.model.assume import Assumption
    from flake8_importpolicy.model.bases import PolicySource
    from flake8_importpolicy.model.ignore import IgnoreRule, NodePattern

__all__ = [
    "DEFAULT_CALL_DEPTH",
    "EXTERNAL_VALUES",
    "SUPPORTED_VERSION",
    "discover_policy",
    "load_policy",
    "policy_from_text",
]

SUPPORTED_VERSION: Final = 1
DEFAULT_CALL_DEPTH: Final = 3

EXTERNAL_VALUES: Final[tuple[External, ...]] = ("auto", "follow", "stop")

_TOP_LEVEL_KEYS: Final = (
    "version", "extends", "settings", "heavy", "heavy-calls", "light", "ignore", "assume"
)
_SETTINGS_KEYS: Final = (
    "source-roots",
    "interpreter",
    "target-versions",
    "platform",
    "external",
    "cache-dir",
    "call-depth",
    "lazy-imports",
    "unresolved",
    "baseline",
)
LAZY_IMPORTS_VALUES: Final = ("normal", "all", "none")
UNRESOLVED_VALUES: Final = ("info", "error")
_LIGHT_KEYS: Final = ("reason", "forbid", "allow", "after-import", "max-modules", "max-import-ms")
_IGNORE_KEYS: Final = ("import", "unresolved", "reason")
_PYPROJECT_PREFIX: Final = PYPROJECT_TABLE

_BARE_KEY_RE: Final = re.compile(r"[A-Za-z0-9_-]+")
_TOML_POSITION_RE: Final = re.compile(r"^(.*) \(at line (\d+), column (\d+)\)$", re.DOTALL)
_TOML_END_RE: Final = re.compile(r"^(.*) \(at end of document\)$", re.DOTALL)
_TOML_DECLARE_RE: Final = re.compile(r"^Cannot declare (\(.*\)) twice$", re.DOTALL)
_PLATFORM_RE: Final = re.compile(r"[a-z][a-z0-9_]*")
_PLATFORM_ALIASES: Final = {
    "windows": "win32",
    "win": "win32",
    "win64": "win32",
    "macos": "darwin",
    "macosx": "darwin",
    "mac": "darwin",
    "osx": "darwin",
}
_RELATIVE_NOTE: Final = " (relative to the policy file's directory)"

_TOO_DEEP: Final = PolicyProblem("", "tables or arrays nested too deeply")


# --------------------------------------------------------------------------------------------
# Finding and loading


def discover_policy(start: Path, explicit: Path | None = None) -> Policy:
    """Load the policy given explicitly, else the one
    :func:`~flake8_importpolicy.config.locate.find_policy` finds from ``start``.

    Raises:
        PolicyNotFound: if ``explicit`` is None and no policy file is found.
        PolicyError: if the policy file cannot be loaded (see :func:`load_policy`).
    """
    if explicit is not None:
        return load_policy(explicit)
    found = find_policy(start)
    if found is None:
        raise PolicyNotFound(start)
    return load_policy(found)


def load_policy(path: Path) -> Policy:
    """Read, parse and validate a policy file, with the bases it ``extends``.

    Args:
        path: a ``policy.toml`` (any name other than ``pyproject.toml`` is read as one) or a
            ``pyproject.toml`` whose ``[tool.importpolicy]`` table holds the policy.

    Returns:
        The :class:`Policy`. ``extends = [...]`` merges base files (an entry with a ``/`` or ending
        in ``.toml``, relative to the extending file; a ``pyproject.toml`` base contributes its
        ``[tool.importpolicy]``) and built-in presets (any other entry) into it: tables merge by
        key and the extending file's value wins, a ``[light."x"]`` table is replaced whole, and
        ``[[ignore]]`` entries concatenate, a base's first (docs/policy.md, ``extends``).

    Raises:
        PolicyError: for every kind of bad input (unreadable file, bad UTF-8, invalid TOML, a
            ``pyproject.toml`` without ``[tool.importpolicy]``, schema problems, a base that cannot
            be read or is invalid, an ``extends`` cycle), listing every problem at once; a problem
            in a base names that file (:attr:`PolicyProblem.file`) and its key there.
    """
    given = Path(path)
    top = _read_source(given.absolute(), None)
    merger = _Merger(top)
    table = merger.run()
    sources = tuple(merger.sources)
    digest = top.digest
    if sources:
        digest = hashlib.sha256(
            "\0".join([top.digest, *(f"{s.label}\0{s.digest}" for s in sources)]).encode()
        ).hexdigest()
    builder = _Builder(given.resolve(), top.text, top.prefix, merger)
    try:
        policy = builder.build(table, digest)
    except RecursionError:
        raise PolicyError(given, [_TOO_DEEP]) from None
    problems = merger.problems + [merger.attribute(problem) for problem in builder.problems]
    if policy is None or problems:
        raise PolicyError(given, problems or [PolicyProblem("", "invalid policy")])
    return dataclasses.replace(policy, file_digest=top.digest, sources=sources)


def policy_from_text(text: str, path: Path) -> Policy:
    """Validate ``text`` as the policy file ``path`` would be read (relative paths and ``extends``
    against its directory), without the file having to exist: ``importpolicy suggest``'s draft.

    Raises:
        PolicyError: as :func:`load_policy`.
    """
    path = path.absolute()
    raw = text.encode("utf-8")
    try:
        table: dict[str, object] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message, line, column = _toml_error(text, str(exc))
        raise PolicyError(path, [PolicyProblem("", f"invalid TOML: {message}", line, column)]) from None
    top = _Source(path, None, text, "", table, hashlib.sha256(raw).hexdigest())
    merger = _Merger(top)
    merged = merger.run()
    builder = _Builder(path, text, "", merger)
    policy = builder.build(merged, top.digest)
    problems = merger.problems + [merger.attribute(problem) for problem in builder.problems]
    if policy is None or problems:
        raise PolicyError(path, problems or [PolicyProblem("", "invalid policy")])
    return dataclasses.replace(policy, file_digest=top.digest, sources=tuple(merger.sources))


class _Source:
    """One file a policy is read from: the policy file, a base file or a preset's data file.

    A plain class, not a dataclass: the loader's private record is made on every run, and a
    dataclass costs its creation at every import (docs/performance.md, "What the cold path avoids")."""

    __slots__ = ("path", "label", "text", "prefix", "table", "digest")

    def __init__(
        self, path: Path, label: str | None, text: str, prefix: str, table: dict[str, object],
        digest: str,
    ) -> None:
        self.path = path
        self.label = label  # None for the policy file itself; else how messages name it
        self.text = text
        self.prefix = prefix
        self.table = table
        self.digest = digest


def _read_source(path: Path, label: str | None, *, preset: bool = False) -> _Source:
    """Read and parse one policy file (a base's ``[tool.importpolicy]`` for a ``pyproject.toml``).

    Raises:
        PolicyError: the file cannot be read, is not UTF-8 or TOML, or is a ``pyproject.toml``
            without ``[tool.importpolicy]``; its problem carries ``file=label``.
    """
    def fail(problem: PolicyProblem) -> PolicyError:
        return PolicyError(path, [dataclasses.replace(problem, file=label)])

    try:
        raw = read_regular_file(path)[1]  # a FIFO or a device is refused, never waited for
    except OSError as exc:
        raise fail(PolicyProblem("", f"cannot read: {exc.strerror or exc}")) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        byte_line, byte_column = _byte_position(raw, exc.start)
        raise fail(PolicyProblem(
            "", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", byte_line, byte_column
        )) from None
    try:
        document: dict[str, object] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message, line, column = _toml_error(text, str(exc))
        raise fail(PolicyProblem("", f"invalid TOML: {message}", line, column)) from None
    except RecursionError:
        raise fail(_TOO_DEEP) from None
    table: dict[str, object] = document
    prefix = ""
    if path.name == PYPROJECT_FILENAME and not preset:
        prefix = _PYPROJECT_PREFIX
        tool = document.get("tool")
        if not isinstance(tool, dict) or "importpolicy" not in tool:
            raise fail(PolicyProblem(
                "",
                f"no [{_PYPROJECT_PREFIX}] table; add one, "
                f"or write the policy in {POLICY_FILENAME}",
            ))
        section = tool["importpolicy"]
        if not isinstance(section, dict):
            raise fail(PolicyProblem(prefix, f"expected a table, got {_describe(section)}"))
        table = section
    return _Source(path, label, text, prefix, table, hashlib.sha256(raw).hexdigest())


_MERGED_TABLES: Final = ("settings", "heavy", "heavy-calls", "light", "assume")


class _Merger:
    """Resolves ``extends`` (transitively) and merges the bases into the policy file's table,
    remembering which file each entry came from (for messages and for problems)."""

    def __init__(self, top: _Source) -> None:
        self.top = top
        self.problems: list[PolicyProblem] = []
        self.sources: list[PolicySource] = []
        # key path (without prefix) of an entry -> the file it came from
        self.origins: dict[tuple[str, ...], _Source] = {}
        # per merged [[ignore]] entry: (file, its index there, its line there)
        self.ignore_origins: list[tuple[_Source, int, int]] = []
        self._read: dict[Path, _Source | None] = {}

    def run(self) -> dict[str, object]:
        """The merged table of the policy file (without ``extends``)."""
        table, origins, ignores = self._merged(self.top, (_identity(self.top.path),))
        self.origins = origins
        self.ignore_origins = ignores
        return table

    # -- reading bases -------------------------------------------------------------------------

    def _label(self, path: Path) -> str:
        """How messages name a base file: relative to the policy file's directory."""
        try:
            return os.path.relpath(path, self.top.path.parent)
        except ValueError:  # another drive
            return str(path)

    def _bases(self, source: _Source, chain: tuple[Path, ...]) -> list[_Source]:
        """The bases ``source`` extends, read (problems reported against ``source``)."""
        if "extends" not in source.table:
            return []
        key = _child(source.prefix, "extends")
        value = source.table["extends"]
        if not isinstance(value, list):
            self.report(source, key, f'expected an array of preset names and policy files, e.g. '
                        f'["torch-cuda", "../base.toml"], got {_describe(value)}')
            return []
        bases: list[_Source] = []
        for index, entry in enumerate(value):
            item_key = f"{key}[{index}]"
            if not isinstance(entry, str) or not entry.strip():
                self.report(source, item_key, "expected a preset name or a policy file path, got "
                            + (_describe(entry) if not isinstance(entry, str) else "an empty string"))
                continue
            base = self._base(source, item_key, entry.strip(), chain)
            if base is not None:
                bases.append(base)
        return bases

    def _base(
        self, source: _Source, key: str, entry: str, chain: tuple[Path, ...]
    ) -> _Source | None:
        preset = "/" not in entry and "\\" not in entry and not entry.endswith(".toml")
        if preset:
            from flake8_importpolicy.config.presets import preset_names, preset_path  # extends only

            path = preset_path(entry)
            if path is None:
                names = preset_names()
                close = find_close_match(entry, names)
                hint = f"did you mean {_quote(close)}? " if close else ""
                self.report(source, key, f"unknown preset {_quote(entry)}; {hint}built-in presets: "
                            + ", ".join(names) + ' (a file is written with a "/" or ending in .toml)')
                return None
            label = f"preset {entry}"
        else:
            path = Path(os.path.normpath(source.path.parent / entry))
            label = self._label(path)
        ident = _identity(path)
        if ident in chain:
            shown = [self._label(p) if p != chain[0] else self.top.path.name for p in chain]
            self.report(source, key, "extends cycle: " + " -> ".join([*shown, label]))
            return None
        if ident in self._read:
            return self._read[ident]
        try:
            base = _read_source(path, label, preset=preset)
        except PolicyError as exc:
            for problem in exc.problems:
                if problem.message.startswith("cannot read"):
                    self.report(source, key, f"{_quote(entry)}: {problem.message}"
                                + ("" if preset else " (relative to the file that extends it)"))
                else:
                    self.problems.append(problem)
            self._read[ident] = None
            return None
        self._read[ident] = base
        from flake8_importpolicy.model.bases import PolicySource

        self.sources.append(PolicySource(label, path, base.digest))
        return base

    # -- merging ---------------------------------------------------------------------------------

    def _merged(
        self, source: _Source, chain: tuple[Path, ...]
    ) -> tuple[dict[str, object], dict[tuple[str, ...], _Source], list[tuple[_Source, int, int]]]:
        """``source``'s table with its bases merged in, the origin of each entry, and the origin of
        each ``[[ignore]]`` entry."""
        table: dict[str, object] = {}
        origins: dict[tuple[str, ...], _Source] = {}
        ignores: list[tuple[_Source, int, int]] = []
        for base in self._bases(source, chain):
            sub_table, sub_origins, sub_ignores = self._merged(base, (*chain, _identity(base.path)))
            self._merge(table, origins, ignores, sub_table, sub_origins, sub_ignores)
        own_ignores: list[tuple[_Source, int, int]] = []
        raw_ignores = source.table.get("ignore")
        if isinstance(raw_ignores, list):
            imports = [
                (item.get("import", item.get("unresolved")) if isinstance(item, dict) else None)
                for item in raw_ignores
            ]
            lines = _ignore_lines(source.text, imports, source.prefix)
            own_ignores = [(source, index, line) for index, line in enumerate(lines)]
        own = {key: value for key, value in source.table.items() if key != "extends"}
        own_origins = _origins_of(own, source)
        self._merge(table, origins, ignores, own, own_origins, own_ignores)
        return table, origins, ignores

    @staticmethod
    def _merge(
        table: dict[str, object],
        origins: dict[tuple[str, ...], _Source],
        ignores: list[tuple[_Source, int, int]],
        top: dict[str, object],
        top_origins: dict[tuple[str, ...], _Source],
        top_ignores: list[tuple[_Source, int, int]],
    ) -> None:
        """Merge ``top`` (the extending side) into ``table`` (what the bases gave), in place."""
        for name, value in top.items():
            old = table.get(name)
            if name == "ignore" and isinstance(old, list) and isinstance(value, list):
                table[name] = [*old, *value]
                ignores.extend(top_ignores)
                continue
            if name == "ignore":
                ignores[:] = list(top_ignores)
            if name in _MERGED_TABLES and isinstance(old, dict) and isinstance(value, dict):
                merged = dict(old)
                for key, item in value.items():
                    previous = merged.get(key)
                    if name == "assume" and key == "environ" and isinstance(previous, dict) \
                            and isinstance(item, dict):
                        merged[key] = {**previous, **item}
                    else:
                        merged[key] = item
                table[name] = merged
            else:
                table[name] = value
                for path in [p for p in origins if p[0] == name]:
                    del origins[path]
        origins.update(top_origins)

    # -- problems --------------------------------------------------------------------------------

    def report(self, source: _Source, key: str, message: str) -> None:
        """A problem with ``key`` of ``source`` (located in its text when it is a base)."""
        self.problems.append(self._problem(source, key, message))

    def _problem(self, source: _Source, key: str, message: str) -> PolicyProblem:
        if source.label is None:
            return PolicyProblem(key, message)
        from flake8_importpolicy.config.positions import find_key_positions, locate_key  # bases only

        position = locate_key(find_key_positions(source.text), key) if key else None
        line, column = position if position else (None, None)
        return PolicyProblem(key, message, line, column, source.label)

    def attribute(self, problem: PolicyProblem) -> PolicyProblem:
        """A problem the validation of the merged table found, told against the file its entry
        came from, with the key as written there."""
        if problem.file is not None or not self.sources:
            return problem
        key = problem.key
        prefix = self.top.prefix
        if prefix and (key == prefix or key.startswith(prefix + ".")):
            key = key[len(prefix) + 1:]
        from flake8_importpolicy.config.positions import parse_key_path  # a broken policy only

        parts = parse_key_path(key) if key else None
        if not parts:
            return problem
        if parts[0] == "ignore" and len(parts) > 1 and isinstance(parts[1], int):
            if parts[1] >= len(self.ignore_origins):
                return problem
            source, index, line = self.ignore_origins[parts[1]]
            if source.label is None:
                return dataclasses.replace(problem, key=problem.key.replace(
                    f"ignore[{parts[1]}]", f"ignore[{index}]", 1))
            rest = key[key.index("]") + 1:]
            local = _child(source.prefix, "ignore") + f"[{index}]" + rest
            return PolicyProblem(local, problem.message, line, None, source.label)
        origin = None
        for size in (3, 2, 1):
            origin = self.origins.get(tuple(str(p) for p in parts[:size]))
            if origin is not None:
                break
        if origin is None or origin.label is None:
            return problem
        local = f"{origin.prefix}.{key}" if origin.prefix else key
        return self._problem(origin, local, problem.message)

    def origin(self, *path: str) -> _Source | None:
        """The file the entry at ``path`` (``("heavy", "torch")``) came from, or None."""
        for size in range(len(path), 0, -1):
            found = self.origins.get(path[:size])
            if found is not None:
                return found
        return None

    def label(self, *path: str) -> str:
        """:attr:`HeavyRule.source` for the entry at ``path``: ``""`` for the policy file itself."""
        found = self.origin(*path)
        return found.label or "" if found is not None else ""

    def root(self, *path: str) -> Path | None:
        """The directory that paths of the entry at ``path`` are relative to, when it came from a
        base (None: the policy file's directory)."""
        found = self.origin(*path)
        return found.path.parent if found is not None and found.label is not None else None


def _identity(path: Path) -> Path:
    """The path a file is known by for ``extends`` cycles: symbolic links resolved."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


def _origins_of(table: dict[str, object], source: _Source) -> dict[tuple[str, ...], _Source]:
    """Every entry of one file's table, mapped to the file."""
    origins: dict[tuple[str, ...], _Source] = {}
    for name, value in table.items():
        origins[(name,)] = source
        if name in _MERGED_TABLES and isinstance(value, dict):
            for key, item in value.items():
                origins[(name, key)] = source
                if name == "assume" and key == "environ" and isinstance(item, dict):
                    for variable in item:
                        origins[(name, key, variable)] = source
    return origins


def _byte_position(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based (line, column) of byte ``offset`` in ``raw`` (column counted in bytes)."""
    line_start = raw.rfind(b"\n", 0, offset) + 1
    return raw.count(b"\n", 0, offset) + 1, offset - line_start + 1


def _toml_error(text: str, error: str) -> tuple[str, int | None, int | None]:
    """Split a ``tomllib`` message into (message, line, column)."""
    match = _TOML_POSITION_RE.match(error)
    if match:
        message, line, column = match.group(1), int(match.group(2)), int(match.group(3))
    else:
        end = _TOML_END_RE.match(error)
        if end is None:
            return error, None, None
        message = end.group(1)
        line = text.count("\n") + 1
        column = len(text) - (text.rfind("\n") + 1) + 1
    if message == "Cannot overwrite a value":
        message += " (is a key set twice?)"
    declared = _TOML_DECLARE_RE.match(message)
    if declared:  # "Cannot declare ('light', 'a.b') twice" -> "Cannot declare [light."a.b"] twice"
        try:
            names = ast.literal_eval(declared.group(1))
        except (ValueError, SyntaxError):
            names = None
        if isinstance(names, tuple) and names and all(isinstance(n, str) for n in names):
            message = f"Cannot declare [{'.'.join(_key(name) for name in names)}] twice"
    return message, line, column


# --------------------------------------------------------------------------------------------
# Validation helpers


def _quote(text: str) -> str:
    """Return ``text`` as a TOML basic string."""
    return json.dumps(text, ensure_ascii=False)


def _key(key: str) -> str:
    """Return ``key`` as it appears in a key path: bare if TOML allows, else quoted."""
    return key if _BARE_KEY_RE.fullmatch(key) else _quote(key)


def _child(base: str, key: str, *, quote: bool = False) -> str:
    """Return the key path of ``key`` inside ``base`` (module names are always quoted)."""
    part = _quote(key) if quote else _key(key)
    return f"{base}.{part}" if base else part


def _describe(value: object) -> str:
    """Describe a TOML value for ``got ...`` messages: ``the string "3"``, ``an array``."""
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, str):
        return f"the string {_quote(value)}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the float {value!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date/time"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _integral(value: object) -> object:
    """``value`` as an int when it is a float with an integral value (``2.0``): JSON, and so the
    policy's JSON Schema that editors check, has one number type, in which 2.0 is the integer 2."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _leaves(
    segments: list[str], value: object, is_table_leaf: Callable[[dict[str, object]], bool]
) -> list[tuple[list[str], object]]:
    """Flatten the nested tables that unquoted dotted keys create into (segments, value) leaves.

    A leaf is a non-table value, an empty table, or a table that ``is_table_leaf`` accepts.
    """
    if isinstance(value, dict):
        if not value or is_table_leaf(value):
            return [(segments, value)]
        found: list[tuple[list[str], object]] = []
        for key, item in value.items():
            found.extend(_leaves([*segments, key], item, is_table_leaf))
        return found
    return [(segments, value)]


_MAX_EXPRESSION_DEPTH: Final = 500
"""The deepest ``after-import`` syntax tree accepted. Where CPython's parser gives up depends on the
recursion limit of the process (mypy raises it), so a fixed bound keeps every client's answer the same
(a unary minus 3,000 deep fails to parse under the default limit; brackets stop at 200)."""


def _is_deeper(tree: ast.AST, limit: int) -> bool:
    """True if ``tree`` is more than ``limit`` nodes deep (walked without recursion)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


def _is_not_empty(directory: Path) -> bool:
    try:
        return bool(os.listdir(directory))
    except OSError:
        return True


def _flat_names(segments: list[str], value: object) -> list[tuple[str, object]]:
    """The first leaf of the nested tables an unquoted dotted key made, as (dotted name, value)."""
    while isinstance(value, dict) and value:
        name, value = next(iter(value.items()))
        segments = [*segments, name]
    return [(".".join(segments), value)]


def _has_reason(table: dict[str, object]) -> bool:
    return "reason" in table


def _is_light_table(table: dict[str, object]) -> bool:
    return any(key in table for key in _LIGHT_KEYS)


def _is_light_nesting(table: dict[str, object]) -> bool:
    """True if a ``[light]`` value only holds tables made by unquoted dotted names.

    That is: no light key, and either a sub-table or only keys that are not typos of light keys
    (``{"reson": ...}`` is a typo; ``{"b": "reason"}`` comes from ``a.b = "reason"``).
    """
    if not table or _is_light_table(table):
        return False
    if any(isinstance(item, dict) for item in table.values()):
        return True
    return not any(find_close_match(key, _LIGHT_KEYS) for key in table)


def _ignore_lines(text: str, imports: list[object], prefix: str) -> list[int]:
    """Best-effort 1-based line of each ``[[ignore]]`` entry's ``import = ...`` key (1 if none)."""
    lines = text.split("\n")  # TOML lines: splitlines() would also split on \f, \u2028, ...
    table = r"\s*\.\s*".join(re.escape(part) for part in [*prefix.split("."), "ignore"] if part)
    header_re = re.compile(rf"\s*\[\[\s*{table}\s*\]\]")
    import_re = re.compile(r"\s*(?:import|unresolved|\"import\"|'import')\s*=")
    headers = [index for index, line in enumerate(lines) if header_re.match(line)]
    result: list[int] = []
    if len(headers) == len(imports):
        for number, start in enumerate(headers):
            end = headers[number + 1] if number + 1 < len(headers) else len(lines)
            found = next((i for i in range(start + 1, end) if import_re.match(lines[i])), start)
            result.append(found + 1)
        return result
    cursor = 0
    for value in imports:
        line = 1
        if isinstance(value, str) and value:
            needle = _quote(value)
            hit = next((i for i in range(cursor, len(lines)) if needle in lines[i]), None)
            if hit is None:
                hit = next((i for i in range(len(lines)) if value in lines[i]), None)
            if hit is not None:
                line = hit + 1
                cursor = hit + 1
        result.append(line)
    return result


class _Builder:
    """Validates one policy table, collecting every problem in :attr:`problems`."""

    def __init__(self, path: Path, text: str, prefix: str, merger: _Merger | None = None) -> None:
        self.path = path
        self.root = path.parent
        self.merger = merger
        self.text = text
        self.prefix = prefix
        self.is_pyproject = bool(prefix)
        self.problems: list[PolicyProblem] = []
        self.entries: list[PatternEntry] = []  # forbid/allow patterns that name no [heavy] key
        self.written_roots: list[Path] = []  # Settings.source_roots_as_written

    # -- helpers -----------------------------------------------------------------------------

    def add(self, key: str, message: str, line: int | None = None) -> None:
        self.problems.append(PolicyProblem(key, message, line))

    def located(
        self, entries: list[PatternEntry], origin: tuple[str, ...] = ()
    ) -> tuple[PatternEntry, ...]:
        """``entries`` with the line each is written on (scanning the file only when there are any),
        in the base they came from when ``origin`` (their table's key path) names one."""
        if not entries:
            return ()
        source = self.merger.origin(*origin) if self.merger is not None and origin else None
        text, prefix = self.text, self.prefix
        if source is not None and source.label is not None:
            text, prefix = source.text, source.prefix

        def local(key: str) -> str:
            if self.prefix and key.startswith(self.prefix + "."):
                key = key[len(self.prefix) + 1:]
            return f"{prefix}.{key}" if prefix else key

        from flake8_importpolicy.config.positions import find_key_positions, locate_key

        positions = find_key_positions(text)
        return tuple(
            PatternEntry(entry.key, entry.pattern,
                         (locate_key(positions, local(entry.key)) or (None,))[0])
            for entry in entries
        )

    def source(self, *path: str) -> str:
        """Where the entry at ``path`` came from (:attr:`HeavyRule.source`; ``""``: this file)."""
        return self.merger.label(*path) if self.merger is not None else ""

    def setting_root(self, name: str) -> Path:
        """The directory a path in ``settings.<name>`` is relative to: the file that set it."""
        found = self.merger.root("settings", name) if self.merger is not None else None
        return found if found is not None else self.root

    def key(self, name: str) -> str:
        """Key path of a top-level key (prefixed in pyproject.toml)."""
        return _child(self.prefix, name)

    def header(self, name: str) -> str:
        """Table name as the user writes it in a header: ``light."a"`` or
        ``tool.importpolicy.light."a"``."""
        return f"{self.prefix}.{name}" if self.prefix else name

    def unknown_key(
        self, base: str, key: str, allowed: tuple[str, ...], line: int | None = None
    ) -> None:
        close = find_close_match(key, allowed)
        hint = f"did you mean {close!r}?" if close else "expected one of: " + ", ".join(allowed)
        self.add(_child(base, key), f"unknown key; {hint}", line)

    def pattern(self, key: str, text: str, line: int | None = None) -> ModulePattern | None:
        try:
            return parse_pattern(text)
        except PatternError as exc:
            self.add(key, str(exc), line)
            return None

    def reason(self, key: str, value: object, why: str, line: int | None = None) -> str | None:
        """Validate a ``reason = ...`` value; ``why`` completes "say why ..."."""
        if not isinstance(value, str):
            self.add(key, f"expected a string, got {_describe(value)}", line)
            return None
        if not value.strip():
            self.add(key, f"empty; say why {why}", line)
            return None
        return value

    def string_list(
        self,
        key: str,
        value: object,
        expected: str,
        item: str,
        check: Callable[[str, str], None],
    ) -> None:
        """Validate an array of strings, calling ``check(item_key, string)`` on each string item
        in order (so that problems are reported in index order)."""
        if not isinstance(value, list):
            self.add(key, f"expected {expected}, got {_describe(value)}")
            return
        for index, element in enumerate(value):
            element_key = f"{key}[{index}]"
            if isinstance(element, str):
                check(element_key, element)
            else:
                self.add(element_key, f"expected {item}, got {_describe(element)}")

    # -- sections ----------------------------------------------------------------------------

    def build(self, table: dict[str, object], digest: str) -> Policy | None:
        for name, value in table.items():
            if name in _TOP_LEVEL_KEYS:
                continue
            if (
                name == "tool"
                and not self.is_pyproject
                and isinstance(value, dict)
                and "importpolicy" in value
            ):
                self.add(
                    self.key(name),
                    f"unknown key; in {POLICY_FILENAME} write the tables without the "
                    f'tool.importpolicy prefix ([settings], [heavy], [light."..."], [[ignore]])',
                )
                continue
            self.unknown_key(self.prefix, name, _TOP_LEVEL_KEYS)
        self.version(table)
        settings = self.settings(table.get("settings", {}))
        heavy, heavy_by_key = self.heavy(table.get("heavy", {}))
        heavy_calls, calls_by_key = self.heavy(
            table.get("heavy-calls", {}), section="heavy-calls", call=True
        )
        light = self.light(
            table.get("light", {}), heavy + heavy_calls, {**heavy_by_key, **calls_by_key}
        )
        ignores = self.ignores(table.get("ignore", []))
        assumptions = self.assume(table.get("assume", {}))
        if self.problems or settings is None:
            return None
        return Policy(
            path=self.path,
            root=self.root,
            settings=settings,
            heavy=heavy,
            light=light,
            ignores=ignores,
            digest=digest,
            heavy_calls=heavy_calls,
            assumptions=assumptions,
        )

    def version(self, table: dict[str, object]) -> None:
        if "version" not in table:
            return
        value = _integral(table["version"])
        key = self.key("version")
        if not _is_int(value):
            self.add(key, f"expected the integer {SUPPORTED_VERSION}, got {_describe(value)}")
        elif value != SUPPORTED_VERSION:
            self.add(
                key,
                f"unsupported policy version {value}; "
                f"this importpolicy understands only version {SUPPORTED_VERSION}",
            )

    def settings(self, raw: object) -> Settings | None:
        base = self.key("settings")
        if not isinstance(raw, dict):
            self.add(base, f"expected a table ([{self.header('settings')}]), got {_describe(raw)}")
            return None
        for name in raw:
            if name not in _SETTINGS_KEYS:
                self.unknown_key(base, name, _SETTINGS_KEYS)
        count = len(self.problems)
        source_roots = self.source_roots(base, raw)
        interpreter = self.interpreter(base, raw)
        target_versions = self.target_versions(base, raw)
        platform = self.platform(base, raw)
        external = self.external(base, raw)
        cache_dir = self.cache_dir(base, raw, source_roots)
        call_depth = self.call_depth(base, raw)
        lazy_imports = self.choice(base, raw, "lazy-imports", LAZY_IMPORTS_VALUES)
        unresolved = self.choice(base, raw, "unresolved", UNRESOLVED_VALUES)
        baseline = self.baseline(base, raw)
        if (
            len(self.problems) != count
            or external is None
            or lazy_imports is None
            or unresolved is None
        ):
            return None
        return Settings(
            source_roots=source_roots,
            interpreter=interpreter,
            target_versions=target_versions,
            platform=platform,
            external=external,
            cache_dir=cache_dir,
            call_depth=call_depth,
            lazy_imports=lazy_imports,
            unresolved=unresolved,
            baseline=baseline,
            source_roots_as_written=tuple(self.written_roots),
        )

    def source_roots(self, base: str, raw: dict[str, object]) -> tuple[Path, ...]:
        key = _child(base, "source-roots")
        if "source-roots" not in raw:
            src = self.root / "src"
            self.written_roots.append(src if src.is_dir() else self.root)
            return (self.written_roots[-1].resolve(),)
        value = raw["source-roots"]
        if isinstance(value, list) and not value:
            self.add(
                key,
                'empty; list at least one directory, or remove the key (default: "src" if it '
                'exists, else ".")',
            )
            return ()
        roots: list[Path] = []
        root = self.setting_root("source-roots")

        def check(item_key: str, item: str) -> None:
            if not item:
                self.add(item_key, 'empty path; write "." for the policy file\'s directory')
                return
            directory = root / item
            if not directory.is_dir():
                note = "" if Path(item).is_absolute() else _RELATIVE_NOTE
                if note and self.merger is not None and self.merger.root("settings", "source-roots"):
                    note = " (relative to the directory of the base file that sets it)"
                self.add(item_key, f"{_quote(item)} is not a directory{note}")
                return
            resolved = directory.resolve()
            if resolved not in roots:
                roots.append(resolved)
                self.written_roots.append(directory.absolute())

        self.string_list(
            key, value, 'an array of directories, e.g. ["src"]', "a string (a directory)", check
        )
        return tuple(roots)

    def interpreter(self, base: str, raw: dict[str, object]) -> Path | None:
        if "interpreter" not in raw:
            return None
        key = _child(base, "interpreter")
        value = raw["interpreter"]
        if not isinstance(value, str) or not value:
            self.add(
                key,
                "expected a path (relative to the policy file's directory) or a command name, "
                f"got {_describe(value)}",
            )
            return None
        separators = [sep for sep in ("/", os.sep, os.altsep) if sep]
        if os.path.isabs(value) or any(sep in value for sep in separators):
            path = Path(os.path.normpath(self.setting_root("interpreter") / value))
            note = "" if os.path.isabs(value) else _RELATIVE_NOTE
            if not path.exists():
                self.add(key, f"{_quote(value)} does not exist{note}")
                return None
            if not path.is_file() or not os.access(path, os.X_OK):
                self.add(key, f"{_quote(value)} is not an executable file{note}")
                return None
            return path
        found = shutil.which(value)
        if found is None:
            self.add(
                key,
                f"{_quote(value)} is not a command on PATH; give a path (relative to the policy "
                "file's directory) or a command name",
            )
            return None
        return Path(os.path.abspath(found))

    def target_versions(self, base: str, raw: dict[str, object]) -> tuple[tuple[int, int], ...]:
        if "target-versions" not in raw:
            return ()
        key = _child(base, "target-versions")
        versions: set[tuple[int, int]] = set()

        def check(item_key: str, item: str) -> None:
            from flake8_importpolicy.model.versions import parse_target_version  # only if given

            try:
                versions.add(parse_target_version(item))
            except ValueError as exc:
                self.add(item_key, str(exc))

        self.string_list(
            key,
            raw["target-versions"],
            'an array of "X.Y" strings, e.g. ["3.11"]',
            'a quoted "X.Y" string, e.g. "3.11"',
            check,
        )
        return tuple(sorted(versions))

    def platform(self, base: str, raw: dict[str, object]) -> str:
        if "platform" not in raw:
            return sys.platform
        key = _child(base, "platform")
        value = raw["platform"]
        if not isinstance(value, str):
            self.add(key, f'expected a sys.platform string, e.g. "linux", got {_describe(value)}')
            return sys.platform
        suggestion = _PLATFORM_ALIASES.get(value.lower())
        if suggestion is None and value != value.lower() and _PLATFORM_RE.fullmatch(value.lower()):
            suggestion = value.lower()
        if suggestion is not None:
            self.add(
                key,
                f"{_quote(value)} is not a sys.platform value; did you mean {_quote(suggestion)}?",
            )
        elif not _PLATFORM_RE.fullmatch(value):
            self.add(
                key,
                f'{_quote(value)} is not a sys.platform value (e.g. "linux", "darwin", "win32")',
            )
        return value

    def external(self, base: str, raw: dict[str, object]) -> External | None:
        value = self.choice(base, raw, "external", EXTERNAL_VALUES)
        for choice in EXTERNAL_VALUES:
            if value == choice:
                return choice
        return None

    def choice(
        self, base: str, raw: dict[str, object], name: str, values: Sequence[str]
    ) -> str | None:
        """One of ``values`` (the first is the default), or None after reporting a problem."""
        if name not in raw:
            return values[0]
        key = _child(base, name)
        value = raw[name]
        choices = ", ".join(_quote(v) for v in values[:-1]) + f" or {_quote(values[-1])}"
        if not isinstance(value, str):
            self.add(key, f"expected {choices}, got {_describe(value)}")
            return None
        if value in values:
            return value
        close = find_close_match(value, values)
        if close:
            hint = f"did you mean {_quote(close)}? (expected {choices})"
        else:
            hint = f"expected {choices}"
        self.add(key, f"unknown value {_quote(value)}; {hint}")
        return None

    def cache_dir(self, base: str, raw: dict[str, object], source_roots: tuple[Path, ...]) -> Path:
        """``settings.cache-dir``: a directory of the cache's own. The policy's directory, a source
        root, or an existing directory that is not the tool's cache (no ``CACHEDIR.TAG`` of the
        tool's) is a problem: ``importpolicy cache clear`` must never delete what it did not write.
        Anything else that is not a directory (a file, a dangling link) only means no cache."""
        key = _child(base, "cache-dir")
        value = raw.get("cache-dir", DEFAULT_CACHE_DIR)
        if not isinstance(value, str) or not value or "\0" in value:
            self.add(
                key,
                f"expected a directory path (relative to the policy file's directory), "
                f"got {_describe(value)}",
            )
            return Path(resolve_cache_dir(self.root))
        root = self.setting_root("cache-dir") if "cache-dir" in raw else self.root
        path = Path(resolve_cache_dir(root, value))
        shown = _quote(value) + ("" if "cache-dir" in raw else " (the default)")
        own = f"; the cache needs a directory of its own, e.g. {_quote(DEFAULT_CACHE_DIR)}"
        real = os.path.realpath(path)
        if real == os.path.realpath(self.root):
            self.add(key, f"{shown} is the policy file's directory{own}")
        elif any(real == os.path.realpath(root) for root in source_roots):
            self.add(key, f"{shown} is a source root{own}")
        elif os.path.isdir(path) and not has_cache_tag(path) and _is_not_empty(path):
            self.add(
                key,
                f"{shown} is an existing directory that is not importpolicy's cache (it has no "
                f"{CACHE_TAG} written by importpolicy); name a new or empty directory",
            )
        return path

    def baseline(self, base: str, raw: dict[str, object]) -> Path | None:
        """``baseline = "file.json"``: relative to the file that sets it; the file itself is read
        when the policy is checked (:mod:`flake8_importpolicy.config.baseline`)."""
        if "baseline" not in raw:
            return None
        value = raw["baseline"]
        if not isinstance(value, str) or not value.strip() or "\0" in value:
            self.add(_child(base, "baseline"), "expected the path of a baseline file (relative to "
                     f"the policy file's directory), got {_describe(value)}")
            return None
        return Path(os.path.normpath(self.setting_root("baseline") / value))

    def call_depth(self, base: str, raw: dict[str, object]) -> int:
        if "call-depth" not in raw:
            return DEFAULT_CALL_DEPTH
        value = _integral(raw["call-depth"])
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            self.add(
                _child(base, "call-depth"), f"expected an integer >= 0, got {_describe(value)}"
            )
            return DEFAULT_CALL_DEPTH
        return value

    def heavy(
        self, raw: object, *, section: str = "heavy", call: bool = False
    ) -> tuple[tuple[HeavyRule, ...], dict[str, HeavyRule | None]]:
        """Return the rules of ``[heavy]`` (or ``[heavy-calls]`` with ``call=True``) and, for every
        key, its rule (None if invalid)."""
        base = self.key(section)
        what = "calling it" if call else "importing it"
        if not isinstance(raw, dict):
            self.add(base, f'expected a table of "module" = "reason" entries, got {_describe(raw)}')
            return (), {}
        rules: list[HeavyRule] = []
        by_key: dict[str, HeavyRule | None] = {}
        for name, value in raw.items():
            by_key[name] = None
            key = _child(base, name, quote=True)
            if isinstance(value, dict):
                self.heavy_nesting(base, name, value, section)
                continue
            pattern = self.pattern(key, name)
            reason: str | None = None
            if not isinstance(value, str):
                self.add(
                    key,
                    f"expected a reason string (why {what} is heavy), got {_describe(value)}",
                )
            elif not value.strip():
                self.add(key, f"empty reason; say why {what} is heavy")
            else:
                reason = value
            if pattern is not None and reason is not None:
                rule = HeavyRule(pattern, reason, call, self.source(section, name))
                by_key[name] = rule
                rules.append(rule)
        return tuple(rules), by_key

    def heavy_nesting(
        self, base: str, name: str, value: dict[str, object], section: str = "heavy"
    ) -> None:
        """Report a ``[heavy]`` value that is a table: a ``[heavy."x"]`` table, or the nested
        tables that an unquoted dotted key (``torch.cuda = "..."``) makes."""
        for segments, leaf in _leaves([name], value, _has_reason):
            module = ".".join(segments)
            if len(segments) == 1:
                key = _child(base, name, quote=True)
            else:
                key = base + "".join(f".{_key(segment)}" for segment in segments)
            if isinstance(leaf, dict):
                message = (
                    f'expected a reason string, got a table; write {_quote(module)} = "<reason>" '
                    f"under [{self.header(section)}]"
                )
                if len(segments) > 1:
                    message += " (quote the module name)"
            else:
                message = (
                    f"dotted keys make nested TOML tables; quote the module name: "
                    f"{_quote(module)} = ..."
                )
            self.add(key, message)

    def light_nesting(self, base: str, segments: list[str], value: object) -> None:
        """Report the nested tables that an unquoted dotted name (``[light.a.b]`` or
        ``a.b = "..."`` under ``[light]``) makes."""
        for leaf_segments, leaf in _leaves(segments, value, _is_light_table):
            module = ".".join(leaf_segments)
            key = base + "".join(f".{_key(segment)}" for segment in leaf_segments)
            if isinstance(leaf, dict):
                header = self.header(f"light.{_quote(module)}")
                message = (
                    f"dotted table names make nested TOML tables; quote the module name: [{header}]"
                )
            else:
                message = (
                    f"dotted keys make nested TOML tables; quote the module name: "
                    f"{_quote(module)} = ..."
                )
            self.add(key, message)

    def light(
        self,
        raw: object,
        heavy: tuple[HeavyRule, ...],
        heavy_by_key: dict[str, HeavyRule | None],
    ) -> tuple[LightRule, ...]:
        base = self.key("light")
        if not isinstance(raw, dict):
            self.add(
                base,
                'expected a table of light modules ([light."module"] tables or "module" = "reason" '
                f"entries), got {_describe(raw)}",
            )
            return ()
        rules: list[LightRule] = []
        for name, value in raw.items():
            key = _child(base, name, quote=True)
            if isinstance(value, dict) and _is_light_nesting(value):
                self.light_nesting(base, [name], value)
                continue
            count = len(self.problems)
            entries = len(self.entries)
            pattern = self.pattern(key, name)
            reason: str | None = None
            forbid = heavy
            allow: tuple[ModulePattern, ...] = ()
            after_import: tuple[str, ...] = ()
            max_modules: int | None = None
            max_import_ms: float | None = None
            if isinstance(value, str):
                if value.strip():
                    reason = value
                else:
                    self.add(key, "empty reason; say why the module must stay light")
            elif isinstance(value, dict):
                for sub, item in value.items():
                    if sub in _LIGHT_KEYS:
                        continue
                    if isinstance(item, dict):
                        self.light_nesting(base, [name, sub], item)
                    else:
                        self.unknown_key(key, sub, _LIGHT_KEYS)
                reason_key = _child(key, "reason")
                if "reason" not in value:
                    self.add(
                        reason_key,
                        "missing; every light module needs a reason (why it must stay light)",
                    )
                else:
                    reason = self.reason(reason_key, value["reason"], "the module must stay light")
                if "forbid" in value:
                    forbid = self.forbid(
                        _child(key, "forbid"), value["forbid"], reason, heavy_by_key,
                        self.source("light", name),
                    )
                if "allow" in value:
                    allow = self.allow(_child(key, "allow"), value["allow"], heavy_by_key)
                if "after-import" in value:
                    after_import = self.after_import(
                        _child(key, "after-import"), value["after-import"]
                    )
                if "max-modules" in value:
                    max_modules = self.max_modules(_child(key, "max-modules"), value["max-modules"])
                if "max-import-ms" in value:
                    max_import_ms = self.max_import_ms(
                        _child(key, "max-import-ms"), value["max-import-ms"]
                    )
            else:
                self.add(
                    key,
                    "expected a table or a reason string (why it must stay light), "
                    f"got {_describe(value)}",
                )
            if len(self.problems) == count and pattern is not None and reason is not None:
                located = self.located(self.entries[entries:], ("light", name))
                rules.append(LightRule(pattern, reason, forbid, allow, after_import, located,
                                       self.source("light", name), max_modules, max_import_ms))
        return tuple(rules)

    def max_modules(self, key: str, value: object) -> int | None:
        """``max-modules = N``: an integer >= 1 (the light module itself counts)."""
        value = _integral(value)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        self.add(key, "expected an integer >= 1 (how many modules the import-time closure may "
                 f"count, the light module included), got {_describe(value)}")
        return None

    def max_import_ms(self, key: str, value: object) -> float | None:
        """``max-import-ms = N``: a positive number of milliseconds."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            self.add(key, "expected a positive number of milliseconds (the median import time "
                     f"verify measures), got {_describe(value)}")
            return None
        return float(value)

    def forbid(
        self,
        key: str,
        value: object,
        reason: str | None,
        heavy_by_key: dict[str, HeavyRule | None],
        source: str = "",
    ) -> tuple[HeavyRule, ...]:
        rules: list[HeavyRule] = []

        def check(item_key: str, item: str) -> None:
            rule: HeavyRule | None
            if item in heavy_by_key:
                rule = heavy_by_key[item]  # None if invalid: already reported under [heavy]
            else:
                try:
                    pattern = parse_pattern(item)
                except PatternError as exc:
                    message = str(exc)
                    close = find_close_match(item, heavy_by_key)
                    if close:
                        message += f"; did you mean {_quote(close)}?"
                    self.add(item_key, message)
                    return
                rule = HeavyRule(pattern, reason or "", source=source)
                self.entries.append(PatternEntry(item_key, pattern))
            if rule is not None and all(rule.pattern != other.pattern for other in rules):
                rules.append(rule)

        self.string_list(
            key,
            value,
            "an array of [heavy] keys or module patterns",
            "a string (a [heavy] key or a module pattern)",
            check,
        )
        return tuple(rules)

    def allow(
        self, key: str, value: object, heavy_by_key: dict[str, HeavyRule | None]
    ) -> tuple[ModulePattern, ...]:
        patterns: list[ModulePattern] = []

        def check(item_key: str, item: str) -> None:
            pattern = self.pattern(item_key, item)
            if pattern is not None and item not in heavy_by_key:
                self.entries.append(PatternEntry(item_key, pattern))
            if pattern is not None and pattern not in patterns:
                patterns.append(pattern)

        self.string_list(
            key, value, "an array of module patterns", "a module pattern string", check
        )
        return tuple(patterns)

    def after_import(self, key: str, value: object) -> tuple[str, ...]:
        expressions: list[str] = []

        def check(item_key: str, item: str) -> None:
            expression = item.strip()
            if not expression:
                self.add(
                    item_key, "empty; write a Python expression that must be true after import"
                )
                return
            try:
                tree = ast.parse(expression, mode="eval")
            except SyntaxError as exc:
                where = ""
                if exc.offset:
                    where = f" (column {exc.offset})"
                    if exc.lineno and exc.lineno > 1:
                        where = f" (line {exc.lineno}, column {exc.offset})"
                self.add(item_key, f"invalid Python expression: {exc.msg}{where}")
                return
            except ValueError as exc:  # null bytes on some Python versions
                self.add(item_key, f"invalid Python expression: {exc}")
                return
            except (RecursionError, MemoryError):  # CPython's parser gives up on deep nesting
                self.add(item_key, "invalid Python expression: nested too deeply to parse")
                return
            if _is_deeper(tree, _MAX_EXPRESSION_DEPTH):  # the same answer whatever the recursion
                self.add(item_key, "invalid Python expression: nested too deeply to parse")  # limit
                return
            expressions.append(expression)

        self.string_list(
            key,
            value,
            "an array of Python expression strings",
            "a Python expression string",
            check,
        )
        return tuple(expressions)

    def ignores(self, raw: object) -> tuple[IgnoreRule, ...]:
        base = self.key("ignore")
        header = self.header("ignore")
        if isinstance(raw, dict):
            self.add(
                base,
                f"expected an array of tables, got a table; write [[{header}]] (double brackets) "
                "before each entry",
            )
            return ()
        if not isinstance(raw, list):
            self.add(
                base, f"expected an array of tables ([[{header}]] entries), got {_describe(raw)}"
            )
            return ()
        imports = [
            (item.get("import", item.get("unresolved")) if isinstance(item, dict) else None)
            for item in raw
        ]
        # each entry's file and line there (a base's entries come first, extends)
        origins = self.merger.ignore_origins if self.merger is not None else []
        if len(origins) != len(raw):
            origins = []
            lines = _ignore_lines(self.text, imports, self.prefix)
        rules: list[IgnoreRule] = []
        for index, item in enumerate(raw):
            key = f"{base}[{index}]"
            line = origins[index][2] if origins else lines[index]
            source = (origins[index][0].label or "") if origins else ""
            if not isinstance(item, dict):
                self.add(key, f"expected a table, got {_describe(item)}", line)
                continue
            for sub in item:
                if sub not in _IGNORE_KEYS:
                    self.unknown_key(key, sub, _IGNORE_KEYS, line)
            if "unresolved" in item and "import" not in item:
                edge = self.unresolved_entry(_child(key, "unresolved"), item["unresolved"], line)
            elif "unresolved" in item:
                self.add(_child(key, "unresolved"),
                         'an entry has either import = "..." or unresolved = "...", not both', line)
                edge = None
            else:
                edge = self.edge(_child(key, "import"), item, line)
            reason_key = _child(key, "reason")
            reason: str | None = None
            if "reason" not in item:
                self.add(
                    reason_key,
                    f"missing; every [[{header}]] entry needs a reason "
                    "(why the import is accepted)",
                    line,
                )
            else:
                reason = self.reason(reason_key, item["reason"], "the import is accepted", line)
            if edge is not None and reason is not None:
                from flake8_importpolicy.model.ignore import IgnoreRule

                text, importer, imported = edge
                rules.append(IgnoreRule(importer, imported, reason, text, line,
                                        unresolved="import" not in item, source=source))
        return tuple(rules)

    def assume(self, raw: object) -> tuple[Assumption, ...]:
        """Validate ``[assume]`` (dotted names and calls) and ``[assume.environ]``."""
        base = self.key("assume")
        if not isinstance(raw, dict):
            self.add(base, 'expected a table of "dotted.name" = value or "dotted.f()" = value '
                     f"entries ([{self.header('assume')}]), got {_describe(raw)}")
            return ()
        if not raw:
            return ()
        from flake8_importpolicy.model.assume import Assumption

        found: list[Assumption] = []
        seen: dict[str, str] = {}
        for name, value in raw.items():
            key = _child(base, name, quote=True)
            if name == "environ":
                found.extend(self.environ(_child(base, "environ"), value))
                continue
            if isinstance(value, dict):
                dotted = ".".join(segments for segments, _ in _flat_names([name], value))
                self.add(key, "dotted keys make nested TOML tables; quote the name: "
                         f"{_quote(dotted)} = ...")
                continue
            try:
                canonical = canonical_assumption_key(name)
            except PatternError as exc:
                self.add(key, exc.reason)
                canonical = None
            if isinstance(value, float):
                value = _integral(value)
            if isinstance(value, bool) or _is_int(value) or isinstance(value, str):
                pass
            else:
                self.add(key, "expected true, false, a string or an integer (the value Python "
                         f"would see), got {_describe(value)}")
                continue
            if canonical is None:
                continue
            if canonical in seen:
                self.add(key, f"the same name as {_quote(seen[canonical])}, written differently")
                continue
            seen[canonical] = name
            assert isinstance(value, (bool, int, str))
            found.append(Assumption(canonical, value, False, self.source("assume", name)))
        return tuple(found)

    def environ(self, base: str, raw: object) -> list[Assumption]:
        """Validate ``[assume.environ]``: ``"VARIABLE" = "value"`` (set) or ``false`` (not set)."""
        from flake8_importpolicy.model.assume import Assumption

        if not isinstance(raw, dict):
            self.add(base, 'expected a table of "VARIABLE" = "value" or false entries '
                     f"([{self.header('assume.environ')}]), got {_describe(raw)}")
            return []
        found: list[Assumption] = []
        for name, value in raw.items():
            key = _child(base, name, quote=True)
            if not name or "=" in name or "\0" in name:
                self.add(key, "not an environment variable name (empty, or with '=' or NUL)")
                continue
            if value is False:
                found.append(Assumption(name, None, True, self.source("assume", "environ", name)))
            elif isinstance(value, str):
                if "\0" in value:
                    self.add(key, "an environment variable's value cannot hold a NUL character")
                    continue
                found.append(Assumption(name, value, True, self.source("assume", "environ", name)))
            elif value is True:
                self.add(key, "true is not a value an environment variable can have: write the "
                         'string it is set to ("1"), or false for "not set"')
            else:
                self.add(key, 'expected the string the variable is set to ("1"), or false for '
                         f'"not set", got {_describe(value)}')
        return found

    def unresolved_entry(
        self, key: str, value: object, line: int
    ) -> tuple[str, NodePattern, NodePattern] | None:
        """Validate an ``unresolved = "module pattern"`` value (IPL006 accepted in those modules)."""
        if not isinstance(value, str):
            self.add(key, f'expected a module pattern string, got {_describe(value)}', line)
            return None
        try:
            pattern = parse_pattern(value.strip())
        except PatternError as exc:
            self.add(key, str(exc), line)
            return None
        from flake8_importpolicy.model.ignore import NodePattern

        node = NodePattern(pattern)
        return f"unresolved {value.strip()}", node, node

    def edge(
        self, key: str, item: dict[str, object], line: int
    ) -> tuple[str, NodePattern, NodePattern] | None:
        """Validate an ``import = "importer -> imported"`` value."""
        if "import" not in item:
            self.add(key, 'missing; write import = "importer -> imported"', line)
            return None
        value = item["import"]
        if not isinstance(value, str):
            self.add(key, f'expected a string "importer -> imported", got {_describe(value)}', line)
            return None
        sides = value.split("->")
        if len(sides) != 2:
            count = "no" if len(sides) == 1 else "more than one"
            self.add(key, f'{_quote(value)} has {count} "->"; write "importer -> imported"', line)
            return None
        from flake8_importpolicy.model.ignore import parse_node_pattern

        patterns: list[NodePattern] = []
        for side, text in zip(("left", "right"), sides):
            try:
                patterns.append(parse_node_pattern(text.strip()))
            except PatternError as exc:
                self.add(key, f'{side} of "->": {exc}', line)
        if len(patterns) != 2:
            return None
        return value, patterns[0], patterns[1]
