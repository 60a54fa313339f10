"""What a key of ``policy.toml`` is, and how a table of them is checked, so that each key is declared
once (import-linter's contract ``fields``, typed).

- :class:`Key`: a key's name, its type (how its value is checked, and the JSON Schema and docs words
  for it), its default and its doc; :class:`Table`: a table of declared keys, which it walks (unknown
  keys with a "did you mean", then every key in declaration order: the given ones checked, the others
  defaulted). The declaration itself is :mod:`flake8_importpolicy.config.keys`; the JSON Schema and
  docs/policy.md's key tables are made from it by :mod:`flake8_importpolicy.config.reference`, which
  no check loads.
- :class:`Check`: every problem of one validation (the policy is reported whole, never one problem at
  a time), and the checks several keys share; :class:`Entry`: one table being checked.

A key path is TOML-ish: ``settings.external``, ``heavy."torch"``, ``light."a.b".forbid[0]``,
``ignore[2].reason`` (0-based indexes; module names always quoted; prefixed with
``tool.importpolicy.`` in ``pyproject.toml``). A value is described the way TOML writes it: ``the
string "3"``, ``the integer 2``, ``an array``.

Plain classes with ``__slots__``, not dataclasses: they are made on every cold run, and a dataclass
costs its creation at every import (docs/performance.md, "What the cold path avoids"); regular
expressions are compiled on first use (``re``'s cache), as a valid policy needs none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from flake8_importpolicy.model.errors import PolicyProblem, find_close_match
from flake8_importpolicy.model.patterns import ModulePattern, PatternError, parse_pattern
from flake8_importpolicy.model.policy import HeavyRule, PatternEntry

if TYPE_CHECKING:  # types only: a type alias costs its creation at every import
    from typing import Literal, Protocol, TypeAlias

    Merge: TypeAlias = Literal["replace", "by key", "concatenate"]
    """How ``extends`` merges a top-level key: the extending file's value replaces the base's; tables
    merge by key (the extending file's entry wins); arrays concatenate, a base's entries first."""

    Parse: TypeAlias = Callable[["Entry", str, object], Any]
    """Checks a given value: ``(entry, its key path, the TOML value) -> the value for the model``
    (each check's own annotation says which); problems go to ``entry.check`` (the table is valid
    when none was added)."""

    Missing: TypeAlias = Callable[["Entry", str], Any]
    """The value of a key the table does not give: ``(entry, its key path) -> value``; a required
    key's records the problem."""

    class _File(Protocol):
        """A file an entry came from (:class:`~flake8_importpolicy.config.read.Source`)."""

        label: str | None
        text: str
        prefix: str

    class _Origins(Protocol):
        """Which file each entry came from (:class:`~flake8_importpolicy.config.merge.Merger`)."""

        @property
        def ignore_origins(self) -> Sequence[tuple[_File, int, int]]: ...

        def origin(self, *path: str) -> _File | None: ...

        def label(self, *path: str) -> str: ...

        def root(self, *path: str) -> Path | None: ...

__all__ = [
    "Check",
    "Entry",
    "Key",
    "Table",
    "child",
    "describe",
    "integral",
    "is_int",
    "key_part",
    "quote",
]


_BARE_KEY: Final = r"[A-Za-z0-9_-]+"


def quote(text: str) -> str:
    """Return ``text`` as a TOML basic string."""
    return json.dumps(text, ensure_ascii=False)


def key_part(key: str) -> str:
    """Return ``key`` as it appears in a key path: bare if TOML allows, else quoted."""
    return key if re.fullmatch(_BARE_KEY, key) else quote(key)


def child(base: str, key: str, *, quoted: bool = False) -> str:
    """Return the key path of ``key`` inside ``base`` (module names are always quoted)."""
    part = quote(key) if quoted else key_part(key)
    return f"{base}.{part}" if base else part


def describe(value: object) -> str:
    """Describe a TOML value for ``got ...`` messages: ``the string "3"``, ``an array``."""
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, str):
        return f"the string {quote(value)}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the float {value!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date/time"


def is_int(value: object) -> bool:
    """True for a TOML integer (a ``bool`` is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def integral(value: object) -> object:
    """``value`` as an int when it is a float with an integral value (``2.0``): JSON, and so the
    policy's JSON Schema that editors check, has one number type, in which 2.0 is the integer 2."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


class Check:
    """The validation of one (merged) policy table: every problem found, in order, and what the
    checks of single values need to know about the file (its directory, its text, which base each
    entry came from).

    A plain class, not a dataclass: it is made on every cold run, and a dataclass costs its creation
    at every import (docs/performance.md, "What the cold path avoids").

    Attributes:
        path: the policy file, resolved.
        root: its directory (relative paths are relative to it, or to the base that set them).
        merger: the ``extends`` merge the table came from (None: no merge).
        text: the policy file's text (to place ``[[ignore]]`` entries and patterns on their lines).
        prefix: ``tool.importpolicy`` in ``pyproject.toml``, else ``""``.
        problems: every problem found so far, in the order found.
        entries: the ``forbid``/``allow`` patterns that name no ``[heavy]``/``[heavy-calls]`` key
            (IPL007 checks that they name a module).
        heavy_by_key: every ``[heavy]`` and ``[heavy-calls]`` key and its rule (None if invalid), once
            those tables are validated (what a ``forbid`` entry may name).
        heavy_rules: the valid ``[heavy]`` and ``[heavy-calls]`` rules, in file order (a light
            module's ``forbid`` when it has none).
    """

    __slots__ = ("path", "root", "merger", "text", "prefix", "problems", "entries", "heavy_by_key",
                 "heavy_rules")

    def __init__(self, path: Path, text: str, prefix: str, merger: _Origins | None = None) -> None:
        self.path = path
        self.root = path.parent
        self.merger = merger
        self.text = text
        self.prefix = prefix
        self.problems: list[PolicyProblem] = []
        self.entries: list[PatternEntry] = []
        self.heavy_by_key: dict[str, HeavyRule | None] = {}
        self.heavy_rules: tuple[HeavyRule, ...] = ()

    # -- where ----------------------------------------------------------------------------------

    def key(self, name: str) -> str:
        """Key path of a top-level key (prefixed in pyproject.toml)."""
        return child(self.prefix, name)

    def header(self, name: str) -> str:
        """Table name as the user writes it in a header: ``light."a"`` or
        ``tool.importpolicy.light."a"``."""
        return f"{self.prefix}.{name}" if self.prefix else name

    def source(self, *path: str) -> str:
        """Where the entry at ``path`` came from (:attr:`HeavyRule.source`; ``""``: this file)."""
        return self.merger.label(*path) if self.merger is not None else ""

    def setting_root(self, name: str) -> Path:
        """The directory a path in ``settings.<name>`` is relative to: the file that set it."""
        found = self.merger.root("settings", name) if self.merger is not None else None
        return found if found is not None else self.root

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

    # -- problems -------------------------------------------------------------------------------

    def add(self, key: str, message: str, line: int | None = None) -> None:
        """Record a problem with the value at ``key``."""
        self.problems.append(PolicyProblem(key, message, line))

    def unknown_key(
        self, base: str, key: str, allowed: tuple[str, ...], line: int | None = None
    ) -> None:
        """Record ``base.key`` as unknown, with the closest of ``allowed`` (or all of them)."""
        close = find_close_match(key, allowed)
        hint = f"did you mean {close!r}?" if close else "expected one of: " + ", ".join(allowed)
        self.add(child(base, key), f"unknown key; {hint}", line)

    # -- values shared by several keys ----------------------------------------------------------

    def pattern(self, key: str, text: str, line: int | None = None) -> ModulePattern | None:
        """A module pattern, or None after recording why ``text`` is not one."""
        try:
            return parse_pattern(text)
        except PatternError as exc:
            self.add(key, str(exc), line)
            return None

    def reason(self, key: str, value: object, why: str, line: int | None = None) -> str | None:
        """Validate a ``reason = ...`` value; ``why`` completes "say why ..."."""
        if not isinstance(value, str):
            self.add(key, f"expected a string, got {describe(value)}", line)
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
            self.add(key, f"expected {expected}, got {describe(value)}")
            return
        for index, element in enumerate(value):
            element_key = f"{key}[{index}]"
            if isinstance(element, str):
                check(element_key, element)
            else:
                self.add(element_key, f"expected {item}, got {describe(element)}")

    def choice(self, key: str, value: object, values: Sequence[str]) -> str | None:
        """``value`` if it is one of ``values``, else None after recording a problem (with a "did
        you mean" when one is close)."""
        if value in values and isinstance(value, str):
            return value
        choices = ", ".join(quote(v) for v in values[:-1]) + f" or {quote(values[-1])}"
        if not isinstance(value, str):
            self.add(key, f"expected {choices}, got {describe(value)}")
            return None
        close = find_close_match(value, values)
        if close:
            hint = f"did you mean {quote(close)}? (expected {choices})"
        else:
            hint = f"expected {choices}"
        self.add(key, f"unknown value {quote(value)}; {hint}")
        return None

    def integer(self, key: str, value: object, minimum: int, meaning: str) -> int | None:
        """``value`` if it is an integer >= ``minimum`` (``2.0`` is 2), else None after recording a
        problem; ``meaning`` (may be empty) says in the message what the number counts."""
        value = integral(value)
        if is_int(value) and isinstance(value, int) and value >= minimum:
            return value
        what = f" ({meaning})" if meaning else ""
        self.add(key, f"expected an integer >= {minimum}{what}, got {describe(value)}")
        return None


class Entry:
    """One table being validated: where its problems go and what its keys gave so far.

    Attributes:
        check: the validation the table belongs to (its problems, its file).
        raw: the table as TOML gave it.
        values: each declared key's value by :attr:`Key.attr`, in declaration order, filled by
            :meth:`Table.walk` (a key whose attribute is already there is left as it is).
        line: the line every problem of the table is reported on (``[[ignore]]`` entries), or None.
        origin: the table's key path without prefix (``("light", "mypkg.cli")``): which base of
            ``extends`` it came from.
    """

    __slots__ = ("check", "raw", "values", "line", "origin")

    def __init__(
        self, check: Check, raw: dict[str, object], line: int | None = None,
        origin: tuple[str, ...] = (),
    ) -> None:
        self.check = check
        self.raw = raw
        self.values: dict[str, Any] = {}
        self.line = line
        self.origin = origin


class Key:
    """One key of a policy table.

    Attributes:
        name: the key as written in TOML (``"call-depth"``).
        attr: the model's attribute for it (``"call_depth"``): :class:`~flake8_importpolicy.model.
            policy.Settings` and :class:`~flake8_importpolicy.model.policy.LightRule` have one per
            key of their table (tests/test_declaration.py).
        parse: checks a given value (:data:`Parse`).
        default: the TOML value an absent key means (``3``, ``"auto"``, ``[]``), checked by
            :attr:`parse` as a given one would be; None for none.
        missing: when the key is absent and has no :attr:`default`: what gives its value
            (:data:`Missing`: computed, like ``source-roots``'s, or a problem for a required key),
            or None for the value None.
        required: the key must be given (:attr:`missing` records the problem).
        doc: what the key means, Markdown: docs/policy.md's "meaning", the JSON Schema's description.
        type_doc: the value's type in words, Markdown (``integer ≥ 0``).
        default_doc: the default in words, Markdown, when :attr:`default` does not say it (``the
            interpreter's version``).
        schema: the value's JSON Schema (draft 2020-12), without description and default.
        merge: how ``extends`` merges it (top-level keys).
    """

    __slots__ = ("name", "attr", "parse", "default", "missing", "required", "doc", "type_doc",
                 "default_doc", "schema", "merge")

    def __init__(
        self,
        name: str,
        parse: Parse,
        *,
        doc: str,
        type_doc: str,
        schema: Mapping[str, object],
        default: object = None,
        missing: Missing | None = None,
        required: bool = False,
        default_doc: str = "",
        merge: Merge = "replace",
    ) -> None:
        self.name = name
        self.attr = name.replace("-", "_")
        self.parse = parse
        self.default = default
        self.missing = missing
        self.required = required
        self.doc = doc
        self.type_doc = type_doc
        self.default_doc = default_doc
        self.schema = schema
        self.merge: Merge = merge

    @staticmethod
    def choice(name: str, values: Sequence[str], *, doc: str) -> Key:
        """A key whose value is one of ``values``, the first being the default."""
        def parse(entry: Entry, key: str, value: object) -> str | None:
            return entry.check.choice(key, value, values)

        return Key(name, parse, doc=doc, default=values[0], schema={"enum": list(values)},
                   type_doc=", ".join(f'`"{value}"`' for value in values))

    @staticmethod
    def integer(
        name: str, *, minimum: int, doc: str, default: int | None = None, meaning: str = "",
        examples: Sequence[int] = (),
    ) -> Key:
        """A key whose value is an integer >= ``minimum`` (``2.0`` is 2); ``meaning`` completes
        the message of a wrong value: ``expected an integer >= 1 (<meaning>), got ...``. A wrong
        value is reported and stands as ``default``."""
        def parse(entry: Entry, key: str, value: object) -> int | None:
            found = entry.check.integer(key, value, minimum, meaning)
            return default if found is None else found

        schema: dict[str, object] = {"type": "integer", "minimum": minimum}
        if examples:
            schema["examples"] = list(examples)
        return Key(name, parse, doc=doc, default=default, type_doc=f"integer ≥ {minimum}",
                   schema=schema)


class Table:
    """A table of declared keys (``[settings]``, a ``[light."…"]`` table, an ``[[ignore]]`` entry,
    the policy itself).

    Attributes:
        name: the table as docs and the JSON Schema's ``$defs`` name it (``"settings"``).
        keys: its keys, in the order they are checked and listed.
        names: their names (for unknown keys and "did you mean").
        doc: what the table is, for the JSON Schema's description.
        schema: more JSON Schema for the table as a whole (``oneOf``, ``title``), or empty.
        unknown: reports a key the table does not declare when it means something else (``(table,
            entry, base, name, value) -> reported``); any other is an "unknown key", with the
            closest declared name.
    """

    __slots__ = ("name", "keys", "names", "doc", "schema", "unknown")

    def __init__(
        self,
        name: str,
        keys: Sequence[Key],
        *,
        doc: str,
        schema: Mapping[str, object] | None = None,
        unknown: Callable[[Table, Entry, str, str, object], bool] | None = None,
    ) -> None:
        self.name = name
        self.keys = tuple(keys)
        self.names = tuple(key.name for key in self.keys)
        self.doc = doc
        self.schema = schema or {}
        self.unknown = unknown

    def walk(self, entry: Entry, base: str) -> dict[str, Any]:
        """Check ``entry.raw`` (its key path ``base``): first its undeclared keys, in the order
        written, then each declared key in declaration order, given or defaulted.

        Returns:
            ``entry.values``: every key's value by :attr:`Key.attr` (the table is valid when no
            problem was added meanwhile).
        """
        raw = entry.raw
        names = self.names
        for name, value in raw.items():
            if name in names:
                continue
            if self.unknown is None or not self.unknown(self, entry, base, name, value):
                entry.check.unknown_key(base, name, names, entry.line)
        values = entry.values
        prefix = f"{base}." if base else ""
        for key in self.keys:
            if key.attr in values:
                continue
            name = key.name  # a bare key (tests/test_declaration.py): its path needs no quotes
            if name in raw:
                values[key.attr] = key.parse(entry, prefix + name, raw[name])
            elif key.default is not None:
                values[key.attr] = key.parse(entry, prefix + name, key.default)
            elif key.missing is not None:
                values[key.attr] = key.missing(entry, prefix + name)
            else:
                values[key.attr] = None
        return values
