"""The pytest plugin, run in ``pytester`` sessions (the plugin is loaded by its entry point)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from helpers import HANG_CATCHER

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
    project.makeini(f"[pytest]\nimportpolicy = true\nimportpolicy_timeout = {HANG_CATCHER:g}\n")
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


@pytest.mark.parametrize("paths", [(), ("tests",)], ids=["policy-collected-as-a-file", "policy-outside"])
def test_broken_policy_is_one_collection_error(pytester: pytest.Pytester, paths: tuple[str, ...]) -> None:
    """Reported once, whether the policy file is under the collected paths or not."""
    pytester.makefile(".toml", policy='[light."app"]\n')
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_plain.py").write_text("def test_plain():\n    pass\n")
    result = pytester.runpytest(*FAST, "--importpolicy", *paths)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["collected 1 item / 1 error", "*importpolicy: policy.toml is not valid*"])
    assert result.stdout.str().count("ERROR collecting policy.toml") == 1


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


def test_fixture_with_a_broken_policy_is_one_line(project: pytest.Pytester) -> None:
    """It once failed with a 45-line traceback of the loader."""
    (project.path / "policy.toml").write_text(POLICY.replace("version = 1\n", 'version = 1\nextrenal = 1\n'))
    project.makepyfile(test_hand="def test_bad(assert_import_light):\n    assert_import_light('app.bad')\n")
    result = project.runpytest(*FAST, "-q", "test_hand.py")
    result.assert_outcomes(failed=1)
    failure = result.stdout.str().split("_ test_bad _")[1].split("short test summary")[0]
    assert [line for line in failure.splitlines() if line.strip(" =-_")] == [
        "policy.toml:2: error: extrenal: unknown key; did you mean 'extends'?"], failure


def test_fixture_paths_are_relative_to_the_policy_directory(pytester: pytest.Pytester) -> None:
    """As everywhere else, not to the source root."""
    rooted = POLICY.replace("version = 1\n", 'version = 1\n[settings]\nsource-roots = ["src"]\n')
    pytester.makefile(".toml", policy=rooted)
    pytester.mkdir("src")
    pkg = pytester.mkpydir("src/app")
    (pkg / "heavy.py").write_text("X = 1\n")
    (pkg / "bad.py").write_text("from app import heavy\n")
    pytester.makepyfile(test_hand="def test_bad(assert_import_light):\n    assert_import_light('app.bad')\n")
    result = pytester.runpytest(*FAST, "-q", "test_hand.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*src/app/bad.py:1: app.bad -> app.heavy (runtime)*"])


def test_importing_the_plugin_is_cheap() -> None:
    code = (
        "import sys; before = set(sys.modules); import flake8_importpolicy.pytest_plugin; "
        "print(sorted(m for m in set(sys.modules) - before if m.startswith('flake8_importpolicy')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", f"import pytest; {code}"],
        capture_output=True, text=True, check=True, timeout=HANG_CATCHER,
    ).stdout
    assert out.strip() == "['flake8_importpolicy', 'flake8_importpolicy.pytest_plugin']"


OVERLAPPING = """\
version = 1

[heavy]
"app.heavy" = "pretends to initialise CUDA"
"app.slow" = "takes seconds"

[light."app.**"]
reason = "every module"
forbid = ["app.heavy"]

[light."app.cli"]
reason = "the command must start fast"
"""


def test_fixture_applies_every_light_rule_as_check_does(pytester: pytest.Pytester) -> None:
    """Two [light] rules name app.cli: the fixture forbids both rules' modules, as check does."""
    pytester.makefile(".toml", policy=OVERLAPPING)
    pkg = pytester.mkpydir("app")
    (pkg / "heavy.py").write_text("X = 1\n")
    (pkg / "slow.py").write_text("X = 1\n")
    (pkg / "cli.py").write_text("import app.slow\n")
    pytester.makepyfile(test_app_cli="def test_cli(assert_import_light):\n"
                                     "    assert_import_light('app.cli')\n")
    result = pytester.runpytest(*FAST)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*forbidden module executed: app.slow (takes seconds)*"])


def test_fixture_and_check_forbid_the_same_for_the_repository_policy() -> None:
    from pathlib import Path

    from flake8_importpolicy.analysis.engine import PolicyEngine
    from flake8_importpolicy.config.load import load_policy
    from flake8_importpolicy.pytest_plugin import _policy_rules

    policy = load_policy(Path(__file__).resolve().parent.parent / "policy.toml")
    engine = PolicyEngine(policy)
    lights = sorted({m for rule in policy.light for m in engine.find_light_modules(rule)})
    assert lights
    for light in lights:
        forbid, allow = _policy_rules(policy, light)
        checked = policy.rules_for(light)  # what PolicyEngine.check applies to it
        assert [(r.pattern.text, r.call) for r in forbid] == [
            (r.pattern.text, r.call) for r in checked.forbid
        ], light
        assert allow == [p.text for p in checked.allow], light
    cli_forbid = {rule.pattern.text for rule in _policy_rules(policy, "flake8_importpolicy.cli")[0]}
    assert {"mypy", "flake8", "pytest"} <= cli_forbid  # the first matching rule forbade mypy only
