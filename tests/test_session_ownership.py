"""A session belongs to its principal and its writer: an id the store holds is never reused.

Opening a session under a chosen id that the store already holds (another
principal's session, one that has ended, one open here or in another writer, a
graph holding other data, a sealed graph since removed) raises ``SessionTaken``
and writes nothing, so the first session's graph, seal and ``trails verify``
stay clean; ids that cannot name a session are refused before anything is
written. The check and the start are one step: threads and processes racing
for one id on the embedded store, on ``oxigraph serve`` and on Virtuoso end
with exactly one session started and no claim left behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.servers import BACKENDS, backend_store

from trails.agent import Session
from trails.errors import SessionError, SessionTaken, UserError
from trails.evidence.verify import verify
from trails.kernel import Context, capability, invoke
from trails.llm import LLMClient
from trails.prov import PROV, Minter, Recorder, SessionStarted, T, starts
from trails.prov.iri import SESSION_ID_MAX
from trails.store import IRI, Literal, Quad, Store, open_store, select, to_python
from trails.store.terms import literal

ALICE, MALLORY = "did:example:alice", "did:example:mallory"
CASE = IRI("urn:trails:session:case-1")
SECRET = "ALICE-SECRET medical record"


def _alice_session(store: Store) -> Recorder:
    """Alice's session ``case-1``, holding her secret, ended and sealed."""

    @capability(id="records.read", description="Read a record.")
    def read(patient: str) -> str:
        return SECRET

    recorder = Recorder.from_settings(store=store)
    with Context.open(ALICE, recorder=recorder, session_id="case-1") as ctx:
        invoke("records.read", {"patient": "p1"}, ctx=ctx)
    return recorder


def _agents(store: Store, graph: IRI) -> set[str]:
    rows = select(
        store,
        "SELECT ?a $g WHERE { GRAPH $g { $g <http://www.w3.org/ns/prov#wasAssociatedWith> ?a } }",
        {"g": graph},
    )
    return {str(r["a"]) for r in rows}


@pytest.mark.parametrize("backend", BACKENDS)
def test_another_principal_reusing_a_sealed_id_is_refused_and_nothing_changes(
    request: pytest.FixtureRequest, backend: str
) -> None:
    for store in backend_store(request, backend):
        _alice_session(store)
        before = sorted(store.dump(format="nquads").splitlines())  # type: ignore[union-attr]
        mallory = Recorder.from_settings(store=store)
        with pytest.raises(SessionTaken, match="belongs to another principal") as caught:
            Context.open(MALLORY, recorder=mallory, session_id="case-1")
        assert (caught.value.reason, caught.value.session_id) == ("principal", "case-1")
        assert isinstance(caught.value, UserError)
        assert MALLORY not in str(caught.value) and ALICE not in str(caught.value)
        # through the agent Session too: refused at its first run, nothing recorded
        session = Session(principal=MALLORY, session_id="case-1", store=store)
        with pytest.raises(SessionTaken):
            session.run("read the record", llm=LLMClient.mock(response=["never asked"]))
        with pytest.raises(SessionTaken):
            session.persist()
        assert sorted(store.dump(format="nquads").splitlines()) == before  # type: ignore[union-attr]
        assert _agents(store, CASE) == {ALICE}
        report = verify(store)
        assert report.ok, report.findings
        assert report.graphs_checked == 1


def test_the_graph_seal_and_trails_verify_stay_clean_on_a_directory_store(tmp_path: Path) -> None:
    disk = open_store(tmp_path / "store")
    _alice_session(disk)
    with pytest.raises(SessionTaken):
        Context.open(MALLORY, recorder=Recorder.from_settings(store=disk), session_id="case-1")
    disk.close()
    exe = shutil.which("trails") or str(Path(sys.executable).with_name("trails"))
    env = {**os.environ, "TRAILS_STORE": str(tmp_path / "store")}
    done = subprocess.run(
        [exe, "verify"], capture_output=True, text=True, env=env, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK. 1 sealed graph(s)" in done.stdout and "ALTERED" not in done.stdout
    done = subprocess.run(
        [exe, "sessions", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "case-1" in done.stdout and MALLORY not in done.stdout


def test_trails_verify_stays_clean_on_the_remote_store(
    remote_store: Store, oxigraph_server: str, tmp_path: Path
) -> None:
    _alice_session(remote_store)
    with pytest.raises(SessionTaken):
        Context.open(
            MALLORY, recorder=Recorder.from_settings(store=remote_store), session_id="case-1"
        )
    exe = shutil.which("trails") or str(Path(sys.executable).with_name("trails"))
    env = {**os.environ, "TRAILS_STORE": oxigraph_server}
    done = subprocess.run(
        [exe, "verify"], capture_output=True, text=True, env=env, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK. 1 sealed graph(s)" in done.stdout and "ALTERED" not in done.stdout


def test_alice_cannot_reopen_her_own_ended_session(any_store: Store) -> None:
    recorder = _alice_session(any_store)
    before = sorted(any_store.dump(format="nquads").splitlines())  # type: ignore[union-attr]
    with pytest.raises(SessionTaken, match=r"has ended and is sealed.*never reopened") as caught:
        Context.open(ALICE, recorder=recorder, session_id="case-1")
    assert caught.value.reason == "ended"
    assert "fork()" in str(caught.value)  # how to carry a conversation on
    with pytest.raises(SessionTaken, match="has ended"):
        Session(principal=ALICE, session_id="case-1", store=any_store).context  # noqa: B018
    assert sorted(any_store.dump(format="nquads").splitlines()) == before  # type: ignore[union-attr]
    assert verify(any_store).ok


def test_an_open_session_is_refused_here_and_from_another_writer(any_store: Store) -> None:
    recorder = Recorder.from_settings(store=any_store)
    ctx = Context.open(ALICE, recorder=recorder, session_id="live")
    with pytest.raises(SessionTaken, match="open in this process") as caught:
        Context.open(ALICE, recorder=recorder, session_id="live")
    assert caught.value.reason == "open"
    with pytest.raises(SessionTaken, match="another principal"):
        Context.open(MALLORY, recorder=Recorder.from_settings(store=any_store), session_id="live")
    ctx.close()
    # a session another writer started and has not ended (a start written, no context here)
    other = recorder.minter.session("elsewhere")
    recorder.record(SessionStarted(session=other, principal=ALICE, started=datetime.now(UTC)))
    with pytest.raises(SessionTaken, match="open in another writer") as caught:
        Context.open(ALICE, recorder=recorder, session_id="elsewhere")
    assert caught.value.reason == "open"
    assert "trails recover" in str(caught.value)
    assert _agents(any_store, other) == {ALICE}


@pytest.mark.allow_nonconforming  # a graph of plain data, named like a session
def test_a_graph_of_other_data_and_a_removed_sealed_session_keep_their_ids(
    any_store: Store,
) -> None:
    graph = IRI("urn:trails:session:imported")
    any_store.write([Quad(IRI("urn:x:a"), IRI("urn:x:b"), Literal("c"), graph)])
    recorder = Recorder.from_settings(store=any_store)
    with pytest.raises(SessionTaken, match="holds data that no session started") as caught:
        Context.open(ALICE, recorder=recorder, session_id="imported")
    assert caught.value.reason == "data"
    _alice_session(any_store)
    any_store.clear(CASE)  # a retention run removes the graph; its seal stays in the ledger
    with pytest.raises(SessionTaken, match="since been removed") as caught:
        Context.open(ALICE, recorder=recorder, session_id="case-1")
    assert caught.value.reason == "removed"
    assert CASE not in any_store.graphs()


def test_a_free_id_opens_and_a_minted_one_needs_no_check(any_store: Store) -> None:
    recorder = Recorder.from_settings(store=any_store)
    longest = "x" * SESSION_ID_MAX
    with Context.open(ALICE, recorder=recorder, session_id=longest) as ctx:
        assert ctx.session_id == longest
    with Context.open(ALICE, recorder=recorder, session_id="ticket-42@acme.example") as ctx:
        assert ctx.session == IRI("urn:trails:session:ticket-42@acme.example")
    with Context.open(ALICE, recorder=recorder) as ctx:
        assert ctx.session.startswith("urn:trails:session:")
    assert claims_graph_empty(any_store)
    assert verify(any_store).ok


def test_an_agent_session_s_own_id_is_started_without_a_check_and_only_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trails.kernel.context import minted_session_id

    checks: list[IRI] = []
    read = starts._read
    monkeypatch.setattr(
        starts, "_read", lambda rec, graph: checks.append(graph) or read(rec, graph)
    )
    recorder = Recorder.from_settings(store=store)
    # a Session names its session before it opens it: a UUID4 trails minted, no one holds
    session = Session(principal=ALICE, recorder=recorder)
    assert session.context.session_id == session.id  # opened: its start written
    assert checks == []
    # the same id given again (a second Session, a Context) is a chosen id: checked, refused
    with pytest.raises(SessionTaken) as taken:
        Context.open(MALLORY, recorder=recorder, session_id=session.id)
    assert taken.value.reason == "principal" and checks == [session.context.session]
    # a user's own id is checked the first time too
    mine = Session(principal=ALICE, recorder=recorder, session_id="mine")
    assert mine.context.session_id == "mine" and len(checks) == 2
    # a minted id not used yet is taken at most once, whoever opens it first
    sid = minted_session_id()
    with Context.open(ALICE, recorder=recorder, session_id=sid):
        with pytest.raises(SessionTaken) as again:
            Context.open(ALICE, recorder=recorder, session_id=sid)
    assert again.value.reason == "open" and len(checks) == 3
    session.close()
    mine.close()


def claims_graph_empty(store: Store) -> bool:
    return starts.claims_graph(Minter()) not in store.graphs()


HOSTILE = [
    ("", "is empty"),
    (" ", "is blank"),
    ("\t\n", "is blank"),
    ("<", "holds '<' at character 1"),
    ("a>b", "holds '>' at character 2"),
    ("a b", "holds ' ' at character 2"),
    ("a/b", "holds '/' at character 2"),
    ("100%", "holds '%' at character 4"),
    ("case-1:content", "holds ':' at character 7, which trails puts before the parts"),
    ("caf\u00e9", "holds '\\\\xe9' at character 4"),
    ("x" * (SESSION_ID_MAX + 1), f"is {SESSION_ID_MAX + 1} characters long"),
    ("x" * 100_000, "is 100000 characters long"),
]


@pytest.mark.parametrize(("bad", "why"), HOSTILE)
def test_an_id_that_cannot_name_a_session_is_refused_before_anything_is_written(
    store: Store, bad: str, why: str
) -> None:
    recorder = Recorder.from_settings(store=store)
    with pytest.raises(SessionError, match=why) as caught:
        Context.open(ALICE, recorder=recorder, session_id=bad)
    assert "Context.open session_id" in str(caught.value)
    assert len(str(caught.value)) < 400
    with pytest.raises(SessionError, match=why):
        Session(principal=ALICE, session_id=bad, store=store)
    assert store.graphs() == []


def test_a_lone_surrogate_is_a_unicode_error_naming_the_field(store: Store) -> None:
    with pytest.raises(UserError, match="session_id is not valid Unicode"):
        Context.open(ALICE, session_id="case-\udcff")
    with pytest.raises(UserError, match="Session session_id is not valid Unicode"):
        Session(principal=ALICE, session_id="\ud800")
    assert store.graphs() == []


def _race(stores: list[Store], session_id: str) -> list[str]:
    """Open ``session_id`` from one thread per store at once; what each one got."""
    recorders = [Recorder.from_settings(store=s) for s in stores]
    barrier = threading.Barrier(len(recorders))
    outcome: list[str] = []

    def open_it(n: int) -> None:
        barrier.wait()
        try:
            ctx = Context.open(f"did:example:p{n}", recorder=recorders[n], session_id=session_id)
        except SessionTaken as exc:
            outcome.append(exc.reason)
            return
        outcome.append("won")
        ctx.close()

    threads = [threading.Thread(target=open_it, args=(n,)) for n in range(len(recorders))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcome


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_racing_for_one_id_start_exactly_one_session(
    request: pytest.FixtureRequest, backend: str
) -> None:
    for store in backend_store(request, backend):
        url = getattr(store, "query_url", None)
        for n in range(12):
            # the embedded store: one object, one lock; a server: separate store objects,
            # so the threads contend through claims
            stores = [store] * 3 if url is None else [_same_server(store) for _ in range(3)]
            outcome = _race(stores, f"race-{n}")
            assert outcome.count("won") == 1, outcome
            assert len(outcome) == 3
            for s in stores:
                if s is not store:
                    s.close()
        rows = select(
            store,
            "SELECT ?g (COUNT(?t) AS ?n) WHERE { GRAPH ?g { "
            "?g <http://www.w3.org/ns/prov#startedAtTime> ?t } } GROUP BY ?g",
        )
        counts = {str(r["g"]): to_python(r["n"]) for r in rows}
        assert counts == {f"urn:trails:session:race-{n}": 1 for n in range(12)}
        assert claims_graph_empty(store)
        report = verify(store)
        assert report.ok and report.graphs_checked == 12, report.findings


def _same_server(store: Store) -> Store:
    from trails.store.sparql import SparqlStore

    assert isinstance(store, SparqlStore)
    return SparqlStore(store.query_url, store.update_url, store.gsp_url, form_post=store.form_post)


CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from trails.errors import SessionTaken
    from trails.kernel import Context
    from trails.prov import Recorder
    from trails.store import open_store

    principal, session_id, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    recorder = Recorder.from_settings(store=open_store())
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.001)
    try:
        ctx = Context.open(principal, recorder=recorder, session_id=session_id)
    except SessionTaken as exc:
        print(exc.reason)
    else:
        ctx.close()
        print("won")
    """
)


def test_two_processes_racing_on_the_remote_store_start_exactly_one_session(
    remote_store: Store, oxigraph_server: str, tmp_path: Path
) -> None:
    env = {**os.environ, "TRAILS_STORE": oxigraph_server}
    for n in range(3):
        go = tmp_path / f"go-{n}"
        children = [
            subprocess.Popen(
                [sys.executable, "-c", CHILD, who, f"proc-{n}", str(go)],
                env=env,
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for who in (ALICE, MALLORY)
        ]
        for child in children:  # both imported, connected and waiting
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        go.touch()
        outcome = []
        for child in children:
            out, err = child.communicate()
            assert child.returncode == 0, err
            outcome.append(out.strip())
        assert sorted(outcome) == ["principal", "won"], outcome
    assert claims_graph_empty(remote_store)
    report = verify(remote_store)
    assert report.ok and report.graphs_checked == 3, report.findings


def _claim(store: Store, graph: IRI, at: datetime) -> list[Quad]:
    claims = starts.claims_graph(Minter())
    claim = Minter.part(claims, f"other-writer-{at.timestamp()}")
    quads = [
        Quad(claim, T.claimsSession, graph, claims),
        Quad(claim, PROV.generatedAtTime, literal(at), claims),
    ]
    store.write(quads)
    return quads


def test_a_live_claim_of_another_writer_keeps_the_id_and_a_stale_one_does_not(
    remote_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(starts, "ATTEMPTS", 2)
    recorder = Recorder.from_settings(store=remote_store)
    graph = recorder.minter.session("claimed")
    live = _claim(remote_store, graph, datetime.now(UTC))  # a writer between its two writes
    with pytest.raises(SessionTaken, match="starting a session with it right now") as caught:
        Context.open(ALICE, recorder=recorder, session_id="claimed")
    assert caught.value.reason == "starting"
    claims = starts.claims_graph(recorder.minter)
    left = select(remote_store, "SELECT ?s ?p ?o $c WHERE { GRAPH $c { ?s ?p ?o } }", {"c": claims})
    # only the other writer's claim is left (the server may write its time in another form)
    kept = {(r["s"], r["p"], to_python(r["o"])) for r in left}
    assert kept == {(q[0], q[1], to_python(q[2])) for q in live}
    assert graph not in remote_store.graphs()

    remote_store.write([], remove=live)
    old = datetime.now(UTC) - timedelta(seconds=starts.CLAIM_TTL_S + 60)
    _claim(remote_store, graph, old)  # a writer that stopped between its two writes
    with Context.open(ALICE, recorder=recorder, session_id="claimed"):
        pass
    assert claims_graph_empty(remote_store)  # the stale claim went with the start
    assert _agents(remote_store, graph) == {ALICE}
    assert verify(remote_store).ok
