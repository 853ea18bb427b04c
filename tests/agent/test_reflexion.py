"""Reflexion: the seed's worked example, critique rounds, exhaustion, errors and wall time."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.loop import run as run_loop
from trails.agent.planners import reflexion
from trails.llm import LLMClient, Message
from trails.prov.vocab import T
from trails.store import Store
from trails.testing import assert_conforms, assert_prov_readable


def verdict(value: str, critique: str = "") -> str:
    return "```json\n" + json.dumps({"verdict": value, "critique": critique}) + "\n```"


def router(
    agent: list[str] | Callable[[], str], critic: list[str]
) -> Callable[[list[Message]], str]:
    """A mock script that answers the agent and the critic from separate queues."""
    agent_replies = agent if isinstance(agent, list) else None

    def route(msgs: list[Message]) -> str:
        system = next((m.content for m in msgs if m.role == "system"), "")
        if "Reflexion critic" in system:
            return critic.pop(0)
        if agent_replies is None:
            assert callable(agent)
            return agent()
        return agent_replies.pop(0)

    return route


def test_worked_example_runs_as_documented(store: Store, prov: Any) -> None:
    # fmt: off
    from trails.agent import Session
    from trails.agent.planners import reflexion
    from trails.llm import LLMClient, Message  # noqa: F401

    inner = '```json\n{"thought":"done","action":"finish","action_input":{},"final_answer":"ok"}\n```'
    critic = '```json\n{"verdict":"accept","critique":""}\n```'
    def route(msgs: list[Message]) -> str:
        sys = next((m.content for m in msgs if m.role == "system"), "")
        return critic if "Reflexion critic" in sys else inner
    client = LLMClient.mock(response=route)
    result = reflexion.run("Answer the goal.", llm=client, session=Session(principal="did:local:alice"))
    # fmt: on

    assert result.stopped == "goal_achieved"
    assert result.answer == "ok"
    assert result.strategy == "reflexion"
    assert [s.action for s in result.steps] == ["finish"]
    assert client.adapter.calls == 2  # one agent turn, one critic turn
    run = prov.run(result.activity_iri)
    assert run["cls"] == T.ReflexionPlan and run["stop"] == "goal_achieved"
    [inner_run] = prov.child_runs(result.activity_iri)
    assert prov.run(inner_run)["cls"] == T.ReActPlan
    critiques = prov.entities(result.activity_iri, T.Critique)
    assert [c["value"] for c in critiques] == [{"verdict": "accept", "critique": ""}]
    assert_conforms(store)
    assert_prov_readable(store, activities={result.activity_iri, inner_run})


def test_retry_appends_the_critique_and_runs_again(
    store: Store, notes: Any, reply: Any, prov: Any
) -> None:
    session = Session(principal="did:local:alice")
    agent = [
        reply("finish", final_answer="some notes"),
        reply("notes.search", {"tag": "urgent"}),
        reply("finish", final_answer="n1 and n2"),
    ]
    critic = [verdict("retry", "name the notes"), verdict("accept")]
    client = LLMClient.mock(response=router(agent, critic))
    result = reflexion.run("Find urgent notes.", llm=client, session=session)

    assert result.stopped == "goal_achieved"
    assert result.answer == "n1 and n2"
    assert [s.action for s in result.steps] == ["notes.search", "finish"]  # the latest pass
    assert session.metadata["critiques"] == [
        {"verdict": "retry", "critique": "name the notes"},
        {"verdict": "accept", "critique": ""},
    ]
    contents = [e.content for e in session.history]
    assert "[reflexion critique #1] name the notes" in contents
    assert contents.count("Goal: Find urgent notes.") == 1
    # the critic's prompt never entered the agent's chat; each critic call starts fresh
    for request in client.adapter.requests:
        texts = [m.content for m in request.messages]
        if "Reflexion critic" in request.messages[0].content:
            assert len(request.messages) == 2 and request.messages[1].role == "user"
            assert "Goal: Find urgent notes." in texts[1]
        else:
            assert not any("Reflexion critic" in t for t in texts)
    second_pass = client.adapter.requests[2].messages
    assert second_pass[-1].content == "[reflexion critique #1] name the notes"
    # two inner ReAct runs, each informed by the Reflexion run; critic turns recorded
    inner_runs = prov.child_runs(result.activity_iri)
    assert len(inner_runs) == 2
    trajectory = [r for run in inner_runs for r in prov.trajectory(run)]
    assert [(r["action"], r["input"]) for r in trajectory] == [("notes.search", {"tag": "urgent"})]
    assert len(prov.entities(result.activity_iri, T.Critique)) == 2
    assert [c["step"] for c in prov.completions(result.activity_iri)] == [0, 1]
    assert_conforms(store)


def test_exhausted_iterations_return_the_latest_inner_result(
    store: Store, reply: Any, prov: Any
) -> None:
    answers = iter(["first", "second", "third"])
    client = LLMClient.mock(
        response=router(
            lambda: reply("finish", final_answer=next(answers)),
            [verdict("retry", "worse"), verdict("retry", "still worse")],
        )
    )
    result = reflexion.run(
        "Write a poem.",
        llm=client,
        session=Session(principal="did:local:alice"),
        max_outer_iterations=2,
    )
    assert result.stopped == "max_steps"
    assert result.answer == "second"
    assert result.error is None
    term = prov.termination(result.activity_iri)
    assert term == {"cls": T.StepLimit, "reason": "max_steps", "limit": 2.0, "observed": 2.0}
    assert_conforms(store)


def test_inner_errors_propagate_unchanged(store: Store, prov: Any) -> None:
    critic: list[str] = []
    client = LLMClient.mock(response=router(['{"garbage": ', '{"more": '], critic))
    result = reflexion.run("Go.", llm=client, session=Session(principal="did:local:alice"))
    assert result.stopped == "error"
    assert result.error is not None and "malformed reply" in result.error
    assert client.adapter.calls == 2  # the critic was never asked
    [inner_run] = prov.child_runs(result.activity_iri)
    assert prov.run(inner_run)["error"] == result.error
    assert prov.termination(result.activity_iri)["cls"] == T.Error
    assert prov.termination(inner_run)["cls"] == T.Error


def test_malformed_critic_reply_gets_one_nudge(store: Store, reply: Any) -> None:
    client = LLMClient.mock(
        response=router([reply("finish", final_answer="ok")], ["looks fine!", verdict("accept")])
    )
    result = reflexion.run("Go.", llm=client, session=Session(principal="did:local:alice"))
    assert result.stopped == "goal_achieved"
    nudged = client.adapter.requests[-1].messages
    assert [m.role for m in nudged] == ["system", "user", "assistant", "user"]
    assert "verdict" in nudged[-1].content

    client = LLMClient.mock(
        response=router(
            [reply("finish", final_answer="ok")], ["looks fine!", '{"verdict": "maybe"}']
        )
    )
    result = reflexion.run("Go.", llm=client, session=Session(principal="did:local:alice"))
    assert result.stopped == "error"
    assert result.error is not None and "'maybe'" in result.error
    assert result.answer == "ok"


class FakeClock:
    """A monotonic clock that only moves when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_remaining_wall_time_is_threaded_into_the_inner_run(
    store: Store, notes: Any, reply: Any, prov: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(run_loop, "monotonic", clock)

    def agent() -> str:
        clock.now += 1.0  # every agent turn takes a second
        return reply("notes.search", {"tag": "urgent"})

    client = LLMClient.mock(response=router(agent, []))
    result = reflexion.run(
        "Search forever.",
        llm=client,
        session=Session(principal="did:local:alice"),
        max_steps=10,
        max_wall_time_s=2.5,
    )
    # the inner run stops mid-iteration, after 3 turns (3 s >= 2.5 s), not at max_steps
    assert result.stopped == "max_wall_time"
    assert client.adapter.calls == 3
    assert len(result.steps) == 3
    assert result.answer == '{"hits": ["n1", "n2"]}'
    [inner_run] = prov.child_runs(result.activity_iri)
    assert prov.run(inner_run)["stop"] == "max_wall_time"
    outer = prov.termination(result.activity_iri)
    assert outer == {
        "cls": T.BudgetBreach,
        "reason": "max_wall_time",
        "limit": 2.5,
        "observed": 3.0,
    }
    assert prov.termination(inner_run)["cls"] == T.BudgetBreach
    assert_conforms(store)


def test_budget_is_checked_at_the_top_of_each_outer_iteration(
    store: Store, reply: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(run_loop, "monotonic", clock)

    def critic_then_tick() -> str:
        clock.now += 5.0  # the critic is slow
        return verdict("retry", "again")

    critic_queue: list[str] = []

    def route(msgs: list[Message]) -> str:
        if "Reflexion critic" in msgs[0].content:
            return critic_then_tick()
        return reply("finish", final_answer="draft")

    client = LLMClient.mock(response=route)
    result = reflexion.run(
        "Go.", llm=client, session=Session(principal="did:local:alice"), max_wall_time_s=4.0
    )
    assert result.stopped == "max_wall_time"
    assert result.answer == "draft"
    assert client.adapter.calls == 2  # one pass, one critic, then the check stopped it
    assert critic_queue == []
