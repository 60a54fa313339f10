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
import difflib
import hashlib
import json
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from flake8_importpolicy.config.locate import find_policy, has_cache_tag, resolve_cache_dir
from flake8_importpolicy.model.errors import PolicyError, PolicyNotFound, PolicyProblem
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
    parse_pattern,
)
from flake8_importpolicy.model.policy import (
    External,
    HeavyRule,
    IgnoreRule,
    LightRule,
    Policy,
    Settings,
)
from flake8_importpolicy.model.reading import read_regular_file
from flake8_importpolicy.model.versions import parse_target_version

__all__ = [
    "DEFAULT_CALL_DEPTH",
    "EXTERNAL_VALUES",
    "SUPPORTED_VERSION",
    "discover_policy",
    "load_policy",
]

SUPPORTED_VERSION: Final = 1
DEFAULT_CALL_DEPTH: Final = 3

EXTERNAL_VALUES: Final[tuple[External, ...]] = ("auto", "follow", "stop")

_TOP_LEVEL_KEYS: Final = ("version", "settings", "heavy", "heavy-calls", "light", "ignore")
_SETTINGS_KEYS: Final = (
    "source-roots",
    "interpreter",
    "target-versions",
    "platform",
    "external",
    "cache-dir",
    "call-depth",
    "lazy-imports",
)
LAZY_IMPORTS_VALUES: Final = ("normal", "all", "none")
_LIGHT_KEYS: Final = ("reason", "forbid", "allow", "after-import")
_IGNORE_KEYS: Final = ("import", "reason")
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
    """Read, parse and validate a policy file.

    Args:
        path: a ``policy.toml`` (any name other than ``pyproject.toml`` is read as one) or a
            ``pyproject.toml`` whose ``[tool.importpolicy]`` table holds the policy.

    Returns:
        The :class:`Policy`.

    Raises:
        PolicyError: for every kind of bad input (unreadable file, bad UTF-8, invalid TOML, a
            ``pyproject.toml`` without ``[tool.importpolicy]``, schema problems), listing every
            schema problem at once.
    """
    given = Path(path)
    try:
        raw = read_regular_file(given)[1]  # a FIFO or a device is refused, never waited for
    except OSError as exc:
        raise PolicyError(
            given, [PolicyProblem("", f"cannot read: {exc.strerror or exc}")]
        ) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        byte_line, byte_column = _byte_position(raw, exc.start)
        problem = PolicyProblem(
            "", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", byte_line, byte_column
        )
        raise PolicyError(given, [problem]) from None
    try:
        document: dict[str, object] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message, line, column = _toml_error(text, str(exc))
        raise PolicyError(
            given, [PolicyProblem("", f"invalid TOML: {message}", line, column)]
        ) from None
    except RecursionError:
        raise PolicyError(given, [_TOO_DEEP]) from None

    absolute = given.resolve()
    table: dict[str, object] = document
    prefix = ""
    if absolute.name == PYPROJECT_FILENAME:
        prefix = _PYPROJECT_PREFIX
        tool = document.get("tool")
        if not isinstance(tool, dict) or "importpolicy" not in tool:
            problem = PolicyProblem(
                "",
                f"no [{_PYPROJECT_PREFIX}] table; add one, "
                f"or write the policy in {POLICY_FILENAME}",
            )
            raise PolicyError(given, [problem])
        section = tool["importpolicy"]
        if not isinstance(section, dict):
            problem = PolicyProblem(prefix, f"expected a table, got {_describe(section)}")
            raise PolicyError(given, [problem])
        table = section
    builder = _Builder(absolute, text, prefix)
    try:
        policy = builder.build(table, hashlib.sha256(raw).hexdigest())
    except RecursionError:
        raise PolicyError(given, [_TOO_DEEP]) from None
    if policy is None or builder.problems:
        raise PolicyError(given, builder.problems or [PolicyProblem("", "invalid policy")])
    return policy


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
    return not any(difflib.get_close_matches(key, _LIGHT_KEYS, n=1) for key in table)


def _ignore_lines(text: str, imports: list[object], prefix: str) -> list[int]:
    """Best-effort 1-based line of each ``[[ignore]]`` entry's ``import = ...`` key (1 if none)."""
    lines = text.split("\n")  # TOML lines: splitlines() would also split on \f, \u2028, ...
    table = r"\s*\.\s*".join(re.escape(part) for part in [*prefix.split("."), "ignore"] if part)
    header_re = re.compile(rf"\s*\[\[\s*{table}\s*\]\]")
    import_re = re.compile(r"\s*(?:import|\"import\"|'import')\s*=")
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

    def __init__(self, path: Path, text: str, prefix: str) -> None:
        self.path = path
        self.root = path.parent
        self.text = text
        self.prefix = prefix
        self.is_pyproject = bool(prefix)
        self.problems: list[PolicyProblem] = []

    # -- helpers -----------------------------------------------------------------------------

    def add(self, key: str, message: str, line: int | None = None) -> None:
        self.problems.append(PolicyProblem(key, message, line))

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
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f"did you mean {close[0]!r}?" if close else "expected one of: " + ", ".join(allowed)
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
        )

    def version(self, table: dict[str, object]) -> None:
        if "version" not in table:
            return
        value = table["version"]
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
        if len(self.problems) != count or external is None or lazy_imports is None:
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
        )

    def source_roots(self, base: str, raw: dict[str, object]) -> tuple[Path, ...]:
        key = _child(base, "source-roots")
        if "source-roots" not in raw:
            src = self.root / "src"
            return ((src if src.is_dir() else self.root).resolve(),)
        value = raw["source-roots"]
        if isinstance(value, list) and not value:
            self.add(
                key,
                'empty; list at least one directory, or remove the key (default: "src" if it '
                'exists, else ".")',
            )
            return ()
        roots: list[Path] = []

        def check(item_key: str, item: str) -> None:
            if not item:
                self.add(item_key, 'empty path; write "." for the policy file\'s directory')
                return
            directory = self.root / item
            if not directory.is_dir():
                note = "" if Path(item).is_absolute() else _RELATIVE_NOTE
                self.add(item_key, f"{_quote(item)} is not a directory{note}")
                return
            resolved = directory.resolve()
            if resolved not in roots:
                roots.append(resolved)

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
            path = Path(os.path.normpath(self.root / value))
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
        close = difflib.get_close_matches(value, values, n=1)
        if close:
            hint = f"did you mean {_quote(close[0])}? (expected {choices})"
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
        path = Path(resolve_cache_dir(self.root, value))
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

    def call_depth(self, base: str, raw: dict[str, object]) -> int:
        if "call-depth" not in raw:
            return DEFAULT_CALL_DEPTH
        value = raw["call-depth"]
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
                rule = HeavyRule(pattern, reason, call)
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
            pattern = self.pattern(key, name)
            reason: str | None = None
            forbid = heavy
            allow: tuple[ModulePattern, ...] = ()
            after_import: tuple[str, ...] = ()
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
                        _child(key, "forbid"), value["forbid"], reason, heavy_by_key
                    )
                if "allow" in value:
                    allow = self.allow(_child(key, "allow"), value["allow"])
                if "after-import" in value:
                    after_import = self.after_import(
                        _child(key, "after-import"), value["after-import"]
                    )
            else:
                self.add(
                    key,
                    "expected a table or a reason string (why it must stay light), "
                    f"got {_describe(value)}",
                )
            if len(self.problems) == count and pattern is not None and reason is not None:
                rules.append(LightRule(pattern, reason, forbid, allow, after_import))
        return tuple(rules)

    def forbid(
        self,
        key: str,
        value: object,
        reason: str | None,
        heavy_by_key: dict[str, HeavyRule | None],
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
                    close = difflib.get_close_matches(item, list(heavy_by_key), n=1)
                    if close:
                        message += f"; did you mean {_quote(close[0])}?"
                    self.add(item_key, message)
                    return
                rule = HeavyRule(pattern, reason or "")
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

    def allow(self, key: str, value: object) -> tuple[ModulePattern, ...]:
        patterns: list[ModulePattern] = []

        def check(item_key: str, item: str) -> None:
            pattern = self.pattern(item_key, item)
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
        imports = [item.get("import") if isinstance(item, dict) else None for item in raw]
        lines = _ignore_lines(self.text, imports, self.prefix)
        rules: list[IgnoreRule] = []
        for index, item in enumerate(raw):
            key = f"{base}[{index}]"
            line = lines[index]
            if not isinstance(item, dict):
                self.add(key, f"expected a table, got {_describe(item)}", line)
                continue
            for sub in item:
                if sub not in _IGNORE_KEYS:
                    self.unknown_key(key, sub, _IGNORE_KEYS, line)
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
                text, importer, imported = edge
                rules.append(IgnoreRule(importer, imported, reason, text, line))
        return tuple(rules)

    def edge(
        self, key: str, item: dict[str, object], line: int
    ) -> tuple[str, ModulePattern, ModulePattern] | None:
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
        patterns: list[ModulePattern] = []
        for side, text in zip(("left", "right"), sides):
            try:
                patterns.append(parse_pattern(text.strip()))
            except PatternError as exc:
                self.add(key, f'{side} of "->": {exc}', line)
        if len(patterns) != 2:
            return None
        return value, patterns[0], patterns[1]
