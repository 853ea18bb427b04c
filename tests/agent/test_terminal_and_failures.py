"""``terminal=True`` ends a run on every planner; a provider failure ends it with one warning.

A provider the run never reached (no server, no key) is raised after the run is recorded;
any other provider failure returns ``stopped="error"``.

Each planner is driven by a scripted model that would go on asking for work
after the terminal capability: the test proves the model is not asked again
(the mock's request count) and that the answer is the capability's result.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.planners import (
    behaviour_tree,
    plan_and_execute,
    plan_execute_reflect,
    react,
    reflexion,
)
from trails.kernel import capability
from trails.llm import (
    LLMClient,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelServerError,
    RetryPolicy,
)
from trails.store import IRI, Solutions, Store, to_python

FENCE = "```json\n{}\n```"


def turn(action: str, action_input: dict[str, Any] | None = None, **extra: Any) -> str:
    """A well-formed ReAct reply (as the ``reply`` fixture writes them)."""
    payload = {"thought": f"use {action}", "action": action, "action_input": action_input or {}}
    return FENCE.format(json.dumps({**payload, **extra}))


@pytest.fixture
def done() -> list[str]:
    """Register ``ticket.close`` (terminal) and ``ticket.read``; the list records closes."""
    closed: list[str] = []

    @capability(id="ticket.read", description="Read a ticket.")
    def read(ticket: str) -> str:
        return f"{ticket}: printer on fire"

    @capability(id="ticket.close", description="Close a ticket.", terminal=True)
    def close(ticket: str) -> dict[str, Any]:
        closed.append(ticket)
        return {"closed": ticket}

    return closed


def _fenced(value: Any) -> str:
    return FENCE.format(json.dumps(value))


# Each planner's script: the terminal call, then replies that would continue the run.
SCRIPTS: dict[str, tuple[Callable[..., Any], list[str], dict[str, Any]]] = {
    "react": (
        react.run,
        [turn("ticket.close", {"ticket": "T-1"}), turn("ticket.read", {"ticket": "T-1"})],
        {},
    ),
    "plan_and_execute": (
        plan_and_execute.run,
        [
            _fenced(
                {
                    "plan": [
                        {"action": "ticket.close", "action_input": {"ticket": "T-1"}},
                        {"action": "ticket.read", "action_input": {"ticket": "T-1"}},
                        {"action": "finish", "action_input": {}, "final_answer": "model"},
                    ]
                }
            ),
            _fenced({"plan": [{"action": "finish", "action_input": {}, "final_answer": "x"}]}),
        ],
        {},
    ),
    "reflexion": (
        reflexion.run,
        [
            turn("ticket.close", {"ticket": "T-1"}),
            _fenced({"verdict": "retry", "critique": "the critic must not be asked"}),
            turn("finish", final_answer="model"),
        ],
        {},
    ),
    "plan_execute_reflect": (
        plan_execute_reflect.run,
        [
            json.dumps({"steps": ["close ticket T-1 with ticket.close"], "result": ""}),
            turn("ticket.close", {"ticket": "T-1"}),
            json.dumps({"steps": [], "result": "model"}),
        ],
        {},
    ),
    "behaviour_tree (action leaf)": (
        behaviour_tree.run,
        [],
        {
            "tree": {
                "type": "sequence",
                "children": [
                    {"type": "action", "action": "ticket.close", "action_input": {"ticket": "T-1"}},
                    {"type": "action", "action": "ticket.read", "action_input": {"ticket": "T-1"}},
                ],
            }
        },
    ),
    "behaviour_tree (agent node)": (
        behaviour_tree.run,
        [turn("ticket.close", {"ticket": "T-1"}), turn("finish", final_answer="model")],
        {"tree": {"type": "agent", "goal": "close T-1"}},
    ),
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_terminal_capability_ends_the_run_on_every_planner(
    name: str, done: list[str], store: Store, prov: Any
) -> None:
    run, script, extra = SCRIPTS[name]
    client = LLMClient.mock(list(script))
    result = run(
        "Close ticket T-1.",
        llm=client,
        session=Session(principal="did:local:alice"),
        tools=["ticket.read", "ticket.close"],
        **extra,
    )
    assert done == ["T-1"]
    assert result.stopped == "goal_achieved"
    assert result.terminated_by == "ticket.close"
    assert json.loads(result.answer or "") == {"closed": "T-1"}
    asked = {
        "react": 1,
        "plan_and_execute": 1,
        "reflexion": 1,
        "plan_execute_reflect": 2,
        "behaviour_tree (action leaf)": 0,
        "behaviour_tree (agent node)": 1,
    }[name]
    assert len(client.requests) == asked  # the model was not asked again
    recorded = prov.run(str(result.activity_iri))
    assert recorded["stop"] == "goal_achieved"
    assert json.loads(recorded["answer"]) == {"closed": "T-1"}
    # the graph links the run to the call that ended it (plain PROV: run wasEndedBy a
    # termination that the ticket.close invocation generated)
    ended_by = _ended_by(store, str(result.activity_iri))
    assert ended_by == [
        ("TerminalAction", "ticket.close", "ok", "terminal capability 'ticket.close'")
    ]


ENDED_BY = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?kind ?capability ?status ?reason ?run WHERE {
  GRAPH ?g {
    ?run prov:wasEndedBy ?t ; trails:wasTerminatedBy ?t .
    ?t a ?kind ; trails:reason ?reason ; prov:wasGeneratedBy ?call .
    FILTER(?kind != trails:Termination && ?kind != prov:Entity)
    ?call a trails:CapabilityInvocation ; trails:status ?status ;
          prov:qualifiedAssociation/prov:hadPlan/trails:capabilityId ?capability .
  }
}
"""


def _ended_by(store: Store, run: str) -> list[tuple[str, str, str, str]]:
    rows = store.query(ENDED_BY, {"run": IRI(run)})
    assert isinstance(rows, Solutions)
    return [
        (
            str(r["kind"]).rsplit("#", 1)[-1],
            str(to_python(r["capability"])),
            str(to_python(r["status"])),
            str(to_python(r["reason"])),
        )
        for r in rows
    ]


def test_a_failed_terminal_call_does_not_end_the_run(done: list[str], store: Store) -> None:
    client = LLMClient.mock(
        [turn("ticket.close", {"ticket": 7}), turn("finish", final_answer="gave up")]
    )
    result = react.run("Close it.", llm=client, session=Session(principal="did:local:alice"))
    assert (result.stopped, result.answer, result.terminated_by) == (
        "goal_achieved",
        "gave up",
        None,
    )
    assert done == [] and len(client.requests) == 2


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PLANNERS = {
    "react": (react.run, {}),
    "plan_and_execute": (plan_and_execute.run, {}),
    "reflexion": (reflexion.run, {}),
    "plan_execute_reflect": (plan_execute_reflect.run, {}),
    "behaviour_tree": (behaviour_tree.run, {}),
}


RUN_ENDS = """
SELECT ?run ?stop ?error WHERE { GRAPH ?g {
  ?run a trails:PlanRun ; trails:stopReason ?stop .
  GRAPH ?content { ?run trails:errorMessage ?error }
  FILTER NOT EXISTS { ?run prov:wasInformedBy ?parent . ?parent a trails:PlanRun }
} }
"""


def _ended_runs(store: Store) -> list[tuple[str, str]]:
    """(stop reason, error) of each top-level plan run that ended with an error."""
    from trails.prov.vocab import NAMESPACES

    prefixes = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())
    rows = store.query(prefixes + RUN_ENDS)
    assert isinstance(rows, Solutions)
    return [(str(to_python(r["stop"])), str(to_python(r["error"]))) for r in rows]


@pytest.mark.parametrize("name", sorted(PLANNERS))
def test_an_unreachable_provider_raises_after_recording_the_error_ending(
    name: str, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """The seed Quickstart on a provider nobody serves fails loudly, not ``None in 0 steps``."""
    run, extra = PLANNERS[name]
    client = LLMClient.ollama(
        "qwen3:8b",
        host=f"http://127.0.0.1:{_closed_port()}",
        retry=RetryPolicy(max_retries=0, base_delay=0.0),
    )
    with caplog.at_level(logging.WARNING), pytest.raises(ModelConnectionError) as raised:
        run("Find urgent notes.", llm=client, session=Session(principal="did:local:a"), **extra)
    assert "ollama" in str(raised.value) and "cannot reach" in str(raised.value)
    assert any("LLMClient.mock()" in note for note in raised.value.__notes__)
    [(stop, error)] = _ended_runs(store)  # recorded all the same, ended with the error
    assert stop == "error" and error == str(raised.value)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert warnings[0].name == "trails.agent" and str(raised.value) in warnings[0].getMessage()


def test_a_missing_api_key_is_raised_too(
    store: Store, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    client = LLMClient.anthropic("claude-haiku-4-5", base_url=f"http://127.0.0.1:{_closed_port()}")
    with caplog.at_level(logging.WARNING), pytest.raises(ModelAuthenticationError) as raised:
        react.run("Find urgent notes.", llm=client, session=Session(principal="did:l:a"))
    assert "no API key" in str(raised.value)
    assert _ended_runs(store) == [("error", str(raised.value))]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "no API key" in warnings[0]


@pytest.mark.parametrize(
    "script",
    [
        [ModelServerError("overloaded", provider="mock", status=529)],
        [turn("notes.search", {"tag": "urgent"}), ModelConnectionError("gone", provider="mock")],
    ],
    ids=["a failing server", "a provider lost under way"],
)
def test_other_provider_failures_return_error_and_log_one_warning(
    script: list[Any], store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    @capability(id="notes.search", description="Search notes by tag.")
    def search(tag: str) -> list[str]:
        return ["n1"]

    with caplog.at_level(logging.WARNING):
        result = react.run(
            "Find urgent notes.",
            llm=LLMClient.mock(response=script),
            session=Session(principal="did:local:a"),
        )
    assert result.stopped == "error" and result.error in ("overloaded", "gone")
    assert _ended_runs(store) == [("error", result.error)]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and result.error in warnings[0]


def test_arun_raises_an_unreachable_provider_too(store: Store) -> None:
    import asyncio

    client = LLMClient.ollama(
        "qwen3:8b",
        host=f"http://127.0.0.1:{_closed_port()}",
        retry=RetryPolicy(max_retries=0, base_delay=0.0),
    )
    with pytest.raises(ModelConnectionError, match="cannot reach"):
        asyncio.run(
            react.arun("Find urgent notes.", llm=client, session=Session(principal="did:l:a"))
        )
    assert [stop for stop, _ in _ended_runs(store)] == ["error"]
