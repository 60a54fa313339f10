"""Hostile baselines: every client that reads the policy fails alike on a baseline it cannot use, and
writing one loses nothing (issue 32).

The clients: C = ``importpolicy`` (``check``, ``why``, ``suggest``, ``verify``, ``cache clear``),
F = ``flake8`` (a file, stdin and ``-j 2``), M = ``mypy``, P = ``pytest --importpolicy``. A baseline
that cannot be used is one message naming the file and the policy key that named it
(``settings.baseline in policy.toml``), exit status 2 (flake8 reports it as it reports a broken
policy), never a traceback and never a run that goes on without it.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import (
    MYPY_SKIP,
    Run,
    TREE,
    _with_stdlib_cache,
    cli,
    flake8,
    mypy,
    mypy_stdlib_cache,
    run,
    run_all,
    write,
)

__all__ = ["mypy_stdlib_cache"]

LIGHT = "src/zoo/light.py"
NAMED_BY = "(settings.baseline in policy.toml)"


def with_baseline(value: str) -> str:
    policy = TREE["policy.toml"]
    assert isinstance(policy, str)
    return policy.replace("[settings]\n", f'[settings]\nbaseline = "{value}"\n')


def every_client(root: Path) -> list[Run]:
    """Every client that reads the policy, side by side."""
    jobs: list[Callable[[], Run]] = [
        lambda: cli(root, "check"),
        lambda: cli(root, "check", "--no-cache", "--format", "json"),
        lambda: cli(root, "why", "zoo.light"),
        lambda: cli(root, "suggest"),
        lambda: cli(root, "verify"),
        lambda: cli(root, "cache", "clear"),
        lambda: flake8(root, LIGHT),
        lambda: flake8(root, "-", "--stdin-display-name", LIGHT, stdin=(root / LIGHT).read_text()),
        lambda: flake8(root, "-j", "2", "src"),
        lambda: run(["-m", "pytest", "--importpolicy", "-p", "no:cacheprovider", "-q"], root),
    ]
    if not MYPY_SKIP:
        jobs.append(lambda: mypy(root, "-p", "zoo"))
    return run_all(*jobs)


def assert_fails_alike(results: list[Run], location: str, problem: str = "") -> None:
    """Each client stops with ``location: problem`` (mypy: ``location: error: problem``): exit 2
    (flake8: its report of a broken policy, exit 1)."""
    for result in results:
        result.assert_no_crash()
        typed = result.args[:2] == ("-m", "mypy")
        message = f"{location}: {'error: ' if typed else ''}{problem}" if problem else location
        assert message in " ".join(result.output.split()), result
        if result.args[:2] == ("-m", "flake8"):
            assert result.returncode == 1, result
        else:
            assert result.returncode == 2, result
        if result.args[:3] == ("-m", "flake8_importpolicy", "check") and "--format" not in result.args:
            assert result.stderr.startswith(f"importpolicy: {location}"), result


@pytest.mark.parametrize(("value", "problem"), [
    pytest.param("bdir", "cannot read the baseline: Is a directory", id="a-directory"),
    pytest.param("/dev/zero", "cannot read the baseline: not a regular file (a character device)",
                 id="dev-zero"),
    pytest.param("missing.json", "cannot read the baseline: No such file or directory; write one with "
                 "importpolicy check --write-baseline", id="missing"),
    pytest.param("../elsewhere/missing.json", "cannot read the baseline: No such file or directory; "
                 "write one with importpolicy check --write-baseline", id="outside-the-project"),
])
def test_a_baseline_that_cannot_be_read_fails_every_client_alike(
    tmp_path: Path, mypy_stdlib_cache: Path | None, value: str, problem: str
) -> None:
    """Issue 32: a baseline path that is a directory, ``/dev/zero``, missing or outside the project
    made ``check`` exit 2 but ``why`` and ``suggest`` 0 and ``verify`` 1, and the message named the
    file but not the policy key that set it. Every command and client now fails alike."""
    root = _with_stdlib_cache(
        write(tmp_path / "project", {**TREE, "policy.toml": with_baseline(value), "bdir/x": ""}),
        mypy_stdlib_cache,
    )
    shown = str((tmp_path / "elsewhere" / "missing.json")) if value.startswith("..") else value
    assert_fails_alike(every_client(root), f"{shown} {NAMED_BY}", problem)


def test_a_baseline_outside_the_project_is_used(tmp_path: Path) -> None:
    """A shared baseline outside the project is a baseline like any other (C F)."""
    root = write(tmp_path / "project", {**TREE, "policy.toml": with_baseline("../shared/b.json")})
    (tmp_path / "shared").mkdir()
    written = cli(root, "check", "--write-baseline", str(tmp_path / "shared" / "b.json"))
    assert written.returncode == 0, written
    checked, linted = run_all(lambda: cli(root, "check"), lambda: flake8(root, "--select", "IPL", LIGHT))
    assert checked.returncode == 0 and "(1 in the baseline)" in checked.stdout, checked
    assert (linted.returncode, linted.stdout) == (0, ""), linted


def _baseline(entries: str) -> str:
    return '{"version": 1, "entries": [' + entries + "]}\n"


ENTRY = '{"code": "IPL001", "light": "zoo.light", "forbidden": "zoo.heavy", "first-hop": "zoo.mid"'


@pytest.mark.parametrize(("text", "problem"), [
    pytest.param(_baseline(ENTRY + ', "count": ' + "9" * 5001 + "}"),
                 "invalid JSON: Exceeds the limit (4300 digits) for integer string conversion: "
                 "value has 5001 digits", id="5001-digit-number"),
    pytest.param("[" * 16_000 + "]" * 16_000, "invalid JSON: nested too deeply", id="nested-16000"),
    pytest.param("[" * 100_000 + "]" * 100_000, "invalid JSON: nested too deeply", id="nested-100000"),
    pytest.param(_baseline(ENTRY + ', "' + "k" * 100_000 + '": 1}'),
                 'entries[0]."' + "k" * 60 + '...": unknown key; expected one of: code, light, '
                 "forbidden, first-hop", id="a-long-unknown-key"),
    pytest.param(_baseline(",".join([ENTRY + "}"] * 50_001)),
                 "50,001 entries; a baseline holds at most 50,000", id="50001-entries"),
])
def test_a_baseline_that_is_not_one_fails_every_client_alike(
    tmp_path: Path, mypy_stdlib_cache: Path | None, text: str, problem: str
) -> None:
    """Issue 32: a baseline entry with a 5,001-digit number was an internal error (exit 3, flake8
    "This is a bug"); mypy exited 1 on a deeply nested one; an entry with an unknown key hung
    flake8. Each is one message, in every client, within the harness's timeout."""
    root = _with_stdlib_cache(write(tmp_path / "project", {
        **TREE, "policy.toml": with_baseline("b.json"), "b.json": text,
    }), mypy_stdlib_cache)
    results = every_client(root)
    assert_fails_alike(results, f"b.json {NAMED_BY}")
    for result in results:
        assert problem in " ".join(result.output.split()), result


# -- writing a baseline ------------------------------------------------------------------------------


def _entries(path: Path) -> list[dict[str, str]]:
    data = json.loads(path.read_text())
    assert isinstance(data["entries"], list)
    return data["entries"]


def test_write_baseline_writes_through_a_link_and_keeps_the_mode(tmp_path: Path) -> None:
    """Issue 32: ``--write-baseline FILE`` where FILE is a symbolic link replaced the link by a file
    (the shared baseline it pointed to was not updated), and rewriting a baseline reset its mode to
    0600. The link's target is rewritten and the link stays; a file keeps its mode; a new one gets
    the mode the umask gives any new file."""
    root = write(tmp_path / "project", TREE)
    shared = tmp_path / "shared" / "b.json"
    shared.parent.mkdir()
    first = cli(root, "check", "--write-baseline", str(shared))
    assert first.returncode == 0, first
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o666 & ~umask
    shared.chmod(0o640)
    os.symlink(shared, root / "link.json")
    (root / "src/zoo/mid.py").write_text("X = 1\n")  # the finding is fixed: the entry goes
    rewritten = cli(root, "check", "--write-baseline", "link.json")
    assert rewritten.returncode == 0 and "0 entries (0 added, 1 removed)" in rewritten.stdout
    assert os.path.islink(root / "link.json") and os.readlink(root / "link.json") == str(shared)
    assert _entries(shared) == []
    assert stat.S_IMODE(shared.stat().st_mode) == 0o640
