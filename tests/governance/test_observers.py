"""Observers: the lifecycle events of a scripted run, in order, correlated by run and call."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import react
from trails.errors import UserError
from trails.kernel import (
    EVENT_KINDS,
    Context,
    LoggingObserver,
    ObserverBase,
    ObserverEvent,
    RulePolicy,
    add_observer,
    capability,
    clear_observers,
    remove_observer,
)
from trails.llm import LLMClient, ModelServerError
from trails.llm.retry import RetryPolicy
from trails.prov import Recorder
from trails.store import Store


class Collect:
    """Keeps every event it is sent."""

    def __init__(self) -> None:
        self.events: list[ObserverEvent] = []

    def on_event(self, event: ObserverEvent) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]


class Broken:
    def on_event(self, event: ObserverEvent) -> None:
        raise RuntimeError("observer bug")


@pytest.fixture(autouse=True)
def _no_global_observers() -> Iterator[None]:
    yield
    clear_observers()


@pytest.fixture
def lookup() -> list[str]:
    """A capability that asks the model (``ctx.llm``) to summarise what it found."""
    seen: list[str] = []

    @capability(id="lookup")
    def run_lookup(ctx: Context, q: str) -> str:
        summary = ctx.llm.complete(f"summarise the notes on {q}", ctx=ctx).text
        seen.append(summary)
        return str(summary)

    return seen


def scripted(reply: Any) -> LLMClient:
    return LLMClient.mock(
        response=[
            ModelServerError("overloaded", provider="mock", status=503),  # retried once
            reply("lookup", {"q": "tax"}),
            "tax notes: two",  # the summary inside the first lookup
            reply("lookup", {"q": "tax"}),  # the second lookup's summary is a cache hit
            reply("finish", final_answer="two tax notes"),
        ],
        retry=RetryPolicy(max_retries=1, base_delay=0.0, sleep=lambda _s: None),
        response_cache=True,
    )


def test_the_events_of_a_scripted_run(store: Store, lookup: list[str], reply: Any) -> None:
    session_obs, run_obs, global_obs = Collect(), Collect(), Collect()
    add_observer(global_obs)
    session = Session(
        principal="did:local:alice",
        policy=RulePolicy(allow=["lookup"], name="reads"),
        observers=[session_obs, Broken()],  # a broken observer breaks nothing
    )
    result = react.run(
        "How many tax notes?", llm=scripted(reply), session=session, observers=[run_obs]
    )
    session.close()
    assert result.stopped == "goal_achieved" and result.answer == "two tax notes"
    assert lookup == ["tax notes: two", "tax notes: two"]

    expected = [
        "run_start",
        "llm_start", "llm_retry", "llm_end",  # turn 1: one retry
        "policy_decision", "tool_start",
        "llm_start", "llm_end",  # the summary inside the tool
        "tool_end", "step_end",
        "llm_start", "llm_end",  # turn 2
        "policy_decision", "tool_start",
        "llm_start", "cache_hit", "llm_end",  # the same summary, from the cache
        "tool_end", "step_end",
        "llm_start", "llm_end", "step_end",  # turn 3: finish
        "run_end",
    ]  # fmt: skip
    assert run_obs.kinds() == expected
    assert session_obs.kinds() == expected
    assert global_obs.kinds() == expected
    assert set(expected) <= set(EVENT_KINDS)

    events = run_obs.events
    # one run id, the plan-run activity; one session
    assert {e.run_id for e in events} == {result.activity_iri}
    assert {e.session for e in events} == {session.iri}
    # starts and ends pair up by call id; tool calls are the recorded invocations
    starts = [e for e in events if e.kind in ("llm_start", "tool_start")]
    ends = [e for e in events if e.kind in ("llm_end", "tool_end")]
    assert sorted(str(e.call_id) for e in starts) == sorted(str(e.call_id) for e in ends)
    tool_calls = [e.call_id for e in events if e.kind == "tool_start"]
    assert tool_calls == [str(inv.activity) for inv in session.invocations]
    decided = [e for e in events if e.kind == "policy_decision"]
    assert [e.call_id for e in decided] == tool_calls
    assert decided[0].data["decision"] == "allow" and decided[0].data["rule"] == "allow:lookup"
    retry = next(e for e in events if e.kind == "llm_retry")
    assert retry.data["attempt"] == 1 and "overloaded" in retry.data["error"]
    assert retry.call_id == events[1].call_id  # the same completion
    hit = next(e for e in events if e.kind == "cache_hit")
    assert hit.call_id == events[events.index(hit) - 1].call_id
    assert events[-1].data == {
        "stopped": "goal_achieved",
        "answer": "two tax notes",
        "error": None,
        "result": result,
    }


def test_tool_errors_budgets_and_removal(store: Store, reply: Any) -> None:
    @capability(id="boom")
    def boom() -> str:
        raise ValueError("no")

    obs = Collect()
    add_observer(obs)
    session = Session(principal="did:local:alice")
    client = LLMClient.mock(response=[reply("boom"), reply("finish", final_answer="x")])
    react.run("Try.", llm=client, session=session, max_cost_usd=1.0)
    error = next(e for e in obs.events if e.kind == "tool_error")
    assert error.data["capability"] == "boom" and error.data["status"] == "error"
    assert "ValueError: no" in error.data["error"]

    obs.events.clear()
    from trails.llm import Response

    costly = LLMClient.mock(
        response=[
            Response(text=reply("boom"), model="mock", usd=0.5, input_tokens=1, output_tokens=1)
        ]
        * 3
    )
    result = react.run("Try.", llm=costly, session=session, max_cost_usd=0.4)
    session.close()
    assert result.stopped == "max_cost"
    budget = next(e for e in obs.events if e.kind == "budget")
    assert budget.data["reason"] == "max_cost" and budget.data["limit"] == 0.4
    assert obs.kinds()[-2:] == ["budget", "run_end"]

    remove_observer(obs)
    obs.events.clear()
    LLMClient.mock(response="hi").complete("hi", ctx=Context.open(recorder=Recorder(store)))
    assert obs.events == []


def test_async_observers_and_calls_outside_a_run(store: Store) -> None:
    got: list[tuple[str, str | None]] = []

    class AsyncCollect:
        async def on_event(self, event: ObserverEvent) -> None:
            await asyncio.sleep(0)
            got.append((event.kind, event.run_id))

    add_observer(AsyncCollect())
    ctx = Context.open("did:local:alice", recorder=Recorder(store))
    LLMClient.mock(response="hi").complete("hi", ctx=ctx)  # no planner: run_id is None
    assert got == [("llm_start", None), ("llm_end", None)]

    async def inside_a_loop() -> None:
        LLMClient.mock(response="hi").complete("again", ctx=ctx)
        await asyncio.sleep(0.01)  # the scheduled observer tasks run

    got.clear()
    asyncio.run(inside_a_loop())
    assert got == [("llm_start", None), ("llm_end", None)]
    ctx.close()


def test_observer_base_dispatches_by_kind_and_logging_writes_json(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    class OnlyEnds(ObserverBase):
        def __init__(self) -> None:
            self.ends: list[str] = []

        def on_llm_end(self, event: ObserverEvent) -> None:
            self.ends.append(event.data["status"])

    only = OnlyEnds()
    session = Session(principal="did:local:alice", observers=[only, LoggingObserver()])
    with caplog.at_level(logging.INFO, logger="trails.events"):
        LLMClient.mock(response="hi").complete("hi", ctx=session.context)
    session.close()
    assert only.ends == ["ok"]
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "trails.events"]
    assert [line["event"] for line in lines] == ["llm_start", "llm_end"]
    assert lines[1]["status"] == "ok" and lines[1]["session"] == session.iri
    assert lines[0]["call_id"] == lines[1]["call_id"]


def test_bad_observers_are_refused() -> None:
    with pytest.raises(UserError, match="on_event"):
        Session(principal="did:local:alice", observers=[object()])
    with pytest.raises(UserError, match="on_event"):
        add_observer(print)
