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
from flake8_importpolicy.config.project import find_entry_points

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
    # the walk's final policy passes the runtime proof: verify counts the budgets as check does
    # (logging is 1 module, not the 13 standard-library modules logging imports itself)
    done = subprocess.run(["importpolicy", "verify"], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=HANG_CATCHER)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  modules: 3 executed, counted as max-modules counts (within max-modules = 3)\n" \
        in done.stdout
    assert "  modules: 7 executed, counted as max-modules counts (within max-modules = 7)\n" \
        in done.stdout


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
    assert [r.pattern.text for r in policy.light][:3] == ["inferno", "inferno.cli", "inferno.logger"]
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


def test_suggest_drafts_the_product_not_its_tests_with_a_forbid_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A flat layout with tests/ and examples/ that import the package's helpers more than anything
    else (as on OpenRLHF and peft): neither is a candidate, their imports do not rank the helpers
    up, the top-level package and the module ``setup.py``'s console script names come first, and
    each candidate that reaches a heavy module today gets a drafted ``forbid``."""
    (tmp_path / "setup.py").write_text(
        'from setuptools import setup\n\nsetup(\n    name="peftx",\n'
        '    entry_points={"console_scripts": ["peftx-cli = peftx.cli:main"]},\n)\n')
    files = {
        "peftx/__init__.py": "from .tuners import lora\nfrom .mapping import get\n",
        "peftx/tuners/__init__.py": "import torch\n",
        "peftx/tuners/lora.py": "import torch\nfrom peftx.utils import x\n",
        "peftx/utils.py": "x = 1\n",
        "peftx/mapping.py": "from peftx.utils import x\n\n\ndef get() -> None:\n    pass\n",
        "peftx/cli.py": "def main() -> None:\n    from peftx import tuners\n",
        "tests/__init__.py": "",
        "examples/__init__.py": "",
    }
    for number in range(4):
        files[f"tests/test_{number}.py"] = "import peftx\nimport peftx.utils\nimport peftx.mapping\n"
        files[f"examples/ex_{number}.py"] = "import peftx.utils\nimport peftx.mapping\n"
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    data = json.loads(suggest("--format", "json", cwd=tmp_path, capsys=capsys)[1])
    assert [(c["module"], c["why"], c["forbid"]) for c in data["light"]] == [
        ("peftx", ["package"], ["torch"]),
        ("peftx.cli", ["entry-point"], ["torch"]),
        ("peftx.tuners", ["package"], ["torch"]),
    ]
    assert data["light"][1]["entry_points"] == ["console_scripts:peftx-cli"]
    assert [h["module"] for h in data["heavy"]] == ["torch"]
    # --limit never drops the top-level package or a console script's module
    limited = json.loads(suggest("--format", "json", "--limit", "1", cwd=tmp_path, capsys=capsys)[1])
    assert [c["module"] for c in limited["light"]] == ["peftx", "peftx.cli"]
    code, out, _ = suggest(cwd=tmp_path, capsys=capsys)
    assert code == 0
    assert ('[light."peftx"]\nreason = "TODO: why it must stay light"\n'
            "# what it must not import: delete what it may (it reaches the marked ones today)\n"
            'forbid = [\n    "torch",  # reached today\n]\n') in out
    (tmp_path / "policy.toml").write_text(out)
    policy = load_policy(tmp_path / "policy.toml")
    assert [r.pattern.text for r in policy.light] == ["peftx", "peftx.cli", "peftx.tuners"]


def test_a_test_segment_anywhere_keeps_a_module_out_of_the_draft(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On accelerate 1.16.0, suggest proposed ``accelerate.test_utils.scripts`` and
    ``accelerate.test_utils.scripts.external_deps`` as light candidates: only the last segment was
    matched against ``test_*``. A ``test_*`` (or ``*_test``) segment anywhere in the name keeps a
    module out, as docs/adopt.md says, and its imports do not count as importers."""
    files = {
        "accx/__init__.py": "from .state import State\n",
        "accx/state.py": "class State:\n    pass\n",
        "accx/utils/__init__.py": "import torch\n",
        "accx/test_utils/__init__.py": "from .testing import run\n",
        "accx/test_utils/testing.py": "import accx.utils\n\n\ndef run() -> None:\n    pass\n",
        "accx/test_utils/scripts/__init__.py": "",
        "accx/test_utils/scripts/external_deps/__init__.py": "",
        "accx/integration_test/__init__.py": "",
        "accx/integration_test/runner/__init__.py": "",
    }
    for number in range(4):
        files[f"accx/test_utils/scripts/test_{number}.py"] = "import accx.utils\n"
        files[f"accx/test_utils/scripts/external_deps/script_{number}.py"] = "import accx.utils\n"
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    data = json.loads(suggest("--format", "json", cwd=tmp_path, capsys=capsys)[1])
    assert [c["module"] for c in data["light"]] == ["accx", "accx.utils"]
    assert [c["importers"] for c in data["light"]] == [0, 0]


@pytest.mark.parametrize("venv", [True, False])
def test_the_peft_walks_baseline_edit_works_with_and_without_an_interpreter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], venv: bool
) -> None:
    """docs/adopt.md's peft walk added ``baseline =`` after the draft's ``interpreter =`` line: when
    suggest found no environment there is no such line, and the ``sed`` silently did nothing. Its
    edit (read from the doc, run in a shell) names the baseline in either draft."""
    adopt = (ROOT / "docs" / "adopt.md").read_text(encoding="utf-8")
    section = adopt.split("## A walk on peft 0.13.2\n", 1)[1]
    [edit] = re.findall(r"^\$ (sed -i .*)$", section, re.MULTILINE)
    (tmp_path / "src/pkg").mkdir(parents=True)
    (tmp_path / "src/pkg/__init__.py").write_text("import torch\n")
    if venv:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / ".venv")],
                       check=True, timeout=HANG_CATCHER)
    code, _, _ = suggest("--output", "policy.toml", cwd=tmp_path, capsys=capsys)
    assert code == 0
    assert ("interpreter = " in (tmp_path / "policy.toml").read_text()) is venv
    subprocess.run(["bash", "-c", edit], cwd=tmp_path, check=True, timeout=HANG_CATCHER)
    policy = load_policy(tmp_path / "policy.toml")
    assert policy.settings.baseline == tmp_path / "importpolicy-baseline.json"


def test_console_scripts_of_setup_py_are_read_never_run(tmp_path: Path) -> None:
    """accelerate, peft and OpenRLHF declare theirs in setup.py: a dict literal, or a module-level
    name assigned one; a computed value is skipped, a broken file gives nothing, nothing runs."""
    marker = tmp_path / "ran"
    (tmp_path / "setup.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "from setuptools import setup\n"
        'points = {"console_scripts": ["acc = accelerate.commands.accelerate_cli:main",\n'
        '                              "acc-config=accelerate.commands.config:main"],\n'
        '          "other": "x = pkg.plugin:hook", "computed": make()}\n'
        "setup(name='accelerate', entry_points=points)\n")
    assert find_entry_points([tmp_path]) == {
        "accelerate.commands.accelerate_cli": ("console_scripts:acc",),
        "accelerate.commands.config": ("console_scripts:acc-config",),
        "pkg.plugin": ("other:x",),
    }
    assert not marker.exists()
    (tmp_path / "setup.py").write_text("setup(entry_points={'console_scripts': [\n")
    assert find_entry_points([tmp_path]) == {}


def test_the_baseline_example_of_docs_adopt_is_what_check_writes(tmp_path: Path) -> None:
    """docs/adopt.md's baseline names modules of the README's walk, as --write-baseline records
    them with the incident's re-export added (it named a module the tree does not have)."""
    tree = Path(shutil.copytree(TREE, tmp_path / "inferno"))
    (tree / "policy.toml").write_text(next(text for kind, text in readme_walk() if kind == "write"))
    ops = tree / "src/inferno/models/common/ops/__init__.py"
    ops.write_text(ops.read_text() + "from .fused_allreduce_rms_norm import fused_allreduce_rms_norm\n")
    saved = Path.cwd()
    os.chdir(tree)
    try:
        assert main(["check", "--write-baseline"]) == 0
    finally:
        os.chdir(saved)
    written = json.loads((tree / "importpolicy-baseline.json").read_text())["entries"]
    adopt = (ROOT / "docs" / "adopt.md").read_text(encoding="utf-8")
    example = json.loads(adopt.split("## The baseline\n", 1)[1].split("```json\n", 1)[1].split("```", 1)[0])
    assert example["entries"] and all(entry in written for entry in example["entries"])


def test_suggest_names_the_projects_interpreter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interpreter decides what third-party imports resolve to (with the tool's own venv,
    accelerate's analysis wandered into the tool's test dependencies): the draft names the
    project's .venv (or venv, or the one --interpreter names) and the analysis runs on it."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("import json\n")
    code, out, _ = suggest(cwd=tmp_path, capsys=capsys)
    assert code == 0 and "interpreter =" not in out
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / ".venv")],
                   check=True, timeout=HANG_CATCHER)
    code, out, _ = suggest(cwd=tmp_path, capsys=capsys)
    assert code == 0 and '\n[settings]\nsource-roots = ["."]\ninterpreter = ".venv/bin/python"\n' in out
    (tmp_path / "policy.toml").write_text(out)
    assert load_policy(tmp_path / "policy.toml").settings.interpreter == tmp_path / ".venv/bin/python"
    (tmp_path / "policy.toml").unlink()
    data = json.loads(suggest("--format", "json", cwd=tmp_path, capsys=capsys)[1])
    assert data["interpreter"] == ".venv/bin/python"
    data = json.loads(suggest("--format", "json", "--interpreter", sys.executable, cwd=tmp_path,
                              capsys=capsys)[1])
    assert data["interpreter"] == Path(sys.executable).absolute().as_posix()


def test_suggest_over_a_policy_without_interpreter_names_the_projects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Extend mode (a policy exists): a policy that names no interpreter gets the project's .venv
    in the draft that extends it (issue 30 item 2), and the draft loads with the base's source
    roots and that interpreter; a policy that names one keeps it (the draft names none)."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("import json\n")
    (tmp_path / "policy.toml").write_text('[settings]\nsource-roots = ["."]\n\n[light."pkg"]\nreason = "r"\n')
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / ".venv")],
                   check=True, timeout=HANG_CATCHER)
    code, out, _ = suggest(cwd=tmp_path, capsys=capsys)
    assert code == 0 and '\n[settings]\ninterpreter = ".venv/bin/python"\n' in out, out
    (tmp_path / "draft.toml").write_text(out)
    draft = load_policy(tmp_path / "draft.toml")
    assert draft.settings.interpreter == tmp_path / ".venv/bin/python"
    assert draft.settings.source_roots == (tmp_path.resolve(),)
    (tmp_path / "policy.toml").write_text(
        f'[settings]\nsource-roots = ["."]\ninterpreter = {json.dumps(sys.executable)}\n\n'
        '[light."pkg"]\nreason = "r"\n')
    code, out, _ = suggest(cwd=tmp_path, capsys=capsys)
    assert code == 0 and "interpreter =" not in out, out
