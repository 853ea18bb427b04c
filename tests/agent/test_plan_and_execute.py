"""Plan-and-Execute: the seed's worked example, replanning, limits, and recorded plans."""

from __future__ import annotations

import json
from typing import Any

from trails.agent import Session
from trails.agent.planners import plan_and_execute
from trails.llm import LLMClient, ModelTimeoutError, Response
from trails.prov.vocab import T
from trails.store import Store
from trails.testing import assert_conforms, assert_prov_readable


def fenced(*steps: dict[str, Any]) -> str:
    return "Here is the plan:\n```json\n" + json.dumps({"plan": list(steps)}) + "\n```"


def step(action: str, **action_input: Any) -> dict[str, Any]:
    return {"action": action, "action_input": action_input, "rationale": f"call {action}"}


def finish(answer: str) -> dict[str, Any]:
    return {"action": "finish", "action_input": {}, "final_answer": answer}


def test_worked_example_runs_as_documented(store: Store, prov: Any) -> None:
    # fmt: off
    import json

    from trails import capability
    from trails.agent import Session
    from trails.agent.planners import plan_and_execute
    from trails.llm import LLMClient

    @capability(id="notes.search", description="Search notes by tag.")
    def search(ctx, tag: str) -> dict:  # type: ignore[no-untyped-def]
        return {"hits": ["n1", "n2"]}

    plan = {"plan": [
        {"action": "notes.search", "action_input": {"tag": "urgent"}, "rationale": "list"},
        {"action": "finish", "action_input": {}, "final_answer": "2 urgent notes."},
    ]}
    fenced = "```json\n" + json.dumps(plan) + "\n```"
    client = LLMClient.mock(response=lambda _m: fenced)
    result = plan_and_execute.run("Find urgent notes.", llm=client, session=Session(principal="did:local:alice"))
    # fmt: on

    assert result.stopped == "goal_achieved"
    assert result.answer == "2 urgent notes."
    assert result.strategy == "plan_and_execute"
    assert [(s.thought, s.action, s.observation) for s in result.steps] == [
        ("list", "notes.search", {"hits": ["n1", "n2"]}),
        ("", "finish", None),
    ]
    assert client.adapter.calls == 1  # one reasoning turn covered the whole plan
    run = prov.run(result.activity_iri)
    assert run["cls"] == T.PlanAndExecutePlan and run["stop"] == "goal_achieved"
    rows = prov.trajectory(result.activity_iri)
    assert [(r["step"], r["action"], r["input"], r["output"]) for r in rows] == [
        (1, "notes.search", {"tag": "urgent"}, {"hits": ["n1", "n2"]})
    ]
    documents = prov.entities(result.activity_iri, T.PlanDocument)
    assert len(documents) == 1
    assert documents[0]["value"]["plan"][0]["action"] == "notes.search"
    assert documents[0]["by"] == prov.completions(result.activity_iri)[0]["completion"]
    assert_conforms(store)
    assert_prov_readable(store, entities={documents[0]["entity"]})


def test_plans_are_kept_on_the_session(store: Store, notes: Any) -> None:
    session = Session(principal="did:local:alice")
    client = LLMClient.mock(response=fenced(step("notes.search", tag="urgent"), finish("two")))
    plan_and_execute.run("Find urgent notes.", llm=client, session=session)
    plans = session.metadata["plans"]
    assert len(plans) == 1
    assert [s["action"] for s in plans[0]] == ["notes.search", "finish"]
    assert plans[0][1]["final_answer"] == "two"
    roles = [e.role for e in session.history]
    assert roles == ["system", "user", "assistant", "user"]
    assert session.history[-1].content.startswith("Observation of step 1 (notes.search):")


def test_dispatch_error_triggers_a_replan(store: Store, notes: Any, prov: Any) -> None:
    session = Session(principal="did:local:alice")
    client = LLMClient.mock(
        response=[
            fenced(step("notes.search", label="urgent"), finish("never")),  # invalid argument
            fenced(step("notes.search", tag="urgent"), finish("2 urgent notes.")),
        ]
    )
    result = plan_and_execute.run("Find urgent notes.", llm=client, session=session)
    assert result.stopped == "goal_achieved" and result.answer == "2 urgent notes."
    assert [s.action for s in result.steps] == ["notes.search", "notes.search", "finish"]
    assert result.steps[0].observation.startswith("error: invalid arguments for 'notes.search'")
    assert len(session.metadata["plans"]) == 2
    # the replan request showed the model what failed
    replan = client.adapter.requests[1].messages
    assert "Step 1 (notes.search) failed: error: invalid arguments" in replan[-1].content
    # order across plans: plan 0, step 1 (invalid), plan 2, step 3
    rows = prov.trajectory(result.activity_iri)
    assert [(r["step"], r["input"], r["status"]) for r in rows] == [
        (1, {"label": "urgent"}, "invalid"),
        (3, {"tag": "urgent"}, "ok"),
    ]
    assert [c["step"] for c in prov.completions(result.activity_iri)] == [0, 2]
    assert len(prov.entities(result.activity_iri, T.PlanDocument)) == 2
    assert_conforms(store)


def test_replan_limit_stops_with_error(store: Store, notes: Any, prov: Any) -> None:
    client = LLMClient.mock(response=lambda _m: fenced(step("notes.missing"), finish("never")))
    result = plan_and_execute.run(
        "Find urgent notes.",
        llm=client,
        session=Session(principal="did:local:alice"),
        max_replans=1,
    )
    assert result.stopped == "error"
    assert result.error is not None and "replan limit (1)" in result.error
    assert client.adapter.calls == 2  # the plan and one replan
    assert result.answer is not None and "unknown capability" in result.answer
    term = prov.termination(result.activity_iri)
    assert term is not None and term["cls"] == T.Error
    assert_conforms(store)


def test_max_steps_caps_executed_actions_across_replans(
    store: Store, notes: Any, prov: Any
) -> None:
    client = LLMClient.mock(
        response=[
            fenced(step("notes.search", tag="urgent"), step("notes.tag", nope=1), finish("x")),
            fenced(step("notes.search", tag="later"), step("notes.search", tag="x"), finish("y")),
        ]
    )
    result = plan_and_execute.run(
        "Find urgent notes.", llm=client, session=Session(principal="did:local:alice"), max_steps=3
    )
    assert result.stopped == "max_steps"
    assert [s.action_input for s in result.steps] == [
        {"tag": "urgent"},
        {"nope": 1},
        {"tag": "later"},
    ]
    assert result.answer == '{"hits": []}'
    term = prov.termination(result.activity_iri)
    assert term == {"cls": T.StepLimit, "reason": "max_steps", "limit": 3.0, "observed": 3.0}


def test_malformed_plan_gets_one_nudge_then_errors(store: Store, notes: Any, prov: Any) -> None:
    good = fenced(step("notes.search", tag="urgent"), finish("ok"))
    client = LLMClient.mock(response=["no plan, sorry", good])
    result = plan_and_execute.run("Go.", llm=client, session=Session(principal="did:local:alice"))
    assert result.stopped == "goal_achieved"
    assert "no JSON plan found" in client.adapter.requests[1].messages[-1].content

    unfinished = fenced(step("notes.search", tag="urgent"))
    client = LLMClient.mock(response=["no plan", unfinished])
    result = plan_and_execute.run("Go.", llm=client, session=Session(principal="did:local:alice"))
    assert result.stopped == "error"
    assert result.error is not None and "must end with" in result.error
    assert prov.termination(result.activity_iri)["cls"] == T.Error


def test_budget_is_checked_at_the_top_of_every_planned_step(
    store: Store, notes: Any, prov: Any
) -> None:
    plan = fenced(step("notes.search", tag="urgent"), step("notes.search", tag="x"), finish("z"))
    client = LLMClient.mock(response=[Response(text=plan, model="mock", usd=0.5)])
    result = plan_and_execute.run(
        "Go.", llm=client, session=Session(principal="did:local:alice"), max_cost_usd=0.5
    )
    assert result.stopped == "max_cost"
    assert result.steps == []  # the plan was paid for; no step ran
    assert result.answer is None and result.error is None
    term = prov.termination(result.activity_iri)
    assert term == {"cls": T.BudgetBreach, "reason": "max_cost", "limit": 0.5, "observed": 0.5}


def test_budget_is_checked_before_paying_for_a_replan(store: Store) -> None:
    from trails import capability

    @capability(id="notes.summarize", description="Summarise with a model, then fail.")
    def summarize(ctx: Any) -> str:
        ctx.tracker.book(tag="llm:inner", principal=ctx.principal, usd=0.0, input_tokens=100)
        raise ValueError("summary too long")

    client = LLMClient.mock(response=lambda _m: fenced(step("notes.summarize"), finish("never")))
    result = plan_and_execute.run(
        "Go.", llm=client, session=Session(principal="did:local:alice"), max_tokens=100_000
    )
    assert result.stopped == "error"  # control: with room left, the replans happen

    planned = Response(
        text=fenced(step("notes.summarize"), finish("never")), model="m", input_tokens=10
    )
    client = LLMClient.mock(response=lambda _m: planned)
    session = Session(principal="did:local:alice")
    result = plan_and_execute.run("Go.", llm=client, session=session, max_tokens=50)
    assert result.stopped == "max_tokens"
    assert client.adapter.calls == 1  # the replan was never paid for
    assert len(session.metadata["plans"]) == 1
    assert result.answer is not None and "summary too long" in result.answer


def test_provider_error_surfaces_as_error(store: Store, prov: Any) -> None:
    client = LLMClient.mock(response=[ModelTimeoutError("took too long", provider="mock")])
    result = plan_and_execute.run("Go.", llm=client, session=Session(principal="did:local:alice"))
    assert result.stopped == "error" and "took too long" in (result.error or "")
    assert prov.run(result.activity_iri)["stop"] == "error"
    assert_conforms(store)
