"""Refused calls and terminal actions are evidence (seed 002: unknown tools, agent cards,
terminal actions and ``stop_condition``).

A model that asks for an unknown tool, or for a capability the session's agent card
hides, is refused; the refusal is a recorded invocation with status ``refused``, the
capability id and arguments it asked with, informed by the completion that proposed
it, and the query pack's ``failed-invocations`` lists it. A call that ends a run (a
``terminal=True`` capability or the run's ``stop_condition``) is linked from the run:
the run ``prov:wasEndedBy`` a ``trails:TerminalAction`` that the call generated.
Everything is read back with SPARQL.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import behaviour_tree, plan_and_execute, react
from trails.audit.querypack import get_query
from trails.errors import UserError
from trails.kernel import ObserverBase, capability
from trails.kernel.observe import ObserverEvent
from trails.llm import LLMClient
from trails.store import IRI, Solutions, Store, to_python

FENCE = "```json\n{}\n```"


def turn(action: str, action_input: dict[str, Any] | None = None, **extra: Any) -> str:
    payload = {"thought": f"use {action}", "action": action, "action_input": action_input or {}}
    return FENCE.format(json.dumps({**payload, **extra}))


def finish(answer: str) -> str:
    return turn("finish", final_answer=answer)


@pytest.fixture
def tools() -> list[str]:
    """``web.search`` and ``mail.send`` (side effects); the list records what really ran."""
    ran: list[str] = []

    @capability(id="web.search", description="Search the web.")
    def search(query: str) -> str:
        ran.append(f"search {query}")
        return f"results for {query}"

    @capability(id="mail.send", description="Send a mail.", side_effects=True)
    def send(to: str) -> str:
        ran.append(f"send {to}")
        return f"sent to {to}"

    @capability(id="ask.user", description="Ask the user a question.")
    def ask(question: str) -> str:
        ran.append(f"ask {question}")
        return f"present_question: {question}"

    return ran


REFUSED = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?inv ?capability ?error ?args ?step ?completion WHERE {
  GRAPH ?g {
    ?inv a trails:CapabilityInvocation, prov:Activity ;
         trails:status "refused" ;
         trails:stepIndex ?step ;
         prov:wasInformedBy ?completion ;
         prov:used ?input ;
         prov:qualifiedAssociation/prov:hadPlan/trails:capabilityId ?capability .
    ?completion a trails:LLMCompletion .
    GRAPH ?content { ?inv trails:errorMessage ?error }
    ?input a trails:CapabilityInput .
  }
  GRAPH ?cg { ?input prov:value ?args }
} ORDER BY ?step
"""


def _rows(store: Store, query: str, **params: Any) -> list[dict[str, Any]]:
    result = store.query(query, {k: IRI(v) for k, v in params.items()})
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items()} for row in result]


class Events(ObserverBase):
    def __init__(self) -> None:
        self.seen: list[ObserverEvent] = []

    def on_event(self, event: ObserverEvent) -> None:
        self.seen.append(event)


def test_an_unknown_tool_is_a_refused_invocation(tools: list[str], store: Store) -> None:
    events = Events()
    client = LLMClient.mock(
        [turn("no.such", {"q": "x"}), turn("web.search", {"query": "q1"}), finish("done")]
    )
    session = Session(principal="did:local:alice")
    result = react.run("Find Q1.", llm=client, session=session, observers=[events])
    assert result.stopped == "goal_achieved" and tools == ["search q1"]
    first = result.steps[0]
    assert str(first.observation).startswith("error: unknown capability 'no.such'")
    rows = _rows(store, REFUSED)
    assert len(rows) == 1
    row = rows[0]
    assert row["capability"] == "no.such" and row["step"] == 0
    assert json.loads(row["args"]) == {"q": "x"}
    assert row["error"].startswith("unknown capability 'no.such'")
    assert first.activity_iri == str(row["inv"])  # the step names the refused call
    refused = [e for e in events.seen if e.kind == "tool_error" and e.data["status"] == "refused"]
    assert [e.data["capability"] for e in refused] == ["no.such"]
    assert refused[0].call_id == str(row["inv"])


def test_a_card_hidden_capability_is_refused_and_nothing_runs(
    tools: list[str], store: Store
) -> None:
    session = Session(principal="did:local:alice", card={"capabilities": ["web.search"]})
    client = LLMClient.mock(
        [turn("mail.send", {"to": "bob@example.org"}), finish("could not send")]
    )
    result = react.run("Mail Bob.", llm=client, session=session)
    assert tools == []  # mail.send never ran
    # the model is told what it is told of any capability it was not offered: the card
    # hides the capability from the agent; the record tells the auditor why
    assert result.steps[0].observation == (
        "error: capability 'mail.send' is not among this run's tools (web.search)"
    )
    (row,) = _rows(store, REFUSED)
    assert row["capability"] == "mail.send"
    assert json.loads(row["args"]) == {"to": "bob@example.org"}
    assert row["error"] == "capability 'mail.send' is hidden by the session's agent card"
    # the pack's failed-invocations lists the refusal, with its status and reason
    listed = get_query("failed-invocations").run(store, session=session.iri)
    assert isinstance(listed, Solutions)
    found = [{k: to_python(v) for k, v in r.items()} for r in listed]
    assert [(r["capability"], r["status"]) for r in found] == [("mail.send", "refused")]
    assert found[0]["error"] == row["error"]


def test_a_capability_outside_the_runs_tools_is_refused(tools: list[str], store: Store) -> None:
    client = LLMClient.mock([turn("mail.send", {"to": "x"}), finish("no")])
    result = react.run(
        "g", llm=client, session=Session(principal="did:local:alice"), tools=["web.search"]
    )
    assert result.steps[0].observation == (
        "error: capability 'mail.send' is not among this run's tools (web.search)"
    )
    (row,) = _rows(store, REFUSED)
    assert row["capability"] == "mail.send" and tools == []


def test_plan_and_execute_records_a_refused_plan_step(tools: list[str], store: Store) -> None:
    plan = {
        "plan": [
            {"action": "no.such", "action_input": {"a": 1}},
            {"action": "finish", "action_input": {}, "final_answer": "ok"},
        ]
    }
    client = LLMClient.mock([FENCE.format(json.dumps(plan)), FENCE.format(json.dumps(plan))])
    plan_and_execute.run(
        "g", llm=client, session=Session(principal="did:local:alice"), max_replans=0
    )
    rows = _rows(store, REFUSED)
    assert rows and {r["capability"] for r in rows} == {"no.such"}


TERMINATED = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?reason ?capability ?status ?stop $run WHERE {
  GRAPH ?g {
    $run prov:wasEndedBy ?t ; trails:wasTerminatedBy ?t ; trails:stopReason ?stop .
    ?t a trails:TerminalAction ; trails:reason ?reason ; prov:wasGeneratedBy ?call .
    ?call a trails:CapabilityInvocation ; trails:status ?status ;
          prov:qualifiedAssociation/prov:hadPlan/trails:capabilityId ?capability .
  }
}
"""


@pytest.mark.seed_row("002-102")
def test_stop_condition_ends_the_run_after_the_call_it_names(
    tools: list[str], store: Store
) -> None:
    client = LLMClient.mock(
        [
            turn("web.search", {"query": "q"}),
            turn("ask.user", {"question": "which quarter?"}),
            turn("web.search", {"query": "never"}),
        ]
    )
    seen: list[tuple[str, str]] = []

    def stop(tool_name: str, result: str) -> bool:
        seen.append((tool_name, result))
        return "present_question" in result

    session = Session(principal="did:local:alice")
    result = react.run("g", llm=client, session=session, stop_condition=stop)
    assert result.stopped == "goal_achieved"
    assert result.answer == "present_question: which quarter?"
    assert result.terminated_by == "ask.user" and len(client.requests) == 2
    assert seen == [("web.search", "results for q"), ("ask.user", result.answer)]
    rows = _rows(store, TERMINATED, run=str(result.activity_iri))
    assert [{k: v for k, v in r.items() if k != "run"} for r in rows] == [
        {
            "reason": "stop_condition after 'ask.user'",
            "capability": "ask.user",
            "status": "ok",
            "stop": "goal_achieved",
        }
    ]
    assert result.terminated_by_call is not None
    # the pack's terminations lists it, with the call that ended the run
    listed = get_query("terminations").run(store, session=session.iri)
    assert isinstance(listed, Solutions)
    (row,) = [{k: to_python(v) for k, v in r.items()} for r in listed]
    assert str(row["kind"]).endswith("#TerminalAction")
    assert str(row["call"]) == result.terminated_by_call


def test_stop_condition_works_on_a_behaviour_tree(tools: list[str], store: Store) -> None:
    tree = {
        "type": "sequence",
        "children": [
            {"type": "action", "action": "ask.user", "action_input": {"question": "q?"}},
            {"type": "action", "action": "mail.send", "action_input": {"to": "x"}},
        ],
    }
    result = behaviour_tree.run(
        "g",
        llm=LLMClient.mock([]),
        session=Session(principal="did:local:alice"),
        tree=tree,
        stop_condition=lambda name, result: name == "ask.user",
    )
    assert result.terminated_by == "ask.user" and tools == ["ask q?"]
    (row,) = _rows(store, TERMINATED, run=str(result.activity_iri))
    assert row["capability"] == "ask.user"


def test_a_stop_condition_that_is_not_a_function_is_refused(store: Store) -> None:
    with pytest.raises(UserError, match="stop_condition= must be a function"):
        react.run(
            "g",
            llm=LLMClient.mock([finish("x")]),
            session=Session(principal="did:local:alice"),
            stop_condition="present_question",  # type: ignore[arg-type]
        )


def test_a_stop_condition_that_raises_ends_the_run_with_a_clear_error(
    tools: list[str], store: Store
) -> None:
    def broken(tool_name: str, result: str) -> bool:
        raise KeyError("oops")

    with pytest.raises(UserError, match=r"stop_condition raised on 'web\.search'"):
        react.run(
            "g",
            llm=LLMClient.mock([turn("web.search", {"query": "q"}), finish("x")]),
            session=Session(principal="did:local:alice"),
            stop_condition=broken,
        )


def test_a_refused_native_tool_call_carries_its_call_id(tools: list[str], store: Store) -> None:
    from trails.llm import ToolCall

    client = LLMClient.mock(
        [
            [ToolCall("c1", "web.search", {"query": "a"}), ToolCall("c2", "no.such", {})],
            "searched; one tool was missing",
        ]
    )
    result = react.run(
        "Search.",
        llm=client,
        session=Session(principal="did:local:alice"),
        tools=["web.search"],
        tool_calling="native",
    )
    assert result.stopped == "goal_achieved" and tools == ["search a"]
    rows = _rows(
        store,
        """
        PREFIX prov: <http://www.w3.org/ns/prov#>
        PREFIX trails: <https://w3id.org/trails/ns#>
        SELECT ?id ?status WHERE { GRAPH ?g {
          ?inv a trails:CapabilityInvocation ; trails:toolCallId ?id ; trails:status ?status ;
               prov:wasInformedBy ?completion .
          ?completion trails:toolCallId ?id .
        } } ORDER BY ?id
        """,
    )
    assert [(r["id"], r["status"]) for r in rows] == [("c1", "ok"), ("c2", "refused")]
