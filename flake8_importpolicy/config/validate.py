"""Validating a (merged) policy table against the declaration of its keys
(:mod:`flake8_importpolicy.config.keys`), every problem at once, into a
:class:`~flake8_importpolicy.model.policy.Policy`::

    policy.toml is not valid (2 problems):
      settings.externl: unknown key; did you mean 'external'?
      light."a.b".reason: missing; every light module needs a reason (why it must stay light)

:func:`validate_policy` walks the top level. Every other function here is a check that the declaration
names: a :data:`~flake8_importpolicy.config.fields.Parse` (``(entry, key path, TOML value) -> the
model's value``, problems recorded on ``entry.check``) or a
:data:`~flake8_importpolicy.config.fields.Missing`. A section made of declared keys (``[settings]``, a
``[light."…"]`` table, an ``[[ignore]]`` entry) is given its
:class:`~flake8_importpolicy.config.fields.Table` and walks it, so that a key of it is declared only
there.

Paths in ``[settings]`` are relative to the file that sets them (a base of ``extends``, or the policy
file): :meth:`~flake8_importpolicy.config.fields.Check.setting_root`. TOML reads an unquoted dotted key
(``torch.cuda = "…"``, ``[light.a.b]``) as nested tables; the ``[heavy]`` and ``[light]`` checks
recognise them and say "quote the module name".
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from flake8_importpolicy.config.fields import (
    Check,
    Entry,
    Table,
    child,
    describe,
    integral,
    is_int,
    key_part,
    quote,
)
from flake8_importpolicy.config.locate import has_cache_tag, resolve_cache_dir
from flake8_importpolicy.config.read import ignore_lines
from flake8_importpolicy.config.staged import in_work_tree
from flake8_importpolicy.model.errors import find_close_match
from flake8_importpolicy.model.files import CACHE_TAG, DEFAULT_CACHE_DIR
from flake8_importpolicy.model.patterns import (
    ModulePattern,
    PatternError,
    canonical_assumption_key,
    parse_pattern,
)
from flake8_importpolicy.model.policy import HeavyRule, LightRule, PatternEntry, Policy, Settings

if TYPE_CHECKING:  # model.assume and model.ignore: loaded when a policy has [assume] or [[ignore]]
    from typing import TypeAlias

    from flake8_importpolicy.config.fields import Parse
    from flake8_importpolicy.model.assume import Assumption
    from flake8_importpolicy.model.ignore import IgnoreRule, NodePattern

    HeavyTable: TypeAlias = tuple[tuple[HeavyRule, ...], dict[str, HeavyRule | None]]
    """The rules of ``[heavy]`` (or ``[heavy-calls]``) and, for every key, its rule (None if
    invalid)."""

    Edge: TypeAlias = tuple[str, NodePattern, NodePattern]
    """An ``[[ignore]]`` entry's text (``"a -> b"``, ``"unresolved p"``) and its two sides."""

__all__ = [
    "MAX_EXPRESSION_DEPTH",
    "PLATFORM_ALIASES",
    "PLATFORM_PATTERN",
    "SUPPORTED_VERSION",
    "validate_policy",
]

SUPPORTED_VERSION: Final = 1

PLATFORM_PATTERN: Final = "[a-z][a-z0-9_]*"
"""What a ``sys.platform`` value looks like (``linux``, ``darwin``, ``win32``, ``emscripten``)."""

PLATFORM_ALIASES: Final = {
    "windows": "win32",
    "win": "win32",
    "win64": "win32",
    "macos": "darwin",
    "macosx": "darwin",
    "mac": "darwin",
    "osx": "darwin",
}
"""Names people write for a platform, and the ``sys.platform`` value they mean."""

MAX_EXPRESSION_DEPTH: Final = 500
"""The deepest ``after-import`` syntax tree accepted. Where CPython's parser gives up depends on the
recursion limit of the process (mypy raises it), so a fixed bound keeps every client's answer the same
(a unary minus 3,000 deep fails to parse under the default limit; brackets stop at 200)."""

_RELATIVE_NOTE: Final = " (relative to the policy file's directory)"


# --------------------------------------------------------------------------------------------
# The policy itself


def validate_policy(check: Check, table: dict[str, object], digest: str, top: Table) -> Policy | None:
    """The policy ``table`` (the policy file's, its bases merged in) describes, or None when it has
    problems (then in ``check.problems``, in the order of the declaration's keys).

    Args:
        check: the validation (the policy file, its text, the ``extends`` merge).
        table: the merged table, without ``extends``.
        digest: :attr:`Policy.digest`.
        top: the declaration of the top level (:data:`flake8_importpolicy.config.keys.POLICY`).

    Raises:
        RecursionError: the table is nested too deeply to walk.
    """
    values = top.walk(Entry(check, table), check.prefix)
    settings = values["settings"]
    if check.problems or settings is None:
        return None
    return Policy(
        path=check.path,
        root=check.root,
        settings=settings,
        heavy=values["heavy"][0],
        light=values["light"],
        ignores=values["ignore"],
        digest=digest,
        heavy_calls=values["heavy_calls"][0],
        assumptions=values["assume"],
    )


def top_level_unknown(table: Table, entry: Entry, base: str, name: str, value: object) -> bool:
    """``[tool.importpolicy]`` written in a ``policy.toml``: say to drop the prefix. Returns whether
    it was reported (else the key is reported as unknown)."""
    check = entry.check
    if name == "tool" and not check.prefix and isinstance(value, dict) and "importpolicy" in value:
        from flake8_importpolicy.model.files import POLICY_FILENAME

        check.add(
            check.key(name),
            f"unknown key; in {POLICY_FILENAME} write the tables without the "
            f'tool.importpolicy prefix ([settings], [heavy], [light."..."], [[ignore]])',
        )
        return True
    return False


def version(entry: Entry, key: str, value: object) -> None:
    """``version = 1`` (``1.0`` is 1)."""
    value = integral(value)
    if not is_int(value):
        entry.check.add(key, f"expected the integer {SUPPORTED_VERSION}, got {describe(value)}")
    elif value != SUPPORTED_VERSION:
        entry.check.add(
            key,
            f"unsupported policy version {value}; "
            f"this importpolicy understands only version {SUPPORTED_VERSION}",
        )


def merged_already(entry: Entry, key: str, value: object) -> None:
    """A key the ``extends`` merge consumed and checked (it is not in the merged table)."""


# --------------------------------------------------------------------------------------------
# [settings]


def settings(table: Table) -> Parse:
    """The check of ``[settings]``, whose keys ``table`` declares (:class:`Settings` has an attribute
    for each)."""
    def parse(entry: Entry, base: str, raw: object) -> Settings | None:
        check = entry.check
        if not isinstance(raw, dict):
            check.add(base, f"expected a table ([{check.header('settings')}]), got {describe(raw)}")
            return None
        count = len(check.problems)
        values = table.walk(Entry(check, raw, origin=("settings",)), base)
        if len(check.problems) != count:
            return None
        return Settings(**values)

    return parse


_AS_WRITTEN: Final = "source_roots_as_written"
"""The :class:`Settings` attribute that the ``source-roots`` check gives beside ``source_roots``: the
same roots, absolute but not resolved (the answer indexes check that each still resolves to its
root)."""


def default_source_roots(entry: Entry, key: str) -> tuple[Path, ...]:
    """``src`` if it is a directory, else the policy file's directory."""
    root = entry.check.root
    src = root / "src"
    written = src if src.is_dir() else root
    entry.values[_AS_WRITTEN] = (written,)
    return (written.resolve(),)


def source_roots(entry: Entry, key: str, value: object) -> tuple[Path, ...]:
    """``source-roots = ["src"]``: directories, relative to the file that sets them (and, as
    ``source_roots_as_written``, the same roots as written)."""
    check = entry.check
    if isinstance(value, list) and not value:
        check.add(
            key,
            'empty; list at least one directory, or remove the key (default: "src" if it '
            'exists, else ".")',
        )
        return ()
    roots: list[Path] = []
    written: list[Path] = []
    root = check.setting_root("source-roots")

    def check_item(item_key: str, item: str) -> None:
        if not item:
            check.add(item_key, 'empty path; write "." for the policy file\'s directory')
            return
        directory = root / item
        if not directory.is_dir():
            note = "" if Path(item).is_absolute() else _RELATIVE_NOTE
            if note and check.merger is not None and check.merger.root("settings", "source-roots"):
                note = " (relative to the directory of the base file that sets it)"
            check.add(item_key, f"{quote(item)} is not a directory{note}")
            return
        resolved = directory.resolve()
        if resolved not in roots:
            roots.append(resolved)
            written.append(directory.absolute())

    check.string_list(
        key, value, 'an array of directories, e.g. ["src"]', "a string (a directory)", check_item
    )
    entry.values[_AS_WRITTEN] = tuple(written)
    return tuple(roots)


def interpreter(entry: Entry, key: str, value: object) -> Path | None:
    """``interpreter = ".venv/bin/python"``: a path (relative to the file that sets it) to an
    executable file, or a command name on ``PATH``."""
    check = entry.check
    if not isinstance(value, str) or not value:
        check.add(
            key,
            "expected a path (relative to the policy file's directory) or a command name, "
            f"got {describe(value)}",
        )
        return None
    separators = [sep for sep in ("/", os.sep, os.altsep) if sep]
    if os.path.isabs(value) or any(sep in value for sep in separators):
        # Under check --staged the policy is read in a copy of the git index, which holds no
        # (untracked) virtual environment: the path is the work tree's.
        path = in_work_tree(Path(os.path.normpath(check.setting_root("interpreter") / value)))
        note = "" if os.path.isabs(value) else _RELATIVE_NOTE
        if not path.exists():
            check.add(key, f"{quote(value)} does not exist{note}")
            return None
        if not path.is_file() or not os.access(path, os.X_OK):
            check.add(key, f"{quote(value)} is not an executable file{note}")
            return None
        return path
    found = shutil.which(value)
    if found is None:
        check.add(
            key,
            f"{quote(value)} is not a command on PATH; give a path (relative to the policy "
            "file's directory) or a command name",
        )
        return None
    return Path(os.path.abspath(found))


def target_versions(entry: Entry, key: str, value: object) -> tuple[tuple[int, int], ...]:
    """``target-versions = ["3.11"]``: sorted, without repeats."""
    check = entry.check
    versions: set[tuple[int, int]] = set()

    def check_item(item_key: str, item: str) -> None:
        from flake8_importpolicy.model.versions import parse_target_version  # only if given

        try:
            versions.add(parse_target_version(item))
        except ValueError as exc:
            check.add(item_key, str(exc))

    check.string_list(
        key,
        value,
        'an array of "X.Y" strings, e.g. ["3.11"]',
        'a quoted "X.Y" string, e.g. "3.11"',
        check_item,
    )
    return tuple(sorted(versions))


def default_platform(entry: Entry, key: str) -> str:
    """The running ``sys.platform``."""
    return sys.platform


def platform(entry: Entry, key: str, value: object) -> str:
    """``platform = "linux"``: a ``sys.platform`` value (an alias gets a "did you mean")."""
    check = entry.check
    if not isinstance(value, str):
        check.add(key, f'expected a sys.platform string, e.g. "linux", got {describe(value)}')
        return sys.platform
    suggestion = PLATFORM_ALIASES.get(value.lower())
    if suggestion is None and value != value.lower() and re.fullmatch(PLATFORM_PATTERN, value.lower()):
        suggestion = value.lower()
    if suggestion is not None:
        check.add(
            key,
            f"{quote(value)} is not a sys.platform value; did you mean {quote(suggestion)}?",
        )
    elif not re.fullmatch(PLATFORM_PATTERN, value):
        check.add(
            key,
            f'{quote(value)} is not a sys.platform value (e.g. "linux", "darwin", "win32")',
        )
    return value


def default_cache_dir(entry: Entry, key: str) -> Path:
    """The default ``cache-dir``, checked as a given one is (it must not be a directory the tool did
    not make)."""
    return cache_dir(entry, key, DEFAULT_CACHE_DIR)


def cache_dir(entry: Entry, key: str, value: object) -> Path:
    """``settings.cache-dir``: a directory of the cache's own. The policy's directory, a source
    root, or an existing directory that is not the tool's cache (no ``CACHEDIR.TAG`` of the
    tool's) is a problem: ``importpolicy cache clear`` must never delete what it did not write.
    Anything else that is not a directory (a file, a dangling link) only means no cache."""
    check = entry.check
    given = "cache-dir" in entry.raw
    if not isinstance(value, str) or not value or "\0" in value:
        check.add(
            key,
            f"expected a directory path (relative to the policy file's directory), "
            f"got {describe(value)}",
        )
        return Path(resolve_cache_dir(check.root))
    root = check.setting_root("cache-dir") if given else check.root
    path = Path(resolve_cache_dir(root, value))
    _check_own_directory(entry, key, path, quote(value) + ("" if given else " (the default)"))
    return path


def user_cache_dir(entry: Entry, key: str, value: object) -> Path | Literal[False] | None:
    """``settings.user-cache-dir``: where the facts of installed files go (the user-level cache,
    shared by every project); ``""`` for none (they stay in the project's cache). A directory of
    the cache's own, checked as ``cache-dir`` is (:func:`cache_dir`)."""
    check = entry.check
    if not isinstance(value, str) or "\0" in value:
        check.add(
            key,
            'expected a directory path (relative to the policy file\'s directory), or "" for '
            f"no user-level cache, got {describe(value)}",
        )
        return None
    if not value:
        return False
    path = Path(os.path.normpath(check.setting_root("user-cache-dir") / os.path.expanduser(value)))
    _check_own_directory(entry, key, path, quote(value))
    return path


def _check_own_directory(entry: Entry, key: str, path: Path, shown: str) -> None:
    """Record a problem if the cache directory ``path`` is not a directory of the cache's own: the
    policy's directory, a source root, or an existing directory without the tool's tag."""
    check = entry.check
    own = f"; the cache needs a directory of its own, e.g. {quote(DEFAULT_CACHE_DIR)}"
    real = os.path.realpath(path)
    source_roots: tuple[Path, ...] = entry.values.get("source_roots", ())
    if real == os.path.realpath(check.root):
        check.add(key, f"{shown} is the policy file's directory{own}")
    elif any(real == os.path.realpath(root) for root in source_roots):
        check.add(key, f"{shown} is a source root{own}")
    elif os.path.isdir(path) and not has_cache_tag(path) and _is_not_empty(path):
        check.add(
            key,
            f"{shown} is an existing directory that is not importpolicy's cache (it has no "
            f"{CACHE_TAG} written by importpolicy); name a new or empty directory",
        )


def _is_not_empty(directory: Path) -> bool:
    try:
        return bool(os.listdir(directory))
    except OSError:
        return True


def baseline(entry: Entry, key: str, value: object) -> Path | None:
    """``baseline = "file.json"``: relative to the file that sets it; the file itself is read
    when the policy is checked (:mod:`flake8_importpolicy.config.baseline`)."""
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        entry.check.add(key, "expected the path of a baseline file (relative to "
                        f"the policy file's directory), got {describe(value)}")
        return None
    return Path(os.path.normpath(entry.check.setting_root("baseline") / value))


# --------------------------------------------------------------------------------------------
# [heavy] and [heavy-calls]


def heavy(*, call: bool) -> Parse:
    """The check of ``[heavy]``, or of ``[heavy-calls]`` with ``call=True``."""
    section = "heavy-calls" if call else "heavy"
    what = "calling it" if call else "importing it"

    def parse(entry: Entry, base: str, raw: object) -> HeavyTable:
        check = entry.check
        if not isinstance(raw, dict):
            check.add(base, f'expected a table of "module" = "reason" entries, got {describe(raw)}')
            return (), {}
        rules: list[HeavyRule] = []
        by_key: dict[str, HeavyRule | None] = {}
        for name, value in raw.items():
            by_key[name] = None
            key = child(base, name, quoted=True)
            unless: tuple[tuple[str, str], ...] = ()
            if call and isinstance(value, dict) and "reason" in value:
                # ``"f" = { reason = "...", unless-environ = { "VAR" = "1" } }``
                value, unless = _unless_environ(entry, key, value)
            elif isinstance(value, dict):
                _heavy_nesting(entry, base, name, value, section)
                continue
            pattern = check.pattern(key, name)
            reason: str | None = None
            if not isinstance(value, str):
                check.add(
                    key,
                    f"expected a reason string (why {what} is heavy), got {describe(value)}",
                )
            elif not value.strip():
                check.add(key, f"empty reason; say why {what} is heavy")
            else:
                reason = value
            if pattern is not None and reason is not None:
                rule = HeavyRule(pattern, reason, call, check.source(section, name), unless)
                by_key[name] = rule
                rules.append(rule)
        return tuple(rules), by_key

    return parse


def _unless_environ(
    entry: Entry, key: str, value: dict[str, object]
) -> tuple[object, tuple[tuple[str, str], ...]]:
    """A ``[heavy-calls]`` entry written as a table: its reason, and its ``unless-environ``
    ``{"VARIABLE" = "value"}`` pairs (the call is not heavy when every variable has its value)."""
    check = entry.check
    pairs: list[tuple[str, str]] = []
    for field_name in value:
        if field_name not in ("reason", "unless-environ"):
            check.add(child(key, field_name), 'unknown key (expected "reason" and "unless-environ")')
    raw = value.get("unless-environ", {})
    if not isinstance(raw, dict) or not raw:
        check.add(child(key, "unless-environ"), "expected a non-empty table of "
                  f'"VARIABLE" = "value" entries, got {describe(raw)}')
        raw = {}
    for variable, wanted in raw.items():
        where = child(child(key, "unless-environ"), variable, quoted=True)
        if not variable or "=" in variable or "\0" in variable:
            check.add(where, "not an environment variable name (empty, or with '=' or NUL)")
        elif not isinstance(wanted, str):
            check.add(where, f"expected the variable's value as a string, got {describe(wanted)}")
        else:
            pairs.append((variable, wanted))
    return value["reason"], tuple(sorted(pairs))


def _heavy_nesting(
    entry: Entry, base: str, name: str, value: dict[str, object], section: str
) -> None:
    """Report a ``[heavy]`` value that is a table: a ``[heavy."x"]`` table, or the nested
    tables that an unquoted dotted key (``torch.cuda = "..."``) makes."""
    check = entry.check
    for segments, leaf in _leaves([name], value, _has_reason):
        module = ".".join(segments)
        if len(segments) == 1:
            key = child(base, name, quoted=True)
        else:
            key = base + "".join(f".{key_part(segment)}" for segment in segments)
        if isinstance(leaf, dict):
            message = (
                f'expected a reason string, got a table; write {quote(module)} = "<reason>" '
                f"under [{check.header(section)}]"
            )
            if len(segments) > 1:
                message += " (quote the module name)"
        else:
            message = (
                f"dotted keys make nested TOML tables; quote the module name: "
                f"{quote(module)} = ..."
            )
        check.add(key, message)


def _has_reason(table: dict[str, object]) -> bool:
    return "reason" in table


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


# --------------------------------------------------------------------------------------------
# [light]


def light(table: Table) -> Parse:
    """The check of ``[light]``: ``[light."pattern"]`` tables, whose keys ``table`` declares
    (:class:`LightRule` has an attribute for each), or the shorthand ``"pattern" = "reason"``.
    ``[heavy]`` and ``[heavy-calls]`` must have been checked (what ``forbid`` may name)."""
    def parse(entry: Entry, base: str, raw: object) -> tuple[LightRule, ...]:
        check = entry.check
        heavy_rules, heavy_by_key = entry.values["heavy"]
        call_rules, calls_by_key = entry.values["heavy_calls"]
        check.heavy_rules = heavy_rules + call_rules
        check.heavy_by_key = {**heavy_by_key, **calls_by_key}
        if not isinstance(raw, dict):
            check.add(
                base,
                'expected a table of light modules ([light."module"] tables or "module" = "reason" '
                f"entries), got {describe(raw)}",
            )
            return ()
        rules: list[LightRule] = []
        for name, value in raw.items():
            key = child(base, name, quoted=True)
            if isinstance(value, dict) and _is_light_nesting(value, table.names):
                light_nesting(entry, [name], value, table.names)
                continue
            count = len(check.problems)
            entries = len(check.entries)
            pattern = check.pattern(key, name)
            values: dict[str, Any] | None = None
            if isinstance(value, str):
                reason: str | None = value
                if not value.strip():
                    check.add(key, "empty reason; say why the module must stay light")
                    reason = None
                shorthand = Entry(check, {}, origin=("light", name))
                shorthand.values["reason"] = reason
                values = table.walk(shorthand, key)
            elif isinstance(value, dict):
                values = table.walk(Entry(check, value, origin=("light", name)), key)
            else:
                check.add(
                    key,
                    "expected a table or a reason string (why it must stay light), "
                    f"got {describe(value)}",
                )
            if (len(check.problems) == count and pattern is not None and values is not None
                    and values["reason"] is not None):
                located = check.located(check.entries[entries:], ("light", name))
                rules.append(LightRule(pattern=pattern, entries=located,
                                       source=check.source("light", name), **values))
        return tuple(rules)

    return parse


def light_unknown(table: Table, entry: Entry, base: str, name: str, value: object) -> bool:
    """A key a ``[light."…"]`` table does not declare that is a table: the nested tables an
    unquoted dotted name makes (``[light.a.b]``). Returns whether it was reported."""
    if not isinstance(value, dict):
        return False
    light_nesting(entry, [entry.origin[1], name], value, table.names)
    return True


def light_nesting(
    entry: Entry, segments: list[str], value: object, names: Sequence[str]
) -> None:
    """Report the nested tables that an unquoted dotted name (``[light.a.b]`` or
    ``a.b = "..."`` under ``[light]``) makes."""
    check = entry.check
    base = check.key("light")
    for leaf_segments, leaf in _leaves(segments, value, lambda table: _is_light_table(table, names)):
        module = ".".join(leaf_segments)
        key = base + "".join(f".{key_part(segment)}" for segment in leaf_segments)
        if isinstance(leaf, dict):
            header = check.header(f"light.{quote(module)}")
            message = (
                f"dotted table names make nested TOML tables; quote the module name: [{header}]"
            )
        else:
            message = (
                f"dotted keys make nested TOML tables; quote the module name: "
                f"{quote(module)} = ..."
            )
        check.add(key, message)


def _is_light_table(table: dict[str, object], names: Sequence[str]) -> bool:
    return any(key in table for key in names)


def _is_light_nesting(table: dict[str, object], names: Sequence[str]) -> bool:
    """True if a ``[light]`` value only holds tables made by unquoted dotted names.

    That is: no light key, and either a sub-table or only keys that are not typos of light keys
    (``{"reson": ...}`` is a typo; ``{"b": "reason"}`` comes from ``a.b = "reason"``).
    """
    if not table or _is_light_table(table, names):
        return False
    if any(isinstance(item, dict) for item in table.values()):
        return True
    return not any(find_close_match(key, names) for key in table)


def light_reason(entry: Entry, key: str, value: object) -> str | None:
    """A light module's ``reason``."""
    return entry.check.reason(key, value, "the module must stay light")


def missing_light_reason(entry: Entry, key: str) -> None:
    """A light table without ``reason``."""
    entry.check.add(key, "missing; every light module needs a reason (why it must stay light)")


def default_forbid(entry: Entry, key: str) -> tuple[HeavyRule, ...]:
    """Without ``forbid``, a light module must not reach any ``[heavy]`` or ``[heavy-calls]`` rule."""
    return entry.check.heavy_rules


def forbid(entry: Entry, key: str, value: object) -> tuple[HeavyRule, ...]:
    """``forbid = [...]``: ``[heavy]``/``[heavy-calls]`` keys (their rules), or other module patterns
    (new rules with the light module's reason)."""
    check = entry.check
    heavy_by_key = check.heavy_by_key
    reason: str | None = entry.values.get("reason")
    source = check.source(*entry.origin)
    rules: list[HeavyRule] = []

    def check_item(item_key: str, item: str) -> None:
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
                    message += f"; did you mean {quote(close)}?"
                check.add(item_key, message)
                return
            rule = HeavyRule(pattern, reason or "", source=source)
            check.entries.append(PatternEntry(item_key, pattern))
        if rule is not None and all(rule.pattern != other.pattern for other in rules):
            rules.append(rule)

    check.string_list(
        key,
        value,
        "an array of [heavy] keys or module patterns",
        "a string (a [heavy] key or a module pattern)",
        check_item,
    )
    return tuple(rules)


def allow(entry: Entry, key: str, value: object) -> tuple[ModulePattern, ...]:
    """``allow = [...]``: module patterns (or ``[heavy]`` keys) subtracted from ``forbid``."""
    check = entry.check
    heavy_by_key = check.heavy_by_key
    patterns: list[ModulePattern] = []

    def check_item(item_key: str, item: str) -> None:
        pattern = check.pattern(item_key, item)
        if pattern is not None and item not in heavy_by_key:
            check.entries.append(PatternEntry(item_key, pattern))
        if pattern is not None and pattern not in patterns:
            patterns.append(pattern)

    check.string_list(
        key, value, "an array of module patterns", "a module pattern string", check_item
    )
    return tuple(patterns)


def after_import(entry: Entry, key: str, value: object) -> tuple[str, ...]:
    """``after-import = [...]``: Python expressions (``ast.parse(mode="eval")``), at most
    :data:`MAX_EXPRESSION_DEPTH` deep."""
    check = entry.check
    expressions: list[str] = []

    def check_item(item_key: str, item: str) -> None:
        expression = item.strip()
        if not expression:
            check.add(item_key, "empty; write a Python expression that must be true after import")
            return
        try:
            tree = ast.parse(expression, mode="eval")
        except SyntaxError as exc:
            where = ""
            if exc.offset:
                where = f" (column {exc.offset})"
                if exc.lineno and exc.lineno > 1:
                    where = f" (line {exc.lineno}, column {exc.offset})"
            check.add(item_key, f"invalid Python expression: {exc.msg}{where}")
            return
        except ValueError as exc:  # null bytes on some Python versions
            check.add(item_key, f"invalid Python expression: {exc}")
            return
        except (RecursionError, MemoryError):  # CPython's parser gives up on deep nesting
            check.add(item_key, "invalid Python expression: nested too deeply to parse")
            return
        if _is_deeper(tree, MAX_EXPRESSION_DEPTH):  # the same answer whatever the recursion limit
            check.add(item_key, "invalid Python expression: nested too deeply to parse")
            return
        expressions.append(expression)

    check.string_list(
        key,
        value,
        "an array of Python expression strings",
        "a Python expression string",
        check_item,
    )
    return tuple(expressions)


def _is_deeper(tree: ast.AST, limit: int) -> bool:
    """True if ``tree`` is more than ``limit`` nodes deep (walked without recursion)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


def max_import_ms(entry: Entry, key: str, value: object) -> float | None:
    """``max-import-ms = N``: a positive number of milliseconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        entry.check.add(key, "expected a positive number of milliseconds (the median import time "
                        f"verify measures), got {describe(value)}")
        return None
    return float(value)


# --------------------------------------------------------------------------------------------
# [[ignore]]


def ignore(table: Table) -> Parse:
    """The check of ``[[ignore]]``: an array of tables whose keys ``table`` declares."""
    def parse(entry: Entry, base: str, raw: object) -> tuple[IgnoreRule, ...]:
        check = entry.check
        header = check.header("ignore")
        if isinstance(raw, dict):
            check.add(
                base,
                f"expected an array of tables, got a table; write [[{header}]] (double brackets) "
                "before each entry",
            )
            return ()
        if not isinstance(raw, list):
            check.add(
                base, f"expected an array of tables ([[{header}]] entries), got {describe(raw)}"
            )
            return ()
        imports = [
            (item.get("import", item.get("unresolved")) if isinstance(item, dict) else None)
            for item in raw
        ]
        # each entry's file and line there (a base's entries come first, extends)
        origins = check.merger.ignore_origins if check.merger is not None else []
        if len(origins) != len(raw):
            origins = []
            lines = ignore_lines(check.text, imports, check.prefix)
        rules: list[IgnoreRule] = []
        for index, item in enumerate(raw):
            key = f"{base}[{index}]"
            line = origins[index][2] if origins else lines[index]
            source = (origins[index][0].label or "") if origins else ""
            if not isinstance(item, dict):
                check.add(key, f"expected a table, got {describe(item)}", line)
                continue
            values = table.walk(Entry(check, item, line=line), key)
            unresolved = "import" not in item and "unresolved" in item
            edge = values["unresolved"] if unresolved else values["import"]
            reason = values["reason"]
            if edge is not None and reason is not None:
                from flake8_importpolicy.model.ignore import IgnoreRule

                text, importer, imported = edge
                rules.append(IgnoreRule(importer, imported, reason, text, line,
                                        unresolved=unresolved, source=source))
        return tuple(rules)

    return parse


def ignored_import(entry: Entry, key: str, value: object) -> Edge | None:
    """``import = "importer -> imported"`` (not checked beside ``unresolved``, which says so)."""
    if "unresolved" in entry.raw:
        return None
    check, line = entry.check, entry.line
    if not isinstance(value, str):
        check.add(key, f'expected a string "importer -> imported", got {describe(value)}', line)
        return None
    sides = value.split("->")
    if len(sides) != 2:
        count = "no" if len(sides) == 1 else "more than one"
        check.add(key, f'{quote(value)} has {count} "->"; write "importer -> imported"', line)
        return None
    from flake8_importpolicy.model.ignore import parse_node_pattern

    patterns: list[NodePattern] = []
    for side, text in zip(("left", "right"), sides):
        try:
            patterns.append(parse_node_pattern(text.strip()))
        except PatternError as exc:
            check.add(key, f'{side} of "->": {exc}', line)
    if len(patterns) != 2:
        return None
    return value, patterns[0], patterns[1]


def missing_import(entry: Entry, key: str) -> None:
    """An entry with neither ``import`` nor ``unresolved``."""
    if "unresolved" not in entry.raw:
        entry.check.add(key, 'missing; write import = "importer -> imported"', entry.line)


def ignored_unresolved(entry: Entry, key: str, value: object) -> Edge | None:
    """``unresolved = "module pattern"``: IPL006 accepted in those modules."""
    check, line = entry.check, entry.line
    if "import" in entry.raw:
        check.add(key, 'an entry has either import = "..." or unresolved = "...", not both', line)
        return None
    if not isinstance(value, str):
        check.add(key, f'expected a module pattern string, got {describe(value)}', line)
        return None
    try:
        pattern = parse_pattern(value.strip())
    except PatternError as exc:
        check.add(key, str(exc), line)
        return None
    from flake8_importpolicy.model.ignore import NodePattern

    node = NodePattern(pattern)
    return f"unresolved {value.strip()}", node, node


def ignore_reason(entry: Entry, key: str, value: object) -> str | None:
    """An ``[[ignore]]`` entry's ``reason``."""
    return entry.check.reason(key, value, "the import is accepted", entry.line)


def missing_ignore_reason(entry: Entry, key: str) -> None:
    """An ``[[ignore]]`` entry without ``reason``."""
    header = entry.check.header("ignore")
    entry.check.add(
        key, f"missing; every [[{header}]] entry needs a reason (why the import is accepted)",
        entry.line,
    )


# --------------------------------------------------------------------------------------------
# [assume]


def assume(entry: Entry, base: str, raw: object) -> tuple[Assumption, ...]:
    """The check of ``[assume]`` (dotted names and calls) and ``[assume.environ]``."""
    check = entry.check
    if not isinstance(raw, dict):
        check.add(base, 'expected a table of "dotted.name" = value or "dotted.f()" = value '
                  f"entries ([{check.header('assume')}]), got {describe(raw)}")
        return ()
    if not raw:
        return ()
    from flake8_importpolicy.model.assume import Assumption

    found: list[Assumption] = []
    seen: dict[str, str] = {}
    for name, value in raw.items():
        key = child(base, name, quoted=True)
        if name == "environ":
            found.extend(_environ(entry, child(base, "environ"), value))
            continue
        if isinstance(value, dict):
            dotted = ".".join(segments for segments, _ in _flat_names([name], value))
            check.add(key, "dotted keys make nested TOML tables; quote the name: "
                      f"{quote(dotted)} = ...")
            continue
        try:
            canonical = canonical_assumption_key(name)
        except PatternError as exc:
            check.add(key, exc.reason)
            canonical = None
        if isinstance(value, float):
            value = integral(value)
        if isinstance(value, bool) or is_int(value) or isinstance(value, str):
            pass
        else:
            check.add(key, "expected true, false, a string or an integer (the value Python "
                      f"would see), got {describe(value)}")
            continue
        if canonical is None:
            continue
        if canonical in seen:
            check.add(key, f"the same name as {quote(seen[canonical])}, written differently")
            continue
        seen[canonical] = name
        assert isinstance(value, (bool, int, str))
        found.append(Assumption(canonical, value, False, check.source("assume", name)))
    return tuple(found)


def _environ(entry: Entry, base: str, raw: object) -> list[Assumption]:
    """The check of ``[assume.environ]``: ``"VARIABLE" = "value"`` (set) or ``false`` (not set)."""
    from flake8_importpolicy.model.assume import Assumption

    check = entry.check
    if not isinstance(raw, dict):
        check.add(base, 'expected a table of "VARIABLE" = "value" or false entries '
                  f"([{check.header('assume.environ')}]), got {describe(raw)}")
        return []
    found: list[Assumption] = []
    for name, value in raw.items():
        key = child(base, name, quoted=True)
        if not name or "=" in name or "\0" in name:
            check.add(key, "not an environment variable name (empty, or with '=' or NUL)")
            continue
        if value is False:
            found.append(Assumption(name, None, True, check.source("assume", "environ", name)))
        elif isinstance(value, str):
            if "\0" in value:
                check.add(key, "an environment variable's value cannot hold a NUL character")
                continue
            found.append(Assumption(name, value, True, check.source("assume", "environ", name)))
        elif value is True:
            check.add(key, "true is not a value an environment variable can have: write the "
                      'string it is set to ("1"), or false for "not set"')
        else:
            check.add(key, 'expected the string the variable is set to ("1"), or false for '
                      f'"not set", got {describe(value)}')
    return found


def _flat_names(segments: list[str], value: object) -> list[tuple[str, object]]:
    """The first leaf of the nested tables an unquoted dotted key made, as (dotted name, value)."""
    while isinstance(value, dict) and value:
        name, value = next(iter(value.items()))
        segments = [*segments, name]
    return [(".".join(segments), value)]
