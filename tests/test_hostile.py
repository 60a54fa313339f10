"""Hostile inputs of issue 15, beside tests/test_robustness.py (issue 8), with its helpers.

DOCSTRING-PLACEHOLDER
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from test_robustness import (
    CACHE,
    CRITICAL,
    HEAVY_REASON,
    MYPY_SKIP,
    Files,
    Run,
    Symlink,
    cli,
    flake8,
    mypy,
    policy_text,
    run_all,
    write,
)

MYPY_INI = "[mypy]\nplugins = mypy_plugin\nmypy_path = src\n"

# light -> mid -> heavy: one violation, found through a module the light module imports
TREE: Files = {
    "policy.toml": policy_text("zoo.light"),
    "mypy.ini": MYPY_INI,
    "src/zoo/__init__.py": "",
    "src/zoo/heavy.py": "",
    "src/zoo/mid.py": "X = 1\nimport zoo.heavy\n",
    "src/zoo/light.py": "import os\nfrom zoo.mid import X\n",
}
CHECK_IPL001 = "src/zoo/light.py:2:1: IPL001 light module zoo.light imports zoo.heavy at import time"
MYPY_IPL001 = (
    "src/zoo/light.py:2: error: IPL001 light module zoo.light imports zoo.heavy at import time "
    f"({HEAVY_REASON}): zoo.light -> zoo.mid (src/zoo/light.py:2) -> zoo.heavy (src/zoo/mid.py:2)"
    "  [import-policy]"
)


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
