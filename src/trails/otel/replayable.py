"""A received session made replayable: its projection, written just before it ends.

``Session.replay`` rebuilds a session from its ``trails:SessionProjection``
(``trails.prov.projection``), which native sessions write when persisted. A
received session has no live ``Session`` object to persist, so when it ends
the ingester builds the projection from what was recorded: the history is
the conversation the last completion saw (its prompt's messages and its
reply), the invocation envelopes are the tool executions, the completion
references are every completion. It is written before ``SessionEnded``, so the
seal covers it. Sessions whose completions carried no content get a
projection with an empty history (their invocations and completions are
still listed).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from trails.agent.context import estimate_tokens
from trails.prov.iri import Minter
from trails.prov.projection import (
    ProjectedEntry,
    ProjectedInvocation,
    Projection,
    projection_quads,
    recorded_completion_refs,
    stored_projection_quads,
)
from trails.prov.vocab import sparql_prefixes
from trails.store.base import Store, select
from trails.store.terms import IRI, Quad, to_python

__all__ = ["projection_of"]

_ROLES = ("system", "user", "assistant")

_LAST_EXCHANGE = """
SELECT ?g ?prompt ?text ?started WHERE { GRAPH ?g {
  ?a a trails:LLMCompletion ; prov:startedAtTime ?started ; prov:used ?p .
  ?p a trails:Prompt . GRAPH ?cg1 { ?p prov:value ?prompt }
  OPTIONAL { ?c a trails:Completion ; prov:wasGeneratedBy ?a . GRAPH ?cg2 { ?c prov:value ?text } }
} } ORDER BY DESC(?started) LIMIT 1"""
_INVOCATIONS = """
SELECT ?g ?a ?cap ?args ?argsHash ?result ?resultHash ?status ?error ?start ?end WHERE { GRAPH ?g {
  ?a a trails:CapabilityInvocation ; trails:capability/trails:capabilityId ?cap ;
     trails:status ?status ; prov:startedAtTime ?start ; prov:endedAtTime ?end ; prov:used ?i .
  ?i a trails:CapabilityInput ; trails:sha256 ?argsHash .
  OPTIONAL { GRAPH ?cg3 { ?i prov:value ?args } }
  OPTIONAL { ?o prov:wasGeneratedBy ?a ; a trails:CapabilityOutput ; trails:sha256 ?resultHash .
             OPTIONAL { GRAPH ?cg4 { ?o prov:value ?result } } }
  OPTIONAL { GRAPH ?errorMessageGraph1 { ?a trails:errorMessage ?error } }
} } ORDER BY ?start ?a"""
_PRINCIPAL = """
SELECT ?g ?who WHERE { GRAPH ?g { ?g prov:wasAssociatedWith/trails:principalId ?who } } LIMIT 1"""


def _rows(store: Store, sparql: str, session: IRI) -> list[dict[str, Any]]:
    found = select(store, sparql_prefixes() + sparql, {"g": session})
    return [{k: to_python(v) for k, v in row.items()} for row in found]


def _loads(text: Any) -> Any:
    return json.loads(text) if isinstance(text, str) else None


def projection_of(
    store: Store, session: str, minter: Minter, at: datetime
) -> tuple[list[Quad], list[Quad]]:
    """The quads of a received session's projection, and those of an earlier one to replace.

    Args:
        store: the store holding the session's graph.
        session: the session IRI.
        minter: mints the principal's IRI.
        at: when the projection is made.

    Returns:
        ``(add, remove)`` for one ``Store.write``.
    """
    graph = IRI.trusted(session)
    history: list[ProjectedEntry] = []
    for row in _rows(store, _LAST_EXCHANGE, graph):
        messages = (_loads(row.get("prompt")) or {}).get("messages", [])
        for m in messages:
            content = str(m.get("content", ""))
            role = str(m.get("role", "user"))
            role = role if role in _ROLES else "user"  # a tool result is told to the model as input
            history.append(ProjectedEntry(role, content, estimate_tokens(content), False))
        if row.get("text") is not None:
            text = str(row["text"])
            history.append(ProjectedEntry("assistant", text, estimate_tokens(text), False))
    invocations = tuple(
        ProjectedInvocation(
            capability=str(r["cap"]),
            args=_loads(r.get("args")),
            result=_loads(r.get("result")),
            args_sha256=str(r["argsHash"]),
            result_sha256=str(r["resultHash"]) if r.get("resultHash") else None,
            status=str(r["status"]),
            activity=str(r["a"]),
            error=r.get("error"),
            started=r["start"],
            ended=r["end"],
        )
        for r in _rows(store, _INVOCATIONS, graph)
    )
    who = _rows(store, _PRINCIPAL, graph)
    projection = Projection(
        session=session,
        session_id=minter.session_id(session),
        principal=str(who[0]["who"]) if who else "did:local:anonymous",
        strategy=None,
        budget={},
        metadata={"source": "otlp"},
        card=None,
        window_tokens=max(32_000, sum(e.tokens for e in history)),
        pin_head=0,
        history=tuple(history),
        invocations=invocations,
        completions=tuple(recorded_completion_refs(store, session)),
    )
    add = projection_quads(projection, graph, minter, at)
    return add, stored_projection_quads(store, graph, session)
