"""Robustness corpus: hostile sources, policies and caches, each with a clear message and no crash.

75 hostile inputs in 86 tests (C = ``importpolicy``, F = ``flake8``, M = ``mypy``, V = ``verify``): the
zoo's 34 sources (one tree: C F, and V for four of its light modules), 5 sources of their own (C F),
19 policies (C F; 5 of them also M), 12 kinds of cache damage (C F M, but 1 C only) and 5 sources
through mypy alone (M). 56 more (cache directories, stale and mixed answers, exit statuses, crashes,
hangs, wrong answers) are in tests/test_hostile.py, which says the same of each.

Every hostile input goes through the real adapters: ``importpolicy`` (``python -m flake8_importpolicy``),
``flake8`` (default selection, which includes IPL) and, for about fifteen of them, ``mypy`` with
``plugins = flake8_importpolicy.mypy`` (each with its own ``--cache-dir`` under ``tmp_path``; skipped with the
reason when ``flake8_importpolicy.mypy`` cannot be imported). "No crash" means: the expected exit status, no
``Traceback``, no ``INTERNAL ERROR``, no flake8 "failed during execution" and no "This is a bug"; "a
clear message" means the file, the line and what is wrong (for a policy: the key and the fix), the
same in every adapter.

To stay within about 30 s on 2 cores: many hostile inputs share one tree and one run of each adapter
(``zoo``: about 40 broken or odd modules; one ``check``, one ``flake8``, one ``verify``), independent
runs go in parallel, and the policy cases run as batches (``run_batch``: every case's
``importpolicy check`` in one fresh interpreter, every case's ``flake8`` in another, each with its own
working directory and captured output). Each input still has a test of its own, asserting on the
shared output.

The inputs:

- sources (``test_zoo_*``): syntax errors in a light module and four hops deep in a chain, a BOM, a
  latin-1 coding cookie, a BOM with a latin-1 cookie, an unknown cookie, invalid UTF-8, UTF-16, NUL
  bytes, CRLF and CR-only line endings, tabs, inconsistent tabs (``TabError``), form feeds, an empty
  file and a BOM-only file, a 5 MB generated module (a 60,000-row table and 2,000 functions whose
  deferred imports must not count), CPython's parser limits (nesting, indentation, recursion), syntax
  newer than the running Python, symlink loops in a source root (a self loop, a two-link loop, a
  directory link to an ancestor), a package that imports itself, import cycles of length 2 and 50, a
  namespace package split over two source roots, the same module in both roots, a first-party ``json``
  (shadows the stdlib: runs) and ``abc`` (frozen: never runs), file names that are not identifiers,
  an ``__init__.py`` that is a directory. flake8 does not lint two of them itself (the plugin still
  reads them): the 5 MB module (flake8's own checkers need about 30 s) and the recursion-limit module
  (flake8 itself crashes there: ``ast.parse``'s RecursionError escapes its ``build_ast``);
- unreadable files: root ignores permissions, so a dangling symlink (``dangling.py``) and a
  directory named like a module (``dirmod.py/``) stand in for them; ``os.chmod(path, 0)`` is tested
  too, skipped as root. A FIFO named like a module is a test of its own;
- policies (``test_policy_*``): empty, comments only, not TOML, wrong types, unknown keys, duplicate
  light entries (table twice, shorthand plus table, both quote styles), invalid characters, empty
  segments, unquoted dotted keys, an ignore without reason, a BOM, invalid UTF-8, a NUL byte, deeply
  nested arrays, an unsupported version, an interpreter that fails, ``--policy`` naming a directory;
- caches (``test_cache_*``): every cache file (facts, answers, interpreters, flake8's per-file index,
  mypy's index) truncated, not JSON, from an older version, of another shape, or nested too deeply;
  a read-only cache directory with stale entries (``chmod -w`` when not root; as root ``chattr +i``,
  skipped when unavailable); a cache directory that is a file.

Where the tool is wrong the test is ``xfail(strict=True)`` with a reason starting ``BUG:``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from helpers import HANG_CATCHER

from flake8_importpolicy.answers.jsonfile import read_json_sealed, write_json_atomic

CRITICAL = "There was a critical error during execution of Flake8:"
HEAVY_REASON = "slow to import"
_FLAKE8_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<text>.*)$")
_WORKERS = max(2, os.cpu_count() or 2)
T = TypeVar("T")

try:
    import flake8_importpolicy.mypy  # noqa: F401  (only to know whether the mypy cases can run)

    MYPY_SKIP = ""
except Exception as exc:  # being finished elsewhere; say why the mypy cases do not run
    MYPY_SKIP = f"flake8_importpolicy.mypy is not importable: {type(exc).__name__}: {exc}"

needs_mypy = pytest.mark.skipif(bool(MYPY_SKIP), reason=MYPY_SKIP or "flake8_importpolicy.mypy importable")


# -- running the adapters ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One subprocess: its arguments and what it printed."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def found(self, prefix: str = "") -> set[tuple[str, int, str]]:
        """``(path, line, code)`` of every flake8-style line whose code starts with ``prefix``."""
        found = set()
        for line in self.stdout.splitlines():
            match = _FLAKE8_LINE.match(line)
            if match and match["code"].startswith(prefix):
                found.add((match["path"], int(match["line"]), match["code"]))
        return found

    def assert_no_crash(self) -> None:
        for marker in ("Traceback", "INTERNAL ERROR", "failed during execution", "This is a bug"):
            assert marker not in self.output, self


def _env(extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYPY")}
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def run(
    args: Sequence[str], cwd: Path, timeout: float = HANG_CATCHER, *,
    env: Mapping[str, str | None] | None = None, python: str = sys.executable, stdin: str | None = None,
) -> Run:
    """``python *args`` in ``cwd``; ``env``: variables to set (a string) or unset (None)."""
    proc = subprocess.run(
        [python, *args],
        cwd=cwd,
        env=_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
    )
    return Run(tuple(args), proc.returncode, proc.stdout, proc.stderr)


def cli(cwd: Path, *args: str, timeout: float = HANG_CATCHER, **options: Any) -> Run:
    return run(["-m", "flake8_importpolicy", *args], cwd, timeout, **options)


def flake8(cwd: Path, *args: str, timeout: float = HANG_CATCHER, **options: Any) -> Run:
    return run(["-m", "flake8", "--no-show-source", *args], cwd, timeout, **options)


def mypy(cwd: Path, *args: str, **options: Any) -> Run:
    return run(["-m", "mypy", "--cache-dir", str(cwd / ".mypy_cache"), *args], cwd, **options)


def assert_flake8_ipl900(run: Run, message: str, checked: str = "src/zoo/light.py") -> None:
    """flake8's report of a policy that cannot be used: one IPL900 at line 1 of the checked file
    holding the words of ``message`` (the CLI's message; its "not valid (N problems)" header and the
    file name before the first colon aside, on one line), and exit 1 as for any reported error."""
    assert run.returncode == 1, run
    (line,) = [line for line in run.stdout.splitlines() if ": IPL" in line]  # flake8's own codes go on
    assert line.startswith(f"{checked}:1:1: IPL900 "), run
    head, _, rest = message.partition("\n")
    if " is not valid (" in head:  # one problem a line, as "; "-separated parts
        words = "; ".join(" ".join(part.split()) for part in rest.split("\n  "))
    else:
        words = " ".join(re.sub(r"^[^:\s]+(?::\d+)*: ", "", message).split())  # its own position aside
    assert words in line, (words, line)


def run_all(*jobs: Callable[[], T]) -> list[T]:
    """Run independent subprocesses concurrently; results in the order given."""
    with ThreadPoolExecutor(max_workers=_WORKERS) as pool:
        futures = [pool.submit(job) for job in jobs]
        return [future.result() for future in futures]


# Runs many adapter invocations in ONE fresh interpreter, one after the other, each with its own working
# directory and captured stdout/stderr (``sys.stdout.buffer`` included, which flake8's formatter
# writes to): the real ``flake8.main.cli.main`` and ``flake8_importpolicy.cli.main``, without a
# process start-up and plugin loading per case. An exception escaping ``main`` is recorded as a
# traceback on that case's stderr, so "no Traceback" is asserted exactly as for a subprocess.
_BATCH = r"""
import io, json, os, sys, traceback
jobs = json.load(open(sys.argv[1]))
results = []
for job in jobs:
    os.chdir(job["cwd"])
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    sys.stdout, sys.stderr = out, err
    try:
        if job["tool"] == "flake8":
            from flake8.main.cli import main
        else:
            from flake8_importpolicy.cli import main
        code = main(job["args"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException:
        traceback.print_exc()
        code = -1
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    results.append([code, out.buffer.getvalue().decode(), err.buffer.getvalue().decode()])
json.dump(results, open(sys.argv[2], "w"))
"""


def run_batch(jobs: Sequence[tuple[str, Path, Sequence[str]]], scratch: Path) -> list[Run]:
    """``(tool, cwd, args)`` jobs (tool ``flake8`` or ``importpolicy``) in one fresh interpreter."""
    spec, out = scratch / "batch-jobs.json", scratch / "batch-results.json"
    spec.write_text(json.dumps([{"tool": t, "cwd": str(cwd), "args": list(a)} for t, cwd, a in jobs]))
    done = run(["-c", _BATCH, str(spec), str(out)], scratch)
    assert done.returncode == 0 and done.stderr == "", done
    return [
        Run(tuple(args), code, stdout, stderr)
        for (_tool, _cwd, args), (code, stdout, stderr) in zip(jobs, json.loads(out.read_text()))
    ]


# -- building trees ---------------------------------------------------------------------------------


class Symlink(str):
    """A symbolic link to this target (may dangle)."""


class Directory:
    """A directory (to create a directory named like a module file)."""


Files = dict[str, "str | bytes | Symlink | Directory"]


def write(root: Path, files: Files) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Symlink):
            os.symlink(str(content), path)
        elif isinstance(content, Directory):
            path.mkdir(parents=True, exist_ok=True)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
    return root


def policy_text(*lights: str, roots: Sequence[str] = ("src",)) -> str:
    lines = [
        f"[settings]\nsource-roots = {json.dumps(list(roots))}\n",
        f'[heavy]\n"zoo.heavy" = "{HEAVY_REASON}"\n"zoo.odd.*" = "{HEAVY_REASON}"\n',
    ]
    lines += [f'[light."{light}"]\nreason = "must stay light"\n' for light in lights]
    return "\n".join(lines)


# -- the zoo: one tree, many broken or odd modules ---------------------------------------------------

# Modules whose chain a test follows import a heavy module of their own, zoo.odd.<stem>: a light
# module reports only what no earlier statement of it already ran (one cause, one report), so with a
# shared zoo.heavy only the first statement's chain would be shown.
ODD = {
    "src/zoo/enc_bom.py", "src/zoo/enc_latin1.py", "src/zoo/enc_crlf.py", "src/zoo/enc_cr.py",
    "src/zoo/enc_tabs.py", "src/zoo/enc_formfeed.py", "src/zoo/selfpkg/__init__.py", "src/zoo/cyc2b.py",
    "src/zoo/cyc49.py", "src2/ns/b.py", "src/json.py", "src/zoo/initdir/m.py",
}


def odd_heavy(path: str) -> str:
    """The heavy module an :data:`ODD` module imports."""
    stem = path.removesuffix(".py").removesuffix("/__init__").rsplit("/", 1)[-1]
    return "zoo.odd." + re.sub(r"\W", "_", stem)


def with_odd_heavy(files: Files) -> Files:
    """``files`` with each :data:`ODD` module importing its own heavy module instead of zoo.heavy."""
    out = dict(files)
    out["src/zoo/odd/__init__.py"] = ""
    for path in ODD & set(files):
        heavy = odd_heavy(path)
        content = files[path]
        if isinstance(content, bytes):
            out[path] = content.replace(b"import zoo.heavy", f"import {heavy}".encode())
        elif isinstance(content, str):
            out[path] = content.replace("import zoo.heavy", f"import {heavy}")
        out["src/" + heavy.replace(".", "/") + ".py"] = ""
    return out


def _big_module() -> str:
    """About 5 MB of generated code: a 60,000-row data table, then 2,000 functions with a deferred
    import each (never counted), then one import that runs at import time, on the last line."""
    rows = "".join(
        f"    ('{n:08d}', 'padding padding padding padding padding padding padding'),\n"
        for n in range(60_000)
    )
    function = "def f_{n}(value=None):\n    import zoo.heavy\n    return (value, {n}, zoo.heavy)\n\n\n"
    functions = "".join(function.format(n=n) for n in range(2_000))
    return f"DATA = [\n{rows}]\n\n\n{functions}import zoo.heavy\n"


_BIG = _big_module()
BIG_LAST_LINE = _BIG.count("\n")

# The light module that imports each odd module, one per line, so that each finding has its own line.
ENC = [
    "enc_bom",
    "enc_latin1",
    "enc_badutf8",
    "enc_nul",
    "enc_crlf",
    "enc_cr",
    "enc_tabs",
    "enc_taberror",
    "enc_bogus",
    "enc_utf16",
    "enc_bom_latin1",
    "enc_formfeed",
    "enc_empty",
    "enc_only_bom",
]
LIMITS = ["lim_parens", "lim_indent", "lim_recursion", "lim_newer_syntax"]
GRAPH = [
    "zoo.selfpkg",
    "zoo.cyc2a",
    "zoo.cyc0",
    "ns.a",
    "ns.dup",
    "json",
    "abc",
    "zoo.dangling",
    "zoo.dirmod",
    "zoo.selfloop",
    "la",
    "zoo.initdir.m",
    "zoo.weird",
]


def _zoo_files() -> Files:
    files: Files = {
        "policy.toml": policy_text(
            "zoo.light_syntax",
            "zoo.light_deep",
            "zoo.light_enc",
            "zoo.light_big",
            "zoo.light_limits",
            "zoo.light_graph",
            roots=("src", "src2"),
        ),
        "src/zoo/__init__.py": "",
        "src/zoo/heavy.py": "",
        # syntax error in a light module (the import after it is never seen)
        "src/zoo/light_syntax.py": "import os\n\ndef broken(:\n    pass\nimport zoo.heavy\n",
        # syntax error four hops deep in a chain
        "src/zoo/light_deep.py": "import zoo.deep1\n",
        "src/zoo/deep1.py": "import zoo.deep2\n",
        "src/zoo/deep2.py": "from zoo import deep3\n",
        "src/zoo/deep3.py": "X = 1\n\nclass (:\n    pass\nimport zoo.heavy\n",
        # encodings and whitespace
        "src/zoo/light_enc.py": "".join(f"import zoo.{name}\n" for name in ENC),
        "src/zoo/enc_bom.py": b"\xef\xbb\xbf# a BOM\nimport zoo.heavy\n",
        "src/zoo/enc_latin1.py": b"# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\nimport zoo.heavy\n",
        "src/zoo/enc_badutf8.py": b"X = 1\nY = '\xff\xfe'\nimport zoo.heavy\n",
        "src/zoo/enc_nul.py": b"X = 1\nimport zoo.heavy\x00\n",
        "src/zoo/enc_crlf.py": b"import os\r\n\r\nif os:\r\n    import zoo.heavy\r\n",
        "src/zoo/enc_cr.py": b"X = 1\rY = 2\rimport zoo.heavy\r",
        "src/zoo/enc_tabs.py": b"import os\nif True:\n\tif os:\n\t\timport zoo.heavy\n",
        "src/zoo/enc_taberror.py": b"if True:\n        X = 1\n\timport zoo.heavy\n",
        "src/zoo/enc_bogus.py": b"# coding: bogus\nimport zoo.heavy\n",
        "src/zoo/enc_utf16.py": "import zoo.heavy\n".encode("utf-16"),
        "src/zoo/enc_bom_latin1.py": b"\xef\xbb\xbf# -*- coding: latin-1 -*-\nimport zoo.heavy\n",
        "src/zoo/enc_formfeed.py": b"\x0c\nimport os\n\x0c\nimport zoo.heavy\n",
        "src/zoo/enc_empty.py": b"",
        "src/zoo/enc_only_bom.py": b"\xef\xbb\xbf",
        # 5 MB
        "src/zoo/light_big.py": "import zoo.big\n",
        "src/zoo/big.py": _BIG,
        # CPython's own parser limits, and syntax newer than the running Python
        "src/zoo/light_limits.py": "".join(f"import zoo.{name}\n" for name in LIMITS),
        "src/zoo/lim_parens.py": "X = " + "(" * 250 + "1" + ")" * 250 + "\nimport zoo.heavy\n",
        "src/zoo/lim_indent.py": "".join("    " * i + "if X:\n" for i in range(101))
        + "    " * 101
        + "import zoo.heavy\n",
        "src/zoo/lim_recursion.py": "X = " + "+".join(["1"] * 100_000) + "\nimport zoo.heavy\n",
        "src/zoo/lim_newer_syntax.py": "X = 1\ntype Alias = int\nimport zoo.heavy\n",
        # the import graph: self imports, cycles, namespaces, shadowing, symlinks, unreadable files
        "src/zoo/light_graph.py": "".join(f"import {name}\n" for name in GRAPH),
        "src/zoo/selfpkg/__init__.py": "import zoo.selfpkg\nfrom zoo import selfpkg\nfrom . import sub\n"
        "import zoo.heavy\n",
        "src/zoo/selfpkg/sub.py": "from zoo.selfpkg import sub\nimport zoo.selfpkg.sub\n",
        "src/zoo/cyc2a.py": "import zoo.cyc2b\n",
        "src/zoo/cyc2b.py": "import zoo.cyc2a\nimport zoo.heavy\n",
        **{f"src/zoo/cyc{i}.py": f"import zoo.cyc{(i + 1) % 50}\n" for i in range(49)},
        "src/zoo/cyc49.py": "import zoo.cyc0\nimport zoo.heavy\n",
        "src/ns/a.py": "import ns.b\n",
        "src2/ns/b.py": "import zoo.heavy\n",
        "src/ns/dup.py": "X = 1\n",
        "src2/ns/dup.py": "import zoo.heavy\n",  # the same module in the second root never runs
        "src/json.py": "import zoo.heavy\n",  # shadows the stdlib json: runs
        "src/abc.py": "import zoo.heavy\n",  # frozen and imported at start-up: never runs
        "src/zoo/dangling.py": Symlink("nowhere.py"),
        "src/zoo/dirmod.py": Directory(),
        "src/zoo/selfloop": Symlink("selfloop"),
        "src/la": Symlink("lb"),
        "src/lb": Symlink("la"),
        "src/zoo/up": Symlink(".."),  # a directory link to an ancestor: an infinite tree of names
        "src/zoo/initdir/__init__.py": Directory(),  # not a file: zoo.initdir is a namespace package
        "src/zoo/initdir/m.py": "import zoo.heavy\n",
        "src/zoo/weird/__init__.py": "",
        "src/zoo/weird/my-mod.py": "import zoo.heavy\n",
        "src/zoo/weird/1st.py": "import zoo.heavy\n",
        "src/zoo/weird/.hidden.py": "import zoo.heavy\n",
    }
    return files


# Files that flake8 itself cannot lint (its own E902/E999, on that file and nowhere else). flake8 is not
# run on two more, which the plugin still reads: big.py (flake8's own checkers take about 30 s on 5 MB)
# and lim_recursion.py (flake8 itself crashes: ast.parse's RecursionError escapes its build_ast).
ZOO_UNLINTABLE = {
    "src/zoo/light_syntax.py",
    "src/zoo/deep3.py",
    "src/zoo/enc_nul.py",
    "src/zoo/enc_taberror.py",
    "src/zoo/enc_utf16.py",
    "src/zoo/enc_badutf8.py",
    "src/zoo/enc_bogus.py",
    "src/zoo/enc_bom_latin1.py",
    "src/zoo/lim_parens.py",
    "src/zoo/lim_indent.py",
    "src/zoo/lim_recursion.py",
    "src/zoo/lim_newer_syntax.py",
    "src/zoo/dangling.py",
}
ZOO_FLAKE8_EXCLUDE = "big.py,lim_recursion.py"
# flake8 findings left out of the other tests: test_zoo_bom_with_latin1_cookie_gets_no_flake8_finding
ZOO_KNOWN_BUG_FILES = {"src/zoo/enc_bom_latin1.py"}


@dataclass(frozen=True)
class ZooRuns:
    root: Path
    check: Run  # importpolicy check (cold caches)
    check_json: Run  # importpolicy check --format json (warm)
    check_no_cache: Run  # importpolicy check --no-cache --format json
    flake8: Run  # flake8 src src2 (default selection, IPL included)
    flake8_light: Run  # flake8 on the light modules only
    why_deep: Run
    why_syntax: Run
    verify: Run  # importpolicy verify (imports the light modules: most raise)

    @property
    def report(self) -> dict[str, list[dict[str, object]]]:
        data: dict[str, list[dict[str, object]]] = json.loads(self.check_json.stdout)
        return data


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> ZooRuns:
    root = write(tmp_path_factory.mktemp("zoo"), with_odd_heavy(_zoo_files()))
    check = cli(root, "check")  # cold: parses the 5 MB module once and fills the facts cache
    lights = [
        f"src/zoo/{name}.py"
        for name in ("light_syntax", "light_deep", "light_enc", "light_big", "light_limits", "light_graph")
    ]
    runs = run_all(
        lambda: cli(root, "check", "--format", "json"),
        lambda: cli(root, "check", "--no-cache", "--format", "json"),
        lambda: flake8(root, "--extend-exclude", ZOO_FLAKE8_EXCLUDE, "src", "src2"),
        lambda: flake8(root, "--select", "IPL,E9", *lights),
        lambda: cli(root, "why", "zoo.light_deep"),
        lambda: cli(root, "why", "zoo.light_syntax"),
        lambda: cli(root, "verify", "zoo.light_syntax", "zoo.light_deep", "zoo.light_graph", "zoo.light_enc"),
    )
    return ZooRuns(root, check, *runs)


def test_zoo_runs_exit_1_without_a_crash(zoo: ZooRuns) -> None:
    for result in (zoo.check, zoo.check_json, zoo.check_no_cache, zoo.flake8, zoo.flake8_light):
        result.assert_no_crash()
        assert result.returncode == 1, result
    for result in (zoo.why_deep, zoo.why_syntax):
        result.assert_no_crash()
        assert result.returncode == 0, result
    assert zoo.check.stderr == zoo.check_json.stderr == "", zoo.check
    # the facts and answers caches give the report a cold, uncached run gives
    assert json.loads(zoo.check_no_cache.stdout) == zoo.report


def _ipl005(path: str, module: str, line: int, message: str) -> str:
    return f"{path}:{line}: IPL005 cannot analyse {module} (line {line}: {message}"


def _ipl001(light: str, line: int, heavy: str = "zoo.heavy") -> str:
    path = "src/" + light.replace(".", "/") + ".py"
    return f"{path}:{line}:1: IPL001 light module {light} imports {heavy} at import time ({HEAVY_REASON})"


NEWER_SYNTAX = sys.version_info < (3, 12)  # ``type X = int`` is Python 3.12 syntax

ZOO_PROBLEMS = [
    pytest.param("src/zoo/light_syntax.py", "zoo.light_syntax", 3, "invalid syntax", id="syntax-in-light"),
    pytest.param("src/zoo/deep3.py", "zoo.deep3", 3, "invalid syntax", id="syntax-deep-in-chain"),
    pytest.param(
        "src/zoo/enc_badutf8.py",
        "zoo.enc_badutf8",
        2,
        "'utf-8' codec can't decode byte 0xff",
        id="invalid-utf8",
    ),
    pytest.param(
        "src/zoo/enc_nul.py", "zoo.enc_nul", 2, "source code string cannot contain null bytes", id="nul-byte"
    ),
    pytest.param(
        "src/zoo/enc_taberror.py",
        "zoo.enc_taberror",
        3,
        "inconsistent use of tabs and spaces in indentation",
        id="tab-error",
    ),
    pytest.param("src/zoo/enc_bogus.py", "zoo.enc_bogus", 1, "unknown encoding: bogus", id="unknown-cookie"),
    pytest.param(
        "src/zoo/enc_utf16.py", "zoo.enc_utf16", 1, "source code string cannot contain null bytes", id="utf16"
    ),
    pytest.param(
        "src/zoo/enc_bom_latin1.py",
        "zoo.enc_bom_latin1",
        1,
        "encoding problem: iso-8859-1 with BOM",
        id="bom-with-latin1-cookie",
    ),
    pytest.param(
        "src/zoo/dangling.py",
        "zoo.dangling",
        1,
        "cannot read file: No such file or directory",
        id="unreadable-dangling-symlink",
    ),
    pytest.param(
        "src/zoo/lim_parens.py", "zoo.lim_parens", 1, "too many nested parentheses", id="limit-parentheses"
    ),
    pytest.param(
        "src/zoo/lim_indent.py",
        "zoo.lim_indent",
        101,
        "too many levels of indentation",
        id="limit-indentation",
    ),
    pytest.param(
        "src/zoo/lim_recursion.py",
        "zoo.lim_recursion",
        1,
        "maximum recursion depth exceeded",
        id="limit-recursion",
    ),
    pytest.param(
        "src/zoo/lim_newer_syntax.py",
        "zoo.lim_newer_syntax",
        2,
        "invalid syntax",
        id="syntax-newer-than-python",
        marks=pytest.mark.skipif(not NEWER_SYNTAX, reason="type statements parse on 3.12+"),
    ),
]


@pytest.mark.parametrize(("path", "module", "line", "message"), ZOO_PROBLEMS)
def test_zoo_unanalysable_module_is_ipl005_with_file_and_line(
    zoo: ZooRuns, path: str, module: str, line: int, message: str
) -> None:
    """The CLI names the file, the line and the parser's message, and says the check is incomplete; why
    says the same; flake8 blames nobody but the broken file itself."""
    expected = _ipl005(path, module, line, message)
    lines = [text for text in zoo.check.stdout.splitlines() if text.startswith(f"{path}:")]
    assert len(lines) == 1 and lines[0].startswith(expected), zoo.check.stdout
    assert lines[0].endswith("; its imports are unknown and the check is incomplete"), lines[0]
    problems = [p for p in zoo.report["problems"] if p["path"] == path]
    assert [(p["code"], p["line"]) for p in problems] == [("IPL005", line)]
    # flake8: an E9xx (flake8's own) only on a file flake8 cannot lint itself, never on another file
    wrong = {found for found in zoo.flake8.found("E9") if found[0] not in ZOO_UNLINTABLE}
    assert not wrong, zoo.flake8.stdout
    if path not in ZOO_KNOWN_BUG_FILES:
        assert not {found for found in zoo.flake8.found("IPL") if found[0] == path}


def test_zoo_why_shows_where_the_chain_stops(zoo: ZooRuns) -> None:
    assert "cannot analyse zoo.deep3: line 3: invalid syntax" in zoo.why_deep.stdout
    assert "cannot analyse zoo.light_syntax: line 3: invalid syntax" in zoo.why_syntax.stdout


def test_zoo_verify_reports_each_import_that_raises(zoo: ZooRuns) -> None:
    """At runtime the broken modules raise: one line each, with the file and line, no traceback."""
    zoo.verify.assert_no_crash()
    assert zoo.verify.returncode == 1, zoo.verify
    lines = zoo.verify.stdout.splitlines()
    for expected in (
        "  import raised SyntaxError: invalid syntax (light_syntax.py, line 3)",
        "  import raised SyntaxError: invalid syntax (deep3.py, line 3) at src/zoo/deep2.py:1",
        "  import raised ModuleNotFoundError: No module named 'zoo.dangling' at src/zoo/light_graph.py:8",
    ):
        assert expected in lines, zoo.verify.stdout
    assert any(
        line.startswith("  import raised SyntaxError: (unicode error) 'utf-8' codec can't decode byte 0xff")
        and line.endswith("(enc_badutf8.py, line 2) at src/zoo/light_enc.py:3")
        for line in lines
    )
    assert lines[-1].startswith("FAILED: 4 of 4 light modules"), lines[-1]


def test_zoo_syntax_errors_get_flake8s_e999_on_their_own_line(zoo: ZooRuns) -> None:
    found = zoo.flake8.found("E9")
    assert ("src/zoo/light_syntax.py", 3, "E999") in found
    assert ("src/zoo/deep3.py", 3, "E999") in found
    assert ("src/zoo/enc_nul.py", 1, "E999") in found or ("src/zoo/enc_nul.py", 2, "E999") in found
    # the light module whose chain reaches deep3.py is not blamed
    blamed = zoo.flake8.found("E9") | zoo.flake8.found("IPL")
    assert not {f for f in blamed if f[0] == "src/zoo/light_deep.py"}, zoo.flake8.stdout


# (light module, line of its import, last hop: "path:line: module -> heavy (kind[, flags])")
ZOO_VIOLATIONS = [
    pytest.param(
        "zoo.light_enc", 1, "src/zoo/enc_bom.py:2: zoo.enc_bom -> zoo.odd.enc_bom (import)", id="bom"
    ),
    pytest.param(
        "zoo.light_enc",
        2,
        "src/zoo/enc_latin1.py:3: zoo.enc_latin1 -> zoo.odd.enc_latin1 (import)",
        id="latin1-cookie",
    ),
    pytest.param(
        "zoo.light_enc",
        5,
        "src/zoo/enc_crlf.py:4: zoo.enc_crlf -> zoo.odd.enc_crlf (import, conditional)",
        id="crlf",
    ),
    pytest.param(
        "zoo.light_enc", 6, "src/zoo/enc_cr.py:3: zoo.enc_cr -> zoo.odd.enc_cr (import)", id="cr-only"
    ),
    pytest.param(
        "zoo.light_enc",
        7,
        "src/zoo/enc_tabs.py:4: zoo.enc_tabs -> zoo.odd.enc_tabs (import, conditional)",
        id="tabs",
    ),
    pytest.param(
        "zoo.light_enc",
        12,
        "src/zoo/enc_formfeed.py:4: zoo.enc_formfeed -> zoo.odd.enc_formfeed (import)",
        id="form-feed",
    ),
    pytest.param(
        "zoo.light_big", 1, f"src/zoo/big.py:{BIG_LAST_LINE}: zoo.big -> zoo.heavy (import)", id="5mb-module"
    ),
    pytest.param(
        "zoo.light_graph",
        1,
        "src/zoo/selfpkg/__init__.py:4: zoo.selfpkg -> zoo.odd.selfpkg (import)",
        id="package-imports-itself",
    ),
    pytest.param(
        "zoo.light_graph", 2, "src/zoo/cyc2b.py:2: zoo.cyc2b -> zoo.odd.cyc2b (import)", id="cycle-2"
    ),
    pytest.param(
        "zoo.light_graph", 3, "src/zoo/cyc49.py:2: zoo.cyc49 -> zoo.odd.cyc49 (import)", id="cycle-50"
    ),
    pytest.param(
        "zoo.light_graph", 4, "src2/ns/b.py:1: ns.b -> zoo.odd.b (import)", id="namespace-over-two-roots"
    ),
    pytest.param(
        "zoo.light_graph", 6, "src/json.py:1: json -> zoo.odd.json (import)", id="shadows-stdlib-json"
    ),
    pytest.param(
        "zoo.light_graph",
        12,
        "src/zoo/initdir/m.py:1: zoo.initdir.m -> zoo.odd.m (import)",
        id="init-py-is-a-directory",
    ),
]


@pytest.mark.parametrize(("light", "line", "last_hop"), ZOO_VIOLATIONS)
def test_zoo_odd_but_valid_module_keeps_its_chain(zoo: ZooRuns, light: str, line: int, last_hop: str) -> None:
    """Encodings, line endings, size and graph shape do not hide a chain nor shift its lines; flake8
    reports the same IPL001 and an IPL002 on the last hop."""
    out = zoo.check.stdout.splitlines()
    header = _ipl001(light, line, last_hop.rpartition(" -> ")[2].partition(" ")[0])
    assert header in out, zoo.check.stdout
    block = out[out.index(header) + 1:]
    block = block[: block.index("")]
    assert block[-1] == f"    {last_hop}", block
    path = "src/" + light.replace(".", "/") + ".py"
    assert (path, line, "IPL001") in zoo.flake8.found("IPL")
    assert (path, line, "IPL001") in zoo.flake8_light.found("IPL")
    hop_path, hop_line = last_hop.split(":")[:2]
    if hop_path != "src/zoo/big.py":  # not linted by flake8 (see ZOO_FLAKE8_EXCLUDE)
        assert (hop_path, int(hop_line), "IPL002") in zoo.flake8.found("IPL")


def test_zoo_cycle_of_50_is_reported_with_its_whole_chain(zoo: ZooRuns) -> None:
    (violation,) = [v for v in zoo.report["violations"] if v["light"] == "zoo.light_graph" and v["line"] == 3]
    chain = violation["chain"]
    assert isinstance(chain, list)
    assert [hop["imported"] for hop in chain] == [*(f"zoo.cyc{i}" for i in range(50)), "zoo.odd.cyc49"]


# light_graph lines that must stay clean: the same module in the second root never runs, nor does a
# first-party abc (frozen); unresolvable names (a directory named dirmod.py, symlink loops, names that
# are not identifiers) import nothing.
ZOO_CLEAN = [
    pytest.param("zoo.light_graph", 5, id="same-module-in-second-root"),
    pytest.param("zoo.light_graph", 7, id="shadows-frozen-abc"),
    pytest.param("zoo.light_graph", 9, id="unreadable-directory-named-like-a-module"),
    pytest.param("zoo.light_graph", 10, id="symlink-self-loop"),
    pytest.param("zoo.light_graph", 11, id="symlink-two-link-loop"),
    pytest.param("zoo.light_graph", 13, id="file-names-not-identifiers"),
    pytest.param("zoo.light_enc", 13, id="empty-file"),
    pytest.param("zoo.light_enc", 14, id="bom-only-file"),
]


@pytest.mark.parametrize(("light", "line"), ZOO_CLEAN)
def test_zoo_input_that_imports_nothing_heavy_is_clean(zoo: ZooRuns, light: str, line: int) -> None:
    path = "src/" + light.replace(".", "/") + ".py"
    assert not [v for v in zoo.report["violations"] if v["path"] == path and v["line"] == line]
    assert (path, line, "IPL001") not in zoo.flake8.found()


def test_zoo_exact_findings_and_adapters_agree(zoo: ZooRuns) -> None:
    """flake8 shows exactly the CLI's chains: IPL001 at each violation, IPL002 at every later hop."""
    expected = set()
    for violation in zoo.report["violations"]:
        expected.add((violation["path"], violation["line"], "IPL001"))
        chain = violation["chain"]
        assert isinstance(chain, list)
        for hop in chain[1:]:
            if hop["path"] != "src/zoo/big.py":
                expected.add((hop["path"], hop["line"], "IPL002"))
    found = {f for f in zoo.flake8.found("IPL") if f[0] not in ZOO_KNOWN_BUG_FILES}
    assert found == expected
    assert len(zoo.report["violations"]) == len(ZOO_VIOLATIONS)
    assert len(zoo.report["problems"]) == len(ZOO_PROBLEMS) - (0 if NEWER_SYNTAX else 1)


def test_zoo_bom_with_latin1_cookie_gets_no_flake8_finding(zoo: ZooRuns) -> None:
    """CPython refuses a UTF-8 BOM with a latin-1 cookie (IPL005 in ``check``); flake8 strips the
    latin-1-decoded BOM, which must not make the buffer look edited."""
    assert not {f for f in zoo.flake8.found("IPL") if f[0] == "src/zoo/enc_bom_latin1.py"}, zoo.flake8.stdout


# -- sources: separate trees ------------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_unreadable_file_by_permissions(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "policy.toml": policy_text("zoo.light"),
            "src/zoo/__init__.py": "",
            "src/zoo/heavy.py": "",
            "src/zoo/light.py": "import zoo.secret\n",
            "src/zoo/secret.py": "import zoo.heavy\n",
        },
    )
    secret = root / "src/zoo/secret.py"
    secret.chmod(0)
    try:
        checked, linted = run_all(lambda: cli(root, "check"), lambda: flake8(root, "src/zoo/light.py"))
    finally:
        secret.chmod(0o644)
    for result in (checked, linted):
        result.assert_no_crash()
    assert checked.returncode == 1
    assert (
        "src/zoo/secret.py:1: IPL005 cannot analyse zoo.secret (line 1: cannot read file: Permission denied"
        in checked.stdout
    )
    assert linted.returncode == 0 and linted.stdout == "", linted


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_named_like_a_module_does_not_hang(tmp_path: Path) -> None:
    """CPython's FileFinder accepts regular files only (``_path_isfile``): ``import zoo.fifo`` is a
    ModuleNotFoundError, and path search must not pick (and block reading) the FIFO."""
    root = write(
        tmp_path,
        {
            "policy.toml": policy_text("zoo.light"),
            "src/zoo/__init__.py": "",
            "src/zoo/heavy.py": "",
            "src/zoo/light.py": "import zoo.fifo\nimport zoo.heavy\n",
        },
    )
    os.mkfifo(root / "src/zoo/fifo.py")
    try:
        checked, linted = run_all(
            lambda: cli(root, "check", "--no-cache"),  # 0.5 s; a hang is for ever
            lambda: flake8(root, "src/zoo/light.py"),
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hangs: {exc}")
    for result in (checked, linted):
        result.assert_no_crash()
        assert result.returncode == 1
    assert _ipl001("zoo.light", 2) in checked.stdout


def test_symlink_loop_with_wildcard_light_pattern(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "policy.toml": '[heavy]\n"pkg.heavy" = "slow"\n[light."pkg.**"]\nreason = "r"\n',
            "src/pkg/__init__.py": "",
            "src/pkg/heavy.py": "",
            "src/pkg/sub/__init__.py": "",
            "src/pkg/sub/m.py": "import pkg.heavy\n",
            "src/pkg/sub/up": Symlink(".."),
        },
    )
    checked, linted = run_all(
        lambda: cli(root, "check", "--format", "json"),
        lambda: flake8(root, "--select", "IPL", "src"),
    )
    for result in (checked, linted):
        result.assert_no_crash()
        assert result.returncode == 1
    report = json.loads(checked.stdout)
    assert len(report["violations"]) <= 2, [v["light"] for v in report["violations"]][:5]
    assert len(linted.stdout.splitlines()) == 1, linted.stdout[:2000]


def test_long_elif_chain_that_cpython_imports_is_analysed(tmp_path: Path) -> None:
    """The visitor walks an elif chain in a loop: it used to recurse once per branch (If.orelse)
    and report IPL005 'source too deeply nested to analyse'."""
    branches = "".join(f"elif os.environ.get('V') == '{n}':\n    pass\n" for n in range(600))
    root = write(
        tmp_path,
        {
            "policy.toml": policy_text("zoo.light"),
            "src/zoo/__init__.py": "",
            "src/zoo/heavy.py": "",
            "src/zoo/light.py": "import zoo.dispatch\n",
            "src/zoo/dispatch.py": f"import os\nif os.environ.get('V') == 'x':\n    pass\n{branches}else:\n"
            "    import zoo.heavy\n",
        },
    )
    compile((root / "src/zoo/dispatch.py").read_bytes(), "dispatch.py", "exec")  # CPython accepts it
    checked = cli(root, "check", "--no-cache")
    checked.assert_no_crash()
    assert "IPL005" not in checked.stdout, checked.stdout
    assert _ipl001("zoo.light", 1) in checked.stdout


# -- policies ---------------------------------------------------------------------------------------

_POLICY_TREE: Files = {
    "src/zoo/__init__.py": "",
    "src/zoo/heavy.py": "",
    "src/zoo/light.py": "import zoo.heavy\n\nprint(zoo.heavy)\n",  # nothing for pyflakes to say
}
_H = f'[heavy]\n"zoo.heavy" = "{HEAVY_REASON}"\n'
_L = '[light."zoo.light"]\nreason = "must stay light"\n'


@dataclass(frozen=True)
class PolicyCase:
    """A policy.toml and the one message every adapter must give (``message`` is the CLI's stderr
    after ``importpolicy: ``; None means the policy is valid and ``exit`` is the CLI's status)."""

    id: str
    policy: bytes
    message: str | None
    exit: int = 2
    mypy: bool = False  # also through mypy
    mypy_line: str = ""  # mypy's one line on stderr (when ``message``)


POLICY_CASES = [
    PolicyCase("empty", b"", None, exit=0, mypy=True),
    PolicyCase("comments-only", b"# nothing here yet\n\n   \n", None, exit=0),
    PolicyCase(
        "not-toml",
        b"this is not toml\n",
        "policy.toml:1:6: invalid TOML: Expected '=' after a key in a key/value pair",
        mypy=True,
        mypy_line="policy.toml:1: error: invalid TOML: Expected '=' after a key in a key/value pair",
    ),
    PolicyCase(
        "wrong-types",
        f'[settings]\nsource-roots = "src"\ncall-depth = "3"\n[heavy]\n"zoo.heavy" = 3\n'
        f'{_L}forbid = "zoo.heavy"\n'.encode(),
        "policy.toml is not valid (4 problems):\n"
        '  settings.source-roots: expected an array of directories, e.g. ["src"], got the string "src"\n'
        '  settings.call-depth: expected an integer >= 0, got the string "3"\n'
        '  heavy."zoo.heavy": expected a reason string (why importing it is heavy), got the integer 3\n'
        '  light."zoo.light".forbid: expected an array of [heavy] keys or module patterns, got the '
        'string "zoo.heavy"',
        mypy=True,
        mypy_line="policy.toml:2: error: not valid (4 problems): settings.source-roots: expected an array of "
        'directories, e.g. ["src"], got the string "src"; settings.call-depth: expected an integer >= 0, '
        'got the string "3"; heavy."zoo.heavy": expected a reason string (why importing it is heavy), got '
        'the integer 3; light."zoo.light".forbid: expected an array of [heavy] keys or module patterns, got '
        'the string "zoo.heavy"',
    ),
    PolicyCase(
        "unknown-keys",
        f'[settings]\nexternl = "stop"\n{_H}[hevy]\n{_L}forbd = []\n'.encode(),
        "policy.toml is not valid (3 problems):\n"
        "  hevy: unknown key; did you mean 'heavy'?\n"
        "  settings.externl: unknown key; did you mean 'external'?\n"
        "  light.\"zoo.light\".forbd: unknown key; did you mean 'forbid'?",
    ),
    PolicyCase(
        "duplicate-light-table",
        f"{_H}{_L}{_L}".encode(),
        'policy.toml:5:19: invalid TOML: Cannot declare [light."zoo.light"] twice',
    ),
    PolicyCase(
        "duplicate-light-shorthand-and-table",
        f'{_H}[light]\n"zoo.light" = "fast"\n{_L}'.encode(),
        "policy.toml:5:19: invalid TOML: Cannot overwrite a value (is a key set twice?)",
    ),
    PolicyCase(
        "duplicate-light-quote-styles",
        f'{_H}[light]\n"zoo.light" = "fast"\n\'zoo.light\' = "fast"\n'.encode(),
        "policy.toml:5:21: invalid TOML: Cannot overwrite a value (is a key set twice?)",
    ),
    PolicyCase(
        "invalid-characters",
        f'[heavy]\n"zoo.he-avy" = "x"\n"zoo/heavy" = "x"\n"zo*o" = "x"\n{_L}'.encode(),
        "policy.toml is not valid (3 problems):\n"
        '  heavy."zoo.he-avy": invalid module pattern "zoo.he-avy": "he-avy" is not a Python identifier\n'
        '  heavy."zoo/heavy": invalid module pattern "zoo/heavy": "zoo/heavy" is not a Python identifier\n'
        '  heavy."zo*o": invalid module pattern "zo*o": wildcards must be whole segments ("*" or "**"), '
        'not part of "zo*o"',
    ),
    PolicyCase(
        "empty-segment",
        f'[heavy]\n"zoo..heavy" = "x"\n"zoo." = "x"\n"" = "x"\n{_L}'.encode(),
        "policy.toml is not valid (3 problems):\n"
        '  heavy."zoo..heavy": invalid module pattern "zoo..heavy": empty segment (a doubled, leading or '
        "trailing dot)\n"
        '  heavy."zoo.": invalid module pattern "zoo.": empty segment (a doubled, leading or trailing dot)\n'
        '  heavy."": invalid module pattern "": empty',
    ),
    PolicyCase(
        "unquoted-dotted-keys",
        b'[heavy]\nzoo.heavy = "x"\n[light.zoo.light]\nreason = "r"\n',
        "policy.toml is not valid (2 problems):\n"
        '  heavy.zoo.heavy: dotted keys make nested TOML tables; quote the module name: "zoo.heavy" = ...\n'
        "  light.zoo.light: dotted table names make nested TOML tables; quote the module name: "
        '[light."zoo.light"]',
        mypy=True,
        mypy_line="policy.toml:2: error: not valid (2 problems): heavy.zoo.heavy: dotted keys make nested "
        "TOML "
        'tables; quote the module name: "zoo.heavy" = ...; light.zoo.light: dotted table names make nested '
        'TOML tables; quote the module name: [light."zoo.light"]',
    ),
    PolicyCase(
        "ignore-without-reason",
        f'{_H}{_L}[[ignore]]\nimport = "zoo.light -> zoo.heavy"\n'.encode(),
        "policy.toml is not valid (1 problem):\n"
        "  ignore[0].reason: missing; every [[ignore]] entry needs a reason (why the import is accepted)",
        mypy=True,
        mypy_line="policy.toml:6: error: ignore[0].reason: missing; every [[ignore]] entry needs a "
        "reason (why the import is accepted)",
    ),
    PolicyCase("bom", f"\ufeff{_H}{_L}".encode(), None, exit=1),
    PolicyCase(
        "invalid-utf8",
        f"{_H}# caf".encode() + b"\xe9\n" + _L.encode(),
        "policy.toml:3:6: not valid UTF-8 (byte 0xe9)",
    ),
    PolicyCase("nul-byte", f"{_H}".encode() + b"\x00\n", "policy.toml:3:1: invalid TOML: Invalid statement"),
    PolicyCase(
        "nested-too-deeply",  # ours (version): a file holding none of its tables is another tool's
        b"version = 1\nx = " + b"[" * 5000 + b"]" * 5000 + b"\n",
        "policy.toml: tables or arrays nested too deeply",
    ),
    PolicyCase(
        "unsupported-version",
        f"version = 2\n{_H}{_L}".encode(),
        "policy.toml is not valid (1 problem):\n"
        "  version: unsupported policy version 2; this importpolicy understands only version 1",
    ),
    PolicyCase(
        "interpreter-fails",
        f'[settings]\ninterpreter = "/bin/false"\n{_H}{_L}'.encode(),
        "interpreter /bin/false failed to report its sys.path (exit 1): no output",
    ),
]


@dataclass(frozen=True)
class PolicyRuns:
    check: Run
    flake8: Run


@pytest.fixture(scope="module")
def policy_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PolicyRuns]:
    """Every policy case through ``importpolicy check`` and ``flake8`` (default selection), batched: two
    interpreters (CLI cases, flake8 cases) running side by side."""
    base = tmp_path_factory.mktemp("policies")
    roots = {}
    for case in POLICY_CASES:
        root = write(base / case.id, _POLICY_TREE)
        (root / "policy.toml").write_bytes(case.policy)
        roots[case.id] = root
    checks, lints = run_all(
        lambda: run_batch(
            [("importpolicy", roots[c.id], ["check", "--no-cache"]) for c in POLICY_CASES],
            base / POLICY_CASES[0].id,
        ),
        lambda: run_batch(
            [("flake8", roots[c.id], ["src/zoo/light.py"]) for c in POLICY_CASES], base / POLICY_CASES[1].id
        ),
    )
    return {case.id: PolicyRuns(checks[i], lints[i]) for i, case in enumerate(POLICY_CASES)}


@pytest.mark.parametrize("case", POLICY_CASES, ids=[c.id for c in POLICY_CASES])
def test_policy_error_is_one_clear_message_in_cli_and_flake8(
    policy_runs: dict[str, PolicyRuns], case: PolicyCase
) -> None:
    runs = policy_runs[case.id]
    runs.check.assert_no_crash()
    runs.flake8.assert_no_crash()
    if case.message is None:
        assert runs.check.returncode == case.exit, runs.check
        assert runs.check.stderr == ""
        if case.exit == 0:
            assert runs.check.stdout == (
                "Nothing was checked: no [light] pattern of the policy names a module.\n")
            assert (runs.flake8.returncode, runs.flake8.stdout, runs.flake8.stderr) == (0, "", "")
        else:
            assert runs.flake8.found("IPL") == {("src/zoo/light.py", 1, "IPL001")}, runs.flake8
        return
    assert (runs.check.returncode, runs.check.stdout) == (2, ""), runs.check
    assert runs.check.stderr == f"importpolicy: {case.message}\n"
    # flake8: the same words, as one IPL900 at line 1 (exit 1), no E902/E999 on the file
    assert runs.flake8.stderr == "", runs.flake8
    assert_flake8_ipl900(runs.flake8, case.message)


def test_policy_option_naming_a_directory(tmp_path: Path) -> None:
    root = write(tmp_path, {**_POLICY_TREE, "conf/policy.toml/readme": "a directory named policy.toml\n"})
    checked, linted = run_all(
        lambda: cli(root, "check", "--policy", "conf/policy.toml"),
        lambda: flake8(root, "--import-policy", "conf/policy.toml", "src/zoo/light.py"),
    )
    for result in (checked, linted):
        result.assert_no_crash()
    assert (checked.returncode, checked.stderr) == (
        2,
        "importpolicy: conf/policy.toml: cannot read: Is a directory\n",
    )
    assert_flake8_ipl900(linted, "Is a directory")


# -- caches -----------------------------------------------------------------------------------------

_CACHE_TREE: Files = {
    "policy.toml": policy_text("zoo.light"),
    "src/zoo/__init__.py": "",
    "src/zoo/heavy.py": "",
    "src/zoo/mid.py": "X = 1\nimport zoo.heavy\n",
    "src/zoo/light.py": "import os\nfrom zoo.mid import X\n",
    "mypy.ini": "[mypy]\nplugins = flake8_importpolicy.mypy\nmypy_path = src\n",
}
CACHE = ".importpolicy_cache"


def _fill_caches(root: Path) -> None:
    """Every importpolicy cache, written in process (quick): facts, answers, interpreters, flake8's
    per-file index and mypy's index."""
    from flake8_importpolicy.answers.per_file import PerFileChecker
    from flake8_importpolicy.answers.whole import check_policy_cached
    from flake8_importpolicy.config.load import load_policy

    policy = load_policy(root / "policy.toml")
    check_policy_cached(policy)
    PerFileChecker().find_findings(root / "src/zoo/light.py")
    if not MYPY_SKIP:
        from flake8_importpolicy.answers.by_module import find_module_findings

        find_module_findings(str(root / "policy.toml"))
    kinds = {path.relative_to(root / CACHE).parts[0] for path in (root / CACHE).rglob("*.json")}
    assert kinds >= {"facts", "answers", "interpreters", "per-file"}, kinds


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _not_json(path: Path) -> None:
    path.write_bytes(b"\x00\xffnot json at all {[")


def _older_version(path: Path) -> None:
    """The entry as an older release would have written it: valid JSON, another schema (sealed again,
    so that the schema check is what refuses it)."""
    data = read_json_sealed(path)
    assert isinstance(data, dict)
    body = data["facts"] if isinstance(data.get("facts"), dict) else data
    if "format" in body:
        body["format"] = 0
    if "sites" in body:  # facts: site rows before lazy_use_line existed
        body["sites"] = [row[:-1] for row in body["sites"]]
        body["sites"].append([1, 0, "import", "zoo.extra", 0])
    if "info" in body:  # interpreters: without the path stamps
        del body["paths"]
    write_json_atomic(path, data)


def _deeply_nested(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def _functions_as_list(path: Path) -> None:
    data = read_json_sealed(path)
    assert isinstance(data, dict)
    body = data["facts"] if isinstance(data.get("facts"), dict) else data
    if "functions" in body:
        body["functions"] = []
    write_json_atomic(path, data)


def _corrupt(root: Path, damage: Callable[[Path], None], kinds: Iterable[str] | None = None) -> list[str]:
    damaged = []
    for path in sorted((root / CACHE).rglob("*.json")):
        kind = path.relative_to(root / CACHE).parts[0]
        if kinds is None or kind in kinds:
            damage(path)
            damaged.append(kind)
    return damaged


@pytest.fixture(scope="module")
def mypy_stdlib_cache(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A mypy cache holding the standard library only, written once with the mypy.ini every tree of this
    module uses (so each mypy run here costs about a second)."""
    return make_mypy_stdlib_cache(tmp_path_factory)


def make_mypy_stdlib_cache(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """See :func:`mypy_stdlib_cache` (tests/test_hostile.py makes its own)."""
    if MYPY_SKIP:
        return None
    root = write(tmp_path_factory.mktemp("mypy-stdlib"), _CACHE_TREE)
    result = mypy(root, "-c", "import typing")
    assert result.returncode == 0, result
    return root / ".mypy_cache"


def _with_stdlib_cache(root: Path, stdlib: Path | None) -> Path:
    if stdlib is not None and not (root / ".mypy_cache").exists():
        shutil.copytree(stdlib, root / ".mypy_cache")
    return root


CLEAN_CACHE_CHECK = "src/zoo/light.py:2:1: IPL001 light module zoo.light imports zoo.heavy at import time"
MYPY_IPL001 = (
    "src/zoo/light.py:2: error: IPL001 light module zoo.light imports zoo.heavy at import time "
    f"({HEAVY_REASON}): zoo.light -> zoo.mid (src/zoo/light.py:2) -> zoo.heavy (src/zoo/mid.py:2)"
    "  [import-policy]"
)


def _adapters(root: Path) -> tuple[Run, Run, Run | None]:
    jobs: list[Callable[[], Run]] = [lambda: cli(root, "check"), lambda: flake8(root, "src/zoo/light.py")]
    if not MYPY_SKIP:
        jobs.append(lambda: mypy(root, "-p", "zoo"))
    results = run_all(*jobs)
    return results[0], results[1], (results[2] if len(results) > 2 else None)


def _assert_same_answer(root: Path, checked: Run, linted: Run, typed: Run | None) -> None:
    for result in (checked, linted, typed):
        if result is not None:
            result.assert_no_crash()
    assert (checked.returncode, checked.stderr) == (1, ""), checked
    assert checked.stdout.startswith(CLEAN_CACHE_CHECK), checked.stdout
    assert linted.returncode == 1 and linted.stderr == "", linted
    assert linted.found("IPL") == {("src/zoo/light.py", 2, "IPL001")}, linted
    if typed is not None:
        assert typed.returncode == 1, typed
        assert typed.stdout.splitlines()[0] == MYPY_IPL001, typed


CACHE_DAMAGE = [
    pytest.param(_truncate, id="truncated"),
    pytest.param(_not_json, id="not-json"),
    pytest.param(_older_version, id="older-version"),
]


@pytest.mark.parametrize("damage", CACHE_DAMAGE)
def test_cache_damage_means_a_fresh_answer(
    tmp_path: Path, mypy_stdlib_cache: Path | None, damage: Callable[[Path], None]
) -> None:
    """Every cache file damaged at once: the CLI, flake8 and mypy (concurrently) recompute, repair the
    cache and give the cold answer."""
    root = _with_stdlib_cache(write(tmp_path, _CACHE_TREE), mypy_stdlib_cache)
    _fill_caches(root)
    damaged = _corrupt(root, damage)
    assert {"facts", "answers", "interpreters", "per-file"} <= set(damaged)
    _assert_same_answer(root, *_adapters(root))
    # and the repaired caches give it again
    _assert_same_answer(root, *_adapters(root))


@pytest.mark.parametrize(
    ("damage", "kinds"),
    [
        pytest.param(
            _deeply_nested,
            ["answers"],
            id="answers-nested-json",
        ),
        pytest.param(
            _deeply_nested,
            ["interpreters"],
            id="interpreters-nested-json",
        ),
        pytest.param(
            _deeply_nested,
            ["facts"],
            id="facts-nested-json",
        ),
        pytest.param(
            _deeply_nested,
            ["per-file"],
            id="per-file-nested-json",
        ),
        pytest.param(
            _deeply_nested,
            ["mypy"],
            id="mypy-nested-json",
            marks=needs_mypy,
        ),
        # 'functions' not an object (another schema): was an AttributeError traceback, fixed in efb24eb's
        # parent commits (functions_from_json checks the type)
        pytest.param(_functions_as_list, ["facts"], id="facts-functions-not-an-object"),
    ],
)
def test_cache_entry_of_another_shape_means_a_fresh_answer(
    tmp_path: Path, mypy_stdlib_cache: Path | None, damage: Callable[[Path], None], kinds: list[str]
) -> None:
    root = _with_stdlib_cache(write(tmp_path, _CACHE_TREE), mypy_stdlib_cache)
    _fill_caches(root)
    if kinds == ["facts"]:  # the whole answers would be used, and the facts never read
        for name in ("answers", "per-file", "mypy"):
            shutil.rmtree(root / CACHE / name, ignore_errors=True)
    assert _corrupt(root, damage, kinds)
    _assert_same_answer(root, *_adapters(root))


def test_cache_answers_with_non_string_also(tmp_path: Path) -> None:
    root = write(tmp_path, _CACHE_TREE)
    _fill_caches(root)
    (entry,) = (root / CACHE / "answers").glob("*.json")
    data: Any = read_json_sealed(entry)
    data["report"]["violations"][0][9] = [None]
    write_json_atomic(entry, data)  # sealed again: the report's own check refuses it
    checked = cli(root, "check")
    checked.assert_no_crash()
    assert checked.returncode == 1 and checked.stdout.startswith(CLEAN_CACHE_CHECK)


def _immutable(path: Path, on: bool) -> bool:
    """``chattr [-R] +i/-i``; False when chattr is unavailable or refused."""
    if shutil.which("chattr") is None:
        return False
    proc = subprocess.run(["chattr", "-R", "+i" if on else "-i", str(path)], capture_output=True,
                          timeout=HANG_CATCHER)
    return proc.returncode == 0


def test_cache_read_only_directory(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """A read-only cache whose entries are stale (the light module changed): every adapter gives the new
    answer and writes nothing. Not root: ``chmod -w``; root: ``chattr +i`` (immutable)."""
    root = _with_stdlib_cache(write(tmp_path, _CACHE_TREE), mypy_stdlib_cache)
    _fill_caches(root)
    cache = root / CACHE
    before = sorted(str(p.relative_to(cache)) for p in cache.rglob("*"))
    if os.geteuid() == 0:
        if not _immutable(cache, True):
            pytest.skip("root, and chattr +i is not available here: a read-only directory cannot be made")
    else:
        for path in [cache, *cache.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
    try:
        (root / "src/zoo/light.py").write_text("import os\nimport zoo.heavy  # now direct\n")
        checked, linted, typed = _adapters(root)
        after = sorted(str(p.relative_to(cache)) for p in cache.rglob("*"))
    finally:
        if os.geteuid() == 0:
            _immutable(cache, False)
        else:
            for path in [cache, *cache.rglob("*")]:
                path.chmod(path.stat().st_mode | 0o200)
    for result in (checked, linted, typed):
        if result is not None:
            result.assert_no_crash()
    assert after == before
    assert checked.returncode == 1
    assert "    src/zoo/light.py:2: zoo.light -> zoo.heavy (import)" in checked.stdout.splitlines(), checked
    assert linted.found("IPL") == {("src/zoo/light.py", 2, "IPL001")}, linted
    if typed is not None:
        assert typed.returncode == 1 and "zoo.light -> zoo.heavy (src/zoo/light.py:2)" in typed.stdout, typed


def test_cache_dir_that_is_a_file(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    policy = policy_text("zoo.light").replace("[settings]\n", '[settings]\ncache-dir = "not-a-dir/sub"\n')
    root = _with_stdlib_cache(
        write(tmp_path, {**_CACHE_TREE, "policy.toml": policy, "not-a-dir": "a file\n"}), mypy_stdlib_cache
    )
    _assert_same_answer(root, *_adapters(root))
    assert (root / "not-a-dir").read_text() == "a file\n"
    cleared = cli(root, "cache", "clear")
    cleared.assert_no_crash()
    assert (cleared.returncode, cleared.stdout) == (0, "no cache at not-a-dir/sub\n")


# -- mypy -------------------------------------------------------------------------------------------

_MYPY_TREE: Files = with_odd_heavy({
    "mypy.ini": "[mypy]\nplugins = flake8_importpolicy.mypy\nmypy_path = src:src2\n",
    "policy.toml": policy_text("zoo.light_enc", "zoo.light_graph", roots=("src", "src2")),
    "src/zoo/__init__.py": "",
    "src/zoo/heavy.py": "",
    "src/zoo/light_enc.py": "import zoo.enc_bom\nimport zoo.enc_latin1\nimport zoo.enc_crlf\n"
    "import zoo.enc_tabs\n",
    "src/zoo/enc_bom.py": b"\xef\xbb\xbf# a BOM\nimport zoo.heavy\n",
    "src/zoo/enc_latin1.py": b"# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\nimport zoo.heavy\n",
    "src/zoo/enc_crlf.py": b"import os\r\n\r\nif os.sep:\r\n    import zoo.heavy\r\n",
    "src/zoo/enc_tabs.py": b"import os\nif True:\n\tif os.sep:\n\t\timport zoo.heavy\n",
    "src/zoo/light_graph.py": "import zoo.selfpkg\nimport zoo.cyc2a\nimport zoo.cyc0\nimport ns.a\n",
    "src/zoo/selfpkg/__init__.py": "import zoo.selfpkg\nfrom zoo import selfpkg\nfrom . import sub\n"
    "import zoo.heavy\n",
    "src/zoo/selfpkg/sub.py": "from zoo.selfpkg import sub\n",
    "src/zoo/cyc2a.py": "import zoo.cyc2b\n",
    "src/zoo/cyc2b.py": "import zoo.cyc2a\nimport zoo.heavy\n",
    **{f"src/zoo/cyc{i}.py": f"import zoo.cyc{(i + 1) % 50}\n" for i in range(49)},
    "src/zoo/cyc49.py": "import zoo.cyc0\nimport zoo.heavy\n",
    "src/ns/a.py": "import ns.b\n",
    "src2/ns/b.py": "import zoo.heavy\n",
})


def _mypy_ipl001(light: str, line: int) -> str:
    path = "src/" + light.replace(".", "/") + ".py"
    return f"{path}:{line}: error: IPL001 light module {light} imports zoo.odd."


@needs_mypy
def test_mypy_odd_but_valid_sources(tmp_path: Path, mypy_stdlib_cache: Path | None) -> None:
    """BOM, latin-1 cookie, CRLF, tabs, a self-importing package, cycles of 2 and 50 and a namespace
    package over two roots, through mypy: every chain found, exit 1, no crash; warm, the same."""
    root = _with_stdlib_cache(write(tmp_path, _MYPY_TREE), mypy_stdlib_cache)
    cold = mypy(root, "-p", "zoo", "-p", "ns")
    warm = mypy(root, "-p", "zoo", "-p", "ns")
    cold.assert_no_crash()
    assert cold.returncode == 1, cold
    lines = cold.stdout.splitlines()
    expected = [(("zoo.light_enc", n)) for n in (1, 2, 3, 4)] + [("zoo.light_graph", n) for n in (1, 2, 3, 4)]
    for light, line in expected:
        assert any(text.startswith(_mypy_ipl001(light, line)) for text in lines), (light, line, cold.stdout)
    assert lines[-1].startswith(f"Found {len(expected)} errors in 2 files"), cold.stdout
    assert (warm.returncode, warm.stdout) == (cold.returncode, cold.stdout)


@pytest.mark.parametrize(
    ("files", "target", "expected"),
    [
        pytest.param(
            {"src/zoo/light.py": "import os\n\ndef broken(:\n    pass\n"},
            "zoo.light",
            "src/zoo/light.py:3: error: ",
            id="syntax-in-light",
        ),
        pytest.param(
            {
                "src/zoo/light.py": "import zoo.d1\n",
                "src/zoo/d1.py": "import zoo.d2\n",
                "src/zoo/d2.py": "X = 1\n\nclass (:\n    pass\n",
            },
            "zoo.light",
            "src/zoo/d2.py:3: error: ",
            id="syntax-deep-in-chain",
        ),
        pytest.param(
            {"src/zoo/light.py": "import zoo.nul\n", "src/zoo/nul.py": b"X = 1\nimport os\x00\n"},
            "zoo.light",
            "src/zoo/nul.py",
            id="nul-byte",
        ),
        pytest.param(
            {"src/zoo/light.py": "import zoo.bad\n", "src/zoo/bad.py": b"X = '\xff'\n"},
            "zoo.light",
            "src/zoo/bad.py",
            id="invalid-utf8",
        ),
    ],
)
@needs_mypy
def test_mypy_unparsable_module_is_mypys_own_error(
    tmp_path: Path, mypy_stdlib_cache: Path | None, files: Files, target: str, expected: str
) -> None:
    root = _with_stdlib_cache(
        write(
            tmp_path,
            {
                "mypy.ini": _CACHE_TREE["mypy.ini"],
                "policy.toml": policy_text("zoo.light"),
                "src/zoo/__init__.py": "",
                "src/zoo/heavy.py": "",
                **files,
            },
        ),
        mypy_stdlib_cache,
    )
    result = mypy(root, "-m", target)
    result.assert_no_crash()
    assert result.returncode == 2, result
    assert expected in result.output, result  # mypy's own message, on the broken file
    assert "errors prevented further checking" in result.stdout, result
    assert "IPL" not in result.output, result


MYPY_POLICY_CASES = [case for case in POLICY_CASES if case.mypy]


@needs_mypy
@pytest.mark.parametrize("case", MYPY_POLICY_CASES, ids=[c.id for c in MYPY_POLICY_CASES])
def test_mypy_policy_error_is_one_line_and_exit_2(
    tmp_path: Path, mypy_stdlib_cache: Path | None, case: PolicyCase
) -> None:
    root = _with_stdlib_cache(write(tmp_path, {**_CACHE_TREE}), mypy_stdlib_cache)
    (root / "policy.toml").write_bytes(case.policy)
    result = mypy(root, "-p", "zoo")
    result.assert_no_crash()
    if case.message is None:
        assert (result.returncode, result.stderr) == (case.exit, ""), result
        assert result.stdout.startswith("Success: no issues found"), result
        return
    assert (result.returncode, result.stderr) == (2, f"{case.mypy_line}\n"), result
    assert result.stdout == "Found 1 error in 1 file (errors prevented further checking)\n", result
