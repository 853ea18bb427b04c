"""Whole-store exports: prefixes declared once, written as they go, bookkeeping left out.

An export of every graph declares the vocabularies and the kinds of trails IRIs once,
not a prefix per session (a store of many sessions used to declare about eleven per
session, each found by copying every prefix name: quadratic); N-Quads, TriG and JSON-LD
are written graph by graph, PROV-N and PROV-JSON bundle by bundle through a spill file;
``--all`` leaves out the register of open sessions (a running recorder's bookkeeping)
and every format leaves out empty graphs. Speed is measured by
``benchmarks/bench_export_scale.py``, not here.
"""

from __future__ import annotations

import io
import json

import pytest
import rdflib
from prov.model import ProvDocument

import trails.audit.export_prov as export_prov
from trails.audit.export import export, import_file, select_graphs
from trails.prov import Recorder
from trails.store import IRI, Literal, Quad, Store, open_store
from trails.testing.conformance import record_sample_session

FORMATS = ("trig", "nquads", "jsonld", "provn", "provjson")
REGISTER = IRI("urn:trails:graph:open-sessions")
EMPTY = IRI("urn:trails:graph:emptied")


@pytest.fixture
def many() -> Store:
    """Six recorded sessions, the register of open sessions and a graph emptied since."""
    store = open_store("memory:")
    recorder = Recorder(store)
    for _ in range(6):
        record_sample_session(recorder)
    session = next(g for g in store.graphs() if ":session:" in g)
    store.write([Quad(REGISTER, IRI("https://w3id.org/trails/ns#openSession"), session, REGISTER)])
    gone = Quad(EMPTY, IRI("urn:x:p"), Literal("x"), EMPTY)
    store.write([gone])
    store.write([], remove=[gone])
    return store


def _export(store: Store, graphs: list[IRI], fmt: str, **kw: object) -> bytes:
    out = io.BytesIO()
    export(store, out, graphs, format=fmt, **kw)  # type: ignore[arg-type]
    return out.getvalue()


def _prefix_lines(data: bytes) -> list[bytes]:
    return [line for line in data.splitlines() if line.startswith(b"@prefix")]


def test_trig_declares_prefixes_once_whatever_the_number_of_sessions(many: Store) -> None:
    sessions = sorted(g for g in many.graphs() if g.startswith("urn:trails:session:"))
    one = _export(many, sessions[:1], "trig")
    everything = _export(many, select_graphs(many, all_graphs=True), "trig")
    assert len(_prefix_lines(everything)) == len(_prefix_lines(one))
    assert b"@prefix activity: <urn:trails:activity:> ." in _prefix_lines(everything)
    # and the prov package still names every IRI (trails.audit.export.with_prefixes' reason)
    doc = ProvDocument.deserialize(content=one.decode(), format="rdf", rdf_format="trig")
    assert len(doc.bundles) == 2 and any(len(b.records) > 10 for b in doc.bundles)


def test_all_leaves_out_the_open_sessions_register_and_empty_graphs(many: Store) -> None:
    graphs = select_graphs(many, all_graphs=True)
    assert REGISTER not in graphs and EMPTY in graphs  # emptied: only the writers know
    for fmt in FORMATS:
        data = _export(many, graphs, fmt)
        assert b"open-sessions" not in data, fmt
        assert str(EMPTY).encode() not in data, fmt
    named = rdflib.Dataset().parse(data=_export(many, graphs, "trig"), format="trig")
    assert all(
        len(g) for g in named.graphs() if g.identifier != rdflib.Dataset().default_graph.identifier
    )
    stats_graphs = []
    for fmt in ("trig", "nquads", "jsonld"):
        out = io.BytesIO()
        stats_graphs.append(export(many, out, graphs, format=fmt).graphs)
    assert stats_graphs == [len(graphs) - 1] * 3  # the emptied graph is not counted


def test_an_emptied_selection_still_reads_back(many: Store) -> None:
    assert json.loads(_export(many, [EMPTY], "jsonld")) == []
    back = open_store("memory:")
    assert back.graphs() == []
    data = _export(many, [EMPTY], "trig")
    back.load(data, format="trig")
    assert back.graphs() == []


@pytest.mark.parametrize("fmt", ["trig", "nquads", "jsonld"])
def test_rdf_formats_are_written_graph_by_graph(many: Store, fmt: str) -> None:
    """What is written grows at each graph: the output is never held whole first."""
    out = io.BytesIO()
    sizes: list[int] = []
    graphs = select_graphs(many, all_graphs=True)
    export(many, out, graphs, format=fmt, progress=lambda *_: sizes.append(out.tell()))
    assert len(sizes) == len(graphs)
    assert sizes == sorted(sizes) and len(set(sizes)) >= len(graphs) - 2  # one graph emptied


@pytest.mark.parametrize("fmt", ["provn", "provjson"])
def test_prov_formats_spilled_to_disk_are_the_same(
    many: Store, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    graphs = select_graphs(many, all_graphs=True)
    in_memory = _export(many, graphs, fmt)
    monkeypatch.setattr(export_prov, "_SPILL", 1)  # every byte goes through the file
    assert _export(many, graphs, fmt) == in_memory
    doc = ProvDocument.deserialize(
        content=in_memory.decode(), format={"provn": "provn", "provjson": "json"}[fmt]
    )
    sessions = {
        g for g in graphs if g.startswith("urn:trails:session:") and not g.endswith(":content")
    }
    assert {str(b.identifier.uri) for b in doc.bundles} >= sessions


def test_the_whole_store_round_trips_without_the_register(many: Store, tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "all.nq"
    path.write_bytes(_export(many, select_graphs(many, all_graphs=True), "nquads"))
    other = open_store("memory:")
    import_file(other, path)
    assert REGISTER not in other.graphs() and EMPTY not in other.graphs()
    assert set(other.graphs()) == set(many.graphs()) - {REGISTER, EMPTY}


def test_jsonld_nodes_cut_anywhere_by_the_store_read_back_the_same(many: Store) -> None:
    """The store hands a graph's N-Triples over in chunks that cut lines and subjects
    anywhere; every node object still holds exactly its subject's triples."""
    from trails.audit.export_graphs import _Nodes

    graph = next(g for g in many.graphs() if g.startswith("urn:trails:session:"))
    data = many.dump(format="ntriples", graph=graph) or b""
    out = io.BytesIO()
    nodes = _Nodes(out, graph, b"\n")
    for i in range(0, len(data), 7):
        nodes.write(data[i : i + 7])
    nodes.close()
    assert nodes.count == data.count(b"\n")
    document = json.loads(b"[" + out.getvalue() + b"\n]")
    # a subject met again (an in-memory store lists triples as written) is a second node
    # object of the same @id, which JSON-LD merges: the triples read back are the graph's
    assert {node["@id"] for node in document[0]["@graph"]} == {
        line.split(b" ", 1)[0][1:-1].decode() for line in data.splitlines()
    }
    ds = rdflib.Dataset().parse(data=json.dumps(document), format="json-ld")
    back = open_store("memory:")
    back.load(ds.serialize(format="nquads").encode(), format="nquads")
    assert sorted((back.dump(format="ntriples", graph=graph) or b"").splitlines()) == sorted(
        data.splitlines()
    )
