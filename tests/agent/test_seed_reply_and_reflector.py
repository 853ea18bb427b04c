"""Two seed behaviours a run relies on: prose is no answer, and a failing reflector.

The trails guide (seed 000): "A malformed LLM reply (no JSON block, non-dict payload,
missing action) earns one retry with a format-contract nudge ...; a second malformed turn
terminates with stopped="error" and the parse error in PlanResult.error". Prose is such a
reply in the default JSON mode; selectools' "no tool call means the final answer" (seed
002) holds with ``tool_calling="native"`` only.

reactree (seed 004), ``ActionReflector``: the reflection before an action is one more
model call. Seed 000: "The only fatal path is an LLM-provider error ... those surface as
stopped="error" with the provider message": a reflector whose provider fails ends the
run that way, recorded as an error termination, on ``react`` and ``behaviour_tree``.
"""

from __future__ import annotations

from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import behaviour_tree, plan_and_execute, react
from trails.agent.planners.behaviour_tree import Action, AgentNode, Sequence
from trails.kernel import capability
from trails.llm import LLMClient, ModelServerError
from trails.prov.vocab import T
from trails.store import Store


@pytest.fixture
def applied() -> list[str]:
    calls: list[str] = []

    @capability(id="apply", description="Apply the change.", side_effects=True)
    def apply() -> str:
        calls.append("apply")
        return "applied"

    @capability(id="search_web", description="Search the web.")
    def search_web(query: str) -> str:
        return f"results for {query}"

    return calls


FINISH = '{"thought": "found it", "action": "finish", "final_answer": "real answer"}'


def test_prose_earns_the_nudge_and_the_json_turn_answers(
    store: Store, applied: Any, prov: Any
) -> None:
    """Seed 000 (R1): prose thought aloud before the JSON turn is no answer."""
    llm = LLMClient.mock(response=["I think I should search first.", FINISH])
    result = react.run(
        "Find the capital of France",
        llm=llm,
        session=Session(principal="did:local:alice"),
        tools=["search_web"],
    )
    assert (result.stopped, result.answer, result.error) == ("goal_achieved", "real answer", None)
    assert len(llm.requests) == 2  # the nudge
    assert "no JSON object found" in llm.requests[1].messages[-1].content
    run = prov.run(result.activity_iri)
    assert (run["stop"], run["answer"]) == ("goal_achieved", "real answer")
    assert len(prov.completions(result.activity_iri)) == 2


def test_two_prose_replies_stop_the_run_with_the_parse_error(
    store: Store, applied: Any, prov: Any
) -> None:
    llm = LLMClient.mock(response=["It is 4.", "Still 4.", "never asked"])
    result = react.run(
        "What is 2+2?", llm=llm, session=Session(principal="did:local:alice"), tools=["search_web"]
    )
    assert result.stopped == "error" and result.answer is None
    assert result.error == "malformed reply after a retry: no JSON object found in the reply"
    assert len(llm.requests) == 2
    run = prov.run(result.activity_iri)
    assert (run["stop"], run["error"]) == ("error", result.error)
    term = prov.termination(result.activity_iri)
    assert term is not None and term["cls"] == T.Error


def test_an_agent_node_nudges_prose_too(store: Store, prov: Any) -> None:
    result = behaviour_tree.run(
        "Go.",
        llm=LLMClient.mock(response=["The capital of France is Paris.", FINISH]),
        session=Session(principal="did:local:alice"),
        tree=AgentNode("Name the capital of France."),
    )
    assert result.stopped == "goal_achieved"
    assert result.answer == "real answer"
    assert prov.run(result.activity_iri)["answer"] == "real answer"


def test_broken_json_still_gets_the_nudge_and_then_the_error(store: Store, prov: Any) -> None:
    broken = '{"thought": "search", "action": "search_web", "action_input": {"query": '
    llm = LLMClient.mock(response=[broken, '```json\n{"action": \n```'])
    result = react.run("Find it.", llm=llm, session=Session(principal="did:local:alice"))
    assert result.stopped == "error" and result.answer is None
    assert (result.error or "").startswith("malformed reply after a retry")
    assert "no JSON object found" in llm.requests[1].messages[-1].content  # the nudge
    term = prov.termination(result.activity_iri)
    assert term is not None and term["cls"] == T.Error


def test_a_plan_must_still_be_json(store: Store) -> None:
    """Plan-and-Execute's plan is not an answer: plain text there stays malformed."""
    result = plan_and_execute.run(
        "Go.", llm=LLMClient.mock(response=["ok", "ok"]), session=Session(principal="d:a")
    )
    assert result.stopped == "error" and "malformed plan" in (result.error or "")


def _reflector_down() -> LLMClient:
    return LLMClient.mock(
        response=[ModelServerError("reflector down", provider="mock", status=503)]
    )


def test_a_failing_reflector_ends_a_react_run_with_error(
    store: Store, applied: list[str], prov: Any
) -> None:
    turn = '{"thought": "apply it", "action": "apply", "action_input": {}}'
    finish = '{"thought": "done", "action": "finish", "final_answer": "done"}'
    result = react.run(
        "Apply the change.",
        llm=LLMClient.mock(response=[turn, finish]),
        session=Session(principal="did:local:alice"),
        tools=["apply"],
        reflect_before_action=_reflector_down(),
    )
    assert result.stopped == "error" and result.error == "reflector down"
    assert applied == []  # the action the reflector was asked about never ran
    term = prov.termination(result.activity_iri)
    assert term is not None and term["cls"] == T.Error and term["reason"] == "reflector down"
    run = prov.run(result.activity_iri)
    assert (run["stop"], run["error"]) == ("error", "reflector down")


def test_a_failing_reflector_ends_a_behaviour_tree_run_with_error(
    store: Store, applied: list[str], prov: Any
) -> None:
    result = behaviour_tree.run(
        "Apply the change.",
        llm=LLMClient.mock(response=[]),
        session=Session(principal="did:local:alice"),
        tree=Sequence(Action("apply")),
        reflect_before_action=_reflector_down(),
    )
    assert result.stopped == "error" and result.error == "reflector down"
    assert applied == []
    term = prov.termination(result.activity_iri)
    assert term is not None and term["cls"] == T.Error and term["reason"] == "reflector down"
