"""The README's "Adopt it on an existing project" walk, verbatim, on a copy of
``tests/fixtures_adopt/inferno``: every ``$ command`` of its console blocks runs in a shell (the
installed ``importpolicy`` first on ``PATH``) and must print exactly the lines that follow it; the
``# policy.toml`` block is the edit step. Also: ``importpolicy suggest`` itself (with and without a
policy, ``--output``/``--force``, ``--format json``, ``--limit``, never importing the sources, the
same bytes every run, a draft that loads)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HANG_CATCHER

from flake8_importpolicy.cli import main
from flake8_importpolicy.config.load import load_policy

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "tests" / "fixtures_adopt" / "inferno"


def readme_walk() -> list[tuple[str, str]]:
    """``(kind, text)`` steps of the README section: ``("run", command)`` with the expected output
    as ``("out", text)`` after it, and ``("write", policy text)``."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Adopt it on an existing project\n", 1)[1].split("\n## ", 1)[0]
    steps: list[tuple[str, str]] = []
    for lang, body in re.findall(r"```(console|toml)\n(.*?)```", section, re.DOTALL):
        if lang == "toml":
            assert body.startswith("# policy.toml\n")
            steps.append(("write", body.split("\n", 1)[1]))
            continue
        for chunk in re.split(r"^\$ ", body, flags=re.MULTILINE)[1:]:
            command, _, output = chunk.partition("\n")
            steps.append(("run", command))
            steps.append(("out", output))
    return steps


def test_the_readme_walk_runs_verbatim(tmp_path: Path) -> None:
    tree = Path(shutil.copytree(TREE, tmp_path / "inferno"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    steps = readme_walk()
    assert [text for kind, text in steps if kind == "run"] == [
        "importpolicy suggest --limit 4",
        "importpolicy check --write-baseline",
        "importpolicy check",
        "echo 'from .fused_allreduce_rms_norm import fused_allreduce_rms_norm' >> "
        "src/inferno/models/common/ops/__init__.py",
        "importpolicy check",
        "sed -i '/fused_allreduce_rms_norm/d' src/inferno/models/common/ops/__init__.py",
        "importpolicy check",
        "sed -i '/^import torch$/d' src/inferno/cli.py",
        "importpolicy check",
        "importpolicy check --write-baseline",
        "importpolicy check",
    ]
    codes = []
    command = None
    for kind, text in steps:
        if kind == "write":
            (tree / "policy.toml").write_text(text)
        elif kind == "run":
            command = text
        else:
            done = subprocess.run(["bash", "-c", command], cwd=tree, env=env, capture_output=True,
                                  text=True, timeout=HANG_CATCHER)
            assert done.stdout == text, f"$ {command}\n{done.stderr}"
            if command and command.startswith("importpolicy"):
                codes.append(done.returncode)
    assert codes == [0, 0, 0, 1, 0, 1, 0, 0]
    assert not (tree / "src" / "inferno" / "__pycache__").exists()  # nothing was imported


def suggest(*args: str, cwd: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    saved = Path.cwd()
    os.chdir(cwd)
    try:
        code = main(["suggest", *args])
    finally:
        os.chdir(saved)
    out, err = capsys.readouterr()
    return code, out, err


def test_suggest_never_imports_and_prints_the_same_draft(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = Path(shutil.copytree(TREE, tmp_path / "inferno"))
    marker = tmp_path / "imported"
    (tree / "src" / "inferno" / "logger.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n" + (TREE / "src/inferno/logger.py").read_text())
    first = suggest(cwd=tree, capsys=capsys)
    assert first[0] == 0 and not marker.exists()
    assert suggest(cwd=tree, capsys=capsys) == first
    assert not (tree / ".importpolicy_cache").exists()  # no policy yet: no cache written
    assert first[1].count("[light.") == 8
    assert suggest("--limit", "2", cwd=tree, capsys=capsys)[1].count("[light.") == 2


def test_suggest_output_force_and_a_draft_that_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = Path(shutil.copytree(TREE, tmp_path / "inferno"))
    code, out, err = suggest("--output", "policy.toml", cwd=tree, capsys=capsys)
    assert (code, out) == (0, "") and "wrote policy.toml: 8 light and 1 heavy candidates" in err
    policy = load_policy(tree / "policy.toml")
    assert [r.pattern.text for r in policy.light][:3] == ["inferno.logger", "inferno", "inferno.cli"]
    with pytest.raises(SystemExit) as exit_info:
        suggest("--output", "policy.toml", cwd=tree, capsys=capsys)
    assert exit_info.value.code == 2
    assert "policy.toml exists; pass --force to overwrite it" in capsys.readouterr().err


def test_suggest_with_a_policy_extends_it_and_lists_what_is_new(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = Path(shutil.copytree(TREE, tmp_path / "inferno"))
    (tree / "policy.toml").write_text(
        '[settings]\nsource-roots = ["src"]\n\n[heavy]\n"inferno.config" = "CUDA"\n\n'
        '[light."inferno.logger"]\nreason = "everywhere"\n')
    code, out, _ = suggest("--output", "draft.toml", cwd=tree, capsys=capsys)
    draft = (tree / "draft.toml").read_text()
    assert code == 0 and 'extends = ["policy.toml", "heavy-ml"]' in draft
    assert '[light."inferno.logger"]' not in draft and '[light."inferno.config"]' not in draft
    merged = load_policy(tree / "draft.toml")
    assert "inferno.logger" in [r.pattern.text for r in merged.light]
    code, out, _ = suggest("--format", "json", cwd=tree, capsys=capsys)
    data = json.loads(out)
    assert data["policy"] == "policy.toml" and data["known_light"] == ["inferno.logger"]
    cli = next(c for c in data["light"] if c["module"] == "inferno.cli")
    assert cli["why"] == ["entry-point"] and cli["entry_points"] == ["console_scripts:inferno"]
    assert cli["reaches"] == ["torch"]
    assert [h["module"] for h in data["heavy"]] == ["torch"]


def test_suggest_leaves_out_preset_entries_that_name_the_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """heavy-ml lists accelerate: on accelerate's own tree that entry is dropped (and said), so the
    package itself is a light candidate; the torch entry it imports stays."""
    package = tmp_path / "src" / "accelerate"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from .accelerator import Accelerator\n")
    (package / "accelerator.py").write_text("import torch\n\n\nclass Accelerator:\n    pass\n")
    code, out, _ = suggest(cwd=tmp_path, capsys=capsys)
    assert code == 0
    assert 'extends = ["heavy-ml"]  # heavy-ml modules imported: torch\n' in out
    assert ("# Left out: heavy-ml's \"accelerate\" (names this project's own package; a preset "
            "entry never applies to the project's own modules).\n") in out
    assert '[light."accelerate"]' in out
    data = json.loads(suggest("--format", "json", cwd=tmp_path, capsys=capsys)[1])
    assert data["dropped"] == [
        {"preset": "heavy-ml", "entry": "accelerate", "why": "names the project's own package"}]
    assert [h["module"] for h in data["heavy"]] == ["torch"]
