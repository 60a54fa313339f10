"""Hostile interpreters and environments: no answer from another interpreter, no wait for one.

A cached answer is right only for the interpreter setup that decided it (docs/design.md, "Caches"):
the interpreter as started (a venv's ``bin/python`` is a link to one base interpreter), its flags
(``-s``), the environment it is queried in (``PYTHONUSERBASE``, ``PYTHONNOUSERSITE``,
``PYTHONPATH``...) and what is installed there. Each case runs the command line (C), flake8 (F) and
mypy (M) (for two venvs, the pytest plugin P too) from real virtual environments made here
(``python -m venv``; each sees this package, flake8 and mypy through a ``.pth`` file, and a package
of its own), twice or more, warm: the second answer must be the fresh one. An interpreter that
never answers gives one message in every client (C, F, M, the pytest plugin P and ``verify`` V),
its processes killed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from hostile import Files, MYPY_SKIP, Run, _alive, cli, flake8, mypy, run, run_all, write

LIGHT = "src/zoo/light.py"
POLICY = """\
[settings]
source-roots = ["src"]
external = "follow"

[heavy]
"heavyext" = "slow to import"

[light."zoo.light"]
reason = "must stay light"
"""
TREE: Files = {
    "policy.toml": POLICY,
    "src/zoo/__init__.py": "",
    "src/zoo/light.py": "import extpkg\n",
    "mypy.ini": (
        "[mypy]\nplugins = flake8_importpolicy.mypy\nmypy_path = src\nignore_missing_imports = True\n"
    ),
}
CHAIN = "IPL001 light module zoo.light imports heavyext at import time (slow to import)"
OURS = sysconfig.get_paths()["purelib"]  # flake8, mypy and this package (an editable install)


def make_venv(where: Path, *, system_site: bool = False, heavy: bool | None) -> Path:
    """A real venv at ``where`` seeing this package, flake8 and mypy (its ``.pth`` adds this
    interpreter's site directory), with its own ``extpkg`` (none when ``heavy`` is None): importing
    ``heavyext`` when ``heavy``. ``system_site``: ``--system-site-packages``, which keeps the user
    site enabled. Returns its ``bin/python``."""
    options = ["--system-site-packages"] if system_site else []
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", *options, str(where)], check=True)
    python = where / "bin" / "python"
    site = Path(subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip())
    write(site, {
        "_importpolicy_tests.pth": f"import site; site.addsitedir({OURS!r})\n",
        **(extpkg(heavy) if heavy is not None else {}),
    })
    return python


def extpkg(heavy: bool) -> Files:
    """An installed ``extpkg`` (and ``heavyext``): it imports ``heavyext`` when ``heavy``."""
    return {"extpkg/__init__.py": "import heavyext\n" if heavy else "X = 1\n", "heavyext.py": ""}


def clients(
    root: Path, python: Path, *, flags: Sequence[str] = (), env: Mapping[str, str | None] | None = None
) -> list[Run]:
    """C, F and (unless the mypy plugin cannot be imported) M with the interpreter ``python`` started
    with ``flags``, side by side."""
    commands = [
        ["-m", "flake8_importpolicy", "check"],
        ["-m", "flake8", "--select", "IPL", LIGHT],
    ]
    if not MYPY_SKIP:
        commands.append(["-m", "mypy", "--cache-dir", str(root / ".mypy_cache"), "-p", "zoo"])
    return run_all(*(
        lambda command=command: run([*flags, *command], root, python=str(python), env=env)
        for command in commands
    ))


def assert_answers(results: list[Run], heavy: bool) -> None:
    """Each client reports the chain to ``heavyext`` when ``heavy``, else nothing; the pytest
    plugin's item fails with heavyext predicted and executed when ``heavy``, else passes."""
    for result in results:
        result.assert_no_crash()
        assert result.returncode == (1 if heavy else 0), result
        if result.args[:2] == ("-m", "pytest"):
            assert ("forbidden module executed: heavyext" in result.stdout) == heavy, result.stdout
            assert "missed" not in result.stdout and "not observed" not in result.stdout, result
        else:
            assert (CHAIN in result.stdout) == heavy, result


@pytest.mark.parametrize("change", ["PYTHONUSERBASE", "-s", "PYTHONNOUSERSITE"])
def test_a_change_of_user_site_is_never_answered_from_the_cache(tmp_path: Path, change: str) -> None:
    """Issue 32: ``PYTHONUSERBASE`` changed, or ``-s`` / ``PYTHONNOUSERSITE`` set, between two runs:
    the cached answer kept a chain through the user site that a fresh run no longer sees (C F M).
    The user site decides ``sys.path``, so it is part of every cache's key."""
    python = make_venv(tmp_path / "venv", system_site=True, heavy=None)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    heavy_base, clean_base = tmp_path / "heavy-base", tmp_path / "clean-base"
    write(heavy_base / "lib" / version / "site-packages", extpkg(heavy=True))
    write(clean_base / "lib" / version / "site-packages", extpkg(heavy=False))
    root = write(tmp_path / "project", TREE)
    for _ in range(2):  # cold, then warm
        assert_answers(clients(root, python, env={"PYTHONUSERBASE": str(heavy_base)}), heavy=True)
    if change == "PYTHONUSERBASE":
        fresh = clients(root, python, env={"PYTHONUSERBASE": str(clean_base)})
    elif change == "PYTHONNOUSERSITE":
        fresh = clients(root, python, env={"PYTHONUSERBASE": str(heavy_base), "PYTHONNOUSERSITE": "1"})
    else:
        fresh = clients(root, python, flags=["-s"], env={"PYTHONUSERBASE": str(heavy_base)})
    assert_answers(fresh, heavy=False)  # a clean extpkg, or none
    assert_answers(clients(root, python, env={"PYTHONUSERBASE": str(heavy_base)}), heavy=True)


def test_a_change_of_pythonpath_is_never_answered_from_the_cache(tmp_path: Path) -> None:
    """Issue 32: the interpreter key covers ``PYTHONPATH``: with it naming a directory whose
    ``extpkg`` imports ``heavyext``, then one whose ``extpkg`` does not (then the first again, a
    relative entry), each warm run gives the fresh answer (C F M)."""
    python = make_venv(tmp_path / "venv", heavy=None)
    heavy_dir = write(tmp_path / "heavy-dir", extpkg(heavy=True))
    clean_dir = write(tmp_path / "clean-dir", extpkg(heavy=False))
    root = write(tmp_path / "project", TREE)
    for _ in range(2):  # cold, then warm
        assert_answers(clients(root, python, env={"PYTHONPATH": str(heavy_dir)}), heavy=True)
    assert_answers(clients(root, python, env={"PYTHONPATH": str(clean_dir)}), heavy=False)
    relative = os.path.join(os.pardir, "heavy-dir")
    assert_answers(clients(root, python, env={"PYTHONPATH": relative}), heavy=True)
    assert_answers(clients(root, python, env={"PYTHONPATH": None}), heavy=False)  # no extpkg


def test_a_user_site_created_after_a_run_is_seen(tmp_path: Path) -> None:
    """The user site is on ``sys.path`` only once it exists: a cached answer made before it was
    created does not hold after (it is stamped whether it exists or not)."""
    python = make_venv(tmp_path / "venv", system_site=True, heavy=None)
    base = tmp_path / "user-base"
    env = {"PYTHONUSERBASE": str(base)}
    root = write(tmp_path / "project", TREE)
    assert_answers(clients(root, python, env=env), heavy=False)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    write(base / "lib" / version / "site-packages", extpkg(heavy=True))
    assert_answers(clients(root, python, env=env), heavy=True)


def test_two_venvs_never_share_an_answer(tmp_path: Path) -> None:
    """Issue 25, item 2: with venv A (its ``extpkg`` imports ``heavyext``) and venv B (its does not),
    the same tree checked with A's tools and then with B's printed A's chain, with paths into A's
    site-packages, until ``--no-cache``: both venvs' interpreters are links to one base interpreter,
    and the caches were keyed by the base. Now each client gives each venv its own answer, in any
    order, and the caches keep both (C F M). The pytest plugin (P) proves at runtime, but its
    static prediction reads the same caches: a stale one would show as a module the static check
    "missed" (B's answer for A) or one predicted and "not observed" (A's for B)."""
    venv_a = make_venv(tmp_path / "vA", heavy=True)
    venv_b = make_venv(tmp_path / "vB", heavy=False)
    assert os.path.realpath(venv_a) == os.path.realpath(venv_b)  # one base interpreter
    root = write(tmp_path / "project", TREE)
    for python, heavy in ((venv_a, True), (venv_b, False), (venv_a, True), (venv_b, False)):
        results = clients(root, python)
        results.append(run(["-m", "pytest", "--importpolicy", "-p", "no:cacheprovider", "-q",
                            "policy.toml"], root, python=str(python)))
        assert_answers(results, heavy)
        if heavy:
            assert str(tmp_path / "vA") in results[0].stdout  # the chain's path is A's
    entries = {p.parent.name: len(list(p.parent.glob("*.json")))
               for p in (root / ".importpolicy_cache").glob("*/*.json")}
    assert entries["interpreters"] == 2 and entries["answers"] == 2, entries


def test_interpreter_option_is_relative_to_the_working_directory(tmp_path: Path) -> None:
    """Issue 25, item 3: ``--interpreter vA/bin/python`` (relative to the working directory, like
    every command line's paths) failed with "cannot run interpreter ... [Errno 2]": the query runs
    in an empty directory. ``check``, ``why`` and ``verify --python`` take it as given."""
    root = write(tmp_path / "project", TREE)
    make_venv(root / "vA", heavy=True)
    relative = os.path.join("vA", "bin", "python")
    checked, why, verified = run_all(
        lambda: cli(root, "check", "--interpreter", relative),
        lambda: cli(root, "why", "zoo.light", "--interpreter", relative),
        lambda: cli(root, "verify", "--python", relative),
    )
    for result in (checked, why, verified):
        result.assert_no_crash()
        assert "cannot run interpreter" not in result.output, result
    assert checked.returncode == 1 and CHAIN in checked.stdout, checked
    assert why.returncode == 0 and "heavyext" in why.stdout, why
    assert verified.returncode == 1 and "forbidden module executed: heavyext" in verified.stdout


# -- an interpreter that never answers --------------------------------------------------------------

SILENT = """\
#!/bin/sh
# never answers: a child holds the query's pipes open
echo $$ >> {pids}/shell.pid
sleep 600 &
echo $! >> {pids}/sleep.pid
wait
"""
QUERY_TIMEOUT = "2"
NO_ANSWER = "did not answer the query of its sys.path within 2 s (IMPORTPOLICY_INTERPRETER_TIMEOUT"


def test_an_interpreter_that_never_answers_is_one_message_in_every_client(tmp_path: Path) -> None:
    """Issue 32: an ``interpreter`` that never answers hung every client (the query's timeout could
    not fire while a child of the interpreter held its pipes). The query has a limit
    (``IMPORTPOLICY_INTERPRETER_TIMEOUT``, 30 s by default; 2 s here): past it every client says so
    in one message, exit 2 (flake8: IPL900 at line 1), and the interpreter and what it started
    are killed."""
    pids = tmp_path / "pids"
    pids.mkdir()
    root = write(tmp_path / "project", {
        **TREE,
        "policy.toml": POLICY.replace("[settings]\n", '[settings]\ninterpreter = "./silent"\n'),
        "silent": SILENT.format(pids=pids),
    })
    (root / "silent").chmod(0o755)
    env = {"IMPORTPOLICY_INTERPRETER_TIMEOUT": QUERY_TIMEOUT}
    jobs = [
        lambda: cli(root, "check", env=env),
        lambda: cli(root, "check", "--no-cache", env=env),
        lambda: cli(root, "why", "zoo.light", env=env),
        lambda: cli(root, "suggest", env=env),
        lambda: cli(root, "verify", env=env),
        lambda: flake8(root, LIGHT, env=env),
        lambda: flake8(root, "-", "--stdin-display-name", LIGHT, env=env, stdin="import extpkg\n"),
        lambda: run(["-m", "pytest", "--importpolicy", "-p", "no:cacheprovider", "-q"], root, env=env),
    ]
    if not MYPY_SKIP:
        jobs.append(lambda: mypy(root, "-p", "zoo", env=env))
    for result in run_all(*jobs):
        result.assert_no_crash()
        assert NO_ANSWER in result.output, result
        if result.args[:2] == ("-m", "flake8_importpolicy"):
            assert result.returncode == 2 and result.stdout == "", result
        elif result.args[:2] == ("-m", "flake8"):
            assert result.returncode == 1 and ":1:1: IPL900 " in result.stdout, result
        else:  # mypy's and pytest's status for an error that stops them
            assert result.returncode == 2, result
    for name in ("shell.pid", "sleep.pid"):
        for pid in (pids / name).read_text().split():
            assert not _alive(int(pid)), f"{name} {pid} outlived the query"
