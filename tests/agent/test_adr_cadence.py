"""ADR-0018 (seed 001): ``reflexion(..., critique_every=N)`` and ``plan_and_execute(..., replan_after=N)``.

The seed: "Plan-and-Execute (LLM plan up-front, kernel executes steps, LLM
replans on error or completion)", "Reflexion ... with critique-every-N cycles".
Each test reads the cadence back from the recorded graph.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import plan_and_execute, reflexion
from trails.errors import UserError
from trails.llm import LLMClient, Message
from trails.prov.vocab import T
from trails.store import Store
from trails.testing import assert_conforms


def verdict(value: str, critique: str = "") -> str:
    return "```json\n" + json.dumps({"verdict": value, "critique": critique}) + "\n```"


def test_critique_every_n_cycles_reviews_mid_pass(
    store: Store, notes: Any, reply: Any, prov: Any
) -> None:
    critic = [verdict("retry", "search the other tag too"), verdict("accept")]
    agent = [
        reply("notes.search", {"tag": "urgent"}),
        reply("notes.search", {"tag": "later"}),
        reply("notes.search", {"tag": "other"}),
        reply("finish", final_answer="n1, n2"),
    ]

    def route(msgs: list[Message]) -> str:
        system = next((m.content for m in msgs if m.role == "system"), "")
        return critic.pop(0) if "Reflexion critic" in system else agent.pop(0)

    session = Session(principal="did:local:alice")
    result = reflexion.run(
        "List urgent notes.",
        llm=LLMClient.mock(response=route),
        session=session,
        critique_every=2,
    )
    assert result.stopped == "goal_achieved" and result.answer == "n1, n2"
    assert critic == [] and agent == []
    passes = prov.child_runs(result.activity_iri)
    assert len(passes) == 2
    # the first pass was cut after 2 cycles for the critic, the second finished
    sizes = sorted(len(prov.trajectory(p)) for p in passes)
    assert sizes == [1, 2]
    critiques = prov.entities(result.activity_iri, T.Critique)
    assert sorted(c["value"]["verdict"] for c in critiques) == ["accept", "retry"]
    assert [c["verdict"] for c in session.metadata["critiques"]] == ["retry", "accept"]
    # the second pass continued the same conversation, critique included
    assert any("[reflexion critique #1]" in e.content for e in session.history)
    assert_conforms(store)


def test_without_critique_every_the_critic_waits_for_the_pass(
    store: Store, notes: Any, reply: Any, prov: Any
) -> None:
    agent = [
        reply("notes.search", {"tag": "urgent"}),
        reply("notes.search", {"tag": "later"}),
        reply("notes.search", {"tag": "other"}),
        reply("finish", final_answer="n1, n2"),
    ]

    def route(msgs: list[Message]) -> str:
        system = next((m.content for m in msgs if m.role == "system"), "")
        return verdict("accept") if "Reflexion critic" in system else agent.pop(0)

    result = reflexion.run(
        "List urgent notes.",
        llm=LLMClient.mock(response=route),
        session=Session(principal="did:local:alice"),
    )
    [only] = prov.child_runs(result.activity_iri)
    assert len(prov.trajectory(only)) == 3
    assert len(prov.entities(result.activity_iri, T.Critique)) == 1


def fenced(*steps: dict[str, Any]) -> str:
    return "```json\n" + json.dumps({"plan": list(steps)}) + "\n```"


def step(action: str, **action_input: Any) -> dict[str, Any]:
    return {"action": action, "action_input": action_input, "rationale": f"call {action}"}


def finish(answer: str) -> dict[str, Any]:
    return {"action": "finish", "action_input": {}, "final_answer": answer}


def test_replan_after_revises_the_plan_on_completion(store: Store, notes: Any, prov: Any) -> None:
    client = LLMClient.mock(
        response=[
            fenced(
                step("notes.search", tag="urgent"),
                step("notes.search", tag="later"),
                step("notes.tag", note="n1", label="x"),
                finish("written before seeing anything"),
            ),
            fenced(step("notes.tag", note="n2", label="urgent"), finish("tagged n2")),
        ]
    )
    session = Session(principal="did:local:alice")
    result = plan_and_execute.run(
        "Tag the urgent note.", llm=client, session=session, replan_after=2
    )
    assert result.stopped == "goal_achieved" and result.answer == "tagged n2"
    assert notes["tag"] == [("n2", "urgent")]  # the first plan's third step never ran
    review = client.adapter.requests[1].messages[-1].content
    assert review.startswith("2 step(s) of the plan are done")
    documents = prov.entities(result.activity_iri, T.PlanDocument)
    assert len(documents) == 2
    rows = prov.trajectory(result.activity_iri)
    assert [(r["action"], r["status"]) for r in rows] == [
        ("notes.search", "ok"),
        ("notes.search", "ok"),
        ("notes.tag", "ok"),
    ]
    assert len(session.metadata["plans"]) == 2
    assert_conforms(store)


def test_cadence_keywords_are_checked() -> None:
    session = Session(principal="did:local:alice")
    client = LLMClient.mock(response="finish")
    with pytest.raises(UserError, match="critique_every"):
        reflexion.run("g", llm=client, session=session, critique_every=0)
    with pytest.raises(UserError, match="replan_after"):
        plan_and_execute.run("g", llm=client, session=session, replan_after=True)
