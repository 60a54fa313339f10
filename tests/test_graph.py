"""Tests for flake8_importpolicy.analysis.graph: import-time edges, chains and closures (rules 1-4, 12, 14).

Most tests build a small tree in ``tmp_path`` and compare the engine's predicted closure with what a
fresh interpreter really runs (``helpers.run_import``, the oracle). Where they disagree the test is an
``xfail(strict=True)`` whose reason starts with ``BUG:``.
"""

from __future__ import annotations

import copy
import pickle
import textwrap
from pathlib import Path

import pytest
from helpers import run_import

from flake8_importpolicy.analysis.engine import PolicyEngine
from flake8_importpolicy.analysis.graph import resolve_relative
from flake8_importpolicy.config.load import load_policy
from flake8_importpolicy.model.facts import ImportSite
from flake8_importpolicy.model.graph import CallNode, Construct, FunctionNode, HopKind

POLICY = """
[heavy]
"zz_never_imported" = "placeholder so the policy is valid"
[light."{light}"]
reason = "test"
"""


def build(root: Path, files: dict[str, str], light: str, policy: str = POLICY) -> PolicyEngine:
    for name, text in {"policy.toml": policy.format(light=light), **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return PolicyEngine(load_policy(root / "policy.toml"))


def predicted(engine: PolicyEngine, light: str) -> dict[str, tuple[str, ...]]:
    """First-party source modules the engine says ``import light`` runs, with their chains' flags."""
    closure = engine.graph.find_import_time_closure(
        light, expand=engine.make_expander(lambda name: None, ())
    )
    found = {}
    for name, chain in closure.items():
        if ":" in name or name.endswith("()"):
            continue  # function nodes (rule 16) are not modules
        resolved = engine.index.resolve_module(name)
        if resolved.has_source and resolved.origin == "first-party" and not resolved.preloaded:
            found[name] = tuple(sorted({flag for hop in chain for flag in hop.flags}))
    return found


def executed(root: Path, light: str) -> set[str]:
    runtime = run_import(light, [root])
    prefix = str(root.resolve())
    return {
        name for name, file in runtime.items()
        if file and file.endswith(".py") and str(Path(file).resolve()).startswith(prefix)
    }


def assert_matches_interpreter(root: Path, files: dict[str, str], light: str) -> None:
    """The engine's closure equals the interpreter's, up to flagged (conservative) extras."""
    engine = build(root, files, light)
    engine_view = predicted(engine, light)
    runtime = executed(root, light)
    assert runtime - set(engine_view) == set(), "the engine missed modules the interpreter ran"
    unflagged = {name for name in set(engine_view) - runtime if not engine_view[name]}
    assert unflagged == set(), "predicted but not run, and not flagged conservative"


# -- edges ---------------------------------------------------------------------------------------


def test_import_dotted_runs_every_parent_first(tmp_path: Path) -> None:
    engine = build(tmp_path, {
        "a/__init__.py": "",
        "a/b/__init__.py": "",
        "a/b/c.py": "",
        "light.py": "import a.b.c\n",
    }, "light")
    hops = engine.graph.find_import_time_edges("light")
    assert [(h.imported, h.kind, h.line) for h in hops] == [
        ("a", HopKind.PARENT_PACKAGE, 1), ("a.b", HopKind.PARENT_PACKAGE, 1), ("a.b.c", "import", 1),
    ]
    assert [h.imported for h in engine.graph.find_parent_hops("a.b.c")] == ["a", "a.b"]
    hops = engine.graph.find_parent_hops("a.b.c")
    assert all(h.kind == HopKind.PARENT_PACKAGE and h.line == 1 for h in hops)


def test_from_import_of_submodule_versus_bound_name(tmp_path: Path) -> None:
    engine = build(tmp_path, {
        "pkg/__init__.py": "bound = 1\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    tc = 1\n",
        "pkg/bound.py": "",
        "pkg/tc.py": "",
        "pkg/plain.py": "",
        "light.py": "from pkg import bound, tc, plain, missing\n",
    }, "light")
    imported = {h.imported for h in engine.graph.find_import_time_edges("light")}
    assert imported == {"pkg", "pkg.tc", "pkg.plain"}


def test_from_import_of_a_plain_module_never_adds_submodules(tmp_path: Path) -> None:
    engine = build(tmp_path, {
        "mod.py": "x = 1\n",
        "light.py": "from mod import x, y\n",
    }, "light")
    assert {h.imported for h in engine.graph.find_import_time_edges("light")} == {"mod"}


def test_from_import_of_an_unresolved_package_names_its_submodule(tmp_path: Path) -> None:
    engine = build(tmp_path, {"light.py": "from flashinfer_not_installed import ops\n"}, "light")
    imported = {h.imported for h in engine.graph.find_import_time_edges("light")}
    assert "flashinfer_not_installed" in imported
    assert engine.index.resolve_module("flashinfer_not_installed").kind == "unresolved"


def test_star_import_runs_submodules_listed_in_all(tmp_path: Path) -> None:
    engine = build(tmp_path, {
        "withall/__init__.py": "__all__ = ['a']\n__all__ += ['b']\nb = 1\n",
        "withall/a.py": "",
        "withall/b.py": "",
        "withall/c.py": "",
        "noall/__init__.py": "",
        "noall/d.py": "",
        "light.py": "from withall import *\nfrom noall import *\n",
    }, "light")
    imported = {h.imported for h in engine.graph.find_import_time_edges("light")}
    assert imported == {"withall", "withall.a", "noall"}


def test_unknown_imports_are_listed(tmp_path: Path) -> None:
    engine = build(tmp_path, {
        "light.py": "import importlib\nname = input()\nimportlib.import_module(name)\n",
    }, "light")
    unknown = engine.graph.find_unresolved("light")
    assert [(u.module, u.line, u.construct, u.detail) for u in unknown] == [
        ("light", 3, Construct.DYNAMIC_IMPORT, "importlib.import_module(name)")
    ]


def test_ignore_predicate_removes_edges(tmp_path: Path) -> None:
    engine = build(tmp_path, {"a.py": "", "b.py": "", "light.py": "import a\nimport b\n"}, "light")
    engine.graph._ignore = lambda importer, imported: imported == "a"
    assert [h.imported for h in engine.graph.find_import_time_edges("light")] == ["b"]


def test_shortest_chain_with_line_col_tie_break(tmp_path: Path) -> None:
    engine = build(tmp_path, {
        "light.py": "import long1\nimport mid2; import mid1\n",
        "long1.py": "import long2\n",
        "long2.py": "import target\n",
        "mid2.py": "import target\n",
        "mid1.py": "import target\n",
        "target.py": "",
    }, "light")
    closure = engine.graph.find_import_time_closure("light")
    chain = closure["target"]
    # Two 2-hop chains; the one whose first hop has the smaller (line, col) wins: mid2 at col 0.
    assert [(h.module, h.imported) for h in chain] == [("light", "mid2"), ("mid2", "target")]
    assert closure["light"] == ()


# -- relative imports (rule 4) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "is_package", "level", "target", "anchor", "expected"),
    [
        ("a.b.c", False, 1, "x", "__package__", "a.b.x"),
        ("a.b.c", False, 2, "x", "__package__", "a.x"),
        ("a.b.c", False, 3, "x", "__package__", None),
        ("a.b", True, 1, "x", "__package__", "a.b.x"),
        ("a.b", True, 1, "", "__package__", "a.b"),
        ("a.b", True, 2, "", "__package__", "a"),
        ("top", False, 1, "x", "__package__", None),
        ("a.b", False, 1, "x", "__name__", "a.b.x"),
        ("q", False, 2, "x", "p.s", "p.x"),
        ("q", False, 0, "abs.mod", "__package__", "abs.mod"),
    ],
)
def test_resolve_relative(
    module: str, is_package: bool, level: int, target: str, anchor: str, expected: str | None
) -> None:
    site = ImportSite(line=1, col=0, kind="from-import", target=target, level=level, anchor=anchor)
    assert resolve_relative(site, module, is_package) == expected


# -- the interpreter as the oracle ---------------------------------------------------------------


# The passing oracle cases (circular imports, a binding only under TYPE_CHECKING, a function named
# like its submodule, `from . import x` in a plain module, try/except fallbacks, ...) are fixture
# trees: tests/fixtures/x_*/ (run by test_fixtures.py). The cases below are known engine bugs.


def test_oracle_dunder_import_fromlist(tmp_path: Path) -> None:
    assert_matches_interpreter(tmp_path, {
        "app/__init__.py": "",
        "app/pkg/__init__.py": "",
        "app/pkg/sub.py": "",
        "app/pkg/sub2.py": "",
        "app/light.py": "__import__('app.pkg', fromlist=['sub'])\n"
                        "__import__('app.pkg', globals(), locals(), ['sub2'], 0)\n",
    }, "app.light")


def test_oracle_circular_from_import_before_binding(tmp_path: Path) -> None:
    assert_matches_interpreter(tmp_path, {
        "pkg/__init__.py": "from . import a\nfrom .impl import b\n",
        "pkg/a.py": "from pkg import b\n",
        "pkg/b.py": "",
        "pkg/impl.py": "def b():\n    pass\n",
    }, "pkg")


def test_oracle_name_bound_by_star_import(tmp_path: Path) -> None:
    assert_matches_interpreter(tmp_path, {
        "pkg/__init__.py": "from .impl import *\n",
        "pkg/impl.py": "name = 1\n",
        "pkg/name.py": "",
        "light.py": "from pkg import name\n",
    }, "light")


def test_oracle_star_import_with_partly_literal_all(tmp_path: Path) -> None:
    assert_matches_interpreter(tmp_path, {
        "pkg/__init__.py": "from pkg import base\nfrom pkg.base import x\n"
                           "__all__ = ['sub']\n__all__ += base.__all__\n",
        "pkg/base.py": "__all__ = ['x']\nx = 1\n",
        "pkg/sub.py": "",
        "light.py": "from pkg import *\n",
    }, "light")


def test_oracle_star_import_with_conditional_all(tmp_path: Path) -> None:
    assert_matches_interpreter(tmp_path, {
        "pkg/__init__.py": "import os\nif not os.environ.get(os.sep[:0] + 'IPL_NEVER_SET'):\n"
                           "    __all__ = ['first']\nelse:\n    __all__ = ['second']\n",
        "pkg/first.py": "",
        "pkg/second.py": "",
        "light.py": "from pkg import *\n",
    }, "light")


def test_oracle_optional_dependency_idiom(tmp_path: Path) -> None:
    assert_matches_interpreter(tmp_path, {
        "app/__init__.py": "",
        "app/accel.py": "",
        "app/uses_accel.py": "",
        "app/light.py": "try:\n    import app.accel as accel\nexcept ImportError:\n    accel = None\n"
                        "if accel is not None:\n    import app.uses_accel\n",
    }, "app.light")


def test_an_engine_is_freed_by_the_collector_not_when_its_last_reference_goes(tmp_path: Path) -> None:
    """A command-line check pauses the garbage collector and leaves with ``os._exit``: the facts and
    graph its engine built must not be torn down one object at a time when the check returns
    (docs/performance.md, "No heap teardown at exit"). The engine is in a reference cycle, so only a
    collection frees it, as it does in a longer-lived process."""
    import gc
    import weakref

    engine = build(tmp_path, {"light.py": "import mod\n", "mod.py": ""}, "light")
    engine.check()
    graph = weakref.ref(engine.graph)
    enabled = gc.isenabled()
    gc.disable()
    try:
        del engine
        assert graph() is not None
        gc.collect()
        assert graph() is None
    finally:
        if enabled:
            gc.enable()


@pytest.mark.parametrize("node", [
    FunctionNode("app.mod", "C.__init__"), FunctionNode("app.mod", "__getattr__", "Model"),
    CallNode("torch.cuda.init"),
])
def test_nodes_survive_the_trip_to_a_worker_and_copies(node: str) -> None:
    """Worker processes receive nodes pickled (between the engine's own processes, never from disk):
    the node comes back equal, of its class, with its parts."""
    for again in (pickle.loads(pickle.dumps(node)), copy.copy(node), copy.deepcopy(node)):
        assert (type(again), again) == (type(node), node)
        if isinstance(node, FunctionNode):
            assert (again.module, again.qualname, again.argument) == (
                node.module, node.qualname, node.argument)


def test_function_node_with_positional_arguments_round_trips() -> None:
    """A body analysed with its positional parameters bound to the strings a call passed (rule
    16) is its own node: written, parsed back and pickled, it keeps them."""
    import pickle

    from flake8_importpolicy.model.graph import FunctionNode, parse_node

    node = FunctionNode("pkg._utils", "import_attr", ("AIMessage", None, "pkg.messages"))
    assert str(node) == "pkg._utils:import_attr(('AIMessage', None, 'pkg.messages'))"
    assert node.qualname == "import_attr" and node.argument == ("AIMessage", None, "pkg.messages")
    assert parse_node(str(node)) == node and pickle.loads(pickle.dumps(node)).argument == node.argument
    assert FunctionNode("pkg", "__getattr__", "x").argument == "x"
