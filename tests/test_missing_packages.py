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


GUARDED_UP_THE_CHAIN = {
    "policy.toml": """\
        [heavy]
        "app.heavy" = "slow"

        [light."app.light"]
        reason = "fast start"

        [light."app.direct"]
        reason = "fast start"
    """,
    "app/__init__.py": "",
    "app/heavy.py": "",
    "app/light.py": "import app.net\n",
    "app/direct.py": "import app.net.http2\n",
    "app/net/__init__.py": """\
        try:
            from app.net.http2 import H2
        except ImportError:
            H2 = None
    """,
    "app/net/http2.py": "import h2missing.config\nH2 = 1\n",
}
"""httpcore's shape: a ``try:`` over a from-import of a submodule whose own imports need a package
that is not installed (``h2``); ``app.direct`` imports that submodule outside any ``try:``."""


def test_a_missing_import_under_a_guarded_hop_is_not_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ImportError of ``import h2missing.config`` goes up to ``app.net``'s ``try:``, which
    catches it: ``app.light`` imports fine without h2missing, so no ``not-installed`` for it; the
    same import reached without a ``try:`` (``app.direct``) is still reported. Before, both light
    modules had it (on peft: 60 sites, h2, socksio and trio under httpcore's guarded imports). A
    fresh interpreter is the oracle."""
    for name, text in GUARDED_UP_THE_CHAIN.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    _, out = _run(capsys, "check", "--format", "json")
    sites = [(u["light"], u["module"], u["path"], u["line"])
             for u in json.loads(out)["unresolved"] if u["construct"] == "not-installed"]
    assert sites == [("app.direct", "h2missing", "app/net/http2.py", 1)]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    env.pop("PYTHONSAFEPATH", None)

    def fresh(module: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", f"import {module}, sys; print(sys.modules['app.net'].H2)"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_CATCHER,
        )

    light = fresh("app.light")
    assert (light.returncode, light.stdout) == (0, "None\n"), light.stderr
    direct = fresh("app.direct")
    assert direct.returncode == 1 and "No module named 'h2missing'" in direct.stderr, direct.stderr
