"""The baseline file: reading and validating it (every problem at once), and its text, sorted (the
command line writes it with :func:`~flake8_importpolicy.answers.jsonfile.write_text_atomic`).

The file is JSON with one entry per line, so that a stale entry (IPL009) has a line and a diff of
the file shows which findings were fixed::

    {
      "version": 1,
      "about": "...",
      "entries": [
        {"code": "IPL001", "light": "app.ops", "forbidden": "app.config", "first-hop": "app.ops.fused"},
        {"code": "IPL008", "light": "app.cli", "forbidden": "max-modules=40", "first-hop": ""}
      ]
    }

What the entries mean and how a report is filtered by them: :mod:`flake8_importpolicy.model.baseline`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from flake8_importpolicy.model.baseline import BASELINE_CODES, Baseline, BaselineEntry
from flake8_importpolicy.model.errors import BaselineError, PolicyProblem, find_close_match
from flake8_importpolicy.model.files import PYPROJECT_FILENAME, PYPROJECT_TABLE
from flake8_importpolicy.model.policy import Policy
from flake8_importpolicy.model.reading import MAX_ENTRIES, read_regular_file

__all__ = ["BASELINE_VERSION", "format_baseline", "load_baseline", "load_policy_baseline"]

BASELINE_VERSION: Final = 1
_ABOUT: Final = (
    "importpolicy baseline: findings accepted today. importpolicy check, flake8 and mypy report only "
    "findings not listed here, and an entry that no longer occurs as IPL009. Entries match by "
    "code, light module, forbidden module and first hop, never by line. Rewrite it with "
    "importpolicy check --write-baseline (new findings need --add)."
)
_DEEPEST: Final = 900
"""The deepest nesting a baseline may have (it needs 3): deeper is "nested too deeply" whatever
the recursion limit of the process reading it (mypy raises it, so its parser goes deeper)."""
_LONGEST_KEY_SHOWN: Final = 60
"""An unknown key longer than this is shown cut, and gets no "did you mean"."""
_TOP_KEYS: Final = ("version", "about", "entries")
_ENTRY_KEYS: Final = ("code", "light", "forbidden", "first-hop")


def load_policy_baseline(policy: Policy, override: str | None = None) -> Baseline | None:
    """The baseline that filters the reports of ``policy``: ``override`` (``--baseline FILE``;
    ``""``: none), else the policy's ``settings.baseline``; None when there is none. Every command
    that reads the policy reads it (a baseline that cannot be used fails them all alike).

    Raises:
        BaselineError: as :func:`load_baseline`, naming what named the file (``--baseline``, or
            the policy's ``settings.baseline`` key).
    """
    if override is not None:
        return load_baseline(Path(override), named_by="--baseline") if override else None
    if policy.settings.baseline is None:
        return None
    prefix = f"{PYPROJECT_TABLE}." if policy.path.name == PYPROJECT_FILENAME else ""
    return load_baseline(
        policy.settings.baseline, named_by=f"{prefix}settings.baseline in {policy.path.name}"
    )


def load_baseline(path: Path, *, named_by: str | None = None) -> Baseline:
    """Read and validate a baseline file.

    Args:
        path: the file.
        named_by: what named it, for messages (``settings.baseline in policy.toml``).

    Returns:
        The :class:`~flake8_importpolicy.model.baseline.Baseline`, each entry with its line.

    Raises:
        BaselineError: the file cannot be read, is not UTF-8 or JSON, or is not a baseline (every
            problem at once, with its JSON key path, e.g. ``entries[2].code``), or it holds more
            than :data:`~flake8_importpolicy.model.reading.MAX_ENTRIES` entries.
    """
    path = Path(os.path.abspath(path))

    def fail(message: str, line: int | None = None, column: int | None = None) -> BaselineError:
        return BaselineError(path, [PolicyProblem("", message, line, column)], named_by)

    try:
        raw = read_regular_file(path)[1]  # a regular file of at most 10 MiB, never waited for
    except OSError as exc:
        hint = "; write one with importpolicy check --write-baseline" if isinstance(
            exc, FileNotFoundError) else ""
        raise fail(f"cannot read the baseline: {exc.strerror or exc}{hint}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise fail(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:
        raise fail("invalid JSON: nested too deeply") from None
    except ValueError as exc:  # a number of more digits than int() converts (sys.int_info)
        raise fail(f"invalid JSON: {' '.join(str(exc).split(';')[0].split())}") from None
    if _depth(data) > _DEEPEST:  # what the parser refuses at Python's default recursion limit
        raise fail("invalid JSON: nested too deeply")
    problems: list[PolicyProblem] = []
    entries: list[BaselineEntry] = []
    if not isinstance(data, dict):
        raise fail(f'expected a JSON object with "version" and "entries", got {_describe(data)}')
    for key in data:
        if key not in _TOP_KEYS:
            problems.append(PolicyProblem(_json_key(key), _unknown(key, _TOP_KEYS)))
    if data.get("version") != BASELINE_VERSION or isinstance(data.get("version"), bool):
        found = "missing" if "version" not in data else f"got {_describe(data['version'])}"
        problems.append(PolicyProblem("version", f"expected {BASELINE_VERSION}, {found}"))
    raw_entries = data.get("entries")
    if not isinstance(raw_entries, list):
        found = "missing" if "entries" not in data else f"got {_describe(raw_entries)}"
        problems.append(PolicyProblem("entries", f"expected an array of entries, {found}"))
        raw_entries = []
    if len(raw_entries) > MAX_ENTRIES:
        raise fail(f"{len(raw_entries):,} entries; a baseline holds at most {MAX_ENTRIES:,}")
    lines = _entry_lines(text, len(raw_entries))
    seen: dict[tuple[str, str, str, str], int] = {}
    for index, item in enumerate(raw_entries):
        key = f"entries[{index}]"
        line = lines[index]
        entry = _entry(key, item, line, problems)
        if entry is None:
            continue
        if entry.identity in seen:
            problems.append(PolicyProblem(
                key, f"the same finding as entries[{seen[entry.identity]}]", line))
            continue
        seen[entry.identity] = index
        entries.append(entry)
    if problems:
        raise BaselineError(path, problems, named_by)
    return Baseline(path, tuple(entries), hashlib.sha256(raw).hexdigest())


def _entry(
    key: str, item: object, line: int | None, problems: list[PolicyProblem]
) -> BaselineEntry | None:
    """One entry, validated (its problems appended)."""
    if not isinstance(item, dict):
        problems.append(PolicyProblem(key, f"expected an object, got {_describe(item)}", line))
        return None
    count = len(problems)
    for name in item:
        if name not in _ENTRY_KEYS:
            problems.append(PolicyProblem(f"{key}.{_json_key(name)}", _unknown(name, _ENTRY_KEYS), line))
    values: list[str] = []
    for name in _ENTRY_KEYS:
        value = item.get(name)
        if not isinstance(value, str):
            message = ("missing; every entry has code, light, forbidden and first-hop"
                       if name not in item else f"expected a string, got {_describe(value)}")
            problems.append(PolicyProblem(f"{key}.{name}", message, line))
            continue
        values.append(value)
    code = item.get("code")
    if isinstance(code, str) and code not in BASELINE_CODES:
        problems.append(PolicyProblem(
            f"{key}.code", f"{json.dumps(code)} is not a code a baseline records (expected "
            + " or ".join(json.dumps(c) for c in BASELINE_CODES) + ")", line))
    if isinstance(item.get("light"), str) and not item["light"].strip():
        problems.append(PolicyProblem(f"{key}.light", "empty; name the light module", line))
    if len(problems) != count:
        return None
    code_, light, forbidden, first_hop = values
    return BaselineEntry(code_, light, forbidden, first_hop, line)


def format_baseline(entries: Iterable[BaselineEntry]) -> str:
    """The text of a baseline file holding ``entries``: sorted, one entry per line, keys sorted
    (the same entries always give the same bytes)."""
    rows = [
        json.dumps({"code": e.code, "first-hop": e.first_hop, "forbidden": e.forbidden,
                    "light": e.light}, ensure_ascii=False, sort_keys=True)
        for e in sorted(set(entries))
    ]
    body = ",\n".join(f"    {row}" for row in rows)
    listed = f"[\n{body}\n  ]" if rows else "[]"
    return (f'{{\n  "version": {BASELINE_VERSION},\n  "about": {json.dumps(_ABOUT)},\n'
            f'  "entries": {listed}\n}}\n')


def _entry_lines(text: str, count: int) -> list[int | None]:
    """Best-effort 1-based line of each entry: the lines starting with ``{`` after the line that
    opens ``"entries"`` (the layout :func:`format_baseline` writes); None when that does not fit."""
    lines = text.split("\n")
    start = next((n for n, line in enumerate(lines) if '"entries"' in line), None)
    if start is None:
        return [None] * count
    found = [n + 1 for n in range(start + 1, len(lines)) if lines[n].lstrip().startswith("{")]
    if len(found) != count:
        return [None] * count
    return list(found)


def _depth(data: object) -> int:
    """How deeply arrays and objects nest in ``data`` (0 for a scalar), without recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (list, dict)):
            deepest = max(deepest, depth + 1)
            stack.extend((item, depth + 1) for item in (value.values() if isinstance(value, dict) else value))
    return deepest


def _json_key(key: str) -> str:
    if len(key) > _LONGEST_KEY_SHOWN:
        key = key[:_LONGEST_KEY_SHOWN] + "..."
    return key if key.replace("-", "").replace("_", "").isalnum() else json.dumps(key)


def _unknown(key: str, allowed: tuple[str, ...]) -> str:
    close = find_close_match(key, allowed) if len(key) <= _LONGEST_KEY_SHOWN else None
    return f"unknown key; did you mean {close!r}?" if close else (
        "unknown key; expected one of: " + ", ".join(allowed))


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {json.dumps(value)}"
    if isinstance(value, list):
        return "an array"
    return "an object"
