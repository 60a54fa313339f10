"""The import-time walker's scope of bindings (analysis/importtime/bindings.py, issue 24): one
binding per name, rebinding replaces it, a function body's scope falls through to the module's."""

from __future__ import annotations

from flake8_importpolicy.analysis.extract import extract_facts
from flake8_importpolicy.analysis.importtime.bindings import NO_VALUE, BindingKind, Scope
from flake8_importpolicy.model.facts import CallBinding, Target

TARGET = Target(versions=((3, 11),), platform="linux")


def test_rebinding_a_name_forgets_what_every_concern_knew_about_it() -> None:
    scope = Scope()
    scope.bind("HAS_X", BindingKind.IMPORT, "x", line=3)
    scope.set_value("HAS_X", True)
    scope.set_guard("HAS_X", (("x",), True))
    scope.set_call("HAS_X", CallBinding(3, "f", False, ()))
    scope.bind("HAS_X", BindingKind.OTHER, None, line=9)
    binding = scope.lookup("HAS_X")
    assert binding is not None
    assert (binding.kind, binding.refers_to, binding.value, binding.guard, binding.call) == (
        BindingKind.OTHER, None, NO_VALUE, None, None
    )
    assert binding.line == 3  # the first binding's line
    assert "HAS_X" not in scope.aliases and "HAS_X" not in scope.constants


def test_del_unbinds_and_a_later_binding_records_its_own_line() -> None:
    scope = Scope()
    scope.bind("np", BindingKind.IMPORT, "numpy", line=1)
    scope.unbind("np")
    assert not scope.binds("np") and "np" not in scope.aliases
    scope.bind("np", BindingKind.IMPORT, "numpy", line=7)
    assert scope.aliases["np"] == "numpy"
    assert scope.lookup("np") is not None and scope.lookup("np").line == 7  # type: ignore[union-attr]


def test_a_function_scope_sees_the_module_and_shadows_it_without_changing_it() -> None:
    module = Scope()
    module.bind("np", BindingKind.IMPORT, "numpy", line=1)
    module.bind("helper", BindingKind.DEF, None, line=2)
    module.set_value("MODE", "fast")
    module.set_guard("HAS_X", (("x",), True))
    body = module.child()
    assert body.aliases["np"] == "numpy" and body.is_definition("helper")
    assert body.constants["MODE"] == "fast"
    assert not body.binds("np")  # bound by the module, not by the body
    assert body.guard("HAS_X") is None  # a guard is the module's own
    body.bind("np", BindingKind.OTHER, None, line=None)
    body.set_value("MODE", NO_VALUE)
    assert "np" not in body.aliases and "MODE" not in body.constants and body.binds("np")
    assert module.aliases["np"] == "numpy" and module.constants["MODE"] == "fast"


def test_the_module_facts_come_from_the_bindings() -> None:
    facts = extract_facts(
        b"import numpy as np\n"
        b"import os\n"
        b"os = 1\n"
        b"lazy = make('pkg')\n"
        b"def helper(): pass\n"
        b"del helper\n"
        b"class K:\n"
        b"    inner = 1\n",
        TARGET,
    )
    assert dict(facts.aliases) == {"np": "numpy"}
    assert facts.bindings == frozenset({"np", "os", "lazy", "K"})
    assert dict(facts.binding_lines) == {"np": 1, "os": 2, "lazy": 4, "K": 8}
    assert set(facts.call_bindings) == {"lazy"}


def test_a_fallback_binding_keeps_the_import_it_falls_back_from() -> None:
    # issue 29 item 2: on the path where the import worked, np is still numpy
    facts = extract_facts(
        b"try:\n"
        b"    import numpy as np\n"
        b"except ModuleNotFoundError:\n"
        b"    np = None\n"
        b"try:\n"
        b"    import simplejson as json\n"
        b"except ImportError:\n"
        b"    import json\n"
        b"FFT = np.fft\n",
        TARGET,
    )
    assert dict(facts.aliases) == {"np": "numpy", "json": "json"}
    assert [(r.name, r.target, r.attr) for r in facts.attribute_reads] == [("np", "numpy", "fft")]


def test_a_name_bound_to_other_names_holds_the_branches_the_target_decides() -> None:
    # issue 29 item 5; a later binding of the name forgets what it held
    facts = extract_facts(
        b"import sys, os\n"
        b"def a(): pass\n"
        b"def b(): pass\n"
        b"decided = a if sys.version_info >= (3, 99) else b\n"
        b"unsure = a if os.cpu_count() else mod.b\n"
        b"plain = a\n"
        b"rebound = a\n"
        b"for rebound in (): pass\n"
        b"called = a if os.cpu_count() else b()\n",
        TARGET,
    )
    assert dict(facts.name_values) == {
        "decided": (("b", False),),
        "unsure": (("a", True), ("mod.b", True)),
        "plain": (("a", False),),
    }


def test_a_branch_overlay_falls_through_shadows_and_merges_back_in_order() -> None:
    # issue 24: a branch's body binds in an overlay of its scope; the merge is last-write-wins
    scope = Scope()
    scope.bind("np", BindingKind.IMPORT, "numpy", line=1)
    scope.set_value("MODE", "fast")
    scope.set_guard("HAS_X", (("x",), True))
    with scope.branch() as overlay:
        assert scope.aliases["np"] == "numpy" and scope.constants["MODE"] == "fast"  # falls through
        assert scope.binds("np") and scope.guard("HAS_X") == (("x",), True)  # the same namespace
        scope.bind("late", BindingKind.OTHER, None, line=5)
        scope.bind("np", BindingKind.OTHER, None, line=6)
        with scope.branch() as inner:
            scope.set_value("MODE", "slow")
            scope.bind("inner", BindingKind.DEF, None, line=8)
            assert set(inner.writes()) == {"MODE", "inner"}
        scope.bind("np", BindingKind.IMPORT, "numpy.core", line=9)
        assert overlay.base["np"].refers_to == "numpy"  # the write shadows, the scope's is kept
        assert scope.aliases["np"] == "numpy.core"
        assert list(overlay.writes()) == ["late", "np", "MODE", "inner"]  # in the order first written
    # merged back: the last write wins, a name first bound in the branch comes after the others
    assert [name for name, _ in scope.items()] == ["np", "MODE", "HAS_X", "late", "inner"]
    assert scope.aliases["np"] == "numpy.core" and scope.constants["MODE"] == "slow"
    np_binding = scope.lookup("np")
    assert np_binding is not None and np_binding.line == 1  # the first binding's line
    direct = Scope()
    direct.bind("np", BindingKind.IMPORT, "numpy", line=1)
    direct.set_value("MODE", "fast")
    direct.set_guard("HAS_X", (("x",), True))
    direct.bind("late", BindingKind.OTHER, None, line=5)
    direct.bind("np", BindingKind.OTHER, None, line=6)
    direct.set_value("MODE", "slow")
    direct.bind("inner", BindingKind.DEF, None, line=8)
    direct.bind("np", BindingKind.IMPORT, "numpy.core", line=9)
    assert list(scope.items()) == list(direct.items())  # exactly what binding directly gives
