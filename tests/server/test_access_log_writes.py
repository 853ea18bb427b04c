"""The access log's group commit: entries queued together share one atomic write.

While the log's writer thread is busy, the entries of other requests queue;
the next write commits them together. Each request's future resolves only
after the write holding its entry has returned, an entry that cannot be
written fails its own request alone, and a closed log refuses new entries.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from datetime import UTC, datetime

import pytest

from trails.errors import StoreError
from trails.prov import Minter
from trails.prov.vocab import T
from trails.server.log import ACCESS_LOG, AccessLog, QueryReceived, access_log_quads
from trails.store import IRI, Literal, Quad, Solutions, open_store

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
