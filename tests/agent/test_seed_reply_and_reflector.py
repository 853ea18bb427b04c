"""Two seed behaviours a run relies on: a plain-text answer, and a failing reflector.

selectools (seed 002), "Agent Loop": "No tool call detected → Return LLM response as
final answer". In trails' default JSON mode a reply that is plain text, with no JSON in
it, is that final answer (recorded as the run's answer), while broken JSON still earns
the nudge-retry of seed 000 ("a second malformed turn terminates with stopped='error'").

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


def test_a_plain_text_reply_is_the_final_answer(store: Store, applied: Any, prov: Any) -> None:
    llm = LLMClient.mock(response=["It is 4.", "never asked"])
    result = react.run(
        "What is 2+2?", llm=llm, session=Session(principal="did:local:alice"), tools=["search_web"]
    )
    assert (result.stopped, result.answer, result.error) == ("goal_achieved", "It is 4.", None)
    assert [(s.action, s.observation) for s in result.steps] == [("finish", None)]
    assert len(llm.requests) == 1  # no nudge: the text was the answer
    run = prov.run(result.activity_iri)
    assert (run["stop"], run["answer"]) == ("goal_achieved", "It is 4.")
    assert prov.termination(result.activity_iri) is None
    assert len(prov.completions(result.activity_iri)) == 1


def test_an_agent_node_takes_a_plain_text_answer_too(store: Store, prov: Any) -> None:
    result = behaviour_tree.run(
        "Go.",
        llm=LLMClient.mock(response=["The capital of France is Paris."]),
        session=Session(principal="did:local:alice"),
        tree=AgentNode("Name the capital of France."),
    )
    assert result.stopped == "goal_achieved"
    assert result.answer == "The capital of France is Paris."
    assert prov.run(result.activity_iri)["answer"] == "The capital of France is Paris."


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
