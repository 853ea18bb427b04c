"""The OTLP receiver under hostile payloads and an unreliable store: it refuses, never
crashes, never claims to know what it does not, and ends every session it wrote.

A real receiver on loopback over a real store; the store wrapper below commits a write
and then reports a timeout, as a SPARQL server does when the answer to a committed
update is lost (the batch outlived the store's time limit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from tests.otel.conftest import Receiver
from tests.otel.test_ownership import chat_payload, post

from trails.errors import StoreError
from trails.evidence.verify import verify
from trails.otel.otlp import MAX_DEPTH
from trails.prov.vocab import PROV, sparql_prefixes
from trails.store import IRI, Store, select
from trails.store.terms import to_python

DATA = Path(__file__).resolve().parents[1] / "data" / "otel"
JSON = {"content-type": "application/json"}
SECRET_PATH = "/srv/trails/private-store-folder"


class CommitsThenTimesOut:
    """A real store whose next ``failures`` writes are committed, then reported as timed
    out (with the server's folder in the error, as a store's own message may hold)."""

    def __init__(self, inner: Store, failures: int, *, commit: bool = True) -> None:
        self.inner, self.failures, self.commit = inner, failures, commit

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def write(self, quads: Any, **kw: Any) -> None:
        if self.failures > 0:
            self.failures -= 1
            if self.commit:
                self.inner.write(quads, **kw)
            raise StoreError(f"the update to {SECRET_PATH} timed out after 30 s")
        self.inner.write(quads, **kw)


def _ended(store: Store, session: str) -> bool:
    return bool(
        store.query("ASK { GRAPH $s { $s $p ?t } }", {"s": IRI(session), "p": PROV.endedAtTime})
    )


def test_json_nested_deeper_than_the_bound_is_a_400(make_receiver: Any) -> None:
    receiver: Receiver = make_receiver()
    for body in (
        b"[" * 200_000 + b"]" * 200_000,  # beyond the parser's own recursion limit
        b'{"resourceSpans":' + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"}",
    ):
        answer = httpx.post(receiver.traces, content=body, headers=JSON, timeout=60)
        assert answer.status_code == 400, answer.text
        assert f"nests deeper than {MAX_DEPTH} levels" in answer.text
    # the receiver still works
    good = (DATA / "openllmetry-gen-ai-system.json").read_bytes()
    assert httpx.post(receiver.traces, content=good, headers=JSON).status_code == 200


def test_a_write_that_may_have_committed_is_never_called_unwritten(
    make_receiver: Any, store: Store
) -> None:
    flaky = CommitsThenTimesOut(store, failures=1)
    receiver: Receiver = make_receiver(target=flaky)
    body = (DATA / "openllmetry-gen-ai-system.json").read_bytes()
    first = httpx.post(receiver.traces, content=body, headers=JSON)
    assert first.status_code == 503 and first.headers["retry-after"] == "1"
    assert "may or may not have been recorded" in first.text
    assert "retrying is safe" in first.text
    assert "nothing was written" not in first.text
    assert SECRET_PATH not in first.text and "timed out" not in first.text  # logged, not sent
    # it was committed: the receiver tracks its session although the write "failed"
    [session] = receiver.ingestor.open_sessions()
    assert store.graphs() != [] and not _ended(store, session)
    # the exporter's retry writes nothing twice
    before = len(store.dump(format="nquads") or b"")
    assert httpx.post(receiver.traces, content=body, headers=JSON).status_code == 200
    assert len(store.dump(format="nquads") or b"") == before
    receiver.ingestor.sweep(float("inf"))  # what idle time and shutdown do
    assert _ended(store, session) and receiver.ingestor.open_sessions() == []


def test_a_write_that_did_not_commit_leaves_no_session_behind(
    make_receiver: Any, store: Store
) -> None:
    failing = CommitsThenTimesOut(store, failures=1, commit=False)
    receiver: Receiver = make_receiver(target=failing)
    body = (DATA / "openllmetry-gen-ai-system.json").read_bytes()
    answer = httpx.post(receiver.traces, content=body, headers=JSON)
    assert answer.status_code == 503 and SECRET_PATH not in answer.text
    assert len(receiver.ingestor.open_sessions()) == 1  # tracked: the outcome was unknown
    receiver.ingestor.sweep(float("inf"))
    assert store.graphs() == []  # nothing was committed: no end written into nothing
    assert receiver.ingestor.open_sessions() == []


def test_spans_arriving_after_their_session_ended_are_recorded_as_refused(
    make_receiver: Any, store: Store
) -> None:
    receiver: Receiver = make_receiver(idle=0.0)
    assert post(receiver.url, chat_payload("conv-7", "a" * 32, 1)).json() == {}
    receiver.ingestor.sweep(float("inf"))  # conv-7 ends; a later trace continues it
    assert post(receiver.url, chat_payload("conv-7", "b" * 32, 1)).json() == {}
    receiver.ingestor.sweep(float("inf"))  # ... which ends too: trace b is now too late
    late = post(receiver.url, chat_payload("conv-7", "b" * 32, 2)).json()
    assert late["partialSuccess"]["rejectedSpans"] == "1"
    # the exporter drops them; the store keeps the refusal, for any auditor to query
    [row] = select(
        store,
        sparql_prefixes()
        + """SELECT ?session ?n ?trace ?reason WHERE { GRAPH ?g {
            ?r a trails:SpansRefused , prov:Activity ; trails:refusedSession ?session ;
               trails:refusedSpanCount ?n ; trails:traceId ?trace ; trails:reason ?reason } }""",
    )
    assert to_python(row["n"]) == 1 and to_python(row["trace"]) == "b" * 32
    assert "arrived too late" in to_python(row["reason"])
    assert _ended(store, str(row["session"]))  # nothing was written into the ended session
    assert verify(store).ok
