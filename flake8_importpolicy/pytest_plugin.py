"""The pytest plugin: the runtime import-policy proof as ordinary test items.

Registered as the ``pytest11`` entry point ``importpolicy``; it does nothing until enabled:

- ``pytest --importpolicy`` (or ``importpolicy = true`` in the pytest ini section) collects one
  item per light module of the policy found from pytest's rootdir (or ``--importpolicy-policy`` /
  the ``importpolicy_policy`` ini option), named ``test_import_policy[<module>]`` under the policy
  file's node (``policy.toml::test_import_policy[mypkg.ops]``). Each item runs the verification of
  :mod:`flake8_importpolicy.runtime.verify` for its module (a fresh interpreter; this runs project code)
  and fails with the runtime chains. ``pytest policy.toml --importpolicy`` runs only these items.
- The ``assert_import_light`` fixture is a helper for hand-written tests:
  ``assert_import_light("mypkg.cli", ["torch", "numpy"])`` imports the module in a fresh
  interpreter and fails if a module matching one of the patterns executed.

Importing this module imports nothing but pytest (already loaded); the engine is imported only
when the option is enabled or the fixture is used. ``-p no:importpolicy`` disables the plugin.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from flake8_importpolicy import docs_url

if TYPE_CHECKING:
    from flake8_importpolicy.model.policy import HeavyRule, Policy
    from flake8_importpolicy.runtime.judge import LightResult
    from flake8_importpolicy.runtime.verify import LightPlan, Verifier

__all__ = ["ITEM_NAME", "ImportPolicyFailed", "PolicyFile", "PolicyItem", "assert_import_light"]

ITEM_NAME = "test_import_policy"
"""Items are named ``test_import_policy[<light module>]``."""

_DEFAULT_TIMEOUT = 60.0


class _State:
    """Per-session state of an enabled plugin."""

    def __init__(self, policy_path: Path, timeout: float) -> None:
        self.policy_path = policy_path
        self.timeout = timeout
        self.collected = False  # the policy file was collected (its items, or its error): once only


_STATE = pytest.StashKey[_State]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--importpolicy``, ``--importpolicy-policy``, ``--importpolicy-timeout`` and their ini
    options."""
    group = parser.getgroup("importpolicy", "runtime import-time policy (flake8-importpolicy)")
    group.addoption(
        "--importpolicy", action="store_true", default=False,
        help="verify every light module of the policy at runtime, one test item per light module "
        "(imports each in a fresh interpreter; this runs project code)",
    )
    group.addoption(
        "--importpolicy-policy", metavar="PATH", default=None,
        help="policy.toml or pyproject.toml to use (default: found from the rootdir)",
    )
    group.addoption(
        "--importpolicy-timeout", metavar="SECONDS", type=float, default=None,
        help=f"seconds per light module (default: {_DEFAULT_TIMEOUT:g})",
    )
    parser.addini("importpolicy", type="bool", default=False, help="enable --importpolicy")
    parser.addini(
        "importpolicy_policy", default="",
        help="policy.toml or pyproject.toml for --importpolicy, relative to the ini file",
    )
    parser.addini(
        "importpolicy_timeout", default=str(_DEFAULT_TIMEOUT),
        help="seconds per light module for --importpolicy",
    )


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("importpolicy") or config.getini("importpolicy"))


def _configured_policy(config: pytest.Config) -> Path | None:
    """The policy named by the option or the ini file, else the one found from the rootdir."""
    option = config.getoption("importpolicy_policy")
    if option:
        return Path(option).absolute()
    ini = str(config.getini("importpolicy_policy") or "")
    if ini:
        base = config.inipath.parent if config.inipath is not None else config.rootpath
        return (base / ini).absolute()
    from flake8_importpolicy.config.locate import find_policy

    return find_policy(config.rootpath)


def _timeout(config: pytest.Config) -> float:
    value = config.getoption("importpolicy_timeout")
    if value is None:
        text = str(config.getini("importpolicy_timeout") or _DEFAULT_TIMEOUT)
        try:
            value = float(text)
        except ValueError:
            raise pytest.UsageError(
                f"importpolicy_timeout: expected a number of seconds, got {text!r}"
            ) from None
    if not value > 0:
        raise pytest.UsageError(f"importpolicy timeout must be positive, got {value!r}")
    return float(value)


def pytest_configure(config: pytest.Config) -> None:
    """Find the policy when the plugin is enabled (nothing happens otherwise)."""
    if not _enabled(config):
        return
    path = _configured_policy(config)
    if path is None:
        raise pytest.UsageError(
            f"--importpolicy: no policy.toml or pyproject.toml with [tool.importpolicy] found in "
            f"{config.rootpath} or any parent; pass --importpolicy-policy PATH"
        )
    if not os.path.lexists(path):  # anything else there (a FIFO, a directory): the loader says what
        raise pytest.UsageError(f"--importpolicy: policy file {path} does not exist")
    config.stash[_STATE] = _State(Path(os.path.realpath(path)), _timeout(config))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> PolicyFile | None:
    """Collect the policy file itself when it is under the collected paths."""
    state = parent.config.stash.get(_STATE, None)
    if state is None or file_path.resolve() != state.policy_path:
        return None
    return PolicyFile.from_parent(parent, path=file_path)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Add the policy's items when the policy file was not collected as a file (the usual case:
    it sits at the project root, outside ``testpaths``). Runs first, so ``-k`` applies to them."""
    state = config.stash.get(_STATE, None)
    if state is None or state.collected:  # a broken policy collected as a file is reported once
        return
    node = PolicyFile.from_parent(session, path=state.policy_path)
    items.extend(session.genitems(node))


class ImportPolicyFailed(Exception):
    """Raised by a :class:`PolicyItem` whose light module failed verification.

    Attributes:
        result: the failed :class:`~flake8_importpolicy.runtime.verify.LightResult`.
        text: the rendered result, as shown in the failure report.
    """

    def __init__(self, result: LightResult, text: str) -> None:
        super().__init__(text)
        self.result = result
        self.text = text


class _PolicyProblem(Exception):
    """Raised by a :class:`ProblemItem`."""


class PolicyFile(pytest.File):
    """The policy file as a collector: one :class:`PolicyItem` per light module."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        from flake8_importpolicy.config.load import load_policy
        from flake8_importpolicy.runtime.verify import Verifier

        state = self.config.stash.get(_STATE, None)
        if state is not None:
            state.collected = True
        timeout = state.timeout if state is not None else _DEFAULT_TIMEOUT
        policy = load_policy(self.path)
        verifier = Verifier(policy, timeout=timeout)
        plans, problems = verifier.plan()
        for plan in plans:
            yield PolicyItem.from_parent(
                self, name=f"{ITEM_NAME}[{plan.module}]", verifier=verifier, plan=plan
            )
        if not plans and not problems:  # else pytest would only say "no tests ran" (exit 5)
            table = "tool.importpolicy.light" if self.path.name == "pyproject.toml" else "light"
            problems = (
                f"{self.path.name} names no light module: nothing to verify; add a "
                f'[{table}."package.module"] table with a reason ({docs_url("policy.md")})',
            )
        for problem in problems:
            yield ProblemItem.from_parent(self, name=f"{ITEM_NAME}[{problem}]", problem=problem)

    # Collector.repr_failure has no style= (pytest's own TODO; it ignores this same override error)
    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | Any:
        from flake8_importpolicy.model.errors import InterpreterError, PolicyError

        if isinstance(excinfo.value, (PolicyError, InterpreterError)):
            return f"importpolicy: {excinfo.value}"
        return super().repr_failure(excinfo)


class PolicyItem(pytest.Item):
    """Verifies one light module at runtime; fails with the runtime chains."""

    def __init__(self, *, verifier: Verifier, plan: LightPlan, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.verifier = verifier
        self.plan = plan
        self.result: LightResult | None = None

    def runtest(self) -> None:
        from flake8_importpolicy.runtime.render import format_light_result_text

        result = self.verifier.verify(self.plan)
        self.result = result
        if result.failed:
            policy = self.verifier.policy
            text = format_light_result_text(result, policy.relpath)
            raise ImportPolicyFailed(result, f"{result.light}: {result.summary()}\n{text}")

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        if isinstance(excinfo.value, ImportPolicyFailed):
            return excinfo.value.text.rstrip("\n")
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"importpolicy verify {self.plan.module}"


class ProblemItem(pytest.Item):
    """A policy problem found while planning (a wildcard light pattern that matches nothing)."""

    def __init__(self, *, problem: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem

    def runtest(self) -> None:
        raise _PolicyProblem(self.problem)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        return f"importpolicy: {self.problem}"

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"importpolicy: {self.problem}"


# ------------------------------------------------------------------------------------------------
# The fixture for hand-written tests


def _defaults(config: pytest.Config) -> tuple[Policy | None, Sequence[Path], str, Path]:
    """``(policy, source roots, interpreter, cwd)`` for the fixture: from the policy if one is
    found (as for ``--importpolicy``), else the rootdir and this interpreter."""
    from flake8_importpolicy.config.load import load_policy

    state = config.stash.get(_STATE, None)
    path = state.policy_path if state is not None else _configured_policy(config)
    if path is None or not path.is_file():
        return None, (config.rootpath,), sys.executable, config.rootpath
    policy = load_policy(path)
    python = policy.settings.interpreter_executable()
    return policy, policy.settings.source_roots, python, policy.root


def _policy_error_line(config: pytest.Config, error: Exception) -> str:
    """A policy that cannot be used, as the one line every client prints
    (``policy.toml[:LINE]: error: ...``)."""
    from flake8_importpolicy.model.errors import display_path
    from flake8_importpolicy.output.render import format_error_line

    state = config.stash.get(_STATE, None)
    path = state.policy_path if state is not None else _configured_policy(config)
    return format_error_line(error, display_path(path) if path is not None else "policy")


def _policy_rules(policy: Policy | None, module: str) -> tuple[list[HeavyRule], list[str]]:
    """The forbid rules and allow patterns the policy applies to ``module``
    (:meth:`~flake8_importpolicy.model.policy.Policy.rules_for`, as ``check`` applies them)."""
    if policy is None:
        return [], []
    rules = policy.rules_for(module)
    return list(rules.forbid), [pattern.text for pattern in rules.allow]


@pytest.fixture
def assert_import_light(request: pytest.FixtureRequest) -> Callable[..., LightResult]:
    """A helper asserting that importing a module, in a fresh interpreter, executes no forbidden
    module.

    Call it as ``assert_import_light(module, forbid=None, *, allow=(), after_import=(),
    timeout=60.0, source_roots=None, python=None)``. ``forbid`` is a list of module patterns
    (``*``/``**`` wildcards; submodules match); when omitted, the policy's rules for the module, as
    ``importpolicy check`` applies them (every ``[light]`` rule that names it, merged; else every
    ``[heavy]`` and ``[heavy-calls]`` rule). Source roots, interpreter and
    working directory come from the policy found from the rootdir, else the rootdir and this
    interpreter. It returns the :class:`~flake8_importpolicy.runtime.verify.LightResult` and fails the test
    (``AssertionError`` with the runtime chains) when a forbidden module executed, an
    ``after_import`` expression was false or raised, or the import raised, hung or crashed.
    """
    config = request.config

    def check(
        module: str,
        forbid: Iterable[str] | None = None,
        *,
        allow: Iterable[str] = (),
        after_import: Sequence[str] = (),
        timeout: float = _DEFAULT_TIMEOUT,
        source_roots: Sequence[Path] | None = None,
        python: str | None = None,
    ) -> LightResult:
        __tracebackhide__ = True
        from flake8_importpolicy.model.errors import ImportPolicyError
        from flake8_importpolicy.model.paths import relpath_under
        from flake8_importpolicy.runtime.render import format_light_result_text
        from flake8_importpolicy.runtime.verify import verify_import

        unusable = ""
        try:
            policy, roots, default_python, cwd = _defaults(config)
            rules: list[str | HeavyRule] = list(forbid) if forbid is not None else []
            allowed = list(allow)
            if forbid is None:
                policy_rules, policy_allow = _policy_rules(policy, module)
                rules.extend(policy_rules)
                allowed.extend(policy_allow)
            result = verify_import(
                module, rules, allow=allowed, after_import=after_import, timeout=timeout,
                source_roots=roots if source_roots is None else source_roots,
                python=python or default_python, cwd=cwd,
            )
        except ImportPolicyError as error:  # one line, as every client says it; no traceback
            unusable = _policy_error_line(config, error)
        if unusable:
            pytest.fail(unusable, pytrace=False)
        if result.failed:  # paths relative to the policy's directory, as everywhere else
            raise AssertionError(format_light_result_text(
                result, policy.relpath if policy is not None else
                (lambda path: relpath_under((cwd.resolve(),), path))))
        return result

    return check
