"""The recorder writes what an event says about shared things (its capability, principal,
model, policy) once per graph, and the store ends up holding exactly what every event says."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.evidence.test_ledger import Spy

import trails
from trails.errors import StoreError
from trails.kernel import Context
from trails.prov import Minter, Recorder
from trails.prov.events import CapabilityInvoked, Event, SessionEnded, SessionStarted
from trails.prov.recorder import _WRITTEN_GRAPHS
from trails.store import IRI, Quad, Solutions, Store
from trails.store.oxigraph import OxigraphStore

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
PRINCIPAL = "did:local:repeats"


@trails.capability(id="repeats.echo", description="Echoes.")
def echo(x: int) -> int:
    return x


def spied() -> Spy:
    """An in-memory store that keeps each write's quads (and can be told to fail)."""
    return Spy(OxigraphStore(None))


def invoked(session: IRI, **over: Any) -> CapabilityInvoked:
    fields: dict[str, Any] = {
        "session": session,
        "activity": str(Minter().activity()),
        "parent": None,
        "status": "ok",
        "capability_id": "repeats.echo",
        "description": "Echoes.",
        "principal": PRINCIPAL,
        "inputs": {"x": 1},
        "output": 1,
        "started": AT,
        "ended": AT,
    }
    fields.update(over)
    return CapabilityInvoked(**fields)


def store_quads(store: Store | Spy) -> set[Quad]:
    rows = store.query("SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
    assert isinstance(rows, Solutions)
    return {Quad(*row) for row in rows.rows}  # type: ignore[arg-type]


def said(recorder: Recorder, events: Iterable[Event]) -> set[Quad]:
    """Every quad of every event, as a store gives it back (the store writes a
    ``xsd:dateTime`` in its canonical form)."""
    alone = OxigraphStore(None)
    alone.write([q for e in events for q in recorder.quads(e)])
    return store_quads(alone)


CAPABILITY = IRI("urn:trails:capability:repeats.echo")


def about(quads: Iterable[Quad], subject: str) -> list[Quad]:
    return [q for q in quads if q.subject == subject]


def test_a_session_describes_its_capability_and_principal_once() -> None:
    store = spied()
    recorder = Recorder(store)  # type: ignore[arg-type]
    session = Minter().session()
    events = [SessionStarted(session=session, principal=PRINCIPAL, started=AT)]
    events += [invoked(session) for _ in range(3)]
    for event in events:
        recorder.record(event)
    first, second, third = store.writes[1:]
    assert about(first, CAPABILITY) and about(first, PRINCIPAL) == []  # described at start
    assert about(second, CAPABILITY) == about(third, CAPABILITY) == []
    assert len(second) == len(third) == len(first) - len(about(first, CAPABILITY))
    # nothing any event says is missing from the store, and nothing else is there
    assert store_quads(store) == said(recorder, events)


def test_another_graph_gets_its_own_description() -> None:
    store = spied()
    recorder = Recorder(store)  # type: ignore[arg-type]
    one, two = Minter().session(), Minter().session()
    recorder.record(invoked(one))
    recorder.record(invoked(two))
    assert about(store.writes[1], CAPABILITY)
    assert {q.graph for q in about(store_quads(store), CAPABILITY)} == {one, two}


def test_a_failed_write_is_not_remembered() -> None:
    store = spied()
    recorder = Recorder(store)  # type: ignore[arg-type]
    session = Minter().session()
    store.fail_writes = True
    with pytest.raises(StoreError):
        recorder.record(invoked(session))
    store.fail_writes = False
    event = invoked(session)
    recorder.record(event)
    assert about(store.writes[-1], CAPABILITY)
    assert store_quads(store) == said(recorder, [event])


def test_a_removal_through_the_recorder_is_written_again() -> None:
    store = spied()
    recorder = Recorder(store)  # type: ignore[arg-type]
    session = Minter().session()
    recorder.record(invoked(session))
    label = next(q for q in about(store_quads(store), CAPABILITY) if "label" in q.predicate)
    recorder.write_quads([], remove=[label])
    recorder.record(invoked(session))
    assert about(store.writes[-1], CAPABILITY) == [label]
    assert label in store_quads(store)


def test_the_end_of_a_session_forgets_its_graph() -> None:
    store = spied()
    recorder = Recorder(store)  # type: ignore[arg-type]
    session = Minter().session()
    recorder.record(invoked(session))
    recorder.record(SessionEnded(session=session, ended=AT))
    recorder.record(invoked(session))
    assert about(store.writes[-1], CAPABILITY)


def test_what_is_minted_per_event_is_not_kept() -> None:
    recorder = Recorder(spied())  # type: ignore[arg-type]
    session = Minter().session()
    recorder.record(invoked(session))
    kept = sum(len(v) for v in recorder._written.values())
    for _ in range(20):
        recorder.record(invoked(session))
    assert sum(len(v) for v in recorder._written.values()) == kept
    assert all(not q.subject.startswith("urn:trails:activity:") for q in recorder._written[session])


def test_only_the_most_recent_graphs_are_kept() -> None:
    recorder = Recorder(spied())  # type: ignore[arg-type]
    sessions = [Minter().session() for _ in range(_WRITTEN_GRAPHS + 5)]
    for session in sessions:
        recorder.record(invoked(session))
    assert len(recorder._written) == _WRITTEN_GRAPHS
    assert sessions[0] not in recorder._written and sessions[-1] in recorder._written


def test_a_sealed_run_holds_what_every_event_said(tmp_path: Any) -> None:
    """Through the default recorder (sealer and catalogue on), a session of invocations:
    the session's graph is what its events say, each description there once, and it
    verifies."""
    from trails.evidence import verify

    store = OxigraphStore(tmp_path / "store")
    recorder = Recorder.from_settings(store=store)
    events: list[Event] = []
    recorder.subscribe(lambda _r, e: events.append(e))
    with Context.open(PRINCIPAL, recorder=recorder) as ctx:
        for i in range(4):
            trails.invoke("repeats.echo", {"x": i}, ctx=ctx)
        session = ctx.session
    in_graphs = {session, IRI(f"{session}:content")}
    stored = {q for q in store_quads(store) if q.graph in in_graphs}
    assert stored == {q for q in said(recorder, events) if q.graph in in_graphs}
    assert verify(store, session=session).ok


def test_threads_recording_in_one_session_leave_every_description(tmp_path: Any) -> None:
    """Invocations from several threads of one session, through the default recorder:
    whichever write comes first describes the capability, none is lost, the graph is what
    the events say, and it verifies."""
    from concurrent.futures import ThreadPoolExecutor

    from trails.evidence import verify

    store = OxigraphStore(tmp_path / "store")
    recorder = Recorder.from_settings(store=store)
    events: list[Event] = []
    recorder.subscribe(lambda _r, e: events.append(e))
    with Context.open(PRINCIPAL, recorder=recorder) as ctx:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda i: trails.invoke("repeats.echo", {"x": i}, ctx=ctx), range(64)))
        session = ctx.session
    in_graphs = {session, IRI(f"{session}:content")}
    stored = {q for q in store_quads(store) if q.graph in in_graphs}
    assert stored == {q for q in said(recorder, events) if q.graph in in_graphs}
    assert len([e for e in events if isinstance(e, CapabilityInvoked)]) == 64
    assert about(stored, CAPABILITY)
    assert verify(store, session=session).ok
