"""Guards on every planner: dry runs, validators, a reflector, tool budgets; refusals recorded."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from tests.governance.conftest import plan, turn

from trails.agent import Session
from trails.agent.planners import (
    behaviour_tree,
    plan_and_execute,
    plan_execute_reflect,
    react,
    reflexion,
)
from trails.audit.querypack import get_query
from trails.errors import UserError
from trails.kernel import capability
from trails.llm import LLMClient
from trails.prov.vocab import sparql_prefixes
from trails.store import Solutions, Store, to_python


def rows(store: Store, sparql: str) -> list[dict[str, Any]]:
    result = store.query(sparql_prefixes() + sparql)
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in r.items()} for r in result]


@pytest.fixture
def effects() -> dict[str, int]:
    """Two side-effecting capabilities and a counter of their real effects."""
    counter = {"pay": 0, "email": 0}

    @capability(id="pay", side_effects=True, description="Pay an invoice.")
    def pay(invoice: str, amount: float) -> str:
        counter["pay"] += 1
        return f"paid {invoice}"

    @capability(id="email", side_effects=True, description="Send an e-mail.")
    def email(to: str) -> str:
        counter["email"] += 1
        return "sent"

    email.dry_run = lambda to: f"would e-mail {to}"  # type: ignore[attr-defined]
    return counter


def dry_runs(store: Store) -> list[tuple[str, str]]:
    found = rows(
        store,
        """SELECT ?cap ?input ?proposer WHERE { GRAPH ?g {
             ?a a trails:CapabilityInvocation ; trails:status "dry_run" ;
                trails:capability/trails:capabilityId ?cap ;
                prov:used ?in ; prov:wasInformedBy ?proposer ;
                prov:startedAtTime ?t .
             GRAPH ?cg { ?in prov:value ?input }
           } } ORDER BY ?t""",
    )
    return [(r["cap"], r["input"]) for r in found]


RUNS: dict[str, Callable[..., Any]] = {
    "react": lambda **kw: react.run(
        "Pay and tell.",
        llm=LLMClient.mock(
            response=[
                turn("pay", {"invoice": "INV-1", "amount": 10}),
                turn("email", {"to": "cfo@corp.example"}),
                turn("finish", final_answer="done"),
            ]
        ),
        **kw,
    ),
    "plan_and_execute": lambda **kw: plan_and_execute.run(
        "Pay and tell.",
        llm=LLMClient.mock(
            response=plan(
                {"action": "pay", "action_input": {"invoice": "INV-1", "amount": 10}},
                {"action": "email", "action_input": {"to": "cfo@corp.example"}},
                {"action": "finish", "action_input": {}, "final_answer": "done"},
            )
        ),
        **kw,
    ),
    "behaviour_tree": lambda **kw: behaviour_tree.run(
        "Pay and tell.",
        llm=LLMClient.mock(response="unused"),
        tree={
            "type": "sequence",
            "children": [
                {
                    "type": "action",
                    "action": "pay",
                    "action_input": {"invoice": "INV-1", "amount": 10},
                },
                {"type": "action", "action": "email", "action_input": {"to": "cfo@corp.example"}},
            ],
        },
        **kw,
    ),
}


def test_an_async_dry_run_tells_observers_the_same_planned_calls(
    store: Store, effects: dict[str, int]
) -> None:
    """``arun`` drives the same loop: its dry-run dispatches notify ``tool_dry_run`` too."""
    session = Session(principal="did:local:alice")
    seen: list[Any] = []
    watcher = type("Watcher", (), {"on_event": lambda self, e: seen.append(e)})()
    script = [
        turn("pay", {"invoice": "INV-1", "amount": 10}),
        turn("email", {"to": "cfo@corp.example"}),
        turn("finish", final_answer="done"),
    ]
    result = asyncio.run(
        react.arun(
            "Pay and tell.",
            llm=LLMClient.mock(response=script),
            session=session,
            dry_run=True,
            observers=[watcher],
        )
    )
    session.close()
    assert result.stopped == "goal_achieved" and effects == {"pay": 0, "email": 0}
    tools = [(e.kind, e.data["capability"]) for e in seen if e.kind.startswith("tool_")]
    assert tools == [("tool_dry_run", "pay"), ("tool_dry_run", "email")]
    dry = [e for e in seen if e.kind == "tool_dry_run"]
    assert dry[1].data["observation"] == "would e-mail cfo@corp.example"
    assert [s.activity_iri for s in result.steps[:2]] == [e.call_id for e in dry]


@pytest.mark.parametrize("strategy", sorted(RUNS))
def test_a_dry_run_executes_nothing_and_records_what_would_have_run(
    store: Store, effects: dict[str, int], strategy: str
) -> None:
    session = Session(principal="did:local:alice")
    seen: list[Any] = []
    watcher = type("Watcher", (), {"on_event": lambda self, e: seen.append(e)})()
    result = RUNS[strategy](session=session, dry_run=True, observers=[watcher])
    session.close()
    assert effects == {"pay": 0, "email": 0}  # nothing acted
    # observers hear each planned call as a dry run, never as a tool that ran
    tools = [(e.kind, e.data["capability"]) for e in seen if e.kind.startswith("tool_")]
    assert tools == [("tool_dry_run", "pay"), ("tool_dry_run", "email")]
    dry = [e for e in seen if e.kind == "tool_dry_run"]
    assert dry[1].data["observation"] == "would e-mail cfo@corp.example"
    assert dry[0].data["args"] == {"invoice": "INV-1", "amount": 10}
    assert dry[0].run_id is not None
    assert all(e.run_id == dry[0].run_id and e.call_id for e in dry)
    observations = [s.observation for s in result.steps if s.action in ("pay", "email")]
    assert observations == [
        "dry run: pay was not executed; assume it succeeded",
        "would e-mail cfo@corp.example",  # the capability's own dry_run
    ]
    assert [c for c, _ in dry_runs(store)] == ["pay", "email"]
    assert '"invoice":"INV-1"' in dry_runs(store)[0][1]  # what would have been paid
    planned = [{k: to_python(v) for k, v in r.items()} for r in get_query("dry-runs").run(store)]  # type: ignore[union-attr]
    assert [(r["capability"], r["sideEffects"]) for r in planned] == [
        ("pay", True),
        ("email", True),
    ]
    assert '"to":"cfo@corp.example"' in planned[1]["inputValue"]
    # dry runs are neither side effects that ran nor failures
    assert list(get_query("side-effects").run(store)) == []  # type: ignore[call-overload]
    assert list(get_query("failed-invocations").run(store)) == []  # type: ignore[call-overload]


@pytest.mark.parametrize("strategy", sorted(RUNS))
def test_validator_refusals_are_recorded_decisions(
    store: Store, effects: dict[str, int], strategy: str
) -> None:
    def no_large_payments(action: str, args: dict[str, Any]) -> str | None:
        return "payments need two signatures" if action == "pay" else None

    def allow_all(action: str, args: dict[str, Any]) -> str | None:
        return None

    session = Session(principal="did:local:alice")
    result = RUNS[strategy](session=session, validate_action=[allow_all, no_large_payments])
    session.close()
    assert effects["pay"] == 0
    pay = next(s for s in result.steps if s.action == "pay")
    assert pay.observation == "error: refused: payments need two signatures"
    found = rows(
        store,
        """SELECT ?cap ?rule ?reason ?proposer ?policy WHERE { GRAPH ?g {
             ?d a trails:PolicyDecision ; trails:decision "deny" ; trails:capabilityId ?cap ;
                trails:matchedRule ?rule ; trails:reason ?reason ;
                prov:wasInformedBy ?proposer ; prov:wasAssociatedWith ?policy .
           } }""",
    )
    refused = found[0]  # plan-and-execute replans and proposes it again: refused each time
    assert {r["cap"] for r in found} == {"pay"}
    assert refused["cap"] == "pay" and refused["rule"] == "validate_action:no_large_payments"
    assert refused["reason"] == "payments need two signatures"
    assert str(refused["policy"]).endswith("policy:validate_action")
    if strategy != "behaviour_tree":  # a given tree has no proposing completion
        kinds = rows(
            store,
            "SELECT ?k WHERE { GRAPH ?g { $p a ?k } }".replace("$p", f"<{refused['proposer']}>"),
        )
        assert "https://w3id.org/trails/ns#LLMCompletion" in {str(k["k"]) for k in kinds}
    denials = [to_python(r["capability"]) for r in get_query("policy-denials").run(store)]  # type: ignore[union-attr]
    assert set(denials) == {"pay"} and len(denials) == len(found)


def test_a_reflector_veto_is_recorded(store: Store, effects: dict[str, int]) -> None:
    model = LLMClient.mock(
        response=[
            turn("pay", {"invoice": "INV-9", "amount": 99000}),
            '{"veto": true, "reason": "the amount is far above any earlier invoice"}',
            turn("email", {"to": "cfo@corp.example"}),
            '{"veto": false, "reason": "informing the CFO is harmless"}',
            turn("finish", final_answer="asked the CFO"),
        ]
    )
    session = Session(principal="did:local:alice")
    result = react.run("Pay INV-9.", llm=model, session=session, reflect_before_action=True)
    session.close()
    assert effects == {"pay": 0, "email": 1}
    assert result.steps[0].observation == (
        "error: refused: the amount is far above any earlier invoice"
    )
    assert "Proposed action: pay" in model.requests[1].messages[0].content
    assert "side effects" in model.requests[1].messages[0].content
    (veto,) = rows(
        store,
        """SELECT ?rule ?reason WHERE { GRAPH ?g {
             ?d a trails:PolicyDecision ; trails:decision "deny" ;
                trails:matchedRule ?rule ; trails:reason ?reason } }""",
    )
    assert veto == {
        "rule": "reflect_before_action",
        "reason": "the amount is far above any earlier invoice",
    }
    # the reflection itself is a recorded completion (5 in all)
    assert len(rows(store, "SELECT ?c WHERE { GRAPH ?g { ?c a trails:LLMCompletion } }")) == 5


def test_tool_budgets_on_react(store: Store, effects: dict[str, int]) -> None:
    model = LLMClient.mock(
        response=[
            turn("email", {"to": "a@corp.example"}),
            turn("email", {"to": "b@corp.example"}),
            turn("finish", final_answer="one sent"),
        ]
    )
    session = Session(principal="did:local:alice")
    result = react.run("Mail.", llm=model, session=session, tool_budgets={"email": 1})
    session.close()
    assert effects["email"] == 1
    assert result.steps[1].observation == "error: tool budget of 'email' exhausted (1 calls)"
    (d,) = rows(store, "SELECT ?rule WHERE { GRAPH ?g { ?d trails:matchedRule ?rule } }")
    assert d["rule"] == "tool_budget:email=1"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"validate_action": "yes"}, "validate_action"),
        ({"validate_action": [print, 3]}, "validate_action"),
        ({"tool_budgets": {"email": -1}}, "tool_budgets"),
        ({"reflect_before_action": "please"}, "reflect_before_action"),
        ({"dry_run": "yes"}, "dry_run"),
    ],
)
def test_bad_guards_are_refused_before_anything_is_recorded(
    store: Store, kwargs: dict[str, Any], message: str
) -> None:
    session = Session(principal="did:local:alice")
    with pytest.raises(UserError, match=message):
        react.run("x", llm=LLMClient.mock(response="finish"), session=session, **kwargs)
    assert not session.opened


def test_prompts_show_side_effects_and_cost(store: Store, effects: dict[str, int]) -> None:
    @capability(id="quote", description="Get a price quote.", cost_estimate={"usd": 0.02})
    def quote(item: str) -> str:
        return "12 EUR"

    model = LLMClient.mock(response=turn("finish", final_answer="ok"))
    session = Session(principal="did:local:alice")
    react.run("Quote.", llm=model, session=session, tools=["quote", "pay"])
    session.close()
    prompt = model.requests[0].messages[0].content
    assert "- quote: Get a price quote. [estimated cost usd 0.02]" in prompt
    assert "- pay: Pay an invoice. [side effects: changes the world]" in prompt


@pytest.mark.parametrize(
    "card",
    [
        {"capabilities": ["email"]},
        {"skills": [{"id": "em*"}]},
        {"actions": {"email": {"forms": []}}},  # a WoT Thing Description's actions
    ],
)
def test_the_agent_card_hides_what_it_does_not_grant(
    store: Store, effects: dict[str, int], card: dict[str, Any]
) -> None:
    model = LLMClient.mock(
        response=[
            turn("pay", {"invoice": "INV-1", "amount": 1}),
            turn("finish", final_answer="no"),
        ]
    )
    session = Session.new(principal="did:local:alice", agent_card=card)
    result = react.run("Pay.", llm=model, session=session)
    session.close()
    prompt = model.requests[0].messages[0].content
    assert "- email:" in prompt and "- pay:" not in prompt
    assert result.steps[0].observation == (
        "error: capability 'pay' is not among this run's tools (email)"
    )
    assert effects["pay"] == 0


def test_a_card_without_grants_shows_everything_and_a_bad_grant_is_refused(
    store: Store, effects: dict[str, int]
) -> None:
    from trails.agent.loop.tools import card_grants

    assert card_grants(None) is None and card_grants({"name": "x"}) is None
    with pytest.raises(UserError, match="agent card's 'capabilities'"):
        card_grants({"capabilities": 3})


def test_a_dry_run_still_asks_the_policy(store: Store, effects: dict[str, int]) -> None:
    from trails.kernel import RulePolicy

    model = LLMClient.mock(
        response=[
            turn("pay", {"invoice": "INV-1", "amount": 10}),
            turn("email", {"to": "cfo@corp.example"}),
            turn("finish", final_answer="done"),
        ]
    )
    asked: list[str] = []
    session = Session(
        principal="did:local:alice",
        policy=RulePolicy(deny=["pay"], review=["email"], name="rehearsal"),
        approver=lambda spec, args, reason: asked.append(spec.id) is None,
    )
    result = react.run("Pay and tell.", llm=model, session=session, dry_run=True)
    session.close()
    assert effects == {"pay": 0, "email": 0} and asked == []  # nobody is asked in a dry run
    assert result.steps[0].observation == "error: policy denied 'pay': pay matches deny rule 'pay'"
    assert result.steps[1].observation == "would e-mail cfo@corp.example"
    assert [c for c, _ in dry_runs(store)] == ["email"]  # pay would not have run
    denied = [to_python(r["capability"]) for r in get_query("policy-denials").run(store)]  # type: ignore[union-attr]
    assert denied == ["pay"]


def _scripted(agent: list[str], veto: dict[str, str] | None = None) -> LLMClient:
    """One client for every role: the ReAct agent's turns in order, the Reflexion critic
    (accepts), the Plan-Execute-Reflect planner (one step, then the result) and the
    reflector (vetoes the actions named in ``veto``, with that reason)."""
    planned: list[str] = []

    def answer(msgs: list[Any]) -> str:
        first = msgs[0].content
        if first.startswith("You check an agent's next action"):
            action = first.split("Proposed action: ", 1)[1].split(" ", 1)[0]
            reason = (veto or {}).get(action)
            return json.dumps({"veto": reason is not None, "reason": reason or "fine"})
        if "Reflexion critic" in first:
            return '```json\n{"verdict": "accept", "critique": "ok"}\n```'
        if "plan-execute-reflect" in first:
            if planned:
                return json.dumps({"steps": [], "result": "done"})
            planned.append("x")
            return json.dumps({"steps": ["Pay INV-1 and tell the CFO"], "result": ""})
        return agent.pop(0)

    return LLMClient.mock(response=answer)


INNER = {"reflexion": reflexion.run, "plan_execute_reflect": plan_execute_reflect.run}


def _pay_and_tell() -> list[str]:
    return [
        turn("pay", {"invoice": "INV-1", "amount": 10}),
        turn("email", {"to": "cfo@corp.example"}),
        turn("finish", final_answer="done"),
    ]


def _decisions(store: Store) -> list[tuple[str, str]]:
    found = rows(
        store,
        """SELECT ?cap ?rule WHERE { GRAPH ?g {
             ?d a trails:PolicyDecision ; trails:decision "deny" ; trails:capabilityId ?cap ;
                trails:matchedRule ?rule ; prov:wasInformedBy ?proposer .
             ?proposer a trails:LLMCompletion } } ORDER BY ?cap""",
    )
    return [(r["cap"], r["rule"]) for r in found]


@pytest.mark.parametrize("strategy", sorted(INNER))
def test_every_guard_on_reflexion_and_plan_execute_reflect(
    store: Store, effects: dict[str, int], strategy: str
) -> None:
    """Dry run, validator, reflector veto and tool budget on the two planners whose
    actions are taken by inner ReAct passes: each refusal is a recorded decision linked
    to the completion that proposed the action."""
    run = INNER[strategy]
    session = Session(principal="did:local:alice")
    run("Pay and tell.", llm=_scripted(_pay_and_tell()), session=session, dry_run=True)
    assert effects == {"pay": 0, "email": 0}
    assert [c for c, _ in dry_runs(store)] == ["pay", "email"]

    run(
        "Pay and tell.",
        llm=_scripted(_pay_and_tell()),
        session=session,
        validate_action=lambda cap, args: "two signatures" if cap == "pay" else None,
    )
    assert effects == {"pay": 0, "email": 1}
    assert _decisions(store) == [("pay", "validate_action:<lambda>")]

    run(
        "Pay and tell.",
        llm=_scripted(_pay_and_tell(), veto={"email": "the CFO is on leave"}),
        session=session,
        reflect_before_action=True,
    )
    assert effects == {"pay": 1, "email": 1}
    assert ("email", "reflect_before_action") in _decisions(store)

    twice = [turn("email", {"to": "a@corp.example"}), *_pay_and_tell()]
    run("Pay and tell.", llm=_scripted(twice), session=session, tool_budgets={"email": 1})
    session.close()
    assert effects == {"pay": 2, "email": 2}  # the second e-mail was over budget
    assert ("email", "tool_budget:email=1") in _decisions(store)
