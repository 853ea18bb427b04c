"""A recorded session as an OTLP/JSON trace payload (``trails export --format otlp-json``).

The session's activities are read back from its graph with SPARQL, rebuilt as
the events that recorded them and passed through the same ``SpanEmitter`` the
live exporter uses, so a session exported later and one exported as it ran
give the same spans. The payload is an ``ExportTraceServiceRequest`` in
OTLP/JSON: POST it with ``content-type: application/json`` to a receiver that
takes JSON (``trails otlp`` does; some take protobuf only).

Activities received over OTLP keep the span they came as (a ``trails:SpanRecord``):
they go out as that span again, with its own ids, name, attributes and events,
and a received session gets no session span its app never sent.
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
from trails.store.base import Store, ask, select
from trails.store.terms import IRI, Term, to_python

__all__ = ["session_otlp_json", "session_spans"]

_SESSION = """
SELECT ?g ?start ?end ?label ?status ?who WHERE { GRAPH ?g {
  ?g a trails:Session ; prov:startedAtTime ?start ; rdfs:label ?named .
  OPTIONAL { GRAPH ?labelGraph { ?g trails:sessionLabel ?given } }
  BIND(COALESCE(?given, ?named) AS ?label)
  OPTIONAL { ?g prov:endedAtTime ?end }
  OPTIONAL { ?g trails:status ?status }
  OPTIONAL { ?g prov:wasAssociatedWith/trails:principalId ?who }
} }"""
_RUNS = """
SELECT ?g ?a ?start ?end ?parent ?strategy ?goal ?stop ?error ?who WHERE { GRAPH ?g {
  ?a a trails:PlanRun ; prov:startedAtTime ?start ; trails:strategy ?strategy .
  OPTIONAL { GRAPH ?cg0 { ?a trails:goal ?goal } }
  OPTIONAL { ?a prov:endedAtTime ?end } OPTIONAL { ?a prov:wasInformedBy ?parent }
  OPTIONAL { ?a trails:stopReason ?stop } OPTIONAL { GRAPH ?errorMessageGraph1 { ?a trails:errorMessage ?error } }
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
  OPTIONAL { GRAPH ?errorMessageGraph2 { ?a trails:errorMessage ?error } } OPTIONAL { ?a trails:inputTokens ?in } OPTIONAL { ?a trails:outputTokens ?out }
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
  OPTIONAL { ?a prov:wasInformedBy ?parent } OPTIONAL { GRAPH ?errorMessageGraph3 { ?a trails:errorMessage ?error } }
  OPTIONAL { ?a prov:wasAssociatedWith/trails:principalId ?who }
} }"""
_MEMORY = """
SELECT ?g ?a ?class ?start ?end ?parent ?query ?who WHERE { GRAPH ?g {
  ?a a trails:MemoryOperation , ?class ; prov:startedAtTime ?start ; trails:inSession ?g .
  FILTER (?class IN (trails:MemoryLearn, trails:MemoryRecall, trails:MemoryForget))
  OPTIONAL { ?a prov:endedAtTime ?end } OPTIONAL { ?a prov:wasInformedBy ?parent }
  OPTIONAL { GRAPH ?recallQueryGraph4 { ?a trails:recallQuery ?query } }
  OPTIONAL { ?a prov:wasAssociatedWith/trails:principalId ?who }
} }"""
_RECORDS = """
SELECT ?g ?a ?record WHERE { GRAPH ?g {
  ?a trails:spanRecord ?r . GRAPH ?cg5 { ?r prov:value ?record }
} }"""
_SESSION_SPAN = "ASK { GRAPH ?g { ?g trails:spanId ?id } }"
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


def _events(
    store: Store, session: IRI, uncounted: set[str] | None = None
) -> tuple[list[Event], list[SpanData], bool]:
    """The session's events, its memory spans, and whether content was recorded.

    ``uncounted`` collects the completions recorded without token counts (their
    spans then say none, rather than 0).
    """
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
        if uncounted is not None and (r.get("in") is None or r.get("out") is None):
            uncounted.add(str(r["a"]))
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


def _nanos(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1_000_000) * 1000


def _received(record: Mapping[str, Any]) -> ReadableSpan:
    """A received span again, as it was sent: its ids, name, kind, status, attributes, events."""
    from opentelemetry.sdk.trace import Event as SpanEventData
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    trace = int(record["trace_id"], 16)
    flags = TraceFlags(TraceFlags.SAMPLED)
    parent = record.get("parent_id")
    code = {"ok": StatusCode.OK, "error": StatusCode.ERROR}.get(record["status"], StatusCode.UNSET)
    message = record.get("status_message") or None
    return ReadableSpan(
        name=record["name"],
        context=SpanContext(trace, int(record["span_id"], 16), False, flags),
        parent=SpanContext(trace, int(parent, 16), False, flags) if parent else None,
        resource=Resource(record.get("resource") or {}),
        attributes=record.get("attributes") or {},
        events=[
            SpanEventData(e["name"], e.get("attributes") or {}, _nanos(e["time"]))
            for e in record.get("events") or []
        ],
        kind=SpanKind(max(0, int(record.get("kind") or 0) - 1)),  # OTLP counts from unspecified
        status=Status(code, message if code == StatusCode.ERROR else None),
        start_time=_nanos(record["start"]),
        end_time=_nanos(record["end"]),
        instrumentation_scope=InstrumentationScope(record.get("scope") or ""),
    )


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
    uncounted: set[str] = set()
    events, memory, content = _events(store, IRI(session), uncounted)
    # spans received over OTLP go out as they came in: their own ids, names and values
    records = {str(r["a"]): json.loads(r["record"]) for r in _rows(store, _RECORDS, IRI(session))}
    spans = [_received(record) for record in records.values()]
    received = bool(records) and not ask(
        store, sparql_prefixes() + _SESSION_SPAN, {"g": IRI(session)}
    )
    spans.extend(readable_span(data, resource) for data in memory if data.activity not in records)
    for event in events:
        if str(getattr(event, "activity", "")) in records:
            continue
        if received and isinstance(event, SessionEnded):
            continue  # the app sent no span for the session: none is made up
        data = emitter.span_data(event, content=content)
        if data is not None:
            if data.activity in uncounted:  # unknown counts are not sent as 0
                data.attributes = {
                    k: v for k, v in data.attributes.items() if not k.startswith("gen_ai.usage.")
                }
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
