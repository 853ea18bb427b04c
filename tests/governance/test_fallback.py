"""Strategy fallback: a run that stops with an error is run again with the fallback strategy."""

from __future__ import annotations

from typing import Any

import pytest
from tests.governance.conftest import turn

from trails.agent import Session
from trails.errors import UserError
from trails.kernel import ObserverEvent
from trails.llm import LLMClient, ModelServerError
from trails.prov.vocab import sparql_prefixes
from trails.store import Solutions, Store, to_python


def runs(store: Store) -> list[dict[str, Any]]:
    result = store.query(
        sparql_prefixes()
        + """SELECT ?run ?strategy ?stop ?parent WHERE { GRAPH ?g {
             ?run a trails:PlanRun ; trails:strategy ?strategy ; prov:startedAtTime ?t ;
                  prov:wasInformedBy ?parent .
             OPTIONAL { ?run trails:stopReason ?stop } } } ORDER BY ?t"""
    )
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in r.items()} for r in result]


def test_a_failed_run_falls_back_to_another_strategy(store: Store) -> None:
    seen: list[ObserverEvent] = []

    class Watch:
        def on_event(self, event: ObserverEvent) -> None:
            if event.kind == "fallback":
                seen.append(event)

    model = LLMClient.mock(
        response=[
            ModelServerError("planner model down", provider="mock", status=503),
            turn("finish", final_answer="answered by react"),
        ]
    )
    session = Session.new(
        strategy="plan_and_execute",
        fallback="react",
        principal="did:local:alice",
        llm=model,
        observers=[Watch()],
    )
    result = session.run("What is 2 + 2?", max_replans=2)  # a keyword react does not take
    session.close()
    assert (result.strategy, result.stopped, result.answer) == (
        "react",
        "goal_achieved",
        "answered by react",
    )
    first, second = runs(store)
    assert (first["strategy"], first["stop"]) == ("plan_and_execute", "error")
    assert (second["strategy"], second["stop"]) == ("react", "goal_achieved")
    assert second["parent"] == first["run"]  # informed by the failed run
    (event,) = seen
    assert event.data["failed"] == "plan_and_execute" and event.data["next"] == "react"
    assert "planner model down" in str(event.data["error"])


def test_no_fallback_when_the_run_succeeds_or_none_is_set(store: Store) -> None:
    session = Session(
        principal="did:local:alice",
        strategy="react",
        llm=LLMClient.mock(response=[ModelServerError("down", provider="mock", status=503)]),
    )
    assert session.run("Q?").stopped == "error"
    session.close()
    assert len(runs(store)) == 1
    with pytest.raises(UserError):
        Session(principal="did:local:alice", fallback="no-such-planner")
