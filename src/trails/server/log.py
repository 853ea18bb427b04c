"""The endpoint's access log: every query received, recorded as provenance.

Each request that reaches the SPARQL endpoint, answered or refused, becomes a
``trails:QueryReceived`` activity in the access-log graph
(``Minter.graph("access-log")``): who asked (``prov:wasAssociatedWith`` the
token's principal; nobody for a request without a valid token), what (it
``prov:used`` a ``trails:SparqlQuery`` entity holding the text and its
sha256), when (start and end), how many results were sent and how it ended
(``trails:status``, ``trails:httpStatus``).

The log is a store of its own, apart from the data the endpoint serves
(``AccessLog``): the server process opens it and writes one entry per request
from a thread of its own, before the answer is released; the worker processes
never see it. Entries that arrive while a write is under way are committed
together in the next one (group commit): an answer still waits until its own
entry is stored, but concurrent requests share one store transaction instead
of queueing for one each. Ordinary tokens cannot reach the log at all, since
it is in no dataset they query; tokens with ``audit = true`` query it at
``/access-log/sparql``, and those queries are logged too.
``access_log_location`` says where it lives by default: beside a directory
store (``PATH.access-log``), in memory for an in-memory store or a store
object, and in ``.trails/access-log`` for a SPARQL server store.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from trails.config import Settings
from trails.errors import ConfigError
from trails.prov.builder import QuadBuilder
from trails.prov.content import canonical_json
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import T
from trails.server.pool import InlineEvaluator
from trails.store import Store, open_store
from trails.store.terms import IRI, Quad

__all__ = [
    "ACCESS_LOG",
    "REMOTE_DEFAULT",
    "AccessLog",
    "QueryReceived",
    "Status",
    "access_log_location",
    "access_log_quads",
]

ACCESS_LOG = "access-log"
REMOTE_DEFAULT = ".trails/access-log"

Status = Literal["ok", "refused", "invalid", "unauthorized", "timeout", "error"]


class QueryReceived(Event):
    """One request to the endpoint. It lives in the access-log graph, not in a session.

    ``session`` is unused (the access log is not a session); ``log_graph`` is
    the graph the event is written to.
    """

    content_apart: ClassVar[bool] = False  # the query text stays in the log graph

    session: str = ""
    log_graph: str
    activity: str
    principal: str | None
    query: str
    query_name: str | None = None
    params: dict[str, Any] | None = None
    received: datetime
    ended: datetime
    status: Status
    http_status: int
    results: int | None = None
    message: str | None = None
    of_access_log: bool = False

    @property
    def graph(self) -> IRI:
        """The access-log graph."""
        return IRI.trusted(self.log_graph)

    def emit(self, b: QuadBuilder) -> None:
        """Describe the request as a ``trails:QueryReceived`` activity."""
        a = IRI.trusted(self.activity)
        b.activity(a, T.QueryReceived, self.received, self.ended)
        if self.principal:
            b.associate(a, b.agent(self.principal))
        who = self.principal or "an unauthenticated client"
        what = f"query {self.query_name}" if self.query_name else "SPARQL query"
        if self.of_access_log:
            what = "access-log query"
        b.label(a, f"{what} by {who}: {self.status}")
        b.value(a, T.status, self.status)
        b.value(a, T.httpStatus, self.http_status)
        b.value(a, T.resultCount, self.results)
        b.value(a, T.errorMessage, self.message)
        b.value(a, T.queryName, self.query_name)
        if self.params is not None:
            b.value(a, T.queryParameters, canonical_json(self.params))
        b.entity(Minter.part(a, "query"), T.SparqlQuery, self.query, used_by=a, as_json=False)


def access_log_quads(event: QueryReceived, minter: Minter, content: str = "full") -> list[Quad]:
    """The quads of one access-log event (written by the endpoint's evaluator).

    Args:
        event: the request to describe.
        minter: the IRI minter (its base names the principals).
        content: ``full`` records the query text, ``hash`` only its sha256.

    Returns:
        The quads, all in the access-log graph.
    """
    builder = QuadBuilder(event.graph, minter, content)
    builder.content_graph = builder.graph  # the log is not erasable content: one graph
    event.emit(builder)
    return builder.quads


def _normal(location: str) -> str:
    if location == "memory:":
        return location
    if location.startswith(("http://", "https://")):
        return location.rstrip("/")
    return str(Path(location).expanduser().resolve())


def access_log_location(
    data: Store | str | Path, given: str | Path | None = None, settings: Settings | None = None
) -> str:
    """Where the access log of an endpoint over ``data`` lives.

    Args:
        data: the data store, or its location.
        given: the configured location (``--access-log`` / ``[serve] access_log``), if any.
        settings: resolves the SPARQL-server default against trails.toml's folder.

    Returns:
        A store location: ``memory:``, ``http(s)://...`` or an absolute directory.

    Raises:
        ConfigError: the log would be the data store itself.
    """
    where = None if isinstance(data, Store) else _normal(str(data))
    if given is not None and str(given):
        chosen = _normal(str(given))
        if chosen != "memory:" and chosen == where:
            raise ConfigError(
                "the access log must be a store of its own, not the store the endpoint serves"
            )
        return chosen
    if where is None or where == "memory:":
        return "memory:"
    if where.startswith(("http://", "https://")):
        base = settings.resolve_path(REMOTE_DEFAULT) if settings else Path(REMOTE_DEFAULT)
        return _normal(str(base))
    path = Path(where)
    return str(path.with_name(path.name + ".access-log"))


class AccessLog:
    """The endpoint's access-log store: written from one thread, read by audit tokens.

    Args:
        store: the log store (never the data store).
        owned: close the store with the log.
        threads: audit queries evaluated at once.
    """

    def __init__(self, store: Store, *, owned: bool = False, threads: int = 2) -> None:
        self.store = store
        self.owned = owned
        self.reader = InlineEvaluator(store, threads=threads)
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="trails-access-log")
        self._lock = threading.Lock()
        self._queued: list[tuple[list[Quad], Future[None]]] = []
        self._draining = False
        self._closed = False
        self.commits = 0  # store writes made (fewer than entries when they are grouped)

    @classmethod
    def open(cls, location: str, *, threads: int = 2) -> AccessLog:
        """Open (or create) the log store at ``location`` and own it.

        Raises:
            StoreError: the store cannot be opened (a directory held by another process).
        """
        return cls(open_store(location), owned=True, threads=threads)

    def write(self, quads: Sequence[Quad]) -> Future[None]:
        """Queue one entry's quads; the future resolves once they are in the store.

        Entries queued while the writer thread is busy are committed together, in
        one atomic write (group commit): each entry is whole or absent, and a
        future resolves only after the write that holds its entry has returned,
        so no entry is acknowledged before it is stored. When a grouped write
        fails, each of its entries is written again alone, so one bad entry fails
        only its own request.

        Raises:
            RuntimeError: the log is closed.
        """
        future: Future[None] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the access log is closed")
            self._queued.append((list(quads), future))
            if not self._draining:
                self._writer.submit(self._drain)  # raises once the log is closed
                self._draining = True
        return future

    def _drain(self) -> None:
        """The writer thread: commit what is queued, group by group, until nothing is."""
        while True:
            with self._lock:
                batch, self._queued = self._queued, []
                if not batch:
                    self._draining = False
                    return
            # an entry whose caller gave up (cancelled) is not written
            live = [(q, f) for q, f in batch if f.set_running_or_notify_cancel()]
            if len(live) > 1:
                try:
                    self.store.write([quad for quads, _ in live for quad in quads])
                    grouped = True
                except Exception:  # each entry is tried alone below
                    grouped = False
                if grouped:
                    self.commits += 1
                    for _, future in live:
                        future.set_result(None)
                    continue
            for quads, future in live:
                try:
                    self.store.write(quads)
                except BaseException as exc:  # the request answers 500, never unlogged
                    future.set_exception(exc)
                else:
                    self.commits += 1
                    future.set_result(None)

    def close(self) -> None:
        """Finish the writes already queued, stop the readers, close an owned store."""
        with self._lock:
            self._closed = True
        self._writer.shutdown(wait=True)
        self.reader.close()
        if self.owned:
            self.store.close()
