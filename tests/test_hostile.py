"""Hostile inputs of issue 15, beside tests/test_robustness.py (issue 8), with its helpers.

DOCSTRING-PLACEHOLDER
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_robustness import (
    _CACHE_TREE,
    CACHE,
    CRITICAL,
    HEAVY_REASON,
    MYPY_SKIP,
    Files,
    Run,
    Symlink,
    _fill_caches,
    _with_stdlib_cache,
    make_mypy_stdlib_cache,
    cli,
    flake8,
    mypy,
    policy_text,
    run_all,
    write,
)

from flake8_importpolicy.analysis import parallel

MYPY_INI = "[mypy]\nplugins = mypy_plugin\nmypy_path = src\n"

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
    mypy: exit 2 (flake8: its critical error, 1), no crash."""
    checked, linted, typed = adapters(root)
    cleared = cli(root, "cache", "clear")
    message = f"policy.toml is not valid (1 problem):\n  {key}: {problem}"
    for result in (checked, cleared):
        result.assert_no_crash()
        assert (result.returncode, result.stdout, result.stderr) == (2, "", f"importpolicy: {message}\n")
    linted.assert_no_crash()
    assert (linted.returncode, linted.stdout) == (1, f"{CRITICAL}\nflake8-importpolicy: {message}\n")
    if typed is not None:
        typed.assert_no_crash()
        assert (typed.returncode, typed.stderr) == (2, f"policy.toml: error: {key}: {problem}\n"), typed


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
    """Issue 15, item 1: with ``cache-dir = "src"`` (or ``"."``, or a cache directory linked to one)
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
    """Issue 15, item 3: a facts entry edited to ``"sites": []`` was trusted on its source hash alone
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
    if found is None or subprocess.run([found, "-c", ""], capture_output=True).returncode != 0:
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
                              capture_output=True, text=True, timeout=120)

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
    """Issue 15, item 2: ``zoo.mid`` gains ``import zoo.heavy`` right after the engine read it. The
    answer of that run (clean) must not be kept: at d59b81c the whole answer was stored with the
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
    """Issue 15: a parallel cold check on 10k files took 51 s against 7.9 s serial, because the facts
    cache sent with each file to a worker listed every entry to prune it. Only the process that owns
    the cache prunes, once (benchmarks/parallel_cold.py measures the speed)."""
    from test_parallel import make_project

    from flake8_importpolicy.analysis.engine import PolicyEngine
    from flake8_importpolicy.answers import facts_cache
    from flake8_importpolicy.config.load import load_policy
    from flake8_importpolicy.model.facts import ModuleFacts, Target

    monkeypatch.setattr(parallel, "MIN_MISSES", 1)  # workers from the first file, whatever the load
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
    simulated by a sleep in each worker) are stopped once they have cost more than they saved, and
    the engine goes on alone; the report does not change."""
    from test_parallel import make_project

    from flake8_importpolicy.analysis.engine import PolicyEngine
    from flake8_importpolicy.config.load import load_policy

    root = make_project(tmp_path / "p")
    policy = load_policy(root / "policy.toml")
    with PolicyEngine(policy, jobs=1) as engine:
        serial = engine.check()
    monkeypatch.setattr(parallel, "MIN_MISSES", 1)
    monkeypatch.setattr(parallel, "_cpus_idle", lambda jobs: True)
    monkeypatch.setattr(parallel, "_TRIAL", 5)
    monkeypatch.setattr(parallel, "_module_facts", _slow_module_facts)
    with PolicyEngine(policy, jobs=2) as engine:
        assert engine.check() == serial
        pool = engine._pool
        assert (pool.active, pool.jobs) == (False, 1)
        assert pool._spent - pool._saved > 5 * pool._own_seconds / pool._misses


# -- exit status: an internal error is 3, one line, no traceback -----------------------------------

BUG_LINE = (
    "importpolicy: internal error: RuntimeError: boom. This is a bug in importpolicy, not in your code or "
    "policy; please report it to the flake8-importpolicy maintainers with the command you ran and the "
    "traceback that IMPORTPOLICY_DEBUG=1 prints.\n"
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
                          capture_output=True, text=True, timeout=180)
    return Run(tuple(args), proc.returncode, proc.stdout, proc.stderr)


def test_internal_error_exits_3_with_one_line(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """Issue 15: a traceback exited 1, the status of findings, so CI could not tell a crash from a
    report. The command line exits 3 with one line saying it is a bug and how to report it; the
    traceback only with ``IMPORTPOLICY_DEBUG=1``. flake8 and mypy keep their conventions (flake8's
    critical error, exit 1; mypy's one error line, exit 2), without a traceback from us."""
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
        f"{CRITICAL}\nflake8-importpolicy failed on src/zoo/light.py: RuntimeError: boom\nThis is a bug;"
    ), linted
    for result in typed:
        assert (result.returncode, result.stdout) == (
            2, "Found 1 error in 1 file (errors prevented further checking)\n"), result
        assert result.stderr == (
            "policy.toml: error: flake8-importpolicy failed: RuntimeError: boom; this is a bug\n"), result


def test_help_documents_every_exit_status() -> None:
    for args in (["--help"], ["check", "--help"]):
        shown = " ".join(cli(Path.cwd(), *args).stdout.split())
        assert ("exit status: 0 clean, 1 findings (IPL001-IPL005), 2 usage, policy or interpreter error, "
                "3 internal error (a bug in importpolicy") in shown, shown


# -- crashes turned into clear messages ---------------------------------------------------------------


def _in_deleted_directory(root: Path, *args: str) -> Run:
    """``importpolicy ARGS`` run from a working directory that was deleted under it."""
    gone = root / "gone"
    script = f'mkdir -p "{gone}" && cd "{gone}" && rmdir "{gone}" && exec "$@"'
    proc = subprocess.run(["sh", "-c", script, "sh", sys.executable, "-m", "flake8_importpolicy", *args],
                          capture_output=True, text=True, timeout=120)
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
