"""Policy discovery with someone else's ``policy.toml`` around (config/locate.py, the one walk every
client uses): a ``policy.toml`` holding none of importpolicy's tables is not ours and is passed over,
so ``[tool.importpolicy]`` in the project's ``pyproject.toml`` wins, under the CLI, flake8 and mypy.
A ``policy.toml`` of ours that is broken is reported, never skipped (IPL900 under flake8)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HANG_CATCHER

from flake8_importpolicy.config.locate import find_policy

FOREIGN = '# another tool\'s policy file\n[rules]\nmax-line = 100\n\n[[allow]]\nname = "x"\n'
PYPROJECT = """\
[tool.importpolicy]
version = 1

[tool.importpolicy.settings]
source-roots = ["src"]

[tool.importpolicy.heavy]
"app.heavy" = "slow to import"

[tool.importpolicy.light."app.light"]
reason = "imported at start-up"

[tool.mypy]
plugins = ["flake8_importpolicy.mypy"]
mypy_path = "src"
"""
IPL001 = ("src/app/light.py:1:1: IPL001 light module app.light imports app.heavy at import time "
          "(slow to import)")


def _project(root: Path, *, foreign_beside: bool = False) -> Path:
    (root / "policy.toml").write_text(FOREIGN)
    project = root / "project"
    (project / "src" / "app").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT)
    if foreign_beside:
        (project / "policy.toml").write_text(FOREIGN)
    (project / "src" / "app" / "__init__.py").write_text("")
    (project / "src" / "app" / "light.py").write_text("import app.heavy\nimport os\n")
    (project / "src" / "app" / "heavy.py").write_text("X = 1\n")
    return project


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "MYPY"))}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=HANG_CATCHER)


@pytest.mark.parametrize("foreign_beside", [False, True], ids=["in-a-parent", "beside-pyproject"])
def test_the_cli_passes_over_a_foreign_policy_toml(tmp_path: Path, foreign_beside: bool) -> None:
    project = _project(tmp_path, foreign_beside=foreign_beside)
    assert find_policy(project / "src" / "app") == (project / "pyproject.toml").resolve()
    done = _run(["-m", "flake8_importpolicy", "check", "--verbose"], project)
    assert done.returncode == 1, done
    assert done.stdout.startswith(IPL001), done
    skipped = [line for line in done.stderr.splitlines() if "skipped" in line]
    assert skipped == (["importpolicy: skipped policy.toml: it holds none of importpolicy's tables "
                        "(version, extends, settings, heavy, heavy-calls, light, ignore, assume)"]
                       if foreign_beside else []), done.stderr
    # Without a policy of ours anywhere, the parent's foreign file is passed over, and said so once.
    (project / "pyproject.toml").write_text("[tool.black]\n")
    done = _run(["-m", "flake8_importpolicy", "check", "-v"], project)
    assert done.returncode == 2, done
    assert done.stderr.count("it holds none of importpolicy's tables") == 1 + foreign_beside, done.stderr
    assert "no policy.toml or pyproject.toml with [tool.importpolicy] found" in done.stderr


def test_flake8_passes_over_a_foreign_policy_toml(tmp_path: Path) -> None:
    """It once stopped every flake8 run ("critical error", no E/F output) and won over pyproject.toml."""
    project = _project(tmp_path)
    done = _run(["-m", "flake8", "src"], project)
    assert (done.returncode, done.stderr) == (1, ""), done
    assert done.stdout.splitlines() == [
        f"{IPL001}: app.light -> app.heavy (src/app/light.py:1)",
        "src/app/light.py:1:1: F401 'app.heavy' imported but unused",
        "src/app/light.py:2:1: F401 'os' imported but unused",
    ]


def test_flake8_reports_a_broken_policy_toml_of_ours(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "policy.toml").write_text("version = 1\n[settings\n")  # ours: it has version
    done = _run(["-m", "flake8", "src/app/light.py"], project)
    assert done.returncode == 1, done
    assert done.stdout.splitlines()[0].startswith("src/app/light.py:1:1: IPL900 policy.toml:2: "), done


def test_mypy_passes_over_a_foreign_policy_toml(tmp_path: Path) -> None:
    project = _project(tmp_path)
    done = _run(["-m", "mypy", "-p", "app"], project)
    assert (done.returncode, done.stderr) == (1, ""), done
    assert done.stdout.splitlines()[0] == (
        "src/app/light.py:1: error: IPL001 light module app.light imports app.heavy at import time "
        "(slow to import): app.light -> app.heavy (src/app/light.py:1)  [import-policy]")
