"""The user-level facts cache (issue 26): the facts of files outside the project's source roots
(site-packages, the standard library) are kept in one cache shared by every project, the project's
own files in the project's cache, and sharing never changes an answer.

The suite's conftest gives every run a fresh ``$IMPORTPOLICY_CACHE_DIR``; these tests use one of their
own where they count entries.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path

import pytest

from flake8_importpolicy import cli
from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.answers.cache_dir import find_user_cache_dir
from flake8_importpolicy.answers.facts_cache import DiskFactsCache, open_facts_cache
from flake8_importpolicy.answers.jsonfile import read_json_sealed
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.config.locate import has_cache_tag
from flake8_importpolicy.model.findings import Report

PROJECT = {
    "app/__init__.py": "",
    "app/light.py": "import json\nfrom app import mid\n",
    "app/mid.py": "import app.heavy\n",
    "app/heavy.py": "import email.parser\n",
}
POLICY = """\
[settings]
source-roots = ["."]
external = "follow"

[heavy]
"app.heavy" = "slow"
"email.feedparser" = "third-party heavy"

[light."app.light"]
reason = "imported before fork"
"""


def make_project(root: Path) -> Path:
    for name, text in PROJECT.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "policy.toml").write_text(POLICY)
    return root


def entries(directory: Path) -> list[Path]:
    return sorted(p for p in (directory / "facts").glob("*/*") if p.is_file())


def check(root: Path, user: Path | None, monkeypatch: pytest.MonkeyPatch) -> tuple[Report, DiskFactsCache]:
    monkeypatch.setenv("IMPORTPOLICY_CACHE_DIR", "" if user is None else str(user))
    policy = load_policy(root / "policy.toml")
    cache = open_facts_cache(policy)
    return PolicyEngine(policy, facts_cache=cache).check(), cache


def sources_of(directory: Path) -> set[str]:
    """The digests the entries of ``directory`` were written for (the first part of every key)."""
    found = set()
    for entry in entries(directory):
        data = read_json_sealed(entry)
        assert isinstance(data, dict)
        found.add(data["key"][0])
    return found


def test_installed_files_go_to_the_user_cache_and_project_files_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    root = make_project(tmp_path / "one")
    user = tmp_path / "user"
    report, _ = check(root, user, monkeypatch)
    assert [v.light for v in report.violations] == ["app.light"]
    assert has_cache_tag(user), "the user-level cache is a tagged cache directory"
    project_digests = {
        hashlib.sha256((root / name).read_bytes()).hexdigest() for name in PROJECT
    }
    stdlib = Path(os.__file__).parent
    json_digest = hashlib.sha256((stdlib / "json" / "__init__.py").read_bytes()).hexdigest()
    in_project = sources_of(root / ".importpolicy_cache")
    in_user = sources_of(user)
    assert in_project and in_project <= project_digests
    assert json_digest in in_user
    assert not in_user & project_digests, "no first-party file's facts in the shared cache"


def test_two_projects_sharing_the_user_cache_get_the_answers_of_separate_caches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = make_project(tmp_path / "one")
    two = make_project(tmp_path / "two")
    (two / "app" / "mid.py").write_text("import app.heavy\nimport csv\n")  # a different answer
    separate_one, _ = check(one, None, monkeypatch)
    separate_two, _ = check(two, None, monkeypatch)
    user = tmp_path / "user"
    shared_one, first = check(one, user, monkeypatch)
    shared_two, second = check(two, user, monkeypatch)
    assert shared_one == separate_one
    assert shared_two == separate_two
    assert first.shared is not None and second.shared is not None
    assert first.shared.misses > 0
    assert second.shared.hits > 0, "the second project read the installed files' facts"
    again, third = check(one, user, monkeypatch)  # both caches warm
    assert again == separate_one and third.misses == 0


def test_damaged_user_cache_entries_are_recomputed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "one")
    user = tmp_path / "user"
    cold, _ = check(root, None, monkeypatch)
    check(root, user, monkeypatch)
    shared = entries(user)
    assert shared
    for number, entry in enumerate(shared):  # truncated, broken, foreign, another entry's bytes
        entry.write_bytes([b"", b"{", b"null", shared[0].read_bytes()][number % 4])
    damaged, cache = check(root, user, monkeypatch)
    assert damaged == cold
    assert cache.shared is not None and cache.shared.misses > 0


def test_cache_clear_leaves_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_project(tmp_path / "one")
    user = tmp_path / "user"
    check(root, user, monkeypatch)
    before = entries(user)
    assert before and entries(root / ".importpolicy_cache")
    assert cli.main(["cache", "clear", "--policy", str(root / "policy.toml")]) == 0
    capsys.readouterr()
    assert not entries(root / ".importpolicy_cache")
    assert entries(user) == before, "cache clear deletes only the project's own entries"


def _check_in_process(args: tuple[str, str]) -> str:
    root, user = args
    os.environ["IMPORTPOLICY_CACHE_DIR"] = user
    policy = load_policy(Path(root) / "policy.toml")
    report = PolicyEngine(policy, facts_cache=open_facts_cache(policy)).check()
    return repr(report.violations)


def test_concurrent_projects_writing_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    roots = [make_project(tmp_path / f"p{n}") for n in range(4)]
    expected = [repr(check(root, None, monkeypatch)[0].violations) for root in roots]
    user = tmp_path / "user"
    context = multiprocessing.get_context("spawn" if sys.platform != "linux" else "fork")
    with context.Pool(4) as pool:
        answers = pool.map(_check_in_process, [(str(root), str(user)) for root in roots])
    assert answers == expected
    for entry in entries(user):
        read_json_sealed(entry)  # every entry complete and sealed
    warm, cache = check(roots[0], user, monkeypatch)
    assert repr(warm.violations) == expected[0] and cache.shared is not None and cache.shared.misses == 0


def test_where_the_user_cache_is(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("IMPORTPOLICY_CACHE_DIR", str(tmp_path / "moved"))
    assert find_user_cache_dir() == tmp_path / "moved"
    monkeypatch.setenv("IMPORTPOLICY_CACHE_DIR", "")
    assert find_user_cache_dir() is None
    monkeypatch.delenv("IMPORTPOLICY_CACHE_DIR")
    if sys.platform == "linux":
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert find_user_cache_dir() == tmp_path / "xdg" / "importpolicy"
        monkeypatch.delenv("XDG_CACHE_HOME")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        assert find_user_cache_dir() == tmp_path / "home" / ".cache" / "importpolicy"


def test_user_cache_that_is_the_project_cache_is_one_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "one")
    monkeypatch.setenv("IMPORTPOLICY_CACHE_DIR", str(root / ".importpolicy_cache"))
    assert open_facts_cache(load_policy(root / "policy.toml")).shared is None


def _with_settings(root: Path, line: str) -> Path:
    policy = root / "policy.toml"
    policy.write_text(POLICY.replace("[settings]\n", f"[settings]\n{line}\n", 1))
    return policy


def test_settings_user_cache_dir_moves_it_and_the_variable_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "one")
    _with_settings(root, 'user-cache-dir = "../shared-facts"')
    monkeypatch.delenv("IMPORTPOLICY_CACHE_DIR")
    cache = open_facts_cache(load_policy(root / "policy.toml"))
    assert cache.shared is not None and cache.shared.directory == tmp_path / "shared-facts"
    monkeypatch.setenv("IMPORTPOLICY_CACHE_DIR", str(tmp_path / "from-ci"))
    cache = open_facts_cache(load_policy(root / "policy.toml"))
    assert cache.shared is not None and cache.shared.directory == tmp_path / "from-ci"
    _with_settings(root, 'user-cache-dir = ""')
    monkeypatch.delenv("IMPORTPOLICY_CACHE_DIR")
    assert open_facts_cache(load_policy(root / "policy.toml")).shared is None


def test_settings_user_cache_dir_problems(tmp_path: Path) -> None:
    from flake8_importpolicy.model.errors import PolicyError

    root = make_project(tmp_path / "one")
    (root / "notes").mkdir()
    (root / "notes" / "todo.txt").write_text("mine\n")
    for line, problem in [
        ("user-cache-dir = 3", 'settings.user-cache-dir: expected a directory path (relative to '
         'the policy file\'s directory), or "" for no user-level cache, got the integer 3'),
        ('user-cache-dir = "."', 'settings.user-cache-dir: "." is the policy file\'s directory; '
         'the cache needs a directory of its own, e.g. ".importpolicy_cache"'),
        ('user-cache-dir = "notes"', 'settings.user-cache-dir: "notes" is an existing directory '
         "that is not importpolicy's cache (it has no CACHEDIR.TAG written by importpolicy); name "
         "a new or empty directory"),
    ]:
        _with_settings(root, line)
        with pytest.raises(PolicyError) as raised:
            load_policy(root / "policy.toml")
        assert problem in str(raised.value), str(raised.value)


def test_cache_clear_user_clears_only_the_user_cache_and_only_its_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_project(tmp_path / "one")
    user = tmp_path / "user"
    check(root, user, monkeypatch)
    project = entries(root / ".importpolicy_cache")
    assert entries(user) and project
    (user / "facts" / "README").write_text("not the cache's\n")
    policy = str(root / "policy.toml")
    assert cli.main(["cache", "clear", "--user", "--policy", policy]) == 0
    assert "removed" in capsys.readouterr().out
    assert not entries(user) and (user / "facts" / "README").read_text() == "not the cache's\n"
    assert entries(root / ".importpolicy_cache") == project, "the project's cache is left alone"
    monkeypatch.setenv("IMPORTPOLICY_CACHE_DIR", "")
    assert cli.main(["cache", "clear", "--user", "--policy", policy]) == 0
    assert capsys.readouterr().out.startswith("no user-level cache")


def test_an_installed_file_edited_during_a_run_is_never_cached_as_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed package gains ``import extheavy`` right after the engine read it (a ``pip
    install`` during the run, say). That run's clean answer must not be kept, and the user-level
    cache must not give the old file's facts for the new bytes: the next run, sharing both caches,
    finds the chain as a run without caches does."""
    from flake8_importpolicy.analysis import sources
    from flake8_importpolicy.answers.whole import check_policy_cached

    site = tmp_path / "site"
    (site / "extpkg").mkdir(parents=True)
    installed = site / "extpkg" / "__init__.py"
    installed.write_text("X = 1\n")
    (site / "extheavy.py").write_text("")
    root = tmp_path / "one"
    (root / "app").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "light.py").write_text("import extpkg\n")
    (root / "policy.toml").write_text(
        '[settings]\nsource-roots = ["."]\nexternal = "follow"\n\n[heavy]\n"extheavy" = "slow"\n\n'
        '[light."app.light"]\nreason = "imported before fork"\n'
    )
    user = tmp_path / "user"
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("IMPORTPOLICY_CACHE_DIR", str(user))
    real_read = sources.read_source_stamped
    edits: list[Path] = []

    def read_then_edit(path: Path) -> object:
        found = real_read(path)
        if Path(path) == installed and not edits:
            installed.write_text("X = 1\nimport extheavy\n")
            past = installed.stat().st_mtime - 3600
            os.utime(installed, (past, past))
            edits.append(Path(path))
        return found

    monkeypatch.setattr(sources, "read_source_stamped", read_then_edit)
    assert check_policy_cached(load_policy(root / "policy.toml")).violations == ()
    monkeypatch.undo()
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("IMPORTPOLICY_CACHE_DIR", str(user))
    assert edits == [installed], "the clean answer came from the bytes read before the edit"
    assert entries(user), "the installed files' facts went to the user-level cache"
    assert not list((root / ".importpolicy_cache" / "answers").glob("*.json"))
    uncached = PolicyEngine(load_policy(root / "policy.toml")).check()
    assert [v.light for v in uncached.violations] == ["app.light"]
    warm = check_policy_cached(load_policy(root / "policy.toml"))
    assert warm.violations == uncached.violations
