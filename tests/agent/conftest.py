"""Fixtures for the planner tests: read a run back from the store with SPARQL.

Every query binds the run's IRI as a parameter; the prefixes come from the
vocabulary module, so no IRI is spelled here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from trails.kernel import capability
from trails.prov.vocab import NAMESPACES
from trails.store import IRI, Solutions, Store, to_python

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())

TRAJECTORY = (
    PREFIXES
    + """
SELECT ?run ?step ?action ?input ?output ?status ?error WHERE {
  GRAPH ?g {
    ?completion a trails:LLMCompletion ; prov:wasInformedBy ?run .
    ?inv a trails:CapabilityInvocation ;
         prov:wasInformedBy ?completion ;
         trails:stepIndex ?step ;
         trails:status ?status ;
         trails:capability ?cap ;
         prov:used ?in .
    ?cap trails:capabilityId ?action .
    ?in a trails:CapabilityInput . GRAPH ?cg1 { ?in prov:value ?input }
    OPTIONAL { ?out a trails:CapabilityOutput ; prov:wasGeneratedBy ?inv .
               GRAPH ?cg2 { ?out prov:value ?output } }
    OPTIONAL { GRAPH ?errorMessageGraph1 { ?inv trails:errorMessage ?error } }
  }
} ORDER BY ?step
"""
)

RUN = (
    PREFIXES
    + """
SELECT ?run ?cls ?strategy ?goal ?stop ?answer ?error ?parent ?session ?principal WHERE {
  GRAPH ?g {
    ?run a trails:PlanRun, ?cls ;
         trails:strategy ?strategy ;
         prov:wasInformedBy ?parent ;
         trails:inSession ?session ;
         prov:wasAssociatedWith ?agent .
    ?agent trails:principalId ?principal .
    OPTIONAL { ?run trails:stopReason ?stop }
    GRAPH ?cg1 { ?run trails:goal ?goal }
    OPTIONAL { GRAPH ?cg2 { ?run trails:answer ?answer } }
    OPTIONAL { GRAPH ?errorMessageGraph2 { ?run trails:errorMessage ?error } }
    FILTER (?cls != trails:PlanRun && ?cls != prov:Activity)
  }
}
"""
)

TERMINATION = (
    PREFIXES
    + """
SELECT ?run ?cls ?reason ?limit ?observed WHERE {
  GRAPH ?g {
    ?run trails:wasTerminatedBy ?t ; prov:wasEndedBy ?t .
    ?t a trails:Termination, prov:Entity, ?cls ; trails:reason ?reason .
    OPTIONAL { ?t trails:limit ?limit }
    OPTIONAL { ?t trails:observed ?observed }
    FILTER (?cls != trails:Termination && ?cls != prov:Entity)
  }
}
"""
)

COMPLETIONS = (
    PREFIXES
    + """
SELECT ?run ?completion ?step WHERE {
  GRAPH ?g { ?completion a trails:LLMCompletion ; prov:wasInformedBy ?run ; trails:stepIndex ?step }
} ORDER BY ?step
"""
)

ENTITIES = (
    PREFIXES
    + """
SELECT ?run ?cls ?entity ?value ?by WHERE {
  GRAPH ?g {
    ?entity a ?cls ; prov:wasGeneratedBy ?by .
    GRAPH ?cg { ?entity prov:value ?value }
    ?by prov:wasInformedBy ?run .
  }
} ORDER BY ?by
"""
)

CHILD_RUNS = (
    PREFIXES
    + """
SELECT ?run ?child WHERE { GRAPH ?g { ?child a trails:PlanRun ; prov:wasInformedBy ?run } }
"""
)

SESSION_END = (
    PREFIXES
    + """
SELECT ?session ?status WHERE {
  GRAPH ?session { ?session a trails:Session ; prov:endedAtTime ?ended ; trails:status ?status }
}
"""
)


def _rows(store: Store, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    result = store.query(query, params)
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items() if k not in params} for row in result]


class ProvReader:
    """Reads one store's planner provenance back."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def trajectory(self, run: str) -> list[dict[str, Any]]:
        """Actions, inputs, observations and status of a run's invocations, in order."""
        rows = _rows(self.store, TRAJECTORY, {"run": IRI(run)})
        for row in rows:
            row["input"] = json.loads(row["input"])
            if "output" in row:
                row["output"] = json.loads(row["output"])
        return rows

    def run(self, run: str) -> dict[str, Any]:
        rows = _rows(self.store, RUN, {"run": IRI(run)})
        assert len(rows) == 1, rows
        return rows[0]

    def termination(self, run: str) -> dict[str, Any] | None:
        rows = _rows(self.store, TERMINATION, {"run": IRI(run)})
        assert len(rows) <= 1, rows
        return rows[0] if rows else None

    def completions(self, run: str) -> list[dict[str, Any]]:
        return _rows(self.store, COMPLETIONS, {"run": IRI(run)})

    def entities(self, run: str, cls: IRI) -> list[dict[str, Any]]:
        rows = _rows(self.store, ENTITIES, {"run": IRI(run), "cls": cls})
        for row in rows:
            row["value"] = json.loads(row["value"])
        return rows

    def session_status(self, session: str) -> str | None:
        """The recorded end status of a session (None while it is open)."""
        rows = _rows(self.store, SESSION_END, {"session": IRI(session)})
        return rows[0]["status"] if rows else None

    def child_runs(self, run: str) -> list[str]:
        return [r["child"] for r in _rows(self.store, CHILD_RUNS, {"run": IRI(run)})]


@pytest.fixture
def prov(store: Store) -> ProvReader:
    """A reader over the test's store (the process default store)."""
    return ProvReader(store)


@pytest.fixture
def notes() -> Iterator[dict[str, list[Any]]]:
    """Register ``notes.search`` and ``notes.tag``; the dict records their calls."""
    calls: dict[str, list[Any]] = {"search": [], "tag": []}

    @capability(id="notes.search", description="Search notes by tag.")
    def search(ctx: Any, tag: str) -> dict[str, Any]:
        calls["search"].append(tag)
        return {"hits": ["n1", "n2"] if tag == "urgent" else []}

    @capability(id="notes.tag", description="Tag a note.", side_effects=True)
    def tag(note: str, label: str) -> str:
        calls["tag"].append((note, label))
        return f"tagged {note} {label}"

    yield calls


def turn(action: str, action_input: dict[str, Any] | None = None, **extra: Any) -> str:
    """A well-formed ReAct reply in a fenced block."""
    payload = {"thought": extra.pop("thought", f"use {action}"), "action": action}
    payload["action_input"] = action_input or {}
    payload.update(extra)
    return "```json\n" + json.dumps(payload) + "\n```"


@pytest.fixture
def reply() -> Callable[..., str]:
    """``reply(action, input, final_answer=...)``: a well-formed ReAct reply."""
    return turn


# -- graph shapes: what two runs of one script must share, whatever drove them --------

TYPES = "SELECT ?type (COUNT(?s) AS ?n) WHERE { GRAPH ?g { ?s a ?type } } GROUP BY ?type"
PREDICATES = "SELECT ?p (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?p"
LINKS = (
    PREFIXES
    + """
SELECT ?cap (COUNT(?inv) AS ?n) WHERE { GRAPH ?g {
  ?inv a trails:CapabilityInvocation ; prov:wasInformedBy ?c ; trails:capability ?p .
  ?p trails:capabilityId ?cap .
  ?c a trails:LLMCompletion .
} } GROUP BY ?cap
"""
)
RUN_TREE = (
    PREFIXES
    + """
SELECT ?kind (COUNT(?child) AS ?n) WHERE { GRAPH ?g {
  ?child prov:wasInformedBy ?parent ; a ?kind .
  ?parent a trails:PlanRun .
  FILTER (?kind IN (trails:LLMCompletion, trails:CapabilityInvocation, trails:PlanRun))
} } GROUP BY ?kind
"""
)


def _counts(store: Store, query: str) -> dict[str, int]:
    result = store.query(query)
    assert isinstance(result, Solutions)
    key = result.variables[0]
    return {str(to_python(row[key])): int(to_python(row["n"])) for row in result}


def _shape(store: Store) -> dict[str, dict[str, int]]:
    """The graph's shape: counts by type, by predicate, completion->invocation links."""
    return {q: _counts(store, text) for q, text in {
        "types": TYPES, "predicates": PREDICATES, "links": LINKS, "tree": RUN_TREE,
    }.items()}  # fmt: skip


@pytest.fixture
def shape() -> Callable[[Store], dict[str, dict[str, int]]]:
    """``shape(store)``: counts by rdf:type, by predicate, completion->invocation links."""
    return _shape
