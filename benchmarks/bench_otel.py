"""The OpenTelemetry bridge: span ingestion through ``POST /v1/traces``, and what exporting costs an app.

1. Ingestion. Batches of 512 GenAI spans (per trace: an agent span, then chat
   spans with content and tool spans, each tool call linked to its chat) are
   encoded as OTLP/protobuf by the SDK's own encoder and POSTed to a real
   ``trails`` receiver (uvicorn on loopback, in-memory store). The baseline,
   in the same run, writes the very quads those batches became straight to a
   fresh in-memory store (``Store.write``, one write per batch, as the
   receiver does). Figure: spans/s through HTTP against spans/s of the direct
   writes (target >= 0.6x).
2. Overhead for an instrumented app. A plain openai-SDK app (the real SDK
   under ``opentelemetry-instrumentation-openai-v2``, against a loopback fake
   of the OpenAI API) with the ``BatchSpanProcessor`` pointed at ``trails
   otlp`` (a process of its own), against the same app whose tracer provider
   has no exporter.
3. Trails' own exporter. The per-span cost of ``SpanEmitter`` (a recorded
   completion or tool invocation turned into a span and handed to a span
   processor) against the plain OpenTelemetry SDK making the same span with a
   tracer (``start_as_current_span`` with the same attributes), both ending in
   the same exporter that encodes each span as OTLP/protobuf, same run.

Run: ``python benchmarks/bench_otel.py``.
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.llm.llm_fakes

import httpx
import uvicorn
from _report import write_section
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags

from trails.otel.ingest import Ingestor
from trails.otel.otlp import decode_protobuf
from trails.prov import Recorder
from trails.server.traces import receiver_app
from trails.store import Quad, Store, open_store

BATCH = 512
BATCHES = 12
RESOURCE = Resource.create({"service.name": "bench-agent"})


def _ctx(trace: int, span: int) -> SpanContext:
    return SpanContext(trace, span, False, TraceFlags(TraceFlags.SAMPLED))


def batch(number: int) -> bytes:
    """One OTLP/protobuf body of 512 spans: 2 traces of an agent, 128 chats and 127 tools each."""
    spans: list[ReadableSpan] = []
    t0 = 1_750_000_000_000_000_000 + number * 10_000_000_000
    for t in range(2):
        trace = (number << 8 | t) + 1
        root = _ctx(trace, trace << 16 | 1)  # span ids unique across traces, as exporters make them
        spans.append(
            ReadableSpan(
                "invoke_agent bench",
                root,
                None,
                RESOURCE,
                {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench"},
                start_time=t0,
                end_time=t0 + 9_000_000_000,
            )
        )
        for i in range(255):
            sid = i + 2
            at = t0 + 1_000_000 * (i + 1)
            if i % 2 == 0:
                attrs: dict[str, Any] = {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.usage.input_tokens": 900 + i,
                    "gen_ai.usage.output_tokens": 40,
                    "gen_ai.input.messages": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": f"question {i}"}]}]
                    ),
                    "gen_ai.output.messages": json.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [
                                    {
                                        "type": "tool_call",
                                        "id": f"c{t}-{i}",
                                        "name": "lookup",
                                        "arguments": {"n": i},
                                    }
                                ],
                            }
                        ]
                    ),
                }
                name, kind = "chat gpt-4o-mini", SpanKind.CLIENT
            else:
                attrs = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.id": f"c{t}-{i - 1}",
                    "gen_ai.tool.call.arguments": json.dumps({"n": i - 1}),
                    "gen_ai.tool.call.result": json.dumps({"square": (i - 1) ** 2}),
                }
                name, kind = "execute_tool lookup", SpanKind.INTERNAL
            spans.append(
                ReadableSpan(
                    name,
                    _ctx(trace, trace << 16 | sid),
                    root,
                    RESOURCE,
                    attrs,
                    kind=kind,
                    start_time=at,
                    end_time=at + 500_000,
                )
            )
    assert len(spans) == BATCH
    return bytes(encode_spans(spans).SerializeToString())


class Capture:
    """A store that keeps the quads of each write (to replay them as the baseline)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.writes: list[list[Quad]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def write(self, quads: Any, **kw: Any) -> None:
        quads = list(quads)
        self.writes.append(quads)
        self.inner.write(quads, **kw)


class Process:
    """``trails otlp`` as a real process on a free loopback port (in-memory store)."""

    def __init__(self) -> None:
        import os
        import socket
        import subprocess

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = {**os.environ, "TRAILS_STORE": "memory:"}
        command = [sys.executable, "-m", "trails.cli", "otlp", "--port", str(self.port)]
        self.process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
        for _ in range(600):
            try:
                httpx.post(self.url, content=b"{}", headers={"content-type": "application/json"})
                return
            except httpx.TransportError:
                time.sleep(0.05)
        raise RuntimeError("trails otlp did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/traces"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


class Server:
    def __init__(self, app: Any) -> None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/traces"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def through_http(bodies: list[bytes]) -> float:
    store = open_store("memory:")
    server = Server(receiver_app(Ingestor(Recorder(store)), sweep_every=3600))
    try:
        with httpx.Client() as client:
            start = time.perf_counter()
            for body in bodies:
                answer = client.post(
                    server.url, content=body, headers={"content-type": "application/x-protobuf"}
                )
                assert answer.status_code == 200, answer.text
            return time.perf_counter() - start
    finally:
        server.stop()
        store.close()


def direct(writes: list[list[Quad]]) -> float:
    store = open_store("memory:")
    start = time.perf_counter()
    for quads in writes:
        store.write(quads)
    elapsed = time.perf_counter() - start
    store.close()
    return elapsed


def ingestion() -> tuple[float, float, float, float, float]:
    bodies = [batch(n) for n in range(BATCHES)]
    capture = Capture(open_store("memory:"))
    ingestor = Ingestor(Recorder(capture))  # type: ignore[arg-type]
    for body in bodies:
        ingestor.ingest(decode_protobuf(body))
    spans = BATCH * BATCHES
    http_t, direct_t = [], []
    for _ in range(5):  # interleaved, so both see the same machine load
        http_t.append(through_http(bodies))
        direct_t.append(direct(capture.writes))
    paired = sorted(d / h for h, d in zip(http_t, direct_t, strict=True))  # each round's own ratio
    return (
        spans / statistics.median(http_t),
        spans / statistics.median(direct_t),
        statistics.median(paired),
        paired[0],
        paired[-1],
    )


def app_overhead(calls: int = 100, rounds: int = 6) -> tuple[float, float, float]:
    import openai
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from tests.llm.llm_fakes import FakeServer, Reply, openai_chat

    fake = FakeServer()
    server = Process()  # `trails otlp` in a process of its own, as an app would use it
    client = openai.OpenAI(base_url=f"{fake.url}/v1", api_key="bench", max_retries=0)

    def run(provider: TracerProvider) -> float:
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        fake.enqueue(*[Reply(json=openai_chat("ok", model="gpt-4o-mini")) for _ in range(calls)])
        tracer = provider.get_tracer("bench-app")
        start = time.perf_counter()
        for i in range(calls):
            with tracer.start_as_current_span(
                "invoke_agent app", attributes={"gen_ai.operation.name": "invoke_agent"}
            ):
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": f"q{i}"}]
                )
        elapsed = (time.perf_counter() - start) / calls
        instrumentor.uninstrument()
        return elapsed

    bare: list[float] = []
    exported: list[float] = []
    flush: list[float] = []

    def with_exporter() -> None:
        provider = TracerProvider(resource=RESOURCE)
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=server.url)))
        exported.append(run(provider))
        start = time.perf_counter()
        provider.shutdown()
        flush.append(time.perf_counter() - start)

    run(TracerProvider(resource=RESOURCE))  # warm-up: first calls, imports
    for i in range(rounds):  # alternate which goes first, so neither always runs warm
        if i % 2:
            with_exporter()
            bare.append(run(TracerProvider(resource=RESOURCE)))
        else:
            bare.append(run(TracerProvider(resource=RESOURCE)))
            with_exporter()
    server.stop()
    fake.close()
    return statistics.median(bare), statistics.median(exported), statistics.median(flush)


class Encoding:
    """A span exporter that encodes what it gets as OTLP/protobuf (what an exporter does first)."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        encode_spans(list(spans)).SerializeToString()
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def exporter_cost(spans: int = 4000, rounds: int = 7) -> tuple[float, float, float]:
    """Seconds per span: trails' ``SpanEmitter`` vs the SDK's tracer, same attributes and exporter."""
    from datetime import UTC, datetime, timedelta

    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from trails.otel.exporter import SpanEmitter
    from trails.prov.events import CapabilityInvoked, LLMCompleted

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    session = "urn:trails:session:bench"
    events: list[Any] = []
    for i in range(spans):
        at = t0 + timedelta(milliseconds=i)
        if i % 2 == 0:
            events.append(
                LLMCompleted(
                    session=session,
                    activity=f"{session}:c{i}",
                    parent=None,
                    principal="did:example:alice",
                    provider="openai",
                    model="gpt-4o-mini",
                    started=at,
                    ended=at,
                    messages=[{"role": "user", "content": f"question {i}"}],
                    params={"max_tokens": 256},
                    request_hash=f"{i:064x}",
                    text=f"answer {i}",
                    input_tokens=900,
                    output_tokens=40,
                )
            )
        else:
            events.append(
                CapabilityInvoked(
                    session=session,
                    activity=f"{session}:t{i}",
                    parent=None,
                    principal="did:example:alice",
                    capability_id="lookup",
                    started=at,
                    ended=at,
                    status="ok",
                    inputs={"n": i},
                    output={"square": i * i},
                )
            )
    emitter = SpanEmitter(SimpleSpanProcessor(Encoding()), resource=RESOURCE)  # type: ignore[arg-type]
    sample = [emitter.span_data(e) for e in events]  # the attributes the SDK side sets too

    def trails_side() -> float:
        emitter = SpanEmitter(SimpleSpanProcessor(Encoding()), resource=RESOURCE)  # type: ignore[arg-type]
        start = time.perf_counter()
        for event in events:
            emitter(_NO_RECORDER, event)  # type: ignore[arg-type]
        return (time.perf_counter() - start) / spans

    def sdk_side() -> float:
        provider = TracerProvider(resource=RESOURCE)
        provider.add_span_processor(SimpleSpanProcessor(Encoding()))  # type: ignore[arg-type]
        tracer = provider.get_tracer("bench")
        start = time.perf_counter()
        for data in sample:
            assert data is not None
            attributes = {k: v for k, v in data.attributes.items() if v is not None}
            with tracer.start_as_current_span(data.name, kind=data.kind, attributes=attributes):
                pass
        return (time.perf_counter() - start) / spans

    trails_t, sdk_t = [], []
    for i in range(rounds):  # alternate which goes first
        if i % 2:
            trails_t.append(trails_side())
            sdk_t.append(sdk_side())
        else:
            sdk_t.append(sdk_side())
            trails_t.append(trails_side())
    ratios = sorted(t / s for t, s in zip(trails_t, sdk_t, strict=True))
    return statistics.median(trails_t), statistics.median(sdk_t), statistics.median(ratios)


class _NoRecorder:
    content = "full"


_NO_RECORDER = _NoRecorder()


def main() -> None:
    via_http, straight, ratio, low, high = ingestion()
    bare, exported, flush = app_overhead()
    ours, plain, cost_ratio = exporter_cost()
    markdown = f"""## OpenTelemetry bridge (`benchmarks/bench_otel.py`)

Ingestion: {BATCHES} batches of {BATCH} GenAI spans (agent, chat with content, tool with its
call id) as OTLP/protobuf, POSTed one after the other to the `trails otlp` app (uvicorn, loopback,
in this process) over an in-memory store without sealing, against writing the very same quads straight to a fresh
in-memory store (one write per batch) in the same run. Medians of 5 interleaved rounds.

| path | spans/s |
| --- | ---: |
| `POST /v1/traces` (decode, map, keep each span's record, dedupe lookups, one atomic write per batch) | {via_http:,.0f} |
| the same quads straight to the store | {straight:,.0f} |

**Ratio HTTP / direct: {ratio:.2f}x** (median of the rounds' own ratios, which ranged
{low:.2f}-{high:.2f}x on this shared machine; target: >= 0.6x).

What an instrumented app pays: the real openai SDK under `opentelemetry-instrumentation-openai-v2`
calling a loopback fake of the OpenAI API (one chat per agent span), exporting to `trails otlp`
running as a process of its own; medians of 6 alternating rounds of 100 calls, per call:

| tracer provider | per call |
| --- | ---: |
| no exporter | {bare * 1000:.2f} ms |
| `BatchSpanProcessor` -> `OTLPSpanExporter` -> `trails otlp` | {exported * 1000:.2f} ms |

**Overhead: {(exported / bare - 1) * 100:+.1f}%** per call (the export itself runs on the
processor's thread; flushing the rest at shutdown took {flush * 1000:.0f} ms).

Trails' own exporter: the per-span cost of `SpanEmitter` turning recorded completions and tool
invocations (content included) into spans, against the plain OpenTelemetry SDK making the same
spans with a tracer and the same attributes, both through a `SimpleSpanProcessor` into an
exporter that encodes every span as OTLP/protobuf; 4,000 spans, medians of 7 alternating rounds:

| spans made by | per span |
| --- | ---: |
| the SDK's tracer (`start_as_current_span`) | {plain * 1e6:.1f} µs |
| trails' `SpanEmitter` (event -> span) | {ours * 1e6:.1f} µs |

**Ratio trails / SDK: {cost_ratio:.2f}x** per span.
"""
    write_section("otel", markdown)
    print(markdown)


if __name__ == "__main__":
    main()
