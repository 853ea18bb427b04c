"""Plan-Execute-Reflect prompt templates: parameters, overrides, history, date and defaults."""

from __future__ import annotations

import inspect
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.governance.conftest import turn

from trails.agent import Session
from trails.agent.planners import plan_execute_reflect
from trails.agent.planners._templates import render_template
from trails.errors import UserError
from trails.llm import LLMClient, Message
from trails.store import Store


def route(planner: list[str], executor: list[str]) -> Any:
    def answer(msgs: list[Message]) -> str:
        if "plan-execute-reflect" in msgs[0].content or "PLANNER" in msgs[0].content:
            return planner.pop(0)
        return executor.pop(0)

    return answer


def plan(steps: list[str], result: str = "") -> str:
    return json.dumps({"steps": steps, "result": result})


def planner_requests(client: LLMClient) -> list[Any]:
    return [r for r in client.requests if "PLANNER" in r.messages[0].content]


def test_render_template_substitutes_and_names_what_is_missing() -> None:
    text = "Team ${parameters.team}; goal: ${parameters.user_prompt}."
    assert render_template(text, {"team": "finance", "user_prompt": "close Q3"}) == (
        "Team finance; goal: close Q3."
    )
    with pytest.raises(UserError, match="parameters nobody gave: team"):
        render_template(text, {"user_prompt": "x"})


def test_templates_prompts_and_datetime_are_rendered_with_parameters(store: Store) -> None:
    session = Session(principal="did:local:alice")
    client = LLMClient.mock(
        response=route(
            [plan(["Look up the ledger"]), plan([], "balanced")],
            [turn("finish", final_answer="ledger ok")],
        )
    )
    result = plan_execute_reflect.run(
        "Check the books.",
        llm=client,
        session=session,
        system_prompt="You are the PLANNER of the ${team} desk.",
        planner_prompt="Plan for the ${parameters.team} team.",
        planner_prompt_template="${parameters.planner_prompt} Objective: ${parameters.user_prompt}",
        reflect_prompt_template=(
            "Plan was:\n${parameters.steps}\nDone:\n${parameters.completed_steps}\n"
            "${parameters.reflect_prompt}"
        ),
        parameters={"team": "finance"},
        inject_datetime=True,
        datetime_format="%Y",
    )
    session.close()
    assert result.answer == "balanced"
    first, second = planner_requests(client)
    year = datetime.now(UTC).strftime("%Y")
    assert first.messages[0].content.endswith(f"Current date and time: {year}")
    # the system prompt is not a template: it is used as written
    assert first.messages[0].content.startswith("You are the PLANNER of the ${team} desk.")
    assert first.messages[1].content == "Plan for the finance team. Objective: Check the books."
    assert second.messages[1].content.startswith(
        "Plan was:\n- Look up the ledger\nDone:\n1. Look up the ledger\n   result: ledger ok\n"
        "Update your plan based on the latest step results."
    )


def test_earlier_conversation_uses_the_history_template(store: Store) -> None:
    session = Session(principal="did:local:alice")
    for i in range(3):
        session.history.append("user", f"earlier question {i}")
    client = LLMClient.mock(response=route([plan([], "done")], []))
    plan_execute_reflect.run(
        "Go on.",
        llm=client,
        session=session,
        system_prompt="PLANNER",
        message_history_limit=2,
    )
    session.close()
    (first,) = planner_requests(client)
    text = first.messages[1].content
    assert "Earlier conversation (most recent last):" in text
    assert "earlier question 0" not in text
    assert "user: earlier question 1\nuser: earlier question 2" in text


def test_seed_defaults_and_bad_settings(store: Store) -> None:
    params = inspect.signature(plan_execute_reflect.run).parameters
    assert params["max_steps"].default == 20
    assert params["executor_max_iterations"].default == 20
    assert params["message_history_limit"].default == 10
    assert params["executor_message_history_limit"].default == 10
    session = Session(principal="did:local:alice")
    client = LLMClient.mock(response="x")
    for kwargs in (
        {"planner_prompt_template": "${parameters.nope}"},
        {"message_history_limit": -1},
        {"executor_message_history_limit": True},
        {"inject_datetime": "yes"},
        {"planner_prompt": ""},
    ):
        with pytest.raises(UserError):
            plan_execute_reflect.run("Go.", llm=client, session=session, **kwargs)
    assert not session.opened  # refused before anything was recorded


def executor_requests(client: LLMClient) -> list[Any]:
    return [r for r in client.requests if "PLANNER" not in r.messages[0].content]


def test_each_executor_pass_sees_only_the_last_history_entries_before_it(store: Store) -> None:
    session = Session(principal="did:local:alice")
    for i in range(4):
        session.history.append("user", f"earlier question {i}")
    client = LLMClient.mock(
        response=route(
            [plan(["Step one"]), plan(["Step two"]), plan([], "done")],
            [
                turn("nothing.here"),  # an unknown tool: one observation, then finish
                turn("finish", final_answer="one done"),
                turn("finish", final_answer="two done"),
            ],
        )
    )
    result = plan_execute_reflect.run(
        "Go on.",
        llm=client,
        session=session,
        system_prompt="PLANNER",
        executor_message_history_limit=2,
    )
    session.close()
    assert result.answer == "done"
    first, second, third = executor_requests(client)
    user_texts = [[m.content for m in r.messages if m.role != "system"] for r in (first, second)]
    # the pass's own entries (its goal, reply, observation) are whole; before it, only 2:
    # the last earlier question and the run's objective (a run writes it to the history)
    assert user_texts[0] == ["earlier question 3", "Go on.", "Goal: Step one"]
    assert user_texts[1][:3] == ["earlier question 3", "Go on.", "Goal: Step one"]
    assert user_texts[1][-1].startswith("Observation: error:")
    # the second pass sees the last 2 entries before it: the first pass's last turn
    third_texts = [m.content for m in third.messages if m.role != "system"]
    assert "earlier question 3" not in third_texts
    assert third_texts[-1] == "Goal: Step two" and len(third_texts) == 3
    # the session's own history keeps everything (the limit shapes prompts, not memory)
    assert any(e.content == "earlier question 0" for e in session.history)


def test_an_executor_history_limit_of_0_shows_nothing_from_before_the_pass(store: Store) -> None:
    session = Session(principal="did:local:alice")
    for i in range(4):
        session.history.append("user", f"earlier question {i}")
    client = LLMClient.mock(
        response=route([plan(["Step"]), plan([], "done")], [turn("finish", final_answer="ok")])
    )
    plan_execute_reflect.run(
        "Go on.",
        llm=client,
        session=session,
        system_prompt="PLANNER",
        executor_message_history_limit=0,
    )
    session.close()
    (only,) = executor_requests(client)
    assert [m.content for m in only.messages if m.role != "system"] == ["Goal: Step"]
