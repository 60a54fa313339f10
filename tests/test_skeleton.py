"""The skeleton (function bodies blanked before parsing) keeps every module-level node where it was.

The oracle is CPython's own parser: for each source, ``ast.parse`` of the skeleton must give the same
tree as ``ast.parse`` of the source once function bodies are emptied on both sides, with the same
lines and columns (only the end column of a blanked function, and of the statements it ends, may
differ). Then the facts a check extracts from the skeleton must equal those of the whole source.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import HANG_CATCHER, find_python
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from flake8_importpolicy.analysis.extract import extract_facts_and_index
from flake8_importpolicy.analysis.skeleton import blank_function_bodies
from flake8_importpolicy.model.facts import Target

REPO = Path(__file__).resolve().parent.parent
PY311 = Target(versions=((3, 11),), platform="linux")


def _outline(source: bytes) -> str:
    """The module's syntax tree with every function body emptied and end columns dropped."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.body = []
    for node in ast.walk(tree):
        if hasattr(node, "end_col_offset"):
            node.end_col_offset = None
    return ast.dump(tree, include_attributes=True)


def _assert_same_outline(source: bytes) -> bytes | None:
    skeleton = blank_function_bodies(source)
    if skeleton is not None:
        assert skeleton.count(b"\n") == source.replace(b"\r\n", b"\n").count(b"\n")
        assert _outline(skeleton) == _outline(source)
    return skeleton


def test_bodies_become_blank_lines_and_a_pass_on_the_last_line() -> None:
    source = textwrap.dedent('''\
        import a

        @decorator(
            1,
        )
        def f(x=g(), *, y: int = 2) -> None:
            """Docstring."""
            import heavy
            return x

        class C:
            attribute = h()

            async def m(self):
                def inner():
                    import deeper
                return inner

            def one_liner(self): return 1

        def last():
            pass
        ''').encode()
    assert blank_function_bodies(source) == textwrap.dedent('''\
        import a

        @decorator(
            1,
        )
        def f(x=g(), *, y: int = 2) -> None:


            pass

        class C:
            attribute = h()

            async def m(self):


                pass

            def one_liner(self): return 1

        def last():
            pass
        ''').encode()


_CORNERS: dict[str, str] = {
    "strings_at_column_0":
        'def f():\n    s = """\nimport fake\ndef g():\n"""\n    return s\nimport real\n',
    "string_closing_line_continues": 'def f():\n    x = """\nabc\n""".strip()\n    return x\nimport real\n',
    "brackets_at_column_0": "def f():\n    x = [\n1,\n]\n    return x\nimport real\n",
    "explicit_join_at_column_0": "def f():\n    x = 1 + \\\n2\n    return x\nimport real\n",
    "comments_and_blank_lines_at_column_0":
        "def f():\n    x = 1\n# comment\n\n    return x\n# after\nimport real\n",
    "body_to_end_of_file_without_newline": "def f():\n    return 1",
    "header_over_lines_with_colons":
        "def f(\n    a: int = {'k': 1},\n    b=lambda: 2,\n) -> 'X:':\n    return a\n",
    "header_ending_in_a_comment": "def f():  # trailing: comment\n    return 1\n",
    "header_continued_by_backslash": "def f(): \\\n    return 1\ndef g() \\\n        :\n    return 2\n",
    "one_line_body_with_a_colon_string": "def f(): return 'x:'\ndef g(): return {\n    1: 2}\n",
    "def_in_strings_and_names": "undef = 1\nx = 'def f():'\ndefault = 2\n#def g():\n",
    "escaped_quotes_and_raw_strings":
        "def f():\n    a = 'it\\'s'\n    b = r'\\''\n    c = '''a\\'''b'''\n"
        "    d = \"\"\"x\"\"\"\"\"\n    return a\nimport real\n",
    "prefixes_and_names_before_quotes":
        "def f():\n    if'a'in x: pass\n    return rb'x' + Rb'y' + f'{x}' + u'z'\nimport real\n",
    "nested_classes_and_functions":
        "class A:\n    class B:\n        def m(self):\n            class Local:\n"
        "                def n(self):\n                    pass\n            return Local\n"
        "    def k(self):\n        pass\n",
    "functions_in_blocks":
        "if x:\n    def f():\n        return 1\nelse:\n    def f():\n        return 2\n"
        "try:\n    def g():\n        pass\nexcept ImportError:\n    pass\n",
    "async_and_type_params": "async  def f():\n    await x\ndef g[T: (int, str)](x: T) -> T:\n    return x\n",
    "crlf": "def f():\r\n    import a\r\n\r\nimport b\r\n",
    "bom": "\ufeffdef f():\n    import a\nimport b\n",
    "utf8_cookie": "# -*- coding: utf-8 -*-\ndef f():\n    return 'é'\n",
    "lambda_and_comprehension_at_module_level": "f = lambda: __import__('x')\ny = [i for i in range(3)]\n",
    "decorated_nested_def_in_body": "def f():\n    @dec\n    def g():\n        pass\n    return g\n",
    "docstring_only_body": 'def f():\n    """Doc\n\nwith a line at column 0."""\nimport real\n',
    "semicolons": "import a; import b\ndef f():\n    import c; import d\n",
    "body_ending_in_joins_and_a_blank_line":  # the joins add no line to the function
        "def f():\n    x = 1 \\\n    \\\n\nimport real\n",
}
if sys.version_info < (3, 12):
    del _CORNERS["async_and_type_params"]  # PEP 695 syntax


@pytest.mark.parametrize("name", sorted(_CORNERS))
def test_corner_cases_keep_the_module_level_tree(name: str) -> None:
    source = _CORNERS[name].encode()
    skeleton = _assert_same_outline(source)
    if name not in ("lambda_and_comprehension_at_module_level", "header_continued_by_backslash",
                    "one_line_body_with_a_colon_string", "def_in_strings_and_names"):
        assert skeleton is not None and skeleton != source.replace(b"\r\n", b"\n"), "nothing blanked"


@pytest.mark.parametrize(
    "source",
    [
        b"def f():\n\treturn 1\n",  # tab indentation
        b"def f():\n    return 1\n\x0cimport a\n",  # form feed
        b"def f():\r    return 1\r",  # lone carriage returns
        b"def f():\n    return '\0'\n",  # NUL
        b"# -*- coding: latin-1 -*-\ndef f():\n    return '\xe9'\n",  # not UTF-8
        b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\ndef f():\n    pass\n",
        b"def f():\n    return 'unterminated\n",
        b"def f():\n    return '''unterminated\n",
        b"def f():\n    return 1 \\ 2\n",  # a backslash that joins no lines
        b"def f():\n    return (1\n",  # unbalanced brackets
        # a line of only a join: CPython indents the logical line like the first of its lines
        # indented more than zero columns
        b"def f():\n    x = 1\n\\\nimport real\n",
        b"class C:\n    def f(self):\n        pass\n    \\\nx = 1\n",
        b"def f():\n    pass\n    \\\n\n",
    ],
)
def test_what_the_lexer_does_not_follow_is_parsed_whole(source: bytes) -> None:
    assert blank_function_bodies(source) is None


def test_a_syntax_error_in_a_body_is_not_seen_but_one_outside_is() -> None:
    """The known limit: only the whole parse reports an error inside a blanked body."""
    inside = b"import a\ndef f():\n    return )(\n"
    facts, _ = extract_facts_and_index(inside, PY311)
    assert facts.problem is None
    assert [site.target for site in facts.sites] == ["a"]
    outside = b"import a\ndef f():\n    return 1\nx = )(\n"
    facts, _ = extract_facts_and_index(outside, PY311)
    assert facts.problem is not None and facts.problem.line == 4


def _corpus() -> list[Path]:
    import asyncio
    import email
    import json as json_module
    import unittest

    import flake8_importpolicy

    return [
        path
        for package in (flake8_importpolicy, json_module, email, asyncio, unittest)
        for path in sorted(Path(package.__file__).parent.rglob("*.py"))
    ] + [Path(ast.__file__), Path(textwrap.__file__), Path(subprocess.__file__)]


def test_real_modules_keep_their_outline_and_facts() -> None:
    blanked = 0
    for path in _corpus():
        source = path.read_bytes()
        if _assert_same_outline(source) is not None:
            blanked += 1
        # The facts and function index from the skeleton equal those of the whole source (a str
        # source is parsed whole).
        assert extract_facts_and_index(source, PY311) == extract_facts_and_index(
            source.decode("utf-8"), PY311
        ), path
    assert blanked > 50


# A property: random modules whose function bodies hold what confuses a line-based reader.

_BODY_LINES = (
    "import a", "x = 1", "return x", "pass", "s = '''\nimport fake\n'''", 'd = """\ndef g():\n"""',
    "y = [\n1,\n]", "z = 1 + \\\n2", "# at column 0", "", "t = 'a#b' # c", "u = r'\\''",
    "v = f'{x}'", "if x:\n    import b", "def inner():\n    import c", "w = ('''\n''', )",
    "class K:\n    def m(self):\n        pass",
)
_MODULE_LINES = ("import m", "x = 2", "@dec", "# comment", "", "s = '''\ndef fake():\n'''")


@st.composite
def _sources(draw: st.DrawFn) -> str:
    out: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        out.extend(draw(st.lists(st.sampled_from(_MODULE_LINES), max_size=2)))
        if out and out[-1] == "@dec":
            out.pop()
        indent = draw(st.sampled_from(["", "    "]))
        if indent:
            out.append("class C:")
        header = draw(st.sampled_from(["def f():", "async def f(a,\nb):", "def f(): return 1",
                                       "def f(x=(\n1)):"]))
        out.extend(indent + line if line else line for line in header.split("\n"))
        if header.endswith("return 1"):
            continue
        body = draw(st.lists(st.sampled_from(_BODY_LINES), min_size=1, max_size=5))
        if all(not line.strip() or line.startswith("#") for line in body):
            body.append("pass")
        for text in body:
            first, *rest = text.split("\n")
            out.append(indent + "    " + first if first else first)
            out.extend(rest)  # continuation lines stay at column 0
    return "\n".join(out) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=_sources())
def test_random_modules_keep_their_outline_and_facts(text: str) -> None:
    note(text)
    try:
        ast.parse(text)
    except SyntaxError:
        return  # (a body of only comments, say): nothing to compare
    source = text.encode()
    _assert_same_outline(source)
    assert extract_facts_and_index(source, PY311) == extract_facts_and_index(text, PY311)


_PEP701 = [
    'def f():\n    return f"{x["a"]}"\nimport real\n',
    "def f():\n    return f'{\"a\" + f'{x}'}'\nimport real\n",
    'def f():\n    return f"{", ".join([\n        \'a\',  # comment\n    ])}"\nimport real\n',
    'def f():\n    return f"{\'"\'}"\nimport real\n',
]
_PEP701_CHECK = """
import ast, json, sys
sys.path.insert(0, sys.argv[1])
from flake8_importpolicy.analysis.skeleton import blank_function_bodies
out = []
for text in json.loads(sys.argv[2]):
    source = text.encode()
    ast.parse(source)  # valid on this Python
    skeleton = blank_function_bodies(source)
    out.append(None if skeleton is None else skeleton.decode())
print(json.dumps(out))
"""


@pytest.mark.parametrize("python", ["python3.12", "python3.13", "python3.14"])
def test_pep_701_fields_are_left_to_the_whole_parse(python: str) -> None:
    """On Python 3.12+ an f-string field may hold the f-string's own quote and span lines; a lexer
    of the old rules would end the literal inside the field. Run by each newer Python found."""
    exe = find_python(python.removeprefix("python"))
    if exe is None:
        pytest.skip(f"{python} is not installed")
    result = subprocess.run(
        [exe, "-c", _PEP701_CHECK, str(REPO), json.dumps(_PEP701)],
        capture_output=True, text=True, check=True, timeout=HANG_CATCHER,
    )
    assert json.loads(result.stdout) == [None] * len(_PEP701)
    plain = 'def f():\n    return f"{x[\'a\']}" + f"{{}}"\nimport real\n'
    result = subprocess.run(
        [exe, "-c", _PEP701_CHECK, str(REPO), json.dumps([plain])],
        capture_output=True, text=True, check=True, timeout=HANG_CATCHER,
    )
    assert json.loads(result.stdout) == ["def f():\n    pass\nimport real\n"]
