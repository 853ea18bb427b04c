"""The access log's group commit: entries queued together share one atomic write.

While the log's writer thread is busy, the entries of other requests queue;
the next write commits them together. Each request's future resolves only
after the write holding its entry has returned, an entry that cannot be
written fails its own request alone, and a closed log refuses new entries.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import Any

import pytest

from trails.errors import StoreError
from trails.prov import Minter
from trails.prov.vocab import T
from trails.server.log import (
    ACCESS_LOG,
    AccessLog,
    QueryReceived,
    access_log_entry,
    access_log_quads,
)
from trails.store import IRI, Literal, Quad, Solutions, Store, open_store

MINTER = Minter()
LOG = MINTER.graph(ACCESS_LOG)
ACTIVITIES = "SELECT DISTINCT ?a ?cls WHERE { GRAPH ?g { ?a a ?cls } }"


def entry(principal: str) -> list[Quad]:
    now = datetime.now(UTC)
    event = QueryReceived(
        log_graph=LOG,
        activity=MINTER.activity(),
        principal=principal,
        query="SELECT * WHERE { ?s ?p ?o }",
        received=now,
        ended=now,
        status="ok",
        http_status=200,
        results=0,
    )
    return access_log_quads(event, MINTER)


def entries_in(log: AccessLog) -> int:
    result = log.store.query(ACTIVITIES, {"cls": T.QueryReceived})
    assert isinstance(result, Solutions)
    return len(result.column("a"))


class HeldWrites:
    """Holds the first store write until released, so later entries queue behind it."""

    def __init__(self, log: AccessLog) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.calls: list[int] = []
        self._write = log.store.write
        self._first = True

    def __call__(self, quads: Sequence[Quad]) -> None:
        self.calls.append(len(list(quads)))
        if self._first:
            self._first = False
            self.started.set()
            assert self.release.wait(30)
        self._write(quads)


@pytest.fixture
def log() -> AccessLog:
    return AccessLog(open_store("memory:"), owned=True)


def test_entries_queued_behind_a_write_are_committed_together(
    log: AccessLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldWrites(log)
    monkeypatch.setattr(log.store, "write", held)
    first = log.write(entry("did:example:first"))
    assert held.started.wait(30)
    queued = [log.write(entry(f"did:example:p{n}")) for n in range(6)]
    assert not any(f.done() for f in queued)  # nothing acknowledged before it is stored
    held.release.set()
    for future in [first, *queued]:
        future.result(timeout=30)
    assert entries_in(log) == 7
    # one write for the first entry, one for the six that queued behind it
    assert len(held.calls) == 2
    assert log.commits == 2
    log.close()


def test_an_acknowledged_entry_is_already_in_the_store(log: AccessLog) -> None:
    futures = [log.write(entry(f"did:example:p{n}")) for n in range(20)]
    for n, future in enumerate(futures):
        future.result(timeout=30)
        assert entries_in(log) >= n + 1
    assert entries_in(log) == 20
    log.close()


def test_a_bad_entry_in_a_group_fails_alone(
    log: AccessLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldWrites(log)
    monkeypatch.setattr(log.store, "write", held)
    first = log.write(entry("did:example:first"))
    assert held.started.wait(30)
    good = log.write(entry("did:example:good"))
    bad_quad = Quad(IRI.trusted("not an iri"), IRI.trusted("urn:p"), Literal("x"), LOG)
    bad = log.write([bad_quad])
    other = log.write(entry("did:example:other"))
    held.release.set()
    first.result(timeout=30)
    good.result(timeout=30)
    other.result(timeout=30)
    with pytest.raises(StoreError):
        bad.result(timeout=30)
    assert entries_in(log) == 3
    log.close()


def test_a_cancelled_entry_is_not_written(log: AccessLog, monkeypatch: pytest.MonkeyPatch) -> None:
    held = HeldWrites(log)
    monkeypatch.setattr(log.store, "write", held)
    first = log.write(entry("did:example:first"))
    assert held.started.wait(30)
    gone: Future[None] = log.write(entry("did:example:gone"))
    assert gone.cancel()
    kept = log.write(entry("did:example:kept"))
    held.release.set()
    first.result(timeout=30)
    kept.result(timeout=30)
    assert entries_in(log) == 2
    log.close()


def test_close_writes_what_is_queued_then_refuses(
    log: AccessLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldWrites(log)
    monkeypatch.setattr(log.store, "write", held)
    futures = [log.write(entry(f"did:example:p{n}")) for n in range(4)]
    assert held.started.wait(30)
    held.release.set()
    store = log.store
    log.owned = False  # keep the store open to count what close wrote
    log.close()
    assert all(f.done() and f.exception() is None for f in futures)
    with pytest.raises(RuntimeError, match="closed"):
        log.write(entry("did:example:late"))
    log.store = store
    assert entries_in(log) == 4


def variants() -> list[QueryReceived]:
    now = datetime.now(UTC)
    base: dict[str, Any] = {
        "log_graph": LOG,
        "query": "SELECT * WHERE { ?s ?p ?o }",
        "received": now,
        "ended": now,
        "status": "ok",
        "http_status": 200,
    }
    return [
        QueryReceived(activity=MINTER.activity(), principal="did:example:a", results=3, **base),
        QueryReceived(activity=MINTER.activity(), principal=None, **base),
        QueryReceived(
            activity=MINTER.activity(),
            principal="alice",
            query_name="sessions",
            params={"limit": 5, "who": "bob"},
            message="the store failed",
            of_access_log=True,
            **{**base, "status": "error", "http_status": 500},
        ),
    ]


@pytest.mark.parametrize("content", ["full", "hash"])
def test_the_direct_entry_holds_exactly_the_events_quads(content: str) -> None:
    for event in variants():
        own, shared = access_log_entry(event, MINTER, content)
        assert Counter(own + shared) == Counter(access_log_quads(event, MINTER, content))
        agent = MINTER.agent(event.principal) if event.principal else None
        assert shared == [q for q in own + shared if q.subject == agent]


def all_quads(store: Store) -> set[Quad]:
    rows = store.query("SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
    assert isinstance(rows, Solutions)
    return {Quad(*row) for row in rows.rows}  # type: ignore[misc]


def as_stored(quads: list[Quad]) -> set[Quad]:
    """``quads`` as a store gives them back (times in the store's canonical form)."""
    reference = open_store("memory:")
    reference.write(quads)
    return all_quads(reference)


def test_a_principals_description_is_written_once_and_every_entry_is_whole(
    log: AccessLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldWrites(log)
    monkeypatch.setattr(log.store, "write", held)
    events = [variants()[0] for _ in range(4)]
    entries = [access_log_entry(e, MINTER) for e in events]
    first = log.write(*entries[0])
    assert held.started.wait(30)
    grouped = [log.write(*e) for e in entries[1:3]]
    held.release.set()
    for future in [first, *grouped]:
        future.result(timeout=30)
    log.write(*entries[3]).result(timeout=30)
    own = len(entries[0][0])
    # the description with the first entry; neither in the group nor after it
    assert held.calls == [own + 3, 2 * own, own]
    # the log holds every entry whole, and nothing else
    everything = [q for event in events for q in access_log_quads(event, MINTER)]
    assert all_quads(log.store) == as_stored(everything)
    log.close()


def test_a_description_whose_write_failed_goes_with_the_next_entry(log: AccessLog) -> None:
    event = variants()[0]
    own, shared = access_log_entry(event, MINTER)
    bad = Quad(IRI.trusted("not an iri"), IRI.trusted("urn:p"), Literal("x"), LOG)
    with pytest.raises(StoreError):
        log.write([*own, bad], shared).result(timeout=30)
    again = variants()[0]
    log.write(*access_log_entry(again, MINTER)).result(timeout=30)
    assert all_quads(log.store) == as_stored(access_log_quads(again, MINTER))
    log.close()


def test_entries_recorded_from_an_event_loop_wake_it_once_per_write(
    log: AccessLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldWrites(log)
    monkeypatch.setattr(log.store, "write", held)

    async def main() -> int:
        loop = asyncio.get_running_loop()
        wakes = 0
        threadsafe = loop.call_soon_threadsafe

        def counted(*args: Any, **kwargs: Any) -> Any:
            nonlocal wakes
            wakes += 1
            return threadsafe(*args, **kwargs)

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
        first = asyncio.ensure_future(log.record(entry("did:example:first")))
        await asyncio.to_thread(held.started.wait, 30)
        wakes = 0  # to_thread's own wake-up
        later = [asyncio.ensure_future(log.record(entry(f"did:example:p{n}"))) for n in range(5)]
        gone = asyncio.ensure_future(log.record(entry("did:example:gone")))
        await asyncio.sleep(0)
        gone.cancel()  # its caller gave up before the writer took it: not written
        held.release.set()
        await asyncio.gather(first, *later)
        return wakes

    wakes = asyncio.run(main())
    assert wakes == 2  # one for the first write, one for the five grouped behind it
    assert len(held.calls) == 2
    assert entries_in(log) == 6
    log.close()


def test_recording_into_a_closed_log_is_refused(log: AccessLog) -> None:
    log.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(log.record(entry("did:example:late")))
