"""``acomplete`` / ``astream`` against the real SDK and httpx's async client, recorded like sync.

Each provider's fake speaks its real wire format; the Anthropic adapter runs
through the SDK's ``AsyncAnthropic``, Ollama and OpenAI-compatible servers
through ``httpx.AsyncClient``. A sync and an async call of the same request
must record the same graph shape (compared with SPARQL), and many
concurrent calls in one process must each land whole: one atomic write per
completion, none lost, none mixed with another.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from llm_fakes import FakeServer, Reply, openai_chat
from test_llm_adapters import KITS, Kit, recorded

from trails.kernel import Context
from trails.llm import Chunk, LLMClient, Message, ModelServerError, Response, RetryPolicy
from trails.prov import T
from trails.store import IRI, Solutions, Store, to_python
from trails.testing import assert_conforms

PROV = "http://www.w3.org/ns/prov#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

# Every (predicate, kind) around one completion: its own properties, and those of the
# entities it used and generated. ``kind`` is the class for rdf:type, else "iri" or the
# literal's datatype, so two recordings compare by shape, not by value.
SHAPE = f"""
SELECT ?a ?who ?p ?kind WHERE {{ GRAPH ?g {{
  {{ BIND("activity" AS ?who) ?a ?p ?o }}
  UNION {{ BIND("used" AS ?who) ?a <{PROV}used> ?s . ?s ?p ?o }}
  UNION {{ BIND("generated" AS ?who) ?s <{PROV}wasGeneratedBy> ?a . ?s ?p ?o }}
  BIND(IF(?p = <{RDF_TYPE}>, STR(?o), IF(isIRI(?o), "iri", STR(DATATYPE(?o)))) AS ?kind)
}} }}"""


def shape(store: Store, activity: str | None) -> Counter[tuple[str, str, str]]:
    result = store.query(SHAPE, {"a": IRI(str(activity))})
    assert isinstance(result, Solutions)
    return Counter(
        (str(to_python(r["who"])), str(r["p"]), str(to_python(r["kind"]))) for r in result
    )


@pytest.mark.parametrize("kit", KITS, ids=[k.name for k in KITS])
def test_acomplete_records_the_same_shape_as_complete(
    kit: Kit, server: FakeServer, fast_retry: RetryPolicy, ctx: Context, store: Store
) -> None:
    server.enqueue(kit.ok("Bonjour"), kit.ok("Bonjour"))
    client = kit.client(server.url, fast_retry)
    messages = [Message("system", "be brief"), Message("user", "hello")]
    sync = client.complete(messages, ctx=ctx, max_tokens=50)
    async_ = asyncio.run(client.acomplete(messages, ctx=ctx, max_tokens=50))
    assert async_.text == sync.text == "Bonjour"
    assert (async_.input_tokens, async_.output_tokens) == kit.tokens
    assert async_.usd == sync.usd and async_.activity_iri != sync.activity_iri
    assert server.requests[0].body == server.requests[1].body  # the same wire request
    assert shape(store, async_.activity_iri) == shape(store, sync.activity_iri)
    assert len(shape(store, sync.activity_iri)) > 20
    assert recorded(store, str(async_.activity_iri))["text"] == "Bonjour"
    assert_conforms(store)


@pytest.mark.parametrize("kit", KITS, ids=[k.name for k in KITS])
def test_astream_yields_chunks_then_the_recorded_response(
    kit: Kit, server: FakeServer, fast_retry: RetryPolicy, ctx: Context, store: Store
) -> None:
    server.enqueue(kit.stream(["Hel", "lo ", "wörld"]), kit.stream(["Hel", "lo ", "wörld"]))
    client = kit.client(server.url, fast_retry)

    async def consume() -> list[Chunk | Response]:
        return [item async for item in client.astream("hi", ctx=ctx)]

    parts = asyncio.run(consume())
    assert [p.text for p in parts[:-1]] == ["Hel", "lo ", "wörld"]
    final = parts[-1]
    assert isinstance(final, Response) and final.text == "Hello wörld"
    assert (final.input_tokens, final.output_tokens) == kit.tokens
    sync = list(client.stream("hi", ctx=ctx))[-1]
    assert isinstance(sync, Response)
    assert shape(store, final.activity_iri) == shape(store, sync.activity_iri)
    assert recorded(store, str(final.activity_iri))["text"] == "Hello wörld"
    assert_conforms(store)


@pytest.mark.parametrize("kit", KITS, ids=[k.name for k in KITS])
def test_async_failure_is_retried_then_recorded(
    kit: Kit, server: FakeServer, fast_retry: RetryPolicy, ctx: Context, store: Store
) -> None:
    server.enqueue(*(kit.error(503, "busy") for _ in range(3)))
    client = kit.client(server.url, fast_retry)
    with pytest.raises(ModelServerError) as info:
        asyncio.run(client.acomplete("hi", ctx=ctx))
    row = recorded(store, info.value.activity_iri)  # type: ignore[attr-defined]
    assert row["status"] == "error" and row["retries"] == 2
    assert len(server.requests) == 3
    assert_conforms(store)


def test_astream_abandoned_by_the_consumer_is_recorded(ctx: Context, store: Store) -> None:
    client = LLMClient.mock("a long answer in many chunks")

    async def first_only() -> str:
        stream = client.astream("hi", ctx=ctx)
        async for item in stream:
            await stream.aclose()  # type: ignore[attr-defined]
            return item.text
        return ""

    assert asyncio.run(first_only()) == "a long a"
    result = store.query(
        f"SELECT ?err WHERE {{ GRAPH ?g {{ ?a a {T.LLMCompletion.n3()} ; "
        f"{T.status.n3()} 'error' }} GRAPH ?cg {{ ?a {T.errorMessage.n3()} ?err }} }}"
    )
    assert isinstance(result, Solutions)
    [row] = list(result)
    assert "closed by the consumer after 8 characters" in str(to_python(row["err"]))


COMPLETIONS = f"""
SELECT ?a ?prompt ?text (COUNT(DISTINCT ?status) AS ?statuses) WHERE {{ GRAPH ?g {{
  ?a a {T.LLMCompletion.n3()} ; {T.status.n3()} ?status ; <{PROV}used> ?p .
  ?p a {T.Prompt.n3()} . GRAPH ?cg1 {{ ?p <{PROV}value> ?prompt }}
  ?c <{PROV}wasGeneratedBy> ?a ; a {T.Completion.n3()} . GRAPH ?cg2 {{ ?c <{PROV}value> ?text }}
}} }} GROUP BY ?a ?prompt ?text"""


def test_many_concurrent_acompletes_each_land_whole(ctx: Context, store: Store) -> None:
    """200 tasks interleaving at every await: 200 completions, each its own prompt and answer."""
    client = LLMClient.mock(lambda messages: f"answer to {messages[-1].content}")

    async def main() -> list[Response]:
        return await asyncio.gather(*(client.acomplete(f"q{i}", ctx=ctx) for i in range(200)))

    responses = asyncio.run(main())
    assert [r.text for r in responses] == [f"answer to q{i}" for i in range(200)]
    assert len({r.activity_iri for r in responses}) == 200
    result = store.query(COMPLETIONS)
    assert isinstance(result, Solutions)
    rows = [{k: to_python(v) for k, v in r.items()} for r in result]
    assert len(rows) == 200
    for row in rows:
        asked = str(row["prompt"]).split('"content":"')[1].split('"')[0]
        assert row["text"] == f"answer to {asked}" and row["statuses"] == 1
    assert ctx.tracker.total_tokens() == sum(r.tokens for r in responses)
    assert_conforms(store)


def test_concurrent_acompletes_over_http_each_land_whole(
    server: FakeServer, ctx: Context, store: Store
) -> None:
    """32 concurrent calls through httpx's async client to one loopback server."""
    server.enqueue(*(Reply(json=openai_chat("ok"), delay=0.01) for _ in range(32)))
    no_retry = RetryPolicy(max_retries=0)  # every call must get through the first time
    client = LLMClient.openai_compatible("local-model", base_url=server.url + "/v1", retry=no_retry)

    async def main() -> list[Any]:
        return await asyncio.gather(*(client.acomplete(f"q{i}", ctx=ctx) for i in range(32)))

    responses = asyncio.run(main())
    assert all(r.text == "ok" for r in responses)
    asked = sorted(r.body["messages"][0]["content"] for r in server.requests)
    assert asked == sorted(f"q{i}" for i in range(32))
    result = store.query(COMPLETIONS)
    assert isinstance(result, Solutions)
    assert len(list(result)) == 32
    assert_conforms(store)


def test_adapter_without_async_methods_runs_in_a_thread(ctx: Context, store: Store) -> None:
    """A fallback chain has no ``acomplete``: its sync path runs off the event loop."""
    first = LLMClient.mock([ModelServerError("down", provider="mock")])
    second = LLMClient.mock("from the second")
    chain = LLMClient.fallback([first, second])
    assert not hasattr(chain.adapter, "acomplete")
    response = asyncio.run(chain.acomplete("hi", ctx=ctx))
    assert response.text == "from the second"
    parts = asyncio.run(_collect(chain, ctx))
    assert isinstance(parts[-1], Response) and parts[-1].text == "from the second"
    assert_conforms(store)


async def _collect(client: LLMClient, ctx: Context) -> list[Chunk | Response]:
    return [item async for item in client.astream("again", ctx=ctx)]
