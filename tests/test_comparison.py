"""docs/comparison.md, backed: each claim there is a fixture under tests/fixtures_comparison/.

For every fixture, ``importpolicy check``'s verdict is asserted; each peer installed here runs on the
same tree with the configuration kept beside it (``.importlinter``, ``ruff.toml``, ``tach.toml``, and
flake8-tidy-imports' ``--banned-modules``) and its (different) verdict is asserted too. import-linter
and ruff are in the ``test`` extra; tach and flake8-tidy-imports are skipped unless installed.

A verdict is ``(exit code, sorted "path:line" of what the tool flags)``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HANG_CATCHER

from flake8_importpolicy import cli

FIXTURES = Path(__file__).parent / "fixtures_comparison"
Verdict = tuple[int, list[str]]

# fixture: the heavy module of its policy, and each tool's verdict.
HEAVY = {
    "deferred_and_type_checking": "app.heavy",
    "parent_package": "app.config",
    "transitive": "app.heavy",
    "called_at_import_time": "app.heavy",
}
IMPORTPOLICY: dict[str, Verdict] = {
    # nothing heavy runs when app.ops.light is imported: clean
    "deferred_and_type_checking": (0, []),
    # the parent package's __init__ runs first and reaches app.config
    "parent_package": (1, ["app/ops/light.py:1"]),
    # reported in the light module, where the fix belongs; app.worker may import app.heavy
    "transitive": (1, ["app/ops/light.py:1"]),
    # the deferred import runs at import time because the light module calls the function
    "called_at_import_time": (1, ["app/ops/light.py:3"]),
}
IMPORT_LINTER: dict[str, Verdict] = {
    "deferred_and_type_checking": (1, ["app/ops/light.py:8", "app/ops/light.py:12"]),  # false positives
    "parent_package": (0, []),  # misses the parent package
    "transitive": (1, ["app/helpers.py:1", "app/ops/light.py:1"]),
    "called_at_import_time": (1, ["app/ops/light.py:1", "app/plugins.py:2"]),
}
RUFF_TID253: dict[str, Verdict] = {
    "deferred_and_type_checking": (0, []),
    "parent_package": (1, ["app/ops/fused.py:1"]),  # never the light module
    "transitive": (1, ["app/helpers.py:1", "app/worker.py:1"]),  # never the light module
    "called_at_import_time": (0, []),  # misses the call
}
FLAKE8_TIDY_IMPORTS: dict[str, Verdict] = {
    "deferred_and_type_checking": (1, ["app/ops/light.py:8", "app/ops/light.py:12"]),
    "parent_package": (1, ["app/ops/fused.py:1"]),
    "transitive": (1, ["app/helpers.py:1", "app/worker.py:1"]),
    "called_at_import_time": (1, ["app/plugins.py:2"]),
}
TACH: dict[str, Verdict] = {
    "deferred_and_type_checking": (1, ["app/ops/light.py:12"]),  # TYPE_CHECKING ignored by default
    "parent_package": (0, []),
    "transitive": (0, []),
    "called_at_import_time": (0, []),
}
NAMES = sorted(HEAVY)


def _sorted(places: list[str]) -> list[str]:
    def key(place: str) -> tuple[str, int]:
        path, _, line = place.rpartition(":")
        return path, int(line)

    return sorted(set(places), key=key)


def test_every_fixture_is_covered() -> None:
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) == NAMES
    for table in (IMPORTPOLICY, IMPORT_LINTER, RUFF_TID253, FLAKE8_TIDY_IMPORTS, TACH):
        assert sorted(table) == NAMES
        for _code, places in table.values():
            assert places == _sorted(places)


@pytest.mark.parametrize("name", NAMES)
def test_importpolicy(name: str) -> None:
    root = FIXTURES / name
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["check", "--policy", str(root / "policy.toml"), "--no-cache", "--format", "json"])
    report = json.loads(out.getvalue())
    assert report["problems"] == []
    assert (code, _sorted([f"{v['path']}:{v['line']}" for v in report["violations"]])) == IMPORTPOLICY[name]
    assert all(v["heavy"] == HEAVY[name] for v in report["violations"])


def _run(argv: list[str], root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=root, env={**os.environ, **env}, capture_output=True, text=True, timeout=HANG_CATCHER,
        check=False,
    )


_CHAIN_LINK = re.compile(r"^-?\s*([\w.]+) -> ([\w.]+) \((l\.[^)]*)\)$")


@pytest.mark.parametrize("name", NAMES)
def test_import_linter(name: str) -> None:
    pytest.importorskip("importlinter")
    root = FIXTURES / name
    done = _run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
         "sys.exit(lint_imports_command())", "--no-cache", "--no-logo", ".importlinter"],
        root, PYTHONPATH=str(root),
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    places = []
    for line in done.stdout.splitlines():
        link = _CHAIN_LINK.match(line.strip())
        if link:  # "app.ops.light -> app.heavy (l.8, l.12)": the lines are in the importer's file
            path = link.group(1).replace(".", "/") + ".py"
            places.extend(f"{path}:{number}" for number in re.findall(r"l\.(\d+)", link.group(3)))
    assert (done.returncode, _sorted(places)) == IMPORT_LINTER[name], done.stdout


@pytest.mark.parametrize("name", NAMES)
def test_ruff_tid253(name: str) -> None:
    ruff = pytest.importorskip("ruff.__main__")
    root = FIXTURES / name
    done = _run(
        [ruff.find_ruff_bin(), "check", "--no-cache", "--config", "ruff.toml", "--output-format", "json",
         "."],
        root,
    )
    assert done.returncode in (0, 1), done.stderr
    found = json.loads(done.stdout)
    assert {item["code"] for item in found} <= {"TID253"}
    places = [
        f"{Path(item['filename']).relative_to(root.resolve()).as_posix()}:{item['location']['row']}"
        for item in found
    ]
    assert (done.returncode, _sorted(places)) == RUFF_TID253[name]


@pytest.mark.parametrize("name", NAMES)
def test_flake8_tidy_imports(name: str) -> None:
    if importlib.util.find_spec("flake8_tidy_imports") is None:
        pytest.skip("flake8-tidy-imports is not installed")
    root = FIXTURES / name
    done = _run(
        [sys.executable, "-m", "flake8", "--isolated", "--select", "I25", "--banned-modules",
         f"{HEAVY[name]} = heavy", "app"],
        root,
    )
    places = [line.split(":")[0] + ":" + line.split(":")[1] for line in done.stdout.splitlines()]
    assert all(" I251 " in line for line in done.stdout.splitlines())
    assert (done.returncode, _sorted(places)) == FLAKE8_TIDY_IMPORTS[name]


_TACH_FAIL = re.compile(r"^\[FAIL\] ([^:]+):(\d+): ")


@pytest.mark.parametrize("name", NAMES)
def test_tach(name: str) -> None:
    tach = shutil.which("tach")
    if tach is None:
        pytest.skip("tach is not installed")
    done = _run([tach, "check"], FIXTURES / name)
    places = [
        f"{m.group(1)}:{m.group(2)}"
        for m in map(_TACH_FAIL.match, (done.stdout + done.stderr).splitlines()) if m
    ]
    assert (done.returncode, _sorted(places)) == TACH[name], done.stdout + done.stderr


def test_docs_cite_every_fixture() -> None:
    text = (Path(__file__).parents[1] / "docs" / "comparison.md").read_text(encoding="utf-8")
    for name in NAMES:
        assert f"(../tests/fixtures_comparison/{name})" in text
