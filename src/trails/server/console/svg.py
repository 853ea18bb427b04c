"""Pictures the console draws on the server, as SVG: the timeline, the provenance graph, bars.

The console works without JavaScript, so its pictures are SVG documents made
here from data the audit room already gathers: the report's timeline tree
(``TimelineNode``) becomes a Gantt chart of runs, completions and calls; a
session's plain PROV-O (the ``session-prov`` pack query) becomes a layered
drawing of activities, entities and agents with ``used``, ``wasGeneratedBy``,
``wasInformedBy`` and ``wasAssociatedWith`` edges; per-day totals become bar
charts. The layout is pure Python (longest-path layers, one barycentre pass to
order each layer, then one back), so nothing outside the package is needed to
draw, and every text is escaped: labels are recorded data, never markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from typing import Any

__all__ = ["GraphPicture", "bar_chart", "prov_graph_svg", "timeline_svg"]

_PROV = "http://www.w3.org/ns/prov#"
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
_EDGES = {
    _PROV + "used": "used",
    _PROV + "wasGeneratedBy": "wasGeneratedBy",
    _PROV + "wasInformedBy": "wasInformedBy",
    _PROV + "wasAssociatedWith": "wasAssociatedWith",
}
_KINDS = {_PROV + "Activity": "activity", _PROV + "Entity": "entity", _PROV + "Agent": "agent"}
_FILL = {"activity": "#9fb1fc", "entity": "#fffc87", "agent": "#fed37f"}
_BAR = {"ok": "#5b8def", "error": "#d9534f", "interrupted": "#f0ad4e", "": "#8a94a6"}


def _when(text: str) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def timeline_svg(roots: Sequence[Any], *, width: int = 900) -> str:
    """A Gantt chart of the report's timeline tree (runs, completions, calls), one bar per row.

    Args:
        roots: ``TimelineNode`` trees (``kind``, ``label``, ``started``, ``ended``,
            ``status``, ``took``, ``children``).
        width: the picture's width in pixels.

    Returns:
        An ``<svg>`` element (empty picture when nothing has times).
    """
    rows: list[tuple[int, Any]] = []

    def walk(nodes: Iterable[Any], depth: int) -> None:
        for node in nodes:
            rows.append((depth, node))
            walk(node.children, depth + 1)

    walk(roots, 0)
    spans = [(_when(n.started), _when(n.ended)) for _, n in rows]
    starts = [s for s, _ in spans if s is not None]
    ends = [e for _, e in spans if e is not None]
    if not starts:
        return (
            '<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="0" height="0"></svg>'
        )
    first, last = min(starts), max(ends + starts)
    total = max((last - first).total_seconds(), 1e-3)
    label_w, row_h, top = 300, 20, 24
    plot = width - label_w - 10
    height = top + row_h * len(rows) + 8
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        "<title>Timeline: runs, completions and calls with their durations</title>",
        f'<text x="{label_w}" y="14" font-size="11">0 s</text>',
        f'<text x="{width - 10}" y="14" font-size="11" text-anchor="end">{total:.3f} s</text>',
    ]
    for index, ((depth, node), (start, end)) in enumerate(zip(rows, spans, strict=True)):
        y = top + index * row_h
        label = escape(_cut(f"{node.kind} {node.label}".strip(), 44 - depth))
        out.append(f'<g class="bar" data-kind="{escape(node.kind)}">')
        out.append(
            f"<title>{escape(node.kind)} {escape(node.label)}: {escape(node.took or '?')}"
            f" ({escape(node.status or 'no status')})</title>"
        )
        out.append(f'<text x="{4 + depth * 10}" y="{y + 14}" font-size="12">{label}</text>')
        if start is not None:
            x = label_w + plot * (start - first).total_seconds() / total
            stop = end or start
            w = max(plot * (stop - start).total_seconds() / total, 2.0)
            fill = _BAR.get(node.status, _BAR[""])
            out.append(
                f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" '
                f'fill="{fill}" rx="2"/>'
            )
            if node.took:
                out.append(
                    f'<text x="{min(x + w + 3, width - 60):.1f}" y="{y + 14}" '
                    f'font-size="10" fill="#444">{escape(node.took)}</text>'
                )
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


@dataclass
class GraphPicture:
    """A provenance graph ready to draw: nodes by IRI with kind and label, and edges."""

    kinds: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)

    @classmethod
    def from_triples(cls, triples: Iterable[Sequence[Any]]) -> GraphPicture:
        """Read PROV-O triples (``s, p, o``): typed nodes, labels and the four relations."""
        picture = cls()
        for s, p, o in triples:
            s, p = str(s), str(p)
            if p == _RDF_TYPE and str(o) in _KINDS:
                picture.kinds.setdefault(s, _KINDS[str(o)])
            elif p == _LABEL:
                picture.labels.setdefault(s, str(getattr(o, "value", o)))
            elif p in _EDGES:
                picture.edges.append((s, _EDGES[p], str(o)))
        for s, relation, o in picture.edges:
            if relation == "used":
                picture.kinds.setdefault(s, "activity")
                picture.kinds.setdefault(o, "entity")
            elif relation == "wasGeneratedBy":
                picture.kinds.setdefault(s, "entity")
                picture.kinds.setdefault(o, "activity")
            elif relation == "wasInformedBy":
                picture.kinds.setdefault(s, "activity")
                picture.kinds.setdefault(o, "activity")
            else:
                picture.kinds.setdefault(s, "activity")
                picture.kinds.setdefault(o, "agent")
        return picture

    def label(self, node: str) -> str:
        """The node's label, or the tail of its IRI."""
        found = self.labels.get(node)
        if found:
            return found
        return node.rsplit("/", 1)[-1].rsplit("#", 1)[-1].rsplit(":", 1)[-1][:12]


def _layers(nodes: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Longest-path layers, from effects back to causes; cycles broken by visit order."""
    outgoing: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        outgoing[a].append(b)
    layer: dict[str, int] = {}
    visiting: set[str] = set()

    def depth(node: str) -> int:
        if node in layer:
            return layer[node]
        if node in visiting:
            return 0
        visiting.add(node)
        found = max((depth(b) + 1 for b in outgoing[node]), default=0)
        visiting.discard(node)
        layer[node] = found
        return found

    for node in nodes:
        depth(node)
    return layer


def prov_graph_svg(picture: GraphPicture, *, max_nodes: int = 120) -> str:
    """The provenance graph as a layered SVG drawing (causes on the left, effects on the right).

    Args:
        picture: the nodes and edges.
        max_nodes: draw at most this many nodes (the picture says how many are left out).

    Returns:
        An ``<svg>`` element whose nodes are ``<g class="node" data-kind=...>`` with a
        ``<title>`` holding the IRI.
    """
    nodes = sorted(picture.kinds)
    left_out = max(len(nodes) - max_nodes, 0)
    if left_out:
        degree: dict[str, int] = dict.fromkeys(nodes, 0)
        for s, _, o in picture.edges:
            degree[s] = degree.get(s, 0) + 1
            degree[o] = degree.get(o, 0) + 1
        kept = set(sorted(nodes, key=lambda n: (-degree[n], n))[:max_nodes])
        nodes = [n for n in nodes if n in kept]
    present = set(nodes)
    edges = [(s, r, o) for s, r, o in picture.edges if s in present and o in present and s != o]
    # every relation points from effect to cause: draw causes left of effects
    layer = _layers(nodes, [(s, o) for s, _, o in edges])
    columns: dict[int, list[str]] = {}
    for node in nodes:
        columns.setdefault(layer[node], []).append(node)
    # one barycentre pass: each column ordered by the mean row of its neighbours on the left
    row: dict[str, float] = {}
    neighbours: dict[str, list[str]] = {n: [] for n in nodes}
    for s, _, o in edges:
        neighbours[s].append(o)
        neighbours[o].append(s)
    for index in sorted(columns):
        column = columns[index]
        if index > 0:
            column.sort(
                key=lambda n: (
                    sum(row[m] for m in neighbours[n] if m in row)
                    / max(sum(1 for m in neighbours[n] if m in row), 1),
                    n,
                )
            )
        for position, node in enumerate(column):
            row[node] = float(position)
    # and one back: each column ordered by the mean row of all its neighbours
    for index in sorted(columns, reverse=True)[1:]:
        column = columns[index]
        column.sort(
            key=lambda n: (
                sum(row[m] for m in neighbours[n]) / max(len(neighbours[n]), 1),
                row[n],
            )
        )
        for position, node in enumerate(column):
            row[node] = float(position)
    col_w, row_h, node_w, node_h = 190, 46, 160, 30
    tallest = max((len(c) for c in columns.values()), default=0)
    width = max(col_w * len(columns), 200) + 20
    height = max(row_h * tallest, 60) + 40
    place = {n: (10 + c * col_w, 10 + int(row[n]) * row_h) for c, ns in columns.items() for n in ns}
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="prov-graph" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        "<title>Provenance graph: activities, entities and agents</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    for s, relation, o in edges:
        (x1, y1), (x2, y2) = place[s], place[o]
        out.append(
            f'<line class="edge" data-relation="{relation}" x1="{x1}" y1="{y1 + node_h / 2}" '
            f'x2="{x2 + node_w}" y2="{y2 + node_h / 2}" stroke="#777" '
            f'marker-end="url(#arrow)"><title>{relation}</title></line>'
        )
    for node in nodes:
        x, y = place[node]
        kind = picture.kinds[node]
        label = picture.label(node)
        out.append(f'<g class="node" data-kind="{kind}" data-label="{escape(label)}">')
        out.append(f"<title>{escape(kind)}: {escape(node)}</title>")
        if kind == "entity":
            out.append(
                f'<ellipse cx="{x + node_w / 2}" cy="{y + node_h / 2}" rx="{node_w / 2}" '
                f'ry="{node_h / 2}" fill="{_FILL[kind]}" stroke="#333"/>'
            )
        elif kind == "agent":
            out.append(
                f'<polygon points="{x},{y + 8} {x + node_w / 2},{y} {x + node_w},{y + 8} '
                f'{x + node_w},{y + node_h} {x},{y + node_h}" fill="{_FILL[kind]}" stroke="#333"/>'
            )
        else:
            out.append(
                f'<rect x="{x}" y="{y}" width="{node_w}" height="{node_h}" '
                f'fill="{_FILL.get(kind, "#ddd")}" stroke="#333"/>'
            )
        out.append(
            f'<text x="{x + node_w / 2}" y="{y + node_h / 2 + 4}" font-size="11" '
            f'text-anchor="middle">{escape(_cut(label, 24))}</text>'
        )
        out.append("</g>")
    if left_out:
        out.append(
            f'<text x="10" y="{height - 8}" font-size="12">{left_out} more node(s) not drawn '
            f"(the TriG and PROV-N downloads hold them all)</text>"
        )
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(
    title: str, bars: Sequence[tuple[str, float]], *, unit: str = "", width: int = 640
) -> str:
    """A bar chart: one labelled bar per ``(label, value)``, in the given order, over a value
    axis (0 and the highest value) and a baseline; a series with nothing above 0 is one line
    saying so (no empty plot area).

    Args:
        title: what the chart shows (its ``<title>``).
        bars: the labels and values.
        unit: printed after each value (``USD`` ...).
        width: the picture's width in pixels.

    Returns:
        An ``<svg>`` element.
    """
    if not bars or not any(v for _, v in bars):
        # nothing to draw: a line that says so, no empty plot area
        said = "nothing recorded" if not bars else f"none: 0 in each of {len(bars)}"
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="chart empty" role="img" '
            f'width="{width}" height="24" viewBox="0 0 {width} 24">'
            f"<title>{escape(title)}</title>"
            f'<text x="10" y="16" font-size="12">{escape(said)}</text></svg>'
        )
    height, top, bottom, left = 200, 20, 50, 48
    n = len(bars)
    slot = (width - left - 10) / n
    peak = max(v for _, v in bars) or 1.0
    base = height - bottom
    top_label = f"{peak:.4g}{(' ' + unit) if unit else ''}"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}">',
        f"<title>{escape(title)}</title>",
        # the axes: the value axis with its 0 and its top, the baseline under the bars
        f'<g class="axes" stroke="#555"><line x1="{left}" y1="{top}" x2="{left}" y2="{base}"/>'
        f'<line x1="{left}" y1="{base}" x2="{width - 10}" y2="{base}"/></g>',
        f'<text x="{left - 4}" y="{top + 4}" font-size="10" text-anchor="end">'
        f"{escape(_cut(top_label, 9))}</text>",
        f'<text x="{left - 4}" y="{base}" font-size="10" text-anchor="end">0</text>',
    ]
    for index, (label, value) in enumerate(bars):
        h = (base - top) * value / peak
        x = left + index * slot
        y = base - h
        shown = f"{value:.4g}{(' ' + unit) if unit else ''}"
        out.append(f'<g class="bar"><title>{escape(label)}: {escape(shown)}</title>')
        out.append(
            f'<rect x="{x + slot * 0.1:.1f}" y="{y:.1f}" width="{slot * 0.8:.1f}" '
            f'height="{h:.1f}" fill="#5b8def"/>'
        )
        out.append(
            f'<text x="{x + slot / 2:.1f}" y="{y - 3:.1f}" font-size="10" '
            f'text-anchor="middle">{escape(shown)}</text>'
        )
        out.append(
            f'<text x="{x + slot / 2:.1f}" y="{base + 14}" font-size="10" '
            f'text-anchor="middle">{escape(_cut(label, 14))}</text></g>'
        )
    out.append("</svg>")
    return "\n".join(out)
