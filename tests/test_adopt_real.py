"""docs/adopt.md's walk on a real ML library: peft 0.13.2, downloaded from the package index at that
pinned version (tests/real_projects.py: cached outside the repository, checked by its SHA-256),
unpacked, with a ``.venv`` holding stand-ins for torch, transformers and the other dependencies its
sources import. Every ``$ command`` of the section's console block runs in a shell in the unpacked
directory (the installed ``importpolicy`` first on ``PATH``) and must print the lines that follow it
(``...`` stands for lines left out; times, the Python version, its path and how many modules
executed are compared as placeholders). Issue 30's "done when": the draft's first light candidate
is the top package, no test or example module is a candidate, ``interpreter`` is set;
``check --write-baseline``; ``check`` clean; ``verify`` passing with the baseline."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HANG_CATCHER
from real_projects import PEFT, find_sdist, make_venv, unpack, write_standins

from flake8_importpolicy.config.load import load_policy

ROOT = Path(__file__).resolve().parent.parent


def docs_walk() -> list[tuple[str, str]]:
    """``(command, expected output)`` of docs/adopt.md's peft walk."""
    adopt = (ROOT / "docs" / "adopt.md").read_text(encoding="utf-8")
    section = adopt.split("## A walk on peft 0.13.2\n", 1)[1].split("\n## ", 1)[0]
    (body,) = re.findall(r"```console\n(.*?)```", section, re.DOTALL)
    steps = []
    for chunk in re.split(r"^\$ ", body, flags=re.MULTILINE)[1:]:
        command, _, output = chunk.partition("\n")
        steps.append((command, output))
    return steps


def shown(text: str, tree: Path) -> list[str]:
    """``text``'s lines with what varies between runs replaced by placeholders."""
    text = text.replace(str(tree), "/path/to/peft-0.13.2")
    text = re.sub(r"\b\d+\.\d+s\b", "<s>", text)
    text = re.sub(r"Python 3\.\d+\.\d+", "Python <version>", text)
    text = re.sub(r"\b\d+ modules executed", "<n> modules executed", text)
    return text.splitlines()


def matches(expected: list[str], actual: list[str]) -> bool:
    """``actual`` is ``expected``, where a ``...`` line of ``expected`` stands for any lines."""
    if "..." not in expected:
        return actual == expected
    cut = expected.index("...")
    head, tail = expected[:cut], expected[cut + 1:]
    return (len(actual) >= len(head) + len(tail) and actual[:len(head)] == head
            and actual[len(actual) - len(tail):] == tail)


@pytest.mark.slow
def test_the_peft_walk_of_docs_adopt_runs_verbatim(tmp_path: Path) -> None:
    sdist = find_sdist(PEFT)
    if isinstance(sdist, str):
        pytest.skip(sdist)
    tree = unpack(sdist, tmp_path)
    stood_in = write_standins(tree / "src", make_venv(tree / ".venv"))
    assert {"torch", "torch.nn", "transformers", "accelerate"} <= set(stood_in)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    steps = docs_walk()
    assert [command for command, _ in steps] == [
        "importpolicy suggest --output policy.toml",
        "importpolicy check --write-baseline importpolicy-baseline.json",
        "sed -i 's|^\\[settings\\]$|&\\nbaseline = \"importpolicy-baseline.json\"|' policy.toml",
        "grep -n '^baseline = ' policy.toml",
        "importpolicy check",
        "importpolicy verify",
    ]
    codes = []
    for command, expected in steps:
        done = subprocess.run(["bash", "-c", command], cwd=tree, env=env, capture_output=True,
                              text=True, timeout=HANG_CATCHER)
        assert matches(shown(expected, tree), shown(done.stderr + done.stdout, tree)), \
            f"$ {command}\n{done.stderr}{done.stdout}"
        codes.append(done.returncode)
        if command.startswith("importpolicy suggest"):
            draft = load_policy(tree / "policy.toml")
            light = [rule.pattern.text for rule in draft.light]
            assert light[0] == "peft"
            segments = {"test", "tests", "example", "examples", "docs", "benchmarks"}
            assert not [name for name in light if segments & set(name.split("."))]
            assert draft.settings.interpreter == tree / ".venv" / "bin" / "python"
    assert codes == [0, 0, 0, 0, 0, 0]
