"""Seed 002 (selectools' Agent module), rows 001 to 036: the agent loop, its configuration,
retries and timeouts, sessions and memory options, each graded as the seed's text describes it.

Where selectools' shape differs from trails' own (``Session`` and the planner's keywords for
one ``Agent`` object), the test asserts the trails way; the rows of the seed's own names
(``Agent``, ``AgentConfig``) are graded in ``test_seed_002_agent.py`` and
``test_seed_002_agent_b.py``. Rows 037 to 053 (the observer events) are in
``test_seed_002_a_events.py``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from tests.seed_rows._helpers import IRI, act, finish, rows
from tests.seed_rows._seed_002_a import (
    RETRIES,
    STOP,
    Seen,
    alice,
    observations,
    register_tools,
    statuses,
)

from trails.agent import Session
from trails.agent.planners import react
from trails.errors import UserError
from trails.kernel import ObserverBase, capability
from trails.kernel.observe import ObserverEvent
from trails.llm import (
    LLMClient,
    Message,
    ModelRateLimitError,
    ModelServerError,
    Response,
    RetryPolicy,
)
from trails.store import Store


@pytest.fixture
def tools() -> Iterator[list[str]]:
    """The seed's example tools, for this test only (the registry is restored after it)."""
    yield register_tools()


# -- Overview: the Agent object, name, shorthands, a message list -----------------------


def test_a_session_with_its_client_and_strategy_is_the_agent(
    store: Store, tools: list[str]
) -> None:
    llm = LLMClient.mock([act("search", query="python"), finish("found it")])
    session = alice(llm=llm, strategy="react", max_messages=20)
    result = session.run("Search for Python", tools=["search"], max_steps=6)
    assert (result.stopped, result.answer) == ("goal_achieved", "found it")
    assert [s.action for s in result.steps] == ["search", "finish"]
    (run,) = rows(store, STOP, session=IRI(session.iri))
    assert run["stop"] == "goal_achieved" and run["run"] == result.activity_iri


def test_an_agent_has_a_name_recorded_as_its_software_agent(store: Store) -> None:
    researcher = Session(principal="did:local:researcher", name="researcher")
    researcher.run("Find info about Python", llm=LLMClient.mock([finish("ok")]), tools=[])
    assert researcher.name == "researcher"
    found = rows(
        store,
        """SELECT ?session ?name ?principal WHERE { GRAPH ?session {
             ?session a trails:Session ; trails:agentName ?name ; prov:wasAssociatedWith ?agent .
             ?agent a prov:SoftwareAgent ; rdfs:label ?name ; prov:actedOnBehalfOf ?p .
             ?p trails:principalId ?principal } }""",
        session=IRI(researcher.iri),
    )
    assert [(r["name"], r["principal"]) for r in found] == [("researcher", "did:local:researcher")]


def test_session_run_and_arun_are_the_shorthands(store: Store) -> None:
    session = alice(llm=LLMClient.mock([finish("hi"), finish("again")]))
    assert session.run("hello", tools=[]).answer == "hi"
    assert asyncio.run(session.arun("x", tools=[])).answer == "again"
    assert not callable(session) and not hasattr(session, "ask") and not hasattr(session, "aask")


def test_earlier_turns_come_from_the_reused_session_not_a_message_list(store: Store) -> None:
    llm = LLMClient.mock([finish("Hello Alice"), finish("Alice")])
    session = alice(llm=llm)
    with pytest.raises(UserError):
        session.run([Message(role="user", content="My name is Alice")], tools=[])  # type: ignore[arg-type]
    session.run("My name is Alice", tools=[])
    session.run("What's my name?", tools=[])
    assert "My name is Alice" in observations(llm, 1)


# -- The loop --------------------------------------------------------------------------


@pytest.mark.seed_row("002-005")
def test_the_loop_calls_the_model_runs_the_tool_and_feeds_the_result_back(
    store: Store, tools: list[str]
) -> None:
    seen = Seen()
    llm = LLMClient.mock([finish("hi"), act("search", query="python"), finish("done")])
    session = alice(observers=[seen])
    session.run("My name is Alice", llm=llm, tools=["search"])
    result = react.run("Search for Python", llm=llm, session=session, tools=["search"])
    assert result.answer == "done"
    assert "My name is Alice" in observations(llm, 1)  # history loaded, new goal appended
    assert "results for python" in observations(llm, 2)  # the tool's result appended
    kinds = [k for k in seen.kinds() if k in {"llm_start", "llm_end", "tool_start", "tool_end"}]
    assert kinds[-6:] == ["llm_start", "llm_end", "tool_start", "tool_end", "llm_start", "llm_end"]
    assert [s["id"] for s in statuses(store, session)] == ["search"]


def test_a_reply_without_a_tool_call_is_the_final_answer(store: Store) -> None:
    """selectools' rule holds where the provider says whether a tool was called (native); in
    the guide's JSON contract prose is a malformed reply (seed 000 decides trails' planners)."""
    native = react.run(
        "Say hi",
        llm=LLMClient.mock(["Just a plain answer."]),
        session=alice(),
        tools=[],
        tool_calling="native",
    )
    assert (native.stopped, native.answer) == ("goal_achieved", "Just a plain answer.")
    json_mode = react.run(
        "Say hi", llm=LLMClient.mock(["Just a plain answer.", finish("hi")]), session=alice()
    )
    assert (json_mode.stopped, json_mode.answer) == ("goal_achieved", "hi")  # after the nudge
    answers = rows(
        store,
        """SELECT ?answer WHERE { GRAPH ?g { ?run a trails:PlanRun }
                                  GRAPH ?c { ?run trails:answer ?answer } }""",
    )
    assert sorted(r["answer"] for r in answers) == ["Just a plain answer.", "hi"]


def test_the_step_cap_ends_the_run_with_the_last_observation(
    store: Store, tools: list[str]
) -> None:
    session = alice()
    llm = LLMClient.mock([act("search", query="x")] * 3)
    result = react.run("Search forever", llm=llm, session=session, tools=["search"], max_steps=3)
    assert (result.stopped, result.answer) == ("max_steps", "results for x")
    (run,) = rows(store, STOP, session=IRI(session.iri))
    assert run["stop"] == "max_steps" and run["cls"].endswith("StepLimit")


def test_a_final_provider_failure_is_returned_as_stopped_error(store: Store) -> None:
    session = alice()
    llm = LLMClient.mock([ModelServerError("down", provider="mock", status=503)])
    result = react.run("Hello", llm=llm, session=session, tools=[])
    assert (result.stopped, result.error, result.answer) == ("error", "down", None)
    (run,) = rows(store, STOP, session=IRI(session.iri))
    assert run["stop"] == "error" and run["cls"].endswith("#Error")
    failed = rows(
        store,
        """SELECT ?session ?status ?error WHERE { GRAPH ?session {
             ?c a trails:LLMCompletion ; trails:status ?status .
             GRAPH ?eg { ?c trails:errorMessage ?error } } }""",
        session=IRI(session.iri),
    )
    assert [(f["status"], "down" in f["error"]) for f in failed] == [("error", True)]


# -- Tool calls: timeout, unknown tool, bad parameters, a tool that raises ---------------


@pytest.mark.seed_row("002-009")
def test_a_tool_over_its_timeout_is_an_error_the_model_sees(store: Store, tools: list[str]) -> None:
    session = alice()
    llm = LLMClient.mock([act("slow_tool"), finish("gave up")])
    result = react.run("Be slow", llm=llm, session=session, tools=["slow_tool"], tool_timeout_s=0.1)
    assert result.answer == "gave up"
    assert "timed out after 0.1 s" in observations(llm, 1)
    (call,) = statuses(store, session)
    assert call["status"] == "error" and "timed out" in call["error"]


@pytest.mark.seed_row("002-010")
def test_an_unknown_tool_is_reported_with_the_available_ones_and_the_loop_goes_on(
    store: Store, tools: list[str]
) -> None:
    llm = LLMClient.mock([act("nope"), act("calc", a=2, b=2), finish("4")])
    result = react.run("Add", llm=llm, session=alice(), tools=["search", "calc"])
    assert result.answer == "4"
    shown = observations(llm, 1)
    assert "unknown capability 'nope'" in shown and "calc" in shown and "search" in shown
    assert result.steps[0].observation.startswith("error: unknown capability 'nope'")


@pytest.mark.seed_row("002-011")
def test_bad_parameters_are_reported_and_the_loop_goes_on(store: Store, tools: list[str]) -> None:
    session = alice()
    llm = LLMClient.mock([act("calc", a="two", b=2), act("calc", a=2, b=2), finish("4")])
    result = react.run("Add", llm=llm, session=session, tools=["calc"])
    assert result.answer == "4"
    assert "invalid arguments for 'calc'" in observations(llm, 1)
    assert [c["status"] for c in statuses(store, session)] == ["invalid", "ok"]


@pytest.mark.seed_row("002-012")
def test_a_tool_that_raises_is_an_error_the_model_sees(store: Store, tools: list[str]) -> None:
    seen = Seen()
    session = alice(observers=[seen])
    llm = LLMClient.mock([act("divide", a=1, b=0), finish("cannot")])
    result = react.run("Divide", llm=llm, session=session, tools=["divide"])
    assert result.answer == "cannot"
    assert "Cannot divide by zero" in observations(llm, 1)
    (error,) = seen.of("tool_error")
    assert error.data["capability"] == "divide" and "Cannot divide by zero" in error.data["error"]
    (call,) = statuses(store, session)
    assert call["status"] == "error" and "Cannot divide by zero" in call["error"]


@pytest.mark.seed_row("002-013")
def test_the_system_prompt_lists_the_tools_and_native_mode_sends_their_schemas(
    store: Store, tools: list[str]
) -> None:
    text = LLMClient.mock([finish("ok")])
    react.run("Search", llm=text, session=alice(), tools=["search", "calc"])
    system = text.requests[0].messages[0].content
    assert "search" in system and "Search the web for information." in system and "calc" in system
    native = LLMClient.mock(["ok"])
    react.run("Add", llm=native, session=alice(), tools=["calc"], tool_calling="native")
    (tool,) = native.requests[0].tools
    assert tool.name == "calc" and sorted(tool.parameters["properties"]) == ["a", "b"]
    assert sorted(tool.parameters["required"]) == ["a", "b"]


# -- AgentConfig: model, temperature, reply cap, iterations ------------------------------

PROMPT_PARAMS = """SELECT ?session ?model ?prompt WHERE { GRAPH ?session {
                     ?c a trails:LLMCompletion ; prov:used ?p ; prov:wasAssociatedWith ?m .
                     ?p a trails:Prompt . ?m trails:modelId ?model }
                   GRAPH ?pg { ?p prov:value ?prompt } }"""


@pytest.mark.seed_row("002-014")
def test_the_model_is_set_on_the_client_and_recorded(store: Store) -> None:
    session = alice()
    react.run(
        "Hi", llm=LLMClient.mock([finish("ok")], model="gpt-4o-mini"), session=session, tools=[]
    )
    (found,) = rows(store, PROMPT_PARAMS, session=IRI(session.iri))
    assert found["model"] == "gpt-4o-mini"


@pytest.mark.seed_row("002-015")
def test_the_temperature_reaches_the_request_and_the_record(store: Store) -> None:
    session = alice()
    llm = LLMClient.mock([finish("ok")])
    react.run("Hi", llm=llm, session=session, tools=[], temperature=0.3)
    assert llm.requests[0].temperature == 0.3
    assert inspect.signature(react.run).parameters["temperature"].default == 0.0
    (found,) = rows(store, PROMPT_PARAMS, session=IRI(session.iri))
    assert json.loads(found["prompt"])["params"]["temperature"] == 0.3


def test_one_replys_cap_is_max_tokens_per_call(store: Store) -> None:
    session = alice()
    llm = LLMClient.mock([finish("ok"), finish("ok")])
    react.run("Hi", llm=llm, session=session, tools=[], max_tokens_per_call=77)
    react.run("Hi", llm=llm, session=session, tools=[])
    assert [r.max_tokens for r in llm.requests] == [77, 1024]
    params = [
        json.loads(r["prompt"])["params"]["max_tokens"]
        for r in rows(store, PROMPT_PARAMS, session=IRI(session.iri))
    ]
    assert sorted(params) == [77, 1024]
    with pytest.warns(UserWarning, match="max_tokens_per_call"):
        react.run(
            "Hi", llm=LLMClient.mock([finish("ok")]), session=alice(), tools=[], max_tokens=1000
        )


def test_the_iteration_cap_is_max_steps_default_ten() -> None:
    params = inspect.signature(react.run).parameters
    assert params["max_steps"].default == 10 and "max_iterations" not in params


# -- Retries and timeouts ------------------------------------------------------------------


def test_retries_back_off_exponentially(store: Store) -> None:
    sleeps: list[float] = []
    policy = RetryPolicy(max_retries=2, base_delay=1.0, jitter=0.0, sleep=sleeps.append)
    llm = LLMClient.mock(
        [ModelServerError("e", provider="mock", status=503)] * 2 + [finish("ok")], retry=policy
    )
    session = alice()
    assert react.run("Hi", llm=llm, session=session, tools=[]).answer == "ok"
    assert sleeps == [1.0, 2.0]  # selectools: backoff x attempt = [1.0, 2.0]; trails doubles
    assert [
        (r["retries"], r["status"]) for r in rows(store, RETRIES, session=IRI(session.iri))
    ] == [(2, "ok")]


def test_a_rate_limit_waits_what_the_provider_asks(store: Store) -> None:
    sleeps: list[float] = []
    policy = RetryPolicy(max_retries=2, base_delay=1.0, jitter=0.0, sleep=sleeps.append)
    limited = ModelRateLimitError("429 Too Many Requests", provider="mock", retry_after=3.0)
    llm = LLMClient.mock([limited, finish("ok")], retry=policy)
    assert react.run("Hi", llm=llm, session=alice(), tools=[]).answer == "ok"
    assert sleeps == [3.0]
    assert "rate_limit_cooldown_seconds" not in inspect.signature(RetryPolicy).parameters


def test_the_request_timeout_is_the_clients_timeout(store: Store) -> None:
    for make, default in (
        (LLMClient.anthropic, 60.0),
        (LLMClient.ollama, 120.0),
        (LLMClient.openai_compatible, 120.0),
    ):
        assert inspect.signature(make).parameters["timeout"].default == default
    from trails.llm import ModelTimeoutError

    session = alice()
    llm = LLMClient.mock([ModelTimeoutError("timed out after 30 s", provider="mock")])
    result = react.run("Hi", llm=llm, session=session, tools=[])
    assert result.stopped == "error" and "timed out" in (result.error or "")
    assert [r["status"] for r in rows(store, RETRIES, session=IRI(session.iri))] == ["error"]


def test_crossing_the_cost_warning_threshold_warns_once_and_the_runs_go_on(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    from trails.agent.cost_warning import CostWarning

    priced = LLMClient.mock([Response(text=finish("ok"), model="mock", usd=0.3)] * 3)
    session = alice(cost_warning_usd=0.5)
    with pytest.warns(CostWarning, match=r"\$0\.6000.*\$0\.5000") as caught:
        answers = [session.run(q, llm=priced, tools=[]).answer for q in ("a", "b", "c")]
    assert answers == ["ok"] * 3 and len(caught) == 1
    assert any("cost warning" in r.getMessage() for r in caplog.records if r.name == "trails.agent")
    spent = rows(
        store,
        "SELECT ?session ?usd WHERE { GRAPH ?session { ?c a trails:LLMCompletion ; trails:costUSD ?usd } }",
        session=IRI(session.iri),
    )
    assert [float(s["usd"]) for s in spent] == [0.3] * 3
    [warned] = rows(  # the crossing is evidence too: once, naming the completion that crossed
        store,
        "SELECT ?session ?w ?limit ?spent ?c WHERE { GRAPH ?session { ?w a trails:CostWarningIssued ;"
        " trails:costWarningUSD ?limit ; trails:spentUSD ?spent ; prov:wasInformedBy ?c ;"
        " trails:inSession ?session . ?c a trails:LLMCompletion ; trails:costUSD ?usd } }",
        session=IRI(session.iri),
    )
    assert (float(warned["limit"]), float(warned["spent"])) == (0.5, pytest.approx(0.6))
    for bad in (0, -1, True, "0.5"):
        with pytest.raises(UserError, match="cost_warning_usd"):
            alice(cost_warning_usd=bad)


# -- Observability: verbose, analytics, hooks ------------------------------------------------


def test_logging_observer_prints_tokens_costs_and_tool_calls(
    store: Store, tools: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    from trails.kernel import LoggingObserver

    llm = LLMClient.mock([act("calc", a=1, b=2), finish("3")])
    with caplog.at_level(logging.INFO, logger="trails.events"):
        react.run("Add", llm=llm, session=alice(observers=[LoggingObserver()]), tools=["calc"])
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "trails.events"]
    assert lines[0]["event"] == "run_start" and lines[-1]["event"] == "run_end"
    (tool,) = [line for line in lines if line["event"] == "tool_end"]
    assert tool["capability"] == "calc" and tool["duration_ms"] >= 0
    assert all(
        "input_tokens" in line and "usd" in line for line in lines if line["event"] == "llm_end"
    )
    assert "verbose" not in inspect.signature(react.run).parameters


def test_tool_usage_analytics_are_a_query_of_the_graph(store: Store, tools: list[str]) -> None:
    from trails.audit import get_query

    llm = LLMClient.mock(
        [act("calc", a=1, b=2), act("calc", a=2, b=2), act("search", query="x"), finish("ok")]
    )
    react.run("Use tools", llm=llm, session=alice(), tools=["calc", "search"])
    usage = rows(store, get_query("invocations-by-capability").text)
    assert [(u["capability"], u["invocations"]) for u in usage] == [("calc", 2), ("search", 1)]


def test_hooks_are_observer_methods(store: Store, tools: list[str]) -> None:
    called: list[tuple[str, Any]] = []

    class Hooks(ObserverBase):
        def on_tool_start(self, event: ObserverEvent) -> None:
            called.append(("tool_start", event.data["capability"]))

        def on_tool_end(self, event: ObserverEvent) -> None:
            raise RuntimeError("a broken hook never breaks the run")

    llm = LLMClient.mock([act("calc", a=1, b=2), finish("3")])
    result = react.run("Add", llm=llm, session=alice(observers=[Hooks()]), tools=["calc"])
    assert result.answer == "3" and called == [("tool_start", "calc")]
    assert "hooks" not in inspect.signature(Session).parameters


def test_routing_only_is_a_dry_run(store: Store, tools: list[str]) -> None:
    seen = Seen()
    session = alice(observers=[seen])
    llm = LLMClient.mock([act("divide", a=1, b=0), finish("routed to divide")])
    result = react.run("Divide", llm=llm, session=session, tools=["divide"], dry_run=True)
    assert result.answer == "routed to divide" and result.steps[0].action == "divide"
    assert [e.data["capability"] for e in seen.of("tool_dry_run")] == ["divide"]
    assert not seen.of("tool_error")  # nothing ran
    assert [c["status"] for c in statuses(store, session)] == ["dry_run"]


# -- Sessions and memory -----------------------------------------------------------------------


def test_a_session_is_saved_and_loaded_in_the_store(store: Store) -> None:
    session = alice(session_id="user-123")
    session.run("My name is Alice", llm=LLMClient.mock([finish("Hello Alice")]), tools=[])
    graph = session.persist()
    later = Session.replay(str(graph)).fork()
    llm = LLMClient.mock([finish("Alice")])
    later.run("What's my name?", llm=llm, tools=[])
    assert "My name is Alice" in observations(llm, 0)
    found = rows(
        store,
        """SELECT ?session ?count WHERE { GRAPH ?session { ?load a trails:SessionLoad ;
             trails:messageCount ?count } }""",
        session=IRI(later.iri),
    )
    assert [f["count"] for f in found] == [3]


def test_trimmed_messages_are_summarised_by_the_given_client(store: Store) -> None:
    cheap = LLMClient.mock("Alice introduced herself.", model="gpt-4o-mini")
    session = alice(max_messages=3, summarize_on_trim=cheap)
    llm = LLMClient.mock([finish("hi"), finish("ok"), finish("Alice")])
    for goal in ("My name is Alice", "I like tea", "What's my name?"):
        session.run(goal, llm=llm, tools=[])
    assert cheap.requests and cheap.requests[0].max_tokens == 512
    assert "Alice introduced herself." in observations(llm, 2)
    found = rows(
        store,
        """SELECT ?session ?text WHERE { GRAPH ?session { ?s a trails:HistorySummary }
                                         GRAPH ?c { ?s prov:value ?text } }""",
        session=IRI(session.iri),
    )
    assert found and found[-1]["text"] == "Alice introduced herself."


@pytest.mark.seed_row("002-028")
def test_entity_memory_injects_known_entities_on_the_next_turn(store: Store) -> None:
    from trails.agent.knowledge import EntityMemory

    extractor = LLMClient.mock(
        ['[{"name": "Alice", "type": "person", "attributes": "works at Acme Corp"}]', "[]"]
    )
    session = alice(entity_memory=EntityMemory(provider=extractor))
    talk = LLMClient.mock([finish("Noted."), finish("Alice, at Acme Corp.")])
    session.run("I'm working with Alice from Acme Corp", llm=talk, tools=[])
    session.run("Who is Alice?", llm=talk, tools=[])
    system = talk.requests[1].messages[0].content
    assert "[Known Entities]\n- Alice (person): works at Acme Corp" in system
    topics = rows(
        store,
        "SELECT ?topic WHERE { GRAPH ?g { ?m a trails:Memory } GRAPH ?c { ?m trails:topic ?topic } }",
    )
    assert [t["topic"] for t in topics] == ["entity"]


def test_knowledge_graph_memory_injects_known_relationships(store: Store) -> None:
    from trails.agent.knowledge import KnowledgeGraphMemory

    extractor = LLMClient.mock(
        ['[{"subject": "Alice", "relation": "manages", "object": "Project Alpha"}]', "[]"]
    )
    session = alice(knowledge_graph=KnowledgeGraphMemory(provider=extractor))
    talk = LLMClient.mock([finish("Noted."), finish("Project Alpha.")])
    session.run("Alice manages Project Alpha", llm=talk, tools=[])
    session.run("What does Alice manage?", llm=talk, tools=[])
    assert (
        "[Known Relationships]\n- (Alice, manages, Project Alpha)"
        in talk.requests[1].messages[0].content
    )
    topics = rows(
        store,
        "SELECT ?topic WHERE { GRAPH ?g { ?m a trails:Memory } GRAPH ?c { ?m trails:topic ?topic } }",
    )
    assert [t["topic"] for t in topics] == ["relationship"]


def test_knowledge_memory_shows_what_earlier_sessions_remembered(store: Store) -> None:
    from trails.agent.knowledge import KnowledgeMemory
    from trails.memory import register

    register()  # the memory.* capabilities: memory.learn is the `remember` tool
    saver = LLMClient.mock([act("memory.learn", content="Alice prefers tea"), finish("saved")])
    alice().run("Remember that I prefer tea", llm=saver, tools=["memory.learn"])
    recent, old = LLMClient.mock([finish("Tea.")]), LLMClient.mock([finish("Tea.")])
    later = alice(knowledge_memory=KnowledgeMemory())
    later.run("What do I drink?", llm=recent, tools=[])
    alice(knowledge_memory=KnowledgeMemory(recent_days=0)).run("And now?", llm=old, tools=[])
    assert recent.requests[0].messages[0].content.endswith("[Recent Memory]\n- Alice prefers tea")
    assert old.requests[0].messages[0].content.endswith("[Long-term Memory]\n- Alice prefers tea")
    listed = rows(
        store,
        """SELECT ?session ?id WHERE { GRAPH ?session { ?inv a trails:CapabilityInvocation ;
             trails:capability ?cap . ?cap trails:capabilityId ?id } }""",
        session=IRI(later.iri),
    )
    assert [r["id"] for r in listed] == ["memory.list"]
    with pytest.raises(UserError, match="recent_days"):
        KnowledgeMemory(recent_days=-1)
    with pytest.raises(UserError, match="knowledge_memory"):
        alice(knowledge_memory="./workspace")


# -- Retries, async -----------------------------------------------------------------------------


@pytest.mark.seed_row("002-031")
def test_a_rate_limit_is_detected_and_retried(store: Store) -> None:
    seen = Seen()
    session = alice(observers=[seen])
    policy = RetryPolicy(max_retries=2, base_delay=0.0, jitter=0.0, sleep=lambda _: None)
    limited = ModelRateLimitError("429 Too Many Requests", provider="mock")
    result = react.run(
        "Hi", llm=LLMClient.mock([limited, finish("ok")], retry=policy), session=session, tools=[]
    )
    assert result.answer == "ok"
    (retry,) = seen.of("llm_retry")
    assert retry.data["attempt"] == 1 and "ModelRateLimitError" in retry.data["error"]
    assert [r["retries"] for r in rows(store, RETRIES, session=IRI(session.iri))] == [1]


@pytest.mark.seed_row("002-033")
def test_arun_takes_the_same_keywords_and_records_the_same_run(
    store: Store, tools: list[str]
) -> None:
    assert inspect.signature(react.arun).parameters == inspect.signature(react.run).parameters
    session = alice()
    llm = LLMClient.mock([act("calc", a=1, b=2), finish("3")])
    result = asyncio.run(react.arun("Add", llm=llm, session=session, tools=["calc"], max_steps=4))
    assert (result.stopped, result.answer) == ("goal_achieved", "3")
    assert [(c["id"], c["status"]) for c in statuses(store, session)] == [("calc", "ok")]


@pytest.mark.seed_row("002-034")
def test_async_tools_are_awaited(store: Store, tools: list[str]) -> None:
    session = alice()
    llm = LLMClient.mock([act("fetch_data", url="https://api.example/x"), finish("got it")])
    for run in (react.run, lambda *a, **k: asyncio.run(react.arun(*a, **k))):
        result = run("Fetch", llm=llm, session=session, tools=["fetch_data"])
        assert result.steps[0].observation == "data from https://api.example/x"
        llm = LLMClient.mock([act("fetch_data", url="https://api.example/x"), finish("got it")])
    assert [c["status"] for c in statuses(store, session)] == ["ok", "ok"]


def test_a_nested_run_is_informed_by_its_parent_through_ctx(store: Store) -> None:
    from trails.kernel import Context

    session = alice()
    inner: list[str] = []

    @capability(id="delegate", description="Ask a helper agent.")
    def delegate(ctx: Context, topic: str) -> str:
        helper = react.run(
            topic, llm=LLMClient.mock([finish("helped")]), session=session, ctx=ctx, tools=[]
        )
        inner.append(str(helper.activity_iri))
        return str(helper.answer)

    outer = react.run(
        "Delegate",
        llm=LLMClient.mock([act("delegate", topic="sub task"), finish("done")]),
        session=session,
        tools=["delegate"],
    )
    assert outer.answer == "done"
    found = rows(
        store,
        """SELECT ?inner ?outer WHERE { GRAPH ?g { ?inner prov:wasInformedBy ?call .
             ?call a trails:CapabilityInvocation ; prov:wasInformedBy+ ?outer } }""",
        inner=IRI(inner[0]),
        outer=IRI(str(outer.activity_iri)),
    )
    assert len(found) == 1
    assert "parent_run_id" not in inspect.signature(react.run).parameters


@pytest.mark.seed_row("002-036")
def test_trace_metadata_is_kept_on_the_session(store: Store) -> None:
    metadata = {"user_id": "u123", "environment": "production"}
    session = alice(trace_metadata=metadata)
    session.run("classify this", llm=LLMClient.mock([finish("ok")]), tools=[])
    assert session.trace_metadata == metadata
    found = rows(
        store,
        """SELECT ?session ?value WHERE { GRAPH ?session { ?m a trails:TraceMetadata ; prov:wasGeneratedBy ?session }
                                          GRAPH ?c { ?m prov:value ?value } }""",
        session=IRI(session.iri),
    )
    assert [json.loads(f["value"]) for f in found] == [metadata]
