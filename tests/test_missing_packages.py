"""A light module's closure that reaches packages the interpreter does not have (issue 30 item 2).

- ``check`` warns once per missing package and light module (IPL006 ``not-installed``, at the first
  statement that reaches it), however many statements and modules of the closure import it or its
  submodules;
- ``from pkg.sub import Name`` never becomes a chain to a module ``pkg.sub.Name``: with ``pkg``
  installed (``pkg.sub`` is a plain module: CPython's ``_handle_fromlist`` is not called), and with
  ``pkg`` missing (importing it raises ``ModuleNotFoundError`` before any name of the fromlist is
  looked at). A fresh interpreter is the oracle.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import HANG_CATCHER

from flake8_importpolicy.cli import main

POLICY = """\
[heavy]
"app.heavy" = "slow"
"inst.sub.*" = "never a module: names of inst.sub"
"missingpkg.nn.*" = "never a module here: missingpkg is not installed"

[light."app.light"]
reason = "fast start"

[light."app.a"]
reason = "fast start"
"""

FILES = {
    "policy.toml": POLICY,
    "app/__init__.py": "",
    "app/heavy.py": "",
    "app/light.py": """\
        import missingpkg
        import missingpkg.ops
        from missingpkg import thing
        import app.a
        import app.b
        import othermissing.sub
        from inst.sub import Name
        from missingpkg.nn import Linear
    """,
    "app/a.py": """\
        import missingpkg.nn
        from missingpkg.nn import Linear
        from missingpkg.nn.functional import relu
    """,
    "app/b.py": "import missingpkg\nimport othermissing\n",
    "site/inst/__init__.py": "",
    "site/inst/sub.py": "class Name:\n    pass\n",
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))  # inst is installed, the others not
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main([*args, "--no-cache"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return code, out


def test_check_warns_once_per_missing_package_and_light_module(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = _run(capsys, "check")
    warnings = [line for line in out.splitlines() if "not-installed" in line]
    assert warnings == [
        "app/a.py:1:1: IPL006 light module app.a runs import-time code that cannot be resolved: "
        f"not-installed missingpkg (not found by {sys.executable})",
        "app/b.py:2:1: IPL006 light module app.light runs import-time code that cannot be resolved: "
        f"not-installed othermissing (not found by {sys.executable})",
        "app/light.py:1:1: IPL006 light module app.light runs import-time code that cannot be "
        f"resolved: not-installed missingpkg (not found by {sys.executable})",
    ]
    _, text = _run(capsys, "check", "--format", "json")
    sites = [(u["light"], u["module"]) for u in json.loads(text)["unresolved"]
             if u["construct"] == "not-installed"]
    assert sorted(sites) == [("app.a", "missingpkg"), ("app.light", "missingpkg"),
                             ("app.light", "othermissing")]


def test_from_import_of_a_name_is_never_a_module(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, ``from missingpkg.nn import Linear`` was a hop to a module ``missingpkg.nn.Linear``
    (an IPL001 "imports missingpkg.nn.Linear" under ``missingpkg.nn.*``) and ``why`` listed it."""
    _, out = _run(capsys, "check", "--format", "json")
    data = json.loads(out)
    named = {hop["imported"] for v in data["violations"] for hop in v["chain"]}
    named |= {v["heavy"] for v in data["violations"]}
    assert not {"inst.sub.Name", "missingpkg.nn.Linear", "missingpkg.nn.functional.relu"} & named
    for light in ("app.light", "app.a"):
        _, out = _run(capsys, "why", light, "--format", "json")
        modules = {entry["module"] for entry in json.loads(out)["modules"]}
        assert "missingpkg.nn" in modules or "missingpkg" in modules
        assert not {m for m in modules if m.rpartition(".")[2] in ("Name", "Linear", "relu")}, modules
    # the oracle: a fresh interpreter imports inst.sub and binds Name; no module inst.sub.Name
    env = {**os.environ, "PYTHONPATH": f"{project / 'site'}{os.pathsep}{project}"}
    done = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom inst.sub import Name\n"
         "print(sorted(m for m in sys.modules if m.startswith('inst')))\n"
         "try:\n    from missingpkg.nn import Linear\nexcept ModuleNotFoundError as e:\n"
         "    print(e.name)\n"],
        env=env, capture_output=True, text=True, timeout=HANG_CATCHER, check=True,
    )
    assert done.stdout.splitlines() == ["['inst', 'inst.sub']", "missingpkg"]
