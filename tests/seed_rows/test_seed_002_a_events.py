"""Seed 002 (selectools' Agent module), rows 037 to 053: the ``AgentObserver`` events, each
graded from a watched run and, where the moment is recorded, read back from the store.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from tests.seed_rows._helpers import IRI, act, finish, rows
from tests.seed_rows._seed_002_a import (
    STOP,
    Seen,
    alice,
    register_tools,
)

from trails.agent.planners import react
from trails.kernel import capability
from trails.llm import (
    LLMClient,
    ModelServerError,
    Response,
    RetryPolicy,
)
from trails.store import Store


@pytest.fixture
def tools() -> Iterator[list[str]]:
    """The seed's example tools, for this test only (the registry is restored after it)."""
    yield register_tools()


# -- Observers --------------------------------------------------------------------------------------


def observed_run(store: Store, *, policy: Any = None) -> tuple[Seen, Any]:
    """A run that calls calc, then divide (which fails), then finishes, watched by ``Seen``."""
    seen = Seen()
    llm = LLMClient.mock([act("calc", a=1, b=2), act("divide", a=1, b=0), finish("done")])
    result = react.run(
        "Compute", llm=llm, session=alice(observers=[seen]), tools=["calc", "divide"], policy=policy
    )
    return seen, result


@pytest.mark.seed_row("002-037")
def test_every_event_carries_the_run_id_and_tool_events_pair_by_call_id(
    store: Store, tools: list[str]
) -> None:
    seen, result = observed_run(store)
    assert {e.run_id for e in seen.events} == {result.activity_iri}
    starts = [e.call_id for e in seen.of("tool_start")]
    ends = [e.call_id for e in seen.of("tool_end") + seen.of("tool_error")]
    assert len(set(starts)) == 2 and sorted(starts) == sorted(ends)
    assert set(starts) == {s.activity_iri for s in result.steps if s.action != "finish"}


@pytest.mark.seed_row("002-038")
def test_logging_observer_writes_one_json_object_per_event(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    from trails.kernel import LoggingObserver

    with caplog.at_level(logging.INFO, logger="trails.events"):
        result = react.run(
            "Hi",
            llm=LLMClient.mock([finish("ok")]),
            session=alice(observers=[LoggingObserver()]),
            tools=[],
        )
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "trails.events"]
    assert [line["event"] for line in lines] == [
        "run_start",
        "llm_start",
        "llm_end",
        "step_end",
        "run_end",
    ]
    assert {line["run_id"] for line in lines} == {result.activity_iri}


@pytest.mark.seed_row("002-039")
def test_several_observers_each_hear_every_event(store: Store) -> None:
    on_session, on_run, everywhere = Seen(), Seen(), Seen()
    from trails.kernel import add_observer, remove_observer

    add_observer(everywhere)
    try:
        react.run(
            "Hi",
            llm=LLMClient.mock([finish("ok")]),
            session=alice(observers=[on_session]),
            tools=[],
            observers=[on_run],
        )
    finally:
        remove_observer(everywhere)
    assert on_session.kinds() == on_run.kinds() == everywhere.kinds()
    assert len(on_run.events) == 5


@pytest.mark.parametrize(
    ("kind", "keys"),
    [
        pytest.param("run_start", {"goal", "strategy"}, marks=pytest.mark.seed_row("002-040")),
        pytest.param(
            "run_end",
            {"answer", "error", "result", "stopped"},
            marks=pytest.mark.seed_row("002-041"),
        ),
        pytest.param("llm_start", {"messages", "model"}, marks=pytest.mark.seed_row("002-042")),
        pytest.param(
            "llm_end",
            {"input_tokens", "output_tokens", "model", "status", "usd"},
            marks=pytest.mark.seed_row("002-043"),
        ),
        pytest.param("tool_start", {"args", "capability"}, marks=pytest.mark.seed_row("002-044")),
        pytest.param(
            "tool_end", {"capability", "duration_ms"}, marks=pytest.mark.seed_row("002-045")
        ),
        pytest.param(
            "tool_error",
            {"capability", "duration_ms", "error", "status"},
            marks=pytest.mark.seed_row("002-046"),
        ),
    ],
)
def test_each_lifecycle_event_fires_with_its_fields(
    store: Store, tools: list[str], kind: str, keys: set[str]
) -> None:
    seen, result = observed_run(store)
    events = seen.of(kind)
    assert events, kind
    for event in events:
        assert keys <= set(event.data), (kind, sorted(event.data))
    if kind == "run_end":
        assert events[0].data["result"] is result and events[0].data["answer"] == "done"
    if kind == "tool_end":
        assert events[0].data["capability"] == "calc" and events[0].data["duration_ms"] >= 0
    if kind == "tool_error":
        assert events[0].data["capability"] == "divide"


@pytest.mark.seed_row("002-047")
def test_policy_decisions_are_events_and_evidence(store: Store, tools: list[str]) -> None:
    from trails.kernel import RulePolicy

    seen, result = observed_run(store, policy=RulePolicy(allow=["calc"], deny=["divide"]))
    decisions = [(e.data["capability"], e.data["decision"]) for e in seen.of("policy_decision")]
    assert decisions == [("calc", "allow"), ("divide", "deny")]
    assert result.steps[1].observation.startswith("error: policy denied 'divide'")
    from trails.audit import get_query

    denials = rows(store, get_query("policy-denials").text)
    assert [(d["capability"], d["rule"]) for d in denials] == [("divide", "deny:divide")]


@pytest.mark.seed_row("002-048")
def test_an_unrecoverable_error_is_an_error_event_before_the_run_ends(store: Store) -> None:
    seen = Seen()
    session = alice(observers=[seen])
    llm = LLMClient.mock([ModelServerError("down", provider="mock", status=503)])
    result = react.run("Hello", llm=llm, session=session, tools=[])
    assert seen.kinds()[-2:] == ["error", "run_end"]
    (error,) = seen.of("error")
    assert error.run_id == result.activity_iri and error.data["error"] == "down"
    assert error.data["goal"] == "Hello" and error.data["strategy"] == "react"
    (run,) = rows(store, STOP, session=IRI(session.iri))
    assert run["stop"] == "error" and run["cls"].endswith("#Error")


@pytest.mark.seed_row("002-049")
def test_a_response_served_from_the_cache_is_a_cache_hit(store: Store) -> None:
    seen = Seen()
    llm = LLMClient.mock(finish("ok"), model="gpt-4o-mini", response_cache=True)
    for _ in range(2):
        react.run("What is 2+2?", llm=llm, session=alice(observers=[seen]), tools=[])
    (hit,) = seen.of("cache_hit")
    assert hit.data["model"] == "gpt-4o-mini"
    assert len(llm.requests) == 1  # the second answer did not reach the model
    hits = rows(
        store, "SELECT ?hit WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; trails:cacheHit ?hit } }"
    )
    assert sorted(h["hit"] for h in hits) == [False, True]


def test_per_call_usage_rides_on_llm_end_and_the_completion(store: Store) -> None:
    seen = Seen()
    session = alice(observers=[seen])
    priced = Response(text=finish("ok"), model="mock", input_tokens=12, output_tokens=5, usd=0.01)
    react.run("Hi", llm=LLMClient.mock([priced]), session=session, tools=[])
    (end,) = seen.of("llm_end")
    assert (end.data["input_tokens"], end.data["output_tokens"], end.data["usd"]) == (12, 5, 0.01)
    assert "usage" not in seen.kinds()
    (usage,) = rows(
        store,
        """SELECT ?session ?in ?out ?usd WHERE { GRAPH ?session { ?c a trails:LLMCompletion ;
             trails:inputTokens ?in ; trails:outputTokens ?out ; trails:costUSD ?usd } }""",
        session=IRI(session.iri),
    )
    assert (usage["in"], usage["out"], float(usage["usd"])) == (12, 5, 0.01)


@pytest.mark.seed_row("002-051")
def test_a_retry_tells_the_attempt_the_limit_the_error_and_the_wait(store: Store) -> None:
    seen = Seen()
    policy = RetryPolicy(max_retries=2, base_delay=0.5, jitter=0.0, sleep=lambda _: None)
    llm = LLMClient.mock(
        [ModelServerError("e", provider="mock", status=503), finish("ok")], retry=policy
    )
    react.run("Hi", llm=llm, session=alice(observers=[seen]), tools=[])
    (retry,) = seen.of("llm_retry")
    assert retry.data == {
        "attempt": 1,
        "max_retries": 2,
        "error": "ModelServerError: e",
        "delay_s": 0.5,
    }


@pytest.mark.seed_row("002-052")
def test_a_streaming_tool_emits_chunks(store: Store) -> None:
    seen = Seen()
    session = alice(observers=[seen])

    @capability(id="report.stream", description="Stream a report.")
    def stream_report(topic: str) -> Iterator[str]:
        yield from (f"{topic}: ", "revenue ", "was flat")

    llm = LLMClient.mock([act("report.stream", topic="Q1"), finish("done")])
    react.run("Report on Q1.", llm=llm, session=session, tools=["report.stream"])
    chunks = seen.of("tool_chunk")
    assert [c.data["chunk"] for c in chunks] == ["Q1: ", "revenue ", "was flat"]
    assert {c.call_id for c in chunks} == {e.call_id for e in seen.of("tool_end")}
    found = rows(
        store,
        """SELECT ?session ?output WHERE { GRAPH ?session { ?out a trails:CapabilityOutput }
                                           GRAPH ?c { ?out prov:value ?output } }""",
        session=IRI(session.iri),
    )
    assert [json.loads(f["output"]) for f in found] == ["Q1: revenue was flat"]


def test_an_iteration_is_an_llm_start_and_ends_with_step_end(
    store: Store, tools: list[str]
) -> None:
    seen = Seen()
    llm = LLMClient.mock([act("calc", a=1, b=2), finish("3")])
    react.run("Add", llm=llm, session=alice(observers=[seen]), tools=["calc"])
    assert [e.data["index"] for e in seen.of("step_end")] == [0, 1]
    turns = [k for k in seen.kinds() if k in {"llm_start", "step_end"}]
    assert turns == ["llm_start", "step_end", "llm_start", "step_end"]
    assert not {"iteration_start", "iteration_end"} & set(seen.kinds())
