"""Hostile inputs against the cache, the exit status and the adapters' limits, beside the corpus of
tests/test_robustness.py, whose helpers they use.

56 hostile inputs in 39 tests. The adapters: C = ``importpolicy`` (``check`` unless another command is
named), F = ``flake8`` (default selection, IPL included), M = ``mypy`` with
``plugins = flake8_importpolicy.mypy`` (its own ``--cache-dir``; skipped with the reason when
``flake8_importpolicy.mypy`` cannot be imported), V =
``importpolicy verify``, E = the engine in this process. "No crash" is what tests/test_robustness.py
means by it (no traceback, no "This is a bug", the expected exit status); a hang guard is the suite's
hang catcher (``helpers.HANG_CATCHER``): it catches a run that never ends, and the speed of the inputs
that were slow is a matter for ``benchmarks/``, not a bound in a test.

- The cache directory, C (``check`` and ``cache clear``) F M: ``cache-dir`` set to a source
  root, to the policy's directory, linked to a source root, to a project package, with a
  ``CACHEDIR.TAG`` that is a directory, and a filled cache whose tag became a directory (6): one policy
  error naming ``settings.cache-dir``, nothing deleted. ``cache clear`` beside a file of the user's, a
  file in ``facts/``, a link named like a shard, a link named like an entry, a self-looping link and an
  entry left half-written (6, C); a cache directory and a ``facts`` directory linked to themselves (2,
  C F M).
- Stale answers: a file edited while each client's slow path reads it (3: C F M); pickled
  facts caches that would prune the cache, and workers slower than the engine (2, E).
- Corrupted and mixed entries, C F M: facts entries edited to ``"sites": []``, another
  checkout's entry, a sealed entry of another engine, ``1e400`` written by hand into every kind of
  entry, ``Infinity`` and ``null`` sealed again (5); facts of another parsing interpreter (1, C with a
  second Python, skipped without one).
- Exit status: an internal error in every client (1: C with and without ``IMPORTPOLICY_DEBUG``, F, M);
  ``--help`` (C).
- Crashes: a deleted working directory (4 runs: C), ``-j 99999999999999999999`` (2: C ``check`` and
  ``why``), ``after-import`` nested 3,000 and 10,000 deep (2: C F M), fullwidth keys (1: C F M),
  ``target-versions``/``--target-version`` 2.7 (2: C), a link to ``/dev/null``, a FIFO, a character
  device and a symlink loop named like a module (4: C F), a FIFO, ``/dev/zero`` and a file over 10 MiB
  as the policy (3: C, the FIFO also F), a FIFO at every cache entry (1: C F M), a source over 10 MiB
  (1: C).
- Hangs and blow-ups, hang guards, C F: ``**`` patterns over a 200-level package, a package 600 levels
  deep, 20,000 ``[light]`` keys, ``"big.**"`` over 10,000 modules (4); a 300-module import cycle with
  ``cyc.*`` (1: C text and JSON).
- Wrong answers: a light module linked to outside the tree (1: C F M); a first-party ``.pyc``-only
  module (1: C ``check``, ``why``, V); a module that rewrites the verifier's events and exits early,
  and one that forks a process that outlives it (2: V).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import HANG_CATCHER
from test_robustness import (
    _CACHE_TREE,
    CACHE,
    HEAVY_REASON,
    MYPY_SKIP,
    Files,
    Run,
    Symlink,
    _fill_caches,
    _with_stdlib_cache,
    assert_flake8_ipl900,
    make_mypy_stdlib_cache,
    cli,
    flake8,
    mypy,
    policy_text,
    run_all,
    write,
)

from flake8_importpolicy import __version__
from flake8_importpolicy.analysis import parallel

MYPY_INI = "[mypy]\nplugins = flake8_importpolicy.mypy\nmypy_path = src\n"

# light -> mid -> heavy: one violation, found through a module the light module imports (the mypy.ini
# is the one of mypy_stdlib_cache, whose standard library cache each tree gets a copy of)
TREE: Files = _CACHE_TREE
assert TREE["src/zoo/mid.py"] == "X = 1\nimport zoo.heavy\n" and TREE["mypy.ini"] == MYPY_INI
CHECK_IPL001 = "src/zoo/light.py:2:1: IPL001 light module zoo.light imports zoo.heavy at import time"
MYPY_IPL001 = (
    "src/zoo/light.py:2: error: IPL001 light module zoo.light imports zoo.heavy at import time "
    f"({HEAVY_REASON}): zoo.light -> zoo.mid (src/zoo/light.py:2) -> zoo.heavy (src/zoo/mid.py:2)"
    "  [import-policy]"
)


@pytest.fixture(scope="module")
def mypy_stdlib_cache(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A mypy cache of the standard library for :data:`TREE`'s mypy.ini (copied into each tree)."""
    return make_mypy_stdlib_cache(tmp_path_factory)


def adapters(root: Path, *, lint: str = "src/zoo/light.py") -> tuple[Run, Run, Run | None]:
    """``importpolicy check``, ``flake8`` and (when it can run) ``mypy -p zoo``, side by side."""
    jobs: list[Callable[[], Run]] = [lambda: cli(root, "check"), lambda: flake8(root, lint)]
    if not MYPY_SKIP:
        jobs.append(lambda: mypy(root, "-p", "zoo"))
    results = run_all(*jobs)
    return results[0], results[1], (results[2] if len(results) > 2 else None)


def assert_violation_found(checked: Run, linted: Run, typed: Run | None) -> None:
    """Every adapter reports the one violation of :data:`TREE`, without a crash."""
    for result in (checked, linted, typed):
        if result is not None:
            result.assert_no_crash()
    assert (checked.returncode, checked.stderr) == (1, ""), checked
    assert checked.stdout.startswith(CHECK_IPL001), checked
    assert linted.returncode == 1 and linted.found("IPL") == {("src/zoo/light.py", 2, "IPL001")}, linted
    if typed is not None:
        assert typed.returncode == 1 and typed.stdout.splitlines()[0] == MYPY_IPL001, typed


def assert_policy_error(root: Path, problem: str, *, key: str = "settings.cache-dir") -> None:
    """``problem`` (after ``key: ``) is the one policy error of ``check``, ``cache clear``, flake8 and
    mypy: exit 2 (flake8: IPL900 at line 1 of the checked file, 1), no crash."""
    checked, linted, typed = adapters(root)
    cleared = cli(root, "cache", "clear")
    message = f"policy.toml is not valid (1 problem):\n  {key}: {problem}"
    for result in (checked, cleared):
        result.assert_no_crash()
        assert (result.returncode, result.stdout, result.stderr) == (2, "", f"importpolicy: {message}\n")
    linted.assert_no_crash()
    assert_flake8_ipl900(linted, message)
    if typed is not None:
        typed.assert_no_crash()
        assert typed.returncode == 2, typed
        shown = re.escape(f"{key}: {problem}")
        assert re.fullmatch(rf"policy\.toml(:\d+)?: error: {shown}\n", typed.stderr), typed


def files_under(root: Path) -> dict[str, bytes | str]:
    """Every file and link under ``root`` except the cache's and mypy's: ``{path: bytes or link}``."""
    found: dict[str, bytes | str] = {}
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = [d for d in subdirectories if d not in (CACHE, ".mypy_cache")]
        for name in [*names, *(d for d in subdirectories if os.path.islink(os.path.join(directory, d)))]:
            path = os.path.join(directory, name)
            shown = os.path.relpath(path, root)
            found[shown] = os.readlink(path) if os.path.islink(path) else Path(path).read_bytes()
    return found


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


def _other_python(version: str) -> str | None:
    """An installed ``python<version>`` (on PATH, else kept by pyenv), or None."""
    name = f"python{version}"
    found = shutil.which(name)
    if found is None or subprocess.run(
        [found, "-c", ""], capture_output=True, timeout=HANG_CATCHER
    ).returncode != 0:
        kept = sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/{name}"))
        found = str(kept[-1]) if kept else None
    return found


def test_facts_key_includes_the_parsing_interpreter(tmp_path: Path) -> None:
    """With ``target-versions = ["3.11"]``, Python 3.12 parses ``type X = int`` and 3.11 cannot
    (IPL005): whichever run filled the facts cache first decided the other's answer."""
    other = _other_python("3.12" if sys.version_info[:2] != (3, 12) else "3.11")
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


# -- exit status: an internal error is 3, one line, no traceback -----------------------------------

BUG_LINE = (
    f"importpolicy: internal error (importpolicy {__version__}): RuntimeError: boom. This is a bug in "
    "importpolicy, not in your code or policy; please report it to the flake8-importpolicy maintainers "
    "with the command you ran and the traceback that IMPORTPOLICY_DEBUG=1 prints.\n"
)
# a bug where every client meets it: the engine's slow path raises
_INJECT = (
    "import sys\n"
    "import flake8_importpolicy.answers.compute as compute\n"
    "import flake8_importpolicy.answers.by_module as by_module\n"
    "def boom(*args, **kwargs):\n"
    "    raise RuntimeError('boom')\n"
    "compute.run_engine = boom\n"
    "by_module.start_index_build = lambda policy: None  # the helper process would not have the bug\n"
)


def _with_bug(root: Path, tool: str, *args: str, debug: bool = False) -> Run:
    entry = {
        "importpolicy": "from flake8_importpolicy.cli import run\nsys.argv[0] = 'importpolicy'\nrun()\n",
        "flake8": "from flake8.main.cli import main\nsys.exit(main())\n",
        "mypy": "from mypy.__main__ import console_entry\nconsole_entry()\n",
    }[tool]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MYPY", "IMPORTPOLICY"))}
    if debug:
        env["IMPORTPOLICY_DEBUG"] = "1"
    proc = subprocess.run([sys.executable, "-c", _INJECT + entry, *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=HANG_CATCHER)
    return Run(tuple(args), proc.returncode, proc.stdout, proc.stderr)


def test_internal_error_exits_3_with_one_line(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """A traceback exited 1, the status of findings, so CI could not tell a crash from a
    report. The command line exits 3 with one line saying it is a bug and how to report it; the
    traceback only with ``IMPORTPOLICY_DEBUG=1``. flake8 and mypy keep their conventions (flake8: an
    IPL900 at line 1 saying it is a bug, exit 1; mypy's one error line, exit 2), without a traceback
    from us."""
    root = _with_stdlib_cache(write(tmp_path, TREE), mypy_stdlib_cache)
    jobs: list[Callable[[], Run]] = [
        lambda: _with_bug(root, "importpolicy", "check", "--no-cache"),
        lambda: _with_bug(root, "importpolicy", "check", "--no-cache", debug=True),
        lambda: _with_bug(root, "flake8", "--no-show-source", "src/zoo/light.py"),
    ]
    if not MYPY_SKIP:
        jobs.append(lambda: _with_bug(root, "mypy", "--cache-dir", str(root / ".mypy_cache"), "-p", "zoo"))
    checked, debugged, linted, *typed = run_all(*jobs)
    assert (checked.returncode, checked.stdout, checked.stderr) == (3, "", BUG_LINE), checked
    assert debugged.returncode == 3 and debugged.stderr.startswith("Traceback (most recent call last):")
    assert debugged.stderr.endswith("RuntimeError: boom\n" + BUG_LINE), debugged
    assert linted.returncode == 1 and "Traceback" not in linted.output, linted
    assert linted.stdout.startswith(
        "src/zoo/light.py:1:1: IPL900 src/zoo/light.py: flake8-importpolicy failed: RuntimeError: boom; "
        "this is a bug"), linted
    for result in typed:
        assert (result.returncode, result.stdout) == (
            2, "Found 1 error in 1 file (errors prevented further checking)\n"), result
        assert result.stderr == (
            "policy.toml: error: flake8-importpolicy failed: RuntimeError: boom; this is a bug\n"), result


def test_help_documents_every_exit_status() -> None:
    from flake8_importpolicy.cli import EXIT_STATUS

    for status in ("0 clean", "1 findings", "2 a usage, policy, baseline or interpreter error",
                   "3 an internal error (a bug in importpolicy"):
        assert status in EXIT_STATUS
    for args in (["--help"], ["check", "--help"]):
        shown = " ".join(cli(Path.cwd(), *args).stdout.split())
        assert " ".join(EXIT_STATUS.split()) in shown, shown


# -- crashes turned into clear messages ---------------------------------------------------------------


def _in_deleted_directory(root: Path, *args: str) -> Run:
    """``importpolicy ARGS`` run from a working directory that was deleted under it."""
    gone = tempfile.mkdtemp(dir=root)  # one for each run: they run side by side
    script = f'cd "{gone}" && rmdir "{gone}" && exec "$@"'
    proc = subprocess.run(["sh", "-c", script, "sh", sys.executable, "-m", "flake8_importpolicy", *args],
                          capture_output=True, text=True, timeout=HANG_CATCHER)
    return Run(args, proc.returncode, proc.stdout, proc.stderr)


def test_deleted_working_directory(tmp_path: Path) -> None:
    """``Path.cwd()`` raised FileNotFoundError, even with an absolute ``--policy``."""
    root = write(tmp_path, TREE)
    policy = str(root / "policy.toml")
    checked, warm, cleared, lost = run_all(
        lambda: _in_deleted_directory(root, "check", "--policy", policy, "--no-cache"),
        lambda: _in_deleted_directory(root, "check", "--policy", policy),
        lambda: _in_deleted_directory(root, "cache", "clear", "--policy", policy),
        lambda: _in_deleted_directory(root, "check"),
    )
    for result in (checked, warm, cleared, lost):
        result.assert_no_crash()
    assert checked.returncode == 1 and checked.stdout.startswith(CHECK_IPL001), checked
    assert warm.returncode == 1 and warm.stdout.startswith(CHECK_IPL001), warm
    assert cleared.returncode == 0, cleared
    assert (lost.returncode, lost.stdout, lost.stderr) == (
        2, "", "importpolicy: error: the working directory no longer exists (was it deleted?); change to "
        "the project's directory, or pass --policy with an absolute path\n"), lost


def test_jobs_are_clamped_to_the_cpus(tmp_path: Path) -> None:
    """``-j 99999999999999999999`` was an OverflowError: ``--jobs`` is clamped to the CPUs."""
    import argparse

    from flake8_importpolicy import cli as command_line
    from flake8_importpolicy.analysis.parallel import default_jobs

    for asked, used in ((10**20, default_jobs()), (1, 1), (None, default_jobs())):
        assert command_line._jobs(argparse.Namespace(jobs=asked)) == used
    root = write(tmp_path, TREE)
    for command in (["check", "--no-cache"], ["why", "zoo.light"]):
        result = cli(root, *command, "-j", "99999999999999999999")
        result.assert_no_crash()
        assert result.returncode == (1 if command[0] == "check" else 0), result


def test_deeply_nested_after_import_expression(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """``"-" * 10000 + "1"`` was a MemoryError in the CLI and flake8 and "Error constructing plugin
    instance" in mypy; at depth 3000 the message named the wrong key (the file's, not the item's)."""
    for depth in (3_000, 10_000):
        policy = policy_text("zoo.light") + f'after-import = ["{"-" * depth}1"]\n'
        root = _with_stdlib_cache(write(tmp_path / str(depth), {**TREE, "policy.toml": policy}),
                                  mypy_stdlib_cache)
        checked, linted, typed = adapters(root)
        key = 'light."zoo.light".after-import[0]'
        problem = f"{key}: invalid Python expression: nested too deeply to parse"
        message = f"policy.toml is not valid (1 problem):\n  {problem}"
        for result in (checked, linted, typed):
            if result is not None:
                result.assert_no_crash()
        assert (checked.returncode, checked.stderr) == (2, f"importpolicy: {message}\n"), checked
        assert_flake8_ipl900(linted, message)
        if typed is not None:
            assert typed.returncode == 2, typed
            assert re.fullmatch(rf"policy\.toml(:\d+)?: error: {re.escape(problem)}\n", typed.stderr), typed


def test_fullwidth_keys_are_nfkc_normalised(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """``"ｚｏｏ.ｈｅａｖｙ"`` was accepted but never matched: keys are NFKC-normalised, as CPython
    normalises identifiers (``import ｚｏｏ.ｈｅａｖｙ`` imports ``zoo.heavy``)."""
    policy = (
        '[settings]\nsource-roots = ["src"]\n[heavy]\n"ｚｏｏ.ｈｅａｖｙ" = "slow to import"\n'
        '[light."ｚｏｏ.ｌｉｇｈｔ"]\nreason = "must stay light"\n'
    )
    root = _with_stdlib_cache(write(tmp_path, {**TREE, "policy.toml": policy}), mypy_stdlib_cache)
    assert_violation_found(*adapters(root))


def test_target_version_has_one_rule(tmp_path: Path) -> None:
    """``--target-version 2.7`` was accepted on the command line and rejected in the policy."""
    root = write(tmp_path, {
        **TREE, "policy.toml": policy_text("zoo.light").replace(
            "[settings]\n", '[settings]\ntarget-versions = ["2.7"]\n')})
    in_policy = cli(root, "check")
    in_option = cli(root, "check", "--policy", str(write(tmp_path / "ok", TREE) / "policy.toml"),
                    "--target-version", "2.7")
    problem = '"2.7" is not supported; only Python 3 versions ("3.Y") can be targeted'
    assert (in_policy.returncode, in_policy.stderr) == (
        2, f"importpolicy: policy.toml is not valid (1 problem):\n  settings.target-versions[0]: {problem}\n")
    assert in_option.returncode == 2, in_option
    assert in_option.stderr.endswith(f"importpolicy check: error: argument --target-version: {problem}\n")


# -- hangs and blow-ups: a hang guard each (the suite's hang catcher; the speed is in benchmarks/) ---


def _guarded(*jobs: Callable[[], Run]) -> list[Run]:
    try:
        return run_all(*jobs)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hangs: {exc}")


def _deep_tree(root: Path, depth: int, policy: str) -> tuple[Path, str]:
    """A package ``p.p.p...`` ``depth`` levels deep whose deepest module ``m`` imports zoo.heavy."""
    files: Files = {**TREE, "policy.toml": policy}
    package = "src/" + "/".join(["p"] * depth)
    for level in range(1, depth + 1):
        files["src/" + "/".join(["p"] * level) + "/__init__.py"] = ""
    files[f"{package}/m.py"] = "import zoo.heavy\n"
    return write(root, files), f"{package}/m.py"


def test_double_star_patterns_do_not_backtrack(tmp_path: Path) -> None:
    """``"**.**.**.**.**.**.torch"`` took 12.8 s over a 60-level tree and more than ten minutes over
    200 levels (a backtracking regular expression); segments are matched in linear time."""
    policy = (
        '[settings]\nsource-roots = ["src"]\n[heavy]\n"zoo.heavy" = "slow"\n'
        '"**.**.**.**.**.**.torch" = "slower"\n[light."p.**"]\nreason = "r"\n'
    )
    root, deepest = _deep_tree(tmp_path, 200, policy)
    checked, linted = _guarded(  # a second each; more than ten minutes before
        lambda: cli(root, "check", "--no-cache", "--format", "json"),
        lambda: flake8(root, "--select", "IPL", deepest),
    )
    for result in (checked, linted):
        result.assert_no_crash()
        assert result.returncode == 1, result
    (violation,) = json.loads(checked.stdout)["violations"]
    assert (violation["path"], violation["heavy"]) == (deepest, "zoo.heavy")
    assert linted.found("IPL") == {(deepest, 1, "IPL001")}, linted


def test_package_600_levels_deep(tmp_path: Path) -> None:
    """A package at depth >= 500 was a RecursionError in ``resolve_module``."""
    policy = policy_text("zoo.light").replace('"zoo.light"', '"' + ".".join(["p"] * 600) + '.m"')
    root, deepest = _deep_tree(tmp_path, 600, policy)
    checked, linted = _guarded(
        lambda: cli(root, "check", "--no-cache"),
        lambda: flake8(root, "--select", "IPL", deepest),
    )
    for result in (checked, linted):
        result.assert_no_crash()
        assert result.returncode == 1, result
    assert checked.stdout.startswith(f"{deepest}:1:1: IPL001 light module p.p.p"), checked.stdout[:300]
    assert linted.found("IPL") == {(deepest, 1, "IPL001")}, linted


def test_twenty_thousand_light_keys(tmp_path: Path) -> None:
    """20,000 ``[light]`` keys took 3 min 44 s: the policy was read again for each IPL003's line."""
    keys = "".join(f'[light."zoo.gone{n:05d}"]\nreason = "r"\n' for n in range(20_000))
    policy = policy_text("zoo.light") + keys
    last = policy.splitlines().index('[light."zoo.gone19999"]') + 1
    root = write(tmp_path, {**TREE, "policy.toml": policy})
    checked, linted = _guarded(  # about a second each; a minute or more before
        lambda: cli(root, "check", "--no-cache"),
        lambda: flake8(root, "src/zoo/light.py"),
    )
    for result in (checked, linted):
        result.assert_no_crash()
        assert result.returncode == 1, result
    lines = checked.stdout.splitlines()
    assert f"policy.toml:{last}: IPL003 light pattern 'zoo.gone19999' matches no module" in lines
    assert lines[-1] == "Found 1 violation in 1 light module, 20000 problems."
    assert linted.found("IPL") == {("src/zoo/light.py", 2, "IPL001")}, linted


def test_double_star_light_pattern_over_ten_thousand_modules(tmp_path: Path) -> None:
    """``"big.**"`` over 10,000 modules took more than 580 s (2,000: 42.7 s): each light module
    walked the whole package again through its parent, whose ``__init__`` imports every module."""
    files: Files = {
        "policy.toml": '[settings]\nsource-roots = ["src"]\n[heavy]\n"zoo.heavy" = "slow"\n'
        '[light."big.**"]\nreason = "r"\n',
        "src/zoo/__init__.py": "",
        "src/zoo/heavy.py": "",
        "src/big/__init__.py": "".join(f"from . import m{n:05d}\n" for n in range(10_000)),
        **{f"src/big/m{n:05d}.py": "" for n in range(9_999)},
        "src/big/m09999.py": "import zoo.heavy\n",
    }
    root = write(tmp_path, files)
    checked, linted = _guarded(  # a few seconds each; three minutes or more before
        lambda: cli(root, "check", "--no-cache", "--format", "json"),
        lambda: flake8(root, "--select", "IPL", "src/big/m00042.py"),
    )
    for result in (checked, linted):
        result.assert_no_crash()
        assert result.returncode == 1, result
    violations = json.loads(checked.stdout)["violations"]
    assert len(violations) == 10_000  # every module through big; m09999 itself directly
    (one,) = [v for v in violations if v["light"] == "big.m00042"]
    assert [hop["imported"] for hop in one["chain"]] == ["big", "big.m09999", "zoo.heavy"]
    assert linted.found("IPL") == {("src/big/m00042.py", 1, "IPL001")}, linted


def test_long_chains_are_summarised_in_text_only(tmp_path: Path) -> None:
    """A 1,000-module import cycle with a ``cyc.*`` light pattern printed 502,000 lines: the text
    report shows at most 20 lines per light module (the rest summarised); JSON keeps everything."""
    count = 300
    files: Files = {
        "policy.toml": '[settings]\nsource-roots = ["src"]\n[heavy]\n"zoo.heavy" = "slow"\n'
        '[light."cyc.*"]\nreason = "r"\n',
        "src/zoo/__init__.py": "",
        "src/zoo/heavy.py": "",
        "src/cyc/__init__.py": "",
        **{f"src/cyc/c{n:03d}.py": f"import cyc.c{(n + 1) % count:03d}\n" for n in range(count)},
    }
    files[f"src/cyc/c{count - 1:03d}.py"] = "import cyc.c000\nimport zoo.heavy\n"
    root = write(tmp_path, files)
    text, report = _guarded(
        lambda: cli(root, "check", "--no-cache"),
        lambda: cli(root, "check", "--no-cache", "--format", "json"),
    )
    per_light: dict[str, int] = {}
    light = ""
    for line in text.stdout.splitlines()[:-1]:
        if " IPL001 light module " in line:
            light = line.split(" IPL001 light module ")[1].split()[0]
        if line:
            per_light[light] = per_light.get(light, 0) + 1
    assert len(per_light) == count and max(per_light.values()) == 20, per_light
    assert "    ... 280 more hops (--format json lists them all)" in text.stdout.splitlines()
    chains = {v["light"]: len(v["chain"]) for v in json.loads(report.stdout)["violations"]}
    assert chains["cyc.c000"] == count and sum(chains.values()) == count * (count + 1) // 2


# -- wrong answers ------------------------------------------------------------------------------------


def test_light_module_linked_to_outside_the_tree(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """flake8 missed a light module whose file is a symbolic link to outside the tree (its real path
    is under no source root); the CLI and mypy reported it."""
    outside = write(tmp_path / "outside", {"light.py": TREE["src/zoo/light.py"]})
    files = {name: text for name, text in TREE.items() if name != "src/zoo/light.py"}
    root = write(tmp_path / "project", {**files, "src/zoo/light.py": Symlink(str(outside / "light.py"))})
    assert_violation_found(*adapters(_with_stdlib_cache(root, mypy_stdlib_cache)))


_LIAR = """\
import os
exec("import zoo.heavy")  # out of sight of the static check
# as a clean import would have left the verifier's events file, if there is one
for fd in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        continue
    if target.endswith("events.jsonl"):
        with open(target, "w") as events:
            events.write('{"e":"start","version":[3,11,7],"executable":"python"}\\n'
                         '{"e":"imported","ok":true}\\n{"e":"unrecorded","modules":[]}\\n{"e":"finish"}\\n')
os._exit(0)
"""
_FORKER = """\
import os, sys, time
pid = os.fork()
if pid == 0:
    time.sleep(300)
    os._exit(0)
with open(sys.modules[__name__].__file__ + ".child", "w") as out:
    out.write(str(pid))
"""


def _alive(pid: int, wait: float = 60.0) -> bool:
    """Whether ``pid`` still runs ``wait`` seconds from now (a SIGKILL takes a moment to land; the
    answer comes as soon as it has: ``wait`` only bounds a kill that never comes, and stays below the
    300 s the forked child sleeps)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().split(")")[-1].split()[0] == "Z":  # a zombie is dead
                    return False
        except OSError:
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_verify_cannot_be_fooled_and_leaves_nothing_running(tmp_path: Path) -> None:
    """``verify`` said "ok" for a module that rewrote the events file and called ``os._exit(0)``: the
    events come through a pipe and must end with ``finish``, so an early exit is a crash. And it left
    the children the import forked running: the whole process group is killed."""
    root = write(tmp_path, {
        "policy.toml": policy_text("zoo.liar", "zoo.forker"),
        "src/zoo/__init__.py": "",
        "src/zoo/heavy.py": "",
        "src/zoo/liar.py": _LIAR,
        "src/zoo/forker.py": _FORKER,
    })
    verified = cli(root, "verify")
    verified.assert_no_crash()
    child = int((root / "src/zoo/forker.py.child").read_text())
    alive = _alive(child)
    if alive:
        os.kill(child, 9)
    assert not alive, "a process the import forked is still running"
    assert verified.returncode == 1, verified
    lines = verified.stdout.splitlines()
    assert [line.split(" (")[0] for line in lines if line.startswith(("ok ", "FAIL "))] == [
        "FAIL zoo.liar", "ok   zoo.forker"], verified.stdout
    assert "  the interpreter exited with status 0 while executing zoo.liar" in lines, verified.stdout
    assert "    src/zoo/liar.py:2: zoo.liar -> zoo.heavy (runtime, exec)" in lines, verified.stdout


# -- files that are not what they seem: read only regular files, at most 10 MiB ---------------------

NOT_REGULAR = "cannot read: not a regular file"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_policy_that_is_a_fifo_or_a_device_or_too_large(tmp_path: Path) -> None:
    """A FIFO as the policy blocked for ever (``check --policy p.toml``, ``flake8 --import-policy``),
    ``--policy /dev/zero`` read without bound: only a regular file of at most 10 MiB is read."""
    root = write(tmp_path, {**TREE, "big.toml": "# " + "x" * (10 * 1024 * 1024) + "\n"})
    os.mkfifo(root / "fifo.toml")
    checks = ["fifo.toml", "/dev/zero", "big.toml"]
    results = _guarded(
        *(lambda policy=policy: cli(root, "check", "--policy", policy) for policy in checks),
        lambda: flake8(root, "--import-policy", "fifo.toml", "src/zoo/light.py"),
    )
    expected = [
        f"fifo.toml: {NOT_REGULAR} (a FIFO)",
        f"/dev/zero: {NOT_REGULAR} (a character device)",
        "big.toml: cannot read: larger than 10 MiB, the limit for the files importpolicy reads",
    ]
    for result, message in zip(results, expected):
        result.assert_no_crash()
        assert (result.returncode, result.stdout, result.stderr) == (2, "", f"importpolicy: {message}\n")
    linted = results[-1]
    linted.assert_no_crash()
    assert_flake8_ipl900(linted, expected[0].partition(": ")[2])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_cache_entries_that_are_fifos(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """A FIFO at a cache entry's path blocked every client for ever: each is a miss."""
    root = _with_stdlib_cache(write(tmp_path, TREE), mypy_stdlib_cache)
    _fill_caches(root)
    for path in sorted((root / CACHE).rglob("*.json")):
        path.unlink()
        os.mkfifo(path)
    assert_violation_found(*_guarded(*_adapter_jobs(root)))  # type: ignore[misc]


def _adapter_jobs(root: Path) -> list[Callable[[], Run | None]]:
    jobs: list[Callable[[], Run | None]] = [
        lambda: cli(root, "check"), lambda: flake8(root, "src/zoo/light.py")
    ]
    jobs.append((lambda: mypy(root, "-p", "zoo")) if not MYPY_SKIP else (lambda: None))
    return jobs


def _special_files(root: Path) -> dict[str, str]:
    """Modules that are not regular files, made where possible: ``{module: what it is}``."""
    made = {"zoo.devnull": "a character device"}
    (root / "src/zoo/devnull.py").symlink_to("/dev/null")
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "src/zoo/fifo.py")
        made["zoo.fifo"] = "a FIFO"
    try:
        os.mknod(root / "src/zoo/chardev.py", 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's
        made["zoo.chardev"] = "a character device"
    except (OSError, AttributeError):
        pass
    (root / "src/zoo/loop.py").symlink_to("loop.py")  # ln -s loop.py loop.py
    made["zoo.loop"] = "Too many levels of symbolic links"
    return made


def test_modules_that_are_not_regular_files_are_unanalysable(tmp_path: Path) -> None:
    """A symlink to ``/dev/null``, a FIFO, a character device or a symlink loop named like a module:
    only regular files are sources, anything else is IPL005 (a loop was a RuntimeError in
    ``Policy.relpath``), never a hang; flake8 and the check see the rest of the chain."""
    root = write(tmp_path, TREE)
    special = _special_files(root)
    light = "".join(f"import {module}\n" for module in special) + "import zoo.heavy\n"
    write(root, {"src/zoo/light.py": light})
    checked, linted = _guarded(
        lambda: cli(root, "check", "--no-cache"),
        lambda: flake8(root, "--select", "IPL", "src/zoo/light.py"),
    )
    for result in (checked, linted):
        result.assert_no_crash()
        assert result.returncode == 1, result
    for module, what in special.items():
        path = "src/" + module.replace(".", "/") + ".py"
        problem = f"{path}:1: IPL005 cannot analyse {module} (line 1: cannot read file: "
        assert any(line.startswith(problem) and what in line for line in checked.stdout.splitlines()), (
            module, checked.stdout)
    assert linted.found("IPL") == {("src/zoo/light.py", len(special) + 1, "IPL001")}, linted


def test_source_over_ten_mebibytes_is_not_read(tmp_path: Path) -> None:
    """A 10 MB single-line source took 4.8 GB to parse: sources over 10 MiB are refused (IPL005)."""
    big = "X = [" + "0," * (5 * 1024 * 1024) + "0]\nimport zoo.heavy\n"
    root = write(tmp_path, {**TREE, "src/zoo/mid.py": big})
    checked = cli(root, "check", "--no-cache")
    checked.assert_no_crash()
    assert checked.returncode == 1, checked
    assert ("src/zoo/mid.py:1: IPL005 cannot analyse zoo.mid (line 1: cannot read file: larger than 10 "
            "MiB, the limit for the files importpolicy reads)") in checked.stdout, checked.stdout


def test_compiled_only_first_party_module_is_unanalysable(tmp_path: Path) -> None:
    """A first-party module found only as ``compiled.pyc`` was taken to import nothing, silently: it
    runs (CPython's ``SourcelessFileLoader``), but what it imports is unknown (IPL005)."""
    import py_compile

    root = write(tmp_path, {
        **TREE, "src/zoo/light.py": "import zoo.compiled\n", "compiled.py": "import zoo.heavy\n"})
    py_compile.compile(str(root / "compiled.py"), cfile=str(root / "src/zoo/compiled.pyc"), doraise=True)
    (root / "compiled.py").unlink()
    checked, why, verified = run_all(
        lambda: cli(root, "check", "--no-cache"),
        lambda: cli(root, "why", "zoo.light"),
        lambda: cli(root, "verify"),
    )
    for result in (checked, why, verified):
        result.assert_no_crash()
    problem = "cannot analyse zoo.compiled (line 1: no source, only compiled bytecode (.pyc))"
    assert (checked.returncode, checked.stdout.splitlines()[0]) == (
        1, f"src/zoo/compiled.pyc:1: IPL005 {problem}; its imports are unknown and the check is incomplete")
    assert "cannot analyse zoo.compiled: line 1: no source, only compiled bytecode (.pyc)" in why.stdout
    assert "zoo.compiled -> zoo.heavy (runtime)" in verified.stdout  # it does run
