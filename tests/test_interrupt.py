"""Ctrl-C (SIGINT) ends every entry of the command line with one line and exit status 130, at any
moment: during the start-up's imports as during a command's run (issue 27, F13).

The moment is made deterministic without touching the package: a ``sitecustomize`` on
``PYTHONPATH`` holds the import of one named module (it writes a mark file, then waits), the test
sends SIGINT once the mark exists. No duration is bounded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import HANG_CATCHER

_HOLD = """\
import os, sys, time

class _Hold:
    def find_spec(self, name, path=None, target=None):
        if name == os.environ["IPL_TEST_HOLD_IMPORT"]:
            open(os.environ["IPL_TEST_HOLD_MARK"], "w").close()
            while True:
                time.sleep(0.05)
        return None

sys.meta_path.insert(0, _Hold())
"""

ENTRIES = {
    "python -m": [sys.executable, "-m", "flake8_importpolicy"],
    "console script": [str(Path(sys.executable).with_name("importpolicy"))],
}

HELD = [
    "flake8_importpolicy.model.environment",  # the first module the entry imports
    "flake8_importpolicy.cli",  # the command line itself
    "flake8_importpolicy.config.presets",  # imported by the command's run
]


def _interrupted(
    tmp_path: Path, entry: list[str], held: str, signals: int
) -> subprocess.CompletedProcess[str]:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_HOLD)
    mark = tmp_path / "held"
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMPORTPOLICY")}
    env.update(PYTHONPATH=str(hook), IPL_TEST_HOLD_IMPORT=held, IPL_TEST_HOLD_MARK=str(mark))
    proc = subprocess.Popen([*entry, "presets"], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    while not mark.exists():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    for _ in range(signals):
        proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=HANG_CATCHER)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.mark.parametrize("held", HELD)
@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_sigint_at_start_up_exits_130_with_one_line(tmp_path: Path, entry: str, held: str) -> None:
    """Before, ``python -m`` imported the command line outside any guard and the console script
    pointed at ``cli.run``, which caught no KeyboardInterrupt: a traceback and the status of an
    uncaught signal. Now each says ``importpolicy: interrupted`` and exits 130."""
    done = _interrupted(tmp_path, ENTRIES[entry], held, signals=1)
    assert (done.returncode, done.stderr, done.stdout) == (130, "importpolicy: interrupted\n", "")


def test_repeated_sigint_still_gives_one_line(tmp_path: Path) -> None:
    """Ctrl-C pressed again while the first one is handled: still one line and 130."""
    done = _interrupted(tmp_path, ENTRIES["console script"], "flake8_importpolicy.cli", signals=5)
    assert (done.returncode, done.stderr, done.stdout) == (130, "importpolicy: interrupted\n", "")
