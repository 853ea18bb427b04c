"""The mapping and the session rules, span by span, on a real store (no HTTP here)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from trails.evidence.verify import verify
from trails.otel.conventions import read_span
from trails.otel.ingest import Ingestor
from trails.otel.otlp import Span, SpanEvent
from trails.prov import Recorder
from trails.prov.vocab import sparql_prefixes
from trails.store import Store, select
from trails.store.terms import IRI, to_python

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
TRACE = "0af7651916cd43dd8448eb211c80319c"


def span(
    sid: int,
    name: str,
    attrs: dict[str, Any],
    *,
    parent: int | None = None,
    trace: str = TRACE,
    status: str = "ok",
    at: int = 0,
    events: tuple[SpanEvent, ...] = (),
) -> Span:
    return Span(
        trace_id=trace,
        span_id=f"{sid:016x}",
        parent_id=f"{parent:016x}" if parent else None,
        name=name,
        start=T0 + timedelta(seconds=at),
        end=T0 + timedelta(seconds=at + 1),
        status=status,
        attributes=attrs,
        events=events,
        resource={"service.name": "svc"},
    )


def rows(store: Store, sparql: str, **params: Any) -> list[dict[str, Any]]:
    return [
        {k: to_python(v) for k, v in r.items()}
        for r in select(store, sparql_prefixes() + sparql, params or None)
    ]


def ingestor(store: Store, **kw: Any) -> Ingestor:
    return Ingestor(Recorder.from_settings(store=store), **kw)


def test_memory_tool_error_and_plain_spans(store: Store) -> None:
    ing = ingestor(store)
    result = ing.ingest(
        [
            span(
                1,
                "invoke_agent helper",
                {"gen_ai.operation.name": "invoke_agent"},
                status="error",
                at=0,
            ),
            span(
                2,
                "create_memory",
                {
                    "gen_ai.operation.name": "create_memory",
                    "gen_ai.memory.id": "m 1",
                    "gen_ai.memory.content": "likes tea",
                },
                parent=1,
                at=1,
            ),
            span(
                3,
                "search_memory",
                {"gen_ai.operation.name": "search_memory", "gen_ai.memory.query": "tea"},
                parent=1,
                at=2,
            ),
            span(
                4,
                "delete_memory",
                {"gen_ai.operation.name": "delete_memory", "gen_ai.memory.id": "m 1"},
                parent=1,
                at=3,
            ),
            span(
                5,
                "execute_tool pay",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "pay",
                    "error.type": "TimeoutError",
                },
                parent=1,
                status="error",
                at=4,
            ),
            span(6, "GET /inventory", {"http.request.method": "GET"}, parent=1, at=5),
            span(
                7,
                "chat",
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "acme",
                    "gen_ai.request.model": "secret-model",
                    "gen_ai.usage.input_tokens": 5,
                },
                parent=6,
                at=6,
            ),
        ]
    )
    assert result.written == 7 and len(result.ended) == 1
    classes = rows(
        store,
        """SELECT ?op ?c WHERE { GRAPH ?g { ?a trails:operationName ?op ; a ?c .
        FILTER (?c IN (trails:MemoryLearn, trails:MemoryRecall, trails:MemoryForget, trails:TraceSpan,
                       trails:CapabilityInvocation, trails:LLMCompletion, trails:PlanRun)) } } ORDER BY ?op""",
    )
    assert [(r["op"], str(r["c"]).rsplit("#")[-1]) for r in classes] == [
        ("chat", "LLMCompletion"),
        ("create_memory", "MemoryLearn"),
        ("delete_memory", "MemoryForget"),
        ("execute_tool", "CapabilityInvocation"),
        ("invoke_agent", "PlanRun"),
        ("search_memory", "MemoryRecall"),
        ("span", "TraceSpan"),
    ]
    failed = rows(
        store,
        "SELECT ?status ?type ?msg WHERE { GRAPH ?g { ?a trails:capability ?c ; trails:status ?status ; trails:errorType ?type } GRAPH ?cg { ?a trails:errorMessage ?msg } }",
    )
    assert failed == [{"status": "error", "type": "TimeoutError", "msg": "TimeoutError"}]
    assert [
        r["stop"]
        for r in rows(store, "SELECT ?stop WHERE { GRAPH ?g { ?a trails:stopReason ?stop } }")
    ] == ["error"]
    assert [
        r["q"] for r in rows(store, "SELECT ?q WHERE { GRAPH ?g { ?a trails:recallQuery ?q } }")
    ] == ["tea"]
    chat = rows(
        store,
        "SELECT ?p ?usd WHERE { GRAPH ?g { ?a a trails:LLMCompletion ; prov:wasInformedBy ?p . OPTIONAL { ?a trails:costUSD ?usd } } }",
    )
    assert len(chat) == 1 and "usd" not in chat[0]  # an unknown model stays unpriced
    assert str(chat[0]["p"]).endswith(f"{TRACE}:{6:016x}")  # the plain span is its parent
    ended = rows(store, "SELECT ?s WHERE { GRAPH ?g { ?g trails:status ?s } }")
    assert ended == [{"s": "error"}]  # the root span failed
    assert verify(store).ok


def test_a_late_trace_of_an_ended_conversation_goes_to_a_continuation(store: Store) -> None:
    now = [0.0]
    ing = ingestor(store, idle_timeout=10, clock=lambda: now[0])
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "ollama",
        "gen_ai.request.model": "qwen3:8b",
        "gen_ai.conversation.id": "c-1",
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 2,
    }
    ing.ingest([span(1, "chat", chat)])
    assert ing.sweep(now=11) == ["urn:trails:session:c-1"]
    sealed = store.dump(format="nquads", graph=IRI("urn:trails:session:c-1"))
    late = "1" * 32
    ing.ingest([span(1, "chat", chat, trace=late, at=30)])
    assert store.dump(format="nquads", graph=IRI("urn:trails:session:c-1")) == sealed
    cont = f"urn:trails:session:c-1~{late}"
    assert cont in ing.open_sessions()
    usd = rows(store, "SELECT ?usd ?g WHERE { GRAPH ?g { ?a trails:costUSD ?usd } }", g=IRI(cont))
    assert usd[0]["usd"] == 0.0  # a local provider costs 0
    fresh = ingestor(store, idle_timeout=10, clock=lambda: 100.0)
    assert fresh.adopt_open_sessions() == [cont]  # a restarted receiver takes over open sessions
    assert fresh.sweep(now=111) == [cont]
    assert verify(store).ok


def test_older_content_events_and_indexed_messages_are_read() -> None:
    events = (
        SpanEvent(
            "gen_ai.content.prompt",
            T0,
            {"gen_ai.prompt": json.dumps([{"role": "user", "content": "hi"}])},
        ),
        SpanEvent(
            "gen_ai.content.completion",
            T0,
            {"gen_ai.completion": json.dumps([{"role": "assistant", "content": "hello"}])},
        ),
    )
    reading = read_span(
        span(
            1,
            "chat",
            {"gen_ai.system": "Anthropic", "gen_ai.request.model": "claude-haiku-4-5"},
            events=events,
        )
    )
    assert (reading.category, reading.provider) == ("inference", "anthropic")
    assert (
        reading.messages == [{"role": "user", "content": "hi"}] and reading.output_text == "hello"
    )
    oi = read_span(
        span(
            2,
            "ChatCompletion",
            {
                "openinference.span.kind": "LLM",
                "llm.system": "openai",
                "llm.model_name": "gpt-4o",
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "be brief",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": "x?",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_9",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "f",
                "llm.token_count.prompt": 7,
                "llm.token_count.completion_details.reasoning": 3,
            },
        )
    )
    assert [m["role"] for m in oi.messages or []] == ["system", "user"]
    assert (
        oi.requested_tool_calls == ("call_9",) and oi.reasoning_tokens == 3 and oi.input_tokens == 7
    )
