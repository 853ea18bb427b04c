"""The endpoint's HTTP side: routes, configuration, content negotiation (``trails serve``).

Auditors and tools that speak the SPARQL 1.1 Protocol read provenance here
without access to the machine that holds it:

- ``/sparql``: queries by GET ``?query=``, POST form, or POST
  ``application/sparql-query``, with ``default-graph-uri`` /
  ``named-graph-uri``; results in SPARQL JSON, XML, CSV, TSV or (for
  CONSTRUCT / DESCRIBE) Turtle, TriG, N-Triples, N-Quads, JSON-LD, RDF/XML by
  the ``Accept`` header. Without a query it returns its SPARQL 1.1 Service
  Description (Turtle by default, or any of those RDF formats by ``Accept``).
- ``/queries/NAME?param=...``: the regulator query pack by name, parameters
  bound as RDF terms, never spliced into the text; ``/queries`` lists it
  (with a token, like every route but the service description).
- ``/access-log/sparql``: the same protocol over the access log, for tokens
  with ``audit = true`` only.
- ``/console/`` (and ``/``, which leads there): the web console, for a browser
  logged in with one of the same tokens (``console``).
- ``/.well-known/capabilities``: the capability manifest (JSON-LD, the trails
  vocabulary as context) of every capability registered in the server's process,
  open like the service description (``trails.mcp.manifest``).

Every query needs a bearer token (``auth``); it is evaluated over the
graphs the token may read and nothing else (the store's dataset restriction:
other graphs are invisible, not filtered; a token that may read every graph
runs unrestricted, see ``graphs``). The query's own ``FROM`` /
``FROM NAMED`` and the protocol's graph parameters only narrow that set.
Updates, ``LOAD`` and ``SERVICE`` are refused before any store sees them
(``sparql``); queries and results have size limits; a query past its
time limit is stopped (``pool``). Every request, answered or not, is
recorded as provenance in the access log (``log``), a store of its
own that the server process writes, before the answer is sent: if the log
cannot be written, the answer is withheld. The package docstring draws the
whole path of a request.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from trails.audit.querypack import Query, load_pack
from trails.config import Settings
from trails.errors import (
    ConfigError,
    QueryParameterError,
    QueryRefused,
    QueryTimeout,
    StoreError,
    TrailsError,
    UnknownQuery,
)
from trails.prov.iri import Minter
from trails.server.auth import Grant, TokenTable
from trails.server.limits import BODY_SECONDS, FailureThrottle, Throttled, failure_keys
from trails.server.log import (
    ACCESS_LOG,
    AccessLog,
    QueryReceived,
    Status,
    access_log_entry,
    access_log_location,
)
from trails.server.newest import newest_sessions, page_limit
from trails.server.pool import Evaluator, InlineEvaluator, Outcome, ProcessPool, QueryJob
from trails.server.sparql import analyse, parse_graph_iri
from trails.store import Store, open_store
from trails.store.location import check_existing
from trails.store.oxigraph import convert_rdf
from trails.store.terms import IRI, Term

__all__ = [
    "GRAPH_TYPES",
    "RESULT_TYPES",
    "Endpoint",
    "EndpointConfig",
    "create_app",
    "negotiate",
    "service_description",
]

RESULT_TYPES: dict[str, str] = {
    "application/sparql-results+json": "json",
    "application/json": "json",
    "application/sparql-results+xml": "xml",
    "application/xml": "xml",
    "text/xml": "xml",
    "text/csv": "csv",
    "text/tab-separated-values": "tsv",
}
GRAPH_TYPES: dict[str, str] = {
    "text/turtle": "turtle",
    "application/x-turtle": "turtle",
    "application/turtle": "turtle",
    "application/trig": "trig",
    "application/n-triples": "ntriples",
    "text/plain": "ntriples",
    "application/n-quads": "nquads",
    "application/ld+json": "jsonld",
    "application/rdf+xml": "rdfxml",
}
_MEDIA: dict[str, str] = {
    "json": "application/sparql-results+json",
    "xml": "application/sparql-results+xml",
    "csv": "text/csv; charset=utf-8",
    "tsv": "text/tab-separated-values; charset=utf-8",
    "turtle": "text/turtle; charset=utf-8",
    "trig": "application/trig",
    "ntriples": "application/n-triples",
    "nquads": "application/n-quads",
    "jsonld": "application/ld+json",
    "rdfxml": "application/rdf+xml",
}
_SD_FORMATS = (
    "SPARQL_Results_JSON",
    "SPARQL_Results_XML",
    "SPARQL_Results_CSV",
    "SPARQL_Results_TSV",
    "Turtle",
    "TriG",
    "N-Triples",
    "N-Quads",
    "JSON-LD",
    "RDF_XML",
)
_GRAPH_PARAMS = ("default-graph-uri", "named-graph-uri")
#: locations that are no folder: nothing to find on disk before serving them
_OPENED_EITHER_WAY = ("memory:", "http://", "https://")


@dataclass(frozen=True)
class EndpointConfig:
    """Limits and settings of the endpoint (``[serve]`` in trails.toml).

    Args:
        time_limit: seconds a query may run before it is stopped.
        max_query_bytes: largest query text accepted (UTF-8 bytes).
        max_results: most solutions / triples one answer may hold.
        max_result_bytes: largest serialised answer.
        processes: worker processes for a SPARQL server store.
        threads: queries each worker (or the in-process evaluator) runs at once.
        max_pending: queries allowed to wait for a free worker.
        snapshot_interval: seconds between snapshots of a directory store another
            process is writing (read-only; a new one shows what was recorded since).
        base_iri: the one base IRI: of minted IRIs (principals, the access-log
            graph), and the base relative IRIs in queries resolve against (in
            ``FROM`` here, and in the stores the workers open).
        record_content: ``full`` logs query texts, ``hash`` only their sha256.
        worker_memory_mb: MiB each worker's queries may hold beyond its open store (past: 503).
    """

    time_limit: float = 30.0
    max_query_bytes: int = 64 * 1024
    max_results: int = 100_000
    max_result_bytes: int = 64 * 1024 * 1024
    processes: int = 2
    threads: int = 4
    max_pending: int = 256
    snapshot_interval: float = 2.0
    base_iri: str = "urn:trails:"
    record_content: str = "full"
    worker_memory_mb: int = 512

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> EndpointConfig:
        """The configuration from ``[serve]`` in trails.toml, then ``overrides`` (not None).

        Raises:
            ConfigError: a ``[serve]`` value has the wrong type or is not positive.
        """
        section = settings.section("serve")
        values: dict[str, Any] = {
            "base_iri": settings.base_iri,
            "record_content": settings.record_content,
        }
        for name, kind in (
            ("time_limit", float),
            ("max_query_bytes", int),
            ("max_results", int),
            ("max_result_bytes", int),
            ("processes", int),
            ("threads", int),
            ("max_pending", int),
            ("snapshot_interval", float),
            ("worker_memory_mb", int),
        ):
            raw = overrides[name] if overrides.get(name) is not None else section.get(name)
            if raw is None:
                continue
            try:
                value = kind(raw)
            except (TypeError, ValueError):
                raise ConfigError(f"[serve] {name} must be a number, not {raw!r}") from None
            if value <= 0:
                raise ConfigError(f"[serve] {name} must be positive, not {raw!r}")
            values[name] = value
        return cls(**values)


def negotiate(accept: str | None, form: str) -> str:
    """The trails format to answer a ``form`` query with, by the ``Accept`` header.

    Args:
        accept: the header (None or ``*/*``: SPARQL JSON, or Turtle for graphs).
        form: ``SELECT``, ``ASK``, ``CONSTRUCT`` or ``DESCRIBE``.

    Returns:
        A format name (``json``, ``turtle`` ...).

    Raises:
        QueryRefused: 406, no acceptable type is one the endpoint can produce.
    """
    graph = form in ("CONSTRUCT", "DESCRIBE")
    table = GRAPH_TYPES if graph else RESULT_TYPES
    default = "turtle" if graph else "json"
    if not accept or not accept.strip():
        return default
    choices: list[tuple[float, int, str]] = []
    for order, part in enumerate(accept.split(",")):
        media, *options = (piece.strip() for piece in part.split(";"))
        quality = 1.0
        for option in options:
            key, _, value = option.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        media = media.lower()
        if quality <= 0:
            continue
        if media in table:
            choices.append((quality, -order, table[media]))
        elif media in ("*/*", "application/*", "text/*"):
            choices.append((quality - 0.0001, -order, default))
    if not choices:
        kinds = ", ".join(sorted({_MEDIA[f].split(";")[0] for f in table.values()}))
        raise QueryRefused(
            f"cannot answer a {form} query as {accept!r}; acceptable types: {kinds}", status=406
        )
    return max(choices)[2]


def service_description(base_iri: str | None = None) -> str:
    """The SPARQL 1.1 Service Description of the endpoint, as Turtle (``<>`` is the endpoint).

    Args:
        base_iri: the base IRI relative IRIs in queries resolve against, said
            in the description's comment (None: not said).
    """
    base = ""
    if base_iri is not None:
        quoted = base_iri.replace("\\", "\\\\").replace('"', '\\"')
        base = f" Relative IRIs in queries resolve against <{quoted}>."
    formats = " ,\n        ".join(f"<http://www.w3.org/ns/formats/{f}>" for f in _SD_FORMATS)
    return (
        "@prefix sd: <http://www.w3.org/ns/sparql-service-description#> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\n"
        "<> a sd:Service ;\n"
        "    sd:endpoint <> ;\n"
        "    sd:supportedLanguage sd:SPARQL11Query ;\n"
        "    sd:feature sd:UnionDefaultGraph ;\n"
        f"    sd:resultFormat {formats} ;\n"
        '    rdfs:label "trails SPARQL endpoint" ;\n'
        '    rdfs:comment "Read-only and authenticated (Authorization: Bearer). Each token '
        "reads only the named graphs it is granted; the default graph is their union. "
        "SPARQL Update, LOAD and SERVICE are refused. The query pack is at /queries/NAME; "
        "audit tokens read the access log at /access-log/sparql."
        f'{base}" .\n'
    )


class _Unauthorized(Exception):
    """No valid bearer token."""


@dataclass
class _Record:
    """What the access log will say about one request, filled in as it is handled."""

    received: datetime
    principal: str | None = None
    query: str = ""
    query_name: str | None = None
    params: dict[str, Any] | None = None
    of_access_log: bool = False
    status: Status = "ok"
    http_status: int = 200
    results: int | None = None
    message: str | None = None
    fields: dict[str, list[str]] = field(default_factory=dict)
    unlogged: bool = False  # a throttled request after the first: not written to the log


def _now() -> datetime:
    return datetime.now(UTC)


class Endpoint:
    """The endpoint: an evaluator, the token table, limits, the pack; ``app`` serves it.

    Args:
        evaluator: where queries over the data run (``InlineEvaluator`` or ``ProcessPool``).
        tokens: the bearer tokens and their grants.
        config: limits and settings.
        pack: the query pack by name (default: the shipped pack).
        access_log: the access log (default: a new in-memory store of its own).
    """

    def __init__(
        self,
        evaluator: Evaluator,
        tokens: TokenTable,
        config: EndpointConfig | None = None,
        pack: Mapping[str, Query] | None = None,
        *,
        access_log: AccessLog | None = None,
    ) -> None:
        self.evaluator = evaluator
        self.tokens = tokens
        self.config = config or EndpointConfig()
        if pack is None:
            try:
                pack = load_pack()
            except UnknownQuery:
                pack = {}
        self.pack = dict(pack)
        self.access_log = access_log or AccessLog.open("memory:", threads=self.config.threads)
        self.minter = Minter(self.config.base_iri)
        self.log_graph = self.minter.graph(ACCESS_LOG)
        self._started = False
        self._start_lock = asyncio.Lock()
        self.throttle = FailureThrottle()
        self.app = Starlette(
            routes=[
                Route("/sparql", self.sparql, methods=["GET", "POST"]),
                Route("/access-log/sparql", self.access_log_sparql, methods=["GET", "POST"]),
                Route("/queries", self.list_queries, methods=["GET"]),
                Route("/queries/{name}", self.pack_query, methods=["GET"]),
                Route("/.well-known/capabilities", self.capabilities, methods=["GET"]),
            ],
            lifespan=self._lifespan,
        )
        from trails.server.console.routes import mount_console  # the web console, /console/

        self.console = mount_console(
            self.app,
            evaluator,
            tokens,
            self.pack,
            self.log_graph,
            base_iri=self.config.base_iri,
            time_limit=self.config.time_limit,
            max_results=self.config.max_results,
            max_query_bytes=self.config.max_query_bytes,
            start=self.start,
            log=self.log_console,
            throttle=self.throttle,  # failed logins count like failed bearer tokens
        )

    # -- life cycle -------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        await self.start()
        try:
            yield
        finally:
            await asyncio.to_thread(self.close)

    async def start(self) -> None:
        """Start the evaluator (worker processes open the store); idempotent.

        Raises:
            StoreError: the store cannot be opened.
        """
        async with self._start_lock:
            if not self._started:
                await asyncio.to_thread(self.evaluator.start)
                self._started = True

    async def log_console(
        self,
        principal: str,
        query: str,
        *,
        query_name: str | None = None,
        params: dict[str, Any] | None = None,
        results: int | None = None,
        message: str | None = None,
    ) -> None:
        """Write the access-log entry of a query a reader ran from the console.

        Raises:
            StoreError: the entry could not be written (the console withholds the answer).
        """
        record = _Record(
            received=_now(),
            principal=principal,
            query=query,
            query_name=query_name,
            params=params,
            results=results,
            message=message,
        )
        if message is not None:
            record.status, record.http_status = "invalid", 400
        if (await self._logged(record, Response())).status_code == 500:
            raise StoreError("the access log could not be written, so the answer is withheld")

    def close(self) -> None:
        """Stop the evaluator, then the access log (after the writes already queued)."""
        self.evaluator.close()
        self.access_log.close()
        self.console.close()  # its search index's file

    # -- routes -----------------------------------------------------------------

    async def sparql(self, request: Request) -> Response:
        """The SPARQL 1.1 Protocol query operation, or the service description."""
        return await self._sparql(request, of_access_log=False)

    async def access_log_sparql(self, request: Request) -> Response:
        """The same protocol over the access log, for tokens with ``audit = true``."""
        return await self._sparql(request, of_access_log=True)

    async def _sparql(self, request: Request, *, of_access_log: bool) -> Response:
        record = _Record(received=_now(), of_access_log=of_access_log)
        try:
            fields = await self._fields(request, record)
            if not fields.get("query") and not fields.get("update"):
                if request.method == "GET":
                    return self._service_description(request)
                raise QueryRefused("the request has no query parameter", status=400)
            grant = self._authenticate(request, record)
            if fields.get("update"):
                raise QueryRefused("SPARQL Update is refused: this endpoint is read-only")
            if of_access_log and not grant.audit:
                raise QueryRefused("this token may not read the access log (it needs audit = true)")
            if len(fields["query"]) > 1:
                raise QueryRefused("the request has more than one query parameter", status=400)
            response = await self._evaluate(request, record, grant, record.query, {})
        except Exception as exc:
            response = self._error(record, exc)
        return await self._logged(record, response)

    def _service_description(self, request: Request) -> Response:
        """The service description in the format ``Accept`` asks for (406 if none fits)."""
        fmt = negotiate(request.headers.get("accept"), "DESCRIBE")
        text = service_description(self.config.base_iri).encode("utf-8")
        if fmt != "turtle":  # ``<>`` is the endpoint: its URL as the client addressed it
            endpoint = str(request.url.replace(query="", fragment=""))
            text = convert_rdf(text, "turtle", fmt, endpoint)
        return Response(text, media_type=_MEDIA[fmt])

    def capabilities(self, request: Request) -> Response:
        """The capability manifest (JSON-LD), open like the service description."""
        from trails.mcp.manifest import capability_manifest

        manifest = capability_manifest(self.config.base_iri)
        return JSONResponse(manifest, media_type="application/ld+json")

    async def pack_query(self, request: Request) -> Response:
        """Run a query of the pack by name, its parameters from the URL."""
        record = _Record(received=_now())
        name = request.path_params["name"]
        record.query_name = name
        try:
            fields = parse_qs(request.url.query, keep_blank_values=True)
            record.fields = fields
            values = {k: v[-1] for k, v in fields.items() if k not in _GRAPH_PARAMS}
            record.params = values
            query = self.pack.get(name)
            if query is not None:
                record.query = query.text
            grant = self._authenticate(request, record)
            if query is None:
                known = ", ".join(sorted(self.pack)) or "none"
                raise UnknownQuery(f"no query named {name!r} in the pack (available: {known})")
            limit = page_limit(name, values)
            params = query.bind(
                values if limit is None else {k: v for k, v in values.items() if k != "limit"}
            )
            if limit is not None:  # the newest sessions, walked (trails.audit.sessions_page)
                response = await self._sessions_page(request, record, grant, params, limit)
            else:
                text = query.text_for(params)  # no empty columns for parameters not given
                response = await self._evaluate(request, record, grant, text, params)
        except Exception as exc:
            response = self._error(record, exc)
        return await self._logged(record, response)

    async def _sessions_page(
        self, request: Request, record: _Record, grant: Grant, params: Any, limit: int
    ) -> Response:
        fmt = negotiate(request.headers.get("accept"), "SELECT")
        await self.start()
        data, record.results = await newest_sessions(
            self.evaluator, grant, self.log_graph, self.config, params, limit, fmt
        )
        return Response(data, media_type=_MEDIA[fmt])

    async def list_queries(self, request: Request) -> Response:
        """The query pack: name, title, description and parameters of each query (token needed)."""
        record = _Record(received=_now())
        try:
            self._authenticate(request, record)
        except Exception as exc:
            return await self._logged(record, self._error(record, exc))
        return JSONResponse(
            [
                {
                    "name": q.name,
                    "title": q.title,
                    "description": q.description,
                    "form": q.form,
                    "params": [
                        {
                            "name": p.name,
                            "type": p.type,
                            "optional": p.optional,
                            "description": p.description,
                        }
                        for p in q.params.values()
                    ],
                }
                for q in sorted(self.pack.values(), key=lambda q: q.name)
            ]
        )

    # -- steps ------------------------------------------------------------------

    async def _fields(self, request: Request, record: _Record) -> dict[str, list[str]]:
        fields = parse_qs(request.scope["query_string"].decode(), keep_blank_values=True)
        if request.method == "POST":
            kind, *options = request.headers.get("content-type", "").split(";")
            kind = kind.strip().lower()
            for option in options:
                key, _, value = option.partition("=")
                charset = value.strip().strip('"').lower()
                if key.strip().lower() == "charset" and charset not in ("utf-8", "utf8"):
                    raise QueryRefused(
                        f"the request body must be UTF-8, not {value.strip()!r}", status=415
                    )
            body = await self._body(request)
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                raise QueryRefused("the request body is not UTF-8", status=400) from None
            if kind == "application/x-www-form-urlencoded":
                for key, values in parse_qs(text, keep_blank_values=True).items():
                    fields.setdefault(key, []).extend(values)
            elif kind == "application/sparql-query":
                fields["query"] = [text]
            elif kind == "application/sparql-update":
                fields["update"] = [text]
            else:
                raise QueryRefused(
                    f"unsupported content type {kind or 'none'!r}: send "
                    f"application/x-www-form-urlencoded or application/sparql-query",
                    status=415,
                )
        record.fields = fields
        text = (fields.get("query") or fields.get("update") or [""])[0]
        size = len(text.encode("utf-8"))
        if size > self.config.max_query_bytes:
            record.query = text[: self.config.max_query_bytes]
            raise QueryRefused(
                f"the query is {size} bytes, over the limit of {self.config.max_query_bytes}",
                status=413,
            )
        record.query = text
        return fields

    async def _body(self, request: Request) -> bytes:
        limit = self.config.max_query_bytes * 3 + 16 * 1024  # room for URL encoding
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise QueryRefused(
                f"the request body is {declared} bytes, over the limit of {limit}", status=413
            )
        chunks: list[bytes] = []
        size = 0
        try:  # a body trickled in slowly holds a connection: cut off at BODY_SECONDS
            async with asyncio.timeout(BODY_SECONDS):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        raise QueryRefused(
                            f"the request body is over the limit of {limit} bytes", status=413
                        )
                    chunks.append(chunk)
        except TimeoutError:
            late = f"the request body did not arrive within {BODY_SECONDS:g} s"
            raise QueryRefused(late, status=408) from None
        return b"".join(chunks)

    def _authenticate(self, request: Request, record: _Record) -> Grant:
        header = request.headers.get("authorization")
        grant = self.tokens.authenticate(header)
        if grant is None:  # counted against the client and the token; a right one gets in
            scheme, _, token = (header or "").strip().partition(" ")
            keys = failure_keys(request.client.host if request.client else "", token or scheme)
            self.throttle.check(*keys)  # too many failures: 429, once in the log
            self.throttle.failed(*keys)
            raise _Unauthorized("unknown token" if scheme.lower() == "bearer" and token else "")
        record.principal = grant.principal
        return grant

    async def _evaluate(
        self,
        request: Request,
        record: _Record,
        grant: Grant,
        text: str,
        params: Mapping[str, Term],
    ) -> Response:
        if "FROM" in text.upper():  # a dataset clause may need the parser: off the loop
            info = await asyncio.to_thread(analyse, text, self.config.base_iri)
        else:
            info = analyse(text, self.config.base_iri)
        log = record.of_access_log
        fmt = negotiate(request.headers.get("accept"), info.form)
        default = tuple(
            parse_graph_iri(v, "default-graph-uri") for v in record.fields.get(_GRAPH_PARAMS[0], [])
        )
        named = tuple(
            parse_graph_iri(v, "named-graph-uri") for v in record.fields.get(_GRAPH_PARAMS[1], [])
        )
        # the protocol's dataset replaces the query's own (SPARQL 1.1 Protocol)
        dataset: tuple[tuple[IRI, ...] | None, tuple[IRI, ...] | None] = (
            (default, named) if default or named else (info.default_graphs, info.named_graphs)
        )
        job = QueryJob(
            sparql=text,
            # the log store holds the log alone: an audit token reads all of it there
            grant=Grant(grant.principal, ("*",), audit=True) if log else grant,
            reserved=None if log else self.log_graph,
            format=fmt,
            params=dict(params),
            default_graphs=dataset[0],
            named_graphs=dataset[1],
            base_iri=self.config.base_iri,
            max_results=self.config.max_results,
            max_bytes=self.config.max_result_bytes,
        )
        outcome = await self._run(job, self.access_log.reader if log else self.evaluator)
        if outcome.kind == "syntax":
            raise QueryRefused(outcome.message, status=400)
        if outcome.kind == "parameter":
            raise QueryParameterError(outcome.message)
        if outcome.kind in ("too_large", "memory"):
            record.status = "refused"
            raise QueryRefused(outcome.message, status=400 if outcome.kind == "too_large" else 503)
        if outcome.kind != "ok":
            raise StoreError(outcome.message)
        record.results = outcome.count
        return Response(outcome.data, media_type=_MEDIA[fmt])

    async def _run(self, job: QueryJob, evaluator: Evaluator) -> Outcome:
        await self.start()
        limit = self.config.time_limit
        future = evaluator.submit(job, limit)
        # A process pool stops the query itself at the limit (after a bounded wait for a
        # free worker); the grace only covers a pool that cannot answer at all. An
        # in-process evaluator cannot stop a query: the answer is a 503 at the limit.
        stops = getattr(evaluator, "stops_queries", False)
        grace = max(3 * limit, 30.0) + 10.0 if stops else 0.0
        try:
            async with asyncio.timeout(limit + grace):
                return await asyncio.wrap_future(future)
        except TimeoutError:
            raise QueryTimeout(
                f"the query passed its time limit of {limit:g} s; narrow it or add a LIMIT",
                limit=limit,
            ) from None

    def _error(self, record: _Record, exc: Exception) -> Response:
        headers: dict[str, str] = {}
        status: Status
        if isinstance(exc, Throttled):
            status, code, message = "unauthorized", 429, str(exc)
            headers["Retry-After"] = str(exc.retry_after)
            record.unlogged = not exc.first  # the log records a block once, not each guess
        elif isinstance(exc, _Unauthorized):
            status, code = "unauthorized", 401
            message = str(exc) or "a bearer token is required: send 'Authorization: Bearer TOKEN'"
            headers["WWW-Authenticate"] = 'Bearer realm="trails"'
        elif isinstance(exc, QueryRefused):
            code, message = exc.status, str(exc)
            refused = code == 403 or record.status == "refused"  # a limit: 400, 403 or 503
            status = "refused" if refused else "error" if code >= 500 else "invalid"
        elif isinstance(exc, UnknownQuery):
            status, code, message = "invalid", 404, str(exc)
        elif isinstance(exc, QueryParameterError):
            status, code, message = "invalid", 400, str(exc)
        elif isinstance(exc, QueryTimeout):
            status, code, message = "timeout", 503, str(exc)
        elif isinstance(exc, TrailsError):
            status, code, message = "error", 500, f"the store failed: {exc}"
        else:
            status, code, message = "error", 500, f"internal error: {type(exc).__name__}"
        record.status, record.http_status, record.message = status, code, message
        record.results = None
        return PlainTextResponse(message + "\n", status_code=code, headers=headers)

    async def _logged(self, record: _Record, response: Response) -> Response:
        """Write the access-log entry, then release the response (or withhold it)."""
        if record.unlogged:
            return response
        if record.status == "ok":
            record.http_status = response.status_code
        event = QueryReceived(
            log_graph=self.log_graph,
            activity=self.minter.activity(),
            principal=record.principal,
            query=record.query,
            query_name=record.query_name,
            params=record.params,
            received=record.received,
            ended=_now(),
            status=record.status,
            http_status=record.http_status,
            results=record.results,
            message=record.message,
            of_access_log=record.of_access_log,
        )
        quads, shared = access_log_entry(event, self.minter, self.config.record_content)
        # one atomic write in the log's own thread; never cut short by the query limit
        limit = max(self.config.time_limit, 60.0)
        try:
            async with asyncio.timeout(limit):
                await self.access_log.record(quads, shared)
        except Exception as exc:  # whatever failed, the answer must not go out unlogged
            reason = str(exc) if isinstance(exc, TrailsError) else type(exc).__name__
            return PlainTextResponse(
                f"the access log could not be written, so the answer is withheld: {reason}\n",
                status_code=500,
            )
        return response


def create_app(
    store: Store | str | Path,
    tokens: TokenTable,
    config: EndpointConfig | None = None,
    *,
    pack: Mapping[str, Query] | None = None,
    access_log: Store | str | Path | None = None,
    settings: Settings | None = None,
) -> Endpoint:
    """Build the endpoint over a store object or a store location.

    Args:
        store: a ``Store`` of this process (queries run in threads here; it
            resolves relative IRIs against its own ``base_iri``, which
            ``open_store`` sets to the configured one), or a location:
            ``memory:``, a directory or ``http(s)://`` (queries run in worker
            processes that each open it with ``config.base_iri`` and are killed
            past the time limit).
        tokens: the bearer tokens.
        config: limits and settings (default ``EndpointConfig()``).
        pack: the query pack (default: the shipped one).
        access_log: the access log's store, or its location; by default
            ``access_log_location`` picks one (``PATH.access-log`` beside a
            directory store, in memory for ``memory:`` or a store object,
            ``.trails/access-log`` for a SPARQL server store).
        settings: resolves the default log location of a SPARQL server store.

    Returns:
        The endpoint; serve ``endpoint.app`` with any ASGI server.

    Raises:
        NotAStore: ``store`` names a folder that is not a store (serving never creates one).
        ConfigError: the access log would be the data store itself.
        StoreError: the access log's store cannot be opened.
    """
    config = config or EndpointConfig()
    if not isinstance(store, Store) and not str(store).startswith(_OPENED_EITHER_WAY):
        check_existing(Path(store).expanduser())  # serving reads: a folder must be a store
    if isinstance(access_log, Store):
        if access_log is store:
            raise ConfigError("the access log must be a store of its own")
        log = AccessLog(access_log, threads=config.threads)
    else:
        location = access_log_location(store, access_log, settings)
        log = AccessLog.open(location, threads=config.threads)
    evaluator: Evaluator
    if isinstance(store, Store):
        evaluator = InlineEvaluator(store, threads=config.threads)
    elif str(store) == "memory:":
        memory = open_store("memory:", base_iri=config.base_iri)
        evaluator = InlineEvaluator(memory, threads=config.threads)
    else:
        where = str(store)
        if not where.startswith(("http://", "https://")):
            where = str(Path(where).expanduser().resolve())
        evaluator = ProcessPool(
            where,
            processes=config.processes,
            threads=config.threads,
            max_pending=config.max_pending,
            snapshot_interval=config.snapshot_interval,
            base_iri=config.base_iri,
            memory_mb=config.worker_memory_mb,
        )
    return Endpoint(evaluator, tokens, config, pack, access_log=log)
