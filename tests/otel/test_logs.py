"""``POST /v1/logs``: message content sent as log records, by real instrumentations and SDK exporters.

openai-v2 (2.4b0) in ``EVENT_ONLY`` mode around the real openai SDK, against a loopback
OpenAI-compatible fake, with a tool call and a failed call; the SDK's OTLP exporters send the
spans to ``/v1/traces`` and the log records to ``/v1/logs`` (in either order), and an
in-memory exporter beside each gives what was really emitted. What trails recorded is
checked against it attribute by attribute, and the session exported again is compared
span for span.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from opentelemetry.exporter.otlp.json.http._log_exporter import (
    OTLPLogExporter as JsonLogExporter,
)
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    InMemoryLogRecordExporter,
    LogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.llm.llm_fakes import Reply
from tests.otel.conftest import Receiver
from tests.otel.test_ownership import tokens_file
from tests.otel.test_receiver import fake_openai_with_a_tool_call, rows, run_instrumented_app
from tests.server.conftest import wait_for
from tests.servers import free_port

from trails.evidence.verify import verify
from trails.otel.export import session_spans
from trails.store import Store, open_store

TRAILS = (sys.executable, "-m", "trails.cli")

COMPLETIONS = """
SELECT ?a ?span ?prompt ?text ?status ?etype ?rid ?requested ?model WHERE { GRAPH ?g {
  ?a a trails:LLMCompletion ; trails:spanId ?span ; trails:status ?status ; prov:used ?p ;
     prov:wasAssociatedWith ?m .
  ?m a trails:Model ; trails:modelId ?model .
  ?p a trails:Prompt . GRAPH ?cg { ?p prov:value ?prompt }
  OPTIONAL { ?c prov:wasGeneratedBy ?a ; a trails:Completion . GRAPH ?cg2 { ?c prov:value ?text } }
  OPTIONAL { ?a trails:errorType ?etype } OPTIONAL { ?a trails:requestId ?rid }
  OPTIONAL { ?a trails:requestModel ?requested }
} }"""


class Run:
    """One instrumented app run: what the SDK emitted (ground truth) and where it went."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.logs = InMemoryLogRecordExporter()

    def truth(self) -> dict[str, ReadableSpan]:
        return {format(s.context.span_id, "016x"): s for s in self.spans.get_finished_spans()}

    def details(self) -> dict[str, dict[str, Any]]:
        """The operation.details records of each chat span, by span id."""
        out = {}
        for data in self.logs.get_finished_logs():
            record = data.log_record
            if record.event_name == "gen_ai.client.inference.operation.details":
                out[format(record.span_id, "016x")] = dict(record.attributes or {})
        return out


def failing_call(client: openai.OpenAI) -> None:
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "and y?"}]
        )


def instrumented_run(
    monkeypatch: pytest.MonkeyPatch,
    traces: str,
    logs: str,
    *,
    logs_first: bool,
    headers: dict[str, str] | None = None,
    log_exporter: LogRecordExporter | None = None,
) -> Run:
    """openai-v2 in EVENT_ONLY mode: a tool call, its result, the answer, then a failed call."""
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "EVENT_ONLY")
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    run = Run()
    resource = Resource.create({"service.name": "shop-app"})
    tracer = TracerProvider(resource=resource)
    tracer.add_span_processor(SimpleSpanProcessor(run.spans))
    tracer.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=traces, headers=headers))
    )
    logger = LoggerProvider(resource=resource)
    logger.add_log_record_processor(SimpleLogRecordProcessor(run.logs))
    sender = log_exporter or OTLPLogExporter(
        endpoint=logs, headers=headers, compression=Compression.Gzip
    )
    logger.add_log_record_processor(BatchLogRecordProcessor(sender))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer, logger_provider=logger)
    fake = fake_openai_with_a_tool_call()
    fake.enqueue(Reply(status=500, json={"error": {"message": "the model is down"}}))
    try:
        with tracer.get_tracer("shop-app").start_as_current_span("invoke_agent shop") as agent:
            agent.set_attribute("gen_ai.operation.name", "invoke_agent")
            agent.set_attribute("gen_ai.agent.name", "shop")
            run_instrumented_app(tracer, fake)
            failing_call(openai.OpenAI(base_url=f"{fake.url}/v1", api_key="k", max_retries=0))
    finally:
        instrumentor.uninstrument()
        fake.close()
        first, second = (logger, tracer) if logs_first else (tracer, logger)
        first.shutdown()
        second.shutdown()
    return run


def check_recorded(store: Store, run: Run) -> None:
    """Every chat span's recorded completion says what the span and its log record said."""
    truth, details = run.truth(), run.details()
    found = {r["span"]: r for r in rows(store, COMPLETIONS)}
    chats = {k: s for k, s in truth.items() if s.attributes.get("gen_ai.operation.name") == "chat"}
    assert set(found) == set(chats) and len(chats) == 3
    for span_id, span in chats.items():
        row, attrs = found[span_id], dict(span.attributes or {})
        prompt = json.loads(row["prompt"])
        assert row["requested"] == attrs["gen_ai.request.model"]
        assert row["model"] == attrs.get("gen_ai.response.model", attrs["gen_ai.request.model"])
        assert prompt["params"] == {}  # the app set none: none is made up
        if not span.status.is_ok:  # the failed call: its error type, no completion text
            assert row["status"] == "error" and row["etype"] == attrs["error.type"]
            assert row.get("text") is None
            assert prompt["messages"] == [{"role": "user", "content": "and y?"}]  # from its log
            continue
        detail = details[span_id]
        assert row["status"] == "ok" and row["rid"] == attrs["gen_ai.response.id"]
        sent = [
            p["content"]
            for m in detail["gen_ai.input.messages"]
            for p in m["parts"]
            if p["type"] == "text"
        ]
        assert [m["content"] for m in prompt["messages"]][: len(sent)] == sent
        out = detail["gen_ai.output.messages"][0]["parts"][0]
        if out["type"] == "text":
            assert row["text"] == out["content"]
        else:  # the tool call: its id, name and arguments, as the model sent them
            assert json.loads(row["text"])["tool_calls"] == [
                {"id": out["id"], "name": out["name"], "arguments": dict(out["arguments"])}
            ]
        reasons = rows(
            store,
            "SELECT ?s ?r WHERE { GRAPH ?g { ?a trails:spanId ?s ; trails:finishReason ?r } }",
            s=_lit(span_id),
        )
        assert [r["r"] for r in reasons] == list(attrs["gen_ai.response.finish_reasons"])
    tool = rows(
        store,
        """SELECT ?args ?result WHERE { GRAPH ?g { ?t a trails:CapabilityInvocation ;
             trails:requestedBy ?c ; trails:toolCallId "call_1" .
             ?c trails:toolCallId "call_1" } }""",
    )
    assert len(tool) == 1  # the call is linked to the completion that asked for it
    assert verify(store).ok


def _lit(text: str) -> Any:
    from trails.store.terms import Literal

    return Literal(text, "http://www.w3.org/2001/XMLSchema#string")


def check_round_trip(store: Store, run: Run) -> None:
    """The session exported again gives the spans the app sent: ids, names, attributes, events."""
    sessions = {r["g"] for r in rows(store, "SELECT ?g WHERE { GRAPH ?g { ?g a trails:Session } }")}
    assert len(sessions) == 1
    again = {format(s.context.span_id, "016x"): s for s in session_spans(store, sessions.pop())}
    truth = run.truth()
    assert set(again) == set(truth)  # no span lost, none made up (no extra root)
    for span_id, sent in truth.items():
        back = again[span_id]
        assert back.context.trace_id == sent.context.trace_id
        assert (back.parent.span_id if back.parent else None) == (
            sent.parent.span_id if sent.parent else None
        )
        assert back.name == sent.name and back.kind == sent.kind
        assert back.status.status_code == sent.status.status_code
        assert {k: _plain(v) for k, v in (back.attributes or {}).items()} == {
            k: _plain(v) for k, v in (sent.attributes or {}).items()
        }
        assert [(e.name, _plain(dict(e.attributes or {}))) for e in back.events] == [
            (e.name, _plain(dict(e.attributes or {}))) for e in sent.events
        ]


def _plain(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("logs_first", [True, False], ids=["logs-first", "spans-first"])
def test_openai_v2_event_only_content_reaches_its_completions(
    make_receiver: Any, store: Store, monkeypatch: pytest.MonkeyPatch, logs_first: bool
) -> None:
    receiver: Receiver = make_receiver(log_wait=5.0)
    run = instrumented_run(
        monkeypatch, receiver.traces, f"{receiver.url}/v1/logs", logs_first=logs_first
    )
    # the root span came: the session ended then, or waited for content sent as logs
    receiver.ingestor.sweep(float("inf"))
    assert receiver.ingestor.open_sessions() == []
    check_recorded(store, run)
    check_round_trip(store, run)


def test_otlp_json_log_exporter_is_read_too(
    make_receiver: Any, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    receiver: Receiver = make_receiver(log_wait=5.0)
    logs = f"{receiver.url}/v1/logs"
    run = instrumented_run(
        monkeypatch,
        receiver.traces,
        logs,
        logs_first=True,
        log_exporter=JsonLogExporter(endpoint=logs),
    )
    receiver.ingestor.sweep(float("inf"))
    check_recorded(store, run)


def semconv_130_records(trace_id: str, span_id: str) -> dict[str, Any]:
    """The per-message log events of the conventions 1.30, as OTLP/JSON, plus an app's own log."""

    def record(name: str | None, body: dict[str, Any] | str) -> dict[str, Any]:
        value = (
            {"stringValue": body}
            if isinstance(body, str)
            else {"kvlistValue": {"values": [_kv(k, v) for k, v in body.items()]}}
        )
        out: dict[str, Any] = {"timeUnixNano": "1714000000500000000", "body": value}
        if name:
            out.update(traceId=trace_id, spanId=span_id, eventName=name)
        return out

    call = {"id": "call_9", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    records = [
        record("gen_ai.system.message", {"content": "You sell shoes."}),
        record("gen_ai.user.message", {"content": "find x"}),
        record("gen_ai.assistant.message", {"tool_calls": [call]}),
        record("gen_ai.tool.message", {"id": "call_9", "content": '{"aisle":3,"b":1}'}),
        record(
            "gen_ai.choice",
            {"index": 0, "finish_reason": "stop", "message": {"content": "aisle 3"}},
        ),
        record(None, "GET /health 200"),  # an app's own log: ignored
    ]
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}


def _kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {
            "key": key,
            "value": {"kvlistValue": {"values": [_kv(k, v) for k, v in value.items()]}},
        }
    if isinstance(value, list):
        items = [_kv("", v)["value"] for v in value]
        return {"key": key, "value": {"arrayValue": {"values": items}}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def test_semconv_130_message_events_and_other_logs(make_receiver: Any, store: Store) -> None:
    receiver: Receiver = make_receiver()
    trace_id, span_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    logs = httpx.post(
        f"{receiver.url}/v1/logs",
        content=json.dumps(semconv_130_records(trace_id, span_id)).encode(),
        headers={"content-type": "application/json"},
    )
    assert logs.status_code == 200 and logs.json() == {}, logs.text  # kept for their span
    span = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": "chat gpt-4o",
        "startTimeUnixNano": "1714000000000000000",
        "endTimeUnixNano": "1714000001000000000",
        "attributes": [
            _kv("gen_ai.system", "openai"),
            _kv("gen_ai.request.model", "gpt-4o"),
            _kv("gen_ai.completion.0.finish_reason", "stop"),
            _kv("server.address", "api.openai.com"),
            _kv("server.port", 443),
        ],
    }
    spans = httpx.post(
        receiver.traces,
        content=json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode(),
        headers={"content-type": "application/json"},
    )
    assert spans.status_code == 200, spans.text
    found = rows(store, COMPLETIONS)
    assert len(found) == 1
    prompt = json.loads(found[0]["prompt"])
    assert [m["role"] for m in prompt["messages"]] == ["system", "user", "assistant", "tool"]
    assert prompt["messages"][0]["content"] == "You sell shoes."
    assert '"id":"call_9"' in prompt["messages"][2]["content"]
    assert json.loads(prompt["messages"][3]["content"]) == {
        "response": '{"aisle":3,"b":1}',  # the tool's result byte for byte
        "tool_call_id": "call_9",
    }
    assert found[0]["text"] == "aisle 3"
    # no usage on the span: the counts are unknown, not 0
    counts = rows(
        store,
        """SELECT ?n WHERE { GRAPH ?g { ?a trails:inputTokens|trails:outputTokens
             |trails:cacheReadTokens|trails:cacheWriteTokens ?n } }""",
    )
    assert counts == []
    # attributes without a class of their own are kept verbatim on the span's record
    record = rows(
        store,
        """SELECT ?json WHERE { GRAPH ?g { ?a trails:spanRecord ?r .
             ?r a trails:SpanRecord . GRAPH ?cg { ?r prov:value ?json } } }""",
    )
    attrs = json.loads(record[0]["json"])["attributes"]
    assert attrs["server.address"] == "api.openai.com" and attrs["server.port"] == 443
    assert attrs["gen_ai.completion.0.finish_reason"] == "stop"


def test_a_log_record_for_a_sealed_session_is_refused_not_an_error(
    make_receiver: Any, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    receiver: Receiver = make_receiver(log_wait=5.0)
    run = instrumented_run(
        monkeypatch, receiver.traces, f"{receiver.url}/v1/logs", logs_first=False
    )
    receiver.ingestor.sweep(float("inf"))
    chat = next(k for k, s in run.truth().items() if s.name.startswith("chat"))
    trace = format(run.truth()[chat].context.trace_id, "032x")
    late = httpx.post(
        f"{receiver.url}/v1/logs",
        content=json.dumps(semconv_130_records(trace, chat)).encode(),
        headers={"content-type": "application/json"},
    )
    assert late.status_code == 200, late.text
    assert late.json()["partialSuccess"]["rejectedLogRecords"] == "5"
    assert verify(store).ok  # the sealed session was not written again


def test_trails_serve_records_logs_on_its_directory_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location = tmp_path / "store"
    open_store(str(location)).close()
    tokens = tokens_file(tmp_path / "tokens.toml")
    port = free_port()
    process = subprocess.Popen(
        [*TRAILS, "--store", str(location), "serve", "--port", str(port), "--tokens", str(tokens)],
        env={**os.environ, "TRAILS_STORE": "memory:"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert process.poll() is None, process.communicate()[1]
        try:
            return httpx.get(f"{url}/sparql", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(up)
        run = instrumented_run(
            monkeypatch,
            f"{url}/v1/traces",
            f"{url}/v1/logs",
            logs_first=False,
            headers={"authorization": "Bearer token-a"},
        )
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C: the worker ends the sessions it wrote
        _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    store = open_store(str(location))
    try:
        check_recorded(store, run)
    finally:
        store.close()


def test_a_bad_logs_payload_is_answered_400(make_receiver: Any) -> None:
    receiver: Receiver = make_receiver()
    answer = httpx.post(
        f"{receiver.url}/v1/logs", content=b"\xff\x00", headers={"content-type": "application/json"}
    )
    assert answer.status_code == 400 and "not JSON" in answer.text
    answer = httpx.post(
        f"{receiver.url}/v1/logs", content=b"x", headers={"content-type": "text/plain"}
    )
    assert answer.status_code == 415
