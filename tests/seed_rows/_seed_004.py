"""Helpers for the seed 004 (reactree) row tests: the seed's terraform capabilities, scripted
agent-node turns, an observer that keeps what it hears, and SPARQL reads of what a tree run
recorded (every value bound as a parameter)."""

from __future__ import annotations

import json
from typing import Any

from trails import capability
from trails.agent import Session
from trails.agent.planners.behaviour_tree import (
    Action,
)
from trails.kernel import ObserverBase
from trails.llm import LLMClient
from trails.prov.vocab import NAMESPACES
from trails.store import IRI, Solutions, Store, to_python

__all__ = [
    "ANALYZE",
    "APPLY",
    "CALLS",
    "COMPLETIONS",
    "DECISIONS",
    "FIX",
    "NODES",
    "PLAN_DOCUMENT",
    "PREFIXES",
    "REACTREE",
    "RUN",
    "SAID",
    "VERIFY",
    "Heard",
    "alice",
    "finish",
    "no_model",
    "nodes",
    "register_tf",
    "rows",
    "session_of",
    "turn",
]

REACTREE = "docs/agent.md#coming-from-reactree"

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())

NODES = (
    PREFIXES
    + """
SELECT ?run ?id ?kind ?outcome WHERE { GRAPH ?g {
  ?node a trails:TreeNode ; trails:inRun ?run ; trails:nodeId ?id ;
        trails:nodeKind ?kind ; trails:nodeOutcome ?outcome ; prov:startedAtTime ?t .
} } ORDER BY ?t ?id
"""
)

CALLS = (
    PREFIXES
    + """
SELECT ?session ?capability ?status WHERE { GRAPH ?session {
  ?inv a trails:CapabilityInvocation ; trails:status ?status ; prov:startedAtTime ?t ;
       trails:capability/trails:capabilityId ?capability .
} } ORDER BY ?t
"""
)

DECISIONS = (
    PREFIXES
    + """
SELECT ?session ?capability ?decision ?reason WHERE { GRAPH ?session {
  ?d a trails:PolicyDecision ; trails:capabilityId ?capability ; trails:decision ?decision ;
     prov:startedAtTime ?t .
  OPTIONAL { ?d trails:reason ?reason }
} } ORDER BY ?t
"""
)

COMPLETIONS = (
    PREFIXES
    + """
SELECT ?run ?model ?text WHERE { GRAPH ?g {
  ?c a trails:LLMCompletion ; prov:wasInformedBy ?run ; trails:stepIndex ?step ;
     prov:wasAssociatedWith ?m .
  ?m a trails:Model ; trails:modelId ?model .
} } ORDER BY ?step
"""
)

RUN = (
    PREFIXES
    + """
SELECT ?run ?stop ?parent WHERE { GRAPH ?g {
  ?run a trails:BehaviourTreePlan ; trails:stopReason ?stop ; prov:wasInformedBy ?parent .
} }
"""
)

#: What each of a run's completions said (a reflection's too), in the order they ended.
SAID = (
    PREFIXES
    + """
SELECT ?run ?text WHERE { GRAPH ?g {
  ?c a trails:LLMCompletion ; prov:wasInformedBy+ ?run .
  ?out a trails:Completion ; prov:wasGeneratedBy ?c ; prov:generatedAtTime ?t .
  GRAPH ?cg { ?out prov:value ?text }
} } ORDER BY ?t
"""
)

PLAN_DOCUMENT = (
    PREFIXES
    + """
SELECT ?run ?value WHERE { GRAPH ?g {
  ?doc a trails:PlanDocument ; prov:wasGeneratedBy ?by . GRAPH ?cg { ?doc prov:value ?value }
  FILTER (?by = ?run || EXISTS { ?by prov:wasInformedBy ?run })
} }
"""
)


def rows(store: Store, query: str, **params: str) -> list[dict[str, Any]]:
    """The query's rows as Python values, each parameter bound to an IRI (and left out)."""
    result = store.query(query, {k: IRI(v) for k, v in params.items()})
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items() if k not in params} for row in result]


def session_of(store: Store, run: str | None) -> str:
    """The session graph a run was recorded in."""
    found = store.query(
        "SELECT ?run ?g WHERE { GRAPH ?g { ?run ?p ?o } } LIMIT 1", {"run": IRI(str(run))}
    )
    assert isinstance(found, Solutions)
    return str(to_python(next(iter(found))["g"]))


def nodes(store: Store, run: str | None) -> list[tuple[str, str, str]]:
    assert run is not None
    return sorted((r["id"], r["kind"], r["outcome"]) for r in rows(store, NODES, run=run))


def turn(action: str, action_input: dict[str, Any] | None = None, **extra: Any) -> str:
    """One well-formed agent-node reply."""
    return json.dumps(
        {"thought": "t", "action": action, "action_input": action_input or {}} | extra
    )


def finish(answer: str) -> str:
    return turn("finish", final_answer=answer)


def alice() -> Session:
    return Session(principal="did:local:alice")


def no_model() -> LLMClient:
    """The client of a given tree of actions: it is never asked."""
    return LLMClient.mock(response=[])


def register_tf() -> dict[str, int]:
    """Register the terraform capabilities of the seed's examples; the dict counts their
    calls (the test's registry is restored after it)."""
    calls = {"analyze": 0, "fix": 0, "verify": 0, "apply": 0}

    @capability(id="tf.analyze", description="Analyze the terraform configuration.")
    def analyze() -> str:
        calls["analyze"] += 1
        return "analyzed main.tf"

    @capability(id="tf.fix", description="Fix the configuration.")
    def fix() -> str:
        calls["fix"] += 1
        raise ValueError("cannot fix")

    @capability(id="tf.verify", description="Verify the configuration.")
    def verify() -> str:
        calls["verify"] += 1
        return "verified"

    @capability(id="tf.apply", description="Apply the plan.", side_effects=True)
    def apply() -> str:
        calls["apply"] += 1
        return "applied"

    @capability(id="tf.done", description="Report and end.", terminal=True)
    def done() -> str:
        return "all done"

    return calls


ANALYZE, FIX, VERIFY, APPLY = (Action(f"tf.{n}") for n in ("analyze", "fix", "verify", "apply"))


class Heard(ObserverBase):
    """Keeps every event it hears."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def on_event(self, event: Any) -> None:
        self.events.append(event)

    @property
    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def nodes(self) -> list[tuple[str, str, int]]:
        """Each ``node_end``: the node, its outcome and the iteration it ended in."""
        return [
            (e.data["node_id"], e.data["outcome"], e.data["iteration"])
            for e in self.events
            if e.kind == "node_end"
        ]
