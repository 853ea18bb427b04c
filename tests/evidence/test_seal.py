"""Seals and verification: canonical hashing, the chain, tampering caught, late writes resealed."""

from __future__ import annotations

import base64
from pathlib import Path

import pyoxigraph as ox  # the reference RDFC-1.0 implementation, for the canonical-form test
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from tests.known_store import Fixture, build

from trails.errors import SessionError
from trails.evidence.canonical import canonical_lines, digest_lines, graph_digest
from trails.evidence.ledger import ledger_iri, read_seals
from trails.evidence.seal import install_sealer
from trails.evidence.verify import verify
from trails.kernel import Context
from trails.prov import CapabilityInvoked, Minter, Recorder, SessionEnded
from trails.prov.content import content_graph
from trails.store import IRI, Literal, Quad, Solutions, Store, instant

LEDGER = ledger_iri(Minter())


def kinds(store: Store, **kw: object) -> list[tuple[str, str]]:
    return [(f.kind, f.subject) for f in verify(store, **kw).findings]  # type: ignore[arg-type]


def one_literal(store: Store, graph: IRI) -> Quad:
    rows = store.query(
        "SELECT ?s ?p ?o $g WHERE { GRAPH $g { ?s ?p ?o FILTER(isLiteral(?o)) } } LIMIT 1",
        {"g": graph},
    )
    assert isinstance(rows, Solutions)
    s, p, o, _ = rows.rows[0]
    return Quad(s, p, o, graph)  # type: ignore[arg-type]


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_canonical_form_matches_rdfc_1_0_for_graphs_without_blank_nodes(store: Store) -> None:
    g = IRI("urn:trails:session:c")
    tricky = ['a\tb\x01c"d\\e\nf\rg\x7fé\x08\x0c', "plain", "ünï €"]
    quads = [Quad(IRI(f"urn:s{i}"), IRI("urn:p"), Literal(v), g) for i, v in enumerate(tricky)]
    quads.append(Quad(IRI("urn:s"), IRI("urn:p"), Literal("x", language="EN-us"), g))
    quads.append(
        Quad(
            IRI("urn:s"),
            IRI("urn:q"),
            Literal("2025-03-01T10:00:00.100Z", "http://www.w3.org/2001/XMLSchema#dateTime"),
            g,
        )
    )
    store.write(quads)
    rows = store.query("SELECT ?s ?p ?o WHERE { GRAPH <urn:trails:session:c> { ?s ?p ?o } }")
    assert isinstance(rows, Solutions)
    ours = canonical_lines(rows.rows, g)
    dataset = ox.Dataset(ox.parse(store.dump(format="nquads"), format=ox.RdfFormat.N_QUADS))
    dataset.canonicalize(ox.CanonicalizationAlgorithm.RDFC_1_0)
    reference = (
        ox.serialize(dataset, format=ox.RdfFormat.N_QUADS).decode().splitlines(keepends=True)
    )
    assert ours == sorted(reference)


@pytest.mark.allow_nonconforming  # arbitrary quads written into a session graph
def test_a_session_sealed_from_what_was_written_hashes_as_the_store_holds_it(
    store: Store,
) -> None:
    """The sealer hashes a session it saw start from the quads it saw written (with
    the canonical text of repeating terms kept between seals): the same hash as
    reading the graph back, for literals of every kind, across sessions."""
    recorder = Recorder(store)
    install_sealer(recorder)
    minter = recorder.minter
    xsd = "http://www.w3.org/2001/XMLSchema#"
    for n in range(3):
        ctx = Context.open("did:local:alice", recorder=recorder)
        g = ctx.session
        odd = [
            Literal('a\tb\x01c"d\\e\nf\rg\x7fé'),
            Literal("x" * 100),  # long: never kept between seals
            Literal("x", language="en-us"),
            Literal("2025-03-01T10:00:00.100+00:00", xsd + "dateTime"),  # normalised
            Literal("1", xsd + "boolean"),
            Literal("true", xsd + "boolean"),  # the same canonical line as "1"
            Literal("007", xsd + "integer"),
            Literal(f"run {n}"),
        ]
        recorder.write_quads(
            [Quad(IRI(f"urn:s{i}"), IRI("urn:p"), o, g) for i, o in enumerate(odd)]
            + [Quad(IRI("urn:s0"), IRI("urn:q"), IRI("urn:s1"), g)]
        )
        ctx.close()
        [seal] = [s for s in read_seals(store, ledger_iri(minter)) if s.graph == g]
        assert (seal.graph_hash, seal.quad_count) == graph_digest(store, g)
    assert verify(store).ok


def test_sessions_are_sealed_when_they_end_in_a_chain(fx: Fixture) -> None:
    seals = read_seals(fx.store, LEDGER)
    assert [s.graph for s in seals] == [fx.sessions[k] for k in "ABC"]
    for s in seals:
        assert (s.graph_hash, s.quad_count) == graph_digest(fx.store, s.graph)
    report = verify(fx.store)
    assert report.ok and report.graphs_checked == 3 and report.seals == 3
    assert report.open_sessions == [fx.sessions["D"]]
    assert report.head == seals[-1].seal_hash


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_changing_one_literal_is_caught(fx: Fixture) -> None:
    q = one_literal(fx.store, fx.sessions["B"])
    fx.store.write(
        [q._replace(object=Literal(q.object.value + "!", q.object.datatype))], remove=[q]
    )  # type: ignore[union-attr]
    assert kinds(fx.store) == [("altered", fx.sessions["B"])]


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_deleting_a_quad_is_caught(fx: Fixture) -> None:
    _, before = graph_digest(fx.store, fx.sessions["A"])
    fx.store.write([], remove=[one_literal(fx.store, fx.sessions["A"])])
    report = verify(fx.store)
    assert [(f.kind, f.subject) for f in report.findings] == [("altered", fx.sessions["A"])]
    assert f"with {before} quads" in report.findings[0].detail
    assert f"now {before - 1} quads" in report.findings[0].detail


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_adding_a_quad_is_caught(fx: Fixture) -> None:
    g = fx.sessions["C"]
    fx.store.write([Quad(IRI("urn:x"), IRI("urn:p"), Literal("forged"), g)])
    assert kinds(fx.store) == [("altered", g)]


def test_dropping_a_graph_is_caught(fx: Fixture) -> None:
    fx.store.clear(fx.sessions["A"])
    fx.store.clear(content_graph(fx.sessions["A"]))  # its content goes with it
    assert kinds(fx.store) == [("missing", fx.sessions["A"])]


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_an_edited_seal_breaks_the_chain(fx: Fixture) -> None:
    seal = read_seals(fx.store, LEDGER)[1]
    old = Quad(
        seal.iri,
        IRI("https://w3id.org/trails/ns#quadCount"),
        Literal(str(seal.quad_count), "http://www.w3.org/2001/XMLSchema#integer"),
        LEDGER,
    )
    fx.store.write([old._replace(object=Literal("999", old.object.datatype))], remove=[old])  # type: ignore[union-attr]
    found = kinds(fx.store)
    assert ("chain", f"seal 2 ({seal.iri})") in found
    assert ("altered", fx.sessions["B"]) in found  # the graph no longer matches what the seal says


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_a_removed_seal_breaks_the_chain(fx: Fixture) -> None:
    seal = read_seals(fx.store, LEDGER)[0]
    rows = fx.store.query("SELECT ?p ?o $s WHERE { GRAPH ?g { $s ?p ?o } }", {"s": seal.iri})
    assert isinstance(rows, Solutions)
    fx.store.write([], remove=[Quad(seal.iri, p, o, LEDGER) for p, o, _ in rows.rows])  # type: ignore[misc]
    found = kinds(fx.store)
    assert ("unsealed", fx.sessions["A"]) in found
    assert any(kind == "chain" for kind, _ in found)


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_an_unsealed_ended_session_is_a_finding(fx: Fixture) -> None:
    plain = Minter().session("never-sealed")
    fx.store.write(
        [
            Quad(
                plain,
                IRI("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
                IRI("https://w3id.org/trails/ns#Session"),
                plain,
            )
        ]
    )
    Recorder(fx.store).record(SessionEnded(session=plain, ended=fx.clock()))  # no sealer here
    assert kinds(fx.store) == [("unsealed", plain)]


def test_late_writes_are_resealed_not_silent(fx: Fixture) -> None:
    a = fx.sessions["A"]
    event = CapabilityInvoked(
        session=a,
        activity=fx.recorder.minter.activity(),
        parent=a,
        principal="did:local:alice",
        capability_id="search",
        started=fx.clock(),
        ended=fx.clock(),
        status="ok",
        output=["late"],
    )
    fx.recorder.record(event)  # persist-after-close: the same recorder reseals
    fresh = Recorder(fx.store)
    install_sealer(fresh)
    fresh.record(event.model_copy(update={"activity": fresh.minter.activity()}))  # a later process
    seals = read_seals(fx.store, LEDGER)
    mine = sorted((s for s in seals if s.graph == a), key=lambda s: instant(s.at))
    assert len(mine) == 3
    assert mine[1].revision_of == mine[0].iri and mine[2].revision_of == mine[1].iri
    assert verify(fx.store).ok


def test_verify_one_session(fx: Fixture) -> None:
    fx.store.clear(fx.sessions["A"])
    fx.store.clear(content_graph(fx.sessions["A"]))  # its content goes with it
    assert verify(fx.store, session=fx.sessions["B"]).ok
    assert not verify(fx.store, session=fx.sessions["A"]).ok
    with pytest.raises(SessionError, match="neither a session graph nor sealed"):
        verify(fx.store, session=IRI("urn:trails:session:nope"))


def test_ended_sessions_without_a_ledger_are_unsealed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    fx = build(store, monkeypatch, seal=False)
    assert {k for k, _ in kinds(store)} == {"unsealed"}
    assert [g for _, g in kinds(store)] == sorted(fx.sessions[k] for k in "ABC")


def test_signed_seals_verify_and_a_wrong_key_is_caught(
    store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = Ed25519PrivateKey.generate()
    pem = tmp_path / "seal.pem"
    pem.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    (tmp_path / "trails.toml").write_text(f'[audit]\nsigning_key = "{pem.name}"\n')
    monkeypatch.chdir(tmp_path)
    build(store, monkeypatch)
    report = verify(store, public_key=key.public_key())
    assert report.ok and report.signed == 3
    other = Ed25519PrivateKey.generate().public_key()
    assert [f.kind for f in verify(store, public_key=other).findings] == ["signature"] * 3
    raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    recorded = {s.signing_key for s in read_seals(store, LEDGER)}
    assert recorded == {base64.b64encode(raw).decode()}  # the recorded key is the signer's


def test_a_language_tag_is_hashed_as_the_store_holds_it(store: Store) -> None:
    """Language tags are case-insensitive and the store lower-cases them: a seal computed
    from the quads as written (version 2) equals the hash of what the store holds."""
    graph = IRI("urn:trails:session:lang")
    written = [Quad(IRI("urn:x:s"), IRI("urn:x:p"), Literal("colour", language="EN-gb"), graph)]
    store.write(written)
    as_written = canonical_lines(
        [(q.subject, q.predicate, q.object) for q in written], graph, version=2
    )
    assert as_written == ['<urn:x:s> <urn:x:p> "colour"@en-gb <urn:trails:session:lang> .\n']
    assert graph_digest(store, graph, version=2) == digest_lines(as_written)
    held = store.query("SELECT ?s ?p ?o $g WHERE { GRAPH $g { ?s ?p ?o } }", {"g": graph})
    assert isinstance(held, Solutions)
    assert canonical_lines([tuple(r[:3]) for r in held.rows], graph, version=2) == as_written
