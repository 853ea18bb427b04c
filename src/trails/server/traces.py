"""``POST /v1/traces``: the OTLP/HTTP trace receiver, as a route any Starlette app can mount.

``traces_route(ingestor, tokens=...)`` is the route ``trails otlp`` serves and
``trails serve`` mounts. It answers as the OTLP/HTTP specification asks, so
the OpenTelemetry SDK's exporters retry exactly when they should:

- 200 (an empty ``ExportTraceServiceResponse``, in the request's encoding)
  only after the whole batch was written in one atomic store write; when
  some spans were refused (they name a session the receiver did not start,
  or one ended too long ago), the response's ``partial_success`` says how
  many (``rejected_spans``) and why (``error_message``), as the OTLP
  specification asks, and the rest of the batch is written;
- 503 with ``Retry-After`` when the store did not confirm the write (it failed, or
  timed out after it may have committed): the outcome is unknown and said so, the
  exporter sends the batch again, which is safe because spans are idempotent by trace
  and span id; the store's error (which may name a folder or a server) is logged, never
  sent;
- 400 with the reason for a payload that cannot be read (nested deeper than
  ``trails.otel.otlp.MAX_DEPTH`` included), 413 over the size
  limit (compressed or not), 415 for another content type;
- 401 without a known bearer token and 403 for a token without the write
  scope, when the receiver has tokens (``tokens=None``: no authentication, for
  loopback only; the CLI enforces that).

``receiver_app`` is the stand-alone app: the route plus a task that ends idle
sessions (``Ingestor.sweep``). ``mount_traces`` adds the route to ``trails
serve``: on a directory store, which one process may open, the spans go to
the endpoint's worker that holds the store (a ``WriteJob``; the worker's
ingester also ends idle sessions), so the store keeps one writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gzip
import json
import logging
import threading
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from trails.config import Settings
from trails.errors import QueryRefused, StoreError, UserError
from trails.otel.ingest import Ingestor, IngestResult, ingest_options
from trails.otel.otlp import OTLPDecodeError, Span, decode_json, decode_protobuf
from trails.server.limits import BODY_SECONDS
from trails.server.pool import Evaluator, Outcome, ProcessPool, WriteJob
from trails.server.write_tokens import WriteTokens
from trails.store.base import Store

__all__ = [
    "DEFAULT_MAX_BYTES",
    "TRACES_PATH",
    "authorised_body",
    "end_received_sessions",
    "export_response",
    "mount_traces",
    "otlp_receiver",
    "receiver_app",
    "store_failed",
    "traces_route",
]

T = TypeVar("T")

TRACES_PATH = "/v1/traces"
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
log = logging.getLogger(__name__)

_PROTOBUF = "application/x-protobuf"
_JSON = "application/json"


_UNKNOWN = (
    "the store did not confirm the write: the batch may or may not have been recorded; "
    "retrying is safe because spans and their log records are recorded once by trace and "
    "span id (sent again, they write the same quads)"
)


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _Refused(413, f"the request body is {declared} bytes, over the limit of {limit}")
    chunks: list[bytes] = []
    size = 0
    try:  # a body trickled in slowly holds a connection: cut off
        async with asyncio.timeout(BODY_SECONDS):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise _Refused(413, f"the request body is over the limit of {limit} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise _Refused(408, f"the request body did not arrive within {BODY_SECONDS:g} s") from None
    raw = b"".join(chunks)
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding not in ("gzip", "deflate"):
        raise _Refused(415, f"unsupported content-encoding {encoding!r}: use gzip or none")
    try:
        inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
        body = inflater.decompress(raw, limit + 1)
    except (zlib.error, gzip.BadGzipFile) as exc:
        raise _Refused(400, f"the {encoding} body cannot be decompressed: {exc}") from exc
    if len(body) > limit or inflater.unconsumed_tail:
        raise _Refused(413, f"the decompressed body is over the limit of {limit} bytes")
    return body


async def authorised_body(
    request: Request, tokens: WriteTokens | None, max_bytes: int, what: str
) -> tuple[str | None, str, bytes]:
    """What every OTLP route checks first: the write token, the content type, the body.

    Args:
        request: the request.
        tokens: the write tokens (None: no token needed, a loopback receiver).
        max_bytes: the largest body accepted (inflated).
        what: what the route writes (``spans``, ``logs``), for the refusal.

    Returns:
        ``(principal the token speaks for or None, content type, body)``.

    Raises:
        _Refused: 401, 403, 415, 413, 408 or 400, with what to do about it.
    """
    principal = None
    if tokens is not None:
        grant = tokens.authenticate(request.headers.get("authorization"))
        if grant is None:
            raise _Refused(
                401,
                "a bearer token is required: send 'Authorization: Bearer TOKEN'",
                {"WWW-Authenticate": 'Bearer realm="trails"'},
            )
        if not grant.write:
            raise _Refused(403, f"this token may not write {what} (it needs write = true)")
        principal = grant.principal
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in (_PROTOBUF, _JSON):
        raise _Refused(
            415, f"unsupported content type {kind or 'none'!r}: send {_PROTOBUF} or {_JSON}"
        )
    return principal, kind, await _body(request, max_bytes)


def store_failed(exc: StoreError, what: str) -> _Refused:
    """The 503 for a write the store failed: the store's own words (a server's address, a
    folder) go to the log only, and a write that timed out may have been committed, so the
    answer never says nothing was written."""
    log.warning("%s maybe not written, the exporter will retry: %s", what, exc)
    return _Refused(503, _UNKNOWN, {"Retry-After": "1"})


def export_response(
    kind: str, result: IngestResult, json_field: str, message: Callable[[], Any], field: str
) -> Response:
    """The OTLP export response: empty, or its ``partial_success`` for refused items.

    ``json_field`` names the count in the JSON form (``rejectedSpans``), ``message`` makes the
    protobuf response and ``field`` names the count there (``rejected_spans``).
    """
    text = "; ".join(dict.fromkeys(result.refusals))
    if kind == _JSON:
        body: dict[str, object] = {}
        if result.rejected:
            body["partialSuccess"] = {json_field: str(result.rejected), "errorMessage": text}
        return Response(json.dumps(body).encode(), media_type=_JSON)
    answer = message()
    if result.rejected:
        setattr(answer.partial_success, field, result.rejected)
        answer.partial_success.error_message = text
    return Response(answer.SerializeToString(), media_type=_PROTOBUF)


def _response(kind: str, result: IngestResult) -> Response:
    """The ``ExportTraceServiceResponse``: empty, or its ``partial_success`` for refused spans."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    return export_response(
        kind, result, "rejectedSpans", ExportTraceServiceResponse, "rejected_spans"
    )


def otlp_receiver(
    what: str,
    *,
    tokens: WriteTokens | None,
    max_bytes: int,
    decode: Callable[[str, bytes], T],
    ingest: Callable[[T, str | None], IngestResult],
    respond: Callable[[str, IngestResult], Response],
) -> Callable[[Request], Awaitable[Response]]:
    """The request handler of an OTLP/HTTP export route (``/v1/traces``, ``/v1/logs``).

    It checks the token and the body (``authorised_body``), decodes it with ``decode(kind,
    body)``, records it with ``ingest(items, principal)`` off the event loop, and answers with
    ``respond``; every refusal is a plain-text answer with its status, never a traceback.
    """

    async def receive(request: Request) -> Response:
        try:
            principal, kind, body = await authorised_body(request, tokens, max_bytes, what)
            try:
                items = decode(kind, body)
            except OTLPDecodeError as exc:
                raise _Refused(400, str(exc)) from exc
            except RecursionError:  # a reader's bound the depth check did not foresee
                raise _Refused(400, "the payload nests too deeply to be read") from None
            try:
                result = await asyncio.to_thread(ingest, items, principal)
            except StoreError as exc:
                raise store_failed(exc, what) from exc
            except UserError as exc:
                raise _Refused(400, str(exc)) from exc
            if result.rejected:  # the exporter is told; the operator too
                log.warning(
                    "%d %s refused for %s: %s",
                    result.rejected,
                    what,
                    principal or "an unauthenticated sender",
                    "; ".join(dict.fromkeys(result.refusals)),
                )
            return respond(kind, result)
        except _Refused as refused:
            return PlainTextResponse(
                str(refused) + "\n", status_code=refused.status, headers=refused.headers
            )

    return receive


class _SpanWriter:
    """The ``Writer`` of the worker that holds a served directory store: its ingester."""

    def __init__(self, ingestor: Ingestor) -> None:
        self.ingestor = ingestor

    def write(self, payload: tuple[Any, ...]) -> Outcome:
        items, principal = payload[-2:]
        try:
            if payload[0] == "logs":
                result = self.ingestor.ingest_logs(items, principal=principal)
            else:
                result = self.ingestor.ingest(items, principal=principal)
        except UserError as exc:
            return Outcome("parameter", message=str(exc))
        except StoreError as exc:
            return Outcome("store", message=str(exc))
        self.tick()
        data = {"rejected": result.rejected, "refusals": result.refusals}
        return Outcome(data=json.dumps(data).encode(), count=result.written)

    def tick(self) -> None:
        try:
            self.ingestor.sweep()
        except StoreError:  # the next tick tries again
            log.exception("ending idle sessions failed")

    def close(self) -> None:
        self.ingestor.sweep(float("inf"))


def _span_writer(settings: Settings, idle: float, store: Store) -> _SpanWriter:
    """Built in the worker (picklable by name): the ingester over the worker's store."""
    from trails.prov.recorder import Recorder

    ingestor = Ingestor(
        Recorder.from_settings(settings, store=store),
        idle_timeout=idle,
        **ingest_options(settings.section("otel")),
    )
    ingestor.adopt_open_sessions()  # a worker killed by an overrunning query left them
    return _SpanWriter(ingestor)


class _PoolIngestor:
    """Hands each batch to the pool's worker that holds the store, and waits for it."""

    def __init__(self, pool: ProcessPool) -> None:
        self.pool = pool

    def ingest(self, spans: list[Span], *, principal: str | None = None) -> IngestResult:
        return self._submit((spans, principal))

    def _submit(self, payload: tuple[Any, ...]) -> IngestResult:
        try:
            outcome = self.pool.submit(WriteJob(payload), None).result()
        except QueryRefused as exc:  # too many requests waiting: the exporter retries later
            raise StoreError(str(exc)) from exc
        if outcome.kind == "parameter":
            raise UserError(outcome.message)
        if outcome.kind != "ok":
            raise StoreError(outcome.message)
        data = json.loads(outcome.data)
        return IngestResult(
            written=outcome.count, rejected=data["rejected"], refusals=data["refusals"]
        )

    def ingest_logs(self, records: list[Any], *, principal: str | None = None) -> IngestResult:
        return self._submit(("logs", records, principal))

    def sweep(self) -> list[str]:
        return []  # the worker ends idle sessions itself


def traces_route(
    ingestor: Ingestor | Callable[[], Ingestor | _PoolIngestor],
    *,
    tokens: WriteTokens | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    path: str = TRACES_PATH,
) -> Route:
    """The ``POST /v1/traces`` route over ``ingestor``.

    Args:
        ingestor: records the spans, or a function making it on the first request
            (so mounting never opens a store).
        tokens: bearer tokens with their write scope; None accepts any request
            (loopback without a tokens file only).
        max_bytes: largest body accepted, before and after decompression.
        path: where to mount it.

    Returns:
        A Starlette route.
    """

    made: list[Ingestor | _PoolIngestor] = [ingestor] if isinstance(ingestor, Ingestor) else []
    lock = threading.Lock()

    def ingest(spans: list[Span], principal: str | None) -> IngestResult:
        with lock:
            if not made:
                assert callable(ingestor)
                made.append(ingestor())
        result = made[0].ingest(spans, principal=principal)
        try:  # sessions idle for too long end here too, not only in the sweeper
            made[0].sweep()
        except StoreError:  # the batch is written: answer 200; the next sweep ends them
            log.exception("ending idle sessions failed")
        return result

    def decode(kind: str, body: bytes) -> list[Span]:
        return decode_protobuf(body) if kind == _PROTOBUF else decode_json(body)

    receive = otlp_receiver(
        "spans", tokens=tokens, max_bytes=max_bytes, decode=decode, ingest=ingest, respond=_response
    )
    return Route(path, receive, methods=["POST"])


def receiver_app(
    ingestor: Ingestor,
    *,
    tokens: WriteTokens | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    sweep_every: float = 5.0,
) -> Starlette:
    """The stand-alone receiver: ``/v1/traces`` plus the idle-session sweeper.

    Args:
        ingestor: records the spans.
        tokens: see ``traces_route``.
        max_bytes: see ``traces_route``.
        sweep_every: seconds between sweeps for idle sessions.

    Returns:
        The ASGI app.
    """

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async def sweeper() -> None:
            while True:
                await asyncio.sleep(sweep_every)
                try:
                    await asyncio.to_thread(ingestor.sweep)
                except Exception:  # the next sweep tries again
                    log.exception("ending idle sessions failed")

        await asyncio.to_thread(ingestor.adopt_open_sessions)
        task = asyncio.create_task(sweeper())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await asyncio.to_thread(ingestor.sweep, float("inf"))

    return Starlette(
        routes=[traces_route(ingestor, tokens=tokens, max_bytes=max_bytes)], lifespan=lifespan
    )


def mount_traces(
    app: Starlette,
    location: str | Store,
    tokens_file: str | None,
    settings: Settings,
    *,
    evaluator: Evaluator | None = None,
) -> Callable[[], Any] | None:
    """Add ``POST /v1/traces`` to another app (``trails serve``), writing to ``location``.

    Without a tokens file nothing is mounted (a served store is never
    writable without a token). When ``evaluator`` is the endpoint's worker
    pool on a directory store (not yet started), its one worker, which holds
    the store, writes the spans; otherwise the store is opened on the first
    request, not here.

    Args:
        app: the Starlette app to extend.
        location: the store (or its location) the spans are written to.
        tokens_file: the tokens file; entries need ``write = true``.
        settings: IRI base, content policy, sealing, ``[otel] idle_timeout``.
        evaluator: the endpoint's evaluator, whose worker may hold the store.

    Returns:
        What the route writes through (made on first use), for ``/v1/logs`` to
        share; None when nothing was mounted.
    """
    if not tokens_file:
        return None
    from trails.prov.recorder import Recorder
    from trails.server.write_tokens import load_write_tokens
    from trails.store import open_store

    tokens = load_write_tokens(tokens_file)
    idle = float(settings.section("otel").get("idle_timeout", 300.0))
    if (
        isinstance(evaluator, ProcessPool)
        and isinstance(location, str)
        and not location.startswith(("http://", "https://", "memory:"))
    ):  # one process may open a directory store: the worker holding it writes; without a
        # token that writes, the worker holds nothing (it reads snapshots)
        if tokens.any_write:
            evaluator.attach_writer(functools.partial(_span_writer, settings, idle))
        pool_ingestor = _PoolIngestor(evaluator)
        app.router.routes.append(traces_route(lambda: pool_ingestor, tokens=tokens))
        return lambda: pool_ingestor

    def build() -> Ingestor:
        store = (  # the store being served: it exists (serving never creates one)
            location
            if isinstance(location, Store)
            else open_store(location, settings=settings, create=False)
        )
        recorder = Recorder.from_settings(settings, store=store)
        return Ingestor(recorder, idle_timeout=idle, **ingest_options(settings.section("otel")))

    make = _Once(build)
    app.router.routes.append(traces_route(make, tokens=tokens))
    return make


class _Once:
    """Makes the ingester on first use (one for the traces and the logs routes), and ends
    every session it wrote when the server stops (``close``)."""

    def __init__(self, build: Callable[[], Ingestor]) -> None:
        self.build = build
        self.made: Ingestor | None = None
        self.lock = threading.Lock()

    def __call__(self) -> Ingestor:
        with self.lock:
            if self.made is None:
                self.made = self.build()
            return self.made

    def close(self) -> None:
        """End the sessions the ingester wrote and did not end yet (the server stops)."""
        with self.lock:
            if self.made is not None:
                self.made.sweep(float("inf"))


def end_received_sessions(writer: Callable[[], Any] | None) -> None:
    """At shutdown: end every session the receiver ``mount_traces`` mounted wrote and left
    open (on a directory store the worker holding it does so as it stops)."""
    close = getattr(writer, "close", None)
    if callable(close):
        try:
            close()
        except StoreError:  # the next receiver adopts them (``adopt_open_sessions``)
            log.exception("ending the received sessions at shutdown failed")
