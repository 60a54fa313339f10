"""Hostile policies: huge ones, ones that are not files, empty ones, and a project whose modules shadow
the standard library (issue 32).

Every client that reads the policy: C = ``importpolicy`` (``check``, ``why``, ``suggest``,
``verify``, ``cache clear``), F = ``flake8`` (a file, stdin, ``-j 2``), M = ``mypy`` (also
``-n 2``), P = ``pytest --importpolicy``. A policy that cannot be used is one message and exit 2
(flake8: its report of a broken policy, exit 1), within the harness's timeout.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from test_hostile import TREE, mypy_stdlib_cache
from test_robustness import (
    MYPY_SKIP,
    Directory,
    Files,
    Run,
    Symlink,
    _with_stdlib_cache,
    cli,
    flake8,
    mypy,
    run,
    run_all,
    write,
)

from flake8_importpolicy.model.reading import count_entries

__all__ = ["mypy_stdlib_cache"]

LIGHT = "src/zoo/light.py"


def every_client(root: Path, *, mypy_options: tuple[str, ...] = ()) -> list[Run]:
    jobs: list[Callable[[], Run]] = [
        lambda: cli(root, "check"),
        lambda: cli(root, "why", "zoo.light"),
        lambda: cli(root, "suggest"),
        lambda: cli(root, "verify"),
        lambda: cli(root, "cache", "clear"),
        lambda: flake8(root, LIGHT),
        lambda: flake8(root, "-", "--stdin-display-name", LIGHT, stdin=str(TREE[LIGHT])),
        lambda: flake8(root, "-j", "2", "src"),
        lambda: run(["-m", "pytest", "--importpolicy", "-p", "no:cacheprovider", "-q"], root),
    ]
    if not MYPY_SKIP:
        jobs.append(lambda: mypy(root, *mypy_options, "-p", "zoo"))
    return run_all(*jobs)


def assert_policy_refused(results: list[Run], where: str, message: str) -> None:
    """Each client stops with ``where: message`` (mypy: ``where: error: message``; pytest names the
    file a link leads to)."""
    for result in results:
        result.assert_no_crash()
        flat = " ".join(result.output.split())
        if result.args[:3] == ("-m", "pytest", "--importpolicy"):
            assert f": {message}" in flat, result
        else:
            assert f"{where}: {message}" in flat or f"{where}: error: {message}" in flat, result
        assert result.returncode == (1 if result.args[:2] == ("-m", "flake8") else 2), result


HEAVY_TABLE = "".join(f'"zoo.h{number}" = "slow"\n' for number in range(250_000))
UNKNOWN_KEYS = "".join(f"unknown{number} = 1\n" for number in range(250_000))


@pytest.mark.parametrize("policy", [
    pytest.param(str(TREE["policy.toml"]).replace("[heavy]\n", "[heavy]\n" + HEAVY_TABLE),
                 id="250000-heavy-entries"),
    pytest.param(str(TREE["policy.toml"]).replace("[settings]\n", "[settings]\n" + UNKNOWN_KEYS),
                 id="250000-unknown-keys"),
])
def test_a_policy_over_the_size_bound_is_one_message_in_every_client(
    tmp_path: Path, mypy_stdlib_cache: Path | None, policy: str
) -> None:
    """Issue 32: a 250,000-entry ``[heavy]`` table or 250,000 unknown keys made every client take
    minutes (``cache clear`` too), validating each entry (and listing a quarter of a million
    problems). A policy file holds at most 50,000 entries, counted before validation (docs/policy.md,
    "Bounds")."""
    root = _with_stdlib_cache(write(tmp_path, {**TREE, "policy.toml": policy}), mypy_stdlib_cache)
    import tomllib

    entries = count_entries(tomllib.loads(policy))
    assert entries > 250_000
    assert_policy_refused(every_client(root), "policy.toml", (
        f"{entries:,} entries (keys and array items); a policy file holds at most "
        '50,000 (docs/policy.md, "Bounds")'))


@pytest.mark.parametrize(("made", "problem"), [
    pytest.param("fifo", "not a regular file (a FIFO)", id="a-fifo"),
    pytest.param(Directory(), "Is a directory", id="a-directory"),
    pytest.param(Symlink("/dev/zero"), "not a regular file (a character device)", id="dev-zero"),
    pytest.param(Symlink("nowhere.toml"), "No such file or directory", id="a-dangling-link"),
    pytest.param(Symlink("policy.toml"), "Too many levels of symbolic links", id="a-looping-link"),
])
def test_a_policy_that_is_not_a_file_is_found_and_refused_by_every_client(
    tmp_path: Path, mypy_stdlib_cache: Path | None, made: object, problem: str
) -> None:
    """Issue 32: a FIFO, a directory, ``/dev/zero``, a dangling or a looping link named
    ``policy.toml`` was passed over by discovery: flake8 went on as if there were no policy (exit 1
    for pyflakes' findings, no word of the policy), ``suggest`` exit 0, ``check`` said there was no
    policy. Discovery finds whatever is named ``policy.toml``, and loading it says what it is."""
    files: Files = {name: content for name, content in TREE.items() if name != "policy.toml"}
    if made != "fifo":
        files["policy.toml"] = made  # type: ignore[assignment]
    root = _with_stdlib_cache(write(tmp_path, files), mypy_stdlib_cache)
    if made == "fifo":
        os.mkfifo(root / "policy.toml")
    assert_policy_refused(every_client(root), "policy.toml", f"cannot read: {problem}")


@pytest.mark.parametrize(("files", "table"), [
    pytest.param({"policy.toml": ""}, "light", id="an-empty-policy"),
    pytest.param({"pyproject.toml": "[tool.importpolicy]\n"}, "tool.importpolicy.light",
                 id="an-empty-tool-importpolicy-table"),
])
def test_pytest_says_what_an_empty_policy_lacks(tmp_path: Path, files: Files, table: str) -> None:
    """Issue 32: ``pytest --importpolicy`` exited 5 ("no tests ran") on an empty policy or an empty
    ``[tool.importpolicy]`` table, without saying why. It reports one failing item that says what
    is missing (P)."""
    root = write(tmp_path, {**{k: v for k, v in TREE.items() if k != "policy.toml"}, **files})
    tested = run(["-m", "pytest", "--importpolicy", "-p", "no:cacheprovider", "-q"], root)
    tested.assert_no_crash()
    name = next(iter(files))
    assert tested.returncode == 1, tested
    assert (f"importpolicy: {name} names no light module: nothing to verify; add a "
            f'[{table}."package.module"] table with a reason (docs/policy.md)') in tested.stdout


def test_tool_importpolicy_that_is_not_a_table_under_pytest(tmp_path: Path) -> None:
    """Issue 32: ``[tool.importpolicy]`` set to an integer (``importpolicy = 1`` under ``[tool]``)
    under pytest: one message, no traceback (P, C)."""
    files = {k: v for k, v in TREE.items() if k != "policy.toml"}
    root = write(tmp_path, {**files, "pyproject.toml": "[tool]\nimportpolicy = 1\n"})
    tested, checked = run_all(
        lambda: run(["-m", "pytest", "--importpolicy", "-p", "no:cacheprovider", "-q"], root),
        lambda: cli(root, "check"),
    )
    assert_policy_refused([tested, checked], "pyproject.toml is not valid (1 problem)",
                          "tool.importpolicy: expected a table, got the integer 1")


SHADOWS = ("tomllib", "difflib", "configparser", "json")


def test_modules_that_shadow_the_standard_library_are_never_ours(
    tmp_path: Path, mypy_stdlib_cache: Path | None
) -> None:
    """Issue 32: ``mypy -n 2`` on a project with a module named like the standard library's (a
    sentinel that records being run) failed: ``python -m`` puts the working directory first on
    ``sys.path`` (mypy starts its workers so, and ``python -m mypy`` is a common way to run it), and
    the plugin read the policy with the project's ``tomllib``. ``python -m flake8_importpolicy`` had
    the same flaw (a ``json.py`` was an internal error). Neither imports from the working
    directory any more (C, M; ``mypy -n 2`` now refuses the plugin in one line, docs/mypy.md). mypy
    itself may still run such a module, with or without the plugin, and a shadowing ``json.py`` or
    ``configparser.py`` breaks mypy on its own."""
    sentinels = tmp_path / "ran"
    sentinels.mkdir()
    shadows = {f"{name}.py": f"open({str(sentinels / name)!r}, 'w').close()\n" for name in SHADOWS}
    root = _with_stdlib_cache(write(tmp_path / "project", {**TREE, **shadows}), mypy_stdlib_cache)
    checked = cli(root, "check")
    checked.assert_no_crash()
    assert checked.returncode == 1 and "IPL001" in checked.stdout, checked
    assert not os.listdir(sentinels)
    if MYPY_SKIP:
        return
    for name in ("json", "configparser"):  # mypy itself needs the real ones
        (root / f"{name}.py").unlink()
    typed, parallel = run_all(lambda: mypy(root, "-p", "zoo"), lambda: mypy(root, "-n", "2", "-p", "zoo"))
    for result in (typed, parallel):
        result.assert_no_crash()
        assert "this is a bug" not in result.output, result
    assert typed.returncode == 1 and "IPL001 light module zoo.light" in typed.stdout, typed
    assert parallel.returncode == 2 and "does not support mypy -n 2" in parallel.output, parallel
