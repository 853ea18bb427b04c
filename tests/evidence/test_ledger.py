"""The ledger: end and seal in one write, per-writer chains, keys, heads, and the tampering table.

Every test records through real ``invoke`` calls and a real store (the
fixture of ``tests/known_store.py`` or ``Context.open``), tampers the way
an attacker with write access to the store would, and checks what ``verify``
reports. The exit codes are checked through the real ``trails`` console script.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from tests.known_store import Fixture, build

import trails.evidence.ledger as ledger_module
from trails.catalogue.entries import catalogue_iri, existing_entry
from trails.errors import StoreError
from trails.evidence.canonical import graph_digest
from trails.evidence.ledger import (
    SealRecord,
    latest_of,
    ledger_iri,
    read_ledger,
    read_seals,
    sha256_hex,
)
from trails.evidence.seal import (
    Sealer,
    install_sealer,
    public_key_b64,
    rotate_signing_key,
    seal_ended_unsealed,
)
from trails.evidence.verify import verify
from trails.kernel import Context, capability, invoke
from trails.prov import Minter, Recorder, SessionEnded
from trails.prov.content import content_graph
from trails.prov.vocab import PROV, RDF, T
from trails.store import IRI, Literal, Quad, Solutions, Store, open_store, set_default_store
from trails.store.terms import Term, instant, to_python

LEDGER = ledger_iri(Minter())
LABEL = IRI("http://www.w3.org/2000/01/rdf-schema#label")
_INT = "http://www.w3.org/2001/XMLSchema#integer"


class Spy:
    """A store that passes everything through and keeps what was asked of it."""

    def __init__(self, inner: Store, *, fail_writes: bool = False) -> None:
        self.inner = inner
        self.writes: list[list[Quad]] = []
        self.queries: list[tuple[str, int]] = []
        self.fail_writes = fail_writes

    def write(self, quads: Iterable[Quad], *, remove: Iterable[Quad] = ()) -> None:
        batch = list(quads)
        if self.fail_writes:
            raise StoreError("injected write failure")
        self.writes.append(batch)
        self.inner.write(batch, remove=remove)

    def query(self, sparql: str, params: Mapping[str, Term] | None = None, **kw: Any) -> Any:
        result = self.inner.query(sparql, params, **kw)
        self.queries.append((sparql, len(result) if isinstance(result, Solutions) else 1))
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@capability(id="ledger.echo")
def echo(text: str) -> str:
    return text


def one_session(recorder: Recorder, principal: str = "did:local:alice") -> IRI:
    with Context.open(principal, recorder=recorder) as ctx:
        invoke("ledger.echo", {"text": "hello"}, ctx=ctx)
        return IRI(str(ctx.session))


def kinds(store: Store, **kw: Any) -> list[str]:
    return sorted({f.kind for f in verify(store, **kw).findings})


def signing_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ed25519PrivateKey:
    key = Ed25519PrivateKey.generate()
    pem = tmp_path / "seal.pem"
    pem.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    (tmp_path / "trails.toml").write_text(f'[audit]\nsigning_key = "{pem.name}"\n')
    monkeypatch.chdir(tmp_path)
    return key


def seal_of(store: Store, graph: IRI) -> SealRecord:
    (seal,) = [s for s in read_seals(store, LEDGER) if s.graph == graph]
    return seal


def ledger_quads(store: Store, subject: IRI) -> list[Quad]:
    rows = store.query("SELECT ?p ?o $s WHERE { GRAPH ?g { $s ?p ?o } }", {"s": subject})
    assert isinstance(rows, Solutions)
    return [Quad(subject, p, o, LEDGER) for p, o, _ in rows.rows]  # type: ignore[arg-type]


def change_a_literal(store: Store, graph: IRI) -> None:
    rows = store.query(
        "SELECT ?s ?o $g WHERE { GRAPH $g { ?s <http://www.w3.org/2000/01/rdf-schema#label> ?o } }"
        " LIMIT 1",
        {"g": graph},
    )
    assert isinstance(rows, Solutions)
    s, o, _ = rows.rows[0]
    assert isinstance(o, Literal)
    store.write([Quad(s, LABEL, Literal(o.value + "!"), graph)], remove=[Quad(s, LABEL, o, graph)])  # type: ignore[arg-type]


def rewrite_chain(store: Store, seals: Sequence[SealRecord]) -> None:
    """What an attacker who knows the format does: recompute every hash, drop signatures."""
    previous: SealRecord | None = None
    for seal in seals:
        graph_hash, count = graph_digest(store, seal.graph)
        seal.graph_hash, seal.quad_count = graph_hash, count
        seal.signature, seal.signing_key = None, None
        seal.previous_hash = previous.seal_hash if previous else "0" * 64
        seal.seal_hash = seal.recomputed_hash()
        fields = (T.graphHash, T.quadCount, T.previousSealHash, T.sealHash, T.signature)
        old = [q for q in ledger_quads(store, seal.iri) if q.predicate in (*fields, T.signingKey)]
        new = [
            Quad(seal.iri, T.graphHash, Literal(graph_hash), LEDGER),
            Quad(seal.iri, T.quadCount, Literal(str(count), _INT), LEDGER),
            Quad(seal.iri, T.previousSealHash, Literal(seal.previous_hash), LEDGER),
            Quad(seal.iri, T.sealHash, Literal(seal.seal_hash), LEDGER),
        ]
        store.write(new, remove=old)
        previous = seal


# -- end and seal: one write ----------------------------------------------------------------


def test_the_end_and_the_seal_are_one_write(store: Store) -> None:
    spy = Spy(store)
    recorder = Recorder(spy)  # type: ignore[arg-type]
    install_sealer(recorder)
    session = one_session(recorder)
    last = spy.writes[-1]
    assert any(q.predicate == PROV.endedAtTime and q.graph == session for q in last)
    assert any(q.predicate == T.sealedGraph and q.object == session for q in last)
    assert verify(store).ok


def test_a_failed_end_write_leaves_neither_end_nor_seal(store: Store) -> None:
    spy = Spy(store)
    recorder = Recorder(spy)  # type: ignore[arg-type]
    sealer = install_sealer(recorder)
    ctx = Context.open("did:local:alice", recorder=recorder)
    session = IRI(str(ctx.session))
    spy.fail_writes = True
    with pytest.raises(StoreError):
        recorder.record(SessionEnded(session=session, ended=datetime.now().astimezone()))
    spy.fail_writes = False
    assert read_seals(store, LEDGER) == [] and sealer.sequence == 0
    report = verify(store)
    assert report.ok and report.open_sessions == [session]
    one_session(recorder)  # the chain goes on from where the store is: sequence 1
    assert [s.sequence for s in read_seals(store, LEDGER)] == [1]
    ctx.close()
    assert verify(store).ok


def test_a_failing_sealer_never_costs_the_end_and_recovery_seals_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder(store)
    install_sealer(recorder)

    def broken(*args: Any, **kw: Any) -> Any:
        raise RuntimeError("sealer bug")

    monkeypatch.setattr(Sealer, "_seal_quads", broken)
    session = one_session(recorder)
    assert [f.kind for f in verify(store).findings] == ["unsealed"]
    monkeypatch.undo()
    assert seal_ended_unsealed(recorder) == [session]
    assert verify(store).ok


def test_seal_ended_unsealed_seals_a_store_recorded_without_sealing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    fx = build(store, monkeypatch, seal=False)
    assert kinds(store) == ["unsealed"]
    sealed = seal_ended_unsealed(Recorder(store))
    assert sealed == sorted(fx.sessions[k] for k in "ABC")
    assert seal_ended_unsealed(Recorder(store)) == []  # nothing left: idempotent
    report = verify(store)
    assert report.ok and report.open_sessions == [fx.sessions["D"]]


def test_seal_times_keep_sub_second_precision_and_follow_the_end(store: Store) -> None:
    recorder = Recorder(store)
    install_sealer(recorder)
    session = one_session(recorder)
    seal = seal_of(store, session)
    rows = store.query(
        "SELECT ?t $g WHERE { GRAPH $g { $g <http://www.w3.org/ns/prov#endedAtTime> ?t } }",
        {"g": session},
    )
    assert isinstance(rows, Solutions)
    ended = to_python(rows.rows[0][0])
    assert "." in seal.at  # microseconds, not whole seconds
    assert to_python(Literal(seal.at, "http://www.w3.org/2001/XMLSchema#dateTime")) >= ended


@pytest.mark.allow_nonconforming  # shapes.ttl learns status "interrupted" with recovery (item 2)
def test_interrupted_sessions_are_listed_not_failures(store: Store) -> None:
    recorder = Recorder(store)
    install_sealer(recorder)
    ctx = Context.open("did:local:alice", recorder=recorder)
    session = IRI(str(ctx.session))
    recorder.record(
        SessionEnded(session=session, ended=datetime.now().astimezone(), status="interrupted")
    )
    report = verify(store)
    assert report.ok and report.interrupted_sessions == [session] and report.graphs_checked == 1


# -- several writers, constant-cost reads ---------------------------------------------------


def test_each_recorder_writes_its_own_chain_anchored_on_the_others(store: Store) -> None:
    writers = [Recorder(store) for _ in range(3)]
    for w in writers:
        install_sealer(w)
    for _ in range(3):
        for w in writers:  # interleaved, as concurrent processes would
            one_session(w)
    contents = read_ledger(store, LEDGER)
    assert len({s.chain for s in contents.seals}) == 3
    assert sorted(s.sequence for s in contents.seals) == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert len({s.iri for s in contents.seals}) == 9
    anchored = [s for s in contents.seals if s.anchors]
    assert len(anchored) == 8  # every seal but the very first anchors on another writer's
    report = verify(store)
    writer = install_sealer(writers[-1]).writer  # the same sealer: installed once per recorder
    last = next(s for s in contents.seals if str(s.chain).endswith(writer) and s.sequence == 3)
    assert report.ok and report.chains == 3 and report.heads == [last.seal_hash]


def _first_session_of_a_fresh_process(earlier: int) -> tuple[int, int, int]:
    store = open_store("memory:")
    older = Recorder(store)
    install_sealer(older)
    for _ in range(earlier):
        one_session(older)
    spy = Spy(store)
    fresh = Recorder(spy)  # type: ignore[arg-type]
    install_sealer(fresh)
    one_session(fresh)
    assert verify(store).ok
    store.close()
    return len(spy.writes), len(spy.queries), sum(rows for _, rows in spy.queries)


def test_a_fresh_process_reads_one_pointer_not_the_ledger(store: Store) -> None:
    writes, queries, rows = _first_session_of_a_fresh_process(2)
    # start, the invocation, end + seal; one read at the end, and one look at the catalogue's
    # days that are over (once a process: their cost totals)
    assert (writes, queries) == (3, 2)
    assert _first_session_of_a_fresh_process(30) == (writes, queries, rows)


def test_an_embedded_sealer_reads_the_pointer_again_only_after_another_writer() -> None:
    store = open_store("memory:")
    spy = Spy(store)
    mine = Recorder(spy)  # type: ignore[arg-type]
    install_sealer(mine)

    def pointer_reads() -> int:
        return sum("latestSeal" in sparql for sparql, _ in spy.queries)

    for _ in range(3):
        one_session(mine)
    assert pointer_reads() == 1  # its own seals keep the pointer it knows current
    other = Recorder(store)
    install_sealer(other)
    theirs = one_session(other)
    mine_next = one_session(mine)
    assert pointer_reads() == 2  # the other writer's seal was read before the next one
    last = seal_of(store, mine_next)
    assert last.anchor_hashes == [seal_of(store, theirs).seal_hash]
    store.write([Quad(LEDGER, LABEL, Literal("touched"), LEDGER)])  # any write not through it
    one_session(mine)
    assert pointer_reads() == 3
    assert verify(store).ok
    (head,) = [r["hint"] for r in store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?hint $l WHERE "
        "{ GRAPH $l { $l trails:latestSeal ?hint } }", {"l": LEDGER})]  # fmt: skip
    assert head == max(read_seals(store, LEDGER), key=lambda s: instant(s.at)).iri
    store.close()


def _rows_read_by_verify_session(n: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    store = open_store("memory:")
    recorder = Recorder(store)
    install_sealer(recorder)
    sessions = [one_session(recorder) for _ in range(n)]
    spy = Spy(store)
    assert verify(spy, session=sessions[n // 2]).ok  # type: ignore[arg-type]
    store.close()
    return len(spy.queries), sum(rows for _, rows in spy.queries)


def test_verifying_one_session_reads_the_same_at_any_ledger_size(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _rows_read_by_verify_session(4, monkeypatch) == _rows_read_by_verify_session(
        40, monkeypatch
    )


# -- the tampering table ----------------------------------------------------------------------


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_removing_the_newest_seals_is_caught_with_expect_head(fx: Fixture) -> None:
    heads = verify(fx.store).heads
    c = fx.sessions["C"]
    newest = seal_of(fx.store, c)
    b_seal = seal_of(fx.store, fx.sessions["B"])
    fx.store.clear(c)  # the attacker removes the last session and its seal
    fx.store.clear(content_graph(c))  # and its content (left alone, it is CONTENT-FOREIGN)
    # and its catalogue entry (left alone, an entry of no session is CATALOGUE)
    fx.store.write([], remove=existing_entry(fx.store, c, catalogue_iri(Minter())))
    fx.store.write([], remove=ledger_quads(fx.store, newest.iri))
    assert "chain" in kinds(fx.store)  # the ledger's pointer still names the removed seal
    pointer = Quad(LEDGER, T.latestSeal, newest.iri, LEDGER)
    fx.store.write([Quad(LEDGER, T.latestSeal, b_seal.iri, LEDGER)], remove=[pointer])
    assert verify(fx.store).ok  # a clean truncation leaves a valid, shorter ledger ...
    report = verify(fx.store, expect_heads=heads)  # ... which the kept head exposes
    assert [(f.kind, f.subject) for f in report.findings] == [("chain", heads[0])]


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_stripped_signatures_and_a_recomputed_chain_are_caught_with_the_key(
    store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = signing_config(tmp_path, monkeypatch)
    fx = build(store, monkeypatch)
    assert verify(store, public_key=key.public_key()).ok
    change_a_literal(store, fx.sessions["B"])
    rewrite_chain(store, read_seals(store, LEDGER))
    assert verify(store).ok  # without a trusted key the forgery is self-consistent
    report = verify(store, public_key=key.public_key())
    assert {f.kind for f in report.findings} == {"signature"}
    assert all("unsigned" in f.detail for f in report.findings)


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_a_replaced_session_resealed_with_another_key_is_caught(
    store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = signing_config(tmp_path, monkeypatch)
    fx = build(store, monkeypatch)
    b = fx.sessions["B"]
    change_a_literal(store, b)
    forger = Recorder(store)
    Sealer(signing_key=Ed25519PrivateKey.generate()).seal(forger, b)  # a revision seal
    assert verify(store).ok  # signed, linked, consistent: only the key tells
    report = verify(store, public_key=key.public_key())
    assert [f.kind for f in report.findings] == ["signature"]
    assert "not trusted" in report.findings[0].detail


def test_a_recorded_key_rotation_carries_trust_to_the_new_key(
    store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    old, new = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    first = Recorder(store)
    first.add_prewrite(s := Sealer(signing_key=old), on_written=s.written)
    one_session(first)
    second = Recorder(store)
    second.add_prewrite(s2 := Sealer(signing_key=new), on_written=s2.written)
    one_session(second)
    assert kinds(store, public_key=old.public_key()) == ["signature"]  # not rotated yet
    rotate_signing_key(first, old, new)
    assert verify(store, public_key=old.public_key()).ok
    session = one_session(second)
    assert verify(store, session=session, public_key=old.public_key()).ok
    # a rotation the old key did not sign carries no trust
    rogue = Ed25519PrivateKey.generate()
    rotate_signing_key(first, rogue, rogue)
    third = Recorder(store)
    third.add_prewrite(s3 := Sealer(signing_key=rogue), on_written=s3.written)
    one_session(third)
    assert kinds(store, public_key=old.public_key()) == ["signature"]
    recorded = {s.signing_key for s in read_seals(store, LEDGER)}
    assert public_key_b64(old) in recorded and public_key_b64(new) in recorded


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_two_seals_minted_on_one_iri_are_caught(fx: Fixture) -> None:
    seal = seal_of(fx.store, fx.sessions["A"])
    fx.store.write([Quad(seal.iri, T.sealSequence, Literal("7", _INT), LEDGER)])
    found = verify(fx.store).findings
    assert any(f.kind == "chain" and "several values for sequence" in f.detail for f in found)


@pytest.mark.allow_nonconforming  # tampered on purpose
def test_an_edited_anchor_is_caught(store: Store) -> None:
    a, b = Recorder(store), Recorder(store)
    install_sealer(a), install_sealer(b)
    one_session(a)
    session = one_session(b)
    seal = seal_of(store, session)
    assert seal.anchors
    (old,) = [q for q in ledger_quads(store, seal.iri) if q.predicate == T.anchorHash]
    store.write([old._replace(object=Literal(sha256_hex(b"forged")))], remove=[old])
    assert "chain" in kinds(store)
    assert "chain" in kinds(store, session=session)


# -- the real CLI: exit codes -------------------------------------------------------------------


def _trails(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).with_name("trails"))
    env = {**os.environ, "TRAILS_STORE": str(tmp_path / "store")}
    return subprocess.run(
        [exe, "verify", *args], capture_output=True, text=True, env=env, cwd=tmp_path, check=False
    )


@pytest.mark.allow_nonconforming  # tampered on purpose at the end
def test_verify_exit_codes_through_the_console_script(
    store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    disk = open_store(tmp_path / "store")
    set_default_store(disk)
    fx = build(disk, monkeypatch)
    head = verify(disk).head
    disk.close()
    set_default_store(None)

    done = _trails(tmp_path)
    assert done.returncode == 0 and "OPEN " in done.stdout, done.stdout + done.stderr
    assert _trails(tmp_path, "--expect-head", head).returncode == 0
    assert _trails(tmp_path, "--session", fx.sessions["A"]).returncode == 0
    assert _trails(tmp_path, "--strict").returncode == 1  # session D never ended
    for bad in (
        ["--session", ""],
        ["--session", "not an iri"],
        ["--session", "urn:trails:session:nope"],
        ["--expect-head", "cafe"],
        ["--expect-head", ""],
        ["--key", str(tmp_path / "missing.pem")],
    ):
        done = _trails(tmp_path, *bad)
        assert done.returncode == 2, (bad, done.stdout, done.stderr)
        assert done.stderr.startswith("trails: error:"), done.stderr
    assert _trails(tmp_path, "--expect-head", "ab" * 32).returncode == 1  # absent head
    public = tmp_path / "trusted.pem"
    public.write_bytes(
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    )
    done = _trails(tmp_path, "--key", str(public))  # a trusted key, and nothing is signed
    assert done.returncode == 1 and "unsigned, but a trusted key was given" in done.stdout

    disk = open_store(tmp_path / "store")
    change_a_literal(disk, fx.sessions["A"])
    disk.close()
    done = _trails(tmp_path, "--full")  # verified before: an in-place edit needs a rehash
    assert done.returncode == 1 and f"ALTERED   {fx.sessions['A']}" in done.stdout
    assert _trails(tmp_path, "--session", fx.sessions["A"]).returncode == 1
    assert _trails(tmp_path, "--session", fx.sessions["B"]).returncode == 0


# -- wiring by configuration ----------------------------------------------------------------


def test_sealing_is_wired_by_configuration(store: Store, tmp_path: Path) -> None:
    from trails.config import load_settings
    from trails.errors import ConfigError

    def sealed_after_one_session(toml: str) -> bool:
        (tmp_path / "trails.toml").write_text(toml)
        settings = load_settings(environ={}, cwd=tmp_path)
        recorder = Recorder.from_settings(settings, store=store)
        session = one_session(recorder)
        return any(s.graph == session for s in read_seals(store, LEDGER))

    assert sealed_after_one_session("")  # the default: sealed
    assert not sealed_after_one_session("[audit]\nseal = false\n")
    assert not sealed_after_one_session("[prov]\nrecorder_plugins = []\n")
    assert sealed_after_one_session(
        '[prov]\nrecorder_plugins = ["trails.evidence.seal:install_sealer"]\n'
    )
    (tmp_path / "trails.toml").write_text('[prov]\nrecorder_plugins = ["trails.nowhere:install"]\n')
    with pytest.raises(ConfigError, match=r"trails\.nowhere"):
        Recorder.from_settings(load_settings(environ={}, cwd=tmp_path), store=store)
    assert seal_ended_unsealed(Recorder(store))  # the sessions recorded unsealed above
    assert verify(store).ok


def test_the_recorder_does_not_import_the_audit_room() -> None:
    import ast
    import importlib

    source = Path(importlib.import_module("trails.prov.recorder").__file__ or "").read_text()
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert not [m for m in imported if m and m.startswith("trails.audit")]


def test_the_newest_of_two_revisions_is_the_later_in_time_not_in_spelling() -> None:
    # two writers revised one seal; the store spells their times canonically, and the
    # later one (.12) sorts before the earlier (.1) as a string
    def revision(writer: str, at: str) -> SealRecord:
        return SealRecord(
            iri=IRI(f"urn:x:seal:{writer}:2"), sequence=2, graph=IRI("urn:x:g"),
            graph_hash="", quad_count=0, at=at, previous_hash="", seal_hash="",
            revision_of=IRI("urn:x:seal:a:1"),
        )  # fmt: skip

    earlier, later = (
        revision("z", "2026-12-07T01:02:03.1Z"),
        revision("a", "2026-12-07T01:02:03.12Z"),
    )
    assert latest_of([earlier, later]) == later
    assert latest_of([later, earlier]) == later


def test_an_on_disk_ledger_read_a_subject_at_a_time_is_the_ledger_read_whole(
    tmp_path: Path,
) -> None:
    # on disk the dump lists each subject's triples together, and the ledger is read a
    # subject at a time from a file; it must be what reading every row at once gives
    store = open_store(str(tmp_path / "store"))
    try:
        old, new = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
        first = Recorder(store)
        first.add_prewrite(s := Sealer(signing_key=old), on_written=s.written)
        for _ in range(3):
            one_session(first)
        rotate_signing_key(first, old, new)
        second = Recorder(store)
        second.add_prewrite(s2 := Sealer(signing_key=new), on_written=s2.written)
        one_session(second)
        assert getattr(store, "groups_subjects", False)
        by_subject = ledger_module._read_by_subject(store, LEDGER)
        whole = ledger_module._parse(
            ledger_module._group(
                ledger_module._ntriples_rows(store.dump(format="ntriples", graph=LEDGER) or b"")
            ),
            LEDGER,
        )
        assert by_subject == whole == read_ledger(store, LEDGER)
        assert len(whole.seals) == 4 and len(whole.rotations) == 1 and whole.latest
    finally:
        store.close()


def test_a_ledger_whose_subjects_come_back_is_read_whole() -> None:
    a, b = "<urn:x:a>", "<urn:x:b>"
    seal = f"<{T.Seal}>"

    class Interleaved:
        def dump(self, output: Any, **_: Any) -> None:
            lines = [f"{a} <{RDF.type}> {seal} .", f"{b} <{RDF.type}> {seal} .",
                     f'{a} <{T.sealSequence}> "1" .']  # fmt: skip
            output.write(("\n".join(lines) + "\n").encode())

    assert ledger_module._read_by_subject(Interleaved(), LEDGER) is None  # type: ignore[arg-type]
