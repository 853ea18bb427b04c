"""The demo behind ``trails demo``: a short agent session, then an audit of it by SPARQL.

It registers a few note-keeping capabilities, runs a scripted session that
uses them on the configured store, and answers three audit questions from
what was recorded, by SPARQL alone: what happened in order, which capability
calls changed the world, and who acted on whose behalf.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trails.kernel import Context, capability, invoke
from trails.prov import Recorder
from trails.store import Store, select
from trails.store.terms import to_python

__all__ = ["DemoResult", "register_capabilities", "run_demo"]

NOTES = {
    "n1": {"text": "Renew the TLS certificate before Friday.", "tags": ["urgent", "ops"]},
    "n2": {"text": "Draft the quarterly audit summary.", "tags": ["urgent"]},
    "n3": {"text": "Order coffee beans.", "tags": ["office"]},
}

SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("notes.search", {"tag": "urgent"}),
    ("notes.read", {"note_id": "n1"}),
    ("notes.tag", {"note_id": "n1", "tag": "in-progress"}),
]

TIMELINE = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT $session ?label ?started WHERE {
  GRAPH $session { ?a prov:wasInformedBy+ $session ; rdfs:label ?label ; prov:startedAtTime ?started }
} ORDER BY ?started
"""

SIDE_EFFECTS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT $session ?capability ?input ?agent WHERE {
  GRAPH $session {
    ?a prov:qualifiedAssociation [ prov:hadPlan ?plan ; prov:agent ?agent ] ;
       prov:used [ prov:value ?input ] .
    ?plan trails:sideEffects true ; trails:capabilityId ?capability .
  }
}
"""


@dataclass(frozen=True)
class DemoResult:
    session: str
    answer: str
    timeline: list[tuple[str, str]]
    side_effects: list[tuple[str, str, str]]


def register_capabilities() -> None:
    """Register the demo's note capabilities (idempotent)."""

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
        tags = NOTES[note_id]["tags"]
        assert isinstance(tags, list)
        if tag not in tags:
            tags.append(tag)
        return {"id": note_id, "tags": list(tags)}


def run_demo(store: Store, *, principal: str = "did:local:alice") -> DemoResult:
    """Run the scripted session on ``store`` and audit it by SPARQL.

    Args:
        store: where the session is recorded.
        principal: the DID the agent acts for.

    Returns:
        The session IRI, the final answer and the audit answers.
    """
    register_capabilities()
    with Context.open(principal, recorder=Recorder(store), label="demo: urgent notes") as ctx:
        results = [invoke(cap, args, ctx=ctx) for cap, args in SCRIPT]
    answer = f"{len(results[0]['hits'])} urgent notes; first: {results[1]['text']}"
    params = {"session": ctx.session}
    timeline = [
        (str(to_python(row["label"])), str(to_python(row["started"])))
        for row in select(store, TIMELINE, params)
    ]
    side_effects = [
        (str(to_python(r["capability"])), str(to_python(r["input"])), str(r["agent"]))
        for r in select(store, SIDE_EFFECTS, params)
    ]
    return DemoResult(str(ctx.session), answer, timeline, side_effects)
