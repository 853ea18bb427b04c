"""OTLP log payloads in: protobuf or JSON bytes -> the GenAI log events trails records.

Instrumentations send message content as log records rather than on the span:
``opentelemetry-instrumentation-openai-v2`` in its ``EVENT_ONLY`` content mode
sends one ``gen_ai.client.inference.operation.details`` record per call (the
input and output messages as attributes), and the semantic conventions 1.30
name one record per message (``gen_ai.system.message``, ``gen_ai.user.message``,
``gen_ai.assistant.message``, ``gen_ai.tool.message``, ``gen_ai.choice``, the
message in the body). Each carries the trace and span id of the span it
belongs to. ``decode_logs_protobuf`` / ``decode_logs_json`` read an
``ExportLogsServiceRequest`` into ``LogRecord`` values; ``genai_events`` keeps
the records that are GenAI events tied to a span and turns each into the
``SpanEvent`` the span would have carried, so the conventions read content the
same way whichever signal brought it. Every other record is ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from trails.errors import UserError
from trails.otel.otlp import OTLPDecodeError, SpanEvent, _attrs, _ids_to_base64, _value

__all__ = [
    "GENAI_LOG_EVENTS",
    "LOG_MARK",
    "LogRecord",
    "decode_logs_json",
    "decode_logs_protobuf",
    "genai_events",
]

GENAI_LOG_EVENTS = frozenset(
    {
        "gen_ai.client.inference.operation.details",
        "gen_ai.system.message",
        "gen_ai.user.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
        "gen_ai.choice",
    }
)
"""The log events recorded as content of their span; every other log record is ignored."""

LOG_MARK = "trails.log_record"
"""Set on the span events made of log records: the span as sent never had them."""


@dataclass(frozen=True)
class LogRecord:
    """One OTLP log record, as plain data (ids as lower-case hex, None when absent).

    Attributes:
        trace_id: the trace of the span it belongs to.
        span_id: the span it belongs to.
        event_name: the record's ``event_name``, else its ``event.name`` attribute.
        time: when it happened (UTC; the observed time when the record has none).
        attributes: the record's attributes.
        body: the body, as Python data (None when it has none).
        resource: resource attributes.
    """

    trace_id: str | None
    span_id: str | None
    event_name: str
    time: datetime
    attributes: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    resource: dict[str, Any] = field(default_factory=dict)


def _request_class() -> Any:
    try:
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
            ExportLogsServiceRequest,
        )
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise UserError(
            "the OTLP receiver needs opentelemetry-proto: pip install 'trails[otel]'"
        ) from exc
    return ExportLogsServiceRequest


def _id(raw: bytes, size: int) -> str | None:
    """A hex id, or None for an absent or invalid one (such a record ties to no span)."""
    return raw.hex() if len(raw) == size and any(raw) else None


def _records(request: Any) -> list[LogRecord]:
    out: list[LogRecord] = []
    for rl in request.resource_logs:
        resource = _attrs(rl.resource.attributes)
        for sl in rl.scope_logs:
            for r in sl.log_records:
                attributes = _attrs(r.attributes)
                name = r.event_name or str(attributes.get("event.name") or "")
                nanos = r.time_unix_nano or r.observed_time_unix_nano
                out.append(
                    LogRecord(
                        trace_id=_id(r.trace_id, 16),
                        span_id=_id(r.span_id, 8),
                        event_name=name,
                        time=datetime.fromtimestamp(nanos / 1e9, tz=UTC)
                        if nanos
                        else datetime.now(UTC),
                        attributes=attributes,
                        body=_value(r.body) if r.HasField("body") else None,
                        resource=resource,
                    )
                )
    return out


def decode_logs_protobuf(body: bytes) -> list[LogRecord]:
    """The log records of an OTLP/HTTP protobuf ``ExportLogsServiceRequest``.

    Raises:
        OTLPDecodeError: the body is not such a message.
    """
    from google.protobuf.message import DecodeError

    request = _request_class()()
    try:
        request.ParseFromString(body)
    except (DecodeError, ValueError) as exc:
        raise OTLPDecodeError(f"not an OTLP ExportLogsServiceRequest (protobuf): {exc}") from exc
    return _records(request)


def decode_logs_json(body: bytes) -> list[LogRecord]:
    """The log records of an OTLP/JSON ``ExportLogsServiceRequest`` (hex ids).

    Raises:
        OTLPDecodeError: not JSON, or not the message's shape.
    """
    from google.protobuf import json_format

    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise OTLPDecodeError(f"not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise OTLPDecodeError("an OTLP/JSON logs request is a JSON object with resourceLogs")
    request = _request_class()()
    try:
        json_format.ParseDict(_ids_to_base64(data), request, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise OTLPDecodeError(f"not an OTLP ExportLogsServiceRequest (JSON): {exc}") from exc
    return _records(request)


def genai_events(records: Iterable[LogRecord]) -> list[tuple[str, str, SpanEvent]]:
    """The GenAI records tied to a span, as ``(trace id, span id, span event)``.

    The event carries the record's attributes, and its body (the message of the
    1.30 per-message events) under ``gen_ai.event.body``.
    """
    out: list[tuple[str, str, SpanEvent]] = []
    for r in records:
        if r.event_name not in GENAI_LOG_EVENTS or r.trace_id is None or r.span_id is None:
            continue
        attributes = {**r.attributes, LOG_MARK: True}
        if r.body is not None:
            attributes["gen_ai.event.body"] = r.body
        out.append((r.trace_id, r.span_id, SpanEvent(r.event_name, r.time, attributes)))
    return out
