"""Shared test helpers: fixture discovery, inline expectations and the runtime oracle."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"

DOCS_URL = "https://github.com/flake8-importpolicy/flake8-importpolicy/blob/main/docs"
"""Where messages send the user for the docs: the repository's, since an installed package has no
docs/ tree (written out here, not taken from the package, so that a test checks the address)."""

HANG_CATCHER = 600.0
"""Seconds after which a subprocess a test started counts as hung (``subprocess.TimeoutExpired``
fails the test): one limit for the whole suite, far above what any run takes on a loaded machine. It
catches hangs and never measures speed: no test bounds a duration; speed is measured in
``benchmarks/``."""

_EXPECTATION = re.compile(r"#\s*(?P<code>IPL\d{3})\b(?P<rest>[^#]*)")
_POSITIONED = re.compile(r":\s+(?:(?P<col>\d+)\s+)?(?P<text>\S.*?)\s*")


@dataclass(frozen=True)
class Expectation:
    """An inline expectation, flake8-bugbear's style: ``# IPL001: 0 inferno.config`` expects an
    IPL001 at that line and column (0-based, as ``ast`` counts) whose message contains
    ``inferno.config`` (see :func:`read_expectations`).

    Attributes:
        path: relative to the fixture directory, posix separators.
        line: 1-based.
        code: ``IPL001``, or ``IPL001 same cause`` for a statement listed under an earlier one's report.
        col: 0-based; None for a finding reported at a line only (a policy problem, an unanalysable
            module: IPL003, IPL004, IPL005, IPL007) and for a ``same cause`` line.
        text: the message's distinguishing part (the forbidden module, the stale pattern, ...); empty
            for a ``same cause`` line.
    """

    path: str
    line: int
    code: str
    col: int | None
    text: str

    def matches(self, reported: Reported) -> bool:
        """True when ``reported`` is at this position with this code and its message contains
        :attr:`text`, not as part of a longer dotted name (``app.h`` is not in ``app.h.x``)."""
        if (reported.path, reported.line, reported.code, reported.col) != (
            self.path, self.line, self.code, self.col
        ):
            return False
        before = r"(?<![\w.])" if re.match(r"\w", self.text) else ""
        after = r"(?![\w.])" if re.search(r"\w\Z", self.text) else ""
        return re.search(before + re.escape(self.text) + after, reported.message) is not None


@dataclass(frozen=True)
class Reported:
    """A finding as an adapter reported it, in an :class:`Expectation`'s terms: ``col`` 0-based (None
    where the finding has a line only), ``message`` the text after the code."""

    path: str
    line: int
    code: str
    col: int | None
    message: str


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root`` (each text dedented, leading line breaks
    dropped), making the directories; returns ``root``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


INSTALLED_SITES = {
    "policy.toml": """
        [settings]
        external = "follow"
        [heavy]
        "app.heavy" = "slow to import"
        [light."app.light"]
        reason = "must start fast"
    """,
    "app/__init__.py": "",
    "app/heavy.py": "",
    "app/light.py": "import os\nimport tp\nfrom app.dyn import X\n",
    "app/dyn.py": "import importlib\nX = 1\nimportlib.import_module(__name__ + str(X))\n",
}
"""A light module reaching first-party dynamic code (``app.dyn``) and an installed package ``tp``
(:data:`INSTALLED_TP`, put on ``PYTHONPATH`` outside the project) whose import-time code the engine
cannot resolve at four sites."""

INSTALLED_TP = {
    "tp/__init__.py": """
        from tp import core


        def run(hook):
            hook()


        HOOKS = [print]
        HOOKS.append(print)


        run(print)
        HOOKS[0]()
        HOOKS[1]()
    """,
    "tp/core.py": "import importlib\nimportlib.import_module(str(1))\n",
}


def make_venv(where: Path, packages: Mapping[str, str]) -> Path:
    """A real virtual environment at ``where`` (no pip: nothing is downloaded) with ``packages``
    (``{path under site-packages: text}``) written into its site-packages; returns its interpreter.
    Stands in for a project's environment, or for an isolated tool's (pipx, pre-commit) when
    ``packages`` is empty."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True,
                   timeout=HANG_CATCHER)
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=HANG_CATCHER,
    ).stdout.strip()
    write_tree(Path(purelib), packages)
    return python


def fixture_dirs() -> list[Path]:
    """Every fixture (a directory under tests/fixtures with a policy.toml), sorted."""
    return sorted(p.parent for p in FIXTURES.glob("*/policy.toml"))


def read_expectations(root: Path) -> set[Expectation]:
    """Collect the inline expectations of every .py and .pyx file under ``root`` and of its policy.toml
    (where IPL003, IPL004 and IPL007 are reported).

    - ``# IPL001: 4 app.heavy``: an IPL001 at this line, column 4, whose message names ``app.heavy``;
    - ``# IPL003: 'app.old'``: a finding reported at a line only has no column;
    - ``# IPL001 same cause``: a statement that reaches only forbidden modules an earlier statement
      already ran: it is listed under that statement's report (``Violation.covers``), not reported;
      what follows ``same cause`` is a note for the reader.

    A comment must start with the code: ``# noqa: IPL001`` is not an expectation. The text ends at
    the next ``#`` of the line (a note, or another expectation at the same line).

    Raises:
        ValueError: a comment names a code without a column and text (``# IPL001`` alone), with the
            file and line.
    """
    found: set[Expectation] = set()
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.pyx"), root / "policy.toml"]):
        try:
            text = path.read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        where = path.relative_to(root).as_posix()
        for number, line in enumerate(text.splitlines(), start=1):
            for match in _EXPECTATION.finditer(line):
                code, rest = match["code"], match["rest"]
                if rest.startswith(" same cause"):
                    found.add(Expectation(where, number, f"{code} same cause", None, ""))
                    continue
                positioned = _POSITIONED.fullmatch(rest)
                if positioned is None:
                    raise ValueError(
                        f"{path}:{number}: write the expectation as '# {code}: COLUMN TEXT' (the "
                        f"0-based column and the message's distinguishing part, e.g. '# {code}: 0 "
                        f"app.heavy'), or '# {code}: TEXT' for a finding without a column"
                    )
                col = positioned["col"]
                found.add(Expectation(
                    where, number, code, None if col is None else int(col), positioned["text"]
                ))
    return found


def compare_expectations(
    reported: Iterable[Reported], expected: Iterable[Expectation]
) -> tuple[list[Expectation], list[Expectation]]:
    """``(what was reported, what was expected)``, both as sorted lists of :class:`Expectation` that
    are equal when every finding has its comment and every comment its finding: a finding its
    comment :meth:`~Expectation.matches` is shown as that comment, any other with its whole
    message as the text (so that pytest's diff of the two lists shows what was reported)."""
    left = sorted(expected, key=_sort_key)
    shown: list[Expectation] = []
    for finding in reported:
        match = next((e for e in left if e.matches(finding)), None)
        if match is None:
            shown.append(Expectation(finding.path, finding.line, finding.code, finding.col,
                                     finding.message))
        else:
            left.remove(match)
            shown.append(match)
    return sorted(shown, key=_sort_key), sorted(expected, key=_sort_key)


def _sort_key(expectation: Expectation) -> tuple[str, int, str, int, str]:
    col = -1 if expectation.col is None else expectation.col
    return (expectation.path, expectation.line, expectation.code, col, expectation.text)


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
# a fixture's stub module records the functions of it called in its CALLS list
# (tests/fixtures/x_assume/site-packages/torch/cuda): "module.function" each
calls = None
for name in sorted(after):
    try:  # the module's own namespace: reading an attribute may run a PEP 562 __getattr__
        recorded = vars(sys.modules[name]).get("CALLS")
    except (KeyError, TypeError):
        recorded = None
    if isinstance(recorded, list):
        calls = (calls or []) + [name + "." + str(c) for c in recorded]
with open(out, "w") as handle:
    handle.write(repr({"modules": after, "error": error, "calls": calls}))
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
    """:func:`run_import`, and the calls the fixture's stub modules recorded, ``module.function``
    each (every imported module with a ``CALLS`` list appends the names of its functions called;
    None when none was imported). ``environ``: variables to set (a
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
            cwd=tmp, env=env, check=True, capture_output=True, timeout=HANG_CATCHER,
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


def find_python(version: str) -> str | None:
    """An installed ``python<version>`` that runs (on PATH, else kept by pyenv, which keeps versions
    that are installed but not selected out of PATH), or None."""
    name = f"python{version}"
    found = shutil.which(name)
    if found is None or subprocess.run(
        [found, "-c", ""], capture_output=True, timeout=HANG_CATCHER
    ).returncode != 0:
        kept = sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/{name}"))
        found = str(kept[-1]) if kept else None
    return found


DISTRIBUTIONS = {
    "dist/__init__.py": "import importlib\nimportlib.import_module(str(1))\n",
    "distgen/__init__.py": "exec(str(2))\n",
    "dist-1.0.dist-info/top_level.txt": "dist\ndistgen\n",
    "rec/__init__.py": "exec(str(3))\n",
    "recx.py": "exec(str(4))\n",
    "rec-2.0.dist-info/RECORD": "rec/__init__.py,sha256=x,1\nrecx.py,,\nrec-2.0.dist-info/RECORD,,\n",
    "loose/__init__.py": "exec(str(5))\n",
}
"""An installed ``site`` with two distributions of two top-level packages each (``dist``: named by
its ``top_level.txt``, like torch's ``torch`` and ``torchgen``; ``rec``: by its ``RECORD`` only)
and a package that no distribution's metadata names (``loose``); one IPL006 site in each package."""

DISTRIBUTIONS_LIGHT = "import dist\nimport distgen\nimport rec\nimport recx\nimport loose\n"
