"""Seed 002's response caching and streaming fallback, read back from the store.

selectools (seed 002): "any object with get/set/delete/clear/stats" is a cache
backend; "astream is never cached"; a cache hit "still contributes usage (the
stored UsageStats are replayed)"; a provider without ``astream`` "falls back to
complete, yielded as one chunk".
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from trails.errors import UserError
from trails.kernel import Context
from trails.llm import Chunk, LLMClient, Response
from trails.llm.types import Request
from trails.prov import T
from trails.store import Solutions, Store, to_python
from trails.testing import assert_conforms

_COMPLETIONS = f"""
SELECT ?a ?hit ?usd ?status ?started WHERE {{
  GRAPH ?g {{
    ?a a {T.LLMCompletion.n3()} ; {T.status.n3()} ?status ;
       <http://www.w3.org/ns/prov#startedAtTime> ?started .
    OPTIONAL {{ ?a {T.cacheHit.n3()} ?hit }}
    OPTIONAL {{ ?a {T.costUSD.n3()} ?usd }}
  }}
}} ORDER BY ?started
"""


def completions(store: Store) -> list[tuple[bool, float | None, str]]:
    """(cache hit, cost, status) of every recorded completion, oldest first."""
    result = store.query(_COMPLETIONS)
    assert isinstance(result, Solutions)
    out = []
    for row in result:
        hit = row.get("hit")
        usd = row.get("usd")
        out.append(
            (
                bool(to_python(hit)) if hit is not None else False,
                None if usd is None else float(to_python(usd)),
                str(to_python(row["status"])),
            )
        )
    return out


class SeedCache:
    """Seed 002's Cache protocol, written the way its docs show a custom backend."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.calls: list[str] = []

    def get(self, key: str) -> Any:
        self.calls.append("get")
        return self.data.get(key)

    def set(self, key: str, value: Any, ttl: int | None = None) -> None:
        self.calls.append("set")
        self.data[key] = value

    def delete(self, key: str) -> bool:
        return self.data.pop(key, None) is not None

    def clear(self) -> None:
        self.data.clear()

    def stats(self) -> dict[str, int]:
        return {"size": len(self.data)}


@pytest.mark.seed_row("002-072")
def test_a_custom_cache_object_answers_the_second_identical_call(
    ctx: Context, store: Store
) -> None:
    cache = SeedCache()
    client = LLMClient.mock(response=["a", "b"], response_cache=cache)
    first = client.complete("same", ctx=ctx)
    second = client.complete("same", ctx=ctx)
    assert (first.text, second.text) == ("a", "a")
    assert second.cache_hit and not first.cache_hit
    assert len(cache.data) == 1 and cache.calls == ["get", "set", "get"]
    assert [hit for hit, _, _ in completions(store)] == [False, True]
    assert_conforms(store)


def test_an_object_that_is_not_a_cache_is_refused_not_dropped() -> None:
    class HalfCache:
        def get(self, key: str) -> None:
            return None

    with pytest.raises(UserError, match="delete, clear"):
        LLMClient.mock(response="x", response_cache=HalfCache())  # type: ignore[arg-type]
    with pytest.raises(UserError, match="response_cache must be"):
        LLMClient.mock(response="x", response_cache="redis://localhost")  # type: ignore[arg-type]


@pytest.mark.seed_row("002-077")
def test_a_cache_hit_books_and_records_the_original_cost(ctx: Context, store: Store) -> None:
    priced = Response(text="42", model="", input_tokens=7, output_tokens=2, usd=0.25)
    client = LLMClient.mock(response=[priced], response_cache=True)
    client.complete("meaning?", ctx=ctx)
    hit = client.complete("meaning?", ctx=ctx)
    assert hit.cache_hit and hit.usd == 0.25
    assert [e.usd for e in ctx.tracker.envelopes()] == [0.25, 0.25]
    assert ctx.tracker.total_usd() == pytest.approx(0.5)  # budgets see the hit at its price
    assert completions(store) == [(False, 0.25, "ok"), (True, 0.25, "ok")]
    # what was really paid: the completions that are not hits
    paid = store.query(
        f"SELECT (SUM(?u) AS ?paid) WHERE {{ GRAPH ?g {{ ?a {T.costUSD.n3()} ?u ; "
        f"{T.cacheHit.n3()} false }} }}"
    )
    assert isinstance(paid, Solutions)
    assert float(to_python(paid.rows[0][0])) == pytest.approx(0.25)
    assert_conforms(store)


@pytest.mark.seed_row("002-073", differs="docs/agent.md#coming-from-selectools")
def test_the_store_lookup_books_the_recorded_cost(ctx: Context, store: Store) -> None:
    priced = Response(text="recorded", model="", input_tokens=3, output_tokens=4, usd=0.125)
    LLMClient.mock(response=priced).complete("same question", ctx=ctx)
    hit = LLMClient.mock(response=["fresh"], store_cache=True).complete("same question", ctx=ctx)
    assert hit.cache_hit and hit.text == "recorded" and hit.usd == 0.125
    assert completions(store) == [(False, 0.125, "ok"), (True, 0.125, "ok")]


@pytest.mark.seed_row("002-075")
def test_streams_are_never_served_from_nor_written_to_the_cache(ctx: Context, store: Store) -> None:
    cache = SeedCache()
    client = LLMClient.mock(response=["first", "second", "third"], response_cache=cache)
    client.complete("q", ctx=ctx)  # fills the cache
    streamed = list(client.stream("q", ctx=ctx))
    assert isinstance(streamed[-1], Response) and streamed[-1].text == "second"
    assert not streamed[-1].cache_hit
    assert len(cache.data) == 1 and cache.calls == ["get", "set"]  # the stream never asked

    async def astreamed() -> list[Chunk | Response]:
        return [item async for item in client.astream("fresh question", ctx=ctx)]

    parts = asyncio.run(astreamed())
    assert isinstance(parts[-1], Response) and parts[-1].text == "third"
    assert len(cache.data) == 1  # nor was a stream written to it
    assert [hit for hit, _, _ in completions(store)] == [False, False, False]


class OnlyComplete:
    """An adapter with only ``complete``: seed 002's provider without streaming."""

    provider, model, local = "custom", "m", True

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Response:
        self.requests.append(request)
        return Response(text="whole answer", model="m", input_tokens=3, output_tokens=2)


@pytest.mark.seed_row("002-067")
def test_an_adapter_with_only_complete_streams_one_chunk(ctx: Context, store: Store) -> None:
    adapter = OnlyComplete()
    parts = list(LLMClient(adapter).stream("hi", ctx=ctx))  # type: ignore[arg-type]
    assert [type(p).__name__ for p in parts] == ["Chunk", "Response"]
    assert parts[0].text == "whole answer" and parts[-1].text == "whole answer"
    assert len(adapter.requests) == 1
    assert completions(store) == [(False, 0.0, "ok")]
    assert_conforms(store)


@pytest.mark.seed_row("002-067")
def test_an_adapter_with_only_complete_astreams_one_chunk(ctx: Context, store: Store) -> None:
    adapter = OnlyComplete()

    async def collect() -> list[Chunk | Response]:
        return [p async for p in LLMClient(adapter).astream("hi", ctx=ctx)]  # type: ignore[arg-type]

    parts = asyncio.run(collect())
    assert [type(p).__name__ for p in parts] == ["Chunk", "Response"]
    assert parts[-1].text == "whole answer"
    assert completions(store) == [(False, 0.0, "ok")]
