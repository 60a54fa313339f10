"""Rules 15-17 of docs/semantics.md at the edges: call depth, annotations per target version, PEP 810 modes,
heavy calls through aliases. The interpreter-backed cases live in tests/fixtures/r15_* to r18_*; these
cover what one Python version cannot show (target versions, settings) on tiny generated trees."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.analysis.extract import extract_facts
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.model.facts import Target
from flake8_importpolicy.model.graph import Flag


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _violations(root: Path) -> list[tuple[str, int, str]]:
    report = PolicyEngine(load_policy(root / "policy.toml")).check()
    return [(v.light, v.line, v.heavy) for v in report.violations]


DEEP_CALLS = {
    "app/__init__.py": "",
    "app/heavy.py": "",
    "app/helpers.py": """
        def one():
            two()
        def two():
            three()
        def three():
            four()
        def four():
            import app.heavy
    """,
    "app/light.py": """
        from app.helpers import one
        one()
    """,
}


@pytest.mark.parametrize(("depth", "expected"), [(3, []), (4, [("app.light", 3, "app.heavy")])])
def test_call_depth_limits_how_deep_calls_are_followed(
    tmp_path: Path, depth: int, expected: list[tuple[str, int, str]]
) -> None:
    policy = f"""
        [settings]
        call-depth = {depth}
        [heavy]
        "app.heavy" = "slow"
        [light."app.light"]
        reason = "fast"
    """
    root = _tree(tmp_path, {**DEEP_CALLS, "policy.toml": policy})
    assert _violations(root) == expected


def test_call_depth_zero_follows_no_calls(tmp_path: Path) -> None:
    files = {**DEEP_CALLS, "app/light.py": "from app.helpers import four\nfour()\n"}
    policy = '[settings]\ncall-depth = 0\n[heavy]\n"app.heavy" = "x"\n[light."app.light"]\nreason = "y"\n'
    root = _tree(tmp_path, {**files, "policy.toml": policy})
    assert _violations(root) == []
    (root / "policy.toml").write_text(policy.replace("call-depth = 0", "call-depth = 1"))
    assert _violations(root) == [("app.light", 2, "app.heavy")]


ANNOTATED = """
    def make():
        import heavy_annotation
        return int

    def f(x: make()) -> None:
        pass
"""


@pytest.mark.parametrize(
    ("versions", "runs"), [(((3, 13),), True), (((3, 14),), False), (((3, 13), (3, 14)), True)]
)
def test_annotations_run_at_import_time_until_313(
    versions: tuple[tuple[int, int], ...], runs: bool
) -> None:
    facts = extract_facts(textwrap.dedent(ANNOTATED), Target(versions, "linux"))
    assert any(call.callee == "make" for call in facts.calls) is runs


def test_future_annotations_defers_them_on_every_version() -> None:
    source = "from __future__ import annotations\n" + textwrap.dedent(ANNOTATED)
    facts = extract_facts(source, Target(((3, 11),), "linux"))
    assert not any(call.callee == "make" for call in facts.calls)


LAZY = """\
lazy import unused_mod
lazy from used_pkg import thing
x = 1; lazy import after_semicolon
value = thing.attr
"""


def test_lazy_keyword_keeps_lines_and_statement_columns() -> None:
    facts = extract_facts(LAZY, Target(((3, 15),), "linux"))
    sites = {site.target: site for site in facts.sites}
    assert "unused_mod" not in sites  # never used at import time: stays lazy
    assert "after_semicolon" not in sites
    used = sites["used_pkg"]
    assert (used.line, used.col, used.lazy_use_line) == (2, 0, 4)


@pytest.mark.parametrize("before", ["\x0c\n", "# page\x0cbreak\n", "# \u2028\n", "pass\r"])
def test_lazy_keyword_after_characters_str_splitlines_breaks_at(before: str) -> None:
    """A form feed (a page-break line) or ``\\u2028`` in a comment ends a line for
    ``str.splitlines`` but not for Python, and a lone CR does the opposite for ``tokenize``: the
    keyword must still be removed from the line it is on (an IPL005 'invalid syntax' for the file
    otherwise, or a silently lost import when the line it was removed from was a comment)."""
    assert ast.parse(before + "pass\n").body[-1].lineno == 2  # Python's own line numbering
    facts = extract_facts(before + LAZY, Target(((3, 15),), "linux"))
    assert facts.problem is None
    sites = {site.target: site for site in facts.sites}
    assert set(sites) == {"used_pkg"}
    assert (sites["used_pkg"].line, sites["used_pkg"].col, sites["used_pkg"].lazy_use_line) == (3, 0, 5)


@pytest.mark.parametrize(("mode", "targets"), [
    ("none", {"unused_mod", "used_pkg", "after_semicolon"}),
    ("normal", {"used_pkg"}),
])
def test_lazy_imports_mode(mode: str, targets: set[str]) -> None:
    facts = extract_facts(LAZY, Target(((3, 15),), "linux", lazy_imports=mode))
    assert {site.target for site in facts.sites} == targets


def test_lazy_imports_all_makes_plain_imports_lazy_except_in_try() -> None:
    source = "import a\nimport b\ntry:\n    import c\nexcept ImportError:\n    pass\nb.x\n"
    facts = extract_facts(source, Target(((3, 15),), "linux", lazy_imports="all"))
    lines = {site.target: site.lazy_use_line for site in facts.sites}
    assert lines == {"b": 7, "c": None}


@pytest.mark.parametrize(("versions", "present", "flags"), [
    (((3, 14),), True, ()),
    (((3, 15),), False, None),
    (((3, 14), (3, 15)), True, (Flag.EAGER_BEFORE_315,)),
])
def test_lazy_modules_is_lazy_only_from_315(
    versions: tuple[tuple[int, int], ...], present: bool, flags: tuple[str, ...] | None
) -> None:
    source = '__lazy_modules__ = ["json"]\nimport json\n'
    facts = extract_facts(source, Target(versions, "linux"))
    sites = [site for site in facts.sites if site.target == "json"]
    assert bool(sites) is present
    if sites:
        assert sites[0].flags == flags


HEAVY_CALLS = {
    "policy.toml": """
        [settings]
        external = "stop"
        [heavy-calls]
        "torch.cuda.init" = "initialises CUDA"
        [light."app.a"]
        reason = "x"
        [light."app.b"]
        reason = "x"
        [light."app.c"]
        reason = "x"
        [light."app.d"]
        reason = "x"
    """,
    "app/__init__.py": "",
    "app/a.py": "import torch.cuda as tc\ntc.init()\n",
    "app/b.py": "from torch.cuda import init\ninit()\n",
    "app/c.py": "import torch\nclass C:\n    torch.cuda.init()\n",
    "app/d.py": "import torch\ndef later():\n    torch.cuda.init()\nobj = object()\nobj.init()\n",
}


def test_heavy_calls_resolve_through_aliases_without_installing_torch(tmp_path: Path) -> None:
    root = _tree(tmp_path, HEAVY_CALLS)
    assert _violations(root) == [
        ("app.a", 2, "torch.cuda.init()"),
        ("app.b", 2, "torch.cuda.init()"),
        ("app.c", 3, "torch.cuda.init()"),
    ]


def test_unresolvable_calls_are_not_guessed(tmp_path: Path) -> None:
    """``getattr(helpers, 'setup')`` with a constant name is ``helpers.setup`` (a fresh interpreter
    imports app.heavy: the call is followed); with a name not known before run time the call is
    IPL006 ``call-through-variable``, never a guessed chain."""
    files = {
        "policy.toml": '[heavy]\n"app.heavy" = "x"\n[light."app.light"]\nreason = "y"\n'
                       '[light."app.unknown"]\nreason = "y"\n',
        "app/__init__.py": "",
        "app/heavy.py": "",
        "app/helpers.py": "def setup():\n    import app.heavy\n",
        "app/light.py": "from app import helpers\nf = getattr(helpers, 'setup')\nf()\n[x for x in ()]\n",
        "app/unknown.py": "import sys\nfrom app import helpers\nf = getattr(helpers, sys.argv[0])\nf()\n",
    }
    root = _tree(tmp_path, files)
    assert _violations(root) == [("app.light", 3, "app.heavy")]
    report = PolicyEngine(load_policy(root / "policy.toml")).check()
    assert [(u.light, u.site.construct.value) for u in report.unresolved] == [
        ("app.unknown", "call-through-variable")
    ]
    imported = subprocess.run(
        [sys.executable, "-c", "import sys, app.light; print('app.heavy' in sys.modules)"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout
    assert imported == "True\n"


R19 = Path(__file__).parent / "fixtures" / "r19_attribute_reads"


@pytest.mark.parametrize(
    ("versions", "expected"),
    [
        ([(3, 11)], {"vllm_default_annotation", "vllm_xgrammar"}),
        # PEP 649/749: annotations are evaluated when first asked for, not when the function or
        # class is defined; a dataclass asks for its fields' annotations when the class is made.
        ([(3, 14)], {"vllm_xgrammar"}),
        ([(3, 11), (3, 14)], {"vllm_default_annotation", "vllm_xgrammar"}),
    ],
    ids=["3.11", "3.14", "both"],
)
def test_lazy_attribute_reads_in_annotations_per_target_version(
    monkeypatch: pytest.MonkeyPatch, versions: list[tuple[int, int]], expected: set[str]
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(R19 / "site-packages"))
    engine = PolicyEngine(load_policy(R19 / "policy.toml"), target_versions=versions)
    report = engine.check()
    annotated = {"vllm_default_annotation", "vllm_xgrammar", "future_annotations"}
    found = {v.light.rpartition(".")[2] for v in report.violations} & annotated
    assert found == expected
