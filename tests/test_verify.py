"""``importpolicy verify``: real subprocesses on the fixture trees under tests/fixtures_runtime/.

Each scenario's policy is verified once (module-scoped fixtures); the tests then look at the
results. The hang scenario gives its never-ending import a timeout of its own (``HANG_TIMEOUT``); every
other run gets the suite's hang catcher, so no result depends on how busy the machine is.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import HANG_CATCHER

from flake8_importpolicy import cli
from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.model.graph import Hop, HopKind
from flake8_importpolicy.model.patterns import parse_pattern
from flake8_importpolicy.model.ignore import IgnoreRule
from flake8_importpolicy.model.policy import HeavyRule
from flake8_importpolicy.runtime.judge import (
    LightResult,
    VerifyReport,
    judge_run,
    runtime_chain,
)
from flake8_importpolicy.runtime.render import format_verify_text
from flake8_importpolicy.runtime.run import ExecutedModule, RuntimeRun, recorder_path
from flake8_importpolicy.runtime.verify import (
    assert_import_light,
    verify_import,
    verify_policy,
)

RUNTIME_FIXTURES = Path(__file__).parent / "fixtures_runtime"
HANG_TIMEOUT = 10.0
"""``verify``'s timeout in the scenario whose import never finishes: what it is given before it is
stopped, long enough that even a loaded machine has started executing it by then."""


def _verify(scenario: str, *, timeout: float = HANG_CATCHER, **kwargs: object) -> VerifyReport:
    policy = load_policy(RUNTIME_FIXTURES / scenario / "policy.toml")
    return verify_policy(policy, timeout=timeout, **kwargs)  # type: ignore[arg-type]


def _result(report: VerifyReport, light: str) -> LightResult:
    return next(r for r in report.results if r.light == light)


def _hops(chain: tuple[Hop, ...], root: Path) -> list[tuple[str, str, str, int, str]]:
    return [
        (
            hop.module,
            hop.imported,
            hop.path.relative_to(root).as_posix() if hop.path else "?",
            hop.line,
            hop.kind,
        )
        for hop in chain
    ]


@pytest.fixture(scope="module")
def clean() -> VerifyReport:
    return _verify("clean")


@pytest.fixture(scope="module")
def parent_init() -> VerifyReport:
    return _verify("parent_init")


@pytest.fixture(scope="module")
def runtime_only() -> VerifyReport:
    return _verify("runtime_only")


@pytest.fixture(scope="module")
def lazy() -> VerifyReport:
    return _verify("lazy")


@pytest.fixture(scope="module")
def after_import() -> VerifyReport:
    return _verify("after_import")


PROGRESS: list[tuple[int, int, str]] = []


@pytest.fixture(scope="module")
def broken() -> VerifyReport:
    def progress(done: int, total: int, result: LightResult) -> None:
        PROGRESS.append((done, total, result.light))

    return _verify("broken", timeout=HANG_TIMEOUT, progress=progress)


# -- the scenarios ---------------------------------------------------------------------------------


def test_clean_light_module(clean: VerifyReport) -> None:
    result = _result(clean, "app.light")
    assert not result.failed, result.summary()
    assert clean.exit_code == 0
    executed = [m.name for m in result.run.executed]
    assert executed[:3] == ["app", "app.light", "app.util"]
    assert "json" in executed
    assert "app.heavy" not in executed  # imported inside a function that import time never calls
    assert result.run.outcome == "imported"
    assert "OK: 1 light module verified" in format_verify_text(clean, str)


def test_violation_via_parent_init(parent_init: VerifyReport) -> None:
    root = RUNTIME_FIXTURES / "parent_init"
    result = _result(parent_init, "app.ops.light")
    assert result.failed and parent_init.exit_code == 1
    assert [f.module for f in result.forbidden] == ["app.heavy"]
    assert result.static_missed == () and result.not_observed == ()
    finding = result.forbidden[0]
    assert finding.predicted is True
    assert _hops(finding.chain, root) == [
        ("app.ops.light", "app.ops", "app/ops/light.py", 1, HopKind.PARENT_PACKAGE),
        ("app.ops", "app.ops.fused", "app/ops/__init__.py", 3, HopKind.RUNTIME),
        ("app.ops.fused", "app.heavy", "app/ops/fused.py", 1, HopKind.RUNTIME),
    ]
    # The runtime chain is the static chain, hop for hop (module, imported, file, line).
    policy = load_policy(root / "policy.toml")
    rules = policy.rules_for("app.ops.light")
    violations = PolicyEngine(policy).check_light_module("app.ops.light", rules).violations
    assert [h[:4] for h in _hops(violations[0].chain, root)] == [
        h[:4] for h in _hops(finding.chain, root)
    ]


def test_violation_text_uses_static_chain_format(parent_init: VerifyReport) -> None:
    policy = load_policy(RUNTIME_FIXTURES / "parent_init" / "policy.toml")
    text = format_verify_text(parent_init, policy.relpath)
    assert "FAIL app.ops.light" in text
    assert "  forbidden module executed: app.heavy (pretends to initialise CUDA)\n" in text
    assert "    app/ops/light.py:1: app.ops.light -> app.ops (parent-package)\n" in text
    assert "    app/ops/__init__.py:3: app.ops -> app.ops.fused (runtime)\n" in text
    assert "    app/ops/fused.py:1: app.ops.fused -> app.heavy (runtime)\n" in text
    assert "FAILED: 1 of 1 light module" in text


def test_runtime_only_imports_are_static_missed(runtime_only: VerifyReport) -> None:
    root = RUNTIME_FIXTURES / "runtime_only"
    dynamic = _result(runtime_only, "app.dynamic")
    assert dynamic.forbidden == ()
    assert [f.module for f in dynamic.static_missed] == ["app.heavy"]
    assert dynamic.static_missed[0].predicted is False
    assert _hops(dynamic.static_missed[0].chain, root) == [
        ("app.dynamic", "app.heavy", "app/dynamic.py", 4, HopKind.RUNTIME),
    ]
    execed = _result(runtime_only, "app.execed")
    [missed] = execed.static_missed
    assert _hops(missed.chain, root) == [("app.execed", "app.heavy", "app/execed.py", 4, HopKind.RUNTIME)]
    assert missed.chain[0].flags == ("exec",)
    assert missed.hint is not None and "compiled from a string (exec/eval)" in missed.hint
    hint = dynamic.static_missed[0].hint
    assert hint == (
        "no static import edge app.dynamic -> app.heavy: app.dynamic runs import-time code the "
        "static check cannot resolve (IPL006 dynamic-import: importlib.import_module(_NAME), line 4)"
    )
    assert dynamic.failed and execed.failed and runtime_only.exit_code == 1
    text = format_verify_text(runtime_only, load_policy(root / "policy.toml").relpath)
    assert "static missed: app.heavy executed but the static check did not predict it" in text
    assert "app/execed.py:4: app.execed -> app.heavy (runtime, exec)" in text


def test_predicted_but_not_executed_is_not_observed(runtime_only: VerifyReport) -> None:
    result = _result(runtime_only, "app.conditional")
    assert result.not_observed == ("app.heavy",)
    assert not result.failed
    assert "not observed: app.heavy" in format_verify_text(runtime_only, str)


def test_lazy_loader_is_no_false_positive(lazy: VerifyReport) -> None:
    result = _result(lazy, "app.lazy_light")
    assert not result.failed, result.summary()
    assert "app.heavy" not in [m.name for m in result.run.executed]
    # ... although app.heavy is in sys.modules after the import:
    root = RUNTIME_FIXTURES / "lazy"
    proof = verify_import(
        "app.lazy_light",
        ["app.heavy"],
        source_roots=[root],
        after_import=["'app.heavy' in sys.modules"],
        cwd=root,
        timeout=HANG_CATCHER,
    )
    assert not proof.failed, proof.summary()
    assert proof.run.after_import[0].passed


def test_lazy_module_that_is_touched_executes(lazy: VerifyReport) -> None:
    result = _result(lazy, "app.lazy_touch")
    # The static check predicts it too: an attribute read on a lazy module object (rule 19).
    assert result.static_missed == ()
    [found] = result.forbidden
    assert found.module == "app.heavy" and found.predicted
    # Executed when the attribute was first used, at line 4 of the light module.
    assert _hops(found.chain, RUNTIME_FIXTURES / "lazy") == [
        ("app.lazy_touch", "app.heavy", "app/lazy_touch.py", 4, HopKind.RUNTIME),
    ]


def test_after_import_expressions(after_import: VerifyReport) -> None:
    cpu = _result(after_import, "app.cpu")
    assert not cpu.failed
    assert [(c.expression, c.passed) for c in cpu.run.after_import] == [
        ("not torch.cuda.is_initialized()", True)
    ]
    gpu = _result(after_import, "app.gpu")
    assert gpu.failed and gpu.forbidden == () and gpu.run.outcome == "imported"
    assert [(c.expression, c.passed, c.error) for c in gpu.run.after_import] == [
        ("not torch.cuda.is_initialized()", False, "is False"),
        ("'torch' in sys.modules", True, None),
    ]
    probe = _result(after_import, "app.probe")
    [check] = probe.failed_checks
    assert check.error is not None
    assert check.error.startswith("raised AttributeError:") and "device_count" in check.error
    text = format_verify_text(after_import, str)
    assert 'after-import failed: "not torch.cuda.is_initialized()" is False' in text
    assert after_import.exit_code == 1


def test_import_that_raises(broken: VerifyReport) -> None:
    report = broken
    result = _result(report, "app.raises")
    assert result.run.outcome == "raised"
    assert result.run.error == "RuntimeError: boom at import time"
    assert result.run.error_at is not None and result.run.error_at.name == "bad.py"
    assert result.run.error_line == 3
    bad = next(m for m in result.run.executed if m.name == "app.bad")
    assert bad.error == "RuntimeError: boom at import time"
    # What executed before the error still counts.
    assert [f.module for f in result.forbidden] == ["app.heavy"]


def test_import_that_hangs(broken: VerifyReport) -> None:
    report = broken
    result = _result(report, "app.hangs")
    assert result.run.outcome == "timeout" and result.failed
    assert result.run.running[-1] == "app.hangs"
    assert result.run.error == (
        f"timed out after {HANG_TIMEOUT:g} s while executing app.hangs (a cold torch import on a "
        "loaded machine can take longer: raise it with verify --timeout SECONDS, or pytest "
        "--importpolicy-timeout)")


def test_import_that_kills_the_interpreter(broken: VerifyReport) -> None:
    report = broken
    result = _result(report, "app.dies")
    assert result.run.outcome == "crashed" and result.failed
    assert result.run.running[-1] == "app.dies"
    if os.name == "posix":
        assert result.run.error == (
            "the interpreter was killed by signal SIGKILL while executing app.dies"
        )


def test_a_hang_or_a_crash_does_not_stop_the_others(broken: VerifyReport) -> None:
    report = broken
    assert not _result(report, "app.ok").failed
    assert [r.light for r in report.results] == ["app.dies", "app.hangs", "app.ok", "app.raises"]
    text = format_verify_text(report, str)
    assert "1 import raised, 1 timeout, 1 crash" in text
    assert [(done, total) for done, total, _ in PROGRESS] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert sorted(light for _, _, light in PROGRESS) == [r.light for r in report.results]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="verify runs one import per CPU at a time")
def test_light_modules_are_verified_side_by_side(tmp_path: Path) -> None:
    """Two light modules whose imports each wait for the other to have started: one at a time, the
    first would never finish (and time out); side by side both pass."""
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    wait = (
        "import os, time\n"
        "open(os.path.join({here!r}, __name__), 'w').close()\n"
        "while not os.path.exists(os.path.join({here!r}, {other!r})):\n"
        "    time.sleep(0.01)\n"
    )
    root = _tree(tmp_path / "tree", {
        "policy.toml": """\
            version = 1
            [heavy]
            "decimal" = "pretend it is heavy"
            [light."first"]
            reason = "waits for second"
            [light."second"]
            reason = "waits for first"
            """,
        "first.py": wait.format(here=str(barrier), other="second"),
        "second.py": wait.format(here=str(barrier), other="first"),
    })
    report = verify_policy(load_policy(root / "policy.toml"), jobs=2, timeout=HANG_CATCHER)
    assert [(r.light, r.run.outcome, r.failed) for r in report.results] == [
        ("first", "imported", False), ("second", "imported", False)
    ]


# -- attribution details -------------------------------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_static_miss_explained_by_external_setting(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "policy.toml": """\
            version = 1
            [settings]
            external = "stop"
            [heavy]
            "decimal" = "pretend it is heavy"
            [light."light"]
            reason = "test"
            """,
        "light.py": "import fractions\n",
    })
    report = verify_policy(load_policy(root / "policy.toml"), timeout=HANG_CATCHER)
    [result] = report.results
    [missed] = result.static_missed
    assert [(h.module, h.imported) for h in missed.chain] == [
        ("light", "fractions"), ("fractions", "decimal")
    ]
    assert missed.hint == (
        'the static check does not follow stdlib module fractions (settings.external = "stop"; '
        '"follow" follows it)'
    )
    assert f"    why missed: {missed.hint}\n" in format_verify_text(report, str)


def test_import_from_a_function_of_a_start_up_module(tmp_path: Path) -> None:
    # codecs.lookup() imports encodings.idna from encodings' search function: the importing frame
    # belongs to a module loaded at start-up, so the hop comes from the light module's line.
    root = _tree(tmp_path, {"light.py": "import codecs\n\ncodecs.lookup('idna')\n"})
    result = verify_import("light", ["stringprep"], source_roots=[root], cwd=root,
                           timeout=HANG_CATCHER)
    [finding] = result.forbidden
    assert [(h.module, h.imported, h.line, h.shown_flags()) for h in finding.chain] == [
        ("light", "encodings.idna", 3, ("via encodings",)),
        ("encodings.idna", "stringprep", 3, ()),
    ]


def test_stdout_and_sys_path_of_the_subprocess(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src", {
        "noisy.py": """\
            import sys
            print('{"e": "imported", "ok": false}')
            sys.stdout.close()
            ROOT_FIRST = sys.path[0]
            """,
    })
    other = _tree(tmp_path / "other", {"elsewhere.py": "X = 1\n"})
    os.environ["PYTHONPATH"] = str(other)
    try:
        result = verify_import(
            "noisy",
            [],
            source_roots=[root],
            after_import=[
                f"noisy.ROOT_FIRST == {str(root)!r}",
                "not any(p.rstrip('/').endswith('flake8_importpolicy') for p in sys.path)",
                "'elsewhere' not in sys.modules and all('other' not in p for p in sys.path)",
            ],
            cwd=root,
            timeout=HANG_CATCHER,
        )
    finally:
        del os.environ["PYTHONPATH"]
    assert not result.failed, result.summary()


def test_module_loaded_behind_the_recorders_back_counts(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "sneaky.py": """\
            import importlib.abc
            import importlib.util
            import sys


            class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
                def find_spec(self, name, path=None, target=None):
                    if name == "heavy_thing":
                        return importlib.util.spec_from_loader(name, self)
                    return None

                def create_module(self, spec):
                    return None

                def exec_module(self, module):
                    module.X = 1


            sys.meta_path.insert(0, Finder())
            import heavy_thing  # noqa: E402
            """,
    })
    result = verify_import("sneaky", ["heavy_thing"], source_roots=[root], cwd=root,
                           timeout=HANG_CATCHER)
    [finding] = result.forbidden
    assert finding.module == "heavy_thing" and finding.flags == ("unrecorded",)
    assert "loaded without the recorder seeing it" in format_verify_text(
        VerifyReport((result,), (), "python", (3, 11), 0.0), str
    )


def test_assert_import_light_helper(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"pkg/__init__.py": "import json\n", "pkg/cli.py": "X = 1\n"})
    result = assert_import_light("pkg.cli", ["decimal", "csv"], source_roots=[root], cwd=root,
                                 timeout=HANG_CATCHER)
    assert result.forbidden == () and {"pkg", "pkg.cli", "json"} <= {
        m.name for m in result.run.executed
    }
    with pytest.raises(AssertionError) as excinfo:
        assert_import_light("pkg.cli", ["json"], source_roots=[root], cwd=root, timeout=HANG_CATCHER)
    message = str(excinfo.value)
    assert "executed: json (forbidden by 'json')" in message
    assert "pkg/cli.py:1: pkg.cli -> pkg (parent-package)" in message
    assert "pkg/__init__.py:1: pkg -> json (runtime)" in message


# -- judging (no subprocess) ---------------------------------------------------------------------


def _rule(pattern: str) -> HeavyRule:
    return HeavyRule(parse_pattern(pattern), f"{pattern} is heavy")


def _run(*executed: ExecutedModule) -> RuntimeRun:
    return RuntimeRun("light", "python", (3, 11, 7), "imported", executed)


def _module(name: str, importer: str | None, line: int) -> ExecutedModule:
    return ExecutedModule(name, Path(f"/src/{name}.py"), importer,
                          Path(f"/src/{importer}.py") if importer else None, line)


def test_only_first_forbidden_modules_can_be_static_missed() -> None:
    run = _run(
        _module("light", None, 0),
        _module("torch", "light", 1),
        _module("torch.cuda", "torch", 5),  # run by torch: the static check stops at torch
        _module("numpy", "torch", 7),  # also heavy, but reached through torch
    )
    rules = (_rule("torch"), _rule("numpy"))

    def forbidden(name: str) -> HeavyRule | None:
        return next((r for r in rules if r.pattern.matches(name)), None)

    result = judge_run(run, forbidden, frozenset({"torch", "numpy"}))
    assert [f.module for f in result.forbidden] == ["torch", "numpy"]
    assert result.static_missed == () and result.not_observed == ()
    missed = judge_run(run, forbidden, frozenset())
    assert [f.module for f in missed.static_missed] == ["torch"]
    assert runtime_chain(run, "torch.cuda")[0].module == "light"


def test_submodules_of_a_reported_module_are_covered() -> None:
    # torch.cuda is imported directly by the light module (so it is "first"), but the static
    # check reports only the outermost forbidden module, torch.
    run = _run(_module("light", None, 0), _module("torch", "light", 2),
               _module("torch.cuda", "light", 2), _module("torch.cuda.amp", "helper", 9))
    rule = _rule("torch")

    def forbidden(name: str) -> HeavyRule | None:
        return rule if rule.pattern.matches(name) else None

    result = judge_run(run, forbidden, frozenset({"torch"}))
    assert [f.module for f in result.forbidden] == ["torch"]
    assert result.static_missed == () and result.not_observed == ()
    no_static = judge_run(run, forbidden, None)
    assert [f.module for f in no_static.forbidden] == ["torch"]
    missed = judge_run(run, forbidden, frozenset({"torch.cuda"}))
    assert [f.module for f in missed.static_missed] == ["torch"]
    assert missed.forbidden == ()  # torch.cuda is covered, but torch (missed) is reported


def test_ignored_import_is_accepted_at_runtime() -> None:
    run = _run(_module("light", None, 0), _module("helper", "light", 2),
               _module("torch", "helper", 3))
    ignore = IgnoreRule(parse_pattern("helper"), parse_pattern("torch"), "accepted", "", 1)
    rule = _rule("torch")
    result = judge_run(run, lambda n: rule if rule.pattern.matches(n) else None,
                       frozenset(), (ignore,))
    assert not result.failed and result.accepted == ("torch",)


# -- the recorder script --------------------------------------------------------------------------


def test_recorder_is_stdlib_only_and_not_imported_by_the_package() -> None:
    tree = ast.parse(recorder_path().read_text())
    imported = set()
    for node in tree.body:  # module level, outside the `if MYPY:` block for type checkers
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert imported == {"sys"}
    package = recorder_path().parent
    for path in package.glob("*.py"):
        if path != recorder_path():
            assert "import _recorder" not in path.read_text()
            assert "from flake8_importpolicy.runtime.recorder" not in path.read_text()


def _old_python() -> str | None:
    candidates = [shutil.which("python3.9")]
    candidates += [str(p) for p in Path(sys.base_prefix).parent.glob("3.9*/bin/python3.9")]
    for candidate in candidates:
        if not candidate:
            continue
        try:
            done = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                                  capture_output=True, text=True, timeout=HANG_CATCHER, check=False)
        except OSError:
            continue
        if done.returncode == 0 and done.stdout.strip() == "(3, 9)":
            return candidate
    return None


def test_recorder_runs_on_python_3_9() -> None:
    python = _old_python()
    if python is None:
        pytest.skip("no Python 3.9 interpreter on this machine")
    report = _verify("parent_init", python=python)
    [result] = report.results
    assert result.run.version[:2] == (3, 9)
    assert [(h.module, h.imported, h.line) for h in result.forbidden[0].chain] == [
        ("app.ops.light", "app.ops", 1),
        ("app.ops", "app.ops.fused", 3),
        ("app.ops.fused", "app.heavy", 1),
    ]


# -- the command -----------------------------------------------------------------------------------


def test_cli_exit_codes_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    clean_policy = str(RUNTIME_FIXTURES / "clean" / "policy.toml")
    assert cli.main(["verify", "--policy", clean_policy]) == 0
    assert "OK: 1 light module verified" in capsys.readouterr().out
    policy = str(RUNTIME_FIXTURES / "runtime_only" / "policy.toml")
    assert cli.main(["verify", "--policy", policy, "--format", "json", "app.execed"]) == 1
    data = json.loads(capsys.readouterr().out)
    [result] = data["results"]
    assert result["light"] == "app.execed" and result["status"] == "failed"
    assert result["static_missed"][0]["module"] == "app.heavy"
    assert result["static_missed"][0]["chain"][0] == {
        "module": "app.execed", "path": "app/execed.py", "line": 4, "col": 0, "kind": "runtime",
        "imported": "app.heavy", "flags": ["exec"],
    }
    for usage_error in (["app.nope"], ["--timeout", "0"], ["--jobs", "0"]):
        with pytest.raises(SystemExit) as excinfo:
            cli.main(["verify", "--policy", policy, *usage_error])
        assert excinfo.value.code == 2
    assert "not a light module of policy.toml: app.nope" in capsys.readouterr().err
    assert cli.main(["verify", "--policy", str(RUNTIME_FIXTURES / "missing.toml")]) == 2
    assert cli.main(["verify", "--policy", policy, "--python", "/nonexistent/python"]) == 2


def test_not_observed_says_why_when_the_import_stopped_early() -> None:
    """A predicted forbidden module that did not execute: when the import raised, timed out or died,
    that is the reason, not "conditional, guarded or platform-specific"."""
    from flake8_importpolicy.runtime.render import format_light_result_text

    raised = RuntimeRun("light", "python", (3, 11, 7), "raised", (_module("light", None, 0),),
                        error="RuntimeError: boom")
    imported = _run(_module("light", None, 0))

    def forbidden(name: str) -> HeavyRule | None:
        return _rule("torch") if name == "torch" else None

    texts = [format_light_result_text(judge_run(run, forbidden, frozenset({"torch"})), str)
             for run in (raised, imported)]
    assert ("  not observed: torch (predicted statically, did not execute here: the import raised "
            "before it got there)") in texts[0].splitlines()
    assert ("  not observed: torch (predicted statically, did not execute here: conditional, guarded "
            "or platform-specific)") in texts[1].splitlines()


def test_verify_honours_the_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An accepted finding (IPL001 or IPL008 in the baseline) is not a failure of verify, as it is
    none of check, so a baselined project can run verify in CI; --no-baseline shows everything,
    and a forbidden module no recorded finding predicts still fails."""
    (tmp_path / "app").mkdir()
    files = {
        "app/__init__.py": "",
        "app/heavy.py": "x = 1\n",
        "app/other.py": "y = 1\n",
        "app/ops.py": "import app.heavy\n",
        "app/cli.py": "import json\nimport app.heavy\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "policy.toml").write_text(
        'version = 1\n\n[settings]\nbaseline = "baseline.json"\n\n'
        '[heavy]\n"app.heavy" = "slow"\n"app.other" = "slow too"\n\n'
        '[light."app.ops"]\nreason = "light"\n\n'
        '[light."app.cli"]\nreason = "fast"\nmax-modules = 2\n')
    policy = str(tmp_path / "policy.toml")
    assert cli.main(["check", "--policy", policy, "--write-baseline"]) == 0
    capsys.readouterr()
    assert cli.main(["verify", "--policy", policy, "--timeout", str(HANG_CATCHER)]) == 0
    out = capsys.readouterr().out
    assert ("ok   app.ops (0.07s, 3 modules executed)\n"
            "  in the baseline: app.heavy executed, as the baseline accepts (slow)\n"
            "    app/ops.py:1: app.ops -> app.heavy (runtime)\n") in re.sub(r"\d+\.\d+s,", "0.07s,", out)
    assert "(in the baseline, over max-modules = 2)" in out and "FAIL" not in out, out
    assert "no forbidden module executed but what the baseline accepts (3 findings)." in out
    assert cli.main(["verify", "--policy", policy, "--no-baseline",
                     "--timeout", str(HANG_CATCHER)]) == 1
    out = capsys.readouterr().out
    assert "forbidden module executed: app.heavy" in out and "over max-modules = 2" in out, out
    (tmp_path / "app" / "ops.py").write_text("import app.heavy\nimport app.other\n")
    assert cli.main(["verify", "--policy", policy, "--timeout", str(HANG_CATCHER), "app.ops"]) == 1
    out = capsys.readouterr().out
    assert "  forbidden module executed: app.other (slow too)\n" in out, out
    assert "  in the baseline: app.heavy executed" in out, out
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["verify", "--policy", policy, "--no-baseline", "--baseline", "baseline.json"])
    assert exit_info.value.code == 2
