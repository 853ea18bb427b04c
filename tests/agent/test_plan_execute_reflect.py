"""Plan-Execute-Reflect: plan, execute the first step with ReAct, reflect, repeat."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import STRATEGIES, plan_execute_reflect
from trails.agent.planners.plan_execute_reflect import parse_reflection
from trails.errors import ReplyParseError
from trails.llm import LLMClient, Message
from trails.prov.vocab import T
from trails.store import Store
from trails.testing import assert_conforms


def planner(steps: list[str], result: str = "") -> str:
    return json.dumps({"steps": steps, "result": result})


def route(planner_replies: list[str], executor_replies: list[str]) -> Any:
    def answer(msgs: list[Message]) -> str:
        if "plan-execute-reflect" in msgs[0].content:
            return planner_replies.pop(0)
        return executor_replies.pop(0)

    return answer


def test_plan_execute_reflect_runs_steps_and_reflects(
    store: Store, notes: Any, reply: Any, prov: Any
) -> None:
    session = Session(principal="did:local:alice")
    client = LLMClient.mock(
        response=route(
            [
                planner(["Search notes tagged urgent", "Count them"]),
                planner(["Count the hits"]),
                planner([], "2 urgent notes"),
            ],
            [
                reply("notes.search", {"tag": "urgent"}),
                reply("finish", final_answer="hits n1, n2"),
                reply("finish", final_answer="2"),
            ],
        )
    )
    result = plan_execute_reflect.run("How many urgent notes?", llm=client, session=session)

    assert result.stopped == "goal_achieved" and result.answer == "2 urgent notes"
    assert result.strategy == "plan_execute_reflect"
    assert [(s.action, s.thought, s.observation) for s in result.steps] == [
        ("executor", "Search notes tagged urgent", "hits n1, n2"),
        ("executor", "Count the hits", "2"),
        ("finish", "reflect", None),
    ]
    assert len(session.metadata["plans"]) == 3
    # the second planner call reflected on the first step's result
    second = [
        r for r in client.adapter.requests if "plan-execute-reflect" in r.messages[0].content
    ][1]
    assert "1. Search notes tagged urgent\n   result: hits n1, n2" in second.messages[1].content
    # provenance: the run, its planner turns, executor passes informed by the turn that chose them
    run = prov.run(result.activity_iri)
    assert run["cls"] == T.PlanExecuteReflectPlan and run["stop"] == "goal_achieved"
    planner_turns = prov.completions(result.activity_iri)
    assert [c["step"] for c in planner_turns] == [0, 1, 2]
    first_pass = prov.run(result.steps[0].activity_iri)
    assert first_pass["cls"] == T.ReActPlan
    assert first_pass["parent"] == planner_turns[0]["completion"]
    assert [r["action"] for r in prov.trajectory(result.steps[0].activity_iri)] == ["notes.search"]
    assert len(prov.entities(result.activity_iri, T.PlanDocument)) == 3
    assert_conforms(store)


def test_max_steps_caps_executed_steps(store: Store, prov: Any) -> None:
    client = LLMClient.mock(
        response=lambda m: (
            planner(["again"]) if "plan-execute-reflect" in m[0].content else "finish"
        )
    )
    result = plan_execute_reflect.run(
        "Loop.", llm=client, session=Session(principal="did:local:alice"), max_steps=2
    )
    assert result.stopped == "max_steps"
    assert [s.action for s in result.steps] == ["executor", "executor"]
    assert prov.termination(result.activity_iri)["cls"] == T.StepLimit


def test_executor_error_and_malformed_planner(store: Store) -> None:
    client = LLMClient.mock(response=route([planner(["do it"])], ['{"junk": ', '{"junk": ']))
    result = plan_execute_reflect.run("Go.", llm=client, session=Session(principal="d:a"))
    assert result.stopped == "error" and "malformed reply" in (result.error or "")

    client = LLMClient.mock(response=route(["nope", "still nope"], []))
    result = plan_execute_reflect.run("Go.", llm=client, session=Session(principal="d:a"))
    assert result.stopped == "error" and "malformed plan" in (result.error or "")


def test_session_strategy_name() -> None:
    from trails.agent import PlanningStrategy

    assert STRATEGIES["plan_execute_reflect"] is plan_execute_reflect
    assert all(isinstance(module, PlanningStrategy) for module in STRATEGIES.values())
    assert Session.new(strategy="plan-execute-reflect", principal="d:a").strategy == (
        "plan_execute_reflect"
    )


def test_parse_reflection() -> None:
    assert parse_reflection('```json\n{"steps": ["a", {"b": 1}], "result": ""}\n```') == {
        "steps": ["a", '{"b": 1}'],
        "result": "",
    }
    assert parse_reflection('{"steps": [], "result": "done"}')["result"] == "done"
    for text, needle in [
        ("plain text", "no JSON object"),
        ('{"steps": [], "result": ""}', "neither"),
        ('{"steps": "a"}', "must be a list"),
    ]:
        with pytest.raises(ReplyParseError, match=needle):
            parse_reflection(text)
