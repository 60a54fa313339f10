"""The embedded examples do what their READMEs say, with the real command line.

- ``examples/cuda_preset``: the torch-cuda preset and an ``[assume]`` entry, without torch installed:
  ``importpolicy check`` exits 1 with a chain ending in a torch.cuda call that names the assumption,
  and 0 after the fix its README documents (applied here to a copy).
- ``examples/cuda_fork``: the project README's "What it prints" is what the README's first command
  (``importpolicy check --policy examples/cuda_fork/policy.toml``, at the repository's top) prints,
  verbatim.
- the README's test command is the last line of ``.ci/run``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from helpers import HANG_CATCHER

REPO = Path(__file__).resolve().parent.parent
PRESET_EXAMPLE = REPO / "examples" / "cuda_preset"


def _check(policy: Path) -> subprocess.CompletedProcess[str]:
    """``check --policy POLICY`` from the repository's top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return subprocess.run(
        [sys.executable, "-m", "flake8_importpolicy", "check", "--no-cache", "--policy", str(policy)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=HANG_CATCHER,
    )


def _has_torch() -> bool:
    """Whether the interpreter running the tests has torch (the README's runs are without)."""
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def test_cuda_preset_example_fails_as_documented() -> None:
    result = _check(PRESET_EXAMPLE / "policy.toml")
    assert result.returncode == 1, result.stdout + result.stderr
    readme = (PRESET_EXAMPLE / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    start = lines.index("    $ importpolicy check --policy examples/cuda_preset/policy.toml") + 1
    end = lines.index("    Found 1 violation in 1 light module, 1 import-time site not resolved "
                      "(IPL006).", start) + 1
    block = [line.removeprefix("    ") for line in lines[start:end]]
    if _has_torch():  # the README's run is without torch: its not-installed site is not reported
        block = [*block[:4], "Found 1 violation in 1 light module."]
    shown = re.sub(r"\(not found by [^)]*\)", "(not found by .venv/bin/python)", result.stdout)
    assert shown.splitlines() == block
    chain = result.stdout.splitlines()[1:3]
    assert chain[-1].endswith(
        'torch.cuda.get_device_capability() (call, assuming "kiln.platforms.current_platform.is_rocm()"'
        " = false)"
    )


def test_cuda_preset_example_is_clean_after_the_documented_fix(tmp_path: Path) -> None:
    copy = tmp_path / "cuda_preset"
    shutil.copytree(PRESET_EXAMPLE, copy)
    readme = (copy / "README.md").read_text(encoding="utf-8")
    fix = re.search(r"## The fix.*?```python\n(.*?)```", readme, re.S)
    assert fix is not None
    module = copy / "src" / "kiln" / "ops" / "layernorm.py"
    lines = module.read_text().splitlines(keepends=True)
    assert lines[6].startswith("if current_platform.is_rocm():") and lines[10].startswith("    _CAPABILITY")
    fixed = ["import functools\n", *lines[:6], fix.group(1), *lines[11:]]
    module.write_text("".join(fixed))
    result = _check(copy / "policy.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    if _has_torch():
        assert result.stdout.startswith("OK")
    else:
        assert result.stdout.endswith(
            "\nNo violations in 1 light module; 1 import-time site not resolved (IPL006).\n")


def test_readme_what_it_prints_is_the_cuda_fork_examples_output() -> None:
    """README's "What it prints" block is, line for line, what the README's first command prints
    where the README runs it: ``importpolicy check --policy examples/cuda_fork/policy.toml`` at the
    repository's top (its "use instead" command then names ``--policy`` and the file from there)."""
    import shlex

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    [first] = re.findall(r"^    python -m pip install \. && (importpolicy .*)$", readme, re.MULTILINE)
    assert first == "importpolicy check --policy examples/cuda_fork/policy.toml"
    block = re.search(r"## What it prints\n.*?```\n(.*?)```", readme, re.S)
    assert block is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    result = subprocess.run([sys.executable, "-m", "flake8_importpolicy", *shlex.split(first)[1:]],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=HANG_CATCHER)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == block.group(1)


def test_readme_test_command_is_the_one_ci_runs() -> None:
    """The README's test command is what ``.ci/run`` runs last, word for word (the brief: "the
    README's test command is the one CI runs")."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    [command] = re.findall(r"^    python -m pip install -e '\.\[test\]' && (python -m pytest.*)$", readme,
                           re.MULTILINE)
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == command
    assert "python -m pip install -e '.[test]'" in ci
