"""PROV-N and PROV-JSON bundles larger than a part are written part by part, byte for byte the same.

The ledger's and the catalogue's bundles grow with the store; the PROV writer decodes them in
parts cut between subjects (``trails.audit.export_prov._PART`` bytes of N-Triples each), so
an export's memory does not follow them. Written in parts, a document must be the very bytes
written from the whole bundle at once: compared here with parts of one byte up, on the known
store (ledger, catalogue, memory) and on graphs built to need the whole bundle (a qualified
influence, a namespace no prefix covers, met late). Speed and memory are measured by
``benchmarks/bench_export_scale.py``, not here.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from prov.model import ProvDocument
from tests.audit.test_export_provn import _check
from tests.known_store import build

import trails.audit.export_prov as export_prov
from trails.audit.export import export, select_graphs
from trails.audit.provn import ProvWriter
from trails.store import IRI, Literal, Quad, Store, open_store

FORMATS = ("provn", "provjson")
PROV = "http://www.w3.org/ns/prov#"
RDF_TYPE = IRI("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")


@pytest.fixture(scope="module")
def known() -> bytes:
    """The known store's quads (four sessions, ledger, catalogue, memory), recorded once."""
    memory = open_store("memory:")
    try:
        with pytest.MonkeyPatch.context() as patch:
            build(memory, patch)
        return memory.dump(format="nquads") or b""
    finally:
        memory.close()


@pytest.fixture(scope="module")
def disk(known: bytes, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """The known store on disk: only an on-disk store lists a graph's subjects together,
    which cutting a graph needs."""
    store = open_store(str(tmp_path_factory.mktemp("parts") / "known"))
    store.load(known, format="nquads")
    yield store
    store.close()


def _export(store: Store, graphs: list[IRI], fmt: str) -> bytes:
    out = io.BytesIO()
    export(store, out, graphs, format=fmt)
    return out.getvalue()


@pytest.fixture
def parts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of triples in each part the writer decodes."""
    seen: list[int] = []
    part = ProvWriter.part

    def counted(self: ProvWriter, triples: list[tuple[str, str, object]]) -> None:
        seen.append(len(triples))
        part(self, triples)  # type: ignore[arg-type]

    monkeypatch.setattr(ProvWriter, "part", counted)
    return seen


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_whole_store_in_parts_is_the_same_document(
    disk: Store, fmt: str, parts: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    graphs = select_graphs(disk, all_graphs=True)
    whole = _export(disk, graphs, fmt)
    assert not parts  # the known store's graphs are smaller than a part
    for size in (1, 700, 5000):
        monkeypatch.setattr(export_prov, "_PART", size)
        parts.clear()
        assert _export(disk, graphs, fmt) == whole, size
        if size == 1:  # a part is what the store wrote at once, cut at a subject
            assert len(parts) >= 4
            assert max(parts) < len(disk.dump(format="nquads") or b"") / 1000
    doc = ProvDocument.deserialize(
        content=whole.decode(), format={"provn": "provn"}.get(fmt, "json")
    )
    assert any(str(b.identifier.uri) == "urn:trails:graph:ledger" for b in doc.bundles)


def test_the_whole_store_in_parts_reads_back_as_the_prov_package_reads_it(
    disk: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_prov, "_PART", 1)
    _check(disk, select_graphs(disk, all_graphs=True))


def test_only_a_store_that_lists_subjects_together_is_cut(
    known: bytes, tmp_path: Path, parts: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On disk a graph's dump lists each subject's triples together, however they were
    written; in memory it does not, so a memory store's bundles are decoded whole."""
    g, p = IRI("urn:g"), IRI("urn:x:p")
    quads = [Quad(IRI(f"urn:x:s{i % 7}"), p, Literal(str(i)), g) for i in range(70)]
    on_disk = open_store(str(tmp_path / "interleaved"))
    try:
        for q in quads:  # one subject after another, over and over
            on_disk.write([q])
        lines = (on_disk.dump(format="ntriples", graph=g) or b"").splitlines()
        subjects = [line.split(b" ", 1)[0] for line in lines]
        runs = [s for i, s in enumerate(subjects) if not i or subjects[i - 1] != s]
        assert len(lines) == 70 and len(runs) == len(set(subjects)) == 7
        assert on_disk.groups_subjects  # type: ignore[attr-defined]
    finally:
        on_disk.close()
    memory = open_store("memory:")
    memory.load(known, format="nquads")
    assert not memory.groups_subjects  # type: ignore[attr-defined]
    monkeypatch.setattr(export_prov, "_PART", 1)
    _export(memory, select_graphs(memory, all_graphs=True), "provn")
    assert not parts
    memory.close()


def _graph(late: list[Quad], path: Path) -> Store:
    """A graph of 40 entities, each with a value, then the quads of ``late``."""
    store = open_store(str(path))
    g = IRI("urn:trails:graph:big")
    quads = []
    for i in range(40):
        e = IRI(f"urn:trails:entity:{i:03d}")
        quads += [
            Quad(e, RDF_TYPE, IRI(PROV + "Entity"), g),
            Quad(e, IRI(PROV + "value"), Literal(str(i)), g),
        ]
    store.write(quads + [Quad(q.subject, q.predicate, q.object, g) for q in late])
    return store


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "late",
    [
        # a qualified association: its node is read with the activity's triples
        [
            Quad(IRI("urn:trails:activity:zz"), RDF_TYPE, IRI(PROV + "Activity"), IRI("urn:g")),
            Quad(
                IRI("urn:trails:activity:zz"),
                IRI(PROV + "wasAssociatedWith"),
                IRI("urn:trails:agent:a"),
                IRI("urn:g"),
            ),
            Quad(
                IRI("urn:trails:activity:zz"),
                IRI(PROV + "qualifiedAssociation"),
                IRI("urn:trails:entity:q"),
                IRI("urn:g"),
            ),
            Quad(IRI("urn:trails:entity:q"), RDF_TYPE, IRI(PROV + "Association"), IRI("urn:g")),
            Quad(
                IRI("urn:trails:entity:q"),
                IRI(PROV + "agent"),
                IRI("urn:trails:agent:a"),
                IRI("urn:g"),
            ),
            Quad(
                IRI("urn:trails:entity:q"),
                IRI(PROV + "hadPlan"),
                IRI("urn:trails:entity:plan"),
                IRI("urn:g"),
            ),
        ],
        # namespaces no prefix covers, named ns1, ns2 ... in the order the whole bundle meets them
        [
            Quad(IRI("http://b.example/ns/one"), RDF_TYPE, IRI(PROV + "Entity"), IRI("urn:g")),
            Quad(
                IRI("urn:trails:entity:n"),
                IRI(PROV + "wasDerivedFrom"),
                IRI("http://a.example/ns/two"),
                IRI("urn:g"),
            ),
            Quad(
                IRI("http://c.example/x/three"),
                IRI(PROV + "wasGeneratedBy"),
                IRI("http://d.example/y/four"),
                IRI("urn:g"),
            ),
        ],
    ],
    ids=["qualified", "new-namespaces"],
)
def test_a_bundle_that_cannot_be_cut_is_written_whole(
    fmt: str, late: list[Quad], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    store = _graph(late, tmp_path / "s")
    graphs = select_graphs(store, all_graphs=True)
    whole = _export(store, graphs, fmt)
    monkeypatch.setattr(export_prov, "_PART", 1)
    assert _export(store, graphs, fmt) == whole
    doc = ProvDocument.deserialize(
        content=whole.decode(), format={"provn": "provn"}.get(fmt, "json")
    )
    assert len(next(iter(doc.bundles)).records) >= 40
