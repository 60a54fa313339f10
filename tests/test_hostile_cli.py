"""Hostile command lines: an internal error, a working directory deleted under the shell, an
absurd ``--jobs`` (exit statuses and one-line messages).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from helpers import HANG_CATCHER
from hostile import (
    CHECK_IPL001,
    MYPY_SKIP,
    Run,
    TREE,
    _with_stdlib_cache,
    cli,
    mypy_stdlib_cache,
    run_all,
    write,
)

from flake8_importpolicy import __version__

__all__ = ["mypy_stdlib_cache"]  # the fixture, imported for the tests here

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
