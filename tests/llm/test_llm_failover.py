"""Every failover and every budget refusal is evidence, read back by SPARQL.

A failed provider of a fallback chain is a failed completion with its error;
the switch is a ``trails:ProviderFallback`` informed by it and informing the
answer, in ``complete``, ``acomplete``, ``stream`` and ``astream``. A call a
principal's budget refuses is a ``refused`` completion ended by a budget breach.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from llm_fakes import FakeServer, Reply, anthropic_error, openai_chat, openai_stream

from trails.audit.querypack import get_query
from trails.errors import BudgetExceeded, UserError
from trails.kernel.context import Context
from trails.kernel.observe import ObserverEvent
from trails.llm import LLMClient
from trails.llm.errors import ModelServerError, ProvidersUnavailable
from trails.llm.retry import RetryPolicy
from trails.llm.types import Chunk, Response
from trails.prov.recorder import Recorder
from trails.store import IRI, Solutions, Store, open_store, to_python

FAILOVERS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT $session ?failed ?failedStatus ?failedError ?failedModel ?switch ?from ?to ?switchError
       ?answer ?answerStatus ?answerModel ?parent
WHERE { GRAPH $session {
  ?switch a trails:ProviderFallback , prov:Activity ;
          prov:wasInformedBy ?failed ;
          trails:failedProvider ?from ;
          trails:nextProvider ?to .
  GRAPH ?content1 { ?switch trails:errorMessage ?switchError }  # content: erasable
  ?failed a trails:LLMCompletion ;
          trails:status ?failedStatus ;
          prov:wasAssociatedWith [ a trails:Model ; trails:modelId ?failedModel ] .
  GRAPH ?content2 { ?failed trails:errorMessage ?failedError }
  OPTIONAL { ?failed prov:wasInformedBy ?parent . ?parent a trails:PlanRun }
  OPTIONAL {
    ?answer prov:wasInformedBy ?switch ;
            trails:status ?answerStatus ;
            prov:wasAssociatedWith [ a trails:Model ; trails:modelId ?answerModel ] .
  }
} }
ORDER BY ?failedModel
"""


class Events(list[ObserverEvent]):
    """An observer keeping every event."""

    def on_event(self, event: ObserverEvent) -> None:
        self.append(event)


def failovers(store: Store, session: str) -> list[dict[str, Any]]:
    result = store.query(FAILOVERS, {"session": IRI(session)})
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items()} for row in result]


def down(n: int, what: str = "primary down") -> list[Any]:
    return [ModelServerError(what, provider="mock", status=503) for _ in range(n)]


def chain(**options: Any) -> LLMClient:
    primary = LLMClient.mock(response=down(4), model="primary")
    backup = LLMClient.mock(response=["b1", "b2", "b3", "b4"], model="backup")
    return LLMClient.fallback([primary, backup], max_failures=10, **options)


def _complete(client: LLMClient, ctx: Context) -> str:
    return client.complete("hi", ctx=ctx).text


def _acomplete(client: LLMClient, ctx: Context) -> str:
    return asyncio.run(client.acomplete("hi", ctx=ctx)).text


def _stream(client: LLMClient, ctx: Context) -> str:
    parts = list(client.stream("hi", ctx=ctx))
    assert isinstance(parts[-1], Response)
    return parts[-1].text


def _astream(client: LLMClient, ctx: Context) -> str:
    async def collect() -> list[Chunk | Response]:
        return [p async for p in client.astream("hi", ctx=ctx)]

    parts = asyncio.run(collect())
    assert isinstance(parts[-1], Response)
    return parts[-1].text


PATHS: dict[str, Callable[[LLMClient, Context], str]] = {
    "complete": _complete,
    "acomplete": _acomplete,
    "stream": _stream,
    "astream": _astream,
}


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.seed_row("002-056")
@pytest.mark.seed_row("002-089")
@pytest.mark.seed_row("002-091")
@pytest.mark.seed_row("002-092")
def test_each_path_records_the_failed_attempt_the_switch_and_the_answer(
    path: str, store: Store
) -> None:
    events = Events()
    seen: list[tuple[str, str]] = []
    client = chain(on_fallback=lambda name, error: seen.append((name, str(error))))
    with Context.open("did:local:alice", observers=[events]) as ctx:
        assert PATHS[path](client, ctx) == "b1"
        session = str(ctx.session)
    [row] = failovers(store, session)
    assert (row["failedStatus"], row["failedError"], row["failedModel"]) == (
        "error",
        "ModelServerError: primary down",
        "primary",
    )
    assert (row["from"], row["to"], row["switchError"]) == (
        "mock:primary",
        "mock:backup",
        "ModelServerError: primary down",
    )
    assert (row["answerStatus"], row["answerModel"]) == ("ok", "backup")
    fallbacks = [e.data for e in events if e.kind == "fallback"]
    assert fallbacks == [{"failed": "mock:primary", "next": "mock:backup", "error": "primary down"}]
    assert seen == [("mock:primary", "primary down")]


def test_on_fallback_with_three_arguments_gets_the_next_provider(ctx: Context) -> None:
    seen: list[tuple[str, str, BaseException]] = []
    client = chain(on_fallback=lambda failed, nxt, error: seen.append((failed, nxt, error)))
    client.complete("one", ctx=ctx)
    list(client.stream("two", ctx=ctx))
    assert [(f, n, str(e)) for f, n, e in seen] == [
        ("mock:primary", "mock:backup", "primary down"),
    ] * 2
    assert all(isinstance(e, ModelServerError) for _, _, e in seen)


def test_on_fallback_that_takes_no_error_is_refused() -> None:
    with pytest.raises(UserError, match=r"on_fallback takes \(name, error\)"):
        chain(on_fallback=lambda name: None)
    with pytest.raises(UserError, match="must be callable"):
        chain(on_fallback="print")


def test_a_chain_of_three_links_each_switch_to_the_next_attempt(ctx: Context, store: Store) -> None:
    first = LLMClient.mock(response=down(1, "a down"), model="a")
    second = LLMClient.mock(response=down(1, "b down"), model="b")
    third = LLMClient.mock(response=["from c"], model="c")
    client = LLMClient.fallback([first, second, third])
    assert client.complete("q", ctx=ctx).text == "from c"
    rows = failovers(store, str(ctx.session))
    assert [(r["from"], r["to"], r["answerModel"], r["answerStatus"]) for r in rows] == [
        ("mock:a", "mock:b", "b", "error"),  # the switch to b led to b's failed attempt
        ("mock:b", "mock:c", "c", "ok"),
    ]
    assert rows[0]["answer"] == rows[1]["failed"]


def test_when_every_provider_fails_each_attempt_is_recorded(ctx: Context, store: Store) -> None:
    client = LLMClient.fallback(
        [
            LLMClient.mock(response=down(1, "a down"), model="a"),
            LLMClient.mock(response=down(1, "b down"), model="b"),
        ]
    )
    with pytest.raises(ProvidersUnavailable) as info:
        client.complete("q", ctx=ctx)
    result = store.query(
        """PREFIX prov: <http://www.w3.org/ns/prov#>
        PREFIX trails: <https://w3id.org/trails/ns#>
        SELECT $session ?c ?error ?after WHERE { GRAPH $session {
          ?c a trails:LLMCompletion ; trails:status "error" .
          GRAPH ?content { ?c trails:errorMessage ?error }
          OPTIONAL { ?c prov:wasInformedBy ?after . ?after a trails:LLMCompletion }
        } } ORDER BY ?error""",
        {"session": ctx.session},
    )
    assert isinstance(result, Solutions)
    rows = [{k: to_python(v) for k, v in r.items()} for r in result]
    assert [r["error"] for r in rows] == [
        "ModelServerError: a down",
        "ModelServerError: b down",
        "ProvidersUnavailable: " + str(info.value),
    ]
    # the call's own failed completion follows b's attempt, the last one that failed
    assert rows[2]["c"] == info.value.activity_iri  # type: ignore[attr-defined]
    assert rows[2]["after"] == rows[1]["c"]
    switches = get_query("provider-fallbacks").run(store, session=str(ctx.session))
    assert isinstance(switches, Solutions)
    assert [to_python(r["nextProvider"]) for r in switches] == ["mock:b"]


def test_real_sdk_provider_failing_over_to_another(store: Store, fast_retry: RetryPolicy) -> None:
    """An Anthropic endpoint answering 529 after its retries, then an OpenAI-compatible one."""
    down_server, up_server = FakeServer(), FakeServer()
    try:
        overloaded = Reply(
            status=529,
            json=anthropic_error(529, "overloaded_error", "Overloaded"),
            headers={"request-id": "req_529"},
        )
        down_server.enqueue(*[overloaded] * 6)
        up_server.enqueue(
            Reply(json=openai_chat("from openai")),
            Reply(chunks=openai_stream(["stre", "amed"]), content_type="text/event-stream"),
        )
        claude = LLMClient.anthropic(
            "claude-haiku-4-5", api_key="k", base_url=down_server.url, retry=fast_retry
        )
        local = LLMClient.openai_compatible(
            "local-model", base_url=up_server.url + "/v1", retry=fast_retry
        )
        client = LLMClient.fallback([claude, local])
        with Context.open("did:local:alice") as ctx:
            assert client.complete("hi", ctx=ctx).text == "from openai"
            parts = list(client.stream("hi", ctx=ctx))
            session = str(ctx.session)
        assert isinstance(parts[-1], Response) and parts[-1].text == "streamed"
        assert len(down_server.requests) == 6  # 1 + 2 retries, twice
    finally:
        down_server.close()
        up_server.close()
    rows = failovers(store, session)
    assert len(rows) == 2
    for row in rows:
        assert row["from"] == "anthropic:claude-haiku-4-5"
        assert row["to"] == "openai_compatible:local-model"
        assert row["failedModel"] == "claude-haiku-4-5" and row["answerModel"] == "local-model"
        assert "Overloaded" in row["failedError"]
    retries = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT $session ?r ?id WHERE { GRAPH $session {"
        " ?c a trails:LLMCompletion ; trails:status 'error' ; trails:retries ?r ;"
        " trails:requestId ?id } }",
        {"session": IRI(session)},
    )
    assert isinstance(retries, Solutions)
    assert [(to_python(r["r"]), to_python(r["id"])) for r in retries] == [(2, "req_529")] * 2


# -- budget refusals --------------------------------------------------------------------

REFUSALS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT $session ?c ?status ?error ?who ?budget ?limit ?observed ?model WHERE { GRAPH $session {
  GRAPH ?content { ?c trails:errorMessage ?error }
  ?c a trails:LLMCompletion ; trails:status ?status ;
     prov:wasAssociatedWith [ a trails:Principal ; trails:principalId ?who ] ,
                            [ a trails:Model ; trails:modelId ?model ] ;
     prov:wasEndedBy ?breach .
  ?breach a trails:BudgetBreach , prov:Entity ; trails:budgetKind ?budget ;
          trails:limit ?limit ; trails:observed ?observed .
  FILTER NOT EXISTS { ?answer prov:wasGeneratedBy ?c }
} }
"""


def refusals(store: Store, session: IRI) -> list[dict[str, Any]]:
    result = store.query(REFUSALS, {"session": session})
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items()} for row in result]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_budget_refusal_is_recorded_and_still_raises(
    path: str, ctx: Context, store: Store
) -> None:
    priced = Response(text="spent", usd=0.5, model="m")
    client = LLMClient.mock(response=[priced, "never"], model="m")
    ctx.tracker.set_budget(ctx.principal, usd=0.25)
    assert client.complete("first", ctx=ctx).text == "spent"
    with pytest.raises(BudgetExceeded) as info:
        PATHS[path](client, ctx)
    assert len(client.requests) == 1  # nothing was sent
    [row] = refusals(store, ctx.session)
    assert row["c"] == info.value.activity_iri  # type: ignore[attr-defined]
    assert (row["status"], row["who"], row["budget"], row["model"]) == (
        "refused",
        "did:local:alice",
        "usd",
        "m",
    )
    assert (row["limit"], row["observed"]) == (0.25, 0.5)
    assert row["error"] == f"BudgetExceeded: {info.value}"


def test_a_token_budget_refusal_names_the_token_budget(ctx: Context, store: Store) -> None:
    client = LLMClient.mock(
        response=[Response(text="x", model="mock", input_tokens=70, output_tokens=40)]
    )
    ctx.tracker.set_budget(ctx.principal, tokens=100)
    client.complete("first", ctx=ctx)
    with pytest.raises(BudgetExceeded, match="tokens"):
        client.complete("second", ctx=ctx)
    [row] = refusals(store, ctx.session)
    assert (row["budget"], row["limit"], row["observed"]) == ("tokens", 100.0, 110.0)


def test_the_pack_query_lists_failovers_and_refusals(ctx: Context, store: Store) -> None:
    client = chain()
    client.complete("q", ctx=ctx)
    ctx.tracker.set_budget("did:local:bob", usd=0.0)
    with Context.open("did:local:bob", recorder=ctx.recorder) as bob, pytest.raises(BudgetExceeded):
        client.complete("q", ctx=bob)
    result = get_query("provider-fallbacks").run(store)
    assert isinstance(result, Solutions)
    rows = [{k: to_python(v) for k, v in r.items()} for r in result]
    assert [(r["kind"], r["principal"]) for r in rows] == [
        ("fallback", "did:local:alice"),
        ("refused", "did:local:bob"),
    ]
    fallback, refused = rows
    assert (fallback["failedProvider"], fallback["nextProvider"]) == ("mock:primary", "mock:backup")
    assert fallback["answerStatus"] == "ok" and fallback["error"].endswith("primary down")
    assert (refused["budget"], refused["limit"], refused["observed"]) == ("usd", 0.0, 0.0)
    only_bob = get_query("provider-fallbacks").run(store, principal="did:local:bob")
    assert isinstance(only_bob, Solutions)
    assert [to_python(r["kind"]) for r in only_bob] == ["refused"]


def test_an_exported_session_has_one_span_per_attempt(ctx: Context, store: Store) -> None:
    """OTel export: a completion after a failover keeps its caller as its parent span."""
    from trails.otel.export import session_spans

    chain().complete("q", ctx=ctx)
    with pytest.raises(ProvidersUnavailable):
        LLMClient.fallback(
            [LLMClient.mock(response=down(1), model="a"), LLMClient.mock(response=down(1))]
        ).complete("q", ctx=ctx)
    ctx.close()
    spans = session_spans(store, str(ctx.session))
    root = [s for s in spans if s.parent is None]
    models = sorted(
        str((s.attributes or {}).get("gen_ai.request.model")) for s in spans if s is not root[0]
    )
    # primary failed, backup answered; a and mock failed, then the call itself (asking a)
    assert models == ["a", "a", "backup", "mock", "primary"]
    assert len(root) == 1 and all(
        s.parent is not None and s.parent.span_id == root[0].context.span_id
        for s in spans
        if s is not root[0]
    )


def test_the_report_shows_failovers_and_refusals(ctx: Context, store: Store) -> None:
    from trails.audit.report import render_report

    chain().complete("q", ctx=ctx)
    ctx.tracker.set_budget(ctx.principal, usd=0.0)
    with pytest.raises(BudgetExceeded):
        chain().complete("q", ctx=ctx)
    html = render_report(store, str(ctx.session))
    part = html[html.index("<h3>Provider fallbacks and refused calls</h3>") :]
    part = part[: part.index("</table>")]
    assert "<td>mock:primary</td><td>mock:backup (ok)</td>" in part
    assert "<td>ModelServerError: primary down</td>" in part
    assert "budget of did:local:alice" in part and "usd budget: 0.0 spent of 0.0" in part


def test_an_auditor_reads_failovers_with_the_cli(tmp_path: Path) -> None:
    """Recorded in one process, read back by ``trails query`` and ``trails report`` in another."""
    where = tmp_path / "store"
    disk = open_store(str(where))
    try:
        with Context.open("did:local:alice", recorder=Recorder(disk)) as ctx:
            chain().complete("q", ctx=ctx)
            session = str(ctx.session)
    finally:
        disk.close()
    env = {**os.environ, "TRAILS_STORE": str(where)}
    run = [sys.executable, "-m", "trails.cli"]
    done = subprocess.run(
        [*run, "query", "provider-fallbacks", "--format", "json"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)["results"]["bindings"]
    assert row["failedProvider"]["value"] == "mock:primary"
    assert row["nextProvider"]["value"] == "mock:backup"
    assert row["session"]["value"] == session and row["kind"]["value"] == "fallback"
    done = subprocess.run(
        [*run, "report", session], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "<td>mock:primary</td><td>mock:backup (ok)</td>" in done.stdout


def test_a_session_with_failovers_and_a_refusal_replays_as_its_callers_saw_it(
    ctx: Context, store: Store
) -> None:
    from trails.testing.replay import ReplayLLM

    client = chain()
    assert client.complete("one", ctx=ctx).text == "b1"
    ctx.tracker.set_budget(ctx.principal, usd=0.0)
    with pytest.raises(BudgetExceeded):
        client.complete("two", ctx=ctx)
    ctx.tracker.set_budget(ctx.principal, usd=None)
    # a chain hashes its requests under its first client's model id
    replay = ReplayLLM.from_session(str(ctx.session), store=store, model="primary")
    with Context.open("did:local:alice", recorder=ctx.recorder) as again:
        assert replay.complete("one", ctx=again).text == "b1"  # not the primary's failure
    assert [c.status for c in replay.adapter.recorded] == ["ok"]
