"""``[assume]``: facts about runtime conditions (docs/policy.md).

The fixture ``tests/fixtures/x_assume`` runs every condition form against CPython (tests/test_fixtures.py);
here: the loader's validation, extraction of each form without and with the assumption (what it rules
out, what it names), the facts cache key, and ``importpolicy verify`` evaluating each assumption and
``torch.cuda.is_initialized()`` after the import.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from helpers import HANG_CATCHER

from flake8_importpolicy.analysis.extract import extract_facts
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.model.errors import PolicyError
from flake8_importpolicy.model.facts import Target
from flake8_importpolicy.model.graph import Flag
from flake8_importpolicy.runtime.verify import TORCH_CUDA_CHECK, Verifier

FIXTURE = Path(__file__).parent / "fixtures" / "x_assume"
ROCM = '"app.plat.current_platform.is_rocm()" = false'


def _target(assume: dict[str, object] | None = None, environ: dict[str, str | None] | None = None) -> Target:
    return Target(
        versions=((3, 11),), platform="linux",
        assume=tuple(sorted((assume or {}).items())),  # type: ignore[arg-type]
        environ=tuple(sorted((environ or {}).items())),
    )


def _calls(source: str, target: Target) -> dict[str, tuple[tuple[Flag, ...], tuple[str, ...]]]:
    facts = extract_facts(textwrap.dedent(source), target)
    return {call.callee: (call.flags, call.assumed) for call in facts.calls if "cuda" in call.callee}


ROCM_FALSE = {"app.plat.current_platform.is_rocm()": False}

FORMS = {
    "if": """\
        import torch
        from app.plat import current_platform
        if current_platform.is_rocm():
            torch.cuda.init()
        else:
            torch.cuda.current_device()
        """,
    "elif": """\
        import torch
        import app.plat as p
        if p.current_platform.is_rocm():
            torch.cuda.init()
        elif p.current_platform.is_rocm() is False:
            torch.cuda.current_device()
        """,
    "while": """\
        import torch
        from app.plat import current_platform
        while current_platform.is_rocm():
            torch.cuda.init()
        torch.cuda.current_device()
        """,
    "and": """\
        import torch
        from app.plat import current_platform
        X = current_platform.is_rocm() and torch.cuda.init()
        Y = not current_platform.is_rocm() and torch.cuda.current_device()
        """,
    "or": """\
        import torch
        from app.plat import current_platform
        X = not current_platform.is_rocm() or torch.cuda.init()
        Y = current_platform.is_rocm() or torch.cuda.current_device()
        """,
    "conditional expression": """\
        import torch
        from app.plat import current_platform
        X = torch.cuda.init() if current_platform.is_rocm() else torch.cuda.current_device()
        """,
}


@pytest.mark.parametrize("source", FORMS.values(), ids=list(FORMS))
def test_each_condition_form(source: str) -> None:
    unknown = _calls(source, _target())
    assert "torch.cuda.init" in unknown and "torch.cuda.current_device" in unknown
    assumed = _calls(source, _target(ROCM_FALSE))
    assert "torch.cuda.init" not in assumed, "a branch the assumption rules out is not followed"
    flags, names = assumed["torch.cuda.current_device"]
    assert Flag.CONDITIONAL not in flags
    if "while" not in source:  # after the loop, not in a branch the assumption chose
        assert names == (ROCM,)


def test_assert_rules_out_what_follows() -> None:
    source = """\
        import torch
        from app.plat import current_platform
        def setup():
            assert current_platform.is_rocm()
            torch.cuda.init()
        """
    facts = extract_facts(textwrap.dedent(source), _target(ROCM_FALSE))
    assert [c.callee for c in facts.functions["setup"].calls] == ["app.plat.current_platform.is_rocm"]


def test_early_return_guard_of_a_called_function() -> None:
    source = """\
        import torch
        from app.plat import current_platform
        def probe():
            if not current_platform.is_rocm():
                return
            torch.cuda.init()
        def setup():
            if current_platform.is_rocm():
                return
            torch.cuda.set_device(0)
        """
    unknown = extract_facts(textwrap.dedent(source), _target()).functions
    assert {c.callee: c.flags for c in unknown["setup"].calls}["torch.cuda.set_device"] == (Flag.CONDITIONAL,)
    functions = extract_facts(textwrap.dedent(source), _target(ROCM_FALSE)).functions
    assert "torch.cuda.init" not in {c.callee for c in functions["probe"].calls}
    (call,) = [c for c in functions["setup"].calls if c.callee == "torch.cuda.set_device"]
    assert call.flags == () and call.assumed == (ROCM,)


def test_values_compare_as_python_would() -> None:
    source = """\
        import torch
        from app import envs
        if envs.DEVICE == "cuda" and envs.WORKERS >= 2:
            torch.cuda.current_device()
        if envs.DEVICE != "cuda" or envs.WORKERS < 2:
            torch.cuda.init()
        """
    calls = _calls(source, _target({"app.envs.DEVICE": "cuda", "app.envs.WORKERS": 2}))
    assert set(calls) == {"torch.cuda.current_device"}
    assert calls["torch.cuda.current_device"][1] == ('"app.envs.DEVICE" = "cuda"', '"app.envs.WORKERS" = 2')


def test_calls_with_constant_arguments() -> None:
    source = """\
        import torch
        from app import gpu
        if gpu.capability( 0 ) == 9:
            torch.cuda.init()
        """
    assert _calls(source, _target({"app.gpu.capability(0)": 8})) == {}
    assert "torch.cuda.init" in _calls(source, _target({"app.gpu.capability(0)": 9}))


def test_environ() -> None:
    source = """\
        import os
        from os import environ
        import torch
        if os.environ.get("MODE") == "fast":
            torch.cuda.current_device()
        if os.getenv("MODE", "slow") != "fast":
            torch.cuda.init()
        if "TRACE" in environ:
            torch.cuda.synchronize()
        if int(os.environ.get("WORKERS", "1")) > 1:
            torch.cuda.set_device(0)
        if os.environ["MODE"] == "fast":
            torch.cuda.get_device_name(0)
        """
    calls = _calls(source, _target(environ={"MODE": "fast", "TRACE": None, "WORKERS": "4"}))
    assert set(calls) == {"torch.cuda.current_device", "torch.cuda.set_device", "torch.cuda.get_device_name"}
    assert calls["torch.cuda.current_device"][1] == ('environ."MODE" = "fast"',)


def test_a_local_name_is_not_the_assumed_one() -> None:
    source = """\
        import torch
        class current_platform:
            def is_rocm(): return True
        if current_platform.is_rocm():
            torch.cuda.init()
        """
    assert "torch.cuda.init" in _calls(source, _target(ROCM_FALSE))


def test_facts_cache_key_includes_the_assumptions() -> None:
    assert _target().key() == "3.11;linux;normal"
    assert _target(ROCM_FALSE).key() != _target({"app.plat.current_platform.is_rocm()": True}).key()
    assert _target(environ={"A": None}).key() != _target(environ={"A": ""}).key()


# -- the loader ---------------------------------------------------------------------------------


def test_loader_reports_every_problem(tmp_path: Path) -> None:
    (tmp_path / "policy.toml").write_text(textwrap.dedent("""\
        [assume]
        "DEBUG" = true
        "a.*.b" = true
        "a.b.f(x)" = true
        "a.b.RATIO" = 0.5
        "a.b.f( )" = false
        "a.b.f()" = true
        a.b.C = 1
        [assume.environ]
        "X" = true
        "Y" = 1
        "" = "1"
        """))
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path / "policy.toml")
    assert [(p.key, p.message.split(";")[0][:40]) for p in caught.value.problems] == [
        ('assume."DEBUG"', "name the module too: a dotted name such "),
        ('assume."a.*.b"', "expected a dotted name (a.b.NAME) or a c"),
        ('assume."a.b.f(x)"', "expected a dotted name (a.b.NAME) or a c"),
        ('assume."a.b.RATIO"', "expected true, false, a string or an int"),
        ('assume."a.b.f()"', 'the same name as "a.b.f( )", written dif'),
        ('assume."a"', 'dotted keys make nested TOML tables'),
        ('assume.environ."X"', "true is not a value an environment varia"),
        ('assume.environ."Y"', 'expected the string the variable is set '),
        ('assume.environ.""', "not an environment variable name (empty,"),
    ]


# -- [heavy-calls] unless-environ (issue 25 item 6) ---------------------------------------------


def test_heavy_call_unless_environ_is_loaded_and_checked(tmp_path: Path) -> None:
    (tmp_path / "policy.toml").write_text(textwrap.dedent("""\
        [heavy-calls]
        "a.probe" = { reason = "probes", unless-environ = { "A_SAFE" = "1" } }
        "a.bad" = { reason = "x", unless-environ = { "" = "1", "N" = 1 }, other = 1 }
        "a.empty" = { reason = "x", unless-environ = {} }
        """))
    with pytest.raises(PolicyError) as caught:
        load_policy(tmp_path / "policy.toml")
    assert [(p.key, p.message[:40]) for p in caught.value.problems] == [
        ('heavy-calls."a.bad".other', 'unknown key (expected "reason" and "unle'),
        ('heavy-calls."a.bad".unless-environ.""', "not an environment variable name (empty,"),
        ('heavy-calls."a.bad".unless-environ."N"', "expected the variable's value as a strin"),
        ('heavy-calls."a.empty".unless-environ', 'expected a non-empty table of "VARIABLE"'),
    ]
    (tmp_path / "policy.toml").write_text(
        '[heavy-calls]\n"a.probe" = { reason = "probes", unless-environ = { "A_SAFE" = "1" } }\n')
    (rule,) = load_policy(tmp_path / "policy.toml").heavy_calls
    assert rule.reason == "probes" and rule.unless_environ == (("A_SAFE", "1"),)


@pytest.mark.parametrize(("environ", "reported", "assumed"), [
    ("", True, 'environ."PYTORCH_NVML_BASED_CUDA_CHECK" unset'),
    ('"PYTORCH_NVML_BASED_CUDA_CHECK" = "1"', False, None),
    ('"PYTORCH_NVML_BASED_CUDA_CHECK" = "0"', True, 'environ."PYTORCH_NVML_BASED_CUDA_CHECK" = "0"'),
])
def test_assume_environ_decides_a_heavy_call_unless_environ(
    tmp_path: Path, environ: str, reported: bool, assumed: str | None
) -> None:
    """torch-cuda-driver's is_available() is harmless under [assume.environ]
    PYTORCH_NVML_BASED_CUDA_CHECK = "1"; otherwise the hop names the variable it assumes."""
    from flake8_importpolicy.analysis.engine import PolicyEngine

    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "light.py").write_text("import torch\ntorch.cuda.is_available()\n")
    (tmp_path / "policy.toml").write_text(
        'extends = ["torch-cuda-driver"]\n[settings]\nsource-roots = ["."]\nexternal = "stop"\n'
        f'[assume.environ]\n{environ}\n[light."app.light"]\nreason = "fast"\n')
    engine = PolicyEngine(load_policy(tmp_path / "policy.toml"))
    violations = engine.check_light_module("app.light", engine.policy.rules_for("app.light")).violations
    calls = [v for v in violations if v.is_call]
    assert bool(calls) == reported
    if calls:
        assert calls[0].chain[-1].assumed == (assumed,)


# -- verify -------------------------------------------------------------------------------------


@pytest.fixture()
def fixture_copy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The fixture, its stub torch a source root (verify runs the interpreter without PYTHONPATH),
    under the environment its [assume.environ] describes."""
    import shutil

    shutil.copytree(FIXTURE, tmp_path / "x_assume")
    policy = tmp_path / "x_assume" / "policy.toml"
    policy.write_text(policy.read_text().replace('source-roots = ["."]',
                                                 'source-roots = [".", "site-packages"]'))
    monkeypatch.setenv("APP_MODE", "fast")
    monkeypatch.delenv("APP_TRACE", raising=False)
    return policy


def test_verify_evaluates_assumptions_and_torch_cuda(fixture_copy: Path) -> None:
    verifier = Verifier(load_policy(fixture_copy))
    plans, problems = verifier.plan()
    assert problems == ()
    results = {plan.module: verifier.verify(plan) for plan in plans}
    for module, result in results.items():
        failed = {check.expression for check in result.failed_checks}
        checks = {check.expression: check for check in result.run.after_import}
        assert TORCH_CUDA_CHECK in checks, module
        # every assumption holds for the fixture's code and the environment set above
        assert not any("[assume]" in expression for expression in failed), (module, failed)
        initialised = module in ("app.early", "app.operators", "app.tests_form")
        assert (TORCH_CUDA_CHECK in failed) == initialised, (module, failed)
    assert len([c for c in results["app.environment"].run.after_import if "[assume]" in c.expression]) == 5


def test_verify_fails_an_assumption_that_does_not_hold(
    fixture_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_MODE", "slow")
    monkeypatch.setenv("APP_TRACE", "1")
    verifier = Verifier(load_policy(fixture_copy))
    plans, _ = verifier.plan()
    (plan,) = [p for p in plans if p.module == "app.asserts"]
    result = verifier.verify(plan)
    failed = sorted(check.expression.split("#", 1)[1].strip() for check in result.failed_checks)
    assert failed == ['[assume] environ."APP_MODE" = "fast"', '[assume] environ."APP_TRACE" = false']
    assert result.failed


def test_verify_command_exit_status(fixture_copy: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    def verify(*modules: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "flake8_importpolicy", "verify", "--no-cache", "--policy",
             str(fixture_copy), *modules],
            cwd=tmp_path, capture_output=True, text=True, timeout=HANG_CATCHER,
        )

    clean = verify("app.asserts", "app.environment")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    failing = verify("app.asserts", "app.early")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "torch.cuda.is_initialized() after the import" in failing.stdout
