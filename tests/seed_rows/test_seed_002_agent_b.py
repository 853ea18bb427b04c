"""Seed 002 with the seed's own names, part two: the ``Agent``'s observers and hooks, its
memory and sessions, its usage and its trace, each read back from the recorded graph.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.seed_rows._helpers import IRI, rows

from trails.agent import Agent, AgentConfig, ConversationMemory, Message, Role
from trails.agent.selectools import (
    AgentObserver,
    AgentTrace,
    AsyncAgentObserver,
    EntityMemory,
    KnowledgeGraphMemory,
    KnowledgeMemory,
    LocalProvider,
    StreamChunk,
)
from trails.errors import SessionTaken
from trails.kernel import capability
from trails.llm import Response, ToolCall
from trails.store import Store

CALL = [ToolCall("c1", "search", {"query": "Python"})]


@pytest.fixture
def search() -> Iterator[Any]:
    @capability(id="search", description="Search the web for information.")
    def search_tool(query: str) -> str:
        return f"results for {query}"

    yield search_tool


class Heard(AgentObserver):
    """Keeps each call it hears, with its arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("on_"):
            return lambda *args: self.calls.append((name, args))
        return super().__getattribute__(name)

    def of(self, name: str) -> list[tuple[Any, ...]]:
        return [args for n, args in self.calls if n == name]


# -- Observers, hooks, verbose, analytics -----------------------------------------------------


@pytest.mark.seed_row("002-050")
@pytest.mark.seed_row("002-053")
def test_observers_hear_usage_and_iterations_with_the_seeds_arguments(
    store: Store, search: Any
) -> None:
    heard = Heard()
    provider = LocalProvider(
        [[ToolCall("c1", "search", {"query": "Python"})], Response("done", "mock", 7, 3, usd=0.01)]
    )
    agent = Agent(tools=[search], provider=provider, config=AgentConfig(observers=[heard]))
    result = agent.run("Search for Python")
    starts, ends = heard.of("on_iteration_start"), heard.of("on_iteration_end")
    assert [(a[0], a[1]) for a in starts] == [(result.run_id, 1), (result.run_id, 2)]
    assert all(isinstance(a[2], list) and isinstance(a[2][0], Message) for a in starts)
    assert [a[1] for a in ends] == [1, 2] and ends[0][2] == "results for Python"
    usages = heard.of("on_usage")
    assert [u[1].total_tokens for u in usages][-1] == 10 and usages[-1][1].cost_usd == 0.01
    (tool_end,) = heard.of("on_tool_end")
    assert tool_end[:4] == (result.run_id, tool_end[1], "search", "results for Python")
    assert heard.of("on_run_end")[0][1] is result
    completions = rows(
        store,
        "SELECT ?session ?c ?in WHERE { GRAPH ?session { ?c a trails:LLMCompletion ; "
        "trails:inputTokens ?in } }",
        session=IRI(result.session),
    )
    assert 7 in {r["in"] for r in completions}  # what on_usage said is on record


@pytest.mark.seed_row("002-022")
@pytest.mark.seed_row("002-023")
def test_verbose_prints_and_analytics_count_tool_use(
    store: Store, search: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    provider = LocalProvider([CALL, "done", "done"], model="mock")
    provider.response_cache = None
    config = AgentConfig(verbose=True, enable_analytics=True, cache=True)
    agent = Agent(tools=[search], provider=provider, config=config)
    agent.run("Search")
    agent.reset()
    agent.run("Search")  # the same first request: answered from the cache
    out = capsys.readouterr().out
    assert "[agent] llm mock:" in out and "tokens, $" in out
    assert "[agent] tool search {'query': 'Python'}" in out
    assert "[agent] cache hit -- skipping provider call" in out
    analytics = agent.get_analytics()
    assert analytics is not None and analytics.summary().startswith("search: 2 calls, 2 ok")
    assert Agent(tools=[search], provider=provider).get_analytics() is None


@pytest.mark.seed_row("002-024")
def test_hooks_are_deprecated_and_still_called(store: Store, search: Any) -> None:
    called: list[tuple[str, Any]] = []

    def track_calls(tool_name: str, args: dict[str, Any]) -> None:
        called.append((tool_name, args))

    with pytest.warns(DeprecationWarning, match="hooks"):
        config = AgentConfig(hooks={"on_tool_start": track_calls, "on_agent_end": print})
        agent = Agent(tools=[search], provider=LocalProvider([CALL, "done"]), config=config)
    agent.run([Message(role=Role.USER, content="Search")])
    assert len(called) > 0
    assert called[0] == ("search", {"query": "Python"})


@pytest.mark.seed_row("002-060")
def test_async_observers_blocking_and_fire_and_forget(store: Store, search: Any) -> None:
    order: list[str] = []

    class DBObserver(AsyncAgentObserver):
        blocking = True

        async def a_on_tool_end(self, run_id, call_id, tool_name, result, duration_ms):  # type: ignore[no-untyped-def]
            await asyncio.sleep(0)
            order.append(f"db {tool_name} {result}")

    class WebhookObserver(AsyncAgentObserver):
        blocking = False

        async def a_on_run_end(self, run_id, result):  # type: ignore[no-untyped-def]
            order.append(f"webhook {result.content}")

    observers = [DBObserver(), WebhookObserver()]
    config = AgentConfig(observers=observers)
    agent = Agent(
        tools=[search], provider=LocalProvider([CALL, "done", CALL, "done"]), config=config
    )
    agent.run("Search")  # in sync run(), only sync observers fire
    assert order == []

    async def main() -> None:
        await agent.arun("Search")
        await asyncio.sleep(0.01)

    asyncio.run(main())
    assert order == ["db search results for Python", "webhook done"]


# -- Memory ---------------------------------------------------------------------------------


@pytest.mark.seed_row("002-062")
@pytest.mark.seed_row("002-078")
def test_conversation_memory_is_a_sliding_window_and_reset_forgets(
    store: Store, search: Any
) -> None:
    heard = Heard()
    provider = LocalProvider(lambda messages: "ok")
    memory = ConversationMemory(max_messages=4, max_tokens=4000)
    config = AgentConfig(observers=[heard])
    agent = Agent(tools=[search], provider=provider, config=config, memory=memory)
    response1 = agent.run([Message(role=Role.USER, content="My name is Alice")])
    agent.run([Message(role=Role.USER, content="What's my name?")])
    assert "My name is Alice" in "\n".join(m.content for m in provider.requests[1].messages)
    for turn in ("a", "b", "c"):
        agent.run(turn)
    kept = [m.content for m in memory.get_history() if m.role != "system"]
    assert len(kept) == 4 and "My name is Alice" not in kept
    trims = heard.of("on_memory_trim")
    assert trims and all(t[1] >= 1 and t[2] >= 1 for t in trims)
    evicted = rows(
        store,
        "SELECT ?session ?e WHERE { GRAPH ?session { ?e a trails:HistoryEviction } }",
        session=IRI(response1.session),
    )
    assert len(evicted) == len(trims)
    agent.reset()
    after = agent.run("Who am I?")
    assert after.session != response1.session and len(memory.get_history()) == 3
    with pytest.raises(Exception, match="max_messages"):
        ConversationMemory(max_messages=0)


@pytest.mark.seed_row("002-027")
@pytest.mark.seed_row("002-057")
def test_summarize_on_trim_asks_the_summarize_provider(store: Store, search: Any) -> None:
    heard = Heard()
    summarizer = LocalProvider(lambda messages: "Alice introduced herself.", model="cheap")
    provider = LocalProvider(lambda messages: "ok")
    agent = Agent(
        tools=[search],
        provider=provider,
        memory=ConversationMemory(max_messages=2),
        config=AgentConfig(
            summarize_on_trim=True,
            summarize_provider=summarizer,
            summarize_model="gpt-4o-mini",
            summarize_max_tokens=150,
            observers=[heard],
        ),
    )
    agent.run("My name is Alice")
    agent.run("I like tea")
    asked = summarizer.requests[0]
    assert asked.max_tokens == 150 and asked.model == "gpt-4o-mini"
    assert agent.memory is not None and agent.memory.summary == "Alice introduced herself."
    (summarized,) = heard.of("on_memory_summarize")[:1]
    assert summarized[1] == "Alice introduced herself." and summarized[2] >= 1
    assert "Alice introduced herself." in "\n".join(
        m.content for m in provider.requests[-1].messages
    )


@pytest.mark.seed_row("002-029")
@pytest.mark.seed_row("002-057")
def test_knowledge_graph_memory_with_the_seeds_arguments(store: Store, search: Any) -> None:
    heard = Heard()
    people = LocalProvider(['[{"name": "Alice", "type": "person"}]', "[]"])
    extractor = LocalProvider(
        ['[{"subject": "Alice", "relation": "manages", "object": "Project Alpha"}]', "[]"]
    )
    kg = KnowledgeGraphMemory(provider=extractor, storage="sqlite")
    provider = LocalProvider(["Noted.", "Alice."])
    agent = Agent(
        tools=[search],
        provider=provider,
        memory=ConversationMemory(),
        config=AgentConfig(
            knowledge_graph=kg, entity_memory=EntityMemory(provider=people), observers=[heard]
        ),
    )
    agent.run([Message(role=Role.USER, content="Alice manages Project Alpha")])
    agent.run("Who manages Project Alpha?")
    system = provider.requests[1].messages[0].content
    assert "[Known Relationships]\n- (Alice, manages, Project Alpha)" in system
    assert "[Known Entities]\n- Alice (person)" in system
    extracted = heard.of("on_entity_extraction")
    assert extracted[0][1] == ["Alice (person)"] and extracted[0][2] == 1
    learned = rows(
        store,
        "SELECT ?topic WHERE { GRAPH ?g { ?m a trails:Memory } GRAPH ?c { ?m trails:topic ?topic } }",
    )
    assert sorted(r["topic"] for r in learned) == ["entity", "relationship"]
    with pytest.raises(Exception, match="storage"):
        KnowledgeGraphMemory(provider=extractor, storage="redis")


@pytest.mark.seed_row("002-030")
def test_knowledge_memory_registers_remember_and_fills_the_workspace(
    store: Store, search: Any, tmp_path: Path
) -> None:
    knowledge = KnowledgeMemory(directory=str(tmp_path / "workspace"), recent_days=2)
    remember = [ToolCall("c1", "remember", {"content": "Alice prefers tea"})]
    provider = LocalProvider([remember, "saved", "Tea."])
    agent = Agent(tools=[search], provider=provider, config=AgentConfig(knowledge_memory=knowledge))
    saved = agent.run("Remember: I prefer tea")
    assert [t.name for t in provider.requests[0].tools] == ["search", "remember"]
    nested = rows(
        store,
        """SELECT ?session ?outer ?inner WHERE { GRAPH ?session {
             ?i a trails:CapabilityInvocation ; trails:capability/trails:capabilityId ?inner ;
                prov:wasInformedBy ?o . ?o trails:capability/trails:capabilityId ?outer } }""",
        session=IRI(saved.session),
    )
    assert [(r["outer"], r["inner"]) for r in nested] == [("remember", "memory.learn")]
    agent.run("What do I drink?")
    assert (
        provider.requests[-1].messages[0].content.endswith("[Recent Memory]\n- Alice prefers tea")
    )
    today = sorted((tmp_path / "workspace").glob("*-*-*.md"))
    assert today and today[-1].read_text() == "- Alice prefers tea\n"


# -- Sessions -------------------------------------------------------------------------------


@pytest.mark.seed_row("002-026", differs="docs/selectools.md#memory-and-sessions")
@pytest.mark.seed_row("002-058")
def test_a_session_store_continues_the_conversation_for_its_principal(
    store: Store, search: Any
) -> None:
    heard = Heard()

    def agent(principal: str, answers: list[str]) -> tuple[Agent, Any]:
        provider = LocalProvider(answers)
        config = AgentConfig(session_store=store, session_id="user-123", observers=[heard])
        return Agent(
            tools=[search], provider=provider, config=config, principal=principal
        ), provider

    first, _ = agent("did:local:alice", ["Hello Alice."])
    result = first.run([Message(role=Role.USER, content="My name is Alice")])
    assert first._session is not None
    first._session.close()  # the process ended: its session is ended and never reopens
    later, provider = agent("did:local:alice", ["Alice."])  # later, even after a restart
    again = later.run([Message(role=Role.USER, content="What's my name?")])
    assert "My name is Alice" in "\n".join(m.content for m in provider.requests[0].messages)
    assert [a[1] for a in heard.of("on_session_save")] == ["user-123", "user-123~2"]
    assert [a[1] for a in heard.of("on_session_load")] == ["user-123~2"]
    linked = rows(
        store,
        """SELECT ?session ?before WHERE { GRAPH ?session { ?session prov:wasInformedBy ?before }
             GRAPH ?before { ?before a trails:Session } }""",
        session=IRI(again.session),
    )
    assert [r["before"] for r in linked] == [result.session]
    bob, _ = agent("did:local:bob", ["no"])
    with pytest.raises(SessionTaken):
        bob.run("What's Alice's name?")


# -- Usage, trace, nesting ------------------------------------------------------------------


@pytest.mark.seed_row("002-104")
def test_usage_totals_summary_and_reset(store: Store, search: Any) -> None:
    priced = [Response("a", "mock", 100, 20, usd=0.002), Response("b", "mock", 50, 10, usd=0.001)]
    agent = Agent(tools=[search], provider=LocalProvider(priced))
    agent.run("one")
    agent.run("two")
    assert agent.total_tokens == 180 and agent.total_cost == pytest.approx(0.003)
    assert agent.get_usage_summary() == "2 calls, 180 tokens (150 prompt, 30 completion), $0.003000"
    booked = rows(
        store, "SELECT ?usd WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; trails:costUSD ?usd } }"
    )
    assert sum(r["usd"] for r in booked) == pytest.approx(agent.total_cost)
    agent.reset_usage()  # Clear token/cost counters
    assert (agent.total_tokens, agent.total_cost) == (0, 0.0)


@pytest.mark.seed_row("002-084")
@pytest.mark.seed_row("002-061")
@pytest.mark.seed_row("002-035")
def test_the_trace_is_read_from_the_graph(store: Store, search: Any, tmp_path: Path) -> None:
    config = AgentConfig(
        parent_run_id="outer-agent-run-id",
        trace_metadata={"user_id": "u123", "environment": "production"},
    )
    agent = Agent(tools=[search], provider=LocalProvider([CALL, "Classified."]), config=config)
    result = agent.run("classify this")
    trace = result.trace
    assert isinstance(trace, AgentTrace)
    assert [s.type for s in trace] == ["llm_call", "tool_selection", "tool_execution", "llm_call"]
    for step in result.trace:
        assert f"{step.type} | {step.duration_ms:.0f}ms | {step.summary}"
    result.trace.to_json(str(tmp_path / "trace.json"))
    saved = json.loads((tmp_path / "trace.json").read_text())
    assert saved == result.trace.to_dict() and len(saved["steps"]) == 4
    assert "tool_execution" in result.trace.timeline()
    llm_steps = result.trace.filter(type="llm_call")
    assert len(llm_steps) == 2 and sum(s.duration_ms for s in llm_steps) >= 0
    assert trace.total_duration_ms >= max(s.duration_ms for s in trace)
    recorded = rows(
        store,
        "SELECT ?session ?a WHERE { GRAPH ?session { ?a a trails:CapabilityInvocation } }",
        session=IRI(result.session),
    )
    assert [r["a"] for r in recorded] == [trace.filter(type="tool_execution")[0].activity]
    print(result.trace.parent_run_id)  # "outer-agent-run-id"
    assert result.trace.parent_run_id == "outer-agent-run-id"
    assert result.trace.metadata == {"user_id": "u123", "environment": "production"}
    spans = result.trace.to_otel_spans()
    assert spans[0]["name"] == "agent.run" and len(spans) == 5
    assert {s["traceId"] for s in spans} == {spans[0]["traceId"]}
    assert spans[0]["attributes"]["trails.parent_run_id"] == "outer-agent-run-id"
    assert all(s["parentSpanId"] == spans[0]["spanId"] for s in spans[1:])


@pytest.mark.seed_row("002-025")
def test_routing_only_returns_the_chosen_tool_and_runs_nothing(store: Store) -> None:
    ran: list[str] = []

    @capability(id="billing_support", description="Route to billing.")
    def billing(reason: str) -> str:
        ran.append(reason)
        return "routed"

    provider = LocalProvider([[ToolCall("c1", "billing_support", {"reason": "charges"})]])
    agent = Agent(tools=[billing], provider=provider, config=AgentConfig(routing_only=True))
    result = agent.run("Route this customer request")
    assert (result.tool_name, result.tool_args) == ("billing_support", {"reason": "charges"})
    assert result.content == "billing_support"
    assert ran == [] and len(provider.requests) == 1
    found = rows(
        store,
        "SELECT ?session ?status WHERE { GRAPH ?session { ?i a trails:CapabilityInvocation ; "
        "trails:status ?status } }",
        session=IRI(result.session),
    )
    assert [r["status"] for r in found] == ["dry_run"]


def test_astream_and_batch_give_agent_results(
    store: Store, search: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from trails import LoggingObserver

    caplog.set_level("INFO", logger="trails.events")
    heard = Heard()
    agent = Agent(
        tools=[search],
        provider=LocalProvider(lambda messages: "Python is a language."),
        config=AgentConfig(observers=[heard, LoggingObserver()]),
    )

    async def main() -> list[Any]:
        return [
            x async for x in agent.astream([Message(role=Role.USER, content="Search for Python")])
        ]

    items = asyncio.run(main())
    assert (
        isinstance(items[-1], type(agent.run("x"))) and items[-1].content == "Python is a language."
    )
    assert all(isinstance(i, StreamChunk) for i in items[:-1])
    results = agent.batch(["Cancel my sub", "How do I upgrade?"], max_concurrency=2)
    assert [r.content for r in results] == ["Python is a language."] * 2
    assert results[0].trace.filter(type="llm_call") and results[0].session != results[1].session
    (start,) = heard.of("on_batch_start")
    (end,) = heard.of("on_batch_end")
    assert start[1] == 2 and end[0] == start[0] and end[1:3] == (2, 0)
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "trails.events"]
    assert {"run_start", "llm_end", "run_end", "batch_end"} <= {line["event"] for line in lines}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(asyncio.run(agent.abatch(["a"]))) == 1
