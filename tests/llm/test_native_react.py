"""ReAct with ``tool_calling="native"`` on each provider, through the real SDK/HTTP clients.

Each provider's loopback fake answers the first turn with two tool calls in its
own wire format and the second with a plain answer. The run must send the
capabilities as the provider's tool definitions, feed the results back in the
provider's own tool-result format (Anthropic ``tool_result`` blocks in one user
turn, OpenAI ``role: tool`` messages with ``tool_call_id``, Ollama ``role:
tool`` messages) in the order the model asked, and record each invocation
informed by the completion that asked, carrying the call's id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from llm_fakes import (
    FakeServer,
    Reply,
    anthropic_message,
    anthropic_tool_use,
    ollama_chat,
    ollama_tool_calls,
    openai_chat,
    openai_tool_calls,
)

from trails.agent import Session
from trails.agent.planners import react
from trails.kernel import capability
from trails.llm import LLMClient
from trails.prov.vocab import NAMESPACES
from trails.store import Solutions, Store, to_python

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())

CALLS = [
    ("toolu_a", "n15__weather", {"city": "Paris"}),
    ("toolu_b", "n15__weather", {"city": "Oslo"}),
]


@capability(id="n15.weather", description="Today's weather in a city.")
def n15_weather(city: str) -> str:
    return f"sunny in {city}" if city == "Paris" else f"snow in {city}"


PROVIDERS: list[tuple[str, Callable[[str], LLMClient], list[Reply]]] = [
    (
        "anthropic",
        lambda url: LLMClient.anthropic("claude-haiku-4-5", api_key="k", base_url=url),
        [
            Reply(json=anthropic_tool_use(CALLS, text="Checking both.")),
            Reply(json=anthropic_message("Paris is sunny, Oslo has snow.")),
        ],
    ),
    (
        "openai",
        lambda url: LLMClient.openai_compatible("local-model", base_url=url + "/v1"),
        [
            Reply(json=openai_tool_calls(CALLS)),
            Reply(json=openai_chat("Paris is sunny, Oslo has snow.")),
        ],
    ),
    (
        "ollama",
        lambda url: LLMClient.ollama("qwen3:8b", host=url),
        [
            Reply(json=ollama_tool_calls(CALLS)),
            Reply(json=ollama_chat("Paris is sunny, Oslo has snow.")),
        ],
    ),
]

LINKED = (
    PREFIXES
    + """
SELECT ?id ?city ?status ?completion WHERE {
  GRAPH ?g {
    ?completion a trails:LLMCompletion ; prov:wasInformedBy ?run ; trails:toolCallId ?id .
    ?inv a trails:CapabilityInvocation ; prov:wasInformedBy ?completion ;
         trails:toolCallId ?id ; trails:status ?status ; prov:used ?in .
    ?in a trails:CapabilityInput .
  }
  GRAPH ?content { ?in prov:value ?city }
} ORDER BY ?city
"""
)


def _tool_results(name: str, messages: list[dict[str, Any]]) -> list[tuple[str | None, str]]:
    """The tool results of the second request, as (call id, content), in the order sent."""
    if name == "anthropic":
        [turn] = [m for m in messages if m["role"] == "user" and isinstance(m["content"], list)
                  and any(b.get("type") == "tool_result" for b in m["content"])]  # fmt: skip
        return [(b["tool_use_id"], b["content"]) for b in turn["content"]]
    return [(m.get("tool_call_id"), m["content"]) for m in messages if m["role"] == "tool"]


@pytest.mark.parametrize(("name", "make", "replies"), PROVIDERS, ids=[p[0] for p in PROVIDERS])
def test_native_react_runs_on_each_provider(
    name: str,
    make: Callable[[str], LLMClient],
    replies: list[Reply],
    server: FakeServer,
    store: Store,
) -> None:
    server.enqueue(*replies)
    session = Session(principal="did:local:alice")
    result = react.run(
        "Weather in Paris and Oslo?",
        llm=make(server.url),
        session=session,
        tools=["n15.weather"],
        tool_calling="native",
    )
    assert result.stopped == "goal_achieved"
    assert result.answer == "Paris is sunny, Oslo has snow."
    assert [(s.action, s.observation) for s in result.steps] == [
        ("n15.weather", "sunny in Paris"),
        ("n15.weather", "snow in Oslo"),
        ("finish", None),
    ]
    first, second = (r.body for r in server.requests)
    # the capability went as the provider's tool definition, its manifest schema inside
    tools = first["tools"]
    assert len(tools) == 1
    if name == "anthropic":
        assert tools[0]["name"] == "n15__weather"
        assert tools[0]["input_schema"]["required"] == ["city"]
        assert "fenced" not in str(first["system"])  # no JSON contract in native mode
    else:
        assert tools[0]["function"]["name"] == "n15__weather"
        assert tools[0]["function"]["parameters"]["required"] == ["city"]
    # results went back in the provider's format, in the order asked
    results = _tool_results(name, second["messages"])
    assert [content for _, content in results] == ["sunny in Paris", "snow in Oslo"]
    if name != "ollama":
        assert [cid for cid, _ in results] == ["toolu_a", "toolu_b"]
    else:  # Ollama's tool messages carry no id: each names the tool whose result it is
        named = [m.get("tool_name") for m in second["messages"] if m["role"] == "tool"]
        assert named == ["n15__weather", "n15__weather"]
    # each invocation is informed by the asking completion and carries the call id
    rows = store.query(LINKED)
    assert isinstance(rows, Solutions)
    found = [{k: to_python(v) for k, v in row.items()} for row in rows]
    assert [(r["city"], r["status"]) for r in found] == [
        ('{"city":"Oslo"}', "ok"),
        ('{"city":"Paris"}', "ok"),
    ]
    assert len({str(r["completion"]) for r in found}) == 1
    ids = [str(r["id"]) for r in found]
    if name == "ollama":  # minted by trails, since Ollama sends none
        assert all(i.startswith("call_") for i in ids) and len(set(ids)) == 2
    else:
        assert ids == ["toolu_b", "toolu_a"]
    # the two calls ran in parallel: the session lists them as they ended, the steps as asked
    invocations = sorted(str(r.activity) for r in session.invocations)
    assert sorted(str(s.activity_iri) for s in result.steps[:2]) == invocations
    # the answering turn is a second completion, with no tool call of its own
    assert result.steps[-1].activity_iri not in (None, str(found[0]["completion"]))


def test_a_store_cache_hit_brings_back_the_recorded_tool_calls(store: Store) -> None:
    from trails.kernel import Context
    from trails.llm import ToolCall

    asked = (ToolCall("t1", "n15.weather", {"city": "Paris"}),
             ToolCall("t2", "n15.weather", {"city": "Oslo"}))  # fmt: skip
    with Context.open("did:local:alice") as ctx:
        LLMClient.mock([list(asked)]).complete("weather?", tools=[n15_weather], ctx=ctx)
        cached = LLMClient.mock(["fresh"], store_cache=True)
        hit = cached.complete("weather?", tools=[n15_weather], ctx=ctx)
    assert hit.cache_hit and cached.requests == []
    assert hit.tool_calls == asked
