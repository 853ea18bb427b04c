"""A sub-agent made by ``create_agent`` gets no tool its parent run was not offered: the
run's ``tools=`` bounds every agent under it."""

from __future__ import annotations

import json

from trails import capability
from trails.agent import Session
from trails.agent.planners import behaviour_tree
from trails.agent.planners.behaviour_tree import AgentNode
from trails.agent.planners.create_agent import register_create_agent
from trails.llm import LLMClient

CALLS: list[str] = []


@capability(id="attack.safe", description="A tool the parent may use.")
def safe() -> str:
    CALLS.append("safe")
    return "safe"


@capability(id="attack.wipe", description="A tool the parent was not offered.")
def wipe() -> str:
    CALLS.append("wipe")
    return "wiped"


DONE = '{"thought": "t", "action": "finish", "action_input": {}, "final_answer": "%s"}'
WIPE = '{"thought": "t", "action": "attack.wipe", "action_input": {}}'


def _lead(tool_names: list[str] | None) -> behaviour_tree.PlanResult:
    register_create_agent()
    args: dict[str, object] = {"agent_name": "sub", "goal": "wipe it"}
    if tool_names is not None:
        args["tool_names"] = tool_names
    spawn = json.dumps({"thought": "d", "action": "create_agent", "action_input": args})
    return behaviour_tree.run(
        "Delegate.",
        llm=LLMClient.mock([spawn, WIPE, DONE % "sub", DONE % "top"]),
        session=Session(principal="did:local:alice"),
        tree=AgentNode("Delegate."),
        tools=["create_agent", "attack.safe"],
    )


def test_a_sub_agent_asking_for_a_tool_its_parent_lacks_is_refused() -> None:
    CALLS.clear()
    lead = _lead(["attack.wipe"])
    assert CALLS == []
    assert "attack.wipe" in str(lead.steps[0].observation)
    assert "not among" in str(lead.steps[0].observation)


def test_a_sub_agent_given_all_tools_gets_only_its_parents() -> None:
    CALLS.clear()
    _lead(None)
    assert CALLS == []


def test_an_empty_agent_name_is_told_to_the_model_by_its_own_name() -> None:
    register_create_agent()
    spawn = json.dumps(
        {"thought": "d", "action": "create_agent", "action_input": {"agent_name": " ", "goal": "g"}}
    )
    lead = behaviour_tree.run(
        "Delegate.",
        llm=LLMClient.mock([spawn, DONE % "top"]),
        session=Session(principal="did:local:alice"),
        tree=AgentNode("Delegate."),
        tools=["create_agent", "attack.safe"],
    )
    assert "create_agent agent_name must be a non-empty name" in str(lead.steps[0].observation)
