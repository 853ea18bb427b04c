"""A batch is evidence (seed 002 Batch Processing, ``on_batch_start`` / ``on_batch_end``).

``react.batch`` / ``abatch`` record a ``trails:Batch`` activity in a sealed graph of
its own, with its id and counts; every run and session of the batch is informed by
it (read back with SPARQL), the batch graph verifies, and observers get
``batch_start`` / ``batch_end`` with the batch id.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from trails.agent import PlanResult
from trails.agent.planners import plan_and_execute, react
from trails.errors import UserError
from trails.evidence.verify import verify
from trails.kernel import ObserverBase
from trails.kernel.observe import ObserverEvent
from trails.llm import LLMClient
from trails.store import IRI, Solutions, Store, to_python

FINISH = (
    "```json\n"
    + json.dumps(
        {"thought": "done", "action": "finish", "action_input": {}, "final_answer": "done"}
    )
    + "\n```"
)

BATCH = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g ?batch ?id ?goals ?failed ?strategy ?principal ?started ?ended WHERE {
  GRAPH ?g {
    ?batch a trails:Batch, prov:Activity ;
           trails:batchId ?id ; trails:goalCount ?goals ; trails:failedCount ?failed ;
           trails:strategy ?strategy ;
           prov:startedAtTime ?started ; prov:endedAtTime ?ended ;
           prov:wasAssociatedWith/trails:principalId ?principal .
  }
}
"""

INFORMED = """
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT ?x $batch WHERE { GRAPH ?g { ?x prov:wasInformedBy $batch } }
"""

SEALED = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH ?ledger { ?seal trails:sealedGraph $g } }
"""


class Events(ObserverBase):
    def __init__(self) -> None:
        self.seen: list[ObserverEvent] = []

    def on_event(self, event: ObserverEvent) -> None:
        self.seen.append(event)


def _one(store: Store, query: str, **params: Any) -> dict[str, Any]:
    result = store.query(query, {k: IRI(v) for k, v in params.items()})
    assert isinstance(result, Solutions)
    rows = [{k: to_python(v) for k, v in row.items()} for row in result]
    assert len(rows) == 1, rows
    return rows[0]


def _informed(store: Store, batch: str) -> set[str]:
    result = store.query(INFORMED, {"batch": IRI(batch)})
    assert isinstance(result, Solutions)
    return {str(row["x"]) for row in result}


def test_a_batch_is_one_activity_its_runs_are_informed_by(store: Store) -> None:
    events = Events()
    results = react.batch(
        ["a", "b", ""],
        llm=LLMClient.mock(response=FINISH),
        principal="did:local:alice",
        tools=[],
        observers=[events],
    )
    ok = [r for r in results if isinstance(r, PlanResult)]
    assert len(ok) == 2 and isinstance(results[2], UserError)  # an empty goal raised
    row = _one(store, BATCH)
    assert (row["goals"], row["failed"], row["strategy"], row["principal"]) == (
        3,
        1,
        "react",
        "did:local:alice",
    )
    assert str(row["g"]).startswith("urn:trails:graph:batch/")
    informed = _informed(store, str(row["batch"]))
    runs = {str(r.activity_iri) for r in ok}
    assert runs <= informed  # every run of the batch is informed by it
    assert len(informed - runs) == 2  # and the two sessions that ran
    # observers: batch_start before any run, batch_end after all, one batch id
    kinds = [e.kind for e in events.seen]
    assert kinds[0] == "batch_start" and kinds[-1] == "batch_end"
    start, end = events.seen[0], events.seen[-1]
    assert start.data == {"batch_id": row["id"], "prompts_count": 3}
    assert (end.data["batch_id"], end.data["results_count"], end.data["errors_count"]) == (
        row["id"],
        2,
        1,
    )
    assert end.data["total_duration_ms"] >= 0
    # the batch graph is sealed, and the store verifies
    assert store.query(SEALED, {"g": IRI(str(row["g"]))}) is True
    report = verify(store)
    assert report.findings == []


def test_abatch_records_its_batch_too(store: Store) -> None:
    results = asyncio.run(
        plan_and_execute.abatch(
            ["x", "y"],
            llm=LLMClient.mock(
                response="```json\n"
                + json.dumps(
                    {"plan": [{"action": "finish", "action_input": {}, "final_answer": "ok"}]}
                )
                + "\n```"
            ),
            principal="did:local:bob",
            tools=[],
        )
    )
    assert all(isinstance(r, PlanResult) for r in results)
    row = _one(store, BATCH)
    assert (row["goals"], row["failed"], row["strategy"]) == (2, 0, "plan_and_execute")
    runs = {str(r.activity_iri) for r in results if isinstance(r, PlanResult)}
    assert runs <= _informed(store, str(row["batch"]))


def test_an_empty_batch_records_nothing(store: Store) -> None:
    assert react.batch([], llm=LLMClient.mock(response=FINISH)) == []
    assert not [g for g in store.graphs() if "graph:batch/" in str(g)]
