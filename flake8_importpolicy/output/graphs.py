"""Graphs of ``importpolicy why MODULE``: Graphviz DOT and Mermaid.

:func:`format_why_dot` and :func:`format_why_mermaid` draw the same graph, :class:`WhyGraph`: the union
of the shortest import-time chains from MODULE to each forbidden module it reaches (edges labelled with
the hop's kind and ``path:line``, forbidden nodes marked). Functions return text and print nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from flake8_importpolicy.model.why import WhyResult
from flake8_importpolicy.model.graph import CallNode, FunctionNode, Hop
from flake8_importpolicy.output.render import (
    PathFormatter,
    format_hop_kind,
    format_where,
    format_why_notes,
    shorten_reason,
)

__all__ = ["WhyGraph", "WhyNode", "find_why_graph", "format_why_dot", "format_why_mermaid"]

_FORBIDDEN_COLOR: Final = "#b00020"
_FORBIDDEN_FILL: Final = "#fde7e9"


@dataclass(frozen=True)
class WhyNode:
    """A node of :class:`WhyGraph`.

    Attributes:
        name: the graph node: a dotted module name, ``module:qualname`` for a function called at
            import time, or ``qualname()`` for a ``[heavy-calls]`` call.
        path: its file, formatted (``None`` when it has none or is not known).
        forbidden: the reason of the heavy rule it matches (cut to 100 characters: a label is one
            line), or ``None`` if it is not forbidden.
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
    # a node label is drawn on one line in a box: a reason of 700 characters made a box that wide
    forbidden: Mapping[str, str] = {
        name: shorten_reason(rule.shown_reason) for name, rule in why.forbidden}
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

    notes = format_why_notes(why, relpath)
    return WhyGraph(
        module=why.module,
        nodes=tuple(node(n) for n in sorted(depth, key=lambda n: (depth[n], n))),
        edges=tuple(sorted(
            edges, key=lambda h: (edges[h], h.module, h.line, h.col, h.imported, h.kind, h.flags)
        )),
        notes=tuple(" ".join(note.split()) for note in notes),
    )


def _edge_label(hop: Hop, relpath: PathFormatter) -> tuple[str, str]:
    """The two lines of an edge's label: the kind (with flags), and ``path:line``."""
    return format_hop_kind(hop), format_where(hop.path, hop.line, relpath)


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
        if isinstance(node.name, (FunctionNode, CallNode)):
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
