"""A symlinked source root switched (``src -> srcA`` re-pointed to ``srcB``): every warm client reports
what a cold run would. The warm indexes (answers, per-file, mypy) once kept answering clean until
``cache clear``: they watched the files they had read, all under ``srcA``, none of which changed.
They now also record what each source root as the policy names it (and each file read through a link)
resolves to, and are stale when that changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HANG_CATCHER

POLICY = """\
version = 1

[settings]
source-roots = ["src"]

[heavy]
"app.heavy" = "slow to import"

[light."app.light"]
reason = "imported at start-up"
"""
CLEAN = "import os\n"
HEAVY = "import app.heavy\n"


def _tree(root: Path) -> Path:
    for name, light in (("srcA", CLEAN), ("srcB", HEAVY)):
        (root / name / "app").mkdir(parents=True)
        (root / name / "app" / "__init__.py").write_text("")
        (root / name / "app" / "heavy.py").write_text("X = 1\n")
        (root / name / "app" / "light.py").write_text(light)
    (root / "policy.toml").write_text(POLICY)
    (root / "mypy.ini").write_text("[mypy]\nplugins = flake8_importpolicy.mypy\nmypy_path = src\n")
    (root / "src").symlink_to("srcA")
    return root


def _run(client: str, root: Path) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "MYPY"))}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    argv = {
        "check": ["-m", "flake8_importpolicy", "check"],
        "flake8": ["-m", "flake8", "--select", "IPL", "src/app/light.py"],
        "flake8-stdin": ["-m", "flake8", "--select", "IPL", "--stdin-display-name", "src/app/light.py",
                         "-"],
        "mypy": ["-m", "mypy", "-p", "app"],
    }[client]
    stdin = (root / "src" / "app" / "light.py").read_text() if client == "flake8-stdin" else None
    done = subprocess.run([sys.executable, *argv], cwd=root, env=env, input=stdin, capture_output=True,
                          text=True, timeout=HANG_CATCHER)
    return done.returncode, done.stdout


@pytest.mark.parametrize("client", ["check", "flake8", "flake8-stdin", "mypy"])
def test_a_switched_source_root_is_seen_warm(tmp_path: Path, client: str) -> None:
    root = _tree(tmp_path)
    for _ in range(2):  # cold, then warm: the index is written and read
        assert _run(client, root)[0] == 0
    (root / "src").unlink()
    (root / "src").symlink_to("srcB")
    status, out = _run(client, root)
    assert status == 1, out
    assert "IPL001 light module app.light imports app.heavy at import time" in out, out
    (root / "src").unlink()
    (root / "src").symlink_to("srcA")
    assert _run(client, root)[0] == 0
