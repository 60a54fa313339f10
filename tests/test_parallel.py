"""Parallel extraction (flake8_importpolicy.analysis.parallel) and the early interpreter query.

The promise: ``jobs`` changes how fast a check is, never what it answers. Every fixture tree and a
generated project deep and wide enough to keep the workers busy are checked with one job and with
two, with and without the facts cache, and the reports must be equal. A pool that breaks midway
(a worker killed) falls back to extracting in the engine's own process. Workers fill the same facts
cache a serial run reads.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import HANG_CATCHER, fixture_dirs, run_import

from flake8_importpolicy.analysis import parallel, resolve
from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.analysis.parallel import FactsPool, default_jobs
from flake8_importpolicy.answers.facts_cache import DiskFactsCache
from flake8_importpolicy.cli import main
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.model.facts import Target
from flake8_importpolicy.model.findings import Report

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="worker processes are forked on Linux only")

TARGET = Target(versions=((3, 11),), platform="linux")


@pytest.fixture(autouse=True)
def eager_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start workers after the first file and whatever the machine's load, and keep them however slow:
    these tests are about answers with a pool, which the thresholds would otherwise skip or stop for
    trees this small."""
    monkeypatch.setattr(parallel, "MIN_MISSES", 1)
    monkeypatch.setattr(parallel, "_MIN_PACE", 0.0)  # files of any size
    monkeypatch.setattr(parallel, "_cpus_idle", lambda jobs: True)
    monkeypatch.setattr(parallel, "_TRIAL", 10**9)  # nor stop them for being slower than one job


def check(root: Path, jobs: int, cache: DiskFactsCache | None = None) -> Report:
    with PolicyEngine(load_policy(root / "policy.toml"), facts_cache=cache, jobs=jobs) as engine:
        return engine.check()


def make_project(root: Path, width: int = 12, depth: int = 5) -> Path:
    """``app.light`` imports a grid of modules ``depth`` levels deep, ``width`` wide: every module of
    level i imports every module of level i + 1 (some through from-imports of submodules, some in
    function bodies only); the last level reaches ``app.heavy`` through one module only, and a
    module-level call runs a function that imports another heavy module."""
    files: dict[str, str] = {
        "app/__init__.py": "",
        "app/heavy.py": "",
        "app/heavy2.py": "",
        "app/helpers.py": "def setup():\n    import app.heavy2\n",
    }
    for level in range(depth):
        package = f"app/l{level}"
        files[f"{package}/__init__.py"] = "" if level % 2 else "from . import m0\n"
        for i in range(width):
            nxt = "\n".join(
                f"import app.l{level + 1}.m{j}" if j % 3 else f"from app.l{level + 1} import m{j}"
                for j in range(width)
            ) if level + 1 < depth else ("import app.heavy" if i == width - 1 else "")
            files[f"{package}/m{i}.py"] = (
                f"{nxt}\nME = {level * width + i}\n\n\ndef later():\n    import app.heavy\n"
                + ("import app.helpers\napp.helpers.setup()\n" if (level, i) == (2, 3) else "")
            )
    files["app/light.py"] = "\n".join(f"import app.l0.m{i}" for i in range(width)) + "\n"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "policy.toml").write_text(
        '[settings]\nsource-roots = ["."]\nexternal = "stop"\n\n'
        '[heavy]\n"app.heavy" = "slow"\n"app.heavy2" = "slower"\n\n'
        '[light."app.light"]\nreason = "r"\n\n[light."app.l2.m3"]\nreason = "r"\n'
    )
    return root


@pytest.mark.parametrize("root", fixture_dirs(), ids=lambda p: p.name)
def test_every_fixture_same_report_with_two_jobs(root: Path) -> None:
    assert check(root, jobs=2) == check(root, jobs=1)


def test_generated_project_same_report_with_and_without_cache(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    serial = check(root, jobs=1)
    assert {v.heavy for v in serial.violations} == {"app.heavy", "app.heavy2"}
    assert check(root, jobs=2) == serial
    cache = DiskFactsCache(tmp_path / "cache")
    assert check(root, jobs=2, cache=cache) == serial  # cold cache: workers fill it
    written = sorted((tmp_path / "cache" / "facts").glob("*/*.json"))
    assert len(written) >= 5 * 12
    time.sleep(0.5)  # the engine waited for its workers: nothing is written after it returned
    assert sorted((tmp_path / "cache" / "facts").glob("*/*.json")) == written
    warm = DiskFactsCache(tmp_path / "cache")
    assert check(root, jobs=1, cache=warm) == serial
    assert warm.misses == 0 and warm.hits >= 5 * 12


def test_engine_uses_prefetched_facts(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    with PolicyEngine(load_policy(root / "policy.toml"), jobs=2) as engine:
        taken: list[Path] = []
        pool = engine._pool
        original = pool.take

        def take(path: Path) -> object:
            future = pool._modules.get(path)
            if future is not None:
                future.result()  # as if the workers were ahead of the traversal (idle CPUs)
            found = original(path)
            if found is not None:
                taken.append(path)
            return found

        pool.take = take  # type: ignore[method-assign]
        report = engine.check()
        assert pool.active
    assert report == check(root, jobs=1)
    assert len(taken) > 40, "with the workers ahead, the traversal uses what they extracted"


def test_a_file_still_queued_is_extracted_in_process(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    with PolicyEngine(load_policy(root / "policy.toml"), jobs=2) as engine:
        pool = engine._pool
        pool.start()
        path = root / "app" / "l4" / "m7.py"
        pool.prefetch(path)
        future = pool._modules[path]
        if future.cancel():  # still queued: take gives it back, the engine extracts it itself
            pool._modules[path] = future
            assert pool.take(path) is None
        assert engine.check() == check(root, jobs=1)


# Killing a worker makes the pool's manager thread fail futures the engine already cancelled
# (InvalidStateError in concurrent.futures' terminate_broken): a CPython quirk of a broken pool,
# reported as an unhandled thread exception; the engine's answer is what this test is about.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_killed_worker_falls_back_to_serial_extraction(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    serial = check(root, jobs=1)
    with PolicyEngine(load_policy(root / "policy.toml"), jobs=2) as engine:
        engine._pool.start()
        executor = engine._pool._executor
        assert executor is not None
        executor.submit(os.getpid).result()  # the workers exist once a task has run
        for pid in list(executor._processes):  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)
        assert engine.check() == serial


def test_unreadable_prefetched_file_gives_the_serial_problem(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    (root / "app" / "l1" / "m4.py").unlink()
    (root / "app" / "l1" / "m4.py").symlink_to(root / "missing.py")  # resolves, cannot be read
    assert check(root, jobs=2) == check(root, jobs=1)


def test_pool_waits_for_enough_misses_and_idle_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "MIN_MISSES", 3)
    pool = FactsPool(2, TARGET, None)
    try:
        pool.note_miss(0.001)
        pool.note_miss(0.001)
        assert not pool.active
        monkeypatch.setattr(parallel, "_cpus_idle", lambda jobs: False)
        pool.note_miss(0.001)
        assert not pool.active, "a busy machine gets no workers"
        monkeypatch.setattr(parallel, "_cpus_idle", lambda jobs: True)
        pool.note_miss(0.001)
        assert pool.active
    finally:
        pool.close()


def test_pool_starts_only_for_files_worth_sending(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files the engine extracts faster than a file and its facts travel to a worker and back are
    never sent (the synthetic 10,000-module tree's: 0.2 ms each)."""
    monkeypatch.setattr(parallel, "MIN_MISSES", 3)
    monkeypatch.setattr(parallel, "_MIN_PACE", 0.0005)
    pool = FactsPool(2, TARGET, None)
    try:
        for _ in range(10):
            pool.note_miss(0.0002)
        assert not pool.active
        for _ in range(20):
            pool.note_miss(0.002)
        assert pool.active, "once the files take long enough on average, workers start"
    finally:
        pool.close()


def test_pool_with_one_job_never_starts(tmp_path: Path) -> None:
    pool = FactsPool(1, TARGET, None)
    pool.start()
    for _ in range(10):
        pool.note_miss(0.001)
    assert not pool.active
    pool.prefetch(tmp_path / "x.py")
    assert pool.take(tmp_path / "x.py") is None
    assert default_jobs() >= 1


def test_cli_jobs_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(tmp_path / "p")
    monkeypatch.chdir(root)
    outputs = []
    for jobs in ("1", "2"):
        assert main(["check", "--no-cache", "--jobs", jobs]) == 1
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "IPL001" in outputs[0]
    with pytest.raises(SystemExit) as exc:
        main(["check", "-j", "0"])
    assert exc.value.code == 2
    assert "--jobs must be at least 1, got 0" in capsys.readouterr().err


def test_deeply_nested_module_same_report_with_two_jobs(tmp_path: Path) -> None:
    """Workers are forked deep inside the engine, so their stacks are deeper than the engine's own:
    a module nested close to the recursion limit was IPL005 with two jobs and analysed with one."""
    root = make_project(tmp_path / "p", width=2, depth=2)
    light = root / "app" / "light.py"
    for count in range(451, 511, 6):  # odd: ``if not ... X`` is true, ``app.heavy`` runs
        (root / "app" / "deep.py").write_text(
            "X = 0\nif " + "not " * count + "X:\n    import app.heavy\n"
        )
        light.write_text("import app.l0.m0\nimport app.deep\n")
        assert check(root, jobs=2) == check(root, jobs=1), count
    assert "app.heavy" in run_import("app.deep", [root])  # CPython compiles and runs all of them


# -- the interpreter query, started early ----------------------------------------------------------


def test_started_query_gives_the_same_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolve, "_QUERY_CACHE", {})
    plain = resolve.query_interpreter(sys.executable)
    monkeypatch.setattr(resolve, "_QUERY_CACHE", {})
    resolve.start_interpreter_query(sys.executable)
    assert resolve.query_is_running(sys.executable)
    assert resolve.query_interpreter(sys.executable) == plain
    assert not resolve.query_is_running(sys.executable)


def test_started_query_of_a_missing_interpreter_reports_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resolve, "_QUERY_CACHE", {})
    missing = str(tmp_path / "no-python")
    resolve.start_interpreter_query(missing)  # silent: the query reports
    with pytest.raises(resolve.InterpreterError, match="cannot run interpreter"):
        resolve.query_interpreter(missing)


def test_query_started_without_a_temporary_directory_is_left_to_the_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Starting a query early never fails: without a writable temporary directory nothing is
    started, and the query itself reports the problem (an InterpreterError, exit 2), where a
    command that started it before reading its policy would otherwise end in an internal error."""
    monkeypatch.setattr(resolve, "_QUERY_CACHE", {})
    monkeypatch.setattr(resolve, "_STARTED", {})

    def no_directory(*args: object, **kwargs: object) -> None:
        raise FileNotFoundError("no usable temporary directory")

    monkeypatch.setattr(resolve.tempfile, "TemporaryDirectory", no_directory)
    resolve.start_interpreter_query(sys.executable)
    assert not resolve.query_is_running(sys.executable)
    with pytest.raises(resolve.InterpreterError, match="cannot run interpreter"):
        resolve.query_interpreter(sys.executable)


def test_started_query_of_a_failing_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolve, "_QUERY_CACHE", {})
    fake = tmp_path / "fake-python"
    fake.write_text("#!/bin/sh\necho 'boom' >&2\nexit 3\n")
    fake.chmod(0o755)
    resolve.start_interpreter_query(str(fake))
    with pytest.raises(resolve.InterpreterError, match=r"failed to report its sys.path \(exit 3\): boom"):
        resolve.query_interpreter(str(fake))


def test_cli_leaves_no_started_query_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command that fails before it needs the interpreter (a usage error) must not leave its early
    query running, to be collected by a later ``main`` in the same process: that one would see the
    environment of the failed command (here a ``PYTHONPATH`` without ``extramod``), not its own."""
    root = make_project(tmp_path / "p", width=2, depth=2)
    monkeypatch.chdir(root)
    monkeypatch.setattr(resolve, "_QUERY_CACHE", {})
    monkeypatch.setattr(resolve, "_STARTED", {})
    with pytest.raises(SystemExit):
        main(["why", "not a module", "--no-cache"])
    assert resolve._STARTED == {}
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "extramod.py").write_text("")
    paths = [str(extra), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    assert main(["why", "extramod", "--no-cache"]) == 0, capsys.readouterr().err
    # the environment's answer
    subprocess.run([sys.executable, "-c", "import extramod"], check=True, timeout=HANG_CATCHER)


def test_query_started_before_the_policy_is_read_yields_to_the_policys_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``check --no-cache`` starts asking the interpreter running it before the policy is read; a
    policy that names another interpreter gets that one asked, and the early query is stopped, not
    used."""
    root = make_project(tmp_path / "p")
    other = tmp_path / "other-python"
    other.write_text("#!/bin/sh\nexec " + sys.executable + ' "$@"\n')
    other.chmod(0o755)
    policy = root / "policy.toml"
    policy.write_text(policy.read_text().replace(
        "[settings]\n", f"[settings]\ninterpreter = {str(other)!r}\n", 1
    ))
    monkeypatch.chdir(root)
    monkeypatch.setattr(resolve, "_QUERY_CACHE", {})
    monkeypatch.setattr(resolve, "_STARTED", {})
    assert main(["check", "--no-cache", "--format", "json"]) == 1, capsys.readouterr().err
    assert resolve._STARTED == {}
    assert [key[0] for key in resolve._QUERY_CACHE] == [str(other)]


def test_light_files_are_extracted_while_the_query_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "p")
    policy = load_policy(root / "policy.toml")
    plain = check(root, jobs=1)
    monkeypatch.setattr(resolve, "_QUERY_CACHE", {})
    resolve.start_interpreter_query(None)
    with PolicyEngine(policy, jobs=1) as engine:
        early = dict(engine._early)
        # app, app.light, app.l2, app.l2.m3: the light modules and their parent packages
        assert {p.relative_to(root).as_posix() for p in early} == {
            "app/__init__.py", "app/light.py", "app/l2/__init__.py", "app/l2/m3.py",
        }
        assert engine.check() == plain
        assert not engine._early, "every file extracted early was used"
    assert not resolve._STARTED


def test_no_early_extraction_for_another_interpreter_or_without_a_running_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "p")
    policy = load_policy(root / "policy.toml")
    with PolicyEngine(policy, jobs=1) as engine:
        assert engine._early == {}
    monkeypatch.setattr(resolve, "_QUERY_CACHE", {})
    other = tmp_path / "python"
    other.symlink_to(sys.executable)  # the same interpreter under another name: queried, not assumed
    if os.path.realpath(other) == os.path.realpath(sys.executable):
        other.unlink()
        other.write_text("#!/bin/sh\nexec " + sys.executable + ' "$@"\n')
        other.chmod(0o755)
    resolve.start_interpreter_query(str(other))
    with PolicyEngine(policy, interpreter=str(other), jobs=1) as engine:
        assert engine._early == {}
        assert engine.check() == check(root, jobs=1)
