"""Who the receiver writes for and where: `trails serve` on its own directory store, one
namespace of sessions per write token, and no span ever written into a session it did not start.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from tests.otel.conftest import Receiver, tracer_provider
from tests.otel.test_receiver import agent_run, rows
from tests.server.conftest import wait_for
from tests.servers import free_port

from trails.evidence.verify import verify
from trails.prov import Recorder, SessionEnded, SessionStarted
from trails.prov.vocab import sparql_prefixes
from trails.server.auth import hash_token
from trails.server.write_tokens import load_write_tokens
from trails.store import IRI, Literal, Quad, Store, open_store

XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
FILLER = IRI("http://example.org/filler")

TENANT_A, TENANT_B = "did:example:tenant-a", "did:example:tenant-b"
ALICE = "did:example:alice"
TRAILS = (sys.executable, "-m", "trails.cli")
T0 = 1_767_225_600_000_000_000  # 2026-01-01, nanoseconds


def tokens_file(path: Path) -> Path:
    path.write_text(
        f'[[token]]\nprincipal = "{TENANT_A}"\nsha256 = "{hash_token("token-a")}"\nwrite = true\n\n'
        f'[[token]]\nprincipal = "{TENANT_B}"\nsha256 = "{hash_token("token-b")}"\nwrite = true\n\n'
        f'[[token]]\nprincipal = "did:example:auditor"\nsha256 = "{hash_token("reader")}"\n'
        'graphs = ["*"]\n'
    )
    return path


def chat_payload(conversation: str, trace: str, span: int, user: str | None = None) -> bytes:
    """One OTLP/JSON chat span of ``conversation``."""
    attributes = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.provider.name", "value": {"stringValue": "ollama"}},
        {"key": "gen_ai.request.model", "value": {"stringValue": "qwen3:8b"}},
        {"key": "gen_ai.conversation.id", "value": {"stringValue": conversation}},
    ]
    if user:
        attributes.append({"key": "enduser.id", "value": {"stringValue": user}})
    span_json = {
        "traceId": trace,
        "spanId": f"{span:016x}",
        "name": "chat qwen3:8b",
        "kind": 3,
        "startTimeUnixNano": str(T0 + span * 10**9),
        "endTimeUnixNano": str(T0 + span * 10**9 + 5 * 10**8),
        "attributes": attributes,
    }
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "app"}}]}
    body = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span_json]}]}]}
    return json.dumps(body).encode()


def post(url: str, body: bytes, token: str | None = None) -> httpx.Response:
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    return httpx.post(f"{url}/v1/traces", content=body, headers=headers, timeout=60)


def writers(store: Store, conversation: str) -> list[dict[str, Any]]:
    return rows(
        store,
        """SELECT ?c ?s ?writer ?user WHERE { GRAPH ?s {
             ?s trails:conversationId ?c ; prov:wasAssociatedWith ?writer .
             OPTIONAL { ?writer prov:actedOnBehalfOf ?user } } } ORDER BY ?writer""",
        c=Literal(conversation, XSD_STRING),
    )


def test_two_tenants_sending_the_same_conversation_id_get_two_sessions(
    make_receiver: Any, store: Store, tmp_path: Path
) -> None:
    tokens = load_write_tokens(tokens_file(tmp_path / "tokens.toml"))
    receiver: Receiver = make_receiver(tokens=tokens)
    trace_a, trace_b = "a" * 32, "b" * 32
    assert post(receiver.url, chat_payload("conv-1", trace_a, 1, ALICE), "token-a").json() == {}
    assert post(receiver.url, chat_payload("conv-1", trace_b, 1, ALICE), "token-b").json() == {}
    # tenant B names tenant A's trace: it still lands in B's namespace, never in A's session
    assert post(receiver.url, chat_payload("conv-1", trace_a, 2), "token-b").json() == {}
    found = writers(store, "conv-1")
    assert len({row["s"] for row in found}) == 2, found
    assert [row["writer"] for row in found] == [TENANT_A, TENANT_B]
    # the span's enduser.id is kept as the one the writer acted for, never as the writer
    assert [row.get("user") for row in found] == [ALICE, ALICE]
    session_a = next(row["s"] for row in found if row["writer"] == TENANT_A)
    spans_a = rows(
        store, "SELECT ?s ?a WHERE { GRAPH ?s { ?a trails:spanId ?id } }", s=IRI(session_a)
    )
    assert len(spans_a) == 1  # B's span with A's trace id did not go into A's session
    assert sorted(receiver.ingestor.sweep(float("inf"))) == sorted(r["s"] for r in found)
    assert verify(store).ok


def test_a_span_naming_a_native_session_never_writes_into_it(
    make_receiver: Any, store: Store, tmp_path: Path
) -> None:
    recorder = Recorder.from_settings(store=store)
    native = recorder.minter.session("case-1")
    recorder.record(  # a session of the Python API, open (another process may hold it)
        SessionStarted(session=native, principal=ALICE, started=datetime.now(UTC))
    )
    before = store.dump(format="nquads", graph=native)
    open_receiver: Receiver = make_receiver()  # loopback, no tokens: ids map as they are
    answer = post(open_receiver.url, chat_payload("case-1", "c" * 32, 1, "did:example:mallory"))
    assert answer.status_code == 200
    partial = answer.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert "was not started by this receiver" in partial["errorMessage"]
    assert str(native) in partial["errorMessage"]
    sealed = recorder.minter.session("case-2")  # ended and sealed: no continuation either
    recorder.record(SessionStarted(session=sealed, principal=ALICE, started=datetime.now(UTC)))
    recorder.record(SessionEnded(session=sealed, ended=datetime.now(UTC)))
    answer = post(open_receiver.url, chat_payload("case-2", "e" * 32, 1))
    assert answer.json()["partialSuccess"]["rejectedSpans"] == "1"
    assert str(sealed) in answer.json()["partialSuccess"]["errorMessage"]
    assert not [g for g in store.graphs() if "~" in str(g)]  # nor a continuation of it
    tokens = load_write_tokens(tokens_file(tmp_path / "tokens.toml"))
    with_tokens: Receiver = make_receiver(tokens=tokens)
    assert post(with_tokens.url, chat_payload("case-1", "d" * 32, 1), "token-a").json() == {}
    assert store.dump(format="nquads", graph=native) == before  # untouched either way
    recorder.record(SessionEnded(session=native, ended=datetime.now(UTC)))
    with_tokens.ingestor.sweep(float("inf"))
    report = verify(store)
    assert report.ok, report.findings  # the native session's seal holds


def test_protobuf_partial_success_for_spans_of_an_ended_continuation(
    make_receiver: Any, store: Store
) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    receiver: Receiver = make_receiver(idle=0.0)
    trace = "e" * 32
    assert post(receiver.url, chat_payload("conv-9", trace, 1)).json() == {}
    receiver.ingestor.sweep(float("inf"))  # conv-9 ends; a late trace goes to conv-9~TRACE
    assert post(receiver.url, chat_payload("conv-9", "f" * 32, 1)).json() == {}
    receiver.ingestor.sweep(float("inf"))  # ... which ends too: the same trace is now too late
    late = ExportTraceServiceRequest()
    span = late.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = bytes.fromhex("f" * 32), bytes(7) + b"\x02", "chat"
    span.start_time_unix_nano, span.end_time_unix_nano = T0 + 5 * 10**9, T0 + 6 * 10**9
    for key, value in (("gen_ai.operation.name", "chat"), ("gen_ai.conversation.id", "conv-9")):
        attribute = span.attributes.add()
        attribute.key, attribute.value.string_value = key, value
    answer = httpx.post(
        receiver.traces,
        content=late.SerializeToString(),
        headers={"content-type": "application/x-protobuf"},
    )
    assert answer.status_code == 200
    response = ExportTraceServiceResponse.FromString(answer.content)
    assert response.partial_success.rejected_spans == 1
    assert "arrived too late" in response.partial_success.error_message
    assert verify(store).ok


def test_trails_serve_accepts_the_sdk_exporter_on_its_directory_store_under_query_load(
    tmp_path: Path,
) -> None:
    location = tmp_path / "store"
    open_store(str(location)).close()  # serving never creates a store
    tokens = tokens_file(tmp_path / "tokens.toml")
    port = free_port()
    env = {**os.environ, "TRAILS_STORE": "memory:"}
    process = subprocess.Popen(
        [*TRAILS, "--store", str(location), "serve", "--port", str(port), "--tokens", str(tokens)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    reader = {"authorization": "Bearer reader", "accept": "application/sparql-results+json"}
    count = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"

    def up() -> bool:
        assert process.poll() is None, process.communicate()[1]
        try:
            return httpx.get(f"{url}/sparql", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    answered: list[int] = []
    stop = threading.Event()

    def load() -> None:  # queries all along, on the same worker that writes
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                got = client.get(f"{url}/sparql", params={"query": count}, headers=reader)
                answered.append(got.status_code)

    try:
        wait_for(up)
        clients = [threading.Thread(target=load) for _ in range(3)]
        for client in clients:
            client.start()
        results = []
        for n in range(3):
            exporter = OTLPSpanExporter(
                endpoint=f"{url}/v1/traces", headers={"authorization": "Bearer token-a"}
            )
            send = exporter.export
            exporter.export = lambda spans, send=send: results.append(send(spans)) or results[-1]  # type: ignore[method-assign]
            provider = tracer_provider(exporter)
            agent_run(provider, conversation=f"conv-{n}")
            provider.shutdown()
        stop.set()
        for client in clients:
            client.join()
        assert results and all(r.name == "SUCCESS" for r in results), results
        assert answered and set(answered) == {200}, set(answered)
        conversations = "SELECT ?c WHERE { GRAPH ?s { ?s trails:conversationId ?c } }"
        seen = httpx.get(  # what was written is read back while serving
            f"{url}/sparql",
            params={"query": sparql_prefixes() + conversations},
            headers=reader,
            timeout=60,
        )
        assert seen.status_code == 200, seen.text
        found = {b["c"]["value"] for b in seen.json()["results"]["bindings"]}
        assert found == {"conv-0", "conv-1", "conv-2"}
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C: the worker ends the sessions it wrote
        _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    store = open_store(str(location))
    try:
        ended = rows(
            store,
            """SELECT ?c ?writer WHERE { GRAPH ?s { ?s trails:conversationId ?c ;
                 prov:wasAssociatedWith ?writer ; prov:endedAtTime ?e } } ORDER BY ?c""",
        )
        assert ended == [{"c": f"conv-{n}", "writer": TENANT_A} for n in range(3)], ended
        assert len(rows(store, "SELECT ?a WHERE { GRAPH ?g { ?a trails:spanId ?id } }")) == 9
        report = verify(store)
        assert report.ok and report.seals >= 3, report.findings
    finally:
        store.close()


def test_a_query_killed_at_its_time_limit_loses_no_span_and_no_open_session(
    tmp_path: Path,
) -> None:
    from tests.server.conftest import serving

    from trails.config import load_settings
    from trails.server import EndpointConfig, create_app
    from trails.server.auth import load_tokens
    from trails.server.traces import mount_traces

    location = tmp_path / "store"
    filler = open_store(str(location))  # enough quads that a three-way join overruns
    filler.write(
        [
            Quad(
                IRI(f"http://example.org/s{n}"),
                IRI("http://example.org/p"),
                Literal(str(n)),
                FILLER,
            )
            for n in range(3000)
        ]
    )
    filler.close()
    path = tokens_file(tmp_path / "tokens.toml")
    endpoint = create_app(str(location), load_tokens(path), EndpointConfig(time_limit=0.5))
    mount_traces(
        endpoint.app, str(location), str(path), load_settings(), evaluator=endpoint.evaluator
    )
    slow = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?h ?i ?j }"
    reader = {"authorization": "Bearer reader"}
    with serving(endpoint.app) as url:
        assert post(url, chat_payload("conv-k", "1" * 32, 1), "token-a").json() == {}
        killed = httpx.get(f"{url}/sparql", params={"query": slow}, headers=reader, timeout=60)
        assert killed.status_code == 503 and "time limit" in killed.text
        # the worker that held the store (and the session) was killed: its successor adopts it
        again = post(url, chat_payload("conv-k", "1" * 32, 1), "token-a")  # an exporter's retry
        assert again.json() == {}
        assert post(url, chat_payload("conv-k", "1" * 32, 2), "token-a").json() == {}
        assert endpoint.evaluator.restarts >= 1  # type: ignore[attr-defined]
    # stopping the endpoint ended the session the new worker took over
    store = open_store(str(location))
    try:
        spans = rows(store, "SELECT ?a WHERE { GRAPH ?g { ?a trails:spanId ?id } }")
        assert len(spans) == 2  # the retried span was not written twice
        ended = rows(
            store,
            "SELECT ?s WHERE { GRAPH ?s { ?s trails:conversationId ?c ; prov:endedAtTime ?e } }",
        )
        assert len(ended) == 1
        store.clear(FILLER)  # the slow query's filler is no graph of trails': verify flags it
        assert verify(store).ok
    finally:
        store.close()


def test_a_tenant_naming_another_tenants_trace_and_span_ids_changes_nothing_of_theirs(
    store: Store,
) -> None:
    from trails.otel.ingest import Ingestor
    from trails.otel.otlp import decode_json

    def spans(span: int, parent: int | None, user: str | None = None) -> Any:
        body = json.loads(chat_payload("conv-1", "a" * 32, span, user))
        if parent is not None:
            body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["parentSpanId"] = f"{parent:016x}"
        return decode_json(json.dumps(body).encode())

    ingestor = Ingestor(Recorder.from_settings(store=store))
    mine = ingestor.ingest(spans(2, parent=1), principal=TENANT_A)  # its parent comes later
    graph = IRI(mine.sessions[0])
    before = store.dump(format="nquads", graph=graph)
    # tenant B sends A's parent span, naming an end user A's waiting child would act for
    theirs = ingestor.ingest(spans(1, parent=None, user="did:example:mallory"), principal=TENANT_B)
    assert theirs.written == 1 and theirs.sessions != mine.sessions
    assert store.dump(format="nquads", graph=graph) == before
    ingestor.sweep(float("inf"))
    assert verify(store).ok
