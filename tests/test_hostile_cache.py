"""Hostile caches: an entry of the right key but the wrong shape, and cache directories that are not
what they seem (issue 32).

Every cache entry is read back by type and range (docs/design.md, "Caches"): a value of another JSON
type where a string, a number, a list or an object belongs, or a number out of range, is a miss,
never an answer. The readers are asked in this process, for every value of an entry of every kind
(the command line's answers, flake8's per-file index, mypy's index, interpreter facts, per-file
facts), and the three cases the attack found go through the clients too: C = ``importpolicy``, F =
``flake8``, M = ``mypy`` (tests/hostile.py's ``adapters``).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import HANG_CATCHER, find_python
from hostile import (
    CACHE,
    CHECK_IPL001,
    Files,
    HEAVY_REASON,
    MYPY_SKIP,
    Run,
    Symlink,
    TREE,
    _CACHE_TREE,
    _adapter_jobs,
    _fill_caches,
    _guarded,
    _with_stdlib_cache,
    adapters,
    assert_policy_error,
    assert_violation_found,
    cli,
    files_under,
    flake8,
    mypy,
    mypy_stdlib_cache,
    needs_mypy,
    policy_text,
    run_all,
    write,
)

from flake8_importpolicy.analysis import parallel
from flake8_importpolicy.answers.jsonfile import MALFORMED, read_json_sealed, write_json_atomic

__all__ = ["mypy_stdlib_cache"]  # the fixture, shared with the other topic files

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


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _not_json(path: Path) -> None:
    path.write_bytes(b"\x00\xffnot json at all {[")


def _older_version(path: Path) -> None:
    """The entry as an older release would have written it: valid JSON, another schema (sealed again,
    so that the schema check is what refuses it)."""
    data = read_json_sealed(path)
    assert isinstance(data, dict)
    body = data["facts"] if isinstance(data.get("facts"), dict) else data
    if "format" in body:
        body["format"] = 0
    if "sites" in body:  # facts: site rows before lazy_use_line existed
        body["sites"] = [row[:-1] for row in body["sites"]]
        body["sites"].append([1, 0, "import", "zoo.extra", 0])
    if "info" in body:  # interpreters: without the path stamps
        del body["paths"]
    write_json_atomic(path, data)


def _deeply_nested(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def _functions_as_list(path: Path) -> None:
    data = read_json_sealed(path)
    assert isinstance(data, dict)
    body = data["facts"] if isinstance(data.get("facts"), dict) else data
    if "functions" in body:
        body["functions"] = []
    write_json_atomic(path, data)


def _corrupt(root: Path, damage: Callable[[Path], None], kinds: Iterable[str] | None = None) -> list[str]:
    damaged = []
    for path in sorted((root / CACHE).rglob("*.json")):
        kind = path.relative_to(root / CACHE).parts[0]
        if kinds is None or kind in kinds:
            damage(path)
            damaged.append(kind)
    return damaged


CLEAN_CACHE_CHECK = "src/zoo/light.py:2:1: IPL001 light module zoo.light imports zoo.heavy at import time"


MYPY_IPL001 = (
    "src/zoo/light.py:2: error: IPL001 light module zoo.light imports zoo.heavy at import time "
    f"({HEAVY_REASON}): zoo.light -> zoo.mid (src/zoo/light.py:2) -> zoo.heavy (src/zoo/mid.py:2)"
    "  [import-policy]"
)


def _adapters(root: Path) -> tuple[Run, Run, Run | None]:
    jobs: list[Callable[[], Run]] = [lambda: cli(root, "check"), lambda: flake8(root, "src/zoo/light.py")]
    if not MYPY_SKIP:
        jobs.append(lambda: mypy(root, "-p", "zoo"))
    results = run_all(*jobs)
    return results[0], results[1], (results[2] if len(results) > 2 else None)


def _assert_same_answer(root: Path, checked: Run, linted: Run, typed: Run | None) -> None:
    for result in (checked, linted, typed):
        if result is not None:
            result.assert_no_crash()
    assert (checked.returncode, checked.stderr) == (1, ""), checked
    assert checked.stdout.startswith(CLEAN_CACHE_CHECK), checked.stdout
    assert linted.returncode == 1 and linted.stderr == "", linted
    assert linted.found("IPL") == {("src/zoo/light.py", 2, "IPL001")}, linted
    if typed is not None:
        assert typed.returncode == 1, typed
        assert typed.stdout.splitlines()[0] == MYPY_IPL001, typed


CACHE_DAMAGE = [
    pytest.param(_truncate, id="truncated"),
    pytest.param(_not_json, id="not-json"),
    pytest.param(_older_version, id="older-version"),
]


@pytest.mark.parametrize("damage", CACHE_DAMAGE)
def test_cache_damage_means_a_fresh_answer(
    tmp_path: Path, mypy_stdlib_cache: Path | None, damage: Callable[[Path], None]
) -> None:
    """Every cache file damaged at once: the CLI, flake8 and mypy (concurrently) recompute, repair the
    cache and give the cold answer."""
    root = _with_stdlib_cache(write(tmp_path, _CACHE_TREE), mypy_stdlib_cache)
    _fill_caches(root)
    damaged = _corrupt(root, damage)
    assert {"facts", "answers", "interpreters", "per-file"} <= set(damaged)
    _assert_same_answer(root, *_adapters(root))
    # and the repaired caches give it again
    _assert_same_answer(root, *_adapters(root))


@pytest.mark.parametrize(
    ("damage", "kinds"),
    [
        pytest.param(
            _deeply_nested,
            ["answers"],
            id="answers-nested-json",
        ),
        pytest.param(
            _deeply_nested,
            ["interpreters"],
            id="interpreters-nested-json",
        ),
        pytest.param(
            _deeply_nested,
            ["facts"],
            id="facts-nested-json",
        ),
        pytest.param(
            _deeply_nested,
            ["per-file"],
            id="per-file-nested-json",
        ),
        pytest.param(
            _deeply_nested,
            ["mypy"],
            id="mypy-nested-json",
            marks=needs_mypy,
        ),
        # 'functions' not an object (another schema): was an AttributeError traceback, fixed in efb24eb's
        # parent commits (functions_from_json checks the type)
        pytest.param(_functions_as_list, ["facts"], id="facts-functions-not-an-object"),
    ],
)
def test_cache_entry_of_another_shape_means_a_fresh_answer(
    tmp_path: Path, mypy_stdlib_cache: Path | None, damage: Callable[[Path], None], kinds: list[str]
) -> None:
    root = _with_stdlib_cache(write(tmp_path, _CACHE_TREE), mypy_stdlib_cache)
    _fill_caches(root)
    if kinds == ["facts"]:  # the whole answers would be used, and the facts never read
        for name in ("answers", "per-file", "mypy"):
            shutil.rmtree(root / CACHE / name, ignore_errors=True)
    assert _corrupt(root, damage, kinds)
    _assert_same_answer(root, *_adapters(root))


def test_cache_answers_with_non_string_also(tmp_path: Path) -> None:
    root = write(tmp_path, _CACHE_TREE)
    _fill_caches(root)
    (entry,) = (root / CACHE / "answers").glob("*.json")
    data: Any = read_json_sealed(entry)
    data["report"]["violations"][0][9] = [None]
    write_json_atomic(entry, data)  # sealed again: the report's own check refuses it
    checked = cli(root, "check")
    checked.assert_no_crash()
    assert checked.returncode == 1 and checked.stdout.startswith(CLEAN_CACHE_CHECK)


def _immutable(path: Path, on: bool) -> bool:
    """``chattr [-R] +i/-i``; False when chattr is unavailable or refused."""
    if shutil.which("chattr") is None:
        return False
    proc = subprocess.run(["chattr", "-R", "+i" if on else "-i", str(path)], capture_output=True,
                          timeout=HANG_CATCHER)
    return proc.returncode == 0


def test_cache_read_only_directory(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """A read-only cache whose entries are stale (the light module changed): every adapter gives the new
    answer and writes nothing. Not root: ``chmod -w``; root: ``chattr +i`` (immutable)."""
    root = _with_stdlib_cache(write(tmp_path, _CACHE_TREE), mypy_stdlib_cache)
    _fill_caches(root)
    cache = root / CACHE
    before = sorted(str(p.relative_to(cache)) for p in cache.rglob("*"))
    if os.geteuid() == 0:
        if not _immutable(cache, True):
            pytest.skip("root, and chattr +i is not available here: a read-only directory cannot be made")
    else:
        for path in [cache, *cache.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
    try:
        (root / "src/zoo/light.py").write_text("import os\nimport zoo.heavy  # now direct\n")
        checked, linted, typed = _adapters(root)
        after = sorted(str(p.relative_to(cache)) for p in cache.rglob("*"))
    finally:
        if os.geteuid() == 0:
            _immutable(cache, False)
        else:
            for path in [cache, *cache.rglob("*")]:
                path.chmod(path.stat().st_mode | 0o200)
    for result in (checked, linted, typed):
        if result is not None:
            result.assert_no_crash()
    assert after == before
    assert checked.returncode == 1
    assert "    src/zoo/light.py:2: zoo.light -> zoo.heavy (import)" in checked.stdout.splitlines(), checked
    assert linted.found("IPL") == {("src/zoo/light.py", 2, "IPL001")}, linted
    if typed is not None:
        assert typed.returncode == 1 and "zoo.light -> zoo.heavy (src/zoo/light.py:2)" in typed.stdout, typed


def test_cache_dir_that_is_a_file(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    policy = policy_text("zoo.light").replace("[settings]\n", '[settings]\ncache-dir = "not-a-dir/sub"\n')
    root = _with_stdlib_cache(
        write(tmp_path, {**_CACHE_TREE, "policy.toml": policy, "not-a-dir": "a file\n"}), mypy_stdlib_cache
    )
    _assert_same_answer(root, *_adapters(root))
    assert (root / "not-a-dir").read_text() == "a file\n"
    cleared = cli(root, "cache", "clear")
    cleared.assert_no_crash()
    assert (cleared.returncode, cleared.stdout) == (0, "no cache at not-a-dir/sub\n")


# -- 1. cache clear deletes only its own files ------------------------------------------------------

OWN_DIR = '; the cache needs a directory of its own, e.g. ".importpolicy_cache"'


NOT_OURS = (
    " is an existing directory that is not importpolicy's cache (it has no CACHEDIR.TAG written by "
    "importpolicy); name a new or empty directory"
)


# Project packages named like the cache's subdirectories: `cache clear` removed them.
PROJECT_PACKAGES: Files = {"src/facts/__init__.py": "X = 1\n", "src/answers/__init__.py": "Y = 2\n"}


@pytest.mark.parametrize(
    ("setting", "extra", "problem"),
    [
        pytest.param('cache-dir = "src"', {}, f'"src" is a source root{OWN_DIR}', id="source-root"),
        pytest.param(
            'cache-dir = "."', {}, f"\".\" is the policy file's directory{OWN_DIR}", id="project-root"
        ),
        pytest.param(
            "", {CACHE: Symlink("src")}, f'".importpolicy_cache" (the default) is a source root{OWN_DIR}',
            id="symlinked-to-a-source-root",
        ),
        pytest.param('cache-dir = "src/facts"', {}, f'"src/facts"{NOT_OURS}', id="a-project-package"),
        pytest.param(
            "", {f"{CACHE}/CACHEDIR.TAG/x": "", f"{CACHE}/facts/ab/{'c' * 62}.json": "{}"},
            f'".importpolicy_cache" (the default){NOT_OURS}', id="cachedir-tag-is-a-directory",
        ),
    ],
)
def test_cache_dir_that_is_not_the_caches_own_is_a_policy_error(
    tmp_path: Path, setting: str, extra: Files, problem: str
) -> None:
    """With ``cache-dir = "src"`` (or ``"."``, or a cache directory linked to one)
    ``check; cache clear`` deleted the project's ``src/facts`` and ``src/answers`` packages. Now every
    client refuses such a cache directory, naming ``settings.cache-dir``, and nothing is deleted."""
    policy = policy_text("zoo.light").replace("[settings]\n", f"[settings]\n{setting}\n")
    root = write(tmp_path, {**TREE, **PROJECT_PACKAGES, "policy.toml": policy, **extra})
    before = files_under(root)
    assert_policy_error(root, problem)
    assert files_under(root) == before


def test_cache_clear_deletes_only_the_files_it_names_and_follows_no_link(tmp_path: Path) -> None:
    """``cache clear`` deletes the entries it wrote (facts, answers, interpreters, flake8's and mypy's
    indexes, entries being written) and nothing else: not a file of the user's in the cache, not what
    a link named like an entry or a shard points to, not a self-looping link; what it kept is named."""
    root = write(tmp_path, {**TREE, **PROJECT_PACKAGES})
    assert_violation_found(*adapters(root))
    cache = root / CACHE
    kinds = {p.relative_to(cache).parts[0] for p in cache.rglob("*.json")}
    assert kinds >= {"facts", "answers", "interpreters", "per-file"} | (set() if MYPY_SKIP else {"mypy"})
    write(cache, {
        "notes.txt": "the user's\n",
        "facts/README": "the user's\n",
        "facts/ab": Symlink("../../src"),  # a shard's name, linked to the project
        f"answers/{'0' * 8}.json": Symlink("../../src/facts/__init__.py"),  # an entry's name
        "answers/loop": Symlink("loop"),
        "mypy/.tmp-abc123.json": "{",  # an entry being written when a run was killed
    })
    before = files_under(root)
    cleared = cli(root, "cache", "clear")
    cleared.assert_no_crash()
    assert cleared.returncode == 0, cleared
    assert cleared.stdout.endswith(
        "; kept what importpolicy did not write: answers/loop, facts/README, facts/ab, notes.txt\n"
    ), cleared
    assert files_under(root) == before
    left = sorted(str(p.relative_to(cache)) for p in cache.rglob("*"))
    assert left == [".gitignore", "CACHEDIR.TAG", "answers", "answers/loop", "facts", "facts/README",
                    "facts/ab", "notes.txt"]
    # the entries are gone: the next check computes again, and gives the same answer
    assert_violation_found(*adapters(root))


@pytest.mark.parametrize("loop", [CACHE, f"{CACHE}/facts"])
def test_self_looping_cache_directory(tmp_path: Path, loop: str) -> None:
    """A cache directory (or one of its subdirectories) that is a link to itself: the check has no
    cache (or no facts cache) and says so nowhere; ``cache clear`` says there is no cache, or keeps
    the link."""
    root = write(tmp_path, TREE)
    if loop != CACHE:  # a cache first, then its facts directory replaced
        assert_violation_found(*adapters(root))
        shutil.rmtree(root / loop)
    write(root, {loop: Symlink(os.path.basename(loop))})
    assert_violation_found(*adapters(root))
    cleared = cli(root, "cache", "clear")
    cleared.assert_no_crash()
    expected = (
        "no cache at .importpolicy_cache\n" if loop == CACHE else
        "kept what importpolicy did not write: facts\n"
    )
    assert cleared.returncode == 0 and cleared.stdout.endswith(expected), cleared
    assert os.readlink(root / loop) == os.path.basename(loop)


def test_cache_whose_tag_became_a_directory_is_not_trusted(tmp_path: Path) -> None:
    """A filled cache whose ``CACHEDIR.TAG`` is then a directory (it crashed ``cache clear``): the
    warm paths do not answer from it, and every client says why, naming ``settings.cache-dir``."""
    root = write(tmp_path, TREE)
    assert_violation_found(*adapters(root))
    (root / CACHE / "CACHEDIR.TAG").unlink()
    (root / CACHE / "CACHEDIR.TAG").mkdir()
    assert_policy_error(root, f'".importpolicy_cache" (the default){NOT_OURS}')
    assert list((root / CACHE / "facts").rglob("*.json"))  # nothing was deleted


# -- 3. corrupted and mixed cache entries never decide an answer ------------------------------------

INDEXES = ("answers", "per-file", "mypy")


def _facts_entries(root: Path) -> list[Path]:
    return sorted((root / CACHE / "facts").rglob("*.json"))


def _without_indexes(root: Path) -> None:
    """Drop the answer indexes, so that the next runs read the facts entries."""
    for name in INDEXES:
        shutil.rmtree(root / CACHE / name, ignore_errors=True)


def _facts_body(data: object) -> dict[str, object]:
    """The facts in an entry's JSON, whatever the entry format."""
    while isinstance(data, dict) and "sites" not in data:
        data = data.get("entry", data.get("facts"))
    assert isinstance(data, dict), data
    return data


def _hand_edit(path: Path, edit: Callable[[dict[str, object]], None]) -> None:
    """Edit an entry as a person would: parse, change, write back (no tool to seal it again)."""
    data = json.loads(path.read_bytes())
    edit(data["entry"] if "crc32" in data else data)  # sealed: the entry inside
    path.write_text(json.dumps(data))


def _empty_sites(data: dict[str, object]) -> None:
    _facts_body(data)["sites"] = []


def test_hand_edited_facts_entries_are_recomputed(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """A facts entry edited to ``"sites": []`` was trusted on its source hash alone
    and hid the violation in check, flake8 and mypy. An entry carries a checksum of its own bytes."""
    root = _with_stdlib_cache(write(tmp_path, TREE), mypy_stdlib_cache)
    _fill_caches(root)
    _without_indexes(root)
    for path in _facts_entries(root):
        _hand_edit(path, _empty_sites)
    assert_violation_found(*adapters(root))


def test_facts_entry_copied_from_another_checkout_is_recomputed(
    tmp_path: Path, mypy_stdlib_cache: Path | None
) -> None:
    """Another checkout's entry (its ``zoo.mid`` imports nothing) copied over this checkout's entry
    of ``zoo.mid``: each entry holds its key, so it is recomputed."""
    other = write(tmp_path / "other", {**TREE, "src/zoo/mid.py": "X = 1\n"})
    _fill_caches(other)
    (clean,) = [  # its zoo.mid
        p for p in _facts_entries(other) if b'"X"' in p.read_bytes() and b"zoo." not in p.read_bytes()
    ]
    root = _with_stdlib_cache(write(tmp_path / "this", TREE), mypy_stdlib_cache)
    _fill_caches(root)
    _without_indexes(root)
    (mid,) = [p for p in _facts_entries(root) if b'"zoo.heavy"' in p.read_bytes()]
    shutil.copyfile(clean, mid)
    assert_violation_found(*adapters(root))


def test_sealed_entry_of_another_engine_is_recomputed(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """An entry whose checksum holds but whose key is another engine's (or another parser's): never
    taken for this one's."""
    from flake8_importpolicy.answers.jsonfile import read_json_sealed, write_json_atomic

    root = _with_stdlib_cache(write(tmp_path, TREE), mypy_stdlib_cache)
    _fill_caches(root)
    _without_indexes(root)
    for path in _facts_entries(root):
        entry = read_json_sealed(path)
        assert isinstance(entry, dict) and isinstance(entry["key"], list)
        entry["key"][1] = "0123456789abcdef"  # another engine fingerprint
        _empty_sites(entry)
        write_json_atomic(path, entry)
    assert_violation_found(*adapters(root))


def _numbers_and_nulls(kind: str, entry: dict[str, object]) -> None:
    """Numbers too large for an ``int`` (``Infinity``) and ``null`` where an object belongs, in an
    entry of each kind."""
    inf = float("inf")
    if kind == "facts":
        sites = _facts_body(entry)["sites"]
        assert isinstance(sites, list)
        for row in sites:
            row[0] = inf
    elif kind == "answers":
        entry["report"]["violations"][0][6] = inf  # type: ignore[index]
    elif kind == "per-file":
        entry["findings"][0][1] = inf  # type: ignore[index]
    elif kind == "mypy":
        entry["findings"] = None
    elif kind == "interpreters":
        entry["info"]["version"] = [inf, inf]  # type: ignore[index]


@pytest.mark.parametrize("sealed_again", [False, True], ids=["hand-edited-1e400", "sealed-infinity-and-null"])
def test_cache_numbers_too_large_and_nulls_are_a_miss(
    tmp_path: Path, mypy_stdlib_cache: Path | None, sealed_again: bool
) -> None:
    """``1e400`` and ``Infinity`` in a cache entry were an OverflowError in the CLI, flake8 and mypy;
    ``"findings": null`` in mypy's index an AttributeError inside mypy. Hand-edited, the checksum
    refuses them; sealed again (as a forger would), reading them is a miss all the same."""
    root = _with_stdlib_cache(write(tmp_path, TREE), mypy_stdlib_cache)
    _fill_caches(root)
    for path in sorted((root / CACHE).rglob("*.json")):
        kind = path.relative_to(root / CACHE).parts[0]
        if sealed_again:
            from flake8_importpolicy.answers.jsonfile import read_json_sealed, write_json_atomic

            entry = read_json_sealed(path)
            assert isinstance(entry, dict)
            _numbers_and_nulls(kind, entry)
            write_json_atomic(path, entry)
        elif kind == "facts":
            text = path.read_text()  # 1e400 as written by hand (json.dumps writes Infinity)
            for line in ("1", "2"):
                text = text.replace(f'"sites":[[{line},', '"sites":[[1e400,')
            path.write_text(text)
        else:
            _hand_edit(path, lambda entry, kind=kind: _numbers_and_nulls(kind, entry))
    assert_violation_found(*adapters(root))
    assert_violation_found(*adapters(root))  # and from the repaired caches


def test_facts_key_includes_the_parsing_interpreter(tmp_path: Path) -> None:
    """With ``target-versions = ["3.11"]``, Python 3.12 parses ``type X = int`` and 3.11 cannot
    (IPL005): whichever run filled the facts cache first decided the other's answer."""
    other = find_python("3.12" if sys.version_info[:2] != (3, 12) else "3.11")
    if other is None:
        pytest.skip("needs a second Python (3.12, or 3.11 when running on 3.12)")
    policy = policy_text("zoo.light").replace("[settings]\n", '[settings]\ntarget-versions = ["3.11"]\n')
    root = write(tmp_path, {
        **TREE, "policy.toml": policy, "src/zoo/mid.py": "X = 1\ntype Alias = int\nimport zoo.heavy\n",
    })
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}

    def check(python: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([python, "-m", "flake8_importpolicy", "check"], cwd=root, env=env,
                              capture_output=True, text=True, timeout=HANG_CATCHER)

    first, second = (other, sys.executable) if sys.version_info < (3, 12) else (sys.executable, other)
    newer, older = check(first), check(second)  # 3.12 fills the cache, then 3.11 runs
    assert (newer.returncode, newer.stderr) == (1, ""), newer
    assert newer.stdout.startswith(CHECK_IPL001) and "IPL005" not in newer.stdout, newer.stdout
    assert (older.returncode, older.stderr) == (1, ""), older
    assert "src/zoo/mid.py:2: IPL005 cannot analyse zoo.mid (line 2: invalid syntax" in older.stdout, older
    assert "IPL001" not in older.stdout, older.stdout


# -- 2. an edit while a check runs is never cached; workers do not re-list the cache ----------------


@pytest.mark.parametrize("client", ["check", "flake8", "mypy"])
def test_edit_while_checking_is_never_cached(
    tmp_path: Path, mypy_stdlib_cache: Path | None, monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    """``zoo.mid`` gains ``import zoo.heavy`` right after the engine read it. The
    answer of that run (clean) must not be kept: the whole answer used to be stored with the
    ``stat`` taken after the run next to the digest of the bytes read before it, so every later
    ``check`` (and the pre-commit hook) said OK while ``--no-cache`` and flake8 reported the violation.
    The edited file's mtime is an hour old, so that it is not compared by content as a racy file."""
    if client == "mypy" and MYPY_SKIP:
        pytest.skip(MYPY_SKIP)
    from flake8_importpolicy.analysis import sources
    from flake8_importpolicy.answers.by_module import find_module_findings
    from flake8_importpolicy.answers.per_file import PerFileChecker
    from flake8_importpolicy.answers.whole import check_policy_cached
    from flake8_importpolicy.config.load import load_policy

    root = _with_stdlib_cache(write(tmp_path, {**TREE, "src/zoo/mid.py": "X = 1\n"}), mypy_stdlib_cache)
    mid = root / "src/zoo/mid.py"
    real_read = sources.read_source_stamped
    edits = []

    def read_then_edit(path: Path) -> object:
        found = real_read(path)
        if path == mid and not edits:
            mid.write_text("X = 1\nimport zoo.heavy\n")
            past = mid.stat().st_mtime - 3600
            os.utime(mid, (past, past))
            edits.append(path)
        return found

    monkeypatch.setattr(sources, "read_source_stamped", read_then_edit)
    if client == "check":
        assert check_policy_cached(load_policy(root / "policy.toml")).violations == ()
    elif client == "flake8":
        assert PerFileChecker().find_findings(root / "src/zoo/light.py") == ()
    else:
        assert find_module_findings(str(root / "policy.toml")).findings == {}
    monkeypatch.undo()
    assert edits == [mid]  # the clean answer came from the bytes read before the edit
    index = {"check": "answers", "flake8": "per-file", "mypy": "mypy"}[client]
    stored = list((root / CACHE / index).glob("*.json"))
    assert_violation_found(*adapters(root))
    assert not stored  # the clean answer was not kept


@pytest.mark.skipif(sys.platform != "linux", reason="worker processes are forked on Linux only")
def test_worker_processes_never_prune_the_facts_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parallel cold check on 10k files took 51 s against 7.9 s serial, because the facts
    cache sent with each file to a worker listed every entry to prune it. Only the process that owns
    the cache prunes, once (benchmarks/parallel_cold.py measures the speed)."""
    from test_parallel import make_project

    from flake8_importpolicy.analysis.engine import PolicyEngine
    from flake8_importpolicy.answers import facts_cache
    from flake8_importpolicy.config.load import load_policy
    from flake8_importpolicy.model.facts import ModuleFacts, Target

    monkeypatch.setattr(parallel, "MIN_MISSES", 1)  # workers from the first file, whatever the load
    monkeypatch.setattr(parallel, "_MIN_PACE", 0.0)
    monkeypatch.setattr(parallel, "_cpus_idle", lambda jobs: True)
    monkeypatch.setattr(parallel, "_TRIAL", 10**9)  # and to the last, whatever they cost
    log, real_prune = tmp_path / "prunes", facts_cache.prune_cache

    def logged_prune(directory: Path, *args: int) -> int:
        with open(log, "a") as handle:
            handle.write(f"{os.getpid()}\n")
        return real_prune(directory, *args)

    monkeypatch.setattr(facts_cache, "prune_cache", logged_prune)
    # a copy sent to a worker before the owner wrote anything (its own first file a cache hit, say)
    target = Target(versions=((3, 11),), platform="linux")
    copy = pickle.loads(pickle.dumps(facts_cache.DiskFactsCache(tmp_path / "unit")))
    copy.put("ab" * 32, target, ModuleFacts())
    assert not log.exists() and copy.get("ab" * 32, target) == ModuleFacts()
    owner = facts_cache.DiskFactsCache(tmp_path / "unit")
    for n in range(3):
        owner.put(f"{n:064x}", target, ModuleFacts())
    assert log.read_text() == f"{os.getpid()}\n"
    log.unlink()
    # a cold check with two workers
    root = make_project(tmp_path / "p")
    cache = facts_cache.DiskFactsCache(tmp_path / "cache")
    with PolicyEngine(load_policy(root / "policy.toml"), facts_cache=cache, jobs=2) as engine:
        engine.check()
        assert engine._pool.active
    assert log.read_text() == f"{os.getpid()}\n"
    assert len(list((tmp_path / "cache" / "facts").rglob("*.json"))) >= 60  # the workers wrote too


_MODULE_FACTS = parallel._module_facts


def _slow_module_facts(*args: Any) -> Any:
    """A worker on a busy machine (module level: a worker is sent it by name)."""
    time.sleep(0.05)
    return _MODULE_FACTS(*args)


@pytest.mark.skipif(sys.platform != "linux", reason="worker processes are forked on Linux only")
def test_workers_that_cost_more_than_they_save_are_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With workers, never slower than ``--jobs 1``: workers slower than the engine (a busy machine,
    simulated by a sleep in each worker) are stopped once waiting for them has cost the engine more
    than they saved, and it goes on alone; the report does not change."""
    from test_parallel import make_project

    from flake8_importpolicy.analysis.engine import PolicyEngine
    from flake8_importpolicy.config.load import load_policy

    root = make_project(tmp_path / "p")
    policy = load_policy(root / "policy.toml")
    with PolicyEngine(policy, jobs=1) as engine:
        serial = engine.check()
    monkeypatch.setattr(parallel, "MIN_MISSES", 1)
    monkeypatch.setattr(parallel, "_MIN_PACE", 0.0)
    monkeypatch.setattr(parallel, "_cpus_idle", lambda jobs: True)
    monkeypatch.setattr(parallel, "_TRIAL", 5)
    monkeypatch.setattr(parallel, "_module_facts", _slow_module_facts)
    with PolicyEngine(policy, jobs=2) as engine:
        assert engine.check() == serial
        pool = engine._pool
        assert (pool.active, pool.jobs) == (False, 1)
        assert pool._own_files > 0 and pool._cost > (pool._delivered + 5) * (
            pool._own_seconds / pool._own_files
        )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_cache_entries_that_are_fifos(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """A FIFO at a cache entry's path blocked every client for ever: each is a miss."""
    root = _with_stdlib_cache(write(tmp_path, TREE), mypy_stdlib_cache)
    _fill_caches(root)
    for path in sorted((root / CACHE).rglob("*.json")):
        path.unlink()
        os.mkfifo(path)
    assert_violation_found(*_guarded(*_adapter_jobs(root)))  # type: ignore[misc]
