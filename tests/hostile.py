"""The harness of the hostile-input corpus: running the real clients on real trees, and the trees,
caches and helpers the topic files share.

The corpus is one file per topic, each module saying what its inputs are:

- ``test_hostile_sources.py``: sources (the zoo of odd and broken modules in one tree, special files,
  long chains, big sources);
- ``test_hostile_policy.py``: policies (broken, huge, not a regular file, empty, in every client);
- ``test_hostile_cache.py``: cache directories and entries (damaged, mixed, stale, linked, too long);
- ``test_hostile_baseline.py``: baseline files; ``test_hostile_interpreter.py``: the interpreter key;
- ``test_hostile_verify.py``: ``importpolicy verify`` (processes left behind, memory, hangs);
- ``test_hostile_cli.py``: exit statuses, a deleted working directory, ``--jobs``.

The adapters are named by letter in those files: C = ``importpolicy`` (``python -m
flake8_importpolicy``), F = ``flake8`` (default selection, which includes IPL), M = ``mypy`` with
``plugins = flake8_importpolicy.mypy`` (each with its own ``--cache-dir`` under ``tmp_path``; skipped
with the reason when ``flake8_importpolicy.mypy`` cannot be imported), V = ``importpolicy verify``, E =
the engine in this process. Every hostile input goes through the real adapters.

"No crash" means: the expected exit status, no ``Traceback``, no ``INTERNAL ERROR``, no flake8 "failed
during execution" and no "This is a bug"; "a clear message" means the file, the line and what is wrong
(for a policy: the key and the fix), the same in every adapter. A run that never ends is caught by the
suite's one hang catcher (``helpers.HANG_CATCHER``); how fast the inputs that were slow are is a matter
for ``benchmarks/``, never a bound in a test.

Many inputs share one tree and one run of each adapter (``zoo``), independent runs go in parallel, and
the policy cases run as batches (``run_batch``: every case's ``importpolicy check`` in one fresh
interpreter, every case's ``flake8`` in another, each with its own working directory and captured
output), so that the corpus stays cheap on 2 cores. Each input still has a test of its own, asserting
on the shared output. Where the tool is wrong the test is ``xfail(strict=True)`` with a reason starting
``BUG:``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from helpers import HANG_CATCHER

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
        f'[heavy]\n"zoo.heavy" = "{HEAVY_REASON}"\n',
    ]
    lines += [f'[light."{light}"]\nreason = "must stay light"\n' for light in lights]
    return "\n".join(lines)


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


@pytest.fixture(scope="module")
def mypy_stdlib_cache(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A mypy cache holding the standard library only, written once with the mypy.ini every tree of this
    module uses (so each mypy run here costs about a second)."""
    return make_mypy_stdlib_cache(tmp_path_factory)


def make_mypy_stdlib_cache(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """See :func:`mypy_stdlib_cache` (the topic files share it)."""
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


MYPY_INI = "[mypy]\nplugins = flake8_importpolicy.mypy\nmypy_path = src\n"


# light -> mid -> heavy: one violation, found through a module the light module imports (the mypy.ini
# is the one of mypy_stdlib_cache, whose standard library cache each tree gets a copy of)
TREE: Files = _CACHE_TREE


assert TREE["src/zoo/mid.py"] == "X = 1\nimport zoo.heavy\n" and TREE["mypy.ini"] == MYPY_INI


CHECK_IPL001 = "src/zoo/light.py:2:1: IPL001 light module zoo.light imports zoo.heavy at import time"


MYPY_IPL001 = (
    "src/zoo/light.py:2: error: IPL001 light module zoo.light imports zoo.heavy at import time "
    f"({HEAVY_REASON}): zoo.light -> zoo.mid (src/zoo/light.py:2) -> zoo.heavy (src/zoo/mid.py:2)"
    "  [import-policy]"
)


def adapters(root: Path, *, lint: str = "src/zoo/light.py") -> tuple[Run, Run, Run | None]:
    """``importpolicy check``, ``flake8`` and (when it can run) ``mypy -p zoo``, side by side."""
    jobs: list[Callable[[], Run]] = [lambda: cli(root, "check"), lambda: flake8(root, lint)]
    if not MYPY_SKIP:
        jobs.append(lambda: mypy(root, "-p", "zoo"))
    results = run_all(*jobs)
    return results[0], results[1], (results[2] if len(results) > 2 else None)


def assert_violation_found(checked: Run, linted: Run, typed: Run | None) -> None:
    """Every adapter reports the one violation of :data:`TREE`, without a crash."""
    for result in (checked, linted, typed):
        if result is not None:
            result.assert_no_crash()
    assert (checked.returncode, checked.stderr) == (1, ""), checked
    assert checked.stdout.startswith(CHECK_IPL001), checked
    assert linted.returncode == 1 and linted.found("IPL") == {("src/zoo/light.py", 2, "IPL001")}, linted
    if typed is not None:
        assert typed.returncode == 1 and typed.stdout.splitlines()[0] == MYPY_IPL001, typed


def assert_policy_error(root: Path, problem: str, *, key: str = "settings.cache-dir") -> None:
    """``problem`` (after ``key: ``) is the one policy error of ``check``, ``cache clear``, flake8 and
    mypy: exit 2 (flake8: IPL900 at line 1 of the checked file, 1), no crash."""
    checked, linted, typed = adapters(root)
    cleared = cli(root, "cache", "clear")
    message = f"policy.toml is not valid (1 problem):\n  {key}: {problem}"
    for result in (checked, cleared):
        result.assert_no_crash()
        assert (result.returncode, result.stdout, result.stderr) == (2, "", f"importpolicy: {message}\n")
    linted.assert_no_crash()
    assert_flake8_ipl900(linted, message)
    if typed is not None:
        typed.assert_no_crash()
        assert typed.returncode == 2, typed
        shown = re.escape(f"{key}: {problem}")
        assert re.fullmatch(rf"policy\.toml(:\d+)?: error: {shown}\n", typed.stderr), typed


def files_under(root: Path) -> dict[str, bytes | str]:
    """Every file and link under ``root`` except the cache's and mypy's: ``{path: bytes or link}``."""
    found: dict[str, bytes | str] = {}
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = [d for d in subdirectories if d not in (CACHE, ".mypy_cache")]
        for name in [*names, *(d for d in subdirectories if os.path.islink(os.path.join(directory, d)))]:
            path = os.path.join(directory, name)
            shown = os.path.relpath(path, root)
            found[shown] = os.readlink(path) if os.path.islink(path) else Path(path).read_bytes()
    return found


# -- hangs and blow-ups: a hang guard each (the suite's hang catcher; the speed is in benchmarks/) ---


def _guarded(*jobs: Callable[[], Run]) -> list[Run]:
    try:
        return run_all(*jobs)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hangs: {exc}")


def _alive(pid: int, wait: float = 60.0) -> bool:
    """Whether ``pid`` still runs ``wait`` seconds from now (a SIGKILL takes a moment to land; the
    answer comes as soon as it has: ``wait`` only bounds a kill that never comes, and stays below the
    300 s the forked child sleeps)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().split(")")[-1].split()[0] == "Z":  # a zombie is dead
                    return False
        except OSError:
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)


def _adapter_jobs(root: Path) -> list[Callable[[], Run | None]]:
    jobs: list[Callable[[], Run | None]] = [
        lambda: cli(root, "check"), lambda: flake8(root, "src/zoo/light.py")
    ]
    jobs.append((lambda: mypy(root, "-p", "zoo")) if not MYPY_SKIP else (lambda: None))
    return jobs
