"""The pytest plugin, run in ``pytester`` sessions (the plugin is loaded by its entry point)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]

# hypothesis's plugin costs seconds per in-process session; these sessions do not need it.
FAST = ("-p", "no:hypothesispytest")

POLICY = """\
version = 1

[heavy]
"app.heavy" = "pretends to initialise CUDA"

[light."app.ok"]
reason = "imported before the worker forks"

[light."app.bad"]
reason = "imported before the worker forks"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".toml", policy=POLICY)
    pkg = pytester.mkpydir("app")
    (pkg / "heavy.py").write_text("X = 1\n")
    (pkg / "ok.py").write_text("import json\n")
    (pkg / "bad.py").write_text("from app import heavy\n")
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    return pytester


def test_one_item_per_light_module(project: pytest.Pytester) -> None:
    result = project.runpytest(*FAST, "--importpolicy", "-v")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.re_match_lines([
        r"policy\.toml::test_import_policy\[app\.bad\] FAILED",
        r"policy\.toml::test_import_policy\[app\.ok\] PASSED",
        r"test_plain\.py::test_plain PASSED",
    ])
    # The failure shows the runtime chain, in the static chains' format.
    result.stdout.fnmatch_lines([
        "*importpolicy verify app.bad*",
        "app.bad: forbidden module executed: app.heavy",
        "FAIL app.bad (*)",
        "  forbidden module executed: app.heavy (pretends to initialise CUDA)",
        "    app/bad.py:1: app.bad -> app.heavy (runtime)",
    ])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_keyword_selection_and_policy_node(project: pytest.Pytester) -> None:
    result = project.runpytest(*FAST, "--importpolicy", "-k", "ok", "-q")
    result.assert_outcomes(passed=1, deselected=2)
    result = project.runpytest(*FAST, "--importpolicy", "policy.toml", "-q")
    result.assert_outcomes(passed=1, failed=1)


def test_ini_option_enables_it(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nimportpolicy = true\nimportpolicy_timeout = 20\n")
    result = project.runpytest(*FAST, "-q")
    result.assert_outcomes(passed=2, failed=1)


def test_disabled_by_default(project: pytest.Pytester) -> None:
    result = project.runpytest(*FAST, "-v")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*test_import_policy*")


def test_no_policy_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest(*FAST, "--importpolicy", f"--rootdir={pytester.path}")
    if (pytester.path.parent / "policy.toml").exists():  # pragma: no cover - odd tmp dirs
        pytest.skip("a policy.toml above the temporary directory")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--importpolicy: no policy.toml*"])


def test_broken_policy_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", policy='[light."app"]\n')
    result = pytester.runpytest(*FAST, "--importpolicy")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*importpolicy: policy.toml is not valid*"])


def test_fixture_for_hand_written_tests(project: pytest.Pytester) -> None:
    project.makepyfile(test_hand=textwrap.dedent("""\
        def test_ok_is_light(assert_import_light):
            result = assert_import_light("app.ok", ["app.heavy", "decimal"])
            assert "json" in [m.name for m in result.run.executed]

        def test_policy_rules_by_default(assert_import_light):
            assert_import_light("app.bad")

        def test_after_import(assert_import_light):
            assert_import_light("app.ok", [], after_import=["'app.heavy' in sys.modules"])
        """))
    result = project.runpytest(*FAST, "-q", "test_hand.py")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*AssertionError: FAIL app.bad*",
        "*forbidden module executed: app.heavy (pretends to initialise CUDA)*",
        "*app/bad.py:1: app.bad -> app.heavy (runtime)*",
        "*after-import failed: \"'app.heavy' in sys.modules\" is False*",
    ])


def test_importing_the_plugin_is_cheap() -> None:
    code = (
        "import sys; before = set(sys.modules); import flake8_importpolicy.pytest_plugin; "
        "print(sorted(m for m in set(sys.modules) - before if m.startswith('flake8_importpolicy')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", f"import pytest; {code}"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert out.strip() == "['flake8_importpolicy', 'flake8_importpolicy.pytest_plugin']"
