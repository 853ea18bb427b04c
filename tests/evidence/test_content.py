"""Content is evidence: each content value is checked against the digest its sealed graph keeps.

A real on-disk store is recorded through ``invoke`` and ``memory.learn`` with the sealer
installed, then tampered with through the ``Store`` API the way someone with write access
would (no pyoxigraph), and the real ``trails`` CLI verifies it in a subprocess: every case
of the tampering table exits 1 with a finding naming the entity and its session. Erasure,
retention and ``record_content = "hash"`` leave content absent on purpose: they verify.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import trails.memory as memory
from trails.compliance.erasure import erase
from trails.evidence.checkpoint import record_checkpoint
from trails.evidence.content import (
    ContentChecker,
    ContentTally,
    content_entity,
    read_accounts,
    structure_from_ntriples,
    value_digest,
)
from trails.evidence.findings import Finding
from trails.evidence.ledger import ledger_iri, seals_of_graph
from trails.evidence.seal import install_sealer
from trails.evidence.verify import verify
from trails.kernel import Context, all_capabilities, capability, invoke
from trails.prov import Recorder
from trails.prov.content import content_graph
from trails.prov.vocab import PROV, RDF, T
from trails.store import IRI, Literal, Quad, Solutions, Store, open_store, set_default_store
from trails.testing.conformance import record_sample_session

ALICE = "did:local:alice"


def _register_triage() -> None:
    """The ``triage`` capability, registered by the test that records with it (the suite
    restores the registry after each test, so a module-level capability would crowd every
    later planner's prompt)."""
    if "triage" in {spec.id for spec in all_capabilities()}:
        return

    @capability(id="triage", description="File a ticket with a priority.")
    def triage(priority: str) -> str:
        return f"filed as {priority}"


@dataclass
class Recorded:
    """What ``record`` wrote: the session, its capability input entity, the memory."""

    session: IRI
    input: IRI
    memory: IRI
    memory_graph: IRI
    sample: dict[str, IRI]


def record(store: Store, *, content: str = "full") -> Recorded:
    """A sealed session that files an urgent ticket and learns a memory, and a sample
    session holding every kind of event (goals and answers too), both ended and sealed."""
    set_default_store(store)
    _register_triage()
    recorder = Recorder(store, content=content)
    install_sealer(recorder)
    with Context.open(ALICE, recorder=recorder) as ctx:
        invoke("triage", {"priority": "urgent"}, ctx=ctx)
        learned = memory.learn("the CFO prefers e-mail", scope="shared", ctx=ctx)
        session = IRI.trusted(str(ctx.session))
    sample = record_sample_session(recorder)
    return Recorded(
        session=session,
        input=input_of(store, session),
        memory=IRI.trusted(learned.id),
        memory_graph=memory_graph_of(store, IRI.trusted(learned.id)),
        sample=sample,
    )


def input_of(store: Store, session: IRI) -> IRI:
    """The input entity of the session's ``triage`` call."""
    rows = _rows(
        store,
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?a $g WHERE { GRAPH $g "
        '{ ?a trails:capability ?c . ?c trails:capabilityId "triage" } }',
        {"g": session},
    )
    (activity,) = [str(r["a"]) for r in rows]
    return IRI.trusted(f"{activity}:input")


def memory_graph_of(store: Store, memory_iri: IRI) -> IRI:
    graphs = _rows(
        store,
        "SELECT ?g $m WHERE { GRAPH ?g { $m a <https://w3id.org/trails/ns#Memory> } }",
        {"m": memory_iri},
    )
    return IRI.trusted(str(next(iter(graphs))["g"]))


def _rows(store: Store, sparql: str, params: dict[str, IRI] | None = None) -> Solutions:
    result = store.query(sparql, params)
    assert isinstance(result, Solutions)
    return result


def value_of(store: Store, graph: IRI, entity: IRI, prop: IRI = PROV.value) -> Quad:
    """The one content quad of ``entity`` in ``graph``'s content graph."""
    cg = content_graph(graph)
    rows = list(_rows(store, "SELECT ?o $g $s $p WHERE { GRAPH $g { $s $p ?o } }",
                      {"g": cg, "s": entity, "p": prop}))  # fmt: skip
    assert len(rows) == 1, rows
    return Quad(entity, prop, rows[0]["o"], cg)


def replace_text(store: Store, quad: Quad, old: str, new: str) -> None:
    assert isinstance(quad.object, Literal) and old in quad.object.value
    forged = Quad(
        quad.subject, quad.predicate, Literal(quad.object.value.replace(old, new)), quad.graph
    )
    store.write([forged], remove=[quad])


# -- the tampering table: (what is done, finding kind, subject, graph it names) ----------------

Tamper = Callable[[Store, Recorded], tuple[str, str, str]]


def changed(store: Store, r: Recorded) -> tuple[str, str, str]:
    replace_text(store, value_of(store, r.session, r.input), "urgent", "routine")
    return "content-altered", r.input, r.session


def deleted(store: Store, r: Recorded) -> tuple[str, str, str]:
    store.write([], remove=[value_of(store, r.session, r.input)])
    return "content-missing", r.input, r.session


def added(store: Store, r: Recorded) -> tuple[str, str, str]:
    forged = IRI("urn:trails:entity:forged")
    store.write(
        [Quad(forged, PROV.value, Literal("approved by the CFO"), content_graph(r.session))]
    )
    return "content-foreign", forged, r.session


def second_value(store: Store, r: Recorded) -> tuple[str, str, str]:
    store.write(
        [Quad(r.input, PROV.value, Literal('{"priority":"routine"}'), content_graph(r.session))]
    )
    return "content-foreign", r.input, r.session


def memory_changed(store: Store, r: Recorded) -> tuple[str, str, str]:
    replace_text(store, value_of(store, r.memory_graph, r.memory), "e-mail", "phone")
    return "content-altered", r.memory, r.memory_graph


def structure_planted(store: Store, r: Recorded) -> tuple[str, str, str]:
    forged = IRI("urn:trails:activity:forged")
    store.write([Quad(forged, RDF.type, PROV.Activity, content_graph(r.session)),
                 Quad(forged, PROV.wasAssociatedWith, IRI(ALICE), content_graph(r.session))])  # fmt: skip
    return "content-foreign", forged, r.session


def ghost_content_graph(store: Store, r: Recorded) -> tuple[str, str, str]:
    ghost = IRI("urn:trails:session:ghost")
    store.write([Quad(ghost, RDF.type, T.Session, content_graph(ghost))])
    return "content-foreign", ghost, ghost


def goal_changed(store: Store, r: Recorded) -> tuple[str, str, str]:
    session, run = r.sample["session"], r.sample["run"]
    replace_text(store, value_of(store, session, run, T.goal), "2 and 3", "2 and 4")
    return "content-altered", content_entity(run, T.goal), session


def tagged(store: Store, r: Recorded) -> tuple[str, str, str]:
    quad = value_of(store, r.session, r.input)
    assert isinstance(quad.object, Literal)
    store.write([Quad(r.input, PROV.value, Literal(quad.object.value, language="en"), quad.graph)],
                remove=[quad])  # fmt: skip
    return "content-altered", r.input, r.session


TABLE: dict[str, Tamper] = {
    "content changed": changed,
    "content deleted": deleted,
    "content added": added,
    "a second value for one entity": second_value,
    "memory text changed": memory_changed,
    "structure planted in a content graph": structure_planted,
    "structure in a content graph of no graph": ghost_content_graph,
    "a goal changed": goal_changed,
    "the same text, now language-tagged": tagged,
}


def trails_cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).with_name("trails"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    return subprocess.run(
        [exe, "--store", str(store), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=store.parent,
        check=False,
    )


@pytest.mark.allow_nonconforming  # tampered on purpose
@pytest.mark.parametrize("case", sorted(TABLE))
def test_the_cli_catches_each_content_tampering(tmp_path: Path, case: str) -> None:
    path = tmp_path / "store"
    store = open_store(path)
    try:
        recorded = record(store)
        assert verify(store).ok
        kind, subject, graph = TABLE[case](store, recorded)
    finally:
        set_default_store(None)
        store.close()

    done = trails_cli(path, "verify", "--no-checkpoint")
    assert done.returncode == 1, done.stdout + done.stderr
    line = f"{kind.upper()} {subject}"
    named = [ln for ln in done.stdout.splitlines() if ln.startswith(line)]
    assert named, done.stdout
    assert subject == graph or named[0].startswith(f"{line} in {graph}: "), named
    assert "FAILED" in done.stdout

    report = json.loads(trails_cli(path, "verify", "--no-checkpoint", "--json").stdout)
    assert not report["ok"]
    assert (kind, subject, graph) in [
        (f["kind"], f["subject"], f.get("session")) for f in report["findings"]
    ]
    if graph == recorded.session:  # one session's check covers its content
        one = trails_cli(path, "verify", "--session", recorded.session)
        assert one.returncode == 1 and line in one.stdout, one.stdout


def test_a_recorded_store_verifies_clean_and_says_what_it_checked(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = open_store(path)
    try:
        recorded = record(store)
        report = verify(store)
        assert report.ok, report.findings
        # the two sessions and the memory graph, every value recomputed
        assert report.content.graphs == 3
        assert report.content.values >= 12 and report.content.hash_only == 0
        # triage's input and output, memory.learn's (the memory's text is in its own graph)
        assert verify(store, session=recorded.session).content.values == 4
    finally:
        set_default_store(None)
        store.close()
    done = trails_cli(path, "verify", "--no-checkpoint")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "content value(s) of 3 graph(s) checked against their digests" in done.stdout


def test_the_recomputation_is_the_recorders(store: Store) -> None:
    """Every value of every kind the sample session records hashes to its recorded digest."""
    recorded = record(store)
    digests = _rows(
        store,
        "SELECT ?s ?p ?o ?d WHERE { GRAPH ?cg { ?s ?p ?o } GRAPH ?g { ?s ?dp ?d } "
        "VALUES (?p ?dp) { (<http://www.w3.org/ns/prov#value> <https://w3id.org/trails/ns#sha256>) "
        "(<https://w3id.org/trails/ns#goal> <https://w3id.org/trails/ns#goalSha256>) "
        "(<https://w3id.org/trails/ns#answer> <https://w3id.org/trails/ns#answerSha256>) } }",
    )
    kinds = {str(row["p"]) for row in digests}
    assert {str(PROV.value), str(T.goal)} <= kinds
    for row in digests:
        assert value_digest(str(row["p"]), row["o"].value) == row["d"].value  # type: ignore[union-attr]
    assert recorded.sample["session"] != recorded.session


@pytest.mark.allow_nonconforming  # tampered on purpose
@pytest.mark.parametrize(
    "case",
    ["content changed", "content deleted", "a second value for one entity", "memory text changed"],
)
def test_the_check_goes_through_the_store_protocol(any_store: Store, case: str) -> None:
    """The same findings on the embedded store and on a SPARQL server."""
    recorded = record(any_store)
    assert verify(any_store).ok
    kind, subject, graph = TABLE[case](any_store, recorded)
    report = verify(any_store)
    assert [(f.kind, f.subject, f.session) for f in report.findings] == [(kind, subject, graph)]


# -- content absent on purpose ----------------------------------------------------------------


def test_erased_content_is_listed_with_its_sealed_receipt_not_a_finding(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = open_store(path)
    try:
        recorded = record(store)
        recorder = Recorder(store)
        install_sealer(recorder)
        receipt = erase(recorder, session=recorded.session, reason="GDPR art. 17", by=ALICE)
        assert receipt.erased == 4 and receipt.seal is not None
        report = verify(store)
        assert report.ok, report.findings
        assert report.content.accounted == {(recorded.session, receipt.erasure): 4}
        one = verify(store, session=recorded.session)
        assert one.ok and one.content.accounted == {(recorded.session, receipt.erasure): 4}
    finally:
        set_default_store(None)
        store.close()
    done = trails_cli(path, "verify", "--no-checkpoint")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        f"ACCOUNTED {recorded.session}: 4 content value(s) removed on record by {receipt.erasure}"
        in done.stdout
    )


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_an_erased_value_put_back_is_foreign(store: Store) -> None:
    recorded = record(store)
    text = value_of(store, recorded.session, recorded.input)
    recorder = Recorder(store)
    install_sealer(recorder)
    erase(recorder, session=recorded.session, reason="GDPR art. 17", by=ALICE)
    store.write([text])
    report = verify(store)
    assert [(f.kind, f.subject) for f in report.findings] == [("content-foreign", recorded.input)]
    assert "erasure" in report.findings[0].detail


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_a_receipt_counts_only_when_it_is_sealed(store: Store) -> None:
    recorded = record(store)
    recorder = Recorder(store)
    install_sealer(recorder)
    erase(recorder, session=recorded.session, reason="no seal", by=ALICE, seal=False)
    report = verify(store)
    missing = sorted(f.subject for f in report.findings if f.kind == "content-missing")
    assert recorded.input in missing and len(missing) == 4
    content = [f for f in report.findings if f.kind != "foreign"]
    assert all(f.session == recorded.session for f in content)
    assert all("its receipt is not sealed" in f.detail for f in content)
    # and the receipt's graph itself is accounted for by nothing: foreign
    (foreign,) = [f for f in report.findings if f.kind == "foreign"]
    assert "erasure/" in foreign.subject and "without a seal" in foreign.detail
    assert not verify(store, session=recorded.session).ok


def test_a_receipt_sealed_while_verification_runs_counts(store: Store) -> None:
    """An erasure removes, then seals its receipt: a verification that read the receipts
    in between asks again before calling the values missing."""
    recorded = record(store)
    recorder = Recorder(store)
    sealer = install_sealer(recorder)
    receipt = erase(recorder, session=recorded.session, reason="GDPR", by=ALICE, seal=False)
    ledger = ledger_iri(recorder.minter)

    def sealed_now(graph: str) -> bool:
        return bool(seals_of_graph(store, ledger, IRI.trusted(graph)))

    accounts = read_accounts(store, sealed_now, recheck=sealed_now)  # read before the seal
    assert recorded.input in accounts.pending and not accounts.erased
    sealer.seal(recorder, IRI(receipt.graph))  # the erasure's last step
    findings: list[Finding] = []
    tally = ContentTally()
    ContentChecker(accounts, findings, tally).check(store, recorded.session, sealed=True)
    assert findings == []
    assert tally.accounted == {(recorded.session, receipt.erasure): 4}


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_an_edited_receipt_is_altered(store: Store) -> None:
    recorded = record(store)
    recorder = Recorder(store)
    install_sealer(recorder)
    receipt = erase(recorder, session=recorded.session, reason="GDPR art. 17", by=ALICE)
    forged = IRI("urn:trails:entity:forged")
    store.write([Quad(forged, PROV.wasInvalidatedBy, IRI(receipt.erasure), IRI(receipt.graph))])
    report = verify(store, session=recorded.session)
    assert ("altered", receipt.graph) in [(f.kind, f.subject) for f in report.findings]


def test_a_hash_only_store_verifies_clean(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = open_store(path)
    try:
        recorded = record(store, content="hash")
        report = verify(store)
        assert report.ok, report.findings
        assert report.content.hash_only >= 10  # the capability's input and output, prompts ...
        assert verify(store, session=recorded.session).ok
    finally:
        set_default_store(None)
        store.close()
    done = trails_cli(path, "verify", "--no-checkpoint")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "recorded as a digest alone" in done.stdout


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_in_a_hash_only_store_what_was_kept_is_still_checked(store: Store) -> None:
    """Goals, answers and memory text are kept whatever the policy: deleting one is missing,
    and a value planted on a hash-only entity is foreign."""
    recorded = record(store, content="hash")
    run = recorded.sample["run"]
    store.write([], remove=[value_of(store, recorded.sample["session"], run, T.goal)])
    store.write([Quad(recorded.input, PROV.value, Literal('{"priority":"urgent"}'),
                      content_graph(recorded.session))])  # fmt: skip
    found = sorted((f.kind, f.subject) for f in verify(store).findings)
    assert found == [
        ("content-foreign", recorded.input),
        ("content-missing", content_entity(run, T.goal)),
    ]


# -- the quick mode and the default ---------------------------------------------------------


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_the_quick_mode_reads_new_content_and_the_default_reads_all(tmp_path: Path) -> None:
    """A checkpoint vouches for nothing: ``--quick`` reads the content of what was sealed
    since it (and says what it left), a plain ``trails verify`` reads every value."""
    path = tmp_path / "store"
    store = open_store(path)
    try:
        recorded = record(store)
        recorder = Recorder(store)
        install_sealer(recorder)
        full = verify(store)
        record_checkpoint(recorder, mode=full.mode, seals=full.seals, graphs=full.graphs_checked,
                          verified=full.chain_tips, previous=None)  # fmt: skip
        with Context.open(ALICE, recorder=recorder) as ctx:
            invoke("triage", {"priority": "urgent"}, ctx=ctx)
            new = IRI.trusted(str(ctx.session))
        quick = verify(store, quick=True)
        assert quick.ok and quick.mode == "quick" and quick.graphs_checked == 1
        assert quick.content.graphs == 1 and quick.not_rechecked == 2
        fresh = input_of(store, new)
        replace_text(store, value_of(store, new, fresh), "urgent", "routine")  # sealed since
        changed(store, recorded)  # verified before: not read by the quick mode
        found = sorted((f.kind, f.subject) for f in verify(store, quick=True).findings)
        assert found == [("content-altered", fresh)]
        found = sorted((f.kind, f.subject) for f in verify(store).findings)
        assert found == sorted([("content-altered", fresh), ("content-altered", recorded.input)])
    finally:
        set_default_store(None)
        store.close()
    done = trails_cli(path, "verify")  # the default: the full check
    assert done.returncode == 1, done.stdout
    assert f"CONTENT-ALTERED {recorded.input} in {recorded.session}: " in done.stdout
    quick_run = trails_cli(path, "verify", "--quick")
    assert quick_run.returncode == 1 and "NOT RECHECKED: 2 graph(s)" in quick_run.stdout


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_full_reads_every_value_of_graphs_verified_before(store: Store) -> None:
    recorded = record(store)
    recorder = Recorder(store)
    install_sealer(recorder)
    full = verify(store)
    record_checkpoint(recorder, mode=full.mode, seals=full.seals, graphs=full.graphs_checked,
                      verified=full.chain_tips, previous=None)  # fmt: skip
    changed(store, recorded)
    assert [(f.kind, f.subject) for f in verify(store).findings] == [
        ("content-altered", recorded.input)
    ]


def test_digests_read_from_the_dump_are_the_digests_the_query_reads(store: Store) -> None:
    """The embedded store's full verification takes a graph's digests from the dump that
    hashed it; what it leaves to a query (content inside the graph, an odd digest) it says."""
    recorded = record(store)
    data = store.dump(format="ntriples", graph=recorded.session)
    assert isinstance(data, bytes)
    read = structure_from_ntriples(data)
    assert read is not None
    queried = _rows(
        store,
        "SELECT ?s ?p ?o $g WHERE { GRAPH $g { ?s ?p ?o } "
        "FILTER(?p IN (<https://w3id.org/trails/ns#sha256>, <https://w3id.org/trails/ns#goalSha256>,"
        " <https://w3id.org/trails/ns#answerSha256>, <https://w3id.org/trails/ns#contentPolicy>)) }",
        {"g": recorded.session},
    )
    assert sorted(read) == sorted((r["s"], r["p"], r["o"]) for r in queried)
    assert len(read) == 4
    inline = b'<urn:x> <http://www.w3.org/ns/prov#value> "text" .\n'
    typed = b'<urn:x> <https://w3id.org/trails/ns#sha256> "ab"^^<urn:type> .\n'
    assert structure_from_ntriples(data + inline) is None
    assert structure_from_ntriples(data + typed) is None
