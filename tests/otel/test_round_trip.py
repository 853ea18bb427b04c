"""Real instrumentations -> ``trails otlp`` -> trails' own OTLP export: nothing lost, nothing made up.

Each instrumentation (openai-v2 with content on the spans, OpenLLMetry's OpenAI
instrumentation, pydantic-ai's own) drives the real openai SDK against a loopback
OpenAI-compatible fake through a tool call and a failed call, exporting protobuf to
``trails otlp``; an in-memory exporter beside it keeps what was really emitted. What trails
recorded is checked against it attribute by attribute, then the session is exported as
OTLP/JSON, read back by an OTLP decoder, and compared span for span.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.llm.llm_fakes import Reply
from tests.otel.conftest import Receiver
from tests.otel.test_receiver import fake_openai_with_a_tool_call, rows, run_instrumented_app

from trails.evidence.verify import verify
from trails.otel.export import session_otlp_json
from trails.otel.otlp import Span, decode_json
from trails.store import Store

RECORDED = """
SELECT ?a ?trace ?span ?op ?status ?etype ?requested ?model ?who WHERE { GRAPH ?g {
  ?a trails:traceId ?trace ; trails:spanId ?span ; trails:operationName ?op .
  OPTIONAL { ?a trails:status ?status } OPTIONAL { ?a trails:errorType ?etype }
  OPTIONAL { ?a trails:requestModel ?requested }
  OPTIONAL { ?a prov:wasAssociatedWith ?m . ?m a trails:Model ; trails:modelId ?model }
  OPTIONAL { ?a prov:wasAssociatedWith ?p . ?p trails:principalId ?who .
             FILTER NOT EXISTS { ?p a trails:Model } }
} }"""


def _plain(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def openai_v2(provider: TracerProvider) -> Callable[[], None]:
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor.uninstrument


def openllmetry(provider: TracerProvider) -> Callable[[], None]:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor.uninstrument


def sdk_app(provider: TracerProvider, url: str) -> None:
    """The plain openai-SDK agent of the receiver tests, then a call the model server fails."""
    fake = fake_openai_with_a_tool_call()
    fake.enqueue(Reply(status=500, json={"error": {"message": "the model is down"}}))
    try:
        with provider.get_tracer("shop-app").start_as_current_span("shop request") as root:
            root.set_attribute("enduser.id", "did:example:alice")
            run_instrumented_app(provider, fake)
            client = openai.OpenAI(base_url=f"{fake.url}/v1", api_key="k", max_retries=0)
            with pytest.raises(openai.InternalServerError):
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "and y?"}]
                )
    finally:
        fake.close()


def pydantic_ai_app(provider: TracerProvider, url: str) -> None:
    """A pydantic-ai agent with one tool: a run that calls it, then a run the model server fails."""
    from pydantic_ai import Agent
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.exceptions import ModelHTTPError
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    fake = fake_openai_with_a_tool_call()
    fake.enqueue(Reply(status=500, json={"error": {"message": "the model is down"}}))
    try:
        client = openai.AsyncOpenAI(base_url=f"{fake.url}/v1", api_key="k", max_retries=0)
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
        settings = InstrumentationSettings(tracer_provider=provider)
        agent = Agent(model, name="shop", capabilities=[Instrumentation(settings=settings)])

        @agent.tool_plain
        def lookup(q: str) -> dict[str, Any]:
            return {"aisle": 3, "b": [1, 2]}

        with provider.get_tracer("shop-app").start_as_current_span("shop request") as root:
            root.set_attribute("enduser.id", "did:example:alice")
            assert agent.run_sync("find x").output == "x is in aisle 3"
            with pytest.raises(ModelHTTPError):
                agent.run_sync("and y?")
    finally:
        fake.close()


APPS: dict[str, tuple[Callable[[TracerProvider], Callable[[], None]] | None, Any]] = {
    "openai-v2": (openai_v2, sdk_app),
    "openllmetry": (openllmetry, sdk_app),
    "pydantic-ai": (None, pydantic_ai_app),
}


def run_app(name: str, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> list[ReadableSpan]:
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true")
    truth = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "shop-app"}))
    provider.add_span_processor(SimpleSpanProcessor(truth))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.traces)))
    instrument, app = APPS[name]
    undo = instrument(provider) if instrument is not None else None
    try:
        app(provider, receiver.url)
    finally:
        if undo is not None:
            undo()
        provider.shutdown()
    receiver.ingestor.sweep(float("inf"))
    return list(truth.get_finished_spans())


@pytest.mark.parametrize("name", sorted(APPS))
def test_what_the_instrumentation_emitted_is_recorded_and_exported_back(
    make_receiver: Any, store: Store, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    receiver: Receiver = make_receiver()
    emitted = run_app(name, receiver, monkeypatch)
    truth = {format(s.context.span_id, "016x"): s for s in emitted}
    recorded = {r["span"]: r for r in rows(store, RECORDED)}
    assert set(recorded) == set(truth)  # every span, none made up
    calls = 0
    for span_id, sent in truth.items():
        attrs = dict(sent.attributes or {})
        row = recorded[span_id]
        assert row["trace"] == format(sent.context.trace_id, "032x")
        assert row["op"] == attrs.get("gen_ai.operation.name", "span")
        assert row["who"] == "did:example:alice"  # the end user of the root, inherited
        failed = not sent.status.is_ok
        assert (row.get("status") == "error") == failed or row["op"] == "invoke_agent"
        if failed and "error.type" in attrs:
            assert row["etype"] == attrs["error.type"]
        if row["op"] == "chat":
            assert row["requested"] == attrs["gen_ai.request.model"]
            assert row["model"] == attrs.get("gen_ai.response.model", attrs["gen_ai.request.model"])
            reasons = rows(
                store,
                "SELECT ?a ?r WHERE { GRAPH ?g { ?a trails:finishReason ?r } }",
                a=row["a"],
            )
            assert sorted(r["r"] for r in reasons) == sorted(
                attrs.get("gen_ai.response.finish_reasons", ())
            )
        if row["op"] == "execute_tool":
            calls += 1
            linked = rows(
                store,
                """SELECT ?a ?c ?id WHERE { GRAPH ?g { ?a trails:requestedBy ?c ;
                     trails:toolCallId ?id . ?c trails:toolCallId ?id } }""",
                a=row["a"],
            )
            assert [r["id"] for r in linked] == [attrs["gen_ai.tool.call.id"]]
    assert calls == 1
    assert verify(store).ok

    # trails' export, read by an OTLP decoder: the same spans, span for span
    sessions = {r["g"] for r in rows(store, "SELECT ?g WHERE { GRAPH ?g { ?g a trails:Session } }")}
    payload = session_otlp_json(store, sorted(str(s) for s in sessions))
    back: dict[str, Span] = {s.span_id: s for s in decode_json(json.dumps(payload).encode())}
    assert set(back) == set(truth)
    for span_id, sent in truth.items():
        got = back[span_id]
        assert got.trace_id == format(sent.context.trace_id, "032x")
        assert got.parent_id == (format(sent.parent.span_id, "016x") if sent.parent else None)
        assert got.name == sent.name
        assert got.status == {0: "unset", 1: "ok", 2: "error"}[sent.status.status_code.value]
        assert got.attributes == _plain(dict(sent.attributes or {}))  # tool results byte for byte
        assert [(e.name, e.attributes) for e in got.events] == [
            (e.name, _plain(dict(e.attributes or {}))) for e in sent.events
        ]


def rootless_calls(provider: TracerProvider, user: str) -> None:
    """An app with no root span: each model call and each tool execution is a trace of its own."""
    tracer = provider.get_tracer("shop-app")
    with tracer.start_as_current_span("chat gpt-4o-mini") as chat:
        chat.set_attributes(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "enduser.id": user,
                "gen_ai.output.messages": json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "id": "call_7",
                                    "name": "lookup",
                                    "arguments": {},
                                }
                            ],
                        }
                    ]
                ),
            }
        )
    with tracer.start_as_current_span("execute_tool lookup") as tool:
        tool.set_attributes(
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup",
                "gen_ai.tool.call.id": "call_7",
                "enduser.id": user,
            }
        )


@pytest.mark.parametrize("window", [None, 60.0], ids=["per-trace", "grouped"])
def test_an_app_without_root_spans_grouped_by_service_and_user(
    make_receiver: Any, store: Store, window: float | None
) -> None:
    now = [0.0]
    receiver: Receiver = make_receiver(group_window=window, idle=120.0)
    receiver.ingestor.clock = lambda: now[0]
    provider = TracerProvider(resource=Resource.create({"service.name": "shop-app"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=receiver.traces)))
    rootless_calls(provider, "did:example:alice")
    rootless_calls(provider, "did:example:bob")
    now[0] = 200.0  # beyond the window: a new session, even for the same user
    rootless_calls(provider, "did:example:alice")
    provider.shutdown()
    receiver.ingestor.sweep(float("inf"))
    found = rows(
        store,
        """SELECT ?g (COUNT(DISTINCT ?a) AS ?n) (COUNT(DISTINCT ?t) AS ?linked) WHERE { GRAPH ?g {
             ?a trails:spanId ?id . OPTIONAL { ?t trails:requestedBy ?c } } } GROUP BY ?g""",
    )
    if window is None:  # one session per trace: a call is not linked to its request
        assert sorted((r["n"], r["linked"]) for r in found) == [(1, 0)] * 6
    else:  # alice's and bob's first calls, then alice's later one: each linked
        assert sorted((r["n"], r["linked"]) for r in found) == [(2, 1)] * 3
    assert verify(store).ok


def test_a_store_keeping_hashes_only_exports_no_made_up_values(store: Store) -> None:
    """Without the span record's content, the export sends what was recorded: no counts, no params."""
    from trails.otel.export import session_spans
    from trails.otel.ingest import Ingestor
    from trails.prov import Recorder

    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "chat gpt-4o-mini",
        "startTimeUnixNano": "1714000000000000000",
        "endTimeUnixNano": "1714000001000000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o-mini"}},
        ],
    }
    payload = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    ingestor = Ingestor(Recorder(store, content="hash"))
    result = ingestor.ingest(decode_json(json.dumps(payload).encode()))
    assert result.written == 1 and result.ended
    sent = session_spans(store, result.ended[0])
    chat = [s for s in sent if s.name == "chat gpt-4o-mini"]
    assert len(chat) == 1
    attrs = dict(chat[0].attributes or {})
    assert not [k for k in attrs if k.startswith("gen_ai.usage.")]
    assert "gen_ai.request.max_tokens" not in attrs and "gen_ai.request.temperature" not in attrs
