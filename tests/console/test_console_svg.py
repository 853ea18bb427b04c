"""The console's pictures: causes drawn left of their effects, recorded text never markup."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from xml.etree import ElementTree

from trails.server.console.svg import GraphPicture, bar_chart, prov_graph_svg, timeline_svg

PROV = "http://www.w3.org/ns/prov#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SVG = "{http://www.w3.org/2000/svg}"


def nodes(svg: str) -> dict[str, tuple[float, str]]:
    """Each node's title -> (its x, its kind), read back from the SVG as XML."""
    root = ElementTree.fromstring(svg)
    out = {}
    for g in root.iter(SVG + "g"):
        if g.get("class") != "node":
            continue
        title = g.find(SVG + "title")
        shape = next(iter(c for c in g if c.tag != SVG + "title"))
        x = float(shape.get("x") or float(shape.get("cx") or 0) - float(shape.get("rx") or 0))
        if shape.tag == SVG + "polygon":
            x = float(re.split(r"[ ,]", shape.get("points", "0"))[0])
        assert title is not None and title.text is not None
        out[title.text] = (x, g.get("data-kind", ""))
    return out


def test_causes_are_drawn_left_of_their_effects_and_labels_are_escaped() -> None:
    triples = [
        ("urn:x:run", RDF_TYPE, PROV + "Activity"),
        ("urn:x:call", PROV + "wasInformedBy", "urn:x:run"),
        ("urn:x:call", PROV + "used", "urn:x:input"),
        ("urn:x:output", PROV + "wasGeneratedBy", "urn:x:call"),
        ("urn:x:run", PROV + "wasAssociatedWith", "did:example:alice"),
        ("did:example:alice", RDF_TYPE, PROV + "Agent"),
        ("urn:x:input", LABEL, "<script>alert(1)</script>"),
    ]
    svg = prov_graph_svg(GraphPicture.from_triples(triples))
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    drawn = nodes(svg)
    assert drawn["activity: urn:x:call"][0] > drawn["activity: urn:x:run"][0]
    assert drawn["entity: urn:x:output"][0] > drawn["activity: urn:x:call"][0]
    assert drawn["activity: urn:x:call"][0] > drawn["entity: urn:x:input"][0]
    assert drawn["agent: did:example:alice"][1] == "agent"
    relations = re.findall(r'data-relation="(\w+)"', svg)
    assert sorted(relations) == ["used", "wasAssociatedWith", "wasGeneratedBy", "wasInformedBy"]


def test_a_large_graph_says_what_it_leaves_out() -> None:
    triples = [(f"urn:x:a{i}", PROV + "used", f"urn:x:e{i}") for i in range(100)]
    svg = prov_graph_svg(GraphPicture.from_triples(triples), max_nodes=50)
    assert svg.count('class="node"') == 50
    assert "150 more node(s) not drawn" in svg


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
