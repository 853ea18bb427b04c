"""The console's server-drawn pictures (timeline, bar charts): recorded text never markup."""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.etree import ElementTree

from trails.server.console.svg import bar_chart, timeline_svg

PROV = "http://www.w3.org/ns/prov#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SVG = "{http://www.w3.org/2000/svg}"


@dataclass
class Node:
    kind: str
    label: str
    started: str
    ended: str
    status: str
    took: str = ""
    children: list[Node] = field(default_factory=list)


def test_the_timeline_has_a_bar_per_activity_scaled_to_its_duration() -> None:
    child = Node("Capability", "invoke <b>", "2025-01-01T00:00:01Z", "2025-01-01T00:00:03Z", "ok")
    run = Node(
        "Run", "run", "2025-01-01T00:00:00Z", "2025-01-01T00:00:04Z", "error", "4 s", [child]
    )
    svg = timeline_svg([run], width=700)
    root = ElementTree.fromstring(svg)
    bars = [r for r in root.iter(SVG + "rect")]
    assert len(bars) == 2
    whole, part = (float(b.get("width", 0)) for b in bars)
    assert abs(part / whole - 0.5) < 0.01  # 2 s of 4 s
    assert "invoke &lt;b&gt;" in svg


def test_bars_are_proportional_and_an_empty_chart_says_so() -> None:
    svg = bar_chart("cost", [("2025-01-01", 1.0), ("2025-01-02", 3.0)], unit="USD")
    heights = [float(r.get("height", 0)) for r in ElementTree.fromstring(svg).iter(SVG + "rect")]
    assert abs(heights[1] / heights[0] - 3.0) < 0.01
    assert "nothing recorded" in bar_chart("cost", [])
