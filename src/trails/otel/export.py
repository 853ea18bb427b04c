"""A recorded session as an OTLP/JSON trace payload (``trails export --format otlp-json``).

The session's activities are read back from its graph with SPARQL, rebuilt as
the events that recorded them and passed through the same ``SpanEmitter`` the
live exporter uses, so a session exported later and one exported as it ran
give the same spans. The payload is an ``ExportTraceServiceRequest`` in
OTLP/JSON: POST it to any OTLP/HTTP receiver (``trails otlp`` included) with
``content-type: application/json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan

from trails.otel.exporter import SpanEmitter
from trails.otel.otlp import spans_to_json
from trails.otel.spans import SpanData, readable_span
from trails.prov.events import (
    CapabilityInvoked,
    Event,
    LLMCompleted,
    PlanRunEnded,
    PlanRunStarted,
    SessionEnded,
    SessionStarted,
)
from trails.prov.vocab import sparql_prefixes
from trails.store.base import Store, select
from trails.store.terms import IRI, Term, to_python

__all__ = ["session_otlp_json", "session_spans"]

_SESSION = """
SELECT ?g ?start ?end ?label ?status ?who WHERE { GRAPH ?g {
  ?g a trails:Session ; prov:startedAtTime ?start ; rdfs:label ?label .
  OPTIONAL { ?g prov:endedAtTime ?end }
  OPTIONAL { ?g trails:status ?status }
  OPTIONAL { ?g prov:wasAssociatedWith/trails:principalId ?who }
} }"""
_RUNS = """
SELECT ?g ?a ?start ?end ?parent ?strategy ?goal ?stop ?error ?who WHERE { GRAPH ?g {
  ?a a trails:PlanRun ; prov:startedAtTime ?start ; trails:strategy ?strategy .
  OPTIONAL { GRAPH ?cg0 { ?a trails:goal ?goal } }
  OPTIONAL { ?a prov:endedAtTime ?end } OPTIONAL { ?a prov:wasInformedBy ?parent }
  OPTIONAL { ?a trails:stopReason ?stop } OPTIONAL { ?a trails:errorMessage ?error }
  OPTIONAL { ?a prov:wasAssociatedWith/trails:principalId ?who }
} }"""
_COMPLETIONS = """
SELECT ?g ?a ?start ?end ?parent ?provider ?model ?prompt ?text ?in ?out ?cr ?cw ?status ?error
       ?hash ?rid ?who WHERE { GRAPH ?g {
  ?a a trails:LLMCompletion ; prov:startedAtTime ?start ; prov:endedAtTime ?end ;
     trails:status ?status ; trails:requestHash ?hash ; prov:used ?p .
  ?p a trails:Prompt . OPTIONAL { GRAPH ?cg1 { ?p prov:value ?prompt } }
  ?a prov:wasAssociatedWith ?m . ?m a trails:Model ; trails:provider ?provider ; trails:modelId ?model .
  OPTIONAL { ?a prov:wasAssociatedWith/trails:principalId ?who }
  OPTIONAL { ?c a trails:Completion ; prov:wasGeneratedBy ?a . GRAPH ?cg2 { ?c prov:value ?text } }
  OPTIONAL { ?a prov:wasInformedBy ?parent  # the caller, not the failover that led here
             FILTER NOT EXISTS { ?parent a ?after FILTER(?after IN (trails:ProviderFallback,
                                                                     trails:LLMCompletion)) } }
  OPTIONAL { ?a trails:errorMessage ?error } OPTIONAL { ?a trails:inputTokens ?in } OPTIONAL { ?a trails:outputTokens ?out }
  OPTIONAL { ?a trails:cacheReadTokens ?cr } OPTIONAL { ?a trails:cacheWriteTokens ?cw }
  OPTIONAL { ?a trails:requestId ?rid }
} }"""
_INVOCATIONS = """
SELECT ?g ?a ?start ?end ?parent ?cap ?description ?input ?output ?status ?error ?who WHERE { GRAPH ?g {
  ?a a trails:CapabilityInvocation ; prov:startedAtTime ?start ; prov:endedAtTime ?end ;
     trails:status ?status ; trails:capability ?c .
  ?c trails:capabilityId ?cap . OPTIONAL { ?c rdfs:comment ?description }
  OPTIONAL { ?a prov:used ?i . ?i a trails:CapabilityInput . GRAPH ?cg3 { ?i prov:value ?input } }
  OPTIONAL { ?o prov:wasGeneratedBy ?a ; a trails:CapabilityOutput . GRAPH ?cg4 { ?o prov:value ?output } }
  OPTIONAL { ?a prov:wasInformedBy ?parent } OPTIONAL { ?a trails:errorMessage ?error }
  OPTIONAL { ?a prov:wasAssociatedWith/trails:principalId ?who }
} }"""
_MEMORY = """
SELECT ?g ?a ?class ?start ?end ?parent ?query ?who WHERE { GRAPH ?g {
  ?a a trails:MemoryOperation , ?class ; prov:startedAtTime ?start ; trails:inSession ?g .
  FILTER (?class IN (trails:MemoryLearn, trails:MemoryRecall, trails:MemoryForget))
  OPTIONAL { ?a prov:endedAtTime ?end } OPTIONAL { ?a prov:wasInformedBy ?parent }
  OPTIONAL { ?a trails:recallQuery ?query }
  OPTIONAL { ?a prov:wasAssociatedWith/trails:principalId ?who }
} }"""
_MEMORY_OPERATIONS = {
    "MemoryLearn": "create_memory",
    "MemoryRecall": "search_memory",
    "MemoryForget": "delete_memory",
}


def _rows(store: Store, sparql: str, session: IRI) -> list[dict[str, Any]]:
    result: Iterable[Mapping[str, Term]] = select(store, sparql_prefixes() + sparql, {"g": session})
    return [{k: to_python(v) for k, v in row.items()} for row in result]


def _json(text: Any) -> Any:
    return json.loads(text) if isinstance(text, str) else None


def _events(store: Store, session: IRI) -> tuple[list[Event], list[SpanData], bool]:
    found = _rows(store, _SESSION, session)
    if not found:
        from trails.errors import SessionError

        raise SessionError(f"{session} is not a recorded session")
    head = found[0]
    s = str(session)
    principal = str(head.get("who") or "did:local:anonymous")
    events: list[Event] = [
        SessionStarted(session=s, principal=principal, started=head["start"], label=head["label"])
    ]
    ends: list[Event] = []
    content = True
    for r in _rows(store, _RUNS, session):
        parent = str(r["parent"]) if r.get("parent") and str(r["parent"]) != s else None
        events.append(
            PlanRunStarted(
                session=s,
                activity=str(r["a"]),
                parent=parent,
                principal=str(r.get("who") or principal),
                strategy=r["strategy"],
                goal=r["goal"],
                started=r["start"],
            )
        )
        ends.append(
            PlanRunEnded(
                session=s,
                activity=str(r["a"]),
                ended=r.get("end") or r["start"],
                stop_reason=str(r.get("stop") or "goal_achieved"),
                error=r.get("error"),
            )
        )
    for r in _rows(store, _COMPLETIONS, session):
        prompt = _json(r.get("prompt")) or {}
        content = content and r.get("prompt") is not None
        events.append(
            LLMCompleted(
                session=s,
                activity=str(r["a"]),
                parent=str(r["parent"]) if r.get("parent") else None,
                principal=str(r.get("who") or principal),
                provider=r["provider"],
                model=r["model"],
                started=r["start"],
                ended=r["end"],
                messages=list(prompt.get("messages", [])),
                params=dict(prompt.get("params", {})),
                request_hash=r["hash"],
                text=r.get("text"),
                input_tokens=int(r.get("in") or 0),
                output_tokens=int(r.get("out") or 0),
                cache_read_tokens=int(r.get("cr") or 0),
                cache_write_tokens=int(r.get("cw") or 0),
                request_id=r.get("rid"),
                status="ok" if r["status"] == "ok" else "error",
                error=r.get("error"),
            )
        )
    for r in _rows(store, _INVOCATIONS, session):
        events.append(
            CapabilityInvoked(
                session=s,
                activity=str(r["a"]),
                parent=str(r["parent"]) if r.get("parent") else None,
                principal=str(r.get("who") or principal),
                capability_id=r["cap"],
                description=r.get("description") or "",
                started=r["start"],
                ended=r["end"],
                status=r["status"],
                inputs=_json(r.get("input")),
                output=_json(r.get("output")),
                error=r.get("error"),
            )
        )
    memory: list[SpanData] = []
    for r in _rows(store, _MEMORY, session):
        op = _MEMORY_OPERATIONS[str(r["class"]).rsplit("#", 1)[-1]]
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": op,
            "gen_ai.memory.query": r.get("query"),
            "enduser.id": str(r.get("who") or principal),
            "gen_ai.conversation.id": s.rsplit(":", 1)[-1],
        }
        parent = str(r["parent"]) if r.get("parent") else None
        if parent is None:
            attrs["trails.parent"] = "session"
        memory.append(
            SpanData(s, str(r["a"]), op, r["start"], r.get("end") or r["start"], parent or s, attrs)
        )
    ended: datetime | None = head.get("end")
    if ended is not None:
        ends.append(SessionEnded(session=s, ended=ended, status=str(head.get("status") or "ok")))
    return [*events, *ends], memory, content


class _Collect:
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def session_spans(
    store: Store, session: str, *, resource: Resource | None = None
) -> list[ReadableSpan]:
    """The spans of a recorded session (the session span last, when it has ended).

    Args:
        store: the store.
        session: the session IRI.
        resource: the OTel resource of the spans (default ``service.name = trails``).

    Returns:
        SDK ``ReadableSpan`` objects.

    Raises:
        SessionError: ``session`` is not a recorded session.
    """
    resource = resource or Resource.create({"service.name": "trails"})
    collect = _Collect()
    emitter = SpanEmitter(collect, resource=resource)  # type: ignore[arg-type]
    events, memory, content = _events(store, IRI(session))
    spans = [readable_span(data, resource) for data in memory]
    for event in events:
        data = emitter.span_data(event, content=content)
        if data is not None:
            spans.append(readable_span(data, resource))
    return spans


def session_otlp_json(store: Store, sessions: Iterable[str]) -> dict[str, Any]:
    """An OTLP/JSON ``ExportTraceServiceRequest`` holding the spans of ``sessions``.

    Args:
        store: the store.
        sessions: session IRIs.

    Returns:
        The JSON object.
    """
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans: list[ReadableSpan] = []
    for session in sessions:
        spans.extend(session_spans(store, session))
    return spans_to_json(encode_spans(spans))
