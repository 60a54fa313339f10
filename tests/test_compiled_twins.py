"""mypyc-compiled packages (docs/semantics.md rule 6): the extension module wins path search, and the
engine analyses the ``.py`` source mypyc compiled it from, beside it, with the hop flagged
``compiled-twin``. The package is compiled here with the real mypyc (it ships with mypy); a fresh
interpreter that imports it is the oracle."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import HANG_CATCHER, run_import

from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.model.graph import Flag

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compiled")
    site = root / "site"
    files = {
        "site/fastpkg/__init__.py": (
            "import json\nfrom fastpkg import helper\n\n\ndef f() -> int:\n    return 1\n"
        ),
        "site/fastpkg/helper.py": "import heavydep\n\nX = 1\n",
        "site/heavydep/__init__.py": "",
        "app/app/__init__.py": "",
        "app/app/cli.py": "import fastpkg\n",
        "app/policy.toml": textwrap.dedent("""
            [settings]
            source-roots = ["."]
            external = "follow"
            [heavy]
            "heavydep" = "slow"
            [light."app.cli"]
            reason = "starts fast"
        """),
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    mypyc = shutil.which("mypyc", path=os.path.dirname(sys.executable)) or shutil.which("mypyc")
    if mypyc is None:
        pytest.skip("mypyc is not installed")
    built = subprocess.run(
        [mypyc, "fastpkg/__init__.py", "fastpkg/helper.py"], cwd=site, capture_output=True, text=True,
        timeout=HANG_CATCHER,
    )
    if built.returncode != 0:
        pytest.skip(f"mypyc could not compile (no C compiler?): {built.stderr[-300:]}")
    assert any(p.name.startswith("helper.") and p.suffix == ".so" for p in (site / "fastpkg").iterdir())
    return root


def test_a_compiled_module_is_analysed_through_its_source(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(tree / "site"))
    engine = PolicyEngine(load_policy(tree / "app" / "policy.toml"))
    report = engine.check()
    [violation] = report.violations
    assert [(hop.module, hop.imported) for hop in violation.chain] == [
        ("app.cli", "fastpkg"), ("fastpkg", "fastpkg.helper"), ("fastpkg.helper", "heavydep"),
    ]
    assert Flag.COMPILED_TWIN in violation.chain[0].flags
    assert Flag.COMPILED_TWIN in violation.chain[1].flags
    assert Flag.COMPILED_TWIN not in violation.chain[2].flags  # heavydep is plain Python
    resolved = engine.index.resolve_module("fastpkg.helper")
    assert resolved.compiled and resolved.path == tree / "site" / "fastpkg" / "helper.py"

    runtime = run_import("app.cli", [tree / "app", tree / "site"])
    assert {"fastpkg", "fastpkg.helper", "heavydep"} <= set(runtime)
    assert runtime["fastpkg.helper"].endswith(".so")  # the extension module is what ran
