"""Hostile sources: import chains thousands of hops long, sources of a million lines, a comparison of
100,000 terms (issue 32), through every client: C = ``importpolicy`` (``check``, ``why`` in every
format), F = ``flake8`` (a file, stdin and ``-j 2``), M = ``mypy``, P = ``pytest --importpolicy``,
V = ``importpolicy verify``. A fresh interpreter is the oracle where it can run the tree; a hang is
caught by the harness's subprocess timeout, never by a time limit in the test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import run_import
from test_robustness import MYPY_SKIP, Files, Run, cli, flake8, mypy, run, run_all, write

POLICY = """\
[settings]
source-roots = ["src"]

[heavy]
"zoo.heavy" = "slow to import"
"zoo.heavy2" = "slow to import too"

[light."zoo.light"]
reason = "must stay light"
"""
LIGHT = "src/zoo/light.py"
MYPY_INI = "[mypy]\nplugins = flake8_importpolicy.mypy\nmypy_path = src\nfollow_imports = skip\n"


def chain_tree(hops: int) -> Files:
    """``zoo.light -> zoo.c0 -> ... -> zoo.c<hops-1> -> zoo.heavy``."""
    files: Files = {
        "policy.toml": POLICY, "mypy.ini": MYPY_INI, "src/zoo/__init__.py": "", "src/zoo/heavy.py": "",
        LIGHT: "import zoo.c0\n",
    }
    for number in range(hops):
        files[f"src/zoo/c{number}.py"] = f"import zoo.c{number + 1}\n" if number < hops - 1 else (
            "import zoo.heavy\n")
    return files


def longest_line(result: Run) -> int:
    return max((len(line) for line in result.output.splitlines()), default=0)


@pytest.mark.parametrize("hops", [3_000, 10_000])
def test_a_chain_thousands_of_hops_long(tmp_path: Path, hops: int) -> None:
    """Issue 32: a 3,000-hop and a 10,000-hop chain made ``why`` an internal error (RecursionError in
    the tree's drawing), and flake8 ran over 300 s on the 10,000 one: each of the 10,000 IPL002
    findings carried the whole chain in its message, a gigabyte in all. One-line chains show at
    most 20 hops, ``why``'s tree shortens runs without a branch and stops indenting at 40 levels,
    and ``why --format json`` of a whole closure (every module with its chain: 4.5 million hops for
    3,000 modules) says it is too large instead of writing a gigabyte."""
    root = write(tmp_path, chain_tree(hops))
    checked = cli(root, "check")  # first, alone: it fills the facts cache the others read
    jobs: list[Callable[[], Run]] = [
        lambda: cli(root, "why", "zoo.light"),
        lambda: cli(root, "why", "zoo.light", "--format", "json"),
        lambda: cli(root, "why", "zoo.light", "--format", "json", "--heavy", "zoo.heavy"),
        lambda: cli(root, "why", "zoo.light", "--format", "dot"),
        lambda: cli(root, "why", "zoo.light", "--format", "mermaid"),
        lambda: flake8(root, "--select", "IPL", LIGHT, "src/zoo/c5.py"),
    ]
    if hops == 3_000:  # the clients that run the code, and mypy: the shorter chain is enough
        jobs += [
            lambda: flake8(root, "--select", "IPL", "-", "--stdin-display-name", LIGHT,
                           stdin="import zoo.c0\n"),
            lambda: flake8(root, "--select", "IPL", "-j", "2", LIGHT, "src/zoo/c5.py"),
            lambda: cli(root, "verify"),
            lambda: run(["-m", "pytest", "--importpolicy", "-p", "no:cacheprovider", "-q"], root),
        ]
        if not MYPY_SKIP:
            jobs.append(lambda: mypy(root, LIGHT))
    results = [checked, *run_all(*jobs)]
    for result in results:
        result.assert_no_crash()
        assert "internal error" not in result.output, result
    checked, why, closure, heavy, dot, mermaid, linted, *others = results
    assert checked.returncode == 1 and len(checked.stdout.splitlines()) < 25, checked
    assert re.search(r"\n    \.\.\. [\d,]+ more hops \(--format json lists them all\)\n", checked.stdout)
    assert why.returncode == 0 and len(why.stdout.splitlines()) < 30, why
    assert f"... {hops + 1 - 20:,} more hops (--format json lists them all)" in why.stdout, why
    assert f"[level {hops + 1}] zoo.heavy  [import at src/zoo/c{hops - 1}.py:1]" in why.stdout, why
    assert longest_line(why) < 300, why
    assert (closure.returncode, closure.stdout) == (2, ""), closure
    assert re.fullmatch(
        r"importpolicy: error: the import-time closure of zoo\.light has chains of [\d,]+ hops in "
        r"all, more than the 200,000 that --format json lists; pass --heavy PATTERN for one chain "
        r"per forbidden module, or use --format text\n", closure.stderr), closure
    chain = json.loads(heavy.stdout)["forbidden"][0]["chain"]
    assert heavy.returncode == 0 and len(chain) == hops + 1, heavy
    assert dot.returncode == 0 and mermaid.returncode == 0
    assert linted.returncode == 1 and longest_line(linted) < 2_000, linted
    assert {(path, code) for path, _, code in linted.found()} == {
        (LIGHT, "IPL001"), ("src/zoo/c5.py", "IPL002")}, linted
    assert f"-> ... {hops + 1 - 20:,} more hops ... ->" in linted.stdout, linted
    for result in others:
        if result.args[:2] == ("-m", "flake8"):
            assert result.returncode == 1 and longest_line(result) < 2_000, result
            assert {code for _, _, code in result.found()} >= {"IPL001"}, result
        elif result.args[:2] == ("-m", "mypy"):
            assert result.returncode == 1 and "more hops ..." in result.stdout, result
            assert longest_line(result) < 2_000, result
        else:  # CPython cannot import a chain that deep: about 140 nested imports reach its recursion limit
            assert result.returncode == 1 and "RecursionError" in result.output, result


def test_a_million_line_source_keeps_both_chains(tmp_path: Path) -> None:
    """Issue 32 says a 1,000,000-line source (9 MB) lost the second of two chains: ``zoo.heavy2`` ran
    at runtime and was not predicted (C V). Not reproduced on this tree; kept as the oracle's case:
    both forbidden modules are predicted and both run."""
    body = "".join(f"x{number}=1\n" for number in range(1_000_000))
    root = write(tmp_path, {
        "policy.toml": POLICY, "src/zoo/__init__.py": "", "src/zoo/heavy.py": "", "src/zoo/heavy2.py": "",
        LIGHT: "import zoo.big\n",
        "src/zoo/big.py": f"import zoo.heavy\n{body}import zoo.heavy2\n",
    })
    checked, verified = run_all(
        lambda: cli(root, "check", "--no-cache", "--format", "json"), lambda: cli(root, "verify"),
    )
    violations = json.loads(checked.stdout)["violations"]
    assert [(v["heavy"], v["also"]) for v in violations] == [("zoo.heavy", ["zoo.heavy2"])], checked
    assert verified.returncode == 1 and "static missed" not in verified.stdout, verified
    assert "forbidden module executed: zoo.heavy2" in verified.stdout, verified


COMPARISON = " < ".join(["1"] * 100_000)


@pytest.mark.parametrize("source", [
    pytest.param(f"X = {COMPARISON}\nimport zoo.heavy\n", id="module-level"),
    pytest.param(f"def f():\n    x = {COMPARISON}\n    import zoo.heavy\n\n\nf()\n", id="called-function"),
    pytest.param(f"class C:\n    x = {COMPARISON}\n    import zoo.heavy\n", id="class-body"),
    pytest.param(f"if {COMPARISON}:\n    import zoo.heavy\n", id="condition"),
])
def test_a_comparison_of_100000_terms_agrees_with_the_interpreter(tmp_path: Path, source: str) -> None:
    """Issue 32 says a 100,000-term comparison chain gave no IPL005 and still predicted the import
    after it. CPython 3.11 to 3.13 import such a module (its compiler and parser keep a comparison
    flat), so the prediction is the interpreter's; under an ``if`` the engine does not evaluate
    comparisons, both branches count (``conditional``). Kept as the oracle's case (C, and a fresh
    interpreter)."""
    root = write(tmp_path, {"policy.toml": POLICY, "src/zoo/__init__.py": "", "src/zoo/heavy.py": "",
                            LIGHT: source})
    checked = cli(root, "check", "--no-cache", "--format", "json")
    predicted = {v["heavy"] for v in json.loads(checked.stdout)["violations"]}
    ran = run_import("zoo.light", [root / "src"])
    assert "zoo.heavy" in predicted
    assert ("zoo.heavy" in ran) == (not source.startswith("if")), ran
    assert not json.loads(checked.stdout)["problems"], checked


def test_flake8_in_parallel_on_a_100000_line_source(tmp_path: Path) -> None:
    """Issue 32 says a 100,000-line source hung ``flake8 -j 2`` (plain flake8 finished). Not
    reproduced here (both finish, flake8's own checkers taking most of the time); the case stays,
    through the harness's timeout: both report the same IPL001 and IPL002 (F)."""
    lines = "".join(f"VALUE_{number} = {number}\n" for number in range(100_000))
    root = write(tmp_path, {"policy.toml": POLICY, "src/zoo/__init__.py": "", "src/zoo/heavy.py": "",
                            LIGHT: "import zoo.big\n", "src/zoo/big.py": f"{lines}import zoo.heavy\n"})
    serial, parallel = run_all(
        lambda: flake8(root, "--select", "IPL", LIGHT, "src/zoo/big.py"),
        lambda: flake8(root, "--select", "IPL", "-j", "2", LIGHT, "src/zoo/big.py"),
    )
    for result in (serial, parallel):
        result.assert_no_crash()
        assert result.returncode == 1, result
        assert result.found() == {(LIGHT, 1, "IPL001"), ("src/zoo/big.py", 100_001, "IPL002")}, result
    assert re.sub(r"\s+", " ", serial.stdout) == re.sub(r"\s+", " ", parallel.stdout)


def test_an_object_from_another_module_whose_getattr_imports_is_not_ok(tmp_path: Path) -> None:
    """Issue 32: a class whose ``__getattr__`` returns a module it imports gave "OK" with nothing
    unresolved, cold, warm and with ``--unresolved=error``, when its instance was made in another
    module and read after ``from m import obj``. The read runs that ``__getattr__`` (fixture
    ``x_lazy_object_imported``, whose walker compares with a fresh interpreter): C cold, warm and
    with ``--unresolved=error``, F."""
    import shutil

    from helpers import FIXTURES

    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "x_lazy_object_imported", root)
    cold, warm, strict = (cli(root, "check", *options) for options in ((), (), ("--unresolved=error",)))
    linted = flake8(root, "--select", "IPL", "app/lights/forwarded.py", "app/lights/lazy_read.py")
    for result in (cold, warm, strict):
        assert result.returncode == 1 and result.stdout == cold.stdout, result
        assert "Found 2 violations in 2 of 4 light modules." in result.stdout, result
    assert {(path, code) for path, _, code in linted.found()} == {
        ("app/lights/forwarded.py", "IPL001"), ("app/lights/lazy_read.py", "IPL001")}, linted
