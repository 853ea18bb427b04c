"""OTLP trace payloads in and out: protobuf or JSON bytes <-> plain ``Span`` records.

The receiver gets ``ExportTraceServiceRequest`` messages (``opentelemetry-proto``)
as protobuf or as OTLP/JSON, and the mapping works on plain data; this module is
the only place that knows the wire format. OTLP/JSON differs from protobuf's
own JSON mapping in one way that matters: trace and span ids are hex, not
base64, so they are converted before ``json_format`` reads the message. Older
payloads (``instrumentationLibrarySpans``) are read too.

Every problem with a payload is an ``OTLPDecodeError`` whose message says what
was wrong, so the receiver can answer 400 with a reason.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from trails.errors import UserError

__all__ = [
    "OTLPDecodeError",
    "Span",
    "SpanEvent",
    "decode_json",
    "decode_protobuf",
    "json_body",
    "spans_to_json",
]

_STATUS = {0: "unset", 1: "ok", 2: "error"}


class OTLPDecodeError(UserError):
    """An OTLP payload that cannot be read (the message says why)."""


@dataclass(frozen=True)
class SpanEvent:
    """A span event: its name, time and attributes."""

    name: str
    time: datetime
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Span:
    """One finished OTel span, as plain data (ids as lower-case hex).

    Attributes:
        trace_id: 32 hex digits.
        span_id: 16 hex digits.
        parent_id: the parent span's id, or None for a root span.
        name: the span name.
        start: when it started (UTC).
        end: when it ended (UTC).
        status: ``unset``, ``ok`` or ``error``.
        status_message: the status description.
        attributes: span attributes (values as Python data).
        events: span events.
        resource: resource attributes (``service.name`` ...).
        scope: the instrumentation scope's name.
        kind: the span kind number (0 unspecified ... 5 consumer).
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: datetime
    end: datetime
    status: str = "unset"
    status_message: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""
    kind: int = 0


def _time(nanos: int, what: str) -> datetime:
    if nanos <= 0:
        raise OTLPDecodeError(f"{what} is missing or zero")
    return datetime.fromtimestamp(nanos / 1e9, tz=UTC)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(v.bytes_value).decode("ascii")
    return getattr(v, kind)


def _attrs(kvs: Iterable[Any]) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


def _hex(raw: bytes, size: int, what: str) -> str:
    if len(raw) != size or not any(raw):
        raise OTLPDecodeError(f"{what} must be {size} bytes and not all zero, got {raw.hex()!r}")
    return raw.hex()


def _spans(request: Any) -> list[Span]:
    out: list[Span] = []
    for rs in request.resource_spans:
        resource = _attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            scope = ss.scope.name
            for s in ss.spans:
                where = f"span {s.name!r}"
                trace_id = _hex(s.trace_id, 16, f"{where}: traceId")
                span_id = _hex(s.span_id, 8, f"{where}: spanId")
                parent = (
                    _hex(s.parent_span_id, 8, f"{where}: parentSpanId")
                    if s.parent_span_id
                    else None
                )
                start = _time(s.start_time_unix_nano, f"{where}: startTimeUnixNano")
                end = _time(s.end_time_unix_nano, f"{where}: endTimeUnixNano")
                if end < start:
                    raise OTLPDecodeError(f"{where} ends before it starts")
                out.append(
                    Span(
                        trace_id=trace_id,
                        span_id=span_id,
                        parent_id=parent,
                        name=s.name,
                        start=start,
                        end=end,
                        status=_STATUS.get(s.status.code, "unset"),
                        status_message=s.status.message,
                        attributes=_attrs(s.attributes),
                        events=tuple(
                            SpanEvent(
                                e.name,
                                _time(
                                    e.time_unix_nano or s.end_time_unix_nano, f"{where}: event time"
                                ),
                                _attrs(e.attributes),
                            )
                            for e in s.events
                        ),
                        resource=resource,
                        scope=scope,
                        kind=int(s.kind),
                    )
                )
    return out


def _request_class() -> Any:
    try:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise UserError(
            "the OTLP receiver needs opentelemetry-proto: pip install 'trails[otel]'"
        ) from exc
    return ExportTraceServiceRequest


def decode_protobuf(body: bytes) -> list[Span]:
    """The spans of an OTLP/HTTP protobuf ``ExportTraceServiceRequest``.

    Args:
        body: the request body.

    Returns:
        The spans, in payload order.

    Raises:
        OTLPDecodeError: the body is not such a message, or a span is malformed.
    """
    from google.protobuf.message import DecodeError

    request = _request_class()()
    try:
        request.ParseFromString(body)
    except (DecodeError, ValueError) as exc:
        raise OTLPDecodeError(f"not an OTLP ExportTraceServiceRequest (protobuf): {exc}") from exc
    return _spans(request)


_ID_KEYS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}
_RENAMED = {"instrumentationLibrarySpans": "scopeSpans", "instrumentationLibrary": "scope"}


def _ids_to_base64(node: Any) -> Any:
    """Turn OTLP/JSON hex ids into the base64 protobuf's JSON mapping expects."""
    if isinstance(node, list):
        return [_ids_to_base64(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        name = str(_RENAMED.get(key, key))
        if key in _ID_KEYS and isinstance(value, str):
            if value == "":
                continue
            try:
                raw = bytes.fromhex(value)
            except ValueError:
                raise OTLPDecodeError(
                    f"{key} {value!r} is not hex (OTLP/JSON ids are hex)"
                ) from None
            out[name] = base64.b64encode(raw).decode("ascii")
        else:
            out[name] = _ids_to_base64(value)
    return out


def decode_json(body: bytes) -> list[Span]:
    """The spans of an OTLP/JSON ``ExportTraceServiceRequest``.

    Args:
        body: the request body (UTF-8 JSON).

    Returns:
        The spans, in payload order.

    Raises:
        OTLPDecodeError: not JSON, not the message's shape, or a malformed span.
    """
    from google.protobuf import json_format

    data = json_body(body)
    if not isinstance(data, dict):
        raise OTLPDecodeError("an OTLP/JSON request is a JSON object with resourceSpans")
    request = _request_class()()
    try:
        json_format.ParseDict(_ids_to_base64(data), request, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise OTLPDecodeError(f"not an OTLP ExportTraceServiceRequest (JSON): {exc}") from exc
    return _spans(request)


MAX_DEPTH = 64
"""How deeply an OTLP/JSON body may nest (an attribute's value nests a few levels; a
body nested deeper is refused before anything walks it)."""


def json_body(body: bytes) -> Any:
    """The JSON value of an OTLP/JSON body, refused when it is not JSON or nests deeper
    than ``MAX_DEPTH`` (arrays and objects), so no reader recurses without bound.

    Raises:
        OTLPDecodeError: not UTF-8 JSON, or nested too deeply.
    """
    too_deep = OTLPDecodeError(f"the JSON body nests deeper than {MAX_DEPTH} levels")
    try:
        data = json.loads(body.decode("utf-8"))
    except RecursionError:  # the parser's own bound, far beyond ours
        raise too_deep from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise OTLPDecodeError(f"not JSON: {exc}") from exc
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:  # iterative: walking the value must not recurse either
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise too_deep
        children = list(node.values()) if isinstance(node, dict) else node
        if isinstance(children, list):
            stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return data


def _json_ids(node: Any) -> Any:
    if isinstance(node, list):
        return [_json_ids(x) for x in node]
    if not isinstance(node, dict):
        return node
    return {
        k: base64.b64decode(v).hex() if k in _ID_KEYS and isinstance(v, str) else _json_ids(v)
        for k, v in node.items()
    }


def spans_to_json(request: Any) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` as OTLP/JSON (hex ids, camelCase names).

    Args:
        request: the protobuf message.

    Returns:
        The JSON object (``json.dumps`` it to send or store).
    """
    from google.protobuf import json_format

    data: Mapping[str, Any] = json_format.MessageToDict(request)
    result: dict[str, Any] = _json_ids(dict(data))
    return result
