"""A plain ``trails verify`` is the full check, and nothing in the store goes unaccounted.

A real on-disk store is recorded through ``invoke`` and ``memory.learn`` with the sealer
installed (``tests.evidence.test_content.record``), tampered with the way someone with
write access would (the ``Store`` API, or pyoxigraph for what that API refuses), and the
real ``trails`` CLI, with no option but ``--no-checkpoint``, verifies it in a subprocess:
every case of the table exits 1 with a finding that names the entity or graph.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox
import pytest
from tests.evidence.test_content import (
    ALICE,
    TABLE,
    Recorded,
    added,
    changed,
    deleted,
    memory_changed,
    record,
    second_value,
    structure_planted,
    trails_cli,
)
from tests.evidence.test_ledger import change_a_literal

from trails.catalogue.entries import catalogue_iri, entry_iri
from trails.compliance.erasure import erase
from trails.evidence.checkpoint import read_checkpoint, record_checkpoint
from trails.evidence.ledger import ledger_iri
from trails.evidence.seal import install_sealer
from trails.evidence.verify import verify
from trails.prov import Minter, Recorder
from trails.prov.vocab import RDF, T
from trails.store import IRI, Literal, Quad, Solutions, Store, open_store, set_default_store

CATALOGUE = catalogue_iri(Minter())
Tamper = Callable[[Store, Recorded], tuple[str, str, str]]


def _entry_quads(store: Store, session: IRI) -> list[Quad]:
    """The quads of a session's catalogue entry and of its usage nodes."""
    entry = entry_iri(session)
    rows = store.query(
        "SELECT ?s ?p ?o $g $e WHERE { GRAPH $g { { $e ?p ?o BIND($e AS ?s) } "
        "UNION { $e <https://w3id.org/trails/ns#usage> ?s . ?s ?p ?o } } }",
        {"g": CATALOGUE, "e": entry},
    )
    assert isinstance(rows, Solutions)
    return [Quad(r["s"], r["p"], r["o"], CATALOGUE) for r in rows]  # type: ignore[arg-type]


def _edit_entry(store: Store, session: IRI, predicate: IRI, value: Literal) -> None:
    entry = entry_iri(session)
    (old,) = [
        q for q in _entry_quads(store, session) if (q.subject, q.predicate) == (entry, predicate)
    ]
    store.write([Quad(entry, predicate, value, CATALOGUE)], remove=[old])


def literal_after_checkpoint(store: Store, r: Recorded) -> tuple[str, str, str]:
    report = verify(store)
    record_checkpoint(
        Recorder(store),
        mode="full",
        seals=report.seals,
        graphs=report.graphs_checked,
        verified=report.chain_tips,
        previous=None,
    )
    assert read_checkpoint(store, ledger_iri(Minter())) is not None
    change_a_literal(store, r.session)  # one quad for another: the count stays the same
    return "altered", r.session, r.session


def catalogue_cost(store: Store, r: Recorded) -> tuple[str, str, str]:
    _edit_entry(
        store,
        r.session,
        T.totalCostUSD,
        Literal("0.000001", "http://www.w3.org/2001/XMLSchema#decimal"),
    )
    return "catalogue", entry_iri(r.session), r.session


def catalogue_status(store: Store, r: Recorded) -> tuple[str, str, str]:
    _edit_entry(store, r.session, T.sessionStatus, Literal("failed"))
    return "catalogue", entry_iri(r.session), r.session


def catalogue_deleted(store: Store, r: Recorded) -> tuple[str, str, str]:
    store.write([], remove=_entry_quads(store, r.session))
    return "catalogue", entry_iri(r.session), r.session


def unknown_graph(store: Store, r: Recorded) -> tuple[str, str, str]:
    graph = IRI("urn:example:planted")
    store.write([Quad(r.session, T.status, Literal("approved"), graph)])
    return "foreign", graph, graph


def default_graph(store: Store, r: Recorded) -> tuple[str, str, str]:
    raw = store.raw  # type: ignore[attr-defined]  # the Store API always names a graph
    raw.add(
        ox.Quad(
            ox.NamedNode(r.session),
            ox.NamedNode(str(T.status)),
            ox.Literal("ok"),
            ox.DefaultGraph(),
        )
    )
    return "foreign", "the default graph", "the default graph"


FULL_TABLE: dict[str, Tamper] = {
    "content changed": changed,
    "content deleted": deleted,
    "content added": added,
    "a second value for one entity": second_value,
    "a literal changed after a checkpoint": literal_after_checkpoint,
    "memory text edited": memory_changed,
    "catalogue cost edited": catalogue_cost,
    "catalogue status edited": catalogue_status,
    "catalogue entry deleted": catalogue_deleted,
    "an unknown named graph added": unknown_graph,
    "a default-graph triple added": default_graph,
    "structure planted in a content graph": structure_planted,
}
assert all(TABLE[name] is FULL_TABLE[name] for name in TABLE if name in FULL_TABLE)


@pytest.mark.allow_nonconforming  # tampered on purpose
@pytest.mark.parametrize("case", sorted(FULL_TABLE))
def test_a_plain_verify_catches_each_tampering(tmp_path: Path, case: str) -> None:
    path = tmp_path / "store"
    store = open_store(path)
    try:
        recorded = record(store)
        assert verify(store).ok
        kind, subject, graph = FULL_TABLE[case](store, recorded)
    finally:
        set_default_store(None)
        store.close()

    done = trails_cli(path, "verify", "--no-checkpoint")
    assert done.returncode == 1, done.stdout + done.stderr
    line = f"{kind.upper():<9} {subject}"
    named = [ln for ln in done.stdout.splitlines() if ln.startswith(line)]
    assert named, done.stdout
    assert subject == graph or named[0].startswith(f"{line} in {graph}: "), named
    assert "FAILED" in done.stdout and "OK" not in done.stdout.split("FAILED")[-1]

    report = json.loads(trails_cli(path, "verify", "--no-checkpoint", "--json").stdout)
    assert not report["ok"] and report["mode"] == "full"
    found = [(f["kind"], f["subject"], f.get("session", f["subject"])) for f in report["findings"]]
    assert (kind, subject, graph) in found, found
    assert len(found) == 1, found  # the rest of the store reads as recorded


def test_a_recorded_store_is_accounted_for_and_says_how_fast(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = open_store(path)
    try:
        recorded = record(store)
    finally:
        set_default_store(None)
        store.close()
    done = trails_cli(path, "verify")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK. 2 sealed graph(s) recomputed" in done.stdout
    assert "read 2 session(s) and " in done.stdout and "sessions/s" in done.stdout
    assert "quads/s" in done.stdout
    assert "verifying [" not in done.stderr  # no progress bar when stderr is not a terminal
    assert "checkpoint recorded" in done.stdout
    again = json.loads(trails_cli(path, "verify", "--full", "--json").stdout)  # the same check
    assert again["ok"] and again["mode"] == "full" and again["graphs_checked"] == 2
    assert again["sessions_checked"] == 2 and again["quads_read"] > 100
    assert recorded.session in done.stdout or again["seals"] == 2


def test_an_erased_value_is_no_finding_and_its_receipt_is_listed(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = open_store(path)
    try:
        recorded = record(store)
        recorder = Recorder(store)
        install_sealer(recorder)
        receipt = erase(recorder, session=recorded.session, reason="GDPR art. 17", by=ALICE)
    finally:
        set_default_store(None)
        store.close()
    done = trails_cli(path, "verify")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ERASED    " in done.stdout and receipt.erasure in done.stdout
    assert (
        f"ACCOUNTED {recorded.session}: 4 content value(s) removed on record by {receipt.erasure}"
        in done.stdout
    )


def test_every_graph_trails_writes_is_of_a_known_kind(store: Store) -> None:
    """A store holding sessions, memory, a catalogue, an erasure, a checkpoint: no graph
    of it is foreign."""
    recorded = record(store)
    recorder = Recorder(store)
    install_sealer(recorder)
    erase(recorder, session=recorded.sample["session"], reason="art. 17", by=ALICE)
    report = verify(store)
    assert report.ok, report.findings
    record_checkpoint(
        recorder, mode="full", seals=report.seals, graphs=report.graphs_checked,
        verified=report.chain_tips, previous=None,
    )  # fmt: skip
    again = verify(store)
    assert again.ok, again.findings
    assert again.graphs_checked == report.graphs_checked and again.quads_read > report.quads_read


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_an_unsealed_receipt_graph_is_foreign(store: Store) -> None:
    record(store)
    graph = Minter().graph("erasure/forged")
    store.write([Quad(IRI("urn:trails:erasure:forged"), RDF.type, T.Erasure, graph)])
    report = verify(store)
    assert [(f.kind, f.subject) for f in report.findings] == [("foreign", graph)]
    assert "without a seal" in report.findings[0].detail


def test_awkward_text_reads_the_same_from_the_stream(tmp_path: Path) -> None:
    """Values full of escapes (quotes, backslashes, tabs, controls, astral characters) are
    decoded from the one-pass stream exactly as recorded: their digests match."""
    from trails.kernel import Context, capability, invoke

    @capability(id="awkward.echo")
    def echo(text: str) -> str:
        return text

    store = open_store(tmp_path / "store")
    try:
        recorder = Recorder(store)
        install_sealer(recorder)
        texts = [
            'a "quoted" \\ back\\slash',
            "tab\there\nline\r\x01\x7f",
            "é 𝄞 \u2028 it's",
            "\\u0041",
        ]
        with Context.open(ALICE, recorder=recorder) as ctx:
            for text in texts:
                invoke("awkward.echo", {"text": text}, ctx=ctx)
        report = verify(store)
        assert report.ok, report.findings
        assert report.content.values == 2 * len(texts) and report.quads_read > 0
    finally:
        store.close()
