"""``POST /v1/logs``: the OTLP/HTTP log receiver beside ``/v1/traces``.

Instrumentations send message content as log records (openai-v2's
``EVENT_ONLY`` mode, the semantic conventions 1.30 message events), so a
receiver of spans alone loses prompts, completions and tool-call ids. This
route takes ``ExportLogsServiceRequest`` payloads (protobuf or JSON, gzip or
not) and hands them to the same ingester as the spans
(``Ingestor.ingest_logs``), which records GenAI records as content of their
span's completion, whichever arrives first. Every other record is ignored and
answered 200, so an app exporting all its logs here never sees an error for
them. Status codes, limits and tokens are those of ``/v1/traces``; records
refused (their session has ended and was sealed) are counted in the
response's ``partial_success``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from trails.otel.ingest import IngestResult
from trails.otel.logs import LogRecord, decode_logs_json, decode_logs_protobuf
from trails.server.traces import (
    _PROTOBUF,
    DEFAULT_MAX_BYTES,
    export_response,
    otlp_receiver,
)
from trails.server.write_tokens import WriteTokens

__all__ = ["LOGS_PATH", "LogIngestor", "logs_route", "mount_logs"]

LOGS_PATH = "/v1/logs"
log = logging.getLogger(__name__)


class LogIngestor(Protocol):
    """What records log records: the ingester, or the worker pool holding the store."""

    def ingest_logs(
        self, records: list[LogRecord], *, principal: str | None = None
    ) -> IngestResult: ...


def _response(kind: str, result: IngestResult) -> Response:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
        ExportLogsServiceResponse,
    )

    return export_response(
        kind, result, "rejectedLogRecords", ExportLogsServiceResponse, "rejected_log_records"
    )


def logs_route(
    ingestor: LogIngestor | Callable[[], Any],
    *,
    tokens: WriteTokens | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    path: str = LOGS_PATH,
) -> Route:
    """The ``POST /v1/logs`` route over ``ingestor``.

    Args:
        ingestor: records the log records (``ingest_logs``), or a function making
            it on the first request (the same one the traces route uses).
        tokens: bearer tokens with their write scope; None accepts any request
            (loopback without a tokens file only).
        max_bytes: largest body accepted, before and after decompression.
        path: where to mount it.

    Returns:
        A Starlette route.
    """
    made: list[LogIngestor] = [] if callable(ingestor) else [ingestor]
    lock = threading.Lock()

    def ingest(records: list[LogRecord], principal: str | None) -> IngestResult:
        with lock:
            if not made:
                assert callable(ingestor)
                made.append(ingestor())
        return made[0].ingest_logs(records, principal=principal)

    def decode(kind: str, body: bytes) -> list[LogRecord]:
        return decode_logs_protobuf(body) if kind == _PROTOBUF else decode_logs_json(body)

    receive = otlp_receiver(
        "logs", tokens=tokens, max_bytes=max_bytes, decode=decode, ingest=ingest, respond=_response
    )
    return Route(path, receive, methods=["POST"])


def mount_logs(
    app: Starlette,
    ingestor: LogIngestor | Callable[[], Any] | None,
    *,
    tokens: WriteTokens | None = None,
    tokens_file: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> None:
    """Add ``POST /v1/logs`` to ``app``, recording through the traces route's ingester.

    Args:
        app: ``trails otlp``'s receiver app or ``trails serve``'s endpoint.
        ingestor: the ingester of ``/v1/traces`` (or what ``mount_traces``
            returned); None mounts nothing (no traces route either).
        tokens: the write tokens, as the traces route has them.
        tokens_file: or the tokens file to load them from.
        max_bytes: largest body accepted.
    """
    if ingestor is None:
        return
    if tokens is None and tokens_file:
        from trails.server.write_tokens import load_write_tokens

        tokens = load_write_tokens(tokens_file)
    app.router.routes.append(logs_route(ingestor, tokens=tokens, max_bytes=max_bytes))
