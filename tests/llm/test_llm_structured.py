"""Structured output (``response_format``) and batches (``batch`` / ``abatch``).

A structured call asks the provider for its JSON mode (OpenAI-compatible
``response_format``, Ollama ``format``, Anthropic a forced tool), validates
the answer, and retries with the validation error; every attempt is a
recorded completion, the invalid ones with status ``invalid``. Batches return
results in order, errors as results, within their concurrency limit.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pydantic
import pytest
from llm_fakes import FakeServer, Reply, anthropic_tool_use, ollama_chat, openai_chat

from trails.errors import UserError
from trails.kernel import Context
from trails.llm import (
    LLMClient,
    ModelServerError,
    Request,
    Response,
    StructuredOutputError,
)
from trails.prov import T
from trails.store import Solutions, Store, to_python
from trails.testing import assert_conforms


class City(pydantic.BaseModel):
    name: str
    population: int


def statuses(store: Store) -> list[tuple[str, str | None]]:
    result = store.query(
        f"""SELECT ?a ?status ?err ?start WHERE {{ GRAPH ?g {{
              ?a a {T.LLMCompletion.n3()} ; {T.status.n3()} ?status ;
                 <http://www.w3.org/ns/prov#startedAtTime> ?start .
              OPTIONAL {{ GRAPH ?errorMessageGraph1 {{ ?a {T.errorMessage.n3()} ?err }} }} }} }} ORDER BY ?start"""
    )
    assert isinstance(result, Solutions)
    rows = [{k: to_python(v) for k, v in r.items()} for r in result]
    return [(str(r["status"]), None if r.get("err") is None else str(r["err"])) for r in rows]


@pytest.mark.parametrize("how", ["sync", "async"])
def test_an_invalid_answer_is_recorded_then_retried_with_the_error(
    how: str, ctx: Context, store: Store
) -> None:
    client = LLMClient.mock(['{"name": "Oslo"}', '```json\n{"name": "Oslo", "population": 7}\n```'])
    if how == "sync":
        response = client.complete("A city?", response_format=City, ctx=ctx)
    else:
        response = asyncio.run(client.acomplete("A city?", response_format=City, ctx=ctx))
    assert response.parsed == City(name="Oslo", population=7)
    [(first, err), (second, none)] = statuses(store)
    assert (first, second, none) == ("invalid", "ok", None)
    assert err is not None and "attempt 1 of 3" in err and "population: Field required" in err
    retry = client.requests[1].messages
    assert retry[-2].role == "assistant" and retry[-2].content == '{"name": "Oslo"}'
    assert "population: Field required" in retry[-1].content
    params = client.requests[0]
    assert params.response_format == City.model_json_schema() and params.response_name == "City"
    assert ctx.tracker.total_tokens() > response.tokens  # the invalid attempt was spent too
    assert_conforms(store)


def test_exhausted_retries_end_with_a_clear_recorded_error(ctx: Context, store: Store) -> None:
    schema = {
        "title": "Verdict",
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
    }
    client = LLMClient.mock(["not json", '{"ok": "yes"}'])
    with pytest.raises(StructuredOutputError, match="no answer matching 'Verdict' in 2") as info:
        client.complete("Verdict?", response_format=schema, max_retries=1, ctx=ctx)
    assert info.value.errors[0].startswith("the answer is not JSON")
    assert info.value.errors[1] == "ok: 'yes' is not of type 'boolean'"
    recorded = statuses(store)
    assert [s for s, _ in recorded] == ["invalid", "invalid"]
    last = recorded[-1][1]
    assert last is not None and "attempt 2 of 2" in last and "no attempts left" in last
    assert info.value.activity_iri is not None  # type: ignore[attr-defined]
    assert_conforms(store)


def test_a_json_schema_answer_is_the_json_value(ctx: Context) -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    response = LLMClient.mock("[1, 2, 3]").complete("n?", response_format=schema, ctx=ctx)
    assert response.parsed == [1, 2, 3]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"response_format": int}, "pydantic model class or a JSON schema"),
        ({"response_format": {"type": 12}}, "not a valid JSON schema"),
        ({"response_format": City, "max_retries": -1}, "max_retries must be an int >= 0"),
    ],
)
def test_bad_structured_arguments(ctx: Context, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(UserError, match=match):
        LLMClient.mock("{}").complete("x", ctx=ctx, **kwargs)


OSLO = {"name": "Oslo", "population": 7}


@pytest.mark.parametrize("how", ["sync", "async"])
def test_each_provider_is_asked_for_its_json_mode(
    how: str, server: FakeServer, ctx: Context, store: Store
) -> None:
    server.enqueue(
        Reply(json=anthropic_tool_use([("toolu_1", "City", OSLO)])),
        Reply(json=openai_chat(json.dumps(OSLO))),
        Reply(json=ollama_chat(json.dumps(OSLO))),
    )
    clients = [
        LLMClient.anthropic("claude-haiku-4-5", api_key="k", base_url=server.url),
        LLMClient.openai_compatible("local-model", base_url=server.url + "/v1"),
        LLMClient.ollama("qwen3:8b", host=server.url),
    ]
    for client in clients:
        if how == "sync":
            response = client.complete("A city?", response_format=City, ctx=ctx)
        else:
            response = asyncio.run(client.acomplete("A city?", response_format=City, ctx=ctx))
        assert response.parsed == City(**OSLO)
    anthropic, openai, ollama = (r.body for r in server.requests)
    schema = City.model_json_schema()
    assert anthropic["tool_choice"] == {"type": "tool", "name": "City"}
    assert anthropic["tools"][-1]["input_schema"] == schema
    assert openai["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "City", "schema": schema},
    }
    assert ollama["format"] == schema
    assert [s for s, _ in statuses(store)] == ["ok", "ok", "ok"]
    assert_conforms(store)


# -- batches ---------------------------------------------------------------------------


def _answer(messages: list[Any]) -> str:
    if messages[-1].content == "q3":
        raise ModelServerError("the model fell over", provider="mock")
    return f"a{messages[-1].content[1:]}"


@pytest.mark.parametrize("how", ["sync", "async"])
def test_batch_returns_results_in_order_with_errors_as_results(
    how: str, ctx: Context, store: Store
) -> None:
    client = LLMClient.mock(_answer)
    progress: list[tuple[int, int]] = []
    prompts = [f"q{i}" for i in range(8)]
    if how == "sync":
        results = client.batch(
            prompts, max_concurrency=3, on_progress=lambda *p: progress.append(p), ctx=ctx
        )
    else:
        results = asyncio.run(
            client.abatch(
                prompts, max_concurrency=3, on_progress=lambda *p: progress.append(p), ctx=ctx
            )
        )
    assert isinstance(results[3], ModelServerError)
    assert [r.text for i, r in enumerate(results) if i != 3] == [  # type: ignore[union-attr]
        f"a{i}" for i in range(8) if i != 3
    ]
    assert progress == [(i, 8) for i in range(1, 9)]
    assert [s for s, _ in statuses(store)].count("error") == 1
    assert len(statuses(store)) == 8
    assert_conforms(store)


class _Gauge:
    """An async adapter that counts how many calls are in flight at once."""

    provider = "mock"
    model = "gauge"
    local = True

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0

    def complete(self, request: Request) -> Response:
        raise AssertionError("the async path must not use complete")

    def stream(self, request: Request) -> Any:
        raise AssertionError("not streamed")

    async def acomplete(self, request: Request) -> Response:
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.001)
        self.active -= 1
        return Response(text="ok", model=self.model)


def test_abatch_keeps_to_its_concurrency_limit(ctx: Context, store: Store) -> None:
    gauge = _Gauge()
    client = LLMClient(gauge)
    results = asyncio.run(client.abatch([f"q{i}" for i in range(20)], max_concurrency=4, ctx=ctx))
    assert all(isinstance(r, Response) for r in results) and len(results) == 20
    assert gauge.peak == 4
    assert_conforms(store)


def test_batch_arguments_are_checked(ctx: Context) -> None:
    with pytest.raises(UserError, match="max_concurrency must be >= 1"):
        LLMClient.mock("x").batch(["a"], max_concurrency=0, ctx=ctx)
    assert LLMClient.mock("x").batch([], ctx=ctx) == []
