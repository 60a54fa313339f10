"""Import budgets (``max-modules``, IPL008) and import times: counted the same way by check, why and
verify; ``max-import-ms`` is reported and fails only with ``--fail-on-time``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flake8_importpolicy.cli import main
from flake8_importpolicy.runtime.timing import parse_importtime

FIXTURE = Path(__file__).parent / "fixtures" / "x_budget"


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "policy.toml"


PROJECT = {
    "policy.toml": '[light."app.light"]\nreason = "fast"\nmax-modules = 3\nmax-import-ms = 0.001\n',
    "app/__init__.py": "",
    "app/light.py": "import app.a\nimport colorsys\n",
    "app/a.py": "from app import b\n",
    "app/b.py": "B = 1\n",
}


def test_check_reports_the_count_the_budget_and_the_biggest_first_hops(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(FIXTURE / "site-packages"))  # the third-party bundle
    code = main(["check", "--policy", str(FIXTURE / "policy.toml"), "--no-cache", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    (over,) = data["violations"]
    assert {k: over[k] for k in ("code", "light", "path", "line", "count", "max_modules")} == {
        "code": "IPL008", "light": "app.light", "path": "app/light.py", "line": 1, "count": 7,
        "max_modules": 5,
    }
    assert over["contributors"] == [{"first_hop": "app.big", "modules": 3},
                                    {"first_hop": "app.util", "modules": 2},
                                    {"first_hop": "app", "modules": 1}]
    main(["check", "--policy", str(FIXTURE / "policy.toml"), "--no-cache"])
    assert capsys.readouterr().out.splitlines()[0] == (
        "app/light.py:1:1: IPL008 light module app.light runs 7 modules at import time, over its "
        "budget of max-modules = 5; most through: app.big (3), app.util (2), app (1)")


def test_why_json_gives_the_count(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(FIXTURE / "site-packages"))
    for module, count in (("app.small", 4), ("app.light", 7)):
        assert main(["why", module, "--policy", str(FIXTURE / "policy.toml"), "--no-cache",
                     "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["count"] == count


@pytest.mark.slow
def test_verify_counts_what_executed_the_same_way_and_times_the_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = write(tmp_path, PROJECT)
    assert main(["check", "--policy", str(policy), "--no-cache"]) == 1
    assert "runs 5 modules at import time, over its budget of max-modules = 3" in capsys.readouterr().out
    code = main(["verify", "--policy", str(policy), "--no-cache", "--runs", "2", "--format", "json"])
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert code == 1 and result["status"] == "failed"
    assert (result["modules"], result["max_modules"]) == (5, 3)  # app, app.light, app.a, app.b, colorsys
    timed = result["import_time"]
    assert timed["error"] is None and len(timed["runs_ms"]) == 2 and timed["median_ms"] > 0
    assert "app.light" in {c["module"] for c in timed["contributors"]} | {"app.light"}
    # max-import-ms is reported, and fails only with --fail-on-time
    policy.write_text(PROJECT["policy.toml"].replace("max-modules = 3", "max-modules = 5"))
    assert main(["verify", "--policy", str(policy), "--no-cache", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert "modules: 5 executed, counted as max-modules counts (within max-modules = 5)" in out
    assert "over max-import-ms = 0.001; reported, not failed" in out
    assert main(["verify", "--policy", str(policy), "--no-cache", "--runs", "1", "--fail-on-time"]) == 1
    assert "1 import time over max-import-ms" in capsys.readouterr().out


def test_verify_import_time_only_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = dict(PROJECT, **{"policy.toml": '[light."app.light"]\nreason = "fast"\n'})
    policy = write(tmp_path, files)
    assert main(["verify", "--policy", str(policy), "--no-cache"]) == 0
    assert "import time" not in capsys.readouterr().out
    assert main(["verify", "--policy", str(policy), "--no-cache", "--import-time", "--runs", "1"]) == 0
    assert "import time: " in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["verify", "--policy", str(policy), "--runs", "0"])


def test_parse_importtime_reads_only_the_import() -> None:
    stderr = "\n".join([
        "import time: self [us] | cumulative | imported package",
        "import time:       100 |        100 | site",
        "@@importpolicy-import-start",
        "import time:       200 |        200 |   app.b",
        "import time:        50 |        250 | app.a",
        "@@importpolicy-import-end 0.0125",
    ])
    assert parse_importtime(stderr) == (0.0125, {"app.b": 200, "app.a": 50})


@pytest.mark.parametrize(("value", "message"), [
    ("0", "expected an integer >= 1"), ("1.5", "expected an integer >= 1"),
    ('"3"', "expected an integer >= 1"),
])
def test_bad_budgets_are_policy_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    policy = write(tmp_path, dict(PROJECT, **{
        "policy.toml": f'[light."app.light"]\nreason = "fast"\nmax-modules = {value}\nmax-import-ms = -1\n'}))
    assert main(["check", "--policy", str(policy)]) == 2
    err = capsys.readouterr().err
    assert f'light."app.light".max-modules: {message}' in err
    assert 'light."app.light".max-import-ms: expected a positive number of milliseconds' in err


@pytest.mark.slow
def test_a_standard_library_package_counts_once_in_check_and_in_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``import logging`` runs a dozen standard-library modules (traceback, threading, ...): what
    logging imports is its own cost, so both commands count it as 1 (verify counted 15 against
    check's 4, and the README walk's policy failed verify)."""
    policy = write(tmp_path, {
        "policy.toml": '[light."app.light"]\nreason = "fast"\nmax-modules = 4\n',
        "app/__init__.py": "",
        "app/light.py": "import logging\nimport json\n",
    })
    assert main(["why", "app.light", "--policy", str(policy), "--no-cache", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 4  # app, app.light, logging, json
    assert main(["verify", "--policy", str(policy), "--no-cache", "--format", "json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert (result["modules"], result["max_modules"]) == (4, 4)
    assert len(result["executed"]) > 6  # everything that ran is still listed


def test_what_a_forbidden_module_imports_counts_in_check_as_in_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A forbidden module is a leaf of the chains check reports, but what it imports still runs: the
    budget counted app, app.light, app.heavy (3, within 3) while verify counted app.after too (4,
    over), so check passed a budget that verify failed."""
    policy = write(tmp_path, {
        "policy.toml": '[heavy]\n"app.heavy" = "slow"\n[light."app.light"]\nreason = "fast"\n'
                       'max-modules = 3\n',
        "app/__init__.py": "",
        "app/light.py": "import app.heavy\n",
        "app/heavy.py": "import app.after\n",
        "app/after.py": "",
    })
    main(["why", "app.light", "--policy", str(policy), "--no-cache", "--format", "json"])
    assert json.loads(capsys.readouterr().out)["count"] == 4
    assert main(["check", "--policy", str(policy), "--no-cache", "--format", "json"]) == 1
    codes = sorted(v["code"] for v in json.loads(capsys.readouterr().out)["violations"])
    assert codes == ["IPL001", "IPL008"]
    assert main(["verify", "--policy", str(policy), "--no-cache", "--format", "json"]) == 1
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert (result["modules"], result["max_modules"]) == (4, 3)
