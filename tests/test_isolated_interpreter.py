"""An interpreter that lacks the project's packages (pipx, pre-commit's own venv): an import on a
light module's path that it cannot find is IPL006 ``not-installed``, naming the interpreter, never a
silent OK. Real virtual environments: the project's, with a ``rich`` whose ``syntax`` module imports
the heavy ``pygments``, and an isolated one without either."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import HANG_CATCHER, make_venv

PACKAGE_ROOT = Path(__file__).resolve().parents[1]

POLICY = """\
[heavy]
"pygments" = "highlighting: slow to import"

[light."app.light"]
reason = "the command must start fast"
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """``(project, the project's interpreter, an isolated interpreter)``."""
    base = tmp_path_factory.mktemp("isolated")
    project = base / "project"
    (project / "app").mkdir(parents=True)
    (project / "policy.toml").write_text(POLICY, encoding="utf-8")
    (project / "app" / "__init__.py").write_text("", encoding="utf-8")
    (project / "app" / "light.py").write_text(textwrap.dedent("""\
        import os
        try:
            import ujson_is_optional
        except ImportError:
            ujson_is_optional = None
        import rich.syntax
    """), encoding="utf-8")
    projects = make_venv(base / "project-venv", {
        "rich/__init__.py": "",
        "rich/syntax.py": "import pygments\n",
        "pygments/__init__.py": "",
    })
    isolated = make_venv(base / "tool-venv", {})
    return project, projects, isolated


def _check(project: Path, *args: str, python: str = sys.executable) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(PACKAGE_ROOT)  # this checkout's importpolicy, in any interpreter
    done = subprocess.run(
        [python, "-m", "flake8_importpolicy", "check", "--no-cache", *args], cwd=project,
        env=env, capture_output=True, text=True, timeout=HANG_CATCHER,
    )
    assert done.returncode in (0, 1), done
    return done.returncode, done.stdout


def test_the_projects_interpreter_finds_the_chain(world: tuple[Path, Path, Path]) -> None:
    project, projects, _ = world
    code, out = _check(project, "--interpreter", str(projects))
    assert code == 1
    lines = out.splitlines()
    assert lines[:2] == [
        "app/light.py:6:1: IPL001 light module app.light imports pygments at import time "
        "(highlighting: slow to import)",
        "    app/light.py:6: app.light -> rich.syntax (import)",
    ]
    assert lines[2].endswith("/site-packages/rich/syntax.py:1: rich.syntax -> pygments (import)")
    assert "not-installed" not in out


@pytest.mark.parametrize("how", ["--interpreter", "running under it"])
def test_an_interpreter_without_the_package_says_so(world: tuple[Path, Path, Path], how: str) -> None:
    """The isolated interpreter named with ``--interpreter``, or running importpolicy itself (as
    pipx and pre-commit do): ``rich`` is one IPL006 site at the statement that imports it, naming
    the interpreter; the guarded optional import is not reported; ``--unresolved error`` fails. The
    heavy key of a package missing here is IPL007's note."""
    project, _, isolated = world
    args = ("--interpreter", str(isolated)) if how == "--interpreter" else ()
    python = sys.executable if how == "--interpreter" else str(isolated)
    code, out = _check(project, *args, python=python)
    assert code == 0, out
    assert out.splitlines() == [
        "app/light.py:6:1: IPL006 light module app.light runs import-time code that cannot be "
        f"resolved: not-installed rich (not found by {isolated})",
        "    app/light.py:6: app.light -> rich (parent-package)",
        "",
        "policy.toml:2: note: IPL007 [heavy] entry 'pygments' names no module; package 'pygments' is "
        "not installed for this interpreter",
        "",
        "No violations in 1 light module; 1 import-time site not resolved (IPL006).",
    ]
    code, out = _check(project, *args, "--unresolved", "error", "--format", "json", python=python)
    assert code == 1
    [site] = json.loads(out)["unresolved"]
    assert (site["construct"], site["module"]) == ("not-installed", "rich")
