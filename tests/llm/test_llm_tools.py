"""Native tool calls: capabilities offered as each provider's tool definitions, calls parsed back.

Every provider's fake answers in its real wire format (Anthropic ``tool_use``
blocks through the SDK, OpenAI-compatible ``tool_calls``, Ollama
``message.tool_calls``), sync and async, plain and streamed. The recorded
completion carries each call's id (``trails:toolCallId``) and a
``trails:ToolCallRequest`` entity, so the invocation that runs the call can
link back to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from llm_fakes import (
    FakeServer,
    Reply,
    anthropic_message,
    anthropic_stream,
    anthropic_tool_stream,
    anthropic_tool_use,
    ollama_chat,
    ollama_tool_calls,
    openai_chat,
    openai_stream,
    openai_tool_calls,
    openai_tool_stream,
)

from trails.errors import UserError
from trails.kernel import Context, capability, get_capability
from trails.llm import LLMClient, Message, Response, ToolCall, ToolSpec, tool_specs
from trails.llm.types import Request, wire_name
from trails.prov import T
from trails.store import IRI, Solutions, Store, to_python
from trails.testing import assert_conforms

CALLS = [("call_1", "weather__lookup", {"city": "Paris"}), ("call_2", "clock", {})]


@capability(id="weather.lookup", description="Today's weather in a city.")
def weather_lookup(city: str, days: int = 1) -> str:
    return f"sunny in {city}"


def _tools() -> list[Any]:
    clock = {"name": "clock", "description": "The time.", "parameters": {"type": "object"}}
    return [get_capability("weather.lookup"), clock]


def test_a_decorated_function_is_offered_as_its_capability() -> None:
    [spec] = tool_specs([weather_lookup])
    manifest = get_capability("weather.lookup").manifest()
    assert spec == ToolSpec("weather.lookup", manifest["description"], manifest["input_schema"])


Client = Callable[[str], LLMClient]

PROVIDERS: list[tuple[str, Client, Callable[[], Reply]]] = [
    (
        "anthropic",
        lambda url: LLMClient.anthropic("claude-haiku-4-5", api_key="k", base_url=url),
        lambda: Reply(json=anthropic_tool_use(CALLS, text="Let me look.")),
    ),
    (
        "openai",
        lambda url: LLMClient.openai_compatible("local-model", base_url=url + "/v1"),
        lambda: Reply(json=openai_tool_calls(CALLS)),
    ),
    (
        "ollama",
        lambda url: LLMClient.ollama("qwen3:8b", host=url),
        lambda: Reply(json=ollama_tool_calls(CALLS)),
    ),
]


def _sent_tools(name: str, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The offered tools as the provider saw them: name -> (description, schema)."""
    if name == "anthropic":
        return {t["name"]: {"d": t["description"], "s": t["input_schema"]} for t in body["tools"]}
    return {
        t["function"]["name"]: {"d": t["function"]["description"], "s": t["function"]["parameters"]}
        for t in body["tools"]
    }


def recorded_calls(store: Store, activity: str) -> list[str]:
    result = store.query(
        f"""SELECT ?a ?id WHERE {{ GRAPH ?g {{
              ?a {T.toolCallId.n3()} ?id .
              ?r a {T.ToolCallRequest.n3()} ; {T.toolCallId.n3()} ?id ;
                 <http://www.w3.org/ns/prov#wasGeneratedBy> ?a .
            }} }} ORDER BY ?id""",
        {"a": IRI(activity)},
    )
    assert isinstance(result, Solutions)
    return [str(to_python(r["id"])) for r in result]


@pytest.mark.parametrize("how", ["sync", "async"])
@pytest.mark.parametrize(("name", "make", "reply"), PROVIDERS, ids=[p[0] for p in PROVIDERS])
def test_tool_calls_come_back_from_each_provider(
    name: str,
    make: Client,
    reply: Callable[[], Reply],
    how: str,
    server: FakeServer,
    ctx: Context,
    store: Store,
) -> None:
    server.enqueue(reply())
    client = make(server.url)
    if how == "sync":
        response = client.complete("weather?", tools=_tools(), ctx=ctx)
    else:
        response = asyncio.run(client.acomplete("weather?", tools=_tools(), ctx=ctx))
    names = [(c.name, c.arguments) for c in response.tool_calls]
    # the provider saw "weather__lookup"; the call names the capability again
    assert names == [("weather.lookup", {"city": "Paris"}), ("clock", {})]
    if name == "ollama":  # Ollama sends no ids: fresh ones are minted
        assert all(c.id.startswith("call_") and len(c.id) > 10 for c in response.tool_calls)
    else:
        assert [c.id for c in response.tool_calls] == ["call_1", "call_2"]
    sent = _sent_tools(name, server.requests[0].body)
    manifest = get_capability("weather.lookup").manifest()
    assert sent["weather__lookup"] == {"d": manifest["description"], "s": manifest["input_schema"]}
    assert sent["clock"]["s"] == {"type": "object"}
    ids = sorted(c.id for c in response.tool_calls)
    assert recorded_calls(store, str(response.activity_iri)) == ids
    assert_conforms(store)


STREAMS: list[tuple[str, Client, Callable[[], Reply]]] = [
    (
        "anthropic",
        PROVIDERS[0][1],
        lambda: Reply(
            chunks=anthropic_tool_stream(CALLS[0]),
            content_type="text/event-stream",
        ),
    ),
    (
        "openai",
        PROVIDERS[1][1],
        lambda: Reply(chunks=openai_tool_stream(CALLS[0]), content_type="text/event-stream"),
    ),
]


@pytest.mark.parametrize("how", ["sync", "async"])
@pytest.mark.parametrize(("name", "make", "reply"), STREAMS, ids=[s[0] for s in STREAMS])
def test_streamed_tool_calls_are_assembled(
    name: str,
    make: Client,
    reply: Callable[[], Reply],
    how: str,
    server: FakeServer,
    ctx: Context,
    store: Store,
) -> None:
    server.enqueue(reply())
    client = make(server.url)
    if how == "sync":
        final = list(client.stream("weather?", tools=_tools(), ctx=ctx))[-1]
    else:

        async def consume() -> Any:
            return [i async for i in client.astream("weather?", tools=_tools(), ctx=ctx)][-1]

        final = asyncio.run(consume())
    assert isinstance(final, Response)
    assert final.tool_calls == (ToolCall("call_1", "weather.lookup", {"city": "Paris"}),)
    assert recorded_calls(store, str(final.activity_iri)) == ["call_1"]
    assert_conforms(store)


def test_tool_results_travel_back_in_each_wire_format(server: FakeServer, ctx: Context) -> None:
    """An assistant turn with tool calls, then tool results, as each provider wants them."""
    call = ToolCall("call_1", "weather.lookup", {"city": "Paris"})
    history = [
        Message("user", "weather?"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "sunny", tool_call_id="call_1"),
        {"role": "tool", "content": "12:00", "tool_call_id": "call_2"},
    ]
    server.enqueue(
        Reply(json=anthropic_message("It is sunny.")),
        Reply(json=openai_chat("It is sunny.")),
        Reply(json=ollama_chat("It is sunny.")),
    )
    for _, make, _ in PROVIDERS:
        assert make(server.url).complete(history, tools=_tools(), ctx=ctx).text == "It is sunny."
    anthropic, openai, ollama = (r.body["messages"] for r in server.requests)
    assert anthropic[1] == {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "call_1",
                "name": "weather__lookup",
                "input": {"city": "Paris"},
            }
        ],
    }
    assert anthropic[2] == {  # consecutive results: one user turn of tool_result blocks
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": "12:00"},
        ],
    }
    assert openai[1]["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "weather__lookup", "arguments": '{"city": "Paris"}'},
        }
    ]
    assert openai[2] == {"role": "tool", "content": "sunny", "tool_call_id": "call_1"}
    assert ollama[1]["tool_calls"] == [
        {"function": {"name": "weather__lookup", "arguments": {"city": "Paris"}}}
    ]
    # Ollama's calls have no ids: a result names its tool, found by the call it answers
    assert ollama[2] == {"role": "tool", "content": "sunny", "tool_name": "weather__lookup"}
    assert ollama[3] == {"role": "tool", "content": "12:00"}  # answers no call in the request


def test_the_mock_scripts_tool_calls(ctx: Context, store: Store) -> None:
    client = LLMClient.mock(
        [
            ToolCall("t1", "weather.lookup", {"city": "Oslo"}),
            [ToolCall("t2", "clock", {}), ToolCall("t3", "clock", {})],
            "done",
        ]
    )
    first = client.complete("go", tools=_tools(), ctx=ctx)
    second = asyncio.run(client.acomplete("go on", tools=_tools(), ctx=ctx))
    third = client.complete("finish", ctx=ctx)
    assert [c.id for c in first.tool_calls] == ["t1"] and first.stop_reason == "tool_use"
    assert [c.name for c in second.tool_calls] == ["clock", "clock"]
    assert third.tool_calls == () and third.text == "done"
    assert client.last_request is not None and client.last_request.tools == ()
    assert [t.name for t in client.requests[0].tools] == ["weather.lookup", "clock"]
    assert recorded_calls(store, str(second.activity_iri)) == ["t2", "t3"]
    assert_conforms(store)


def test_offered_tools_are_part_of_the_request_hash(ctx: Context) -> None:
    client = LLMClient.mock("x")
    plain = client._begin("hi", 10, 0.0, ctx=ctx, model=None, stop=(), extra={})
    with_tools = client._begin(
        "hi",
        10,
        0.0,
        ctx=ctx,
        model=None,
        stop=(),
        extra={},
        tools=(ToolSpec("clock", "", {"type": "object"}),),
    )
    assert plain.hash != with_tools.hash
    assert with_tools.params["tools"] == [
        {"name": "clock", "description": "", "parameters": {"type": "object"}}
    ]


@pytest.mark.parametrize(
    ("tools", "match"),
    [
        ([42], "tool #0 is a int"),
        ([len], "tool #0 is a builtin_function_or_method"),
        ([{"description": "x"}], "tool #0 has no name"),
        ([{"name": "a.b"}, {"name": "a__b"}], "would both be called 'a__b'"),
        ([{"name": "x", "parameters": "nope"}], "parameters must be a JSON schema"),
    ],
)
def test_bad_tools_are_user_errors(ctx: Context, tools: list[Any], match: str) -> None:
    with pytest.raises(UserError, match=match):
        LLMClient.mock("x").complete("hi", tools=tools, ctx=ctx)


def test_tool_messages_need_an_id(ctx: Context) -> None:
    with pytest.raises(UserError, match="tool result without a tool_call_id"):
        LLMClient.mock("x").complete([{"role": "tool", "content": "r"}], ctx=ctx)


def test_wire_names_map_back() -> None:
    request = Request("m", (Message("user", "x"),), tools=(ToolSpec("notes.search", "", {}),))
    assert wire_name("notes.search") == "notes__search"
    assert request.tool_name("notes__search") == "notes.search"
    assert request.tool_name("unknown") == "unknown"


RUN_STREAMS: list[tuple[str, Client, Callable[[], list[bytes]], Callable[[], list[bytes]]]] = [
    (
        "anthropic",
        PROVIDERS[0][1],
        lambda: anthropic_tool_stream(CALLS[0]),
        lambda: anthropic_stream(["Sunny ", "in ", "Paris."]),
    ),
    (
        "openai",
        PROVIDERS[1][1],
        lambda: openai_tool_stream(CALLS[0]),
        lambda: openai_stream(["Sunny ", "in ", "Paris."]),
    ),
]

INFORMED = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?id WHERE { GRAPH ?g {
  ?call a trails:CapabilityInvocation ; trails:toolCallId ?id ; prov:wasInformedBy ?turn .
  ?turn a trails:LLMCompletion ; trails:toolCallId ?id .
} }
"""


@pytest.mark.parametrize("driver", ["stream", "astream"])
@pytest.mark.parametrize(
    ("name", "make", "call", "answer"), RUN_STREAMS, ids=[s[0] for s in RUN_STREAMS]
)
def test_a_native_run_streams_through_each_providers_sdk(
    name: str,
    make: Client,
    call: Callable[[], list[bytes]],
    answer: Callable[[], list[bytes]],
    driver: str,
    server: FakeServer,
    store: Store,
) -> None:
    """``react.stream`` / ``astream`` with native tool calls over the provider's real SDK and
    HTTP: the tool-call turn and the answer turn both stream, the call runs as a recorded
    invocation informed by the completion that asked for it, and the answer's tokens arrive
    piece by piece."""
    from trails.agent import Session
    from trails.agent.planners import react

    events_stream = "text/event-stream"
    server.enqueue(
        Reply(chunks=call(), content_type=events_stream),
        Reply(chunks=answer(), content_type=events_stream),
    )
    session = Session(principal="did:local:alice")
    options: dict[str, Any] = {"tools": ["weather.lookup"], "tool_calling": "native"}
    llm = make(server.url)
    if driver == "stream":
        events = list(react.stream("Weather in Paris?", llm=llm, session=session, **options))
    else:

        async def consume() -> list[Any]:
            pieces = react.astream("Weather in Paris?", llm=llm, session=session, **options)
            return [e async for e in pieces]

        events = asyncio.run(consume())
    session.close()
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    result = events[-1].data["result"]
    assert result.stopped == "goal_achieved" and result.answer == "Sunny in Paris."
    [ended] = [e for e in events if e.kind == "tool_end"]
    assert ended.data["capability"] == "weather.lookup"
    last = max(i for i, k in enumerate(kinds) if k == "llm_start")
    assert [e.data["text"] for e in events[last:] if e.kind == "token"] == [
        "Sunny ",
        "in ",
        "Paris.",
    ]
    assert [r.body.get("stream") for r in server.requests] == [True, True]
    rows = store.query(INFORMED)
    assert isinstance(rows, Solutions)
    assert [to_python(r["id"]) for r in rows] == ["call_1"]
    assert_conforms(store)
