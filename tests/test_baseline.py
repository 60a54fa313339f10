"""The baseline (``[settings] baseline``, ``--baseline``, ``check --write-baseline``): findings it
records are not reported by check, flake8 or mypy; entries match by identity, never by line; an entry
that no longer occurs is IPL009; a broken file is a clear error (exit 2). Real command lines, real
flake8 and mypy on copies of ``tests/fixtures/x_baseline``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HANG_CATCHER

from flake8_importpolicy.cli import main
from flake8_importpolicy.config.baseline import load_baseline

FIXTURE = Path(__file__).parent / "fixtures" / "x_baseline"
CODE = Path(__file__).resolve().parent.parent


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, tmp_path / "x_baseline"))


def check(tree: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", "--policy", str(tree / "policy.toml"), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_only_findings_not_in_the_baseline_and_stale_entries(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = check(tree, capsys, "--format", "json", "--no-cache")
    data = json.loads(out)
    assert code == 1, err
    assert [(v["light"], v["heavy"], v["line"]) for v in data["violations"]] == [
        ("app.light", "app.other", 5)]
    assert data["problems"] == [{
        "code": "IPL009",
        "message": "baseline entry IPL001 app.light -> app.heavy (first hop app.gone) no longer "
                   "occurs; remove it with importpolicy check --write-baseline",
        "path": "importpolicy-baseline.json", "line": 6,
    }]
    assert data["baselined"] == 2  # the moved import of app.helpers, and app.budget's overrun
    code, out, _ = check(tree, capsys)
    assert out.splitlines()[-1] == "Found 1 violation in 1 of 2 light modules, 1 problem, 2 in the baseline."


def test_a_moved_line_still_matches(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    light = tree / "app" / "light.py"
    light.write_text(light.read_text().replace("import app.other  # IPL001: 0 app.other\n", ""))
    assert check(tree, capsys, "--write-baseline")[0] == 0
    assert check(tree, capsys)[0] == 0
    light.write_text('"""Moved down by ten lines."""\n' + "\n" * 10 + light.read_text())
    code, out, _ = check(tree, capsys)
    assert code == 0, out
    assert out == "OK: 2 light modules checked, no forbidden import-time imports (2 in the baseline).\n"


def test_write_baseline_rewrites_sorted_and_adds_only_with_add(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = tree / "importpolicy-baseline.json"
    code, _, err = check(tree, capsys, "--write-baseline")
    assert code == 2  # app.light -> app.other is not recorded: refused, nothing written
    assert "does not record 1 finding of today's check" in err
    assert "IPL001 app.light -> app.other (first hop app.other)" in err
    assert "app.gone" in baseline.read_text()
    code, out, _ = check(tree, capsys, "--write-baseline", "--add")
    assert code == 0
    assert out == "wrote importpolicy-baseline.json: 3 entries (1 added, 1 removed)\n"
    written = baseline.read_bytes()
    assert [e.identity for e in load_baseline(baseline).entries] == sorted(
        e.identity for e in load_baseline(baseline).entries)
    assert check(tree, capsys, "--write-baseline")[0] == 0
    assert baseline.read_bytes() == written  # deterministic
    assert check(tree, capsys)[0] == 0
    # fixing a recorded finding makes its entry stale until the file is rewritten
    light = tree / "app" / "light.py"
    light.write_text(light.read_text().replace("import app.other  # IPL001: 0 app.other\n", ""))
    code, out, _ = check(tree, capsys)
    assert code == 1 and "IPL009 baseline entry IPL001 app.light -> app.other" in out
    code, out, _ = check(tree, capsys, "--write-baseline")
    assert (code, out) == (0, "wrote importpolicy-baseline.json: 2 entries (0 added, 1 removed)\n")
    assert check(tree, capsys)[0] == 0


def test_write_baseline_creates_a_new_file_beside_the_policy(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tree / "policy.toml"
    policy.write_text(policy.read_text().replace('baseline = "importpolicy-baseline.json"\n', ""))
    (tree / "importpolicy-baseline.json").unlink()
    code, out, _ = check(tree, capsys, "--write-baseline")
    assert code == 0
    assert out == ("wrote importpolicy-baseline.json: 3 entries (3 added, 0 removed)\n"
                   'use it: add baseline = "importpolicy-baseline.json" under [settings] in the '
                   "policy, or pass --baseline importpolicy-baseline.json\n")
    assert check(tree, capsys)[0] == 1
    assert check(tree, capsys, "--baseline", str(tree / "importpolicy-baseline.json"))[0] == 0


def test_write_baseline_never_overwrites_a_source_or_foreign_file(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``check --write-baseline app/light.py`` (meaning ``check app/light.py``) writes nothing and
    says what FILE is; an existing file that is not a baseline is named as not overwritten."""
    light = tree / "app" / "light.py"
    source = light.read_bytes()
    with pytest.raises(SystemExit) as usage:  # a usage error, as argparse exits with it
        check(tree, capsys, "--write-baseline", str(light))
    out, err = capsys.readouterr()
    assert (usage.value.code, out, light.read_bytes()) == (2, "", source)
    assert err == (
        "importpolicy: error: --write-baseline FILE names the baseline file to write (JSON), not a "
        "source file: app/light.py; to check the light modules of app/light.py, run importpolicy "
        "check app/light.py\n")
    with pytest.raises(SystemExit):
        check(tree, capsys, "--write-baseline", str(tree / "app" / "new.py"))
    capsys.readouterr()
    assert not (tree / "app" / "new.py").exists()
    notes = tree / "notes.txt"
    notes.write_text("my notes\n")
    code, out, err = check(tree, capsys, "--write-baseline", str(notes))
    assert (code, out, notes.read_text()) == (2, "", "my notes\n")
    assert err == (f"importpolicy: {notes} (--write-baseline; not overwritten):1:1: invalid JSON: "
                   "Expecting value\n")


def test_a_broken_baseline_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    broken = FIXTURE / "broken"
    code, out, err = check(broken, capsys, "--no-cache")
    assert code == 2 and out == ""
    assert "Traceback" not in err
    assert err.splitlines() == [
        "importpolicy: " + str(Path(os.path.relpath(broken / "importpolicy-baseline.json")))
        + " (settings.baseline in policy.toml) is not valid (3 problems):",
        '  entries[0].code: "IPL002" is not a code a baseline records (expected "IPL001" or '
        '"IPL008")',
        "  entries[1].firsthop: unknown key; did you mean 'first-hop'?",
        "  entries[1].first-hop: missing; every entry has code, light, forbidden and first-hop",
    ]
    code, out, _ = check(broken, capsys, "--no-cache", "--format", "json")
    assert code == 2 and json.loads(out)["problems"][0]["code"] == "IPL900"


@pytest.mark.parametrize("text", ["", "{", "[]", '{"version": 1}', "\xff"])
def test_every_kind_of_broken_file(tree: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    (tree / "importpolicy-baseline.json").write_bytes(text.encode("latin-1"))
    code, out, err = check(tree, capsys)
    assert code == 2 and "importpolicy-baseline.json" in err and "Traceback" not in err


def test_a_missing_baseline_says_how_to_write_one(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "importpolicy-baseline.json").unlink()
    code, _, err = check(tree, capsys)
    assert code == 2
    assert "cannot read the baseline: No such file or directory; write one with importpolicy " \
           "check --write-baseline" in err


def test_the_warm_answer_depends_on_the_baseline(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(tree, capsys)[0] == 1
    assert check(tree, capsys)[0] == 1  # warm
    baseline = tree / "importpolicy-baseline.json"
    # the stale entry now records app.light -> app.other: nothing new, nothing stale
    baseline.write_text(baseline.read_text().replace(
        '"first-hop": "app.gone", "forbidden": "app.heavy"',
        '"first-hop": "app.other", "forbidden": "app.other"'))
    code, out, _ = check(tree, capsys)
    assert code == 0, out


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MYPY", "PYTHON"))}
    env["PYTHONPATH"] = str(CODE)
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=HANG_CATCHER)


def test_flake8_reports_only_findings_not_in_the_baseline(tree: Path) -> None:
    flake8 = [sys.executable, "-m", "flake8", "--select", "IPL", "app/light.py"]
    first = _run(flake8, tree)
    assert [line.split(" ")[0:2] for line in first.stdout.splitlines()] == [
        ["app/light.py:5:1:", "IPL001"]], first.stderr
    baseline = tree / "importpolicy-baseline.json"
    baseline.write_text(baseline.read_text().replace('"first-hop": "app.helpers"', '"first-hop": "app.x"'))
    second = _run(flake8, tree)  # the index depends on the baseline's bytes
    assert [line.split(" ")[0:2] for line in second.stdout.splitlines()] == [
        ["app/light.py:4:1:", "IPL001"], ["app/light.py:5:1:", "IPL001"]], second.stderr
    (baseline).write_text("{")
    broken = _run(flake8, tree)
    assert broken.returncode == 1 and "importpolicy-baseline.json" in broken.stdout + broken.stderr
    assert "Traceback" not in broken.stderr


def test_mypy_reports_only_findings_not_in_the_baseline(tree: Path) -> None:
    (tree / "mypy.ini").write_text("[mypy]\nplugins = flake8_importpolicy.mypy\n")
    mypy = [sys.executable, "-m", "mypy", "-p", "app", "--no-incremental"]
    first = _run(mypy, tree)
    found = [line for line in first.stdout.splitlines() if "IPL0" in line]
    assert any("app/light.py:5:" in line and "IPL001" in line for line in found), first.stdout
    assert not any("app/light.py:4:" in line for line in found), first.stdout
    assert any("IPL009" in line and "app.gone" in line for line in found), first.stdout
    baseline = tree / "importpolicy-baseline.json"
    baseline.write_text(baseline.read_text().replace('"first-hop": "app.helpers"', '"first-hop": "app.x"'))
    second = _run(mypy, tree)
    assert any("app/light.py:4:" in line and "IPL001" in line for line in second.stdout.splitlines()), \
        second.stdout
