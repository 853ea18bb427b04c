"""Content apart from structure, erasure with a sealed receipt, and migration of old stores.

Sessions are recorded through real events, ``invoke`` and ``memory.learn`` into an
on-disk pyoxigraph store, sealed as they end. Each session's content carries a
marker of its own, so a scan of the whole dataset and of the store's files shows
exactly whose content survived.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import trails.memory as memory
import trails.prov.builder as builder_module
from trails.cli import main
from trails.compliance.erasure import erase, list_erasures
from trails.compliance.holds import place_hold
from trails.compliance.migration import migrate
from trails.errors import ContentErased, UserError
from trails.evidence import verify
from trails.evidence.ledger import ledger_iri, seals_of_graph
from trails.evidence.seal import install_sealer
from trails.kernel import Context, capability, invoke
from trails.prov import (
    LLMCompleted,
    PlanRunEnded,
    PlanRunStarted,
    Recorder,
    SessionEnded,
    SessionStarted,
)
from trails.prov.content import content_graph, sha256_hex
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store import IRI, Literal, Quad, Store, open_store
from trails.testing import assert_conforms
from trails.testing.replay import ReplayLLM

ALICE = "did:example:alice"
BOB = "did:example:bob"


def marker(who: str, i: int) -> str:
    return f"PERSONAL-{who}-{i:03d}-a-sentence-long-enough-to-leave-the-quad-keys"


@capability(id="erasure.lookup", description="Look a customer up")
def lookup(ctx: Context, query: str) -> dict[str, str]:
    return {"found": query.replace("query", "record")}


def record_session(recorder: Recorder, principal: str, who: str, i: int) -> IRI:
    """One ended, sealed session: a run with a goal and answer, a completion, an
    invocation and a learned memory, each carrying ``marker(who, i)``."""
    text = marker(who, i)
    session = recorder.minter.session()
    now = datetime.now
    recorder.record(SessionStarted(session=session, principal=principal, started=now(UTC)))
    ctx = Context(principal=principal, session=session, recorder=recorder, parent=session)
    run = recorder.minter.activity()
    recorder.record(
        PlanRunStarted(
            session=session,
            activity=run,
            parent=session,
            principal=principal,
            strategy="react",
            goal=f"goal {text}",
            started=now(UTC),
        )
    )
    started = now(UTC)
    recorder.record(
        LLMCompleted(
            session=session,
            activity=recorder.minter.activity(),
            parent=run,
            principal=principal,
            provider="scripted",
            model="m1",
            started=started,
            ended=now(UTC),
            messages=[{"role": "user", "content": f"prompt {text}"}],
            request_hash=f"h-{who}-{i}",
            text=f"reply {text}",
            step=0,
        )
    )
    run_ctx = Context(principal=principal, session=session, recorder=recorder, parent=run)
    invoke("erasure.lookup", {"query": f"query {text}"}, ctx=run_ctx)
    memory.learn(f"memory {text}", scope="shared", ctx=ctx)
    recorder.record(
        PlanRunEnded(
            session=session,
            activity=run,
            ended=now(UTC),
            stop_reason="goal_achieved",
            answer=f"answer {text}",
        )
    )
    recorder.record(SessionEnded(session=session, ended=now(UTC)))
    return session


def store_bytes(path: Path) -> bytes:
    return b"".join(f.read_bytes() for f in sorted(path.rglob("*")) if f.is_file())


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[tuple[Store, Recorder, Path]]:
    path = tmp_path / "store"
    store = open_store(str(path))
    recorder = Recorder(store)
    install_sealer(recorder)
    yield store, recorder, path
    store.close()


def test_content_lives_apart_from_structure_and_reads_unchanged(
    disk: tuple[Store, Recorder, Path],
) -> None:
    store, recorder, _ = disk
    session = record_session(recorder, ALICE, "alice", 1)
    text = marker("alice", 1)
    dump = store.dump(format="nquads", graph=session) or b""
    assert text.encode() not in dump  # the sealed graph holds structure and digests only
    content = store.dump(format="nquads", graph=content_graph(session)) or b""
    assert content.count(text.encode()) >= 5  # goal, prompt, reply, input, output, answer
    assert sha256_hex(f"reply {text}").encode() in dump
    # readers find the content where it is: the pack, replay
    rows = list(
        store.query(
            (Path(__file__).parents[2] / "queries" / "session-io.rq").read_text(),
            {"session": session},
        )
    )
    assert any(text in str(r.get("value")) for r in rows)  # type: ignore[union-attr]
    llm = ReplayLLM.from_session(str(session), store=store)
    assert llm.adapter.recorded[0].text == f"reply {text}"
    assert verify(store).ok
    assert_conforms(store)


def test_erasing_a_data_subject_across_50_sessions_keeps_every_seal(
    disk: tuple[Store, Recorder, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    store, recorder, path = disk
    alice = [record_session(recorder, ALICE, "alice", i) for i in range(50)]
    bob = [record_session(recorder, BOB, "bob", i) for i in range(3)]
    hold = place_hold(recorder, str(alice[0]), reason="case 2025-17", by="did:example:dpo")
    heads = verify(store).heads
    store.close()
    assert marker("alice", 7).encode() in store_bytes(path)
    store = open_store(str(path))
    recorder = Recorder(store)
    install_sealer(recorder)

    receipt = erase(
        recorder, principal=ALICE, reason="GDPR art. 17 request #42", by="did:example:dpo"
    )

    # the held session (and the memory learned in it) were skipped, the hold named
    assert {s.target for s in receipt.skipped} >= {str(alice[0])}
    assert {s.hold.iri for s in receipt.skipped} == {hold.iri}
    assert all(s.hold.reason == "case 2025-17" for s in receipt.skipped)
    assert set(receipt.sessions) == {str(s) for s in alice[1:]}
    assert len(receipt.memories) == 49 and receipt.compacted
    # no content of theirs remains in any graph: a scan of the whole dataset
    dump = (store.dump(format="nquads") or b"").decode()
    for i in range(1, 50):
        assert marker("alice", i) not in dump, i
    # goal, prompt, reply, input, output, answer, memory text, memory.learn's input and output
    per = dump.count(marker("bob", 0))
    assert per == 9 and receipt.erased == 49 * per
    assert dump.count(marker("alice", 0)) == per  # held
    for i in range(3):
        assert dump.count(marker("bob", i)) == per  # another subject: untouched
    # nor in the store's files
    store.close()
    data = store_bytes(path)
    for i in range(1, 50):
        assert marker("alice", i).encode() not in data, i
    # what is kept was counted above through the store: the rewritten files' deeper levels
    # are LZ4-compressed, so a raw search can miss a text that is there
    store = open_store(str(path))
    try:
        # every seal verifies, the old heads are still in the ledger, the receipt is sealed
        report = verify(store, expect_heads=heads)
        assert report.ok, report.findings
        assert seals_of_graph(store, ledger_iri(Minter()), IRI(receipt.graph))
        assert [e.erasure for e in list_erasures(store)] == [receipt.erasure]
        assert any(
            "GDPR art. 17 request #42" in e and "did:example:dpo" in e for e in report.erasures
        )
        one = verify(store, session=alice[3])
        assert one.ok and len(one.erasures) == 1
        # the digests are kept; the receipt invalidates each erased entity in plain PROV
        digests = set(receipt.digests)
        assert sha256_hex(f"reply {marker('alice', 3)}") in digests
        invalidated = store.query(
            "SELECT ?e $g $a $by WHERE { GRAPH $g { ?e $by $a } }",
            {"g": IRI(receipt.graph), "a": IRI(receipt.erasure), "by": PROV.wasInvalidatedBy},
        )
        assert len(invalidated) == receipt.erased  # type: ignore[arg-type]
        # replay of an erased session fails closed, naming the step and the erasure
        with pytest.raises(ContentErased, match=r"step 0 .*erased by did:example:dpo.*#42"):
            ReplayLLM.from_session(str(alice[3]), store=store)
        assert ReplayLLM.from_session(str(bob[0]), store=store).adapter.recorded
        # the pack still answers for the erased session: structure without values
        rows = list(
            store.query(
                (Path(__file__).parents[2] / "queries" / "session-io.rq").read_text(),
                {"session": alice[3]},
            )
        )
        assert rows and all("value" not in r for r in rows)  # type: ignore[operator]
        assert_conforms(store)
    finally:
        store.close()
    # the command line says the same
    status = main(["--store", str(path), "verify"])
    out = capsys.readouterr().out
    assert status == 0 and "ERASED" in out and "GDPR art. 17 request #42" in out


def test_erase_by_digest_session_and_memory_through_the_cli(
    disk: tuple[Store, Recorder, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    store, recorder, path = disk
    a, b = (record_session(recorder, BOB, "bob", i) for i in range(2))
    learned = memory.learn(
        "memory PERSONAL-carol-000 with text long enough",
        scope="shared",
        ctx=Context(principal=BOB, session=b, recorder=recorder, parent=b),
    )
    digest = sha256_hex(f"reply {marker('bob', 0)}")
    store.close()
    status = main(
        [
            "--store",
            str(path),
            "erase",
            "--digest",
            digest,
            "--reason",
            "leaked key",
            "--by",
            "did:x",
        ]
    )
    out, err = capsys.readouterr()
    assert status == 0 and "erased 1 content value(s) from 1 session(s)" in out, err
    status = main(["--store", str(path), "erase", "--memory", learned.id, "--reason", "asked"])
    assert status == 0
    status = main(["--store", str(path), "erase", "--session", str(b), "--reason", "asked"])
    assert status == 0
    status = main(["--store", str(path), "erase", "--session", "urn:nope", "--reason", "x"])
    assert status == 2 and "is not a session" in capsys.readouterr().err
    status = main(["--store", str(path), "verify"])
    out = capsys.readouterr().out
    assert status == 0 and out.count("ERASED") == 3
    store = open_store(str(path))
    try:
        dump = (store.dump(format="nquads") or b"").decode()
        assert f"reply {marker('bob', 0)}" not in dump
        assert f"goal {marker('bob', 0)}" in dump  # only the digest's value went
        assert "PERSONAL-carol-000" not in dump
        # a session's erasure takes its content; its memories go by subject or by id
        left = [line for line in dump.splitlines() if marker("bob", 1) in line]
        assert len(left) == 1 and "memory/shared:content" in left[0]
        with pytest.raises(ContentErased, match="the completion of step 0"):
            ReplayLLM.from_session(str(a), store=store)
        assert_conforms(store)
    finally:
        store.close()


def test_erase_refuses_bad_input(disk: tuple[Store, Recorder, Path]) -> None:
    _, recorder, _ = disk
    with pytest.raises(UserError, match="say what to erase"):
        erase(recorder, reason="x", by="did:x")
    with pytest.raises(UserError, match="needs a --reason"):
        erase(recorder, principal=ALICE, reason=" ", by="did:x")
    with pytest.raises(UserError, match="not a sha256"):
        erase(recorder, digest="abc", reason="x", by="did:x")


def _old_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Record the way trails did before content was kept apart: content in the graph."""
    monkeypatch.setattr(builder_module, "content_graph", lambda graph: IRI(str(graph)))


def test_a_store_written_the_old_way_stays_verifiable_and_migrates(
    disk: tuple[Store, Recorder, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store, recorder, path = disk
    with monkeypatch.context() as m:
        _old_layout(m)
        sessions = [record_session(recorder, ALICE, "alice", i) for i in range(3)]
    # strip the digests the old layout did not write (goal, answer)
    for prop in (T.goalSha256, T.answerSha256):
        for g in sessions:
            rows = store.query(
                "SELECT ?s ?o $g $p WHERE { GRAPH $g { ?s $p ?o } }", {"g": g, "p": prop}
            )
            store.write([], remove=[Quad(r["s"], prop, r["o"], g) for r in rows])  # type: ignore[arg-type,index]
    for g in sessions:  # sealed again, as the old version had sealed them
        install_sealer(recorder).seal(recorder, g)
    assert marker("alice", 1).encode() in (store.dump(format="nquads", graph=sessions[1]) or b"")
    # readable and verifiable as it is
    assert verify(store).ok
    assert ReplayLLM.from_session(str(sessions[1]), store=store).adapter.recorded[0].text
    with pytest.raises(UserError, match="run `trails migrate` first"):
        erase(recorder, session=str(sessions[1]), reason="x", by="did:x")
    # a graph altered since its seal is not migrated (no fresh seal over tampering)
    store.write([Quad(sessions[2], T.status, Literal("forged"), sessions[2])])
    store.close()
    status = main(["--store", str(path), "migrate", "--by", "did:example:ops"])
    out = capsys.readouterr().out
    assert status == 1 and f"NOT MIGRATED {sessions[2]}" in out and "moved" in out
    store = open_store(str(path))
    try:
        for g in sessions[:2]:
            assert marker("alice", sessions.index(g)).encode() not in (
                store.dump(format="nquads", graph=g) or b""
            )
            assert store.query("ASK { GRAPH $g { ?s $p ?o } }", {"g": g, "p": T.goalSha256})
        report = verify(store)
        assert [f.subject for f in report.findings] == [str(sessions[2])]  # the forgery only
        seals = seals_of_graph(store, ledger_iri(Minter()), sessions[0])
        # its end seal, the re-seal after the digests were stripped, the migration's revision
        assert len(seals) == 3 and sum(1 for s in seals if s.revision_of) == 2
        assert ReplayLLM.from_session(str(sessions[0]), store=store).adapter.recorded[0].text
        recorder = Recorder(store)
        install_sealer(recorder)
        again = migrate(recorder, by="did:example:ops")
        assert again.activity is None and again.refused  # nothing more moved; forgery named
        receipt = erase(recorder, session=str(sessions[0]), reason="asked", by="did:x")
        assert receipt.erased == 8  # no memory text: memories are erased with their subject
        store.write([], remove=[Quad(sessions[2], T.status, Literal("forged"), sessions[2])])
        assert verify(store).ok
    finally:
        store.close()
