"""A whole store's bundle in bounded memory: answers over an on-disk scratch store, totally
ordered; the ledger segment sorted outside memory; the same bytes as sorting in memory."""

from __future__ import annotations

import functools
import io
import json
import random
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.known_store import build

import trails.audit.bundle as bundle_module
import trails.audit.segment as segment
import trails.store.scratch as scratch
from trails.audit.bundle import _answers, _format, verify_bundle, write_bundle
from trails.audit.export import select_graphs
from trails.audit.querypack import find_pack_dir
from trails.catalogue.entries import rebuild
from trails.errors import RDFSyntaxError
from trails.evidence.canonical import canonical_lines
from trails.evidence.ledger import ledger_iri, read_ledger
from trails.prov.iri import Minter
from trails.store import IRI, Solutions, Store, open_store


@pytest.fixture(scope="module")
def known() -> Iterator[Store]:
    """The known store (four sessions, sealed), recorded once."""
    store = open_store("memory:")
    with pytest.MonkeyPatch.context() as patch:
        build(store, patch)
    yield store
    store.close()


@pytest.fixture(scope="module")
def bundle(known: Store, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bundle") / "all.zip"
    write_bundle(known, path, select_graphs(known, all_graphs=True))
    return path


def _projected(text: str) -> list[str]:
    """The variables the outer SELECT projects (an expression's by its ``AS`` name)."""
    start = re.search(r"^SELECT\b", text, re.M)
    assert start is not None
    where = re.search(r"^WHERE\s*\{", text[start.end() :], re.M)
    assert where is not None
    head = text[start.end() : start.end() + where.start()]
    names, i = [], 0
    while i < len(head):
        if head[i] == "(":
            depth, j = 0, i
            while True:
                depth += {"(": 1, ")": -1}.get(head[j], 0)
                if depth == 0:
                    break
                j += 1
            alias = re.search(r"AS\s+[?$](\w+)\s*\)$", head[i : j + 1])
            assert alias is not None, head[i : j + 1]
            names.append(alias.group(1))
            i = j + 1
            continue
        var = re.match(r"[?$](\w+)", head[i:])
        if var:
            names.append(var.group(1))
            i += var.end()
        else:
            i += 1
    return names


def test_every_pack_answer_orders_its_rows_totally() -> None:
    """Rows that tie on every key are the same row: an answer's bytes do not depend on the
    order a store gives rows in (a bundle's answers are recomputed from its graphs)."""
    checked = 0
    for path in sorted(find_pack_dir().glob("*.rq")):
        text = path.read_text()
        if not re.search(r"^SELECT\b", text, re.M):
            continue
        order = text[text.rindex("\nORDER BY") :]
        keys = {m.group(1) for m in re.finditer(r"[?$](\w+)", order)}
        missing = [v for v in _projected(text) if v not in keys]
        assert not missing, f"{path.name}: ORDER BY leaves {missing} out"
        checked += 1
    assert checked >= 30


def test_answers_are_the_same_bytes_whatever_order_the_graphs_load_in(bundle: Path) -> None:
    with zipfile.ZipFile(bundle) as archive:
        entries = {n: archive.read(n) for n in archive.namelist()}
    documents = [(n, d, f) for n, d in entries.items() if (f := _format(n))]
    sessions = {Path(n).stem: IRI(g) for n, g in _sessions(entries).items()}
    answers = []
    for order in (documents, documents[::-1]):
        with scratch.scratch_store(order) as store:
            rebuild(store)
            answers.append(_answers(store, sessions))
    assert answers[0] == answers[1]
    written = {n: d for n, d in entries.items() if n.startswith("answers/")}
    assert answers[0] == written and len(written) > 30


def _sessions(entries: dict[str, bytes]) -> dict[str, str]:
    manifest = json.loads(entries["manifest.json"])
    return {s["file"]: s["graph"] for s in manifest["sessions"]}


def test_sorted_unique_is_sorted_set_whatever_the_run() -> None:
    rng = random.Random(7)
    lines = [f'<urn:x:{rng.randrange(60)}> <urn:p> "é{rng.randrange(9)}" .\n' for _ in range(300)]
    expected = sorted(set(lines))
    for run in (1, 2, 7, 299, 300, 1000):
        assert list(segment.sorted_unique(lines, run=run)) == expected, run
    assert list(segment.sorted_unique([], run=3)) == []


def test_the_segment_is_the_ledger_rows_canonical_and_sorted(
    known: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = ledger_iri(Minter())
    contents = read_ledger(known, ledger)
    keep = {s.iri for s in contents.seals[1:]}  # a part of the ledger
    result = known.query("SELECT ?s ?p ?o $g WHERE { GRAPH $g { ?s ?p ?o } }", {"g": ledger})
    assert isinstance(result, Solutions)
    expected = canonical_lines([r for r in result.rows if r[0] in keep], ledger)
    monkeypatch.setattr(segment, "RUN", 5)  # dumped read in parts, sorted in runs of 5
    assert list(segment.segment_lines(known, ledger, keep)) == expected
    assert b"".join(segment.segment_bytes(known, ledger, keep)) == "".join(expected).encode()
    assert len(expected) > 20


@pytest.mark.remote
def test_a_servers_segment_is_the_embedded_stores(known: Store, remote_store: Store) -> None:
    """A store that is not the embedded one (a SPARQL server; the console's grant-checked
    view) gives the ledger's rows by a query binding the ledger as a server binds: the
    segment is the same lines."""
    ledger = ledger_iri(Minter())
    keep = {s.iri for s in read_ledger(known, ledger).seals[1:]}
    data = known.dump(format="nquads", graph=ledger)
    assert isinstance(data, bytes)
    remote_store.load(data.replace(b" .\n", f" <{ledger}> .\n".encode()), format="nquads")
    expected = list(segment.segment_lines(known, ledger, keep))
    assert list(segment.segment_lines(remote_store, ledger, keep)) == expected
    assert len(expected) > 20


def test_a_scratch_store_loads_documents_apart_in_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scratch, "BATCH", 2)
    one = b"<urn:a> <urn:p> _:b .\n<urn:a> <urn:p> <urn:c> .\n<urn:a> <urn:q> <urn:d> .\n"
    documents: list[tuple[str, scratch.Document, str]] = [
        ("one", one, "nquads"),
        ("two", b"<urn:a> <urn:p> _:b <urn:g> .\n", "nquads"),  # its own _:b
        ("bad", b"<urn:a> <urn:p> <urn:e> .\n<urn:a> <urn:p", "nquads"),  # nothing of it
        ("three", b"<urn:g2> { <urn:a> <urn:p> <urn:f> . }", "trig"),
    ]
    streamed: list[tuple[str, scratch.Document, str]] = [
        (name, functools.partial(io.BytesIO, data), fmt) for name, data, fmt in documents
    ]  # a large document is opened as a stream, twice: parsed whole first, then loaded
    for given in (documents, streamed):
        refused: list[str] = []
        with scratch.scratch_store(given, refused=lambda n, _why, r=refused: r.append(n)) as store:
            assert refused == ["bad"]
            result = store.query(
                "SELECT (COUNT(*) AS ?n) (COUNT(DISTINCT ?o) AS ?o) WHERE "
                "{ { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }"
            )
            assert isinstance(result, Solutions)
            assert [int(v.value) for v in result.rows[0]] == [5, 5]  # two blank nodes, no urn:e
        with pytest.raises(RDFSyntaxError, match="bad"), scratch.scratch_store(given):
            pass


def test_a_whole_store_bundle_verifies(bundle: Path) -> None:
    report = verify_bundle(bundle)
    assert report.ok, report.findings
    assert report.answers_checked > 30 and report.graphs_checked >= 3


def test_a_bundle_on_disk_is_the_bundle_in_memory(
    known: Store, bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``IN_MEMORY`` bytes the scratch store is on disk, and past ``_WHOLE`` a file is
    loaded into it as a stream from the spill: the same files, byte for byte, and the bundle
    verifies that way too."""
    monkeypatch.setattr(bundle_module, "IN_MEMORY", 0)
    monkeypatch.setattr(bundle_module, "_WHOLE", 0)
    on_disk = tmp_path / "disk.zip"
    write_bundle(known, on_disk, select_graphs(known, all_graphs=True))
    with zipfile.ZipFile(bundle) as a, zipfile.ZipFile(on_disk) as b:
        ours, theirs = ({n: z.read(n) for n in z.namelist()} for z in (a, b))
    manifests = [json.loads(files.pop("manifest.json")) for files in (ours, theirs)]
    for manifest in manifests:
        manifest.pop("created")
    assert ours == theirs and manifests[0] == manifests[1]
    report = verify_bundle(on_disk)
    assert report.ok, report.findings
    assert report.answers_checked == len([n for n in ours if n.startswith("answers/")])
