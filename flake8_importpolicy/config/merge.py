"""``extends``: the bases a policy names (built-in presets and other policy files, transitively) merged
into its table, each entry remembering the file it came from (for messages, for problems, and for
the paths a base sets, which are relative to that base).

How each top-level key merges is declared with it (:attr:`~flake8_importpolicy.config.fields.Key.merge`
in :mod:`flake8_importpolicy.config.keys`): tables by key, the extending file's entry winning (a
``[light."x"]`` table is replaced whole); ``[[ignore]]`` entries concatenated, a base's first; any other
value replaced. docs/policy.md, ``extends``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final

from flake8_importpolicy.config.fields import child, describe, quote
from flake8_importpolicy.config.keys import POLICY
from flake8_importpolicy.config.read import Source, ignore_lines, read_source
from flake8_importpolicy.model.errors import PolicyError, PolicyProblem, find_close_match

if TYPE_CHECKING:  # loaded when a policy extends another (tests/test_cli.py)
    from flake8_importpolicy.config.fields import Merge
    from flake8_importpolicy.model.bases import PolicySource

__all__ = ["Merger"]

_MERGE: Final[dict[str, Merge]] = {key.name: key.merge for key in POLICY.keys}


class Merger:
    """Resolves ``extends`` (transitively) and merges the bases into the policy file's table,
    remembering which file each entry came from (for messages and for problems)."""

    def __init__(self, top: Source) -> None:
        self.top = top
        self.problems: list[PolicyProblem] = []
        self.sources: list[PolicySource] = []
        # key path (without prefix) of an entry -> the file it came from
        self.origins: dict[tuple[str, ...], Source] = {}
        # per merged [[ignore]] entry: (file, its index there, its line there)
        self.ignore_origins: list[tuple[Source, int, int]] = []
        self._read: dict[Path, Source | None] = {}

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

    def _bases(self, source: Source, chain: tuple[Path, ...]) -> list[Source]:
        """The bases ``source`` extends, read (problems reported against ``source``)."""
        if "extends" not in source.table:
            return []
        key = child(source.prefix, "extends")
        value = source.table["extends"]
        if not isinstance(value, list):
            self.report(source, key, f'expected an array of preset names and policy files, e.g. '
                        f'["torch-cuda", "../base.toml"], got {describe(value)}')
            return []
        bases: list[Source] = []
        for index, entry in enumerate(value):
            item_key = f"{key}[{index}]"
            if not isinstance(entry, str) or not entry.strip():
                self.report(source, item_key, "expected a preset name or a policy file path, got "
                            + (describe(entry) if not isinstance(entry, str) else "an empty string"))
                continue
            base = self._base(source, item_key, entry.strip(), chain)
            if base is not None:
                bases.append(base)
        return bases

    def _base(
        self, source: Source, key: str, entry: str, chain: tuple[Path, ...]
    ) -> Source | None:
        preset = "/" not in entry and "\\" not in entry and not entry.endswith(".toml")
        if preset:
            from flake8_importpolicy.config.presets import preset_names, preset_path  # extends only

            path = preset_path(entry)
            if path is None:
                names = preset_names()
                close = find_close_match(entry, names)
                hint = f"did you mean {quote(close)}? " if close else ""
                self.report(source, key, f"unknown preset {quote(entry)}; {hint}built-in presets: "
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
            base = read_source(path, label, preset=preset)
        except PolicyError as exc:
            for problem in exc.problems:
                if problem.message.startswith("cannot read"):
                    self.report(source, key, f"{quote(entry)}: {problem.message}"
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
        self, source: Source, chain: tuple[Path, ...]
    ) -> tuple[dict[str, object], dict[tuple[str, ...], Source], list[tuple[Source, int, int]]]:
        """``source``'s table with its bases merged in, the origin of each entry, and the origin of
        each ``[[ignore]]`` entry."""
        table: dict[str, object] = {}
        origins: dict[tuple[str, ...], Source] = {}
        ignores: list[tuple[Source, int, int]] = []
        for base in self._bases(source, chain):
            sub_table, sub_origins, sub_ignores = self._merged(base, (*chain, _identity(base.path)))
            self._merge(table, origins, ignores, sub_table, sub_origins, sub_ignores)
        own_ignores: list[tuple[Source, int, int]] = []
        raw_ignores = source.table.get("ignore")
        if isinstance(raw_ignores, list):
            imports = [
                (item.get("import", item.get("unresolved")) if isinstance(item, dict) else None)
                for item in raw_ignores
            ]
            lines = ignore_lines(source.text, imports, source.prefix)
            own_ignores = [(source, index, line) for index, line in enumerate(lines)]
        own = {key: value for key, value in source.table.items() if key != "extends"}
        own_origins = _origins_of(own, source)
        self._merge(table, origins, ignores, own, own_origins, own_ignores)
        return table, origins, ignores

    @staticmethod
    def _merge(
        table: dict[str, object],
        origins: dict[tuple[str, ...], Source],
        ignores: list[tuple[Source, int, int]],
        top: dict[str, object],
        top_origins: dict[tuple[str, ...], Source],
        top_ignores: list[tuple[Source, int, int]],
    ) -> None:
        """Merge ``top`` (the extending side) into ``table`` (what the bases gave), in place."""
        for name, value in top.items():
            old = table.get(name)
            if _MERGE.get(name) == "concatenate" and isinstance(old, list) and isinstance(value, list):
                table[name] = [*old, *value]
                if name == "ignore":
                    ignores.extend(top_ignores)
                continue
            if name == "ignore":
                ignores[:] = list(top_ignores)
            if _MERGE.get(name) == "by key" and isinstance(old, dict) and isinstance(value, dict):
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

    def report(self, source: Source, key: str, message: str) -> None:
        """A problem with ``key`` of ``source`` (located in its text when it is a base)."""
        self.problems.append(self._problem(source, key, message))

    def _problem(self, source: Source, key: str, message: str) -> PolicyProblem:
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
            local = child(source.prefix, "ignore") + f"[{index}]" + rest
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

    def origin(self, *path: str) -> Source | None:
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


def _origins_of(table: dict[str, object], source: Source) -> dict[tuple[str, ...], Source]:
    """Every entry of one file's table, mapped to the file."""
    origins: dict[tuple[str, ...], Source] = {}
    for name, value in table.items():
        origins[(name,)] = source
        if _MERGE.get(name) == "by key" and isinstance(value, dict):
            for key, item in value.items():
                origins[(name, key)] = source
                if name == "assume" and key == "environ" and isinstance(item, dict):
                    for variable in item:
                        origins[(name, key, variable)] = source
    return origins
