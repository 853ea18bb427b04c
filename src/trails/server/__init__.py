"""trails' HTTP servers: the authenticated, read-only SPARQL 1.1 endpoint and the OTLP receiver.

``trails serve`` is the endpoint, with the OTLP/HTTP trace receiver mounted on
it; ``trails otlp`` runs the receiver alone. Every HTTP route of trails lives
in this room, so the HTTP machinery never mixes with the library it serves:
the rooms below (audit, compliance, evidence, otel, ...) know nothing of HTTP.

The endpoint is six modules. A request's path through them::

    HTTP request (GET ?query= / POST form / POST application/sparql-query)
      |
      v
    app.Endpoint._sparql ......... read the fields, refuse oversized queries (413)
      |                            (``/queries/NAME``: the pack query, parameters bound)
      v
    auth.TokenTable.authenticate . bearer token -> Grant (principal, graph patterns,
      |                            own sessions, audit); none -> 401
      v
    sparql.analyse ............... refuse updates and SERVICE (403), find the form;
      |                            the query's own FROM / FROM NAMED by a SPARQL
      |                            parser (relative IRIs against the base IRI)
      v
    app.negotiate ................ Accept -> result format (406 if none fits)
      |
      v
    jobs.QueryJob -> Evaluator ... InlineEvaluator (threads over a Store object) or
      |                            ProcessPool (workers that open the store and are
      |                            killed past the time limit -> 503; a worker past
      |                            its memory limit ends -> 503)
      v
    pool.run_job (in the worker)
      |-- graphs.GraphCache.readable .. the graphs this grant may read (listed <= 1 s ago)
      |-- graphs.dataset .............. grant x query / protocol dataset -> store keywords
      |-- Store.query_to .............. evaluate against the one base IRI and
      |                                 serialise into a buffer that stops the store
      |                                 at max_result_bytes (400); then count the
      |                                 results against max_results (400)
      v
    app.Endpoint._logged ......... log.AccessLog writes the request as provenance, then
      |                            the answer is released (or withheld if the log fails)
      v
    HTTP response

``create_app`` builds the endpoint over a store object or location;
``endpoint.app`` is the ASGI application (Starlette). The modules:

- ``app``: the routes, configuration, content negotiation, service description.
- ``auth``: tokens, their hashes and grants.
- ``sparql``: what the endpoint must know about a query before a store sees it.
- ``graphs``: which graphs a grant reads; the dataset a query runs over.
- ``pool``: where queries run, how an overrunning one is stopped, result and memory limits.
- ``jobs``: the jobs and outcomes that cross the pipe to the worker processes.
- ``log``: the access log, a store of its own written by the server process.
- ``limits`` and ``heads``: failed logins throttled, bodies and request heads that
  must arrive in time (``heads`` is the HTTP protocol ``trails serve`` and
  ``trails otlp`` give uvicorn).

The receiver is two:

- ``traces``: ``POST /v1/traces``, OTLP/HTTP spans read by ``trails.otel`` and
  written atomically per batch.
- ``write_tokens``: which bearer tokens may send spans.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trails._lazy import lazy_names

if TYPE_CHECKING:
    from trails.server.app import (
        GRAPH_TYPES,
        RESULT_TYPES,
        Endpoint,
        EndpointConfig,
        create_app,
        negotiate,
        service_description,
    )

# the names load the endpoint (and Starlette) on first use (``trails._lazy``): a command that
# only analyses a query with ``trails.server.sparql`` does not start the web stack
__getattr__, __dir__ = lazy_names(
    __name__,
    dict.fromkeys(
        (
            "GRAPH_TYPES",
            "RESULT_TYPES",
            "Endpoint",
            "EndpointConfig",
            "create_app",
            "negotiate",
            "service_description",
        ),
        "trails.server.app",
    ),
)

__all__ = [
    "GRAPH_TYPES",
    "RESULT_TYPES",
    "Endpoint",
    "EndpointConfig",
    "create_app",
    "negotiate",
    "service_description",
]
