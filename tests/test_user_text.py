"""Text we did not write (a reason in the policy, an exception's message, analysed source) never breaks a
client's records: single-line formats show whitespace runs as one space, and no format writes a raw
line break from it (which would split flake8's and mypy's ``path:line`` records, cut pylsp's message,
or start a line of a CI log with a GitHub workflow command such as ``::error::``).

Every client is the real one: ``importpolicy`` (text, JSON, GitHub, SARIF; ``why``; ``verify``),
flake8 and mypy, in subprocesses.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HANG_CATCHER, parse_workflow_command, runner_lines, write_tree

from flake8_importpolicy.model.files import POLICY_FILENAME

CODE = Path(__file__).resolve().parents[1]
# A multi-line TOML string with a carriage return: once on one line, it reads like this.
REASON_TOML = '"""slow\\r\n::error::injected by the reason\n  second line"""'
REASON = "slow ::error::injected by the reason second line"
ERROR = "boom ::error::injected by the exception"

FILES = {
    POLICY_FILENAME: f"""
        [settings]
        source-roots = ["src"]

        [heavy]
        "app.heavy" = {REASON_TOML}

        [light."app.light"]
        reason = "must start fast"

        [light."app.raiser"]
        reason = "must start fast"
    """,
    "mypy.ini": "[mypy]\nplugins = flake8_importpolicy.mypy\nmypy_path = src\n",
    "src/app/__init__.py": "",
    "src/app/heavy.py": "",
    "src/app/mid.py": "import app.heavy\n",
    "src/app/light.py": "from app import mid\n",
    "src/app/raiser.py": 'raise RuntimeError("boom\\n::error::injected by the exception")\n',
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tree(tmp_path_factory.mktemp("user-text"), FILES)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MYPY", "PYTHON", "GITHUB_"))}
    env["PYTHONPATH"] = str(CODE)
    return env


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python args`` in ``root``; the output is decoded as it was written (a ``\r`` stays)."""
    done = subprocess.run([sys.executable, *args], cwd=root, env=_env(), capture_output=True,
                          timeout=HANG_CATCHER)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def _no_command_lines(output: str) -> list[str]:
    """The lines of ``output`` (as the runner reads them) that the runner would take for a command."""
    return [line for line in runner_lines(output) if parse_workflow_command(line) is not None]


@pytest.mark.parametrize("output_format", ["text", "json", "sarif"])
def test_check_writes_no_line_break_of_a_reason(project: Path, output_format: str) -> None:
    done = _run(project, "-m", "flake8_importpolicy", "check", "--no-cache", "--format", output_format)
    assert done.returncode == 1, done.stderr
    assert "\r" not in done.stdout and _no_command_lines(done.stdout) == [], done.stdout
    if output_format == "text":
        assert f"imports app.heavy at import time ({REASON})" in done.stdout
    else:
        json.loads(done.stdout)  # the reason is in JSON strings, escaped


def test_github_annotations_parse_as_the_runner_parses_them(project: Path) -> None:
    done = _run(project, "-m", "flake8_importpolicy", "check", "--no-cache", "--format", "github")
    lines = runner_lines(done.stdout)
    commands = [parse_workflow_command(line) for line in lines]
    assert [c.command if c else None for c in commands] == ["error", None], done.stdout
    command = commands[0]
    assert command is not None
    assert command.properties == {"file": "src/app/light.py", "line": "1", "col": "1", "title": "IPL001"}
    assert command.data.splitlines()[0] == (
        f"IPL001 light module app.light imports app.heavy at import time ({REASON})")
    assert lines[1] == "Found 1 violation in 1 of 2 light modules."


def test_why_writes_no_line_break_of_a_reason(project: Path) -> None:
    for output_format in ("text", "dot", "mermaid"):
        done = _run(project, "-m", "flake8_importpolicy", "why", "app.light", "--format", output_format)
        assert done.returncode == 0, done.stderr
        assert "\r" not in done.stdout and _no_command_lines(done.stdout) == [], done.stdout
        assert REASON in done.stdout


def test_verify_writes_no_line_break_of_an_exception(project: Path) -> None:
    done = _run(project, "-m", "flake8_importpolicy", "verify", "app.raiser")
    assert done.returncode == 1, done.stderr
    assert "\r" not in done.stdout and _no_command_lines(done.stdout) == [], done.stdout
    assert f"  import raised RuntimeError: {ERROR} at src/app/raiser.py:1" in done.stdout.splitlines()


def test_flake8_records_stay_one_line_each(project: Path) -> None:
    done = _run(project, "-m", "flake8", "--select", "IPL", "src")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines and all(re.match(r"src/app/\w+\.py:\d+:\d+: IPL00[12] ", line) for line in lines), lines
    assert all(REASON in line for line in lines)


def test_mypy_records_stay_one_line_each(project: Path) -> None:
    done = _run(project, "-m", "mypy", "-p", "app")
    assert done.returncode == 1, done.stdout + done.stderr
    *records, summary = done.stdout.splitlines()
    assert records and all(re.fullmatch(r"src/app/\w+\.py:\d+: error: IPL001 .*  \[import-policy\]", line)
                           for line in records), done.stdout
    assert REASON in records[0]
    assert summary.startswith("Found 1 error in 1 file")
