"""Unit tests for flake8_importpolicy.analysis.extract: which import sites run at import time (rules 8-14).

Each test parses a small source with :func:`extract_facts` and looks at the sites it reports: the
target, kind and flags. Nothing is imported. Where the engine disagrees with CPython the test is an
``xfail(strict=True)`` whose reason starts with ``BUG:``.
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from flake8_importpolicy.analysis.extract import (
    extract_facts,
    extract_facts_and_index,
    parse_function_bodies,
)
from flake8_importpolicy.model.facts import ModuleFacts, Target
from flake8_importpolicy.model.graph import Flag

PY311 = Target(versions=((3, 11),), platform="linux")

_R = TypeVar("_R")


def facts(source: str | bytes, target: Target = PY311) -> ModuleFacts:
    if isinstance(source, str):
        source = textwrap.dedent(source).lstrip("\n")
    return extract_facts(source, target)


def sites(source: str | bytes, target: Target = PY311) -> dict[str | None, tuple[str, ...]]:
    """``{target: flags}`` of every import site (the last one wins for a repeated target)."""
    found = facts(source, target)
    assert found.problem is None, found.problem
    return {site.target: site.flags for site in found.sites}


def runs(source: str, target: Target = PY311) -> set[str]:
    return {name for name in sites(source, target) if name is not None}


# -- rule 8: what runs ---------------------------------------------------------------------------


def test_module_level_blocks_all_run() -> None:
    found = sites("""
        import contextlib
        if True:
            import a_if
        try:
            import a_try
        except* ImportError:
            import a_except_star
        else:
            import a_else
        finally:
            import a_finally
        with contextlib.suppress(Exception):
            import a_with
        for _ in range(1):
            import a_for
        else:
            import a_for_else
        while False:
            import never
        else:
            import a_while_else
    """)
    assert found["a_if"] == ()
    assert found["a_try"] == (Flag.GUARDED,)
    assert found["a_except_star"] == (Flag.FALLBACK,)
    assert found["a_else"] == ()
    assert found["a_finally"] == ()
    assert found["a_with"] == ()
    assert found["a_for"] == ()
    assert found["a_for_else"] == ()
    assert "never" not in found
    assert found["a_while_else"] == ()


def test_loop_bodies_over_maybe_empty_iterables_and_else_after_break_are_conditional() -> None:
    found = sites("""
        import os
        for _ in os.environ:
            import over_unknown
        for _ in range(0):
            import over_empty_range
        for _ in [*os.environ]:
            import over_starred
        for _ in range(-1, 2, 2):
            import over_range
        for _ in {"k": 1}:
            import over_dict
        for _ in "ab":
            for _ in ():
                break
            else:
                pass
        else:
            import else_after_nested_break
        for _ in "ab":
            for _ in ():
                pass
            else:
                break
        else:
            import else_after_break_in_nested_else
        while os.environ:
            try:
                match 1:
                    case 1:
                        break
            except ImportError:
                pass
        else:
            import while_else_after_break
        while os.environ:
            def f():
                for _ in ():
                    break
        else:
            import while_else
    """)
    assert found["over_unknown"] == (Flag.CONDITIONAL,)
    assert found["over_empty_range"] == (Flag.CONDITIONAL,)
    assert found["over_starred"] == (Flag.CONDITIONAL,)
    assert found["over_range"] == ()
    assert found["over_dict"] == ()
    assert found["else_after_nested_break"] == ()
    assert found["else_after_break_in_nested_else"] == (Flag.CONDITIONAL,)
    assert found["while_else_after_break"] == (Flag.CONDITIONAL,)
    assert found["while_else"] == ()


def test_class_bodies_run_but_methods_are_deferred() -> None:
    found = runs("""
        import functools

        @functools.total_ordering
        class A(__import__("base").B, metaclass=__import__("meta").M):
            import in_class_body

            def method(self, d=__import__("method_default")):
                import in_method

            @staticmethod
            def helper():
                def nested():
                    import in_nested
                import in_helper

            class Inner:
                import in_inner_class

                def m(self):
                    import in_inner_method

            values = [__import__("class_comprehension") for _ in range(1)]
            later = lambda: __import__("in_lambda")
    """)
    assert {
        "functools", "base", "meta", "in_class_body", "method_default",
        "in_inner_class", "class_comprehension",
    } == found


def test_function_decorators_and_defaults_run_bodies_do_not() -> None:
    found = runs("""
        @staticmethod
        def f(a=__import__("dflt"), *, b=__import__("kwdflt")):
            import body

        async def g(c=__import__("async_dflt")):
            import async_body
            [x async for x in c]

        h = lambda d=__import__("lambda_dflt"): __import__("lambda_body")

        def __getattr__(name):
            import getattr_body
    """)
    assert found == {"dflt", "kwdflt", "async_dflt", "lambda_dflt"}


def test_decorator_call_arguments_run() -> None:
    found = runs("""
        import functools

        @functools.lru_cache(maxsize=__import__("deco_arg").X)
        def f():
            pass

        @functools.wraps(wrapped=__import__("class_deco_arg").f)
        class C:
            pass
    """)
    assert found == {"functools", "deco_arg", "class_deco_arg"}


def test_decorator_expressions_run() -> None:
    found = runs("""
        import importlib

        @__import__("deco_attr").wrap
        def f():
            pass

        @importlib.import_module("deco_factory").make(1)
        def g():
            pass

        @__import__("class_deco").x
        class C:
            pass
    """)
    assert {"deco_attr", "deco_factory", "class_deco"} <= found


def test_walrus_at_module_level_runs_and_binds() -> None:
    found = facts("""
        if (mod := __import__("walrus_target")):
            pass
    """)
    assert [s.target for s in found.sites] == ["walrus_target"]
    assert "mod" in found.bindings


def test_match_cases_are_conditional() -> None:
    found = sites("""
        import sys
        match sys.argv:
            case [_, "x"]:
                import case_x
            case _:
                import case_default
    """)
    assert found["case_x"] == (Flag.CONDITIONAL,)
    assert found["case_default"] == (Flag.CONDITIONAL,)


def test_function_bodies_see_module_names_minus_their_own_bindings() -> None:
    """Each body reads the module's names through a copy-on-write view: its own bindings shadow
    them, and never leak into the module or into another body."""
    found = facts("""
        import helpers as h
        from pkg import tool

        def local():
            pass

        def shadows(h, local):
            h.setup()
            local()
            tool = 1
            tool()
            import other as tool
            tool.run()

        def uses():
            h.setup()
            tool()
            local()
    """)
    calls = {name: [(c.callee, c.local) for c in f.calls] for name, f in found.functions.items()}
    assert calls["shadows"] == [("h.setup", False), ("local", False), ("tool", False),
                                ("other.run", False)]
    assert calls["uses"] == [("helpers.setup", False), ("pkg.tool", False), ("local", True)]
    assert found.aliases == {"h": "helpers", "tool": "pkg.tool"}


def test_module_level_del_unbinds_unless_it_may_not_run() -> None:
    found = facts("""
        import os
        a = b = c = d = e = 1
        del a, (b, [c])
        b = 2
        if os.environ.get("X"):
            del d
        try:
            pass
        except ImportError:
            del e

        def f(x):
            del x

        class C:
            e = 1
            del e

        __all__ = ["x"]
        def __getattr__(name):
            raise AttributeError(name)
        del __all__, __getattr__
    """)
    assert {"b", "d", "e", "f", "C"} <= found.bindings
    assert not {"a", "c", "__all__", "__getattr__"} & found.bindings
    assert found.binding_lines["b"] == 4
    assert found.all_names is None and not found.defines_getattr


def test_match_capture_patterns_bind_names() -> None:
    found = facts("""
        match {}:
            case {"k": [first, *rest], **others}:
                pass
            case (1 | 2) as either:
                pass
            case Point(x=_) | Point(y=_):
                pass
            case sub:
                pass
    """)
    assert {"first", "rest", "others", "either", "sub"} <= found.bindings
    assert not {"_", "Point", "x", "y", "k"} & found.bindings


def test_global_statement_in_function_binds_nothing_at_import_time() -> None:
    found = facts("""
        def setup():
            global CONFIG
            import inside
            CONFIG = 1
    """)
    assert [s.target for s in found.sites] == []
    assert "CONFIG" not in found.bindings
    assert "setup" in found.bindings


# -- rule 10: TYPE_CHECKING ----------------------------------------------------------------------


def test_type_checking_spellings_skip_the_body_and_run_else() -> None:
    found = sites("""
        import typing
        import typing as t
        import typing_extensions as te
        from typing import TYPE_CHECKING
        from typing import TYPE_CHECKING as TC
        if TYPE_CHECKING:
            import tc1
        if typing.TYPE_CHECKING:
            import tc2
        if t.TYPE_CHECKING:
            import tc3
        if te.TYPE_CHECKING:
            import tc4
        if TC:
            import tc5
        else:
            import tc_else
        if not TYPE_CHECKING:
            import tc_not
    """)
    assert not {"tc1", "tc2", "tc3", "tc4", "tc5"} & set(found)
    assert found["tc_else"] == ()
    assert found["tc_not"] == ()


def test_type_checking_in_boolean_operators_and_elif_chains() -> None:
    found = sites("""
        from probes import probe
        from typing import TYPE_CHECKING
        if TYPE_CHECKING or probe("X"):
            import or_unknown
        if TYPE_CHECKING and probe("X"):
            import and_never
        if not TYPE_CHECKING and probe("X"):
            import not_and_unknown
        if probe("X"):
            import first
        elif TYPE_CHECKING:
            import elif_never
        elif probe("Y"):
            import elif_unknown
        else:
            import final_else
        if TYPE_CHECKING:
            import never
        elif probe("Y"):
            import elif_after_tc
        else:
            import else_after_tc
    """)
    assert found["or_unknown"] == (Flag.CONDITIONAL,)
    assert "and_never" not in found
    assert found["not_and_unknown"] == (Flag.CONDITIONAL,)
    assert found["first"] == (Flag.CONDITIONAL,)
    assert "elif_never" not in found
    assert found["elif_unknown"] == (Flag.CONDITIONAL,)
    assert found["final_else"] == (Flag.CONDITIONAL,)
    assert "never" not in found
    assert found["elif_after_tc"] == (Flag.CONDITIONAL,)
    assert found["else_after_tc"] == (Flag.CONDITIONAL,)


def test_long_elif_chains_are_walked_without_recursion() -> None:
    """600 branches (CPython compiles them) at module level and in a function body."""
    chain = "".join(f"elif sys.platform == 'p{n}':\n    import never\n" for n in range(600))
    in_body = "".join(f"    elif x == {n}:\n        pass\n" for n in range(600))
    found = facts(
        f"import sys\nif sys.platform == 'no':\n    pass\n{chain}else:\n    import last\n"
        f"def f(x):\n    if x:\n        pass\n{in_body}    else:\n        import deep_else\n"
    )
    assert found.problem is None
    assert [(site.target, site.flags) for site in found.sites] == [("sys", ()), ("last", ())]
    assert [(site.target, site.flags) for site in found.functions["f"].sites] == [
        ("deep_else", (Flag.CONDITIONAL,))
    ]


def test_false_constants_and_mypy_flag_skip_the_body() -> None:
    found = runs("""
        MYPY = False
        if False:
            import f1
        if 0:
            import f2
        if MYPY:
            import f3
        if None:
            import f4
        if "":
            import f5
        if not MYPY:
            import t1
    """)
    assert found == {"t1"}


def test_main_guard_skipped_else_runs() -> None:
    found = runs("""
        if __name__ == "__main__":
            import main_only
        else:
            import imported_only
        if "__main__" != __name__:
            import also_imported
    """)
    assert found == {"imported_only", "also_imported"}


def test_constant_after_import_binding_is_unknown() -> None:
    found = sites("""
        try:
            import numpy
        except ImportError:
            numpy = None
        if numpy is not None:
            import needs_numpy
        try:
            from ._C import HAS_CUDA
        except ImportError:
            HAS_CUDA = False
        if HAS_CUDA:
            import cuda_ops
    """)
    assert found.get("needs_numpy") == (Flag.CONDITIONAL,)
    assert found.get("cuda_ops") == (Flag.CONDITIONAL,)


def test_constant_declared_global_in_a_function_is_unknown() -> None:
    found = sites("""
        FLAG = False

        def enable():
            global FLAG
            FLAG = True

        enable()
        if FLAG:
            import when_enabled
    """)
    assert found.get("when_enabled") == (Flag.CONDITIONAL,)


def test_constant_rebound_later_is_unknown() -> None:
    found = sites("""
        from probes import probe
        FAST = False
        if probe("FAST"):
            FAST = True
        if FAST:
            import fast_path
    """)
    assert found["fast_path"] == (Flag.CONDITIONAL,)


# -- rule 11/13: version, platform ---------------------------------------------------------------


VERSION_SOURCE = """
import sys
from sys import version_info
from sys import version_info as vi
import sys as _sys
if sys.version_info >= (3, 11):
    import ge_311
else:
    import lt_311
if sys.version_info[:2] >= (3, 11):
    import slice_ge_311
if sys.version_info[:2] == (3, 11):
    import slice_eq_311
if sys.version_info == (3, 11):
    import never_eq_pair
if sys.version_info > (3, 11):
    import gt_pair
if sys.version_info >= (3, 11, 2):
    import micro
else:
    import micro_else
if sys.version_info.major == 3:
    import major_3
else:
    import major_not_3
if sys.version_info.minor >= 12:
    import minor_ge_12
if sys.version_info[0] == 2:
    import py2
if sys.version_info[1] < 9:
    import minor_lt_9
if version_info >= (3, 12):
    import alias_ge_312
else:
    import alias_lt_312
if vi < (3, 9):
    import vi_lt_39
if _sys.version_info < (3, 10):
    import underscore_lt_310
if (3, 11) <= sys.version_info:
    import flipped
"""


def test_version_branches_for_311() -> None:
    found = sites(VERSION_SOURCE)
    for name in ("ge_311", "slice_ge_311", "slice_eq_311", "gt_pair", "major_3", "alias_lt_312",
                 "flipped"):
        assert found[name] == (), name
    for name in ("lt_311", "never_eq_pair", "major_not_3", "minor_ge_12", "py2", "minor_lt_9",
                 "alias_ge_312", "vi_lt_39", "underscore_lt_310"):
        assert name not in found, name
    # The micro release is unknown: both branches may run.
    assert found["micro"] == (Flag.CONDITIONAL,)
    assert found["micro_else"] == (Flag.CONDITIONAL,)


def test_version_branches_for_38_and_union() -> None:
    py38 = Target(versions=((3, 8),), platform="linux")
    found = sites(VERSION_SOURCE, py38)
    assert "ge_311" not in found and found["lt_311"] == ()
    assert found["minor_lt_9"] == () and found["vi_lt_39"] == ()
    assert "micro" not in found and found["micro_else"] == ()
    both = Target(versions=((3, 8), (3, 12)), platform="linux")
    found = sites(VERSION_SOURCE, both)
    assert found["ge_311"] == () and found["lt_311"] == ()
    assert found["alias_ge_312"] == () and found["alias_lt_312"] == ()


def test_platform_and_os_name() -> None:
    source = """
        import os
        import sys
        if sys.platform == "win32":
            import win
        if sys.platform.startswith("linux"):
            import linux
        if os.name == "nt":
            import nt
        else:
            import posix
    """
    assert runs(source) == {"os", "sys", "linux", "posix"}
    windows = Target(versions=((3, 11),), platform="win32")
    assert runs(source, windows) == {"os", "sys", "win", "nt"}


# -- rule 12: try/except -------------------------------------------------------------------------


def test_guarded_and_fallback_flags() -> None:
    found = sites("""
        try:
            import fast
        except ImportError:
            import slow
        try:
            import outer
            try:
                import inner
            except ImportError:
                pass
        except* ImportError:
            import star_fallback
    """)
    assert found["fast"] == (Flag.GUARDED,)
    assert found["slow"] == (Flag.FALLBACK,)
    assert found["outer"] == (Flag.GUARDED,)
    assert found["inner"] == (Flag.GUARDED,)
    assert found["star_fallback"] == (Flag.FALLBACK,)


# -- rule 14: dynamic imports --------------------------------------------------------------------


def test_dynamic_imports() -> None:
    found = facts("""
        import importlib
        import importlib as il
        from importlib import import_module as im
        name = "x"
        importlib.import_module("lit.a")
        il.import_module("lit.b")
        im("lit.c")
        importlib.import_module(name="lit.kw")
        importlib.import_module(".rel", "pkg.base")
        importlib.import_module("..up", __package__)
        importlib.import_module(".own", __name__)
        __import__("lit.d")
        __import__("lit.e", globals(), locals(), ["c"], 0)
        importlib.import_module(f"dyn.{name}")
        importlib.import_module(name)
        __import__("rel", level=1)
    """)
    literal = {(s.target, s.level, s.anchor) for s in found.sites
               if s.kind == "importlib" and s.target is not None}
    assert literal == {
        ("lit.a", 0, "__package__"), ("lit.b", 0, "__package__"), ("lit.c", 0, "__package__"),
        ("lit.kw", 0, "__package__"), ("rel", 1, "pkg.base"), ("up", 2, "__package__"),
        ("own", 1, "__name__"), ("lit.d", 0, "__package__"), ("lit.e", 0, "__package__"),
        # computable names: ``name`` is bound once to a constant (rule 14)
        ("dyn.x", 0, "__package__"), ("x", 0, "__package__"),
    }
    unknown = [s.detail for s in found.sites if s.target is None]
    assert unknown == ["__import__('rel', level=1)"]


def test_computable_dynamic_names() -> None:
    found = facts("""
        import importlib
        PACKAGES = ("alpha", "beta")
        MAP = {"x": "mod_x", "y": "mod_y"}
        for package in PACKAGES:
            __import__(package)
        for other in ["gamma"]:
            importlib.import_module(other)
        __import__(__package__ + ".fft")
        importlib.import_module(f"{__name__}.sub")
        importlib.import_module(f".{MAP['x']}", __name__)
        importlib.import_module("pkg." + "joined")
        for name in unknowable():
            importlib.import_module(name)
    """)
    sites = {(s.target, s.level, s.anchor, s.flags) for s in found.sites if s.kind == "importlib"}
    assert sites == {
        ("alpha", 0, "__package__", ()), ("beta", 0, "__package__", ()),
        ("gamma", 0, "__package__", ()), ("fft", 1, "__package__", ()), ("sub", 1, "__name__", ()),
        ("mod_x", 1, "__name__", ()), ("pkg.joined", 0, "__package__", ()),
        (None, 0, "__package__", (Flag.CONDITIONAL,)),
    }


def test_import_as_bindings() -> None:
    found = facts("""
        import a.b as c
        import d.e.f
        from g import h as i
        from . import j
    """)
    assert {s.target for s in found.sites} == {"a.b", "d.e.f", "g", ""}
    assert {"c", "d", "i", "j"} <= found.bindings
    assert not {"a", "h", "e"} & found.bindings


# -- __all__ (used by star imports, rule 3) ------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('__all__ = ["a", "b"]', ("a", "b")),
        ('__all__ = ("a",)', ("a",)),
        ('__all__: list[str] = ["a"]', ("a",)),
        ('__all__ = ["a"] + ["b"]', ("a", "b")),
        ('__all__ = ["a"]\n__all__ += ["b"]\n__all__ += ("c",)', ("a", "b", "c")),
        ('__all__ = ["a"]\n__all__.extend(["b"])\n__all__.append("c")', ("a", "b", "c")),
        ('__all__ = ["a"]\nif False:\n    __all__ += ["never"]', ("a",)),
        ('__all__ = ["a"]\ndef f():\n    __all__ = ["local"]', ("a",)),
        ('class C:\n    __all__ = ["class_attr"]', None),
        ("x = 1", None),
        ("__all__ = list(names)", None),
    ],
)
def test_all_forms(source: str, expected: tuple[str, ...] | None) -> None:
    assert facts(source).all_names == expected


def test_all_assigned_under_unknown_condition_keeps_every_branch() -> None:
    found = facts("""
        from probes import probe
        if probe("X"):
            __all__ = ["a"]
        else:
            __all__ = ["b"]
    """)
    assert found.all_names is not None and {"a", "b"} <= set(found.all_names)


# -- problems ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "line"),
    [
        (b"import a\ndef f(:\n    pass\n", 2),
        (b"x = 1\ny = '\xff'\n", 2),
        (b"type X = int\n", 1),  # 3.12 syntax, analysed by a 3.11 interpreter
        (b"# -*- coding: no-such-codec -*-\nimport a\n", 1),
    ],
)
def test_unparsable_sources_are_problems_not_crashes(source: bytes, line: int) -> None:
    found = extract_facts(source, PY311)
    assert found.problem is not None
    assert found.problem.line == line
    assert found.sites == ()


def test_nul_byte_is_a_problem() -> None:
    found = extract_facts(b"x = 1\n\x00\nimport a\n", PY311)
    assert found.problem is not None
    assert "null" in found.problem.message


def test_nul_byte_problem_names_its_line() -> None:
    found = extract_facts(b"x = 1\ny = 2\n\x00\n", PY311)
    assert found.problem is not None and found.problem.line == 3


def test_encodings_are_decoded_like_cpython() -> None:
    latin1 = b"# -*- coding: latin-1 -*-\ns = '\xff'\nimport after_latin1\n"
    bom = b"\xef\xbb\xbfimport after_bom\n"
    assert {s.target for s in extract_facts(latin1, PY311).sites} == {"after_latin1"}
    assert {s.target for s in extract_facts(bom, PY311).sites} == {"after_bom"}


@pytest.mark.parametrize(
    "source",
    [
        "import a\nreturn 1\n",
        "import a\nawait a\n",
        "import a\nx = [y async for y in a]\n",
        "import a\nfrom __future__ import annotations\n",
    ],
)
def test_compile_time_syntax_errors_are_problems(source: str) -> None:
    found = extract_facts(source, PY311)
    assert found.problem is not None and found.problem.line == 2


# -- annotations and lazy expressions ------------------------------------------------------------


def test_annotations_are_evaluated_at_import_time() -> None:
    found = runs("""
        import importlib
        X: importlib.import_module("ann_var").T = 1
        def f(a: __import__("ann_param").T) -> __import__("ann_return").T:
            pass
    """)
    assert {"ann_var", "ann_param", "ann_return"} <= found


def test_future_annotations_are_not_evaluated() -> None:
    found = runs("""
        from __future__ import annotations
        import importlib
        X: importlib.import_module("ann_var").T = 1
        def f(a: __import__("ann_param").T) -> __import__("ann_return").T:
            pass
    """)
    assert found == {"importlib"}


def test_generator_expression_body_is_deferred() -> None:
    found = runs("""
        lazy = (__import__("gen_body") for _ in [__import__("gen_iter")])
    """)
    assert found == {"gen_iter"}


# -- function bodies analysed one at a time (FunctionIndex / FunctionBodies) ------------------------

_BODIES_CORNERS = {
    "duplicates_and_nesting": """\
        import os
        if os.name == "nt":
            def f():
                import a
                def inner():
                    import b
                    def deeper():
                        import c
                        def deepest():
                            import d
                        return deepest
                    return deeper
                return inner
        else:
            def f():
                import e
                def other():
                    import g
                return other
        class C:
            class D:
                async def m(self):
                    import h
            @staticmethod
            def s(x=1):  # a comment on the def line
                import i; import j
        """,
    "tabs_form_feed_and_strings": "def f():\n\timport a\n\tx = '''\ndef fake():\n    import b\n'''\n"
                                  "\x0c\ndef g():\n\timport c\n",
    "crlf": "def f():\r\n    import a\r\n\r\nclass C:\r\n    def m(self):\r\n        import b\r\n",
    "latin1_cookie": b"# -*- coding: latin-1 -*-\ns = '\xe9'\ndef f():\n    import a  # \xe9\n",
    "bom": b"\xef\xbb\xbfdef f():\n    import a\n",
    "lazy_keyword": "lazy import json\ndef f():\n    lazy import a\n    import b\n",
    "one_line_defs": "def f(): import a\nclass C:\n    def m(self): import b; return 1\n",
    "decorated_multiline": "@dec(\n    1,\n)\ndef f(\n    a,\n    b,\n):\n    import a\n",
    # module-level variables a body calls (rule 16): known callables, shadowed, unknown
    "module_variables": "import importlib\nimport os\nload = importlib.import_module\nhook = os.getenv('X')\n"
                        "if hook:\n    load = None\ndef f():\n    load('a')\n    hook('b')\n"
                        "def g(load):\n    load('c')\n",
}


def _all_function_names(source: bytes | str, target: Target = PY311) -> dict[str, object]:
    return dict(extract_facts(source, target).functions)


@pytest.mark.parametrize("name", sorted(_BODIES_CORNERS))
def test_function_bodies_one_at_a_time_equal_the_whole_module_analysis(name: str) -> None:
    source = _BODIES_CORNERS[name]
    if isinstance(source, str) and name == "duplicates_and_nesting":
        source = textwrap.dedent(source)
    # ``lazy import`` is 3.15 syntax: on 3.11 the module is a syntax error, with no functions
    target = Target(versions=((3, 15),), platform="linux") if name == "lazy_keyword" else PY311
    expected = _all_function_names(source, target)
    assert expected, "the corner case must define functions"
    facts, index = extract_facts_and_index(source, target)
    assert facts == extract_facts(source, target, functions=False)
    assert index is not None
    # In every order: nested names first (their outer function is analysed on the way), then all.
    for names in (sorted(expected, key=len, reverse=True), sorted(expected)):
        bodies = index.load(source)
        assert {q: bodies.find_function_facts(q) for q in names} == {q: expected[q] for q in names}
        assert bodies.find_function_facts("missing") is None
        assert bodies.find_function_facts("f.<locals>.missing") is None
    whole = parse_function_bodies(source, target)
    assert whole is not None
    assert {q: whole.find_function_facts(q) for q in expected} == expected


def test_function_bodies_fall_back_to_a_whole_parse_when_a_span_does_not_parse() -> None:
    source = "def f():\n    import a\n"
    facts, index = extract_facts_and_index(source, PY311)
    assert index is not None
    broken = dataclasses.replace(index, spans={"f": ((2, 2),)})  # not the def's lines
    assert broken.load(source).find_function_facts("f") == extract_facts(source, PY311).functions["f"]


def test_function_bodies_of_real_modules_equal_the_whole_module_analysis() -> None:
    """Every function of a corpus of real modules (this package, parts of the standard library)."""
    import email
    import json

    import flake8_importpolicy

    files = [
        path
        for package in (flake8_importpolicy, json, email)
        for path in sorted(Path(package.__file__).parent.rglob("*.py"))
    ]
    checked = 0
    for path in files:
        source = path.read_bytes()
        expected = _all_function_names(source)
        _, index = extract_facts_and_index(source, PY311)
        assert index is not None, path
        bodies = index.load(source)
        for qualname, facts in expected.items():
            assert bodies.find_function_facts(qualname) == facts, (path, qualname)
            checked += 1
    assert checked > 500


def _at_depth(frames: int, function: Callable[[], _R]) -> _R:
    """``function()`` called ``frames`` Python frames deeper than here."""
    return function() if frames == 0 else _at_depth(frames - 1, function)


def test_nesting_limit_does_not_depend_on_the_callers_stack() -> None:
    """How deeply a source may nest must not depend on how deep the stack of the code analysing it
    is: a worker process forked deep inside the engine, or a long chain of import-time calls, would
    otherwise get another answer (``--jobs 2`` reported IPL005 for a module with 485 ``not`` that
    ``--jobs 1`` analysed). CPython itself compiles all of these."""
    for count in range(380, 520, 10):
        source = "X = 0\nif " + "not " * count + "X:\n    import a\n"
        compile(source, "m.py", "exec")
        shallow = extract_facts(source, PY311)
        assert _at_depth(400, lambda: extract_facts(source, PY311)) == shallow, count
        body = "def f():\n    if " + "not " * count + "X:\n        import a\n"
        _, index = extract_facts_and_index(body, PY311)
        assert index is not None
        expected = index.load(body).find_function_facts("f")
        assert _at_depth(400, lambda: index.load(body).find_function_facts("f")) == expected, count


# A property: random modules (functions, methods and nested functions under decorators, in if/try/
# with/match/while blocks and classes, with tabs or spaces, CRLF, form feeds, strings that look like
# code, continuations, lazy imports) analysed one body at a time equal the whole-module analysis.

_SIMPLE = (
    "import a", "import b.c as np", "from . import d", "from os import path as os", "x = 1",
    "MYPY = False", "np.load()", "os.f()", "f()", "C()", "g()", "__import__('e')",
    "importlib.import_module('h')", "del np", "global x", "pass",
    "y = '''\\ndef f():\\n    import z\\n'''", "if MYPY:\n    import t1\nelse:\n    import t2",
    "lam = lambda: __import__('lam')", "z = (1,\n2)", "w = 1 + \\\n 2", "import q; import r",
    "# comment", "s = f'{x!r}'", "lazy import lz", "lz.use()",
)
_HEADS = {
    "def": ("def {}(self=None, *a, k=__import__('dflt')):",),
    "async": ("async def {}():",),
    "class": ("class {}(object):",),
    "if": ("if x:",), "try": ("try:",), "with": ("with x as np:",), "while": ("while x:",),
    "match": ("match x:", "    case 1:"),
}


def _indent(lines: list[str], width: int) -> list[str]:
    return [" " * width + line if line else line for text in lines for line in text.split("\n")]


def _blocks(depth: int) -> st.SearchStrategy[list[str]]:
    if depth == 0:
        return st.lists(st.sampled_from(_SIMPLE), min_size=1, max_size=4)

    def compound(kind: str, name: str, body: list[str], decorators: list[str]) -> str:
        head = [*(decorators if kind in ("def", "class") else []),
                *(line.format(name) for line in _HEADS[kind])]
        if kind in ("def", "async"):
            body = [*body, "return g"]  # a decorator factory's returned function
        lines = head + _indent(body, 8 if kind == "match" else 4)
        if kind == "try":
            lines += ["except ImportError:", f"    def {name}():", f"        import fallback_{name}"]
        return "\n".join(lines)

    inner = st.builds(
        compound,
        st.sampled_from([*_HEADS, "def", "def", "class"]),
        st.sampled_from(["f", "g", "m", "C", "D"]),
        _blocks(depth - 1),
        st.lists(st.sampled_from(["@dec", "@dec(\n    1)", "@staticmethod", "@f"]), max_size=2),
    )
    return st.lists(st.one_of(st.sampled_from(_SIMPLE), inner, inner, inner), min_size=1, max_size=4)


@st.composite
def _modules(draw: st.DrawFn) -> str:
    lines = "\n".join(draw(_blocks(3))).split("\n")
    for _ in range(draw(st.integers(0, 2))):  # page breaks between top-level statements
        at = draw(st.integers(0, len(lines)))
        if at == len(lines) or not lines[at][:1].isspace():
            lines.insert(at, "\x0c")
    text = "\n".join(lines) + "\n"
    if draw(st.booleans()):
        text = text.replace("    ", "\t")
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    if draw(st.booleans()):
        text = "from __future__ import annotations\n" + text
    return text


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(source=_modules())
def test_function_bodies_of_random_modules_equal_the_whole_module_analysis(source: str) -> None:
    note(repr(source))
    target = Target(versions=((3, 11), (3, 15)), platform="linux")
    whole = extract_facts(source, target)
    facts, index = extract_facts_and_index(source, target)
    assert facts == extract_facts(source, target, functions=False)
    if whole.problem is not None:  # (a body of only a comment, say) not expected from this generator
        assert index is None
        return
    # from bytes the function bodies are blanked before parsing (skeleton.py): the same answers
    assert extract_facts_and_index(source.encode(), target) == (facts, index)
    assert index is not None
    expected = dict(whole.functions)
    for names in (sorted(expected, key=len, reverse=True), sorted(expected)):
        bodies = index.load(source)
        assert {q: bodies.find_function_facts(q) for q in names} == expected
        for missing in ("missing", "f.<locals>.missing", "C.missing", "C.m.<locals>.missing"):
            assert missing in expected or bodies.find_function_facts(missing) is None


def test_a_walker_is_freed_without_the_cycle_collector() -> None:
    """The walker holds its expression scanner, which reaches back to it (for the statements of a
    constant ``exec`` string) only through a weak reference: extraction pauses the cycle
    collector, so a cycle would keep every walker and its syntax tree alive until a collection."""
    import ast
    import gc
    import weakref

    from flake8_importpolicy.analysis.importtime.walker import _ImportTimeVisitor

    enabled = gc.isenabled()
    gc.disable()
    try:
        walker = _ImportTimeVisitor(Target(((3, 12),), "linux"))
        walker.visit_body(ast.parse("import os\nexec('import json')\n").body, frozenset())
        assert [site.target for site in walker.imports.finish()] == ["os", "json"]
        freed = weakref.ref(walker)
        del walker
        assert freed() is None
    finally:
        if enabled:
            gc.enable()


# -- rule 19: import structures built imperatively (issue 25 item 4) -------------------------------


_STRUCTURE_HEAD = """
import sys
from tflike.utils import _LazyModule, is_torch_available

_import_structure = {"configuration_utils": ["PretrainedConfig"], "models": []}
"""


def _structure(body: str) -> ModuleFacts:
    source = textwrap.dedent(_STRUCTURE_HEAD).lstrip("\n") + textwrap.dedent(body).lstrip("\n") + (
        'sys.modules[__name__] = _LazyModule(__name__, globals()["__file__"], _import_structure)\n'
    )
    return extract_facts(source, PY311)


def test_import_structure_follows_item_assignment_extend_append_update_setdefault() -> None:
    found = _structure("""
        _import_structure["modeling_utils"] = ["PreTrainedModel"]
        _import_structure["models"] += ["auto"]
        _import_structure["configuration_utils"].extend(["GenerationMixin"])
        _import_structure["configuration_utils"].append("Other")
        _import_structure.update({"tokenization_utils": ["PreTrainedTokenizer"]})
        _import_structure.setdefault("image_utils", [])
        _import_structure["image_utils"] += ["ImageMixin"]
        _import_structure.setdefault("processing", ["Processor"])
    """)
    attach = found.lazy_attach
    assert attach is not None and not found.unresolved
    assert dict(attach.submod_attrs) == {
        "configuration_utils": ("GenerationMixin", "Other", "PretrainedConfig"),
        "models": ("auto",),
        "modeling_utils": ("PreTrainedModel",),
        "tokenization_utils": ("PreTrainedTokenizer",),
        "processing": ("Processor",),
        "image_utils": ("ImageMixin",),
    }
    assert not attach.maybe_attrs and not attach.any_name


def test_import_structure_entries_of_code_that_may_not_run_are_maybe() -> None:
    found = _structure("""
        try:
            if not is_torch_available():
                raise ImportError()
        except ImportError:
            _import_structure["utils.dummy_pt_objects"] = ["PreTrainedModel"]
        else:
            _import_structure["modeling_utils"] = ["PreTrainedModel"]
        if is_torch_available():
            _import_structure["models"].extend(["bert"])
        _import_structure["utils.dummy_tf"] = [n for n in dir(sys) if n]
    """)
    attach = found.lazy_attach
    assert attach is not None and not found.unresolved
    assert "modeling_utils" not in attach.submod_attrs  # the else runs only if nothing was raised
    assert dict(attach.maybe_attrs) == {
        "utils.dummy_pt_objects": ("PreTrainedModel",), "models": ("bert",),
        "modeling_utils": ("PreTrainedModel",),
    }
    assert attach.any_name == ("utils.dummy_tf",)


@pytest.mark.parametrize("body", [
    "X = 1",  # nothing raises: the else runs whenever the try does
    "if sys.version_info < (3, 0):\n                raise ImportError()",  # ruled out
])
def test_import_structure_entries_of_a_try_else_that_always_runs_are_certain(body: str) -> None:
    found = _structure(f"""
        try:
            {body}
        except ImportError:
            _import_structure["utils.dummy_pt_objects"] = ["PreTrainedModel"]
        else:
            _import_structure["modeling_utils"] = ["PreTrainedModel"]
    """)
    attach = found.lazy_attach
    assert attach is not None
    assert attach.submod_attrs["modeling_utils"] == ("PreTrainedModel",)
    assert "modeling_utils" not in attach.maybe_attrs


@pytest.mark.parametrize("change", [
    '_import_structure.pop("models")\n',
    'del _import_structure["models"]\n',
    '_import_structure[str(id(sys))] = ["X"]\n',
    '_import_structure.setdefault("models", []).append("X")\n',
    '_import_structure.update(dict(sys.modules))\n',
])
def test_import_structure_changed_in_a_way_not_followed_is_unresolved(change: str) -> None:
    found = _structure(change)
    assert found.lazy_attach is None
    assert [u.construct.value for u in found.unresolved] == ["getattr-import"]


def test_import_structure_unchanged_or_rebound_keeps_the_literal_rules() -> None:
    assert _structure("").lazy_attach is not None
    rebound = _structure("""
        _import_structure["modeling_utils"] = ["PreTrainedModel"]
        _import_structure = {k: sorted(v) for k, v in _import_structure.items() if k}
    """)
    assert rebound.lazy_attach is None and len(rebound.unresolved) == 1


def test_import_structure_rebuilt_with_the_same_names_is_followed() -> None:
    """transformers 4.5x: ``{k: set(v) for k, v in _import_structure.items()}`` is the same
    structure (issue 25); the failing-first shape is fixture x_lazy_module_scanned_subpackage."""
    rebuilt = _structure("""
        _import_structure["modeling_utils"] = ["PreTrainedModel"]
        _import_structure = {k: set(v) for k, v in _import_structure.items()}
    """)
    assert rebuilt.lazy_attach is not None and not rebuilt.unresolved
    assert rebuilt.lazy_attach.submod_attrs["modeling_utils"] == ("PreTrainedModel",)


# -- rule 16: a name bound to known callables on every path (issue 25 item 5) ----------------------


@pytest.mark.parametrize(("bindings", "expected"), [
    ("fuse = torch.compile\n", {("torch.compile", ())}),
    ("fuse = lambda f: f\nif torch.ready():\n    fuse = torch.compile\n",
     {("torch.compile", ("conditional",))}),
    ("if torch.ready():\n    fuse = torch.compile\nelse:\n    fuse = local\n",
     {("torch.compile", ("conditional",)), ("local", ("conditional",))}),
    ("try:\n    fuse = torch.jit.script\nexcept AttributeError:\n    fuse = local\n",
     {("torch.jit.script", ("conditional",)), ("local", ("conditional",))}),
    ("fuse = local\nfuse = compile_it\n", {("torch.compile", ())}),
])
def test_decorator_bound_to_known_callables_is_a_call_of_each(
    bindings: str, expected: set[tuple[str, tuple[str, ...]]]
) -> None:
    source = (
        "import torch\nfrom torch import compile as compile_it\n\n\ndef local(f):\n    return f\n\n\n"
        + bindings + "\n\n@fuse\ndef gelu(x):\n    return x\n"
    )
    found = facts(source)
    decorator_line = source.splitlines().index("@fuse") + 1
    called = {(c.callee, c.flags) for c in found.calls if c.line == decorator_line}
    assert called - {("fuse", ())} == expected
    assert not found.unresolved


@pytest.mark.parametrize("bindings", [
    "fuse = make()\nif torch.ready():\n    fuse = torch.compile\n",  # may still hold make()'s result
    "fuse = torch.compile\nfor fuse in (local,):\n    pass\n",  # rebound by a loop
    "fuse = lambda f: torch.compile(f)\n",  # a lambda that calls something
    "fuse = torch.compile\nfuse += 1\n",
])
def test_decorator_bound_to_an_unknown_value_stays_unresolved(bindings: str) -> None:
    source = (
        "import torch\n\n\ndef local(f):\n    return f\n\n\ndef make():\n    return local\n\n\n"
        + bindings + "\n\n@fuse\ndef gelu(x):\n    return x\n"
    )
    assert [u.construct.value for u in facts(source).unresolved] == ["call-through-variable"]


def test_import_structure_maybe_entries_survive_the_facts_cache() -> None:
    from flake8_importpolicy.answers.facts_cache import facts_from_json, facts_to_json

    found = _structure("""
        if is_torch_available():
            _import_structure["modeling_utils"] = ["PreTrainedModel"]
        _import_structure["utils.dummy"] = [n for n in dir(sys) if n]
    """)
    again = facts_from_json(json.loads(json.dumps(facts_to_json(found))))
    assert again.lazy_attach == found.lazy_attach
    assert again.lazy_attach is not None and again.lazy_attach.any_name == ("utils.dummy",)


def test_getattr_caching_in_globals_keeps_the_module_constants() -> None:
    """A PEP 562 ``__getattr__(name)`` writing ``globals()[name]`` runs only for a name the module
    does not bind, so the module's constants stay known; a write of another name, or from another
    function, makes the module keep none (it may rebind any name)."""
    from flake8_importpolicy.analysis.extract import _writes_namespace

    hook = (
        b"MAP = {'a': ('p', '.a')}\n"
        b"def __getattr__(attr_name: str) -> object:\n"
        b"    result = object()\n"
        b"    globals()[attr_name] = result\n"
        b"    return result\n"
    )
    assert not _writes_namespace(hook)
    assert _writes_namespace(hook.replace(b"globals()[attr_name]", b"globals()['MAP']"))
    assert _writes_namespace(hook + b"def f(attr_name):\n    globals()[attr_name] = 1\n")


def test_a_lazy_import_is_a_syntax_error_on_a_target_version_before_3_15() -> None:
    """PEP 810's ``lazy`` is 3.15 syntax: a module that uses it does not compile on an older target
    version (a fresh 3.11 raises SyntaxError; fixture ``x_lazy_before_315``), whatever the others."""
    source = "import os\nlazy import json\n"
    for versions in (((3, 11),), ((3, 14),), ((3, 11), (3, 15))):
        problem = extract_facts(source, Target(versions=versions, platform="linux")).problem
        assert problem is not None and problem.line == 2, versions
        assert "need Python 3.15" in problem.message
    assert extract_facts(source, Target(versions=((3, 15),), platform="linux")).problem is None
