"""More ways to show results: CI annotations, SARIF, graphs, and a terminal status line.

- :func:`format_report_github`: ``importpolicy check --format github``, GitHub Actions workflow
  commands (``::error file=...,line=...,col=...,title=IPL001::message``) that show each finding on the
  pull request's diff;
- :func:`format_report_sarif`: ``importpolicy check --format sarif``, a minimal SARIF 2.1.0 log for
  code-scanning tools, its rules taken from the code table (:mod:`flake8_importpolicy.codes`);
- :func:`format_why_dot` and :func:`format_why_mermaid`: ``importpolicy why MODULE --format dot`` /
  ``mermaid``, the import-time chains from MODULE to the forbidden modules it reaches as a graph
  (edges labelled with the hop's kind and ``path:line``, forbidden nodes marked);
- :class:`StatusLine`: the transient "checking light module 3/5: ..." line that ``importpolicy check``
  shows on a terminal during runs longer than about a second.

The ``format_*`` functions return text, print nothing, and order everything deterministically. This
module imports neither flake8 nor mypy.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from flake8_importpolicy import __version__, codes
from flake8_importpolicy.output.text import PathFormatter, format_report_text

if TYPE_CHECKING:  # types only: the command line imports this module before the engine
    from flake8_importpolicy.analysis.engine import Problem, Report, Violation, WhyResult
    from flake8_importpolicy.analysis.graph import Hop

__all__ = [
    "CHECK_FORMATS",
    "SARIF_SCHEMA",
    "WHY_FORMATS",
    "StatusLine",
    "WhyGraph",
    "WhyNode",
    "escape_github_data",
    "escape_github_property",
    "find_why_graph",
    "find_workspace",
    "format_report_github",
    "format_report_sarif",
    "format_why_dot",
    "format_why_mermaid",
    "open_status_line",
    "workspace_relpath",
]

CHECK_FORMATS: Final = ("text", "json", "github", "sarif")
"""The ``--format`` choices of ``importpolicy check``."""
WHY_FORMATS: Final = ("text", "json", "dot", "mermaid")
"""The ``--format`` choices of ``importpolicy why``."""
SARIF_SCHEMA: Final = "https://json.schemastore.org/sarif-2.1.0.json"
_INFORMATION_URI: Final = "https://pypi.org/project/flake8-importpolicy/"
_FORBIDDEN_COLOR: Final = "#b00020"
_FORBIDDEN_FILL: Final = "#fde7e9"


# --------------------------------------------------------------------------------------------
# Paths


def find_workspace(environ: Mapping[str, str] | None = None) -> Path:
    """The directory CI annotations are relative to: ``$GITHUB_WORKSPACE`` when set (GitHub Actions),
    else the working directory."""
    value = (os.environ if environ is None else environ).get("GITHUB_WORKSPACE")
    return Path(value) if value else Path.cwd()


def workspace_relpath(root: Path) -> PathFormatter:
    """A path formatter for CI annotations: paths relative to ``root`` (``/`` separators) when inside
    it, else absolute.

    GitHub resolves an annotation's ``file`` against the repository checkout (``$GITHUB_WORKSPACE``),
    not against the policy file's directory, so the CLI passes that directory (or the working
    directory outside GitHub Actions).
    """
    roots = (root.absolute(), root.resolve())

    def relpath(path: Path) -> str:
        absolute = path if path.is_absolute() else path.absolute()
        for candidate in (absolute, absolute.resolve()):
            for base in roots:
                try:
                    return candidate.relative_to(base).as_posix()
                except ValueError:
                    continue
        return str(absolute)

    return relpath


# --------------------------------------------------------------------------------------------
# GitHub Actions workflow commands


def escape_github_data(text: str) -> str:
    """Escape a workflow command's message as GitHub's toolkit does (``%``, ``\\r``, ``\\n``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_github_property(text: str) -> str:
    """Escape a workflow command's property value: as the message, plus ``:`` and ``,``."""
    return escape_github_data(text).replace(":", "%3A").replace(",", "%2C")


def _github_command(
    properties: Iterable[tuple[str, object | None]], message: str, command: str = "error"
) -> str:
    """``::command key=value,...::message``; properties whose value is None are left out."""
    rendered = ",".join(
        f"{key}={escape_github_property(str(value))}" for key, value in properties if value is not None
    )
    return f"::{command} {rendered}::{escape_github_data(message)}"


def format_report_github(report: Report, relpath: PathFormatter) -> str:
    """The report as GitHub Actions ``::error`` workflow commands, one per violation and problem.

    Each violation is annotated at its first-hop statement (``col`` 1-based, as GitHub expects), titled
    with its code; the message is the text report's header followed by the chain, one hop per line.
    Problems follow (``file``/``line`` left out when unknown). The last line is the text report's
    summary, which the log shows as plain text.

    Args:
        report: the report of ``importpolicy check``.
        relpath: formats each path; see :func:`workspace_relpath`.

    Returns:
        Newline-terminated lines in report order (violations, then problems).
    """
    lines = [_github_violation(v, relpath) for v in report.violations]
    lines.extend(_github_problem(p, relpath) for p in report.problems)
    # The text report ends with its one-line summary; reuse it rather than duplicating the wording.
    lines.append(format_report_text(report, relpath).rstrip("\n").rpartition("\n")[2])
    return "\n".join(lines) + "\n"


def _violation_header(violation: Violation) -> str:
    """``IPL001 light module ... (reason)``, as in the text report."""
    return codes.BY_ID[violation.code].format(
        light=violation.light, heavy=violation.heavy, reason=violation.reason
    )


def _hop_line(hop: Hop, relpath: PathFormatter) -> str:
    """``path:line: importer -> imported (kind[, flags])``, as in the text report."""
    where = f"{relpath(hop.path)}:{hop.line}" if hop.path is not None else "?"
    return f"{where}: {hop.module} -> {hop.imported} ({_kind(hop)})"


def _kind(hop: Hop) -> str:
    return ", ".join((hop.kind, *hop.flags))


def _github_violation(violation: Violation, relpath: PathFormatter) -> str:
    message = [_violation_header(violation)]
    message.extend(_hop_line(hop, relpath) for hop in violation.chain)
    if violation.also:
        message.append(f"also reaches: {', '.join(violation.also)}")
    return _github_command(
        [
            ("file", relpath(violation.path)),
            ("line", violation.line),
            ("col", violation.col + 1),
            ("title", violation.code),
        ],
        "\n".join(message),
    )


def _github_problem(problem: Problem, relpath: PathFormatter) -> str:
    return _github_command(
        [
            ("file", relpath(problem.path) if problem.path is not None else None),
            ("line", problem.line),
            ("title", problem.code),
        ],
        f"{problem.code} {problem.message}",
    )


# --------------------------------------------------------------------------------------------
# SARIF 2.1.0


def format_report_sarif(report: Report, relpath: PathFormatter) -> str:
    """The report as a minimal SARIF 2.1.0 log (one run, JSON, 2-space indent)::

        {"$schema", "version": "2.1.0", "runs": [{"tool": {"driver": {"name", "version",
         "informationUri", "rules": [{"id", "name", "shortDescription", "defaultConfiguration"}]}},
         "columnKind": "unicodeCodePoints", "results": [result, ...]}]}

    The rules are the finding codes of :data:`flake8_importpolicy.codes.CODES`, in id order. A
    violation's result has its first-hop statement as location and its chain as a code flow (one
    thread-flow location per hop, at the hop's statement). Artifact URIs are relative references
    (``src/pkg/mod.py``) when ``relpath`` gives relative paths, ``file://`` URIs otherwise.

    Args:
        report: the report of ``importpolicy check``.
        relpath: formats each path; see :func:`workspace_relpath`.
    """
    rules = [code for code in codes.CODES if code.finding]
    index = {code.id: number for number, code in enumerate(rules)}
    results: list[dict[str, object]] = []
    for violation in report.violations:
        result: dict[str, object] = {
            "ruleId": violation.code,
            "ruleIndex": index[violation.code],
            "level": "error",
            "message": {"text": _violation_header(violation).partition(" ")[2]},
            "locations": [_sarif_location(relpath(violation.path), violation.line, violation.col + 1)],
            "codeFlows": [{"threadFlows": [{"locations": [
                _sarif_hop(hop, relpath) for hop in violation.chain
            ]}]}],
        }
        if violation.also:
            result["properties"] = {"also": list(violation.also)}
        results.append(result)
    for problem in report.problems:
        result = {
            "ruleId": problem.code,
            "ruleIndex": index[problem.code],
            "level": "error",
            "message": {"text": problem.message},
        }
        if problem.path is not None:
            result["locations"] = [_sarif_location(relpath(problem.path), problem.line, None)]
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "importpolicy",
                "version": __version__,
                "informationUri": _INFORMATION_URI,
                "rules": [
                    {
                        "id": code.id,
                        "name": code.slug,
                        "shortDescription": {"text": code.summary},
                        "defaultConfiguration": {"level": "error"},
                    }
                    for code in rules
                ],
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(log, indent=2) + "\n"


def _sarif_uri(shown: str) -> str:
    """A SARIF artifact URI for a formatted path: a relative reference, or a ``file://`` URI."""
    from urllib.parse import quote

    if os.path.isabs(shown):
        return Path(shown).as_uri()
    return quote(shown.replace(os.sep, "/"))


def _sarif_location(shown: str, line: int | None, column: int | None) -> dict[str, object]:
    physical: dict[str, object] = {"artifactLocation": {"uri": _sarif_uri(shown)}}
    if line is not None:
        region: dict[str, int] = {"startLine": line}
        if column is not None:
            region["startColumn"] = column
        physical["region"] = region
    return {"physicalLocation": physical}


def _sarif_hop(hop: Hop, relpath: PathFormatter) -> dict[str, object]:
    location: dict[str, object] = {
        "message": {"text": f"{hop.module} -> {hop.imported} ({_kind(hop)})"}
    }
    if hop.path is not None:
        location.update(_sarif_location(relpath(hop.path), hop.line, hop.col + 1))
    return {"location": location}


# --------------------------------------------------------------------------------------------
# Graphs of ``importpolicy why``


@dataclass(frozen=True)
class WhyNode:
    """A node of :class:`WhyGraph`.

    Attributes:
        name: the graph node: a dotted module name, ``module:qualname`` for a function called at
            import time, or ``qualname()`` for a ``[heavy-calls]`` call.
        path: its file, formatted (``None`` when it has none or is not known).
        forbidden: the reason of the heavy rule it matches, or ``None`` if it is not forbidden.
        root: True for the module asked about.
    """

    name: str
    path: str | None
    forbidden: str | None
    root: bool = False


@dataclass(frozen=True)
class WhyGraph:
    """The union of the shortest import-time chains from a module to each forbidden module reached.

    Attributes:
        module: the module asked about.
        nodes: every node of the chains, sorted by depth (the least number of hops from ``module``
            in any chain; ``module`` alone has depth 0), then name.
        edges: every distinct hop of the chains, sorted by depth (the hop's least position in any
            chain), then ``(importer, line, col, imported, kind, flags)``.
        notes: one-line remarks for what the graph cannot show (dynamic imports with non-literal
            targets, lazy attachments, unanalysable modules), in ``WhyResult`` order.
    """

    module: str
    nodes: tuple[WhyNode, ...]
    edges: tuple[Hop, ...]
    notes: tuple[str, ...]


def find_why_graph(why: WhyResult, relpath: PathFormatter) -> WhyGraph:
    """The graph that :func:`format_why_dot` and :func:`format_why_mermaid` draw.

    Args:
        why: the result of :meth:`flake8_importpolicy.analysis.engine.PolicyEngine.find_why`.
        relpath: formats each path.
    """
    forbidden: Mapping[str, str] = {name: rule.reason for name, rule in why.forbidden}
    depth = {why.module: 0}  # of each node and each edge: its least position in any chain
    edges: dict[Hop, int] = {}
    for name in forbidden:
        for number, hop in enumerate(why.closure.get(name, ())):
            edges[hop] = min(edges.get(hop, number), number)
            depth[hop.imported] = min(depth.get(hop.imported, number + 1), number + 1)
            depth.setdefault(hop.module, number)

    def node(name: str) -> WhyNode:
        path = why.paths.get(name)
        return WhyNode(
            name,
            relpath(path) if path is not None else None,
            forbidden.get(name) if name != why.module else None,
            root=name == why.module,
        )

    notes = [
        f"unknown import: {_where(u.path, u.line, relpath)}: {u.detail} (target not a literal)"
        for u in why.unknown
    ]
    notes.extend(
        f"lazily attached: {_where(a.path, a.line, relpath)}: {a.detail}(...) "
        "(its targets are not run at import time)"
        for a in why.lazy
    )
    notes.extend(
        f"cannot analyse {module}: line {problem.line}: {problem.message}"
        for module, problem in why.problems
    )
    return WhyGraph(
        module=why.module,
        nodes=tuple(node(n) for n in sorted(depth, key=lambda n: (depth[n], n))),
        edges=tuple(sorted(
            edges, key=lambda h: (edges[h], h.module, h.line, h.col, h.imported, h.kind, h.flags)
        )),
        notes=tuple(" ".join(note.split()) for note in notes),
    )


def _where(path: Path | None, line: int, relpath: PathFormatter) -> str:
    return f"{relpath(path) if path is not None else '?'}:{line}"


def _edge_label(hop: Hop, relpath: PathFormatter) -> tuple[str, str]:
    """The two lines of an edge's label: the kind (with flags), and ``path:line``."""
    return _kind(hop), _where(hop.path, hop.line, relpath)


def _summary(graph: WhyGraph) -> str:
    count = sum(1 for node in graph.nodes if node.forbidden is not None)
    if not count:
        return f"import {graph.module} reaches no forbidden module"
    noun = "forbidden module" if count == 1 else "forbidden modules"
    return f"import {graph.module} reaches {count} {noun}"


def _dot_string(text: str) -> str:
    """A DOT quoted string; ``\\n`` in ``text`` becomes DOT's centred line break."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "")
    return '"' + escaped.replace("\n", "\\n") + '"'


def format_why_dot(why: WhyResult, relpath: PathFormatter) -> str:
    """``importpolicy why`` as a Graphviz DOT digraph (render with ``dot -Tsvg``).

    Nodes are graph nodes (modules; ``module:function`` for calls followed at import time), named by
    their quoted name; the module asked about is bold, forbidden nodes are red, double-bordered and
    carry the rule's reason; each edge is one hop, labelled with its kind and the ``path:line`` of the
    statement in the importing module. What the graph cannot show is listed in ``//`` comments.

    Args:
        why: the result of :meth:`flake8_importpolicy.analysis.engine.PolicyEngine.find_why`.
        relpath: formats each path.

    Returns:
        The DOT source, deterministic (see :class:`WhyGraph` for the order).
    """
    graph = find_why_graph(why, relpath)
    out = [f"// {_summary(graph)}"]
    out.extend(f"// {note}" for note in graph.notes)
    out.append(f"digraph {_dot_string('importpolicy why ' + graph.module)} {{")
    out.append("  rankdir=LR;")
    out.append('  node [shape=box, fontname="Helvetica"];')
    out.append('  edge [fontname="Helvetica", fontsize=10];')
    for node in graph.nodes:
        attributes = [f"label={_dot_string(_node_label(node))}"]
        if ":" in node.name or node.name.endswith("()"):
            attributes.append("shape=ellipse")
        if node.root:
            attributes.append("style=bold")
        if node.forbidden is not None:
            attributes.extend([
                f'color="{_FORBIDDEN_COLOR}"', f'fontcolor="{_FORBIDDEN_COLOR}"', "style=filled",
                f'fillcolor="{_FORBIDDEN_FILL}"', "peripheries=2",
            ])
        out.append(f"  {_dot_string(node.name)} [{', '.join(attributes)}];")
    for hop in graph.edges:
        label = "\n".join(_edge_label(hop, relpath))
        out.append(
            f"  {_dot_string(hop.module)} -> {_dot_string(hop.imported)} [label={_dot_string(label)}];"
        )
    out.append("}")
    return "\n".join(out) + "\n"


def _node_label(node: WhyNode) -> str:
    if node.forbidden is not None:
        return f"{node.name}\nFORBIDDEN: {node.forbidden}"
    if node.root and node.path is not None:
        return f"{node.name}\n{node.path}"
    return node.name


def _mermaid_text(text: str) -> str:
    """Text inside a Mermaid ``"..."`` label: entity codes for ``#``, ``"``, ``<``, ``>``, and
    ``<br/>`` for line breaks."""
    escaped = (
        text.replace("#", "#35;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
    )
    return "<br/>".join(escaped.replace("\r", "").split("\n"))


def format_why_mermaid(why: WhyResult, relpath: PathFormatter) -> str:
    """``importpolicy why`` as a Mermaid flowchart (paste into a ```` ```mermaid ```` block).

    The same graph as :func:`format_why_dot`: nodes get ids ``n0`` (the module asked about), ``n1``,
    ... in :class:`WhyGraph` order, labelled with their names; forbidden nodes have the class
    ``forbidden`` and their reason, the module asked about the class ``root``; edges are labelled with
    kind and ``path:line``. What the graph cannot show is listed in ``%%`` comments.

    Args:
        why: the result of :meth:`flake8_importpolicy.analysis.engine.PolicyEngine.find_why`.
        relpath: formats each path.
    """
    graph = find_why_graph(why, relpath)
    ids = {node.name: f"n{number}" for number, node in enumerate(graph.nodes)}
    out = ["flowchart LR", f"  %% {_summary(graph)}"]
    out.extend(f"  %% {note}" for note in graph.notes)
    for node in graph.nodes:
        out.append(f'  {ids[node.name]}["{_mermaid_text(_node_label(node))}"]')
    for hop in graph.edges:
        label = _mermaid_text("\n".join(_edge_label(hop, relpath)))
        out.append(f'  {ids[hop.module]} -->|"{label}"| {ids[hop.imported]}')
    out.append("  classDef root stroke-width:3px")
    out.append(
        f"  classDef forbidden fill:{_FORBIDDEN_FILL},stroke:{_FORBIDDEN_COLOR},"
        f"color:{_FORBIDDEN_COLOR},stroke-width:2px"
    )
    out.append(f"  class {ids[graph.module]} root")
    forbidden = [ids[node.name] for node in graph.nodes if node.forbidden is not None]
    if forbidden:
        out.append(f"  class {','.join(forbidden)} forbidden")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# Terminal status line


class StatusLine:
    """A transient one-line status on a terminal, for ``PolicyEngine.check(progress=...)``.

    Call it as ``status(done, total, name)`` before each item. Nothing is written during the first
    ``delay`` seconds (a short run stays silent), then at most once per ``interval`` seconds:
    ``\\r`` + erase-line + ``checking light module <done + 1>/<total>: <name>``, cut to the terminal's
    width. :meth:`clear` erases the line (if one was written) so the report starts on a clean line.

    Args:
        stream: the terminal (``sys.stderr``); use :func:`open_status_line` to get None elsewhere.
        delay: seconds before the first update.
        interval: minimum seconds between updates.
        clock: monotonic seconds (injectable for tests).
        columns: returns the terminal width (default: :func:`shutil.get_terminal_size`).
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        delay: float = 1.0,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        columns: Callable[[], int] | None = None,
    ) -> None:
        self._stream = stream
        self._delay = delay
        self._interval = interval
        self._clock = clock
        self._columns = columns or (lambda: shutil.get_terminal_size().columns)
        self._start = clock()
        self._last: float | None = None
        self._shown = False

    def __call__(self, done: int, total: int, name: str) -> None:
        now = self._clock()
        if now - self._start < self._delay:
            return
        if self._last is not None and now - self._last < self._interval:
            return
        self._last = now
        text = f"checking light module {done + 1}/{total}: {name}"
        width = max(self._columns() - 1, 10)
        if len(text) > width:
            text = text[: width - 3] + "..."
        self._stream.write(f"\r\x1b[K{text}")
        self._stream.flush()
        self._shown = True

    def clear(self) -> None:
        """Erase the status line, if one was written."""
        if self._shown:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._shown = False


def open_status_line(
    stream: TextIO, *, delay: float = 1.0, interval: float = 0.1
) -> StatusLine | None:
    """A :class:`StatusLine` on ``stream`` if it is a terminal, else None (no progress, no cost).

    Args:
        stream: usually ``sys.stderr``; ``TERM=dumb`` counts as no terminal.
        delay, interval: as for :class:`StatusLine`.
    """
    try:
        is_terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return None
    if not is_terminal or os.environ.get("TERM") == "dumb":
        return None
    return StatusLine(stream, delay=delay, interval=interval)
