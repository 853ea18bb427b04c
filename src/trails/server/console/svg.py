"""Pictures the console draws on the server, as SVG: the timeline and the bar charts.

The console works without JavaScript, so these pictures are SVG documents made
here from data the audit room already gathers: the report's timeline tree
(``TimelineNode``) becomes a Gantt chart of runs, completions and calls, and
per-day totals become bar charts. Every text is escaped: labels are recorded
data, never markup. (The provenance graph is laid out by a layout engine in the
browser, from the data ``graph`` makes.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from html import escape
from typing import Any

__all__ = ["bar_chart", "timeline_svg"]

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
