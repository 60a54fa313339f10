"""Shared test helpers: fixture discovery, inline expectations and the runtime oracle."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"

_EXPECTATION = re.compile(r"#\s*(IPL\d{3}\b(?: same cause)?)")


@dataclass(frozen=True)
class Expectation:
    """An inline ``# IPL001`` comment: the code expected at that file's line."""

    path: str  # relative to the fixture directory, posix separators
    line: int
    code: str


def fixture_dirs() -> list[Path]:
    """Every fixture (a directory under tests/fixtures with a policy.toml), sorted."""
    return sorted(p.parent for p in FIXTURES.glob("*/policy.toml"))


def read_expectations(root: Path) -> set[Expectation]:
    """Collect ``# IPLnnn`` comments from every .py file under ``root`` and from its policy.toml
    (where IPL003/IPL004 are reported).

    A comment must start with the code (``# IPL001``); ``# noqa: IPL001`` is not an expectation.
    ``# IPL001 same cause`` marks a statement that reaches only forbidden modules an earlier statement
    already ran: it is listed under that statement's report (``Violation.covers``), not reported.
    """
    found: set[Expectation] = set()
    for path in sorted([*root.rglob("*.py"), root / "policy.toml"]):
        try:
            text = path.read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            for match in _EXPECTATION.finditer(line):
                found.add(Expectation(path.relative_to(root).as_posix(), number, match.group(1)))
    return found


# Runs in a fresh interpreter. Only builtins and the sys module are used before the import, so that
# the probe itself imports nothing a fixture could shadow (a fixture may define json.py).
_PROBE = r"""
import sys
out, module = sys.argv[1], sys.argv[2]
roots = sys.argv[3:]
sys.path[0:1] = roots
before = set(sys.modules)
error = None
try:
    __import__(module)
except BaseException as exc:
    error = type(exc).__name__ + ": " + str(exc)
after = {}
for name, mod in list(sys.modules.items()):
    if name not in before:
        after[name] = getattr(mod, "__file__", None)
# a fixture's stub torch.cuda records the functions called (tests/fixtures/x_assume/site-packages)
calls = getattr(sys.modules.get("torch.cuda"), "CALLS", None)
with open(out, "w") as handle:
    handle.write(repr({"modules": after, "error": error,
                       "calls": None if calls is None else [str(c) for c in calls]}))
"""


def run_import(
    module: str, roots: list[Path], python: str = sys.executable,
    environ: Mapping[str, str | None] | None = None,
) -> dict[str, str | None]:
    """Import ``module`` in a fresh interpreter with ``roots`` first on sys.path.

    Returns ``{module name: __file__}`` for every module that appeared in ``sys.modules``.

    Raises:
        AssertionError: if the import raised (the fixture is broken).
    """
    return run_import_recorded(module, roots, python, environ)[0]


def run_import_recorded(
    module: str, roots: list[Path], python: str = sys.executable,
    environ: Mapping[str, str | None] | None = None,
) -> tuple[dict[str, str | None], list[str] | None]:
    """:func:`run_import`, and the calls a fixture's stub ``torch.cuda`` recorded (its ``CALLS``;
    None when no ``torch.cuda`` with ``CALLS`` was imported). ``environ``: variables to set (a
    string) or unset (None) for the import, as a policy's ``[assume.environ]`` says."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.txt"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        for name, value in (environ or {}).items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        subprocess.run(
            [python, "-c", _PROBE, str(out), module, *map(str, roots)],
            cwd=tmp, env=env, check=True, capture_output=True, timeout=60,
        )
        data = ast.literal_eval(out.read_text())
    assert data["error"] is None, f"importing {module} raised {data['error']}"
    modules: dict[str, str | None] = data["modules"]
    return modules, data["calls"]


@dataclass(frozen=True)
class WorkflowCommand:
    """A GitHub Actions workflow command as the runner parses it (``ActionCommand.TryParseV2``)."""

    command: str
    properties: dict[str, str]
    data: str


def parse_workflow_command(line: str) -> WorkflowCommand | None:
    """The workflow command a line of a step's output is, parsed with the runner's rules, or None.

    The runner reads the output line by line (``\\n``, ``\\r\\n`` or ``\\r`` ends a line), trims the
    leading whitespace, and takes a line that starts with ``::`` and has a second ``::`` as
    ``::name key=value,key=value::data``; a property value is unescaped ``%0D``, ``%0A``, ``%3A``,
    ``%2C`` then ``%25``, the data ``%0D``, ``%0A`` then ``%25`` (actions/runner,
    ``src/Runner.Common/ActionCommand.cs``).
    """
    message = line.lstrip()
    if not message.startswith("::"):
        return None
    end = message.find("::", 2)
    if end < 0:
        return None
    info = message[2:end]
    name, _, rest = info.partition(" ")
    properties = {}
    for item in filter(None, rest.strip().split(",")):
        key, sep, value = item.partition("=")
        if sep and key and value:
            for escaped, token in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
                value = value.replace(escaped, token)
            properties[key] = value
    data = message[end + 2:]
    for escaped, token in (("%0D", "\r"), ("%0A", "\n"), ("%25", "%")):
        data = data.replace(escaped, token)
    return WorkflowCommand(name, properties, data)


def runner_lines(output: str) -> list[str]:
    """``output`` split into lines as the runner reads a step's output (``\\r\\n``, ``\\n`` or ``\\r``)."""
    return re.split(r"\r\n|\n|\r", output.removesuffix("\n"))
