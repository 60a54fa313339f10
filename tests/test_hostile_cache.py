"""Hostile caches: an entry of the right key but the wrong shape, and cache directories that are not
what they seem (issue 32).

Every cache entry is read back by type and range (docs/design.md, "Caches"): a value of another JSON
type where a string, a number, a list or an object belongs, or a number out of range, is a miss,
never an answer. The readers are asked in this process, for every value of an entry of every kind
(the command line's answers, flake8's per-file index, mypy's index, interpreter facts, per-file
facts), and the three cases the attack found go through the clients too: C = ``importpolicy``, F =
``flake8``, M = ``mypy`` (tests/test_hostile.py's ``adapters``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from test_hostile import TREE, adapters, assert_violation_found, files_under, mypy_stdlib_cache
from test_robustness import (
    CACHE,
    MYPY_SKIP,
    Run,
    _fill_caches,
    _with_stdlib_cache,
    cli,
    flake8,
    mypy,
    run_all,
    write,
)

from flake8_importpolicy.answers.jsonfile import MALFORMED, read_json_sealed, write_json_atomic

__all__ = ["mypy_stdlib_cache"]  # the fixture, shared with tests/test_hostile.py

WRONG_TYPES: tuple[object, ...] = ([], {}, "x", 7, True, 1.5)
OUT_OF_RANGE: tuple[object, ...] = (-1, 10**40)


def _mutations(value: object) -> Iterator[tuple[tuple[object, ...], object]]:
    """``(path, replacement)`` for every node of a JSON value: each value of another JSON type, and
    for a number each one out of range (not for ``null``, the value of an optional field, whose
    other type is not known here)."""
    stack: list[tuple[tuple[object, ...], object]] = [((), value)]
    while stack:
        path, node = stack.pop()
        if path and node is not None:
            for other in WRONG_TYPES:
                if type(other) is not type(node) and not (type(node) is int and type(other) is float):
                    yield path, other
            if type(node) is int:
                yield from ((path, number) for number in OUT_OF_RANGE)
        if isinstance(node, dict):
            stack.extend(((*path, key), child) for key, child in node.items())
        elif isinstance(node, list):
            stack.extend(((*path, index), child) for index, child in enumerate(node))


def _replaced(value: Any, path: tuple[Any, ...], replacement: object) -> Any:
    import copy

    copied = copy.deepcopy(value)
    node = copied
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = replacement
    return copied


def _entry(root: Path, kind: str) -> Path:
    found = sorted((root / CACHE / kind).rglob("*.json"))
    assert found, kind
    return found[0]


def _assert_miss_or_same(location: Path, read: Callable[[], object]) -> int:
    """Put each mutation of the entry at ``location`` into it (sealed again, as a forger would) and
    read it back: it is a miss (``read`` returns None or raises one of MALFORMED) or the same
    answer, never another one. Returns how many mutations were tried."""
    original = read_json_sealed(location)
    assert isinstance(original, dict)
    expected = read()
    assert expected is not None
    tried = 0
    for path, replacement in _mutations(original):
        write_json_atomic(location, _replaced(original, path, replacement))
        try:
            got = read()
        except MALFORMED:
            got = None
        assert got is None or got == expected, (location, path, replacement)
        tried += 1
    write_json_atomic(location, original)
    return tried


def test_every_value_of_every_entry_is_read_by_type_and_range(tmp_path: Path) -> None:
    """Issue 32: a fuzzed answers entry (a list where a string belongs in ``violations[1][2]``), a
    per-file index entry with a huge integer and a mypy index entry with a negative number were each
    accepted and changed the answer. Every value of every kind of entry is now checked: each
    mutation of its type, and of each number's range, is a miss or the same answer."""
    from flake8_importpolicy.answers import by_module, per_file
    from flake8_importpolicy.answers.facts_cache import facts_from_json
    from flake8_importpolicy.answers.whole import find_cached_report
    from flake8_importpolicy.model.interpreter import InterpreterInfo

    root = write(tmp_path, TREE)
    _fill_caches(root)
    policy = str(root / "policy.toml")

    def per_file_index() -> object:
        index = per_file._load_index(policy)
        return None if index is None else (index.prefixes, index.files, index.findings)

    def sealed(location: Path) -> Any:
        return read_json_sealed(location)

    tried = _assert_miss_or_same(_entry(root, "answers"), lambda: find_cached_report(policy))
    tried += _assert_miss_or_same(_entry(root, "per-file"), per_file_index)
    if not MYPY_SKIP:
        tried += _assert_miss_or_same(_entry(root, "mypy"), lambda: by_module._load_index(policy))
    interpreters = _entry(root, "interpreters")
    tried += _assert_miss_or_same(
        interpreters, lambda: InterpreterInfo.from_json(sealed(interpreters)["info"])
    )
    modules = [path for path in sorted((root / CACHE / "facts").rglob("*.json"))
               if sealed(path)["key"][3] == "module"]
    assert modules
    for facts in modules:
        tried += _assert_miss_or_same(facts, lambda facts=facts: facts_from_json(
            sealed(facts)["facts"]))
    assert tried > 1000, tried


def _edit_sealed(root: Path, kind: str, edit: Callable[[Any], None]) -> None:
    location = _entry(root, kind)
    data: Any = read_json_sealed(location)
    edit(data)
    write_json_atomic(location, data)


def test_the_attacks_three_entries_are_misses_in_every_client(
    tmp_path: Path, mypy_stdlib_cache: Path | None
) -> None:
    """The three entries of the attack, sealed again: ``importpolicy check`` printed a chain to
    ``[[]]``, flake8 and mypy reported at the line the entry held. Each is a miss: the answer is
    computed again (C F M)."""
    root = _with_stdlib_cache(write(tmp_path, TREE), mypy_stdlib_cache)
    _fill_caches(root)

    def heavy_is_a_list(entry: Any) -> None:
        entry["report"]["violations"][0][2] = [[]]

    def huge_line(entry: Any) -> None:
        entry["findings"][0][1] = 10**40

    def negative_line(entry: Any) -> None:
        for rows in entry["findings"].values():
            rows[0][0] = -3

    _edit_sealed(root, "answers", heavy_is_a_list)
    _edit_sealed(root, "per-file", huge_line)
    if not MYPY_SKIP:
        _edit_sealed(root, "mypy", negative_line)
    checked, linted, typed = adapters(root)
    assert "[[]]" not in checked.stdout
    assert_violation_found(checked, linted, typed)


# -- cache directories that are not what they seem -------------------------------------------------


def test_cache_clear_deletes_nothing_through_a_linked_cache_directory(tmp_path: Path) -> None:
    """Issue 32: with a ``cache-dir`` that is a link to a tagged directory elsewhere (another
    project's cache), ``cache clear`` deleted that directory's entries. It deletes nothing through
    a link, keeps the link and says why; the other project's answers stay warm."""
    other = write(tmp_path / "other", TREE)
    assert cli(other, "check").returncode == 1
    before = files_under(other / CACHE)
    project = write(tmp_path / "project", TREE)
    os.symlink(other / CACHE, project / CACHE)
    checked = cli(project, "check")
    assert checked.returncode == 1, checked
    cleared = cli(project, "cache", "clear")
    assert (cleared.returncode, cleared.stderr) == (0, ""), cleared
    assert cleared.stdout == (
        f"kept {CACHE}: it is a symbolic link (to {other / CACHE}), and cache clear deletes nothing "
        "through a link (its target may be another project's cache); clear that cache with its own "
        "policy, or remove the link\n"
    )
    assert os.path.islink(project / CACHE)
    assert set(files_under(other / CACHE)) >= set(before)


LONG = "a" * 300  # longer than a file name may be (255 bytes on Linux file systems)


def test_a_cache_dir_too_long_for_the_file_system_means_no_cache(
    tmp_path: Path, mypy_stdlib_cache: Path | None
) -> None:
    """Issue 32: a ``cache-dir`` path too long for the file system was an internal error (exit 3)
    in ``check``, ``why`` and ``suggest``. It can never be made, so it means no cache, as an
    unwritable directory does: every command and client answers (C F M)."""
    policy = TREE["policy.toml"].replace("[settings]\n", f'[settings]\ncache-dir = "{LONG}"\n')
    root = _with_stdlib_cache(write(tmp_path, {**TREE, "policy.toml": policy}), mypy_stdlib_cache)
    jobs: list[Callable[[], Run]] = [
        lambda: cli(root, "check", "--no-cache"),
        lambda: cli(root, "why", "zoo.light"),
        lambda: cli(root, "suggest"),
        lambda: cli(root, "cache", "clear"),
        lambda: cli(root, "verify"),
        lambda: flake8(root, "src/zoo/light.py"),
    ]
    if not MYPY_SKIP:
        jobs.append(lambda: mypy(root, "-p", "zoo"))
    results = run_all(*jobs)
    for result in results:
        result.assert_no_crash()
        assert "internal error" not in result.output, result
    no_cache, why, suggest, cleared, verified, linted, *typed = results
    assert why.returncode == 0 and "zoo.heavy" in why.stdout, why
    assert suggest.returncode == 0 and "[light." in suggest.stdout, suggest
    assert cleared.returncode == 0 and cleared.stdout == f"no cache at {LONG}\n", cleared
    assert verified.returncode == 1 and "forbidden module executed: zoo.heavy" in verified.stdout
    assert no_cache.returncode == 1, no_cache
    assert_violation_found(cli(root, "check"), linted, typed[0] if typed else None)
    assert not any(name.startswith("a" * 100) for name in os.listdir(root))
