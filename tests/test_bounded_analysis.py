"""What keeps the cost of analysing hostile but valid code bounded, without hiding anything: each
bound turns what it cuts off into a report (IPL005 or IPL006) or into "unknown" (both branches)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from flake8_importpolicy.analysis.conditions import UNKNOWN, ConditionEvaluator
from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.model.facts import Target
from flake8_importpolicy.model.graph import Construct

TARGET = Target(((3, 11),), "linux")


def _engine(root: Path, files: dict[str, str]) -> PolicyEngine:
    for name, text in {
        "policy.toml": '[heavy]\n"app.h" = "slow"\n[light."app.light"]\nreason = "fast"\n',
        "app/__init__.py": "", "app/h.py": "", **files,
    }.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return PolicyEngine(load_policy(root / "policy.toml"))


def test_a_function_body_too_deep_to_analyse_is_ipl005(tmp_path: Path) -> None:
    terms = " + ".join('""' for _ in range(3000))
    source = f"def setup():\n    import app.h\n    X = {terms}\nsetup()\n"
    engine = _engine(tmp_path, {"app/light.py": source})
    report = engine.check()
    assert [(p.code.id, p.line) for p in report.problems] == [("IPL005", 1)]


def test_nested_exec_beyond_the_budget_is_unresolved(tmp_path: Path) -> None:
    levels = ["A0 = 'import app.h'"]
    for number in range(1, 21):
        levels.append(f"A{number} = 'if X:\\n    exec(A{number - 1})\\nelse:\\n    exec(A{number - 1})'")
    source = "import os\nX = os.environ.get(os.sep[:0] + 'X')\n" + "\n".join(levels) + "\nexec(A20)\n"
    engine = _engine(tmp_path, {"app/light.py": source})
    report = engine.check()
    assert [v.heavy for v in report.violations] == ["app.h"]
    assert {u.site.construct for u in report.unresolved} == {Construct.EXEC}


def test_a_comprehension_past_its_step_bound_is_unknown() -> None:
    evaluator = ConditionEvaluator(TARGET, {}, {"A": tuple(range(1000))})
    node = ast.parse("[a for a in A for b in A if a == 99999]", mode="eval").body
    assert evaluator.constant(node) is UNKNOWN
    small = ConditionEvaluator(TARGET, {}, {"A": tuple(range(10))})
    assert small.constant(ast.parse("[a for a in A for b in A if a == 3]", mode="eval").body) == [
        3
    ] * 10


def test_a_getattr_hook_asked_for_many_names_is_analysed_once_for_any(tmp_path: Path) -> None:
    branches = "\n".join(f"    if name == 'k{n}':\n        return {n}" for n in range(100))
    reads = "\n".join(f"try:\n    f.k{n}\nexcept AttributeError:\n    pass" for n in range(100))
    engine = _engine(tmp_path, {
        "app/f.py": f"def __getattr__(name):\n{branches}\n    import app.h\n",
        "app/light.py": f"import app.f as f\n{reads}\n",
    })
    report = engine.check()
    assert [v.heavy for v in report.violations] == ["app.h"]
