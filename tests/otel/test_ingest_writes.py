"""The OTLP ingest's write path: a batch is one atomic write, a received session is sealed
from the quads written (never read back), and the guarantees hold when a write fails."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags

from trails.errors import StoreError
from trails.evidence.seal import sealer_of
from trails.evidence.verify import verify
from trails.otel.ingest import Ingestor
from trails.otel.otlp import Span, decode_protobuf
from trails.prov import Recorder
from trails.prov.vocab import T
from trails.store import Store, open_store, select
from trails.store.base import Solutions

RESOURCE = Resource.create({"service.name": "write-path-agent"})


def _ctx(trace: int, span: int) -> SpanContext:
    return SpanContext(trace, span, False, TraceFlags(TraceFlags.SAMPLED))


def spans(trace: int, tools: int = 3) -> list[Span]:
    """One trace: an agent span, then ``tools`` chats each asking for a tool, and the tools."""
    t0 = 1_760_000_000_000_000_000 + trace * 10_000_000_000
    root = _ctx(trace, 1)
    out = [
        ReadableSpan(
            "invoke_agent writer",
            root,
            None,
            RESOURCE,
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "writer"},
            start_time=t0,
            end_time=t0 + 9_000_000_000,
        )
    ]
    for i in range(tools):
        at = t0 + 1_000_000 * (2 * i + 1)
        call = f"call-{trace}-{i}"
        chat = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.input_tokens": 100 + i,
            "gen_ai.usage.output_tokens": 10,
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": f"question {i}"}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [
                            {"type": "tool_call", "id": call, "name": "lookup", "arguments": {}}
                        ],
                    }
                ]
            ),
        }
        tool = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.id": call,
            "gen_ai.tool.call.arguments": json.dumps({"n": i}),
            "gen_ai.tool.call.result": json.dumps({"square": i * i}),
        }
        for offset, (name, attrs, kind) in enumerate(
            [
                ("chat gpt-4o-mini", chat, SpanKind.CLIENT),
                ("execute_tool lookup", tool, SpanKind.INTERNAL),
            ]
        ):
            start = at + offset * 1_000_000
            out.append(
                ReadableSpan(
                    name,
                    _ctx(trace, 2 * i + 2 + offset),
                    root,
                    RESOURCE,
                    attrs,
                    kind=kind,
                    start_time=start,
                    end_time=start + 500_000,
                )
            )
    return decode_protobuf(bytes(encode_spans(out).SerializeToString()))


class Counting:
    """A real store that counts the rows its queries returned (what the ingest read back)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.rows_read = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def query(self, *args: Any, **kw: Any) -> Any:
        result = self.inner.query(*args, **kw)
        if isinstance(result, Solutions):
            self.rows_read += len(result.rows)
        return result


class Failing:
    """A real store whose next ``failures`` writes fail: before committing (``commit=False``)
    or after (``commit=True``: a write to a server that timed out once it had committed)."""

    def __init__(self, inner: Store, *, failures: int, commit: bool) -> None:
        self.inner = inner
        self.failures = failures
        self.commit = commit

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def write(self, quads: Any, **kw: Any) -> None:
        if self.failures > 0:
            self.failures -= 1
            if self.commit:
                self.inner.write(quads, **kw)
            raise StoreError("the write timed out")
        self.inner.write(quads, **kw)


def quads_in(store: Store) -> int:
    found = select(store, "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")
    return int(next(iter(found))["n"].value)  # type: ignore[union-attr]


def sessions_of(store: Store) -> list[str]:
    found = select(store, f"SELECT ?g WHERE {{ GRAPH ?g {{ ?g a {T.Session.n3()} }} }}")
    return sorted(str(row["g"]) for row in found)


def test_a_received_session_is_sealed_from_the_quads_written_not_read_back(
    store: Store,
) -> None:
    counting = Counting(store)
    ingestor = Ingestor(Recorder.from_settings(store=counting))  # type: ignore[arg-type]
    assert sealer_of(ingestor.recorder) is not None
    result = ingestor.ingest(spans(1, tools=40))
    assert result.written == 81 and len(result.ended) == 1
    in_graph = len(
        list(select(store, "SELECT * WHERE { GRAPH $g { ?s ?p ?o } }", {"g": result.ended[0]}))
    )
    assert in_graph > 1000
    assert counting.rows_read < in_graph / 10  # the look-ups, never the graph itself
    report = verify(store)
    assert report.ok, report


def test_a_failed_batch_write_leaves_nothing_and_its_retry_is_whole(store: Store) -> None:
    failing = Failing(store, failures=1, commit=False)
    ingestor = Ingestor(Recorder.from_settings(store=failing))  # type: ignore[arg-type]
    batch = spans(2) + spans(3)
    with pytest.raises(StoreError):
        ingestor.ingest(batch)
    assert store.graphs() == []  # the batch is whole or absent
    again = ingestor.ingest(batch)
    assert again.written == 14 and again.duplicates == 0 and len(again.ended) == 2
    assert verify(store).ok


def test_a_batch_committed_by_a_write_that_failed_is_sealed_as_stored(store: Store) -> None:
    # the write raised after it committed: the sealer must not seal from what it thought
    # it wrote, since it never saw that write confirmed; it reads the graph as stored
    failing = Failing(store, failures=1, commit=True)
    ingestor = Ingestor(Recorder.from_settings(store=failing), idle_timeout=60)  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        ingestor.ingest(spans(4))
    [session] = sessions_of(store)
    retry = ingestor.ingest(spans(4))  # the exporter's retry: everything is there already
    assert retry.written == 0 and retry.duplicates == 7
    assert ingestor.sweep(now=ingestor.clock() + 3600) == [session]  # ended, and sealed
    report = verify(store)
    assert report.ok, report


def test_a_resent_batch_writes_nothing(store: Store) -> None:
    ingestor = Ingestor(Recorder.from_settings(store=store), idle_timeout=60)
    batch = spans(5)[1:]  # no root: the session stays open
    first = ingestor.ingest(batch)
    assert first.written == 6
    before = quads_in(store)
    again = ingestor.ingest(batch)
    assert again.written == 0 and again.duplicates == 6
    assert quads_in(store) == before
    ingestor.ingest(spans(5)[:1])  # the root: the session ends, sealed over all of it
    assert verify(store).ok


def test_two_tenants_sending_the_same_batch_get_two_sealed_sessions(store: Store) -> None:
    ingestor = Ingestor(Recorder.from_settings(store=store))
    a = ingestor.ingest(spans(6), principal="did:example:tenant-a")
    b = ingestor.ingest(spans(6), principal="did:example:tenant-b")
    assert a.written == b.written == 7 and b.duplicates == 0
    assert len(set(a.ended) | set(b.ended)) == 2
    assert sessions_of(store) == sorted([*a.ended, *b.ended])
    report = verify(store)
    assert report.ok, report


class Asking:
    """A real store that counts the queries asked before each write (the request's look-ups)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.asked = 0
        self.before_writes: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def query(self, *args: Any, **kw: Any) -> Any:
        self.asked += 1
        return self.inner.query(*args, **kw)

    def write(self, quads: Any, **kw: Any) -> None:
        self.before_writes.append(self.asked)
        self.asked = 0
        self.inner.write(quads, **kw)


@pytest.mark.parametrize("traces", [1, 4])
def test_a_request_asks_its_dedupe_look_ups_together_whatever_its_traces(traces: int) -> None:
    asking = Asking(open_store("memory:"))
    ingestor = Ingestor(Recorder.from_settings(store=asking), idle_timeout=60)  # type: ignore[arg-type]
    batch = [s for t in range(traces) for s in spans(40 + t)[1:]]  # no roots: sessions stay open
    asking.asked = 0  # what opening the recorder asked
    first = ingestor.ingest(batch)
    assert len(first.sessions) == traces and first.written == len(batch)
    # the spans recorded for every trace, then every session's state: two queries
    assert asking.before_writes[0] == 2
    again = ingestor.ingest(batch + spans(40)[1:2])  # all recorded: written once, never twice
    assert again.written == 0 and again.duplicates == len(batch) + 1 and not again.sessions
    asking.asked = 0
    more = ingestor.ingest([s for t in range(traces) for s in spans(50 + t)[1:]] + batch)
    assert more.written == len(batch) and more.duplicates == len(batch)
    assert asking.before_writes[-1] == 2
