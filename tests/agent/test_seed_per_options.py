"""Seed 003's Plan-Execute-Reflect options, each read back from the recorded prompts.

The seed: the executor's system prompt is ``executor_system_prompt`` (default
EXECUTOR_RESPONSIBILITY); ``inject_datetime`` goes "into system prompts"; the
planner's system prompt ends with FINAL_RESULT_RESPONSE_INSTRUCTIONS; the
conversation is kept in memory (a second question sees the first); a run that
reaches max steps returns a "Max Steps Limit Reached" message with how to go on.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import plan_execute_reflect, react
from trails.agent.planners.plan_execute_reflect import (
    EXECUTOR_RESPONSIBILITY,
    FINAL_RESULT_INSTRUCTIONS,
    PLANNER_PROMPT,
)
from trails.errors import UserError
from trails.llm import LLMClient, Message
from trails.prov.vocab import NAMESPACES
from trails.store import Solutions, Store, to_python
from trails.testing import assert_conforms

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())

PROMPTS = (
    PREFIXES
    + """
SELECT ?value ?started WHERE {
  GRAPH ?g {
    ?a a trails:LLMCompletion ; prov:used ?p ; prov:startedAtTime ?started .
    ?p a trails:Prompt .
  }
  GRAPH ?cg { ?p prov:value ?value }
} ORDER BY ?started
"""
)


def recorded_systems(store: Store) -> list[str]:
    """The system prompt of every recorded completion, in the order asked."""
    result = store.query(PROMPTS)
    assert isinstance(result, Solutions)
    systems = []
    for row in result:
        messages = json.loads(str(to_python(row["value"])))["messages"]
        systems.append(next(m["content"] for m in messages if m["role"] == "system"))
    return systems


def planner(steps: list[str], result: str = "") -> str:
    return json.dumps({"steps": steps, "result": result})


def route(planner_replies: list[str], executor_replies: list[str]) -> Any:
    def answer(msgs: list[Message]) -> str:
        if "plan-execute-reflect" in msgs[0].content:
            return planner_replies.pop(0)
        return executor_replies.pop(0)

    return answer


def test_the_executor_runs_under_executor_responsibility_with_the_date(
    store: Store, reply: Any
) -> None:
    client = LLMClient.mock(
        response=route(
            [planner(["Check the weather"]), planner([], "sunny")],
            [reply("finish", final_answer="sunny")],
        )
    )
    plan_execute_reflect.run(
        "Weather?",
        llm=client,
        session=Session(principal="did:local:alice"),
        inject_datetime=True,
        datetime_format="%Y",
    )
    planner_system, executor_system, _ = recorded_systems(store)
    assert executor_system.startswith(EXECUTOR_RESPONSIBILITY)
    assert "Current date and time: 20" in executor_system
    assert "Current date and time: 20" in planner_system
    # trails still parses the executor's replies by the ReAct contract, after the role
    assert react.build_system_prompt("Check the weather", []).split("\n")[0] in executor_system
    assert_conforms(store)


def test_a_custom_executor_system_prompt(store: Store, reply: Any) -> None:
    client = LLMClient.mock(
        response=route(
            [planner(["Look it up"]), planner([], "done")],
            [reply("finish", final_answer="found")],
        )
    )
    plan_execute_reflect.run(
        "Go.",
        llm=client,
        session=Session(principal="did:local:alice"),
        executor_system_prompt="You are the payroll executor. Quote every figure.",
    )
    executor_system = recorded_systems(store)[1]
    assert executor_system.startswith("You are the payroll executor. Quote every figure.")
    assert EXECUTOR_RESPONSIBILITY not in executor_system
    with pytest.raises(UserError, match="executor_system_prompt"):
        plan_execute_reflect.run(
            "Go.", llm=client, session=Session(principal="d:a"), executor_system_prompt=" "
        )


def test_the_planner_is_told_how_to_write_the_final_result(store: Store) -> None:
    client = LLMClient.mock(response=planner([], "a full report"))
    plan_execute_reflect.run("Report.", llm=client, session=Session(principal="did:local:alice"))
    [system] = recorded_systems(store)
    assert system == PLANNER_PROMPT and system.endswith(FINAL_RESULT_INSTRUCTIONS)
    assert "include a comprehensive report" in system


def test_a_second_run_on_the_session_sees_the_first(store: Store) -> None:
    session = Session(principal="did:local:alice")
    client = LLMClient.mock(
        response=[planner([], "Q1 revenue was flat"), planner([], "Q2 grew 5% over Q1")]
    )
    plan_execute_reflect.run("Summarise Q1", llm=client, session=session)
    assert [(e.role, e.content) for e in session.history if e.role != "system"] == [
        ("user", "Summarise Q1"),
        ("assistant", "Q1 revenue was flat"),
    ]
    plan_execute_reflect.run("And Q2 compared to that?", llm=client, session=session)
    second_prompt = client.adapter.requests[1].messages[1].content
    assert "Earlier conversation" in second_prompt
    assert "assistant: Q1 revenue was flat" in second_prompt
    # and the recorded prompt of the second planner turn holds it too
    result = store.query(PROMPTS)
    assert isinstance(result, Solutions)
    last = json.loads(str(to_python(result.rows[-1][0])))["messages"][1]["content"]
    assert "Q1 revenue was flat" in last


def test_max_steps_returns_the_max_steps_message(store: Store, prov: Any) -> None:
    client = LLMClient.mock(
        response=lambda m: (
            planner(["again"])
            if "plan-execute-reflect" in m[0].content
            else '{"thought": "t", "action": "finish", "action_input": {}, "final_answer": "one more"}'
        )
    )
    session = Session(principal="did:local:alice")
    result = plan_execute_reflect.run("Loop.", llm=client, session=session, max_steps=2)
    assert result.stopped == "max_steps"
    assert result.answer is not None
    assert result.answer.startswith("Max Steps Limit (2) Reached.")
    assert "1. again\n   result: one more" in result.answer
    assert "run again on the same session" in result.answer
    assert prov.run(result.activity_iri)["answer"] == result.answer
    assert session.history[-1].content == result.answer
