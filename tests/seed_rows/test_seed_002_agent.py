"""Seed 002 (selectools' Agent module) with the seed's own names: ``trails.agent.Agent``.

Each test runs the seed's snippet with its imports changed from selectools to trails, over
a scripted provider (``LocalProvider`` / ``LLMClient.mock``), and reads the evidence of the
run back from the store. The observers, memory, sessions and trace of the same ``Agent`` are
in ``test_seed_002_agent_b.py``.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from tests.seed_rows._helpers import IRI, rows

from trails.agent import Agent, AgentConfig, ConversationMemory, Message, Role
from trails.agent.cost_warning import CostWarning
from trails.agent.selectools import (
    MAX_ITERATIONS_MESSAGE,
    AnthropicProvider,
    LocalProvider,
    OpenAIProvider,
    ProviderConfigurationError,
)
from trails.kernel import capability
from trails.llm import (
    LLMClient,
    ModelRateLimitError,
    ModelServerError,
    Response,
    RetryPolicy,
    ToolCall,
)
from trails.store import Store

CALL = [ToolCall("c1", "search", {"query": "Python"})]


@pytest.fixture
def search() -> Iterator[Any]:
    """The seed's example tools (the registry is restored after each test)."""

    @capability(id="search", description="Search the web for information.")
    def search_tool(query: str) -> str:
        return f"results for {query}"

    @capability(id="calculator", description="Add two integers.")
    def calculator_tool(a: int, b: int) -> int:
        return a + b

    yield search_tool


def sessions_named(store: Store, name: str) -> list[dict[str, Any]]:
    found = rows(
        store,
        """SELECT ?name ?session ?principal WHERE { GRAPH ?session {
             ?session a trails:Session ; trails:agentName ?name ; prov:wasAssociatedWith ?a .
             ?a a prov:SoftwareAgent ; prov:actedOnBehalfOf ?p . ?p trails:principalId ?principal
           } }""",
    )
    return [r for r in found if r["name"] == name]


# -- Overview ---------------------------------------------------------------------------------


@pytest.mark.seed_row("002-001")
def test_the_agent_holds_tools_provider_config_and_memory(store: Store, search: Any) -> None:
    provider = LocalProvider([CALL, "Python is a language.", "It was Python."])
    agent = Agent(
        tools=[search, "calculator"],
        provider=provider,
        config=AgentConfig(max_iterations=6),
        memory=ConversationMemory(max_messages=20),
    )
    response = agent.run([Message(role=Role.USER, content="Search for Python and calculate 2+2")])
    assert response.content == "Python is a language."
    assert response.tool_calls == [("search", {"query": "Python"})]
    assert [t.name for t in provider.requests[0].tools] == ["search", "calculator"]
    again = agent.run("What did you search?")
    assert "results for Python" in "\n".join(m.content for m in provider.requests[2].messages)
    assert again.session == response.session  # the memory keeps one conversation
    found = rows(
        store,
        """SELECT ?session ?run ?stop WHERE { GRAPH ?session {
             ?run a trails:ReActPlan ; trails:stopReason ?stop } }""",
        session=IRI(response.session),
    )
    assert {r["run"] for r in found} == {response.run_id, again.run_id}


@pytest.mark.seed_row("002-002")
def test_a_named_agent_is_its_recorded_software_agent(
    store: Store, search: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAILS_LLM", "mock")  # the seed gives no provider: the configured one
    researcher = Agent(tools=[search], config=AgentConfig(name="researcher"))
    assert researcher.name == "researcher" and Agent().name == "agent"
    result = researcher("Find info about Python")  # same as researcher.run(...)
    assert result.content.startswith("mock answer to: Find info about Python")
    (found,) = sessions_named(store, "researcher")
    assert found["session"] == result.session and found["principal"] == researcher.principal


@pytest.mark.seed_row("002-003")
def test_call_ask_and_aask_are_run(store: Store, search: Any) -> None:
    provider = LocalProvider(["one", "two", "three"])
    agent = Agent(tools=[search], provider=provider)
    assert agent("Hello").content == "one"
    assert agent.ask("Hello again").content == "two"
    assert asyncio.run(agent.aask("And again")).content == "three"
    asked = [r.messages[-1].content for r in provider.requests]
    assert [a.rsplit(": ", 1)[-1] for a in asked] == ["Hello", "Hello again", "And again"]


@pytest.mark.seed_row("002-004")
def test_run_takes_a_string_or_a_list_of_messages(store: Store, search: Any) -> None:
    provider = LocalProvider(["Hi Alice.", "Alice."])
    agent = Agent(tools=[search], provider=provider)
    agent.run("Hello")
    agent.run(
        [
            Message(role=Role.USER, content="My name is Alice"),
            Message(role=Role.ASSISTANT, content="Hi Alice."),
            Message(role=Role.USER, content="What's my name?"),
        ]
    )
    shown = [(m.role, m.content) for m in provider.requests[1].messages[1:]]
    assert shown[:2] == [("user", "My name is Alice"), ("assistant", "Hi Alice.")]
    assert shown[2][0] == "user" and shown[2][1].endswith("What's my name?")
    assert len(shown) == 3  # a new run: the first run's "Hello" is not there


# -- The loop's outcomes ----------------------------------------------------------------------


@pytest.mark.seed_row("002-006")
def test_no_tool_call_is_the_final_answer(store: Store, search: Any) -> None:
    provider = LocalProvider(["I think I should search the notes first."])
    result = Agent(tools=[search], provider=provider).run("Search the notes")
    assert result.content == "I think I should search the notes first."
    assert result.iterations == 1 and result.tool_calls == [] and len(provider.requests) == 1


@pytest.mark.seed_row("002-007")
@pytest.mark.seed_row("002-017")
def test_iterations_exhausted_return_the_timeout_message(store: Store, search: Any) -> None:
    assert AgentConfig().max_iterations == 6
    provider = LocalProvider(lambda messages: CALL)  # the model never stops calling
    result = Agent(tools=[search], provider=provider).run("Search forever")
    assert result.content == MAX_ITERATIONS_MESSAGE.format(n=6)
    assert len(provider.requests) == 6 and result.iterations == 6
    found = rows(
        store,
        "SELECT ?run ?stop WHERE { GRAPH ?g { ?run trails:stopReason ?stop } }",
        run=IRI(result.run_id),
    )
    assert [r["stop"] for r in found] == ["max_steps"]
    quick = Agent(
        tools=[search], provider=LocalProvider(lambda m: CALL), config=AgentConfig(max_iterations=3)
    )
    assert quick.run("Again").content == MAX_ITERATIONS_MESSAGE.format(n=3)


@pytest.mark.seed_row("002-008")
def test_an_exception_from_the_provider_reaches_the_caller(store: Store, search: Any) -> None:
    import socket

    from trails.llm import ModelConnectionError

    with socket.socket() as probe:  # a port nobody serves
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OpenAIProvider(base_url=f"http://127.0.0.1:{port}/v1")
    agent = Agent(tools=[search], provider=provider, config=AgentConfig(max_retries=0))
    with pytest.raises(ModelConnectionError):
        agent.run("Hello")
    found = rows(
        store,
        "SELECT ?stop WHERE { GRAPH ?g { ?run a trails:ReActPlan ; trails:stopReason ?stop } }",
    )
    assert [r["stop"] for r in found] == ["error"]  # raised, and still on record


@pytest.mark.seed_row("002-032")
def test_a_provider_failing_after_its_retries_is_a_provider_error_message(
    store: Store, search: Any
) -> None:
    slept: list[float] = []
    down = ModelServerError("503 overloaded", provider="mock", status=503)
    provider = LLMClient.mock([down, down, down], retry=RetryPolicy(sleep=slept.append))
    result = Agent(tools=[search], provider=provider).run("Hello")
    assert result.content.startswith("Provider error: ") and "overloaded" in result.content
    assert slept == [1.0, 2.0]  # max_retries=2, linear backoff
    assert [s.status for s in result.trace.filter(type="error")] == ["error"]


# -- Configuration ----------------------------------------------------------------------------


@pytest.mark.seed_row("002-016")
def test_max_tokens_caps_each_reply(store: Store, search: Any) -> None:
    assert AgentConfig().max_tokens == 1000
    provider = LocalProvider([CALL, "done"])
    Agent(tools=[search], provider=provider, config=AgentConfig(max_tokens=500)).run("Go")
    assert [r.max_tokens for r in provider.requests] == [500, 500]
    with pytest.raises(Exception, match="max_tokens"):
        AgentConfig(max_tokens=0)


@pytest.mark.seed_row("002-018")
def test_retries_back_off_linearly(store: Store, search: Any) -> None:
    slept: list[float] = []
    down = ModelServerError("502 bad gateway", provider="mock", status=502)
    provider = LLMClient.mock([down, down, down, "ok"], retry=RetryPolicy(sleep=slept.append))
    config = AgentConfig(max_retries=3, retry_backoff_seconds=2.0)
    assert Agent(tools=[search], provider=provider, config=config).run("Hi").content == "ok"
    assert slept == [2.0, 4.0, 6.0]  # retry_backoff * attempt
    found = rows(
        store, "SELECT ?r WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; trails:retries ?r } }"
    )
    assert [r["r"] for r in found] == [3]


@pytest.mark.seed_row("002-019")
def test_a_rate_limit_waits_the_cooldown_too(store: Store, search: Any) -> None:
    slept: list[float] = []
    limited = ModelRateLimitError("429 rate limit exceeded", provider="mock")
    provider = LLMClient.mock([limited, limited, "ok"], retry=RetryPolicy(sleep=slept.append))
    config = AgentConfig(retry_backoff_seconds=1.0, rate_limit_cooldown_seconds=5.0)
    assert Agent(tools=[search], provider=provider, config=config).run("Hi").content == "ok"
    assert slept == [6.0, 12.0]  # (cooldown + backoff) * attempt


@pytest.mark.seed_row("002-020")
def test_the_request_timeout_bounds_each_attempt(store: Store, search: Any) -> None:
    import http.server
    import threading
    import time

    class Slow(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            time.sleep(0.6)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        assert AgentConfig().request_timeout == 30.0
        provider = OpenAIProvider(default_model="gpt-4o-mini", base_url=url)
        config = AgentConfig(request_timeout=0.2, max_retries=0)
        started = time.monotonic()
        result = Agent(tools=[search], provider=provider, config=config).run("Hi")
        assert time.monotonic() - started < 0.55
        assert result.content.startswith("Provider error: ") and "within 0.2 s" in result.content
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.seed_row("002-021")
def test_cost_warning_threshold_warns_once(store: Store, search: Any) -> None:
    priced = [Response(text="ok", model="mock", usd=0.06)] * 3
    agent = Agent(
        tools=[search],
        provider=LocalProvider(priced),
        config=AgentConfig(cost_warning_threshold=0.10),
        memory=ConversationMemory(),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent.run("one")
        agent.run("two")
        agent.run("three")
    assert [type(w.message) for w in caught if issubclass(w.category, CostWarning)] == [CostWarning]
    assert agent.total_cost == pytest.approx(0.18)


@pytest.mark.seed_row("002-106")
def test_a_missing_api_key_fails_when_the_provider_is_made(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ProviderConfigurationError, match="OPENAI_API_KEY"):
        OpenAIProvider()  # OPENAI_API_KEY not set
    with pytest.raises(ProviderConfigurationError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider()
    with pytest.raises(ProviderConfigurationError, match="ANTHROPIC_API_KEY"):
        Agent(provider=LLMClient.anthropic())
    assert OpenAIProvider(api_key="sk-test").provider == "openai"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert OpenAIProvider().model == "gpt-4o-mini"


@pytest.mark.seed_row("002-083")
def test_the_standalone_structured_helpers(store: Store) -> None:
    from pydantic import BaseModel

    from trails.agent.selectools.structured import (
        build_schema_instruction,
        extract_json,
        parse_and_validate,
        schema_from_response_format,
        validation_retry_message,
    )

    class Sentiment(BaseModel):
        label: str
        score: float

    raw_text = 'Here is the analysis: ```json\n{"label": "positive", "score": 0.95}\n```'

    json_str = extract_json(raw_text)  # '{"label": "positive", "score": 0.95}'
    result = parse_and_validate(raw_text, Sentiment)  # Sentiment(label="positive", score=0.95)
    assert json_str == '{"label": "positive", "score": 0.95}'
    assert result == Sentiment(label="positive", score=0.95)
    assert extract_json('say {"a": [1, {"b": "}"}]} then') == '{"a": [1, {"b": "}"}]}'
    assert extract_json("no json here") is None
    schema = schema_from_response_format(Sentiment)
    assert schema["required"] == ["label", "score"]
    assert schema_from_response_format({"type": "object"}) == {"type": "object"}
    assert '"label"' in build_schema_instruction(schema)
    with pytest.raises(ValueError, match="score"):
        parse_and_validate('{"label": "x"}', Sentiment)
    assert "score: Field required" in validation_retry_message("score: Field required")


def test_the_seeds_imports_come_from_trails(store: Store) -> None:
    from trails import Agent as TopAgent
    from trails import AgentConfig as TopConfig
    from trails import AgentObserver, LoggingObserver  # noqa: F401

    assert TopAgent is Agent and TopConfig is AgentConfig


# -- Streaming, policy, caching, concurrency ---------------------------------------------------


def test_a_stream_handler_gets_the_text_as_it_comes(store: Store, search: Any) -> None:
    pieces: list[str] = []
    agent = Agent(tools=[search], provider=LocalProvider(["Python is a language."]))
    result = agent.run("What is Python?", stream_handler=pieces.append)
    assert "".join(pieces) == result.content == "Python is a language."
    streamed = Agent(provider=LocalProvider(["ok"]), config=AgentConfig(stream=True))
    assert streamed.run("Hi").content == "ok"


def test_the_tool_policy_and_confirm_action_decide_each_call(store: Store) -> None:
    from trails.agent.selectools import ToolPolicy

    sent: list[str] = []

    @capability(id="send_email", description="Send an email.", side_effects=True)
    def send_email(to: str) -> str:
        sent.append(to)
        return "sent"

    asked: list[tuple[str, dict[str, Any], str]] = []

    async def confirm(tool_name: str, tool_args: dict[str, Any], reason: str) -> bool:
        asked.append((tool_name, tool_args, reason))
        return tool_args["to"] == "bob@example.com"

    policy = ToolPolicy(allow=["search_*"], review=["send_*"], deny=["delete_*"])
    config = AgentConfig(tool_policy=policy, confirm_action=confirm, approval_timeout=60)
    script = [
        [ToolCall("c1", "send_email", {"to": "eve@external.com"})],
        [ToolCall("c2", "send_email", {"to": "bob@example.com"})],
        "done",
    ]
    result = Agent(tools=[send_email], provider=LocalProvider(script), config=config).run("Mail")
    assert result.content == "done" and sent == ["bob@example.com"]
    assert [a[0] for a in asked] == ["send_email", "send_email"]
    found = rows(
        store,
        "SELECT ?session ?decision WHERE { GRAPH ?session { ?d a trails:PolicyDecision ; "
        "trails:decision ?decision } }",
        session=IRI(result.session),
    )
    assert sorted(r["decision"] for r in found) == ["allow", "deny"]


def test_the_cache_answers_the_same_request_again(store: Store, search: Any) -> None:
    from trails.agent.selectools import InMemoryCache

    cache = InMemoryCache(max_size=500, default_ttl=600)
    provider = LocalProvider(["Python is a language.", "should not be asked"])
    agent = Agent(tools=[search], provider=provider, config=AgentConfig(cache=cache))
    response1 = agent.run([Message(role=Role.USER, content="What is Python?")])
    agent.reset()
    response2 = agent.run([Message(role=Role.USER, content="What is Python?")])
    assert response2.content == response1.content and len(provider.requests) == 1
    assert (cache.stats.hits, cache.stats.misses) == (1, 1)
    assert [s.type for s in response2.trace] == ["cache_hit"]


def test_concurrent_aruns_of_one_agent_keep_their_own_runs(store: Store, search: Any) -> None:
    from trails.agent.selectools import AgentObserver

    class Iterations(AgentObserver):
        def __init__(self) -> None:
            self.seen: list[tuple[str, int]] = []

        def on_iteration_start(self, run_id: str, iteration: int, messages: list[Any]) -> None:
            self.seen.append((run_id, iteration))

    heard = Iterations()
    provider = LocalProvider(lambda messages: f"answer to {messages[-1].content[-1]}")
    agent = Agent(tools=[search], provider=provider, config=AgentConfig(observers=[heard]))

    async def process_queries(queries: list[str]) -> list[Any]:
        tasks = [agent.arun([Message(role=Role.USER, content=q)]) for q in queries]
        return list(await asyncio.gather(*tasks))

    results = asyncio.run(process_queries(["q1", "q2", "q3"]))
    assert [r.content for r in results] == ["answer to 1", "answer to 2", "answer to 3"]
    assert len({r.session for r in results}) == 3
    assert sorted(heard.seen) == sorted((r.run_id, 1) for r in results)


def test_tool_timeouts_and_sequential_tools_reach_the_run(store: Store) -> None:
    import threading
    import time

    running: list[int] = []
    overlap: list[int] = []
    lock = threading.Lock()

    @capability(id="slow_tool", description="Takes its time.")
    def slow_tool(n: int) -> str:
        with lock:
            running.append(n)
            overlap.append(len(running))
        time.sleep(0.05 if n else 0.5)
        with lock:
            running.remove(n)
        return f"done {n}"

    both = [ToolCall("c1", "slow_tool", {"n": 1}), ToolCall("c2", "slow_tool", {"n": 2})]
    config = AgentConfig(parallel_tool_execution=False)
    Agent(tools=[slow_tool], provider=LocalProvider([both, "ok"]), config=config).run("Go")
    assert max(overlap) == 1  # one after the other
    late = [ToolCall("c3", "slow_tool", {"n": 0})]
    config = AgentConfig(tool_timeout_seconds=0.1)
    timed = Agent(tools=[slow_tool], provider=LocalProvider([late, "gave up"]), config=config)
    result = timed.run("Go")
    assert result.content == "gave up"
    assert [s.status for s in result.trace.filter(type="error")] == ["error"]
    assert "timed out" in str(result.plan.steps[0].observation) or "timeout" in str(
        result.plan.steps[0].observation
    )
