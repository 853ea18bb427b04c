"""Trails activities -> OpenTelemetry spans, following the GenAI conventions ``trails otlp`` reads.

Shared by the live exporter (``trails.otel.exporter``, events as they are
recorded) and the store export (``trails.otel.export``, a recorded session).
Ids are derived from IRIs, so the same session always gives the same spans:
the trace id from the session IRI, each span id from its activity IRI.

A trails session becomes the trace's root span (``trails.kind = session``,
``gen_ai.operation.name = invoke_workflow``); plan runs ``invoke_agent``;
completions ``chat`` (with ``gen_ai.input.messages`` / ``gen_ai.output.messages``
when content was recorded); capability invocations ``execute_tool``; memory
operations ``create_memory`` / ``search_memory`` / ``delete_memory``. Every
span names the session in ``gen_ai.conversation.id`` and the principal in
``enduser.id``, so ingesting the spans back gives the same PROV-O shape. Children
of the session span say so (``trails.parent = session``), because the session
span itself is sent last.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

__all__ = [
    "SCOPE",
    "SpanData",
    "input_messages",
    "output_messages",
    "readable_span",
    "span_id",
    "trace_id",
]

SCOPE = InstrumentationScope("trails")


def _digest(text: str, size: int) -> int:
    value = int(hashlib.sha256(text.encode("utf-8")).hexdigest()[: size * 2], 16)
    return value or 1


def trace_id(session: str) -> int:
    """The trace id of a session (128 bits of the SHA-256 of its IRI)."""
    return _digest(session, 16)


def span_id(activity: str) -> int:
    """The span id of an activity or session (64 bits of the SHA-256 of its IRI)."""
    return _digest(activity, 8)


def _nanos(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000) * 1000


def input_messages(messages: Sequence[Mapping[str, Any]]) -> str:
    """Trails messages as ``gen_ai.input.messages`` (the current parts form), JSON."""
    return json.dumps(
        [
            {
                "role": m.get("role", "user"),
                "parts": [{"type": "text", "content": m.get("content", "")}],
            }
            for m in messages
        ],
        ensure_ascii=False,
    )


def output_messages(text: str) -> str:
    """A completion's text as ``gen_ai.output.messages``, JSON."""
    return json.dumps(
        [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": text}],
                "finish_reason": "stop",
            }
        ],
        ensure_ascii=False,
    )


@dataclass
class SpanData:
    """What a span needs, as plain values (times in UTC, ids as IRIs)."""

    session: str
    activity: str
    name: str
    started: datetime
    ended: datetime
    parent: str | None
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    kind: SpanKind = SpanKind.INTERNAL


def readable_span(data: SpanData, resource: Resource) -> ReadableSpan:
    """An SDK ``ReadableSpan`` for ``data``, ready for a span processor or exporter."""
    trace = trace_id(data.session)
    context = SpanContext(trace, span_id(data.activity), False, TraceFlags(TraceFlags.SAMPLED))
    parent = (
        SpanContext(trace, span_id(data.parent), False, TraceFlags(TraceFlags.SAMPLED))
        if data.parent
        else None
    )
    attributes = {k: v for k, v in data.attributes.items() if v is not None}
    status = Status(StatusCode.ERROR, data.error) if data.error else Status(StatusCode.OK)
    if data.error:
        attributes.setdefault("error.type", "trails.error")
    return ReadableSpan(
        name=data.name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=attributes,
        kind=data.kind,
        status=status,
        start_time=_nanos(data.started),
        end_time=_nanos(data.ended),
        instrumentation_scope=SCOPE,
    )
