"""What a run's spans say about the whole run, recorded on every part of it: the end user
named on the root span acts for the completions and tool calls under it, and an error in
any span of a conversation ends its session ``error`` (an idle end without a root,
``interrupted``), as the report shows."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Status, StatusCode
from tests.otel.conftest import Receiver, tracer_provider

from trails.audit.querypack import load_pack
from trails.evidence.verify import verify
from trails.prov.vocab import sparql_prefixes
from trails.store import Store, select
from trails.store.terms import to_python

ALICE = "did:example:alice"


def rows(store: Store, sparql: str) -> list[dict[str, Any]]:
    return [
        {k: to_python(v) for k, v in row.items()}
        for row in select(store, sparql_prefixes() + sparql)
    ]


def run_for_alice(provider: TracerProvider) -> None:
    """An agent span naming the end user, a completion and a tool call under it naming none."""
    tracer = provider.get_tracer("shop-agent")
    with tracer.start_as_current_span(
        "invoke_agent shop",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "shop",
            "enduser.id": ALICE,
        },
    ):
        with tracer.start_as_current_span("step"):  # a plain span between them
            with tracer.start_as_current_span(
                "chat gpt-4o-mini",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.usage.input_tokens": 1000,
                    "gen_ai.usage.output_tokens": 200,
                },
            ):
                pass
        with tracer.start_as_current_span(
            "execute_tool lookup",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"},
        ):
            pass


ACTING = """
SELECT ?kind ?who WHERE {
  GRAPH ?g {
    ?a a ?kind ; prov:wasAssociatedWith ?agent .
    ?agent a trails:Principal ; trails:principalId ?who .
    FILTER (?kind IN (trails:LLMCompletion, trails:CapabilityInvocation, trails:TraceSpan))
  }
}"""


@pytest.mark.parametrize("batch", [True, False], ids=["one-batch", "span-by-span"])
def test_the_root_span_end_user_acts_for_every_span_under_it(
    make_receiver: Any, store: Store, batch: bool
) -> None:
    receiver: Receiver = make_receiver()
    # span by span, each child arrives before its parent, the root last
    provider = tracer_provider(OTLPSpanExporter(endpoint=receiver.traces), batch=batch)
    run_for_alice(provider)
    provider.shutdown()
    acting = sorted((str(r["kind"]).rsplit("#", 1)[-1], r["who"]) for r in rows(store, ACTING))
    assert acting == [
        ("CapabilityInvocation", ALICE),
        ("LLMCompletion", ALICE),
        ("TraceSpan", ALICE),
    ]
    by_principal = {
        str(r["principal"]): r
        for r in (
            {k: to_python(v) for k, v in row.items()}
            for row in load_pack()["cost-by-principal"].run(store)
        )
    }
    alice = by_principal[ALICE]
    assert int(alice["completions"]) == 1
    # gpt-4o-mini from the catalogue: 1000 x 0.15 + 200 x 0.6 per million
    assert float(alice["costUSD"]) == pytest.approx((1000 * 0.15 + 200 * 0.6) / 1e6)
    assert all(int(r["completions"]) == 0 for p, r in by_principal.items() if p != ALICE)
    assert verify(store).ok


def test_a_span_naming_its_own_end_user_keeps_it(make_receiver: Any, store: Store) -> None:
    receiver: Receiver = make_receiver()
    provider = tracer_provider(OTLPSpanExporter(endpoint=receiver.traces), batch=True)
    tracer = provider.get_tracer("shop-agent")
    with tracer.start_as_current_span("invoke_agent shop", attributes={"enduser.id": ALICE}):
        with tracer.start_as_current_span(
            "execute_tool lookup",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup",
                "enduser.id": "did:example:bob",
            },
        ):
            pass
    provider.shutdown()
    acting = {str(r["kind"]).rsplit("#", 1)[-1]: r["who"] for r in rows(store, ACTING)}
    assert acting == {"TraceSpan": ALICE, "CapabilityInvocation": "did:example:bob"}


def failing_conversation(provider: TracerProvider, *, error_type: bool = False) -> None:
    """Two traces of one conversation; the second's tool call fails."""
    tracer = provider.get_tracer("shop-agent")
    conversation = {"gen_ai.conversation.id": "conv-9"}
    for turn in (1, 2):
        with tracer.start_as_current_span(
            f"invoke_agent turn {turn}",
            attributes={"gen_ai.operation.name": "invoke_agent", **conversation},
        ):
            with tracer.start_as_current_span(
                "execute_tool lookup",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup",
                    **conversation,
                },
            ) as span:
                if turn == 2 and error_type:
                    span.set_attribute("error.type", "TimeoutError")
                elif turn == 2:
                    span.set_status(Status(StatusCode.ERROR, "the inventory service is down"))


STATUS = "SELECT ?s WHERE { GRAPH ?g { ?g trails:status ?s } }"


@pytest.mark.parametrize("error_type", [False, True], ids=["status-error", "error-type"])
def test_an_error_in_a_conversation_ends_its_session_error_and_the_report_says_so(
    make_receiver: Any, store: Store, tmp_path: Any, error_type: bool
) -> None:
    from trails.cli import main

    now = [0.0]
    receiver: Receiver = make_receiver(idle=60.0)
    receiver.ingestor.clock = lambda: now[0]
    provider = tracer_provider(OTLPSpanExporter(endpoint=receiver.traces))
    failing_conversation(provider, error_type=error_type)
    provider.shutdown()
    session = "urn:trails:session:conv-9"
    assert receiver.ingestor.sweep(now=61.0) == [session]  # ended on idle time
    assert [r["s"] for r in rows(store, STATUS)] == ["error"]
    report = tmp_path / "report.html"
    assert main(["report", session, "--out", str(report)]) == 0
    html = report.read_text()
    said = "the inventory service is down" if not error_type else "the span ended with an error"
    outcome = html.split('<p class="outcome">', 1)[1].split("</p>", 1)[0]
    assert 'Outcome <span class="badge s-failed">failed</span>' in outcome, outcome
    failures = html.split("<h2>Failed and interrupted invocations</h2>")[1].split("</table>")[0]
    assert "<code>lookup</code>" in failures and said in failures
    assert verify(store).ok


def test_a_conversation_without_errors_still_ends_ok(make_receiver: Any, store: Store) -> None:
    receiver: Receiver = make_receiver(idle=60.0)
    receiver.ingestor.clock = lambda: 0.0
    provider = tracer_provider(OTLPSpanExporter(endpoint=receiver.traces))
    tracer = provider.get_tracer("shop-agent")
    for _ in range(2):
        with tracer.start_as_current_span(
            "invoke_agent shop",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "c-1"},
        ):
            pass
    provider.shutdown()
    assert receiver.ingestor.sweep(now=61.0) == ["urn:trails:session:c-1"]
    assert [r["s"] for r in rows(store, STATUS)] == ["ok"]


def test_a_trace_whose_root_never_arrives_ends_interrupted_on_idle_time(
    make_receiver: Any, store: Store
) -> None:
    receiver: Receiver = make_receiver(idle=60.0)
    receiver.ingestor.clock = lambda: 0.0
    exporter = OTLPSpanExporter(endpoint=receiver.traces)
    provider = tracer_provider(exporter)
    tracer = provider.get_tracer("shop-agent")
    root = tracer.start_span(
        "invoke_agent shop", attributes={"gen_ai.operation.name": "invoke_agent"}
    )
    with trace.use_span(root):
        with tracer.start_as_current_span(
            "execute_tool lookup",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"},
        ):
            pass  # sent; the root span never ends (the process died)
    provider.shutdown()
    [session] = receiver.ingestor.open_sessions()
    assert receiver.ingestor.sweep(now=61.0) == [session]
    assert [r["s"] for r in rows(store, STATUS)] == ["interrupted"]
    reasons = [
        r["reason"]
        for r in load_pack()["terminations"].run(store, session=session)
        for r in [{k: to_python(v) for k, v in r.items()}]
    ]
    assert len(reasons) == 1 and "never did" in reasons[0]
    assert verify(store).ok


def test_a_failed_tool_call_in_a_trace_ends_its_session_error_on_the_root(
    make_receiver: Any, store: Store
) -> None:
    receiver: Receiver = make_receiver()
    provider = tracer_provider(OTLPSpanExporter(endpoint=receiver.traces), batch=True)
    tracer = provider.get_tracer("shop-agent")
    with tracer.start_as_current_span(
        "invoke_agent shop", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        with tracer.start_as_current_span(
            "execute_tool lookup",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"},
        ) as span:
            span.set_status(Status(StatusCode.ERROR, "no such item"))
    provider.shutdown()
    assert [r["s"] for r in rows(store, STATUS)] == ["error"]
