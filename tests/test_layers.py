"""The package's layers, checked by import-linter (the contracts are in setup.cfg).

``cli | flake8_checker | pytest_plugin`` > ``runtime`` > ``answers`` > ``output`` >
``analysis | config`` > ``model`` > ``codes`` > ``presets | schema`` (data): a module imports only
from layers below its own, and every module of the package is in a layer (``exhaustive``). Imports
inside functions count (import-linter sees every import statement), and so do imports under
``if TYPE_CHECKING:`` (a type from a higher layer is a dependency on it all the same). Modules of one
package import each other without cycles. Each test runs the real ``lint-imports``.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
from helpers import HANG_CATCHER

REPO = Path(__file__).resolve().parent.parent


def _lint_imports(
    config: Path, cwd: Path, pythonpath: Path | None = None
) -> subprocess.CompletedProcess[str]:
    script = Path(sysconfig.get_path("scripts")) / "lint-imports"
    command = [str(script)] if script.is_file() else [shutil.which("lint-imports") or "lint-imports"]
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [*command, str(config), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=HANG_CATCHER,
    )


def test_the_layers_hold() -> None:
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    contracts = [name for name in config.sections() if name.startswith("importlinter:contract:")]
    result = _lint_imports(REPO / "setup.cfg", REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(contracts)} kept, 0 broken." in result.stdout


@pytest.fixture()
def copy(tmp_path: Path) -> Path:
    """A copy of the package and its contracts, importable from ``tmp_path``."""
    shutil.copytree(REPO / "flake8_importpolicy", tmp_path / "flake8_importpolicy",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "setup.cfg", tmp_path / "setup.cfg")
    return tmp_path


def _add(copy: Path, module: str, text: str) -> None:
    path = copy / "flake8_importpolicy" / module
    path.write_text(path.read_text() + text)


@pytest.mark.parametrize("statement", [
    "\n\ndef _wrong_way() -> None:\n    from flake8_importpolicy.analysis import extract  # noqa\n",
    "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
    "    from flake8_importpolicy.analysis import extract  # noqa\n",
])
def test_a_wrong_way_import_breaks_the_layers(copy: Path, statement: str) -> None:
    _add(copy, "model/facts.py", statement)
    result = _lint_imports(copy / "setup.cfg", copy, pythonpath=copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Layers of flake8_importpolicy (dependencies flow one way) BROKEN" in result.stdout
    assert "flake8_importpolicy.model.facts -> flake8_importpolicy.analysis.extract" in result.stdout


def test_a_module_outside_every_layer_breaks_the_layers(copy: Path) -> None:
    """exhaustive: a new module of the package that no layer names is reported, not left unchecked."""
    (copy / "flake8_importpolicy" / "stray.py").write_text("from flake8_importpolicy import cli  # noqa\n")
    result = _lint_imports(copy / "setup.cfg", copy, pythonpath=copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "The following modules are not listed as layers:" in result.stdout
    assert "- flake8_importpolicy.stray" in result.stdout


def test_an_import_cycle_breaks_the_contract(copy: Path) -> None:
    _add(copy, "model/patterns.py",
         "\n\ndef _cycle() -> None:\n    from flake8_importpolicy.model import policy  # noqa\n")
    result = _lint_imports(copy / "setup.cfg", copy, pythonpath=copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "No import cycles between the modules of a package BROKEN" in result.stdout


@pytest.mark.parametrize(("importer", "imported", "contract"), [
    ("lookup", "flake8_importpolicy.analysis.hops.calls",
     "The import-time graph's concerns depend one way (analysis.hops) BROKEN"),
    ("calls", "flake8_importpolicy.analysis.hops.sites",
     "The import-time graph's concerns depend one way (analysis.hops) BROKEN"),
    ("sites", "flake8_importpolicy.analysis.graph",
     "No import cycles between the modules of a package BROKEN"),
])
def test_a_concern_of_the_graph_never_imports_up(
    copy: Path, importer: str, imported: str, contract: str
) -> None:
    """The graph's concerns (analysis/hops) import only the concerns below their own, and never
    the graph that puts them together."""
    _add(copy, f"analysis/hops/{importer}.py",
         f"\n\ndef _wrong_way() -> None:\n    import {imported}  # noqa\n")
    result = _lint_imports(copy / "setup.cfg", copy, pythonpath=copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert contract in result.stdout


def test_every_module_of_the_graphs_concerns_is_in_a_layer(copy: Path) -> None:
    (copy / "flake8_importpolicy" / "analysis" / "hops" / "extra.py").write_text("")
    result = _lint_imports(copy / "setup.cfg", copy, pythonpath=copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "flake8_importpolicy.analysis.hops.extra" in result.stdout


_IMPORTTIME = "The import-time walker's recorders depend one way (analysis.importtime) BROKEN"


@pytest.mark.parametrize(("importer", "imported"), [
    ("sites", "flake8_importpolicy.analysis.importtime.walker"),
    ("lazy", "flake8_importpolicy.analysis.importtime.walker"),
    ("calls", "flake8_importpolicy.analysis.importtime.lazy"),
    ("sites", "flake8_importpolicy.analysis.importtime.dynamic"),
    ("bindings", "flake8_importpolicy.analysis.importtime.flow"),
    ("expressions", "flake8_importpolicy.analysis.importtime.walker"),
    ("names", "flake8_importpolicy.analysis.importtime.expressions"),
    ("calls", "flake8_importpolicy.analysis.importtime.names"),
])
def test_a_recorder_never_imports_the_walker_or_up(copy: Path, importer: str, imported: str) -> None:
    """The walker's recorders (analysis/importtime) import only the modules below their own: never
    the walker, nor a recorder beside or above."""
    _add(copy, f"analysis/importtime/{importer}.py",
         f"\n\ndef _wrong_way() -> None:\n    import {imported}  # noqa\n")
    result = _lint_imports(copy / "setup.cfg", copy, pythonpath=copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert _IMPORTTIME in result.stdout


def test_every_module_of_the_walkers_state_is_in_a_layer(copy: Path) -> None:
    (copy / "flake8_importpolicy" / "analysis" / "importtime" / "extra.py").write_text("")
    result = _lint_imports(copy / "setup.cfg", copy, pythonpath=copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "flake8_importpolicy.analysis.importtime.extra" in result.stdout
