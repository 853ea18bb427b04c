"""``trails otlp`` over real HTTP: the OpenTelemetry SDK's own exporters, real instrumentations
around the real openai SDK, captured payloads of older conventions, failures and refusals."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from opentelemetry.exporter.otlp.json.http.trace_exporter import (
    OTLPSpanExporter as JsonSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from tests.llm.llm_fakes import FakeServer, Reply, openai_chat
from tests.otel.conftest import Receiver, tracer_provider

from trails.agent import Session
from trails.audit.querypack import load_pack
from trails.errors import StoreError
from trails.evidence.verify import verify
from trails.llm import Message
from trails.prov.vocab import T, sparql_prefixes
from trails.server.auth import hash_token
from trails.server.write_tokens import load_write_tokens
from trails.store import Store, open_store, select
from trails.store.terms import IRI, to_python
from trails.testing.replay import ReplayLLM

DATA = Path(__file__).resolve().parents[1] / "data" / "otel"
CHAT_IN = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "find x"}]}])
CHAT_OUT = json.dumps(
    [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "call_1", "name": "lookup", "arguments": {"q": "x"}}
            ],
            "finish_reason": "tool_calls",
        }
    ]
)


def rows(store: Store, sparql: str, **params: Any) -> list[dict[str, Any]]:
    return [
        {k: to_python(v) for k, v in row.items()}
        for row in select(store, sparql_prefixes() + sparql, params or None)
    ]


def count(store: Store, cls: Any) -> int:
    found = rows(
        store, f"SELECT (COUNT(DISTINCT ?a) AS ?n) WHERE {{ GRAPH ?g {{ ?a a {cls.n3()} }} }}"
    )
    return int(found[0]["n"])


def agent_run(provider: TracerProvider, *, conversation: str | None = None) -> None:
    """What an instrumented agent framework emits: agent -> chat (requests a tool) -> tool."""
    tracer = provider.get_tracer("shop-agent")
    extra = {"gen_ai.conversation.id": conversation} if conversation else {}
    with tracer.start_as_current_span(
        "invoke_agent shop",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop", **extra},
    ):
        with tracer.start_as_current_span(
            "chat gpt-4o-mini",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.response.model": "gpt-4o-mini",
                "gen_ai.usage.input_tokens": 1000,
                "gen_ai.usage.output_tokens": 200,
                "gen_ai.usage.cache_read.input_tokens": 400,
                "gen_ai.usage.reasoning.output_tokens": 50,
                "gen_ai.input.messages": CHAT_IN,
                "gen_ai.output.messages": CHAT_OUT,
                "enduser.id": "did:example:alice",
                **extra,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool lookup",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": '{"q": "x"}',
                "gen_ai.tool.call.result": '{"hits": 1}',
                "enduser.id": "did:example:alice",
                **extra,
            },
        ):
            pass


SHAPE = """
SELECT ?session ?run ?chat ?tool ?requester ?usd ?reasoning ?input ?cached ?trace ?span ?ended WHERE {
  GRAPH ?session {
    ?session a trails:Session ; prov:endedAtTime ?ended .
    ?run a trails:PlanRun ; prov:wasInformedBy ?session .
    ?chat a trails:LLMCompletion ; prov:wasInformedBy ?run ; trails:costUSD ?usd ;
          trails:reasoningTokens ?reasoning ; trails:inputTokens ?input ;
          trails:cacheReadTokens ?cached ; trails:traceId ?trace ; trails:spanId ?span .
    ?tool a trails:CapabilityInvocation ; prov:wasInformedBy ?run ; trails:requestedBy ?requester ;
          prov:wasInfluencedBy ?requester .
  }
}"""


def check_agent_run(store: Store) -> dict[str, Any]:
    found = rows(store, SHAPE)
    assert len(found) == 1, found
    row = found[0]
    assert row["requester"] == row["chat"]
    assert row["input"] == 600 and row["cached"] == 400 and row["reasoning"] == 50
    # gpt-4o-mini from the catalogue: 600 x 0.15 + 400 x 0.075 + 200 x 0.6 per million
    assert row["usd"] == pytest.approx((600 * 0.15 + 400 * 0.075 + 200 * 0.6) / 1e6)
    assert len(row["trace"]) == 32 and len(row["span"]) == 16
    report = verify(store)
    assert report.ok and report.seals >= 1, report.findings
    return row


@pytest.mark.parametrize("exporter", ["protobuf", "protobuf-gzip", "json"])
def test_the_sdk_exporters_deliver_an_agent_run(
    make_receiver: Any, store: Store, exporter: str
) -> None:
    receiver: Receiver = make_receiver()
    if exporter == "json":
        sdk: Any = JsonSpanExporter(endpoint=receiver.traces)
    else:
        gzip = Compression.Gzip if exporter.endswith("gzip") else Compression.NoCompression
        sdk = OTLPSpanExporter(endpoint=receiver.traces, compression=gzip)
    provider = tracer_provider(sdk, batch=True)
    agent_run(provider)
    provider.shutdown()
    row = check_agent_run(store)
    assert str(row["session"]).endswith(
        row["trace"]
    )  # no conversation id: the trace is the session


def test_a_conversation_id_keys_the_session_and_idle_time_ends_it(
    make_receiver: Any, store: Store
) -> None:
    now = [0.0]
    receiver: Receiver = make_receiver(idle=60.0)
    receiver.ingestor.clock = lambda: now[0]
    provider = tracer_provider(OTLPSpanExporter(endpoint=receiver.traces))
    agent_run(provider, conversation="conv-7")
    agent_run(provider, conversation="conv-7")
    provider.shutdown()
    session = "urn:trails:session:conv-7"
    assert receiver.ingestor.open_sessions() == [session]
    assert count(store, T.LLMCompletion) == 2
    assert receiver.ingestor.sweep(now=30.0) == []
    assert receiver.ingestor.sweep(now=61.0) == [session]
    found = rows(
        store,
        "SELECT ?c ?s WHERE { GRAPH ?s { ?s trails:conversationId ?c ; prov:endedAtTime ?e } }",
        s=IRI(session),
    )
    assert [r["c"] for r in found] == ["conv-7"]
    assert verify(store).ok


def fake_openai_with_a_tool_call() -> FakeServer:
    fake = FakeServer()
    first = openai_chat(None, model="gpt-4o-mini", prompt=50, completion=10)
    first["choices"][0]["message"]["tool_calls"] = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"q":"x"}'},
        }
    ]
    first["choices"][0]["finish_reason"] = "tool_calls"
    fake.enqueue(Reply(json=first), Reply(json=openai_chat("x is in aisle 3", model="gpt-4o-mini")))
    return fake


def run_instrumented_app(provider: TracerProvider, fake: FakeServer) -> None:
    """A plain openai-SDK agent: ask, execute the requested tool in a span, ask again."""
    client = openai.OpenAI(base_url=f"{fake.url}/v1", api_key="test-key", max_retries=0)
    tracer = provider.get_tracer("shop-app")
    messages: list[Any] = [{"role": "user", "content": "find x"}]
    tools: Any = [
        {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    ]
    with tracer.start_as_current_span(
        "invoke_agent shop",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"},
    ):
        first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
        call: Any = first.choices[0].message.tool_calls[0]  # type: ignore[index]
        with tracer.start_as_current_span(
            "execute_tool lookup",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.function.name,
                "gen_ai.tool.call.id": call.id,
                "gen_ai.tool.call.arguments": call.function.arguments,
                "gen_ai.tool.call.result": '{"aisle": 3}',
            },
        ):
            pass
        messages += [first.choices[0].message.model_dump(exclude_none=True)]
        messages += [{"role": "tool", "tool_call_id": call.id, "content": '{"aisle": 3}'}]
        client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)


REGULATOR = """
SELECT ?who ?what ?when ?model ?usd WHERE {
  GRAPH ?g {
    ?activity a prov:Activity ; prov:startedAtTime ?when ; rdfs:label ?what .
    ?activity prov:wasAssociatedWith ?model .
    ?model a prov:SoftwareAgent ; prov:actedOnBehalfOf ?who .
    OPTIONAL { ?activity trails:costUSD ?usd }
  }
} ORDER BY ?when"""


def check_regulator_answers(store: Store, receiver: Receiver) -> str:
    found = rows(store, REGULATOR)
    assert len(found) == 2
    assert all(r["usd"] is not None and r["usd"] > 0 for r in found)
    assert {r["who"] for r in found} == {"urn:trails:agent:shop-app"}
    pack = load_pack()
    sessions = [{k: to_python(v) for k, v in r.items()} for r in pack["sessions"].run(store)]
    assert len(sessions) == 1 and sessions[0]["endStatus"] == "ok"
    session = str(sessions[0]["session"])
    by_model = [{k: to_python(v) for k, v in r.items()} for r in pack["cost-by-model"].run(store)]
    assert len(by_model) == 1 and int(by_model[0]["completions"]) == 2
    timeline = list(pack["session-timeline"].run(store, session=session))
    assert len(timeline) >= 4
    assert verify(store).ok
    return session


def test_openai_v2_instrumentation_around_the_real_openai_sdk(
    make_receiver: Any, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    receiver: Receiver = make_receiver()
    provider = tracer_provider(
        OTLPSpanExporter(endpoint=receiver.traces), batch=True, service="shop-app"
    )
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    fake = fake_openai_with_a_tool_call()
    try:
        run_instrumented_app(provider, fake)
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
        fake.close()
    session = check_regulator_answers(store, receiver)
    linked = rows(
        store,
        "SELECT ?t ?c WHERE { GRAPH ?g { ?t trails:requestedBy ?c ; trails:toolCallId 'call_1' } }",
    )
    assert len(linked) == 1
    # the session replays (its projection was written before it was sealed) ...
    replayed = Session.replay(session, store=store)
    assert replayed.read_only and replayed.history[0].role == "user"
    assert [e.content for e in replayed.history][-1] == "x is in aisle 3"
    assert [(r.capability, r.result) for r in replayed.invocations] == [("lookup", {"aisle": 3})]
    # ... and the completion that carried content replays as a regression test of its prompt
    replay = ReplayLLM.from_session(session, store=store)
    reply = replay.complete([Message("user", "find x")])
    assert '"id":"call_1"' in reply.text and reply.input_tokens == 50


def test_openinference_instrumentation_around_the_real_openai_sdk(
    make_receiver: Any, store: Store
) -> None:
    from openinference.instrumentation.openai import OpenAIInstrumentor

    receiver: Receiver = make_receiver()
    provider = tracer_provider(
        OTLPSpanExporter(endpoint=receiver.traces), batch=True, service="shop-app"
    )
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    fake = fake_openai_with_a_tool_call()
    try:
        run_instrumented_app(provider, fake)
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
        fake.close()
    check_regulator_answers(store, receiver)


@pytest.mark.parametrize(
    ("fixture", "model", "provider", "tokens", "text"),
    [
        ("openllmetry-gen-ai-system.json", "gpt-4o-2024-08-06", "openai", (1200, 30), True),
        ("openinference-openai.json", "gpt-4o-mini-2024-07-18", "openai", (50, 10), True),
        ("openai-v2-no-content.json", "gpt-4o-mini-2024-07-18", "openai", (50, 10), False),
    ],
)
def test_captured_payloads_of_older_conventions(
    make_receiver: Any,
    store: Store,
    fixture: str,
    model: str,
    provider: str,
    tokens: tuple[int, int],
    text: bool,
) -> None:
    receiver: Receiver = make_receiver()
    body = (DATA / fixture).read_bytes()
    answer = httpx.post(receiver.traces, content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 200, answer.text
    found = rows(
        store,
        """SELECT ?model ?provider ?in ?out ?usd ?text WHERE { GRAPH ?g {
             ?c a trails:LLMCompletion ; prov:wasAssociatedWith ?m ; trails:inputTokens ?in ;
                trails:outputTokens ?out .
             ?m trails:modelId ?model ; trails:provider ?provider .
             OPTIONAL { ?c trails:costUSD ?usd }
             OPTIONAL { ?x prov:wasGeneratedBy ?c . GRAPH ?cg { ?x prov:value ?text } } } }""",
    )
    assert len(found) == 1
    row = found[0]
    assert (row["model"], row["provider"], (row["in"], row["out"])) == (model, provider, tokens)
    assert row["usd"] is not None and row["usd"] > 0  # a dated id of a catalogued model is priced
    assert (row.get("text") is not None) == text
    if fixture.startswith("openllmetry"):
        tool = rows(
            store,
            "SELECT ?cap ?c WHERE { GRAPH ?g { ?t trails:capability/trails:capabilityId ?cap ; trails:requestedBy ?c } }",
        )
        assert [r["cap"] for r in tool] == ["order_status"]


class FailingStore:
    """A real store whose first ``failures`` writes fail (a store outage)."""

    def __init__(self, inner: Store, failures: int) -> None:
        self.inner, self.failures = inner, failures

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def write(self, quads: Any, **kw: Any) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise StoreError("the disk is full")
        self.inner.write(quads, **kw)


def test_a_store_failure_answers_503_and_the_sdk_retry_delivers_once(
    make_receiver: Any, store: Store
) -> None:
    failing = FailingStore(store, failures=1)
    receiver: Receiver = make_receiver(target=failing)
    direct = httpx.post(
        receiver.traces, content=b"{}", headers={"content-type": "application/json"}
    )
    assert direct.status_code == 200  # nothing to write, nothing fails
    provider = tracer_provider(OTLPSpanExporter(endpoint=receiver.traces, timeout=30), batch=True)
    agent_run(provider)
    provider.shutdown()
    assert failing.failures == 0  # the first attempt failed, the retry was written
    check_agent_run(store)
    assert count(store, T.LLMCompletion) == 1 and count(store, T.CapabilityInvocation) == 1


def test_503_then_a_retried_batch_duplicates_nothing(make_receiver: Any, store: Store) -> None:
    failing = FailingStore(store, failures=1)
    receiver: Receiver = make_receiver(target=failing)
    body = (DATA / "openllmetry-gen-ai-system.json").read_bytes()
    headers = {"content-type": "application/json"}
    first = httpx.post(receiver.traces, content=body, headers=headers)
    assert first.status_code == 503 and first.headers["retry-after"] == "1"
    assert "may or may not have been recorded" in first.text and store.graphs() == []
    assert "the disk is full" not in first.text  # the store's own words are logged, not sent
    for _ in range(3):
        again = httpx.post(receiver.traces, content=body, headers=headers)
        assert again.status_code == 200, again.text
    quads = len(store.dump(format="nquads") or b"")
    assert httpx.post(receiver.traces, content=body, headers=headers).status_code == 200
    assert len(store.dump(format="nquads") or b"") == quads
    assert count(store, T.LLMCompletion) == 1 and count(store, T.CapabilityInvocation) == 1


def test_tokens_malformed_oversize_and_wrong_types(make_receiver: Any, tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text(
        f'[[token]]\nprincipal = "did:example:writer"\nsha256 = "{hash_token("w-token")}"\n'
        "write = true\n\n"
        f'[[token]]\nprincipal = "did:example:reader"\nsha256 = "{hash_token("r-token")}"\n'
        'graphs = ["*"]\n'
    )
    receiver: Receiver = make_receiver(tokens=load_write_tokens(path))
    body = (DATA / "openllmetry-gen-ai-system.json").read_bytes()

    def post(content: bytes, token: str | None, kind: str = "application/json") -> httpx.Response:
        headers = {"content-type": kind}
        if token:
            headers["authorization"] = f"Bearer {token}"
        return httpx.post(receiver.traces, content=content, headers=headers)

    assert post(body, None).status_code == 401
    assert post(body, "unknown").status_code == 401
    assert post(body, "r-token").status_code == 403
    bad = post(b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}', "w-token")
    assert bad.status_code == 400 and "not hex" in bad.text
    assert post(b"\x0a\xff\xff", "w-token", "application/x-protobuf").status_code == 400
    assert post(b"<xml/>", "w-token", "text/xml").status_code == 415
    huge = post(b" " * (17 * 1024 * 1024), "w-token")
    assert huge.status_code == 413
    answer = post(body, "w-token")
    assert answer.status_code == 200 and answer.json() == {}
    who = rows(
        receiver.store,
        "SELECT DISTINCT ?p WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; prov:wasAssociatedWith/trails:principalId ?p } }",
    )
    assert [r["p"] for r in who] == [
        "did:example:writer"
    ]  # spans without enduser.id act for the token


def test_the_cli_refuses_a_public_address_without_tokens(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from trails.cli import main

    assert main(["otlp", "--host", "0.0.0.0"]) == 2
    assert "needs --tokens" in capsys.readouterr().err


def test_trails_serve_mounts_the_route_for_write_tokens(store: Store, tmp_path: Path) -> None:
    from tests.server.conftest import serving

    from trails.config import load_settings
    from trails.server import create_app
    from trails.server.auth import load_tokens
    from trails.server.traces import mount_traces

    path = tmp_path / "tokens.toml"
    path.write_text(
        f'[[token]]\nprincipal = "did:example:platform"\nsha256 = "{hash_token("w")}"\n'
        'graphs = ["*"]\nwrite = true\n\n'
        f'[[token]]\nprincipal = "did:example:auditor"\nsha256 = "{hash_token("r")}"\n'
        'graphs = ["*"]\n'
    )
    endpoint = create_app(store, load_tokens(path))
    mount_traces(endpoint.app, store, str(path), load_settings())
    body = (DATA / "openllmetry-gen-ai-system.json").read_bytes()
    with serving(endpoint.app) as url:
        kind = {"content-type": "application/json"}
        refused = httpx.post(
            f"{url}/v1/traces", content=body, headers={**kind, "authorization": "Bearer r"}
        )
        assert refused.status_code == 403
        sent = httpx.post(
            f"{url}/v1/traces", content=body, headers={**kind, "authorization": "Bearer w"}
        )
        assert sent.status_code == 200, sent.text
        answer = httpx.get(
            f"{url}/queries/llm-completions",
            headers={"authorization": "Bearer r", "accept": "application/sparql-results+json"},
        )
        assert answer.status_code == 200
        bindings = answer.json()["results"]["bindings"]
        assert [b["model"]["value"] for b in bindings] == ["gpt-4o-2024-08-06"]


def test_report_export_and_verify_work_on_a_received_session(
    make_receiver: Any, store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trails.cli import main

    receiver: Receiver = make_receiver()
    body = (DATA / "openllmetry-gen-ai-system.json").read_bytes()
    headers = {"content-type": "application/json"}
    assert httpx.post(receiver.traces, content=body, headers=headers).status_code == 200
    session = "urn:trails:session:5b8efff798038103d269b633813fc60c"
    report = tmp_path / "report.html"
    assert main(["report", session, "--out", str(report)]) == 0
    html = report.read_text()
    assert "gpt-4o-2024-08-06" in html and "order_status" in html
    for fmt in ("trig", "provn", "provjson"):
        out = tmp_path / f"session.{fmt}"
        assert main(["export", "--session", session, "--format", fmt, "--out", str(out)]) == 0
        assert "order_status" in out.read_text()
    assert main(["verify"]) == 0
    assert verify(store).ok


@pytest.mark.slow
def test_trails_otlp_as_a_process_ends_open_sessions_when_stopped(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.servers import free_port

    location = tmp_path / "store"
    port = free_port()
    env = {**os.environ, "TRAILS_STORE": str(location)}
    process = subprocess.Popen(
        [sys.executable, "-m", "trails.cli", "otlp", "--port", str(port)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/v1/traces"
    try:
        for _ in range(300):
            try:
                httpx.post(url, content=b"{}", headers={"content-type": "application/json"})
                break
            except httpx.TransportError:
                time.sleep(0.05)
        provider = tracer_provider(OTLPSpanExporter(endpoint=url))
        agent_run(provider, conversation="conv-cli")
        provider.shutdown()
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "http://127.0.0.1" in err and "no token (loopback)" in err
    store = open_store(str(location))
    try:
        ended = rows(
            store,
            "SELECT ?s ?e WHERE { GRAPH ?s { ?s trails:conversationId 'conv-cli' ; prov:endedAtTime ?e } }",
        )
        assert len(ended) == 1
        assert verify(store).ok
    finally:
        store.close()
