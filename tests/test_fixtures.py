"""One parametrized test per fixture tree (flake8-bugbear style), with CPython as the oracle.

- ``test_inline_expectations``: ``importpolicy``'s engine reports exactly the inline expectations
  (``# IPL001: 4 app.heavy``: code, 0-based column, the message's distinguishing part; see
  ``helpers.read_expectations``).
- ``test_matches_interpreter``: for each light module, a fresh interpreter imports it; the first-party
  ``.py`` modules that appear in ``sys.modules`` must equal the engine's predicted import-time closure.
  Where a rule is deliberately conservative (guarded, conditional, fallback imports) the prediction may
  be a superset, but every extra module's chain must carry one of those flags. Fixtures with a
  ``STATIC_ONLY`` file (PEP 810 syntax, which needs Python 3.15) get only the static check.

A fixture's ``site-packages/`` directory holds third-party packages: it is on ``PYTHONPATH`` for the
engine (whose interpreter query then finds it, as ``python -c`` would) and on the oracle's
``sys.path`` after the source roots; its modules count like first-party ones in the comparison.

The oracle imports under the environment a policy's ``[assume.environ]`` describes. CI has no GPU and
no torch: fixtures that check calls (of the ``torch-cuda`` preset, of ``[heavy-calls]``) ship stub
modules in their ``site-packages`` whose functions record that they were called in the module's
``CALLS`` list (``CALLS = []``; ``torch.cuda``'s ``device`` records ``"device"``);
``test_heavy_calls_match_interpreter`` compares that record with the calls the engine reports.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import (
    Reported,
    compare_expectations,
    fixture_dirs,
    read_expectations,
    run_import,
    run_import_recorded,
)

from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.model.graph import CallNode
from flake8_importpolicy.model.policy import Policy
from flake8_importpolicy.output.render import format_unresolved_header, format_violation_header

FIXTURES = fixture_dirs()


def _pending(root: Path, *, strict: bool = True) -> list[pytest.MarkDecorator]:
    """A fixture with a ``PENDING`` file shows a construct the engine does not handle yet (the file
    says which issue item): its inline expectations are expected to fail, strictly, so they stay
    written down and the marker must go when the engine learns the construct. The comparison with
    the interpreter may already pass (the construct is announced by an IPL006), so it is not strict."""
    pending = root / "PENDING"
    if not pending.is_file():
        return []
    return [pytest.mark.xfail(strict=strict, reason=pending.read_text().strip())]


def _cases(roots: list[Path]) -> list[object]:
    return [pytest.param(root, id=root.name, marks=_pending(root)) for root in roots]


@contextlib.contextmanager
def _third_party(root: Path) -> Iterator[list[Path]]:
    """The fixture's ``site-packages`` on ``PYTHONPATH`` while the engine queries its interpreter;
    yields the extra oracle ``sys.path`` entries."""
    site = root / "site-packages"
    if not site.is_dir():
        yield []
        return
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(site)
    try:
        yield [site]
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved


def _engine(root: Path) -> PolicyEngine:
    with _third_party(root):
        return PolicyEngine(load_policy(root / "policy.toml"))


@pytest.mark.parametrize("root", _cases(FIXTURES))
def test_inline_expectations(root: Path) -> None:
    engine = _engine(root)
    report = engine.check()
    relpath = engine.policy.relpath

    def message(header: str) -> str:
        return header.partition(" ")[2]  # after the code

    found = [
        Reported(relpath(v.path), v.line, v.code.id, v.col, message(format_violation_header(v)))
        for v in report.violations
    ] + [
        Reported(relpath(v.path), line, f"{v.code.id} same cause", None, "")
        for v in report.violations for line in v.covers
    ] + [
        Reported(relpath(p.path), p.line, p.code.id, None, p.message)
        for p in report.problems
        if p.path is not None and p.line is not None
    ] + [
        Reported(relpath(u.site.path), u.site.line, u.code.id, u.site.col,
                 message(format_unresolved_header(u)))
        for u in report.unresolved
        if u.site.path is not None
    ]
    reported, expected = compare_expectations(found, read_expectations(root))
    assert reported == expected


def _light_cases() -> list[tuple[Path, str]]:
    cases = []
    for root in FIXTURES:
        if (root / "STATIC_ONLY").exists():
            continue  # e.g. PEP 810 syntax, which no interpreter on this machine can import
        engine = _engine(root)
        for rule in engine.policy.light:
            for light in engine.find_light_modules(rule):
                cases.append((root, light))
    return cases


LIGHT_CASES = _light_cases()


@pytest.mark.parametrize(("root", "light"), [
    pytest.param(r, m, id=f"{r.name}:{m}", marks=_pending(r, strict=False)) for r, m in LIGHT_CASES
])
def test_matches_interpreter(root: Path, light: str) -> None:
    # [[ignore]] entries accept edges on purpose; the interpreter still runs them, so compare without.
    with _third_party(root) as extra_paths:
        engine = PolicyEngine(dataclasses.replace(load_policy(root / "policy.toml"), ignores=()))
    rules = engine.policy.rules_for(light)
    # Followed as for the light module's own check (external = "auto" follows what its forbidden
    # patterns need), but with nothing forbidden: the whole closure.
    closure = engine.graph.find_import_time_closure(
        light, expand=engine.make_expander(lambda name: None, (h.pattern for h in rules.forbid))
    )
    predicted = set()
    for name in closure:
        resolved = engine.index.resolve_module(name)
        in_fixture = resolved.path is not None and resolved.path.is_relative_to(root.resolve())
        if resolved.has_source and in_fixture and not resolved.preloaded:
            predicted.add(name)

    runtime = run_import(light, [*engine.policy.settings.source_roots, *extra_paths],
                         environ=_environ(engine.policy))
    fixture_root = str(root.resolve())
    executed = {
        name for name, file in runtime.items()
        if file and file.endswith(".py") and str(Path(file).resolve()).startswith(fixture_root)
    }
    # The import succeeded, so the light module ran, even if it replaced its sys.modules entry by an
    # object without __file__ (transformers' _LazyModule pattern).
    executed.add(light)

    missed = executed - predicted
    found = engine.check_light_module(light, rules)
    # Never "OK" blind: what the engine did not predict is allowed only where the check reports
    # what it could not resolve on this light module's path (IPL006) or analyse (IPL005).
    announced = bool(found.unresolved or found.problems)
    if missed:
        assert announced, f"the engine missed modules the interpreter ran, silently: {sorted(missed)}"
    for extra in sorted(predicted - executed):
        flags = {flag for hop in closure[extra] for flag in hop.flags}
        assert flags, f"{extra} predicted but not run, and its chain is not flagged conservative"

    runtime_heavy = sorted(name for name in {*executed, *runtime} if rules.forbidden_rule(name))
    violations = found.violations
    if runtime_heavy:
        assert violations or announced, (
            f"runtime ran forbidden {runtime_heavy} but the engine reports nothing"
        )
    for violation in violations:
        if violation.is_call:
            continue  # a heavy call, not a module: sys.modules cannot show it (verify's after-import can)
        if violation.heavy not in executed and violation.heavy not in runtime:
            assert any(hop.flags for hop in violation.chain), violation


def _environ(policy: Policy) -> dict[str, str | None]:
    """The environment a policy's ``[assume.environ]`` describes (None: not set)."""
    return {
        a.key: a.value if isinstance(a.value, str) else None for a in policy.assumptions if a.environ
    }


def _records_calls(root: Path) -> bool:
    """Whether a module of the fixture's ``site-packages`` records its calls (``CALLS = []``)."""
    return any("\nCALLS = []" in path.read_text() for path in root.glob("site-packages/**/*.py"))


CALL_CASES = [(root, light) for root, light in LIGHT_CASES if _records_calls(root)]


@pytest.mark.parametrize(
    ("root", "light"), CALL_CASES, ids=[f"{r.name}:{m}" for r, m in CALL_CASES]
)
def test_heavy_calls_match_interpreter(root: Path, light: str) -> None:
    """The functions the stubs recorded at import time are the heavy calls the engine
    reports (a chain flagged conservative may name a call that did not run); a call in a branch an
    ``[assume]`` entry rules out is neither made nor reported."""
    with _third_party(root) as extra_paths:
        engine = PolicyEngine(load_policy(root / "policy.toml"))
    rules = engine.policy.rules_for(light)
    _, calls = run_import_recorded(light, [*engine.policy.settings.source_roots, *extra_paths],
                                   environ=_environ(engine.policy))
    called = {f"{name}()" for name in calls or ()}
    heavy_called = {name for name in called if rules.forbidden_rule(CallNode(name[:-2]))}
    violations = engine.check_light_module(light, rules).violations
    reported = {str(v.heavy) for v in violations if v.is_call}
    certain = {str(v.heavy) for v in violations if v.is_call and not any(h.flags for h in v.chain)}
    assert heavy_called <= reported | {a for v in violations for a in v.also}, (
        "the interpreter made heavy calls the engine did not report"
    )
    assert certain <= heavy_called, "the engine reports unflagged calls the interpreter did not make"
