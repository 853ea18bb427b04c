"""The demo behind ``trails demo``: a ReAct agent session, then an audit of it by SPARQL.

It registers a few note-keeping capabilities and runs the ReAct planner on a
goal, with a scripted LLM by default (so it runs offline) or a real model
(``--llm anthropic:MODEL`` ...). Then it answers audit questions from what was
recorded, by SPARQL alone: what happened in order, why each capability ran
(the completion that chose it), and what the models cost. The session is also
persisted, so ``trails replay IRI --rerun --import trails.demo`` can replay it
as a regression test (importing this module registers the capabilities).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from trails.agent import Session
from trails.agent.planners import react
from trails.kernel import capability
from trails.llm import LLMClient
from trails.prov import sparql_prefixes
from trails.store import IRI, Store, select
from trails.store.terms import to_python

__all__ = ["GOAL", "SCRIPT", "DemoResult", "register_capabilities", "run_demo"]

GOAL = "Find the urgent notes, read the first one, and mark it as in progress."

NOTES: dict[str, dict[str, Any]] = {
    "n1": {"text": "Renew the TLS certificate before Friday.", "tags": ["urgent", "ops"]},
    "n2": {"text": "Draft the quarterly audit summary.", "tags": ["urgent"]},
    "n3": {"text": "Order coffee beans.", "tags": ["office"]},
}

# What the scripted model answers, turn by turn, in the ReAct format.
SCRIPT = [
    json.dumps(step)
    for step in (
        {
            "thought": "First find which notes are tagged urgent.",
            "action": "notes.search",
            "action_input": {"tag": "urgent"},
        },
        {
            "thought": "Two hits; read the first one.",
            "action": "notes.read",
            "action_input": {"note_id": "n1"},
        },
        {
            "thought": "It is about the TLS certificate; mark it as in progress.",
            "action": "notes.tag",
            "action_input": {"note_id": "n1", "tag": "in-progress"},
        },
        {
            "thought": "Done.",
            "action": "finish",
            "action_input": {},
            "final_answer": "2 urgent notes; n1 (renew the TLS certificate before Friday) "
            "is now tagged in-progress.",
        },
    )
]

TIMELINE = (
    sparql_prefixes()
    + """
SELECT $session ?label ?started WHERE {
  GRAPH $session {
    ?a prov:wasInformedBy+ $session ; rdfs:label ?label ; prov:startedAtTime ?started
  }
} ORDER BY ?started ?label
"""
)

# Plain PROV-O: each invocation was informed by the completion that chose it.
DECISIONS = (
    sparql_prefixes()
    + """
SELECT $session ?capability ?input ?model ?principal ?sideEffects WHERE {
  GRAPH $session {
    ?call prov:wasInformedBy ?completion ;
          prov:qualifiedAssociation ?assoc ;
          prov:used ?in ;
          prov:startedAtTime ?started .
    ?assoc prov:hadPlan ?plan ; prov:agent ?principal .
    ?plan rdfs:label ?capability ; trails:sideEffects ?sideEffects .
    GRAPH ?content { ?in prov:value ?input }
    ?completion a trails:LLMCompletion ; prov:wasAssociatedWith ?m .
    ?m a prov:SoftwareAgent ; rdfs:label ?model .
  }
} ORDER BY ?started
"""
)

COST = (
    sparql_prefixes()
    + """
SELECT $session ?model (COUNT(?c) AS ?calls) (SUM(?in) AS ?inputTokens)
       (SUM(?out) AS ?outputTokens) (SUM(?usd) AS ?usdKnown) WHERE {
  GRAPH $session {
    ?c a trails:LLMCompletion ; prov:wasAssociatedWith ?m ;
       trails:inputTokens ?in ; trails:outputTokens ?out .
    ?m a trails:Model ; rdfs:label ?model .
    OPTIONAL { ?c trails:costUSD ?usd }
  }
} GROUP BY $session ?model ORDER BY ?model
"""
)


@dataclass(frozen=True)
class DemoResult:
    """What the demo did and what the audit queries answered."""

    session: str
    answer: str
    stopped: str
    steps: int
    timeline: list[tuple[str, str]]
    decisions: list[dict[str, Any]]
    cost: list[dict[str, Any]]
    error: str | None = None


def register_capabilities() -> None:
    """Register the demo's note capabilities (registering again replaces them)."""

    @capability(id="notes.search", description="Search notes by tag.")
    def search(tag: str) -> dict[str, list[str]]:
        return {"hits": [nid for nid, note in NOTES.items() if tag in note["tags"]]}

    @capability(id="notes.read", description="Read one note by id.")
    def read(note_id: str) -> dict[str, str]:
        if note_id not in NOTES:
            raise KeyError(f"no note {note_id}")
        return {"id": note_id, "text": str(NOTES[note_id]["text"])}

    @capability(id="notes.tag", description="Add a tag to a note.", side_effects=True)
    def tag(note_id: str, tag: str) -> dict[str, Any]:
        if note_id not in NOTES:
            raise KeyError(f"no note {note_id}")
        tags = NOTES[note_id]["tags"]
        if tag not in tags:
            tags.append(tag)
        return {"id": note_id, "tags": list(tags)}


def _rows(store: Store, query: str, session: str) -> list[dict[str, Any]]:
    params = {"session": IRI(session)}
    return [{k: to_python(v) for k, v in row.items()} for row in select(store, query, params)]


def run_demo(
    store: Store, *, principal: str = "did:local:alice", llm: LLMClient | None = None
) -> DemoResult:
    """Run the ReAct planner on the demo goal, recorded in ``store``, and audit the run.

    Args:
        store: where the session is recorded.
        principal: the DID the agent acts for.
        llm: the model to use (default: a scripted model that plays the demo's turns).

    Returns:
        The session IRI, the planner's result and the audit answers.
    """
    register_capabilities()
    client = llm or LLMClient.mock(list(SCRIPT), model="scripted-demo")
    with Session(principal=principal, store=store) as session:
        result = react.run(
            GOAL, llm=client, session=session, tools=["notes.search", "notes.read", "notes.tag"]
        )
        iri = str(session.context.session)
        session.persist()  # opt-in: a replayable projection, for trails replay
    timeline = [(str(r["label"]), str(r["started"])) for r in _rows(store, TIMELINE, iri)]
    return DemoResult(
        session=iri,
        answer=str(result.answer),
        stopped=result.stopped,
        steps=len(result.steps),
        timeline=timeline,
        decisions=_rows(store, DECISIONS, iri),
        cost=_rows(store, COST, iri),
        error=result.error,
    )


register_capabilities()  # importing the demo makes its capabilities available (replay --import)
