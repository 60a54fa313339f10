"""Editors, for real: language servers over stdio driven by an LSP client (tests/lsp_client.py).

- pylsp (python-lsp-server) with its flake8 plugin, which runs ``flake8 -`` on the buffer and parses
  its output line by line: the flake8 checker's findings, and IPL900 for a broken policy, beside
  pyflakes' F401;
- ``importpolicy lsp``, the language server for editors without flake8.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsp_client import LspClient

FIXTURES = Path(__file__).parent / "fixtures_flake8"
OPS_INIT = "src/inferno/models/common/ops/__init__.py"
SEED_LINE = "from .fused_allreduce_rms_norm import fused_allreduce_rms_norm\n"
SEED_AFTER = "from .rms_norm import rms_norm\n"
PYLSP_SETTINGS = {"pylsp": {"plugins": {
    "flake8": {"enabled": True, "executable": str(Path(sys.executable).with_name("flake8"))},
    **{name: {"enabled": False} for name in (
        "pycodestyle", "pyflakes", "mccabe", "autopep8", "yapf", "pylint", "rope_autoimport")},
}}}


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "MYPY"))}


def _codes(diagnostics: list[dict[str, Any]], prefix: str = "") -> list[tuple[int, str]]:
    return sorted((d["range"]["start"]["line"] + 1, str(d.get("code"))) for d in diagnostics
                  if str(d.get("code")).startswith(prefix))


def _has_ipl(diagnostics: list[dict[str, Any]]) -> bool:
    return bool(_codes(diagnostics, "IPL"))


def _broken_policy_project(tmp_path: Path) -> tuple[Path, Path]:
    """The flake8 fixture project with an unknown settings key, and a module with an F401."""
    tree = Path(shutil.copytree(FIXTURES / "project", tmp_path / "project"))
    policy = tree / "policy.toml"
    policy.write_text(policy.read_text().replace("[settings]\n", '[settings]\nexternl = "stop"\n'))
    path = tree / "src" / "unused.py"
    path.write_text("import os\n")
    return tree, path


def _pylsp(root: Path) -> LspClient:
    pytest.importorskip("pylsp", reason="python-lsp-server is in the test extra")
    return LspClient([sys.executable, "-m", "pylsp"], root, env=_env(), settings=PYLSP_SETTINGS)


def test_pylsp_shows_an_unsaved_reexport_and_its_removal(tmp_path: Path) -> None:
    tree = Path(shutil.copytree(FIXTURES / "seed", tmp_path / "seed"))
    path = tree / OPS_INIT
    text = path.read_text()
    seeded = text.replace(SEED_AFTER, SEED_AFTER + SEED_LINE)
    with _pylsp(tree) as client:
        client.initialize(tree)
        client.open(path, text)
        assert _codes(client.wait_for_diagnostics(path), "IPL") == []
        client.change(path, seeded, 2)
        found = client.wait_for_diagnostics(path, where=_has_ipl)
        assert _codes(found, "IPL") == [(6, "IPL001")], found
        (ipl001,) = [d for d in found if d.get("code") == "IPL001"]
        assert "light module inferno.models.common.ops imports inferno.config" in ipl001["message"]
        client.change(path, text, 3)
        assert _codes(client.wait_for_diagnostics(path, where=lambda d: not _has_ipl(d)), "IPL") == []


def test_pylsp_shows_a_broken_policy_as_ipl900_beside_f401(tmp_path: Path) -> None:
    """pylsp parses flake8's output line by line: a "critical error" on stdout was no diagnostic at
    all (F401 vanished too); IPL900 at line 1 is shown like any finding."""
    tree, path = _broken_policy_project(tmp_path)
    with _pylsp(tree) as client:
        client.initialize(tree)
        client.open(path, "import os\n")
        found = client.wait_for_diagnostics(path)
    assert _codes(found) == [(1, "F401"), (1, "IPL900")], found
    (ipl900,) = [d for d in found if d.get("code") == "IPL900"]
    assert ipl900["message"].endswith(
        "policy.toml:4: settings.externl: unknown key; did you mean 'external'?")


# -- importpolicy lsp ----------------------------------------------------------------------------------


def _server(root: Path, *command: str) -> LspClient:
    pytest.importorskip("pygls", reason="pygls is in the lsp and test extras")
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parent.parent),
                                         str(Path(__file__).resolve().parent)])
    return LspClient(list(command or [sys.executable, "-m", "flake8_importpolicy", "lsp"]), root, env=env)


def _apply(text: str, edits: list[dict[str, Any]]) -> str:
    """The text after a client applies ``edits`` (LSP TextEdits, last first; an LSP line ends at
    CRLF, LF or CR only, not at a form feed or U+2028 as ``str.splitlines`` has it)."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: dict[str, int]) -> int:
        return offsets[min(position["line"], len(lines))] + position["character"]

    for edit in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        text = text[:offset(edit["range"]["start"])] + edit["newText"] + text[offset(edit["range"]["end"]):]
    return text


def test_the_language_server_shows_an_unsaved_reexport_and_its_removal(tmp_path: Path) -> None:
    """initialize, didOpen (the disk's clean text), didChange with an unsaved re-export
    (publishDiagnostics: IPL001 at its line), didChange removing it (diagnostics cleared)."""
    tree = Path(shutil.copytree(FIXTURES / "seed", tmp_path / "seed"))
    path = tree / OPS_INIT
    text = path.read_text()
    seeded = text.replace(SEED_AFTER, SEED_AFTER + SEED_LINE)
    with _server(tree) as client:
        result = client.initialize(tree)
        assert result["serverInfo"]["name"] == "importpolicy"
        client.open(path, text)
        assert client.wait_for_diagnostics(path) == []
        client.change(path, seeded, 2)
        (found,) = client.wait_for_diagnostics(path)
        assert (found["code"], found["range"]["start"], found["severity"], found["source"]) == (
            "IPL001", {"line": 5, "character": 0}, 1, "importpolicy")
        assert found["message"].startswith("light module inferno.models.common.ops imports inferno.config")
        client.change(path, text, 3)
        assert client.wait_for_diagnostics(path) == []
    assert path.read_text() == text  # the buffer never touched the disk


def test_the_language_server_shows_a_broken_policy_as_ipl900(tmp_path: Path) -> None:
    tree, path = _broken_policy_project(tmp_path)
    with _server(tree) as client:
        client.initialize(tree)
        client.open(path, "import os\n")
        (found,) = client.wait_for_diagnostics(path)
    assert (found["code"], found["range"]["start"]["line"]) == ("IPL900", 0)
    assert found["message"] == "policy.toml:4: settings.externl: unknown key; did you mean 'external'?"


def _code_actions(client: LspClient, tree: Path, path: Path, text: str) -> list[dict[str, Any]]:
    """Open ``path`` with ``text`` (one IPL001) and ask for the code actions of its diagnostic."""
    client.initialize(tree)
    client.open(path, text)
    (found,) = client.wait_for_diagnostics(path)
    actions: list[dict[str, Any]] = client.request("textDocument/codeAction", {
        "textDocument": {"uri": path.as_uri()}, "range": found["range"],
        "context": {"diagnostics": [found]}})
    return actions


def test_a_code_action_applied_clears_the_finding(tmp_path: Path) -> None:
    """The code-action plumbing, with a stand-in fix provider (tests/lsp_fixes.py): the quick fix's
    edit, applied by the client, removes the finding."""
    tree = Path(shutil.copytree(FIXTURES / "seed", tmp_path / "seed"))
    path = tree / OPS_INIT
    seeded = path.read_text().replace(SEED_AFTER, SEED_AFTER + SEED_LINE)
    program = ("from lsp_fixes import remove_the_statement; from flake8_importpolicy.lsp import serve; "
               "serve(remove_the_statement)")
    with _server(tree, sys.executable, "-c", program) as client:
        actions = _code_actions(client, tree, path, seeded)
        (action,) = actions
        assert (action["title"], action["kind"]) == ("Remove the import-time import", "quickfix")
        fixed = _apply(seeded, action["edit"]["changes"][path.as_uri()])
        assert fixed == seeded.replace(SEED_LINE, "")
        client.change(path, fixed, 2)
        assert client.wait_for_diagnostics(path) == []


def test_the_fixes_of_importpolicy_fix_are_code_actions_that_clear_the_finding(tmp_path: Path) -> None:
    """The server's own fix provider: for an unsaved re-export (the incident's shape), the code
    actions are the fixes ``importpolicy fix`` offers; each, applied as the client applies it, leaves
    ``importpolicy check`` clean and a fresh interpreter importing the light package without the
    heavy module, the re-exported name still working; the server's next diagnostics are empty."""
    tree = Path(shutil.copytree(FIXTURES / "seed", tmp_path / "seed"))
    path = tree / OPS_INIT
    seeded = path.read_text().replace(SEED_AFTER, SEED_AFTER + SEED_LINE)
    with _server(tree) as client:
        actions = _code_actions(client, tree, path, seeded)
        assert [a["kind"] for a in actions] == ["quickfix"] * len(actions)
        assert actions[0]["title"] == (
            "re-export fused_allreduce_rms_norm lazily (module __getattr__, PEP 562)")
        for number, action in enumerate(actions):
            copy = Path(shutil.copytree(tree, tmp_path / f"fixed{number}"))
            for uri, edits in action["edit"]["changes"].items():
                target = copy / Path(uri.removeprefix("file://")).relative_to(tree)
                before = seeded if target == copy / OPS_INIT else target.read_text()
                target.write_text(_apply(before, edits))
            checked = subprocess.run(
                [sys.executable, "-m", "flake8_importpolicy", "check", "--no-cache",
                 "--policy", str(copy / "policy.toml")], capture_output=True, text=True, env=_env())
            assert checked.returncode == 0, (action["title"], checked.stdout, checked.stderr)
            edited = sorted(".".join(Path(uri.removeprefix("file://")).relative_to(tree / "src")
                                     .with_suffix("").parts).removesuffix(".__init__")
                            for uri in action["edit"]["changes"])
            name_kept = number == 0  # the lazy re-export keeps the name; direct imports remove it
            oracle = subprocess.run(
                [sys.executable, "-c", "import importlib, sys; import inferno.models.common.ops; "
                 "print('inferno.config' in sys.modules); "
                 + ("from inferno.models.common.ops import fused_allreduce_rms_norm as f; "
                    "print(callable(f)); " if name_kept else "print(True); ")
                 + f"[importlib.import_module(m) for m in {edited!r}]; print('imported')"],
                cwd=copy / "src", capture_output=True, text=True, env=_env())
            assert oracle.stdout.split() == ["False", "True", "imported"], (action["title"], oracle)
        lazy = actions[0]["edit"]["changes"][path.as_uri()]
        client.change(path, _apply(seeded, lazy), 2)
        assert client.wait_for_diagnostics(path) == []


def test_the_language_server_exits_0_after_shutdown_and_exit(tmp_path: Path) -> None:
    """initialize, shutdown, exit: the server leaves with status 0 and says nothing of an internal
    error on stderr (pygls closes the stdout the command line flushed last: that was exit 3)."""
    from helpers import HANG_CATCHER

    tree = Path(shutil.copytree(FIXTURES / "seed", tmp_path / "seed"))
    client = _server(tree)
    client.initialize(tree)
    client.request("shutdown", None)
    client.notify("exit", None)
    code = client.proc.wait(timeout=HANG_CATCHER)
    err = client.proc.stderr.read() if client.proc.stderr is not None else b""
    client.close()
    assert (code, b"internal error" in err) == (0, False), err


def test_a_code_action_edits_the_column_fix_names_after_a_form_feed(tmp_path: Path) -> None:
    """Issue 27: a form feed (an Emacs page break, ``^L``) in a line above an edit is no LSP line
    break, but the server counted it as one (``str.splitlines``) when it turned the fix's columns
    into UTF-16 ones: the direct fix's ``.x`` for ``zqpkg.a()`` landed at column 0 of the line, a
    syntax error. Applied as a client applies it, the action leaves the importer running."""
    tree = tmp_path / "tree"
    (tree / "src/zqpkg").mkdir(parents=True)
    (tree / "src/app").mkdir()
    (tree / "policy.toml").write_text('[settings]\nsource-roots = ["src"]\n\n[heavy]\n'
                                      '"heavy" = "heavy"\n\n[light."zqpkg"]\nreason = "light"\n')
    (tree / "src/heavy.py").write_text("X = 1\n")
    (tree / "src/zqpkg/x.py").write_text('import heavy\n\n\ndef a():\n    return "a"\n')
    (tree / "src/app/__init__.py").write_text("")
    use = tree / "src/app/use.py"
    use.write_text('# page one\f\nimport zqpkg\n\f\nprint("ok", zqpkg.a())\n')
    path = tree / "src/zqpkg/__init__.py"
    text = "# kernels\f\n\f\nfrom .x import a\n"
    path.write_text(text)
    with _server(tree) as client:
        actions = _code_actions(client, tree, path, text)
    (direct,) = [a for a in actions if a["title"].startswith("import a from zqpkg.x")]
    for uri, edits in direct["edit"]["changes"].items():
        target = Path(uri.removeprefix("file://"))
        target.write_bytes(_apply(target.read_bytes().decode(), edits).encode())
    assert use.read_text() == '# page one\f\nimport zqpkg\nimport zqpkg.x\n\f\nprint("ok", zqpkg.x.a())\n'
    ran = subprocess.run([sys.executable, "-c", "import app.use"], cwd=tree / "src",
                         capture_output=True, text=True, env=_env())
    assert ran.stdout == "ok a\n", ran.stderr
