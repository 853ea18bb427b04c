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
    session = Session(principal="did:local:alice")
    client = LLMClient.mock(response="x")
    for kwargs in (
        {"planner_prompt_template": "${parameters.nope}"},
        {"message_history_limit": -1},
        {"inject_datetime": "yes"},
        {"planner_prompt": ""},
    ):
        with pytest.raises(UserError):
            plan_execute_reflect.run("Go.", llm=client, session=session, **kwargs)
    assert not session.opened  # refused before anything was recorded
