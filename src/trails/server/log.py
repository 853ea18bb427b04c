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
of queueing for one each; the principal's description, the same in each of
its entries, is written with the first entry that needs it and not again.
Ordinary tokens cannot reach the log at all, since
it is in no dataset they query; tokens with ``audit = true`` query it at
``/access-log/sparql``, and those queries are logged too.
``access_log_location`` says where it lives by default: beside a directory
store (``PATH.access-log``), in memory for an in-memory store or a store
object, and in ``.trails/access-log`` for a SPARQL server store.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from trails.config import Settings
from trails.errors import ConfigError
from trails.prov.builder import QuadBuilder
from trails.prov.content import canonical_json, sha256_hex
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, RDF, RDFS, T
from trails.server.pool import InlineEvaluator
from trails.store import Store, open_store
from trails.store.terms import IRI, Quad, literal
from trails.store.terms import Literal as RDFLiteral

__all__ = [
    "ACCESS_LOG",
    "REMOTE_DEFAULT",
    "AccessLog",
    "QueryReceived",
    "Status",
    "access_log_entry",
    "access_log_location",
    "access_log_quads",
]

ACCESS_LOG = "access-log"
_TYPE = RDF.type
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
        b.label(a, _label(self))
        b.value(a, T.status, self.status)
        b.value(a, T.httpStatus, self.http_status)
        b.value(a, T.resultCount, self.results)
        b.value(a, T.errorMessage, self.message)
        b.value(a, T.queryName, self.query_name)
        if self.params is not None:
            b.value(a, T.queryParameters, canonical_json(self.params))
        b.entity(Minter.part(a, "query"), T.SparqlQuery, self.query, used_by=a, as_json=False)


def access_log_quads(event: QueryReceived, minter: Minter, content: str = "full") -> list[Quad]:
    """The quads of one access-log event, built as every event's are (through the
    ``QuadBuilder``): the reference that the tests hold ``access_log_entry`` (what the
    endpoint writes) equal to.

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


def access_log_entry(
    event: QueryReceived, minter: Minter, content: str = "full"
) -> tuple[list[Quad], list[Quad]]:
    """The quads of ``access_log_quads`` split for ``AccessLog.write``: the entry's own,
    and those every entry of its principal repeats (the principal's description).

    Together they are exactly the quads of ``access_log_quads(event, minter,
    content)``, built directly: every request of the endpoint makes one, and
    without the builder's generality it costs half as much.
    """
    g = IRI.trusted(event.log_graph)
    a = IRI.trusted(event.activity)
    own = [
        Quad(a, _TYPE, T.QueryReceived, g),
        Quad(a, _TYPE, PROV.Activity, g),
        Quad(a, PROV.startedAtTime, literal(event.received), g),
        Quad(a, PROV.endedAtTime, literal(event.ended), g),
    ]
    shared: list[Quad] = []
    if event.principal:
        agent = minter.agent(event.principal)
        shared = [
            Quad(agent, _TYPE, T.Principal, g),
            Quad(agent, _TYPE, PROV.Agent, g),
            Quad(agent, T.principalId, RDFLiteral(event.principal), g),
        ]
        own.append(Quad(a, PROV.wasAssociatedWith, agent, g))
    own.append(Quad(a, RDFS.label, RDFLiteral(_label(event)), g))
    own.append(Quad(a, T.status, RDFLiteral(event.status), g))
    own.append(Quad(a, T.httpStatus, literal(event.http_status), g))
    if event.results is not None:
        own.append(Quad(a, T.resultCount, literal(event.results), g))
    if event.message is not None:
        own.append(Quad(a, T.errorMessage, RDFLiteral(event.message), g))
    if event.query_name is not None:
        own.append(Quad(a, T.queryName, RDFLiteral(event.query_name), g))
    if event.params is not None:
        own.append(Quad(a, T.queryParameters, RDFLiteral(canonical_json(event.params)), g))
    q = Minter.part(a, "query")
    text = str(event.query)
    own.append(Quad(q, _TYPE, T.SparqlQuery, g))
    own.append(Quad(q, _TYPE, PROV.Entity, g))
    if content == "full":
        own.append(Quad(q, PROV.value, RDFLiteral(text), g))
    else:
        own.append(Quad(q, T.contentPolicy, RDFLiteral(content), g))
    own.append(Quad(q, T.sha256, RDFLiteral(sha256_hex(text)), g))
    own.append(Quad(a, PROV.used, q, g))
    return own, shared


def _label(event: QueryReceived) -> str:
    who = event.principal or "an unauthenticated client"
    what = f"query {event.query_name}" if event.query_name else "SPARQL query"
    if event.of_access_log:
        what = "access-log query"
    return f"{what} by {who}: {event.status}"


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
        self._queued: list[_Entry] = []
        self._draining = False
        self._closed = False
        # shared quads (a principal's description) this log has committed: not rewritten
        self._stored: set[Quad] = set()
        self.commits = 0  # store writes made (fewer than entries when they are grouped)

    @classmethod
    def open(cls, location: str, *, threads: int = 2) -> AccessLog:
        """Open (or create) the log store at ``location`` and own it.

        Raises:
            StoreError: the store cannot be opened (a directory held by another process).
        """
        return cls(open_store(location), owned=True, threads=threads)

    def write(self, quads: Sequence[Quad], shared: Sequence[Quad] = ()) -> Future[None]:
        """Queue one entry's quads; the future resolves once they are in the store.

        Entries queued while the writer thread is busy are committed together, in
        one atomic write (group commit): each entry is whole or absent, and a
        future resolves only after the write that holds its entry has returned,
        so no entry is acknowledged before it is stored. When a grouped write
        fails, each of its entries is written again alone, so one bad entry fails
        only its own request.

        ``shared`` are quads of the entry that every entry of the same principal
        repeats (the principal's description): they go in the same write as the
        entry unless a write of this log already stored them, so the store holds
        the whole entry either way, without rewriting the same quads per request.

        Raises:
            RuntimeError: the log is closed.
        """
        future: Future[None] = Future()
        self._queue(_Entry(list(quads), shared, future))
        return future

    async def record(self, quads: Sequence[Quad], shared: Sequence[Quad] = ()) -> None:
        """``write`` for a caller on an event loop: returns once the entry is stored.

        The writer wakes the loop once per group commit for all of that loop's
        entries, rather than once per entry. Cancelling the call before the
        writer takes the entry leaves it unwritten.

        Raises:
            RuntimeError: the log is closed.
            Exception: what the store raised writing the entry.
        """
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._queue(_Entry(list(quads), shared, None, loop, waiter))
        await waiter

    def _queue(self, entry: _Entry) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("the access log is closed")
            self._queued.append(entry)
            if not self._draining:
                self._writer.submit(self._drain)  # raises once the log is closed
                self._draining = True

    def _drain(self) -> None:
        """The writer thread: commit what is queued, group by group, until nothing is."""
        while True:
            with self._lock:
                batch, self._queued = self._queued, []
                if not batch:
                    self._draining = False
                    return
            # an entry whose caller gave up (cancelled) is not written
            live = [e for e in batch if e.take()]
            done: list[tuple[_Entry, BaseException | None]] = []
            if len(live) > 1:
                quads, shared = self._quads(live)
                try:
                    self.store.write(quads)
                    grouped = True
                except Exception:  # each entry is tried alone below
                    grouped = False
                if grouped:
                    self.commits += 1
                    self._remember(shared)
                    done = [(e, None) for e in live]
                    live = []
            for entry in live:
                quads, shared = self._quads([entry])
                try:
                    self.store.write(quads)
                except BaseException as exc:  # the request answers 500, never unlogged
                    done.append((entry, exc))
                else:
                    self.commits += 1
                    self._remember(shared)
                    done.append((entry, None))
            _settle(done)

    def _quads(self, entries: Sequence[_Entry]) -> tuple[list[Quad], set[Quad]]:
        """The quads of ``entries`` in one list, each shared quad once and only if not stored."""
        quads = [quad for entry in entries for quad in entry.quads]
        shared: set[Quad] = set()
        for entry in entries:
            for quad in entry.shared:
                if quad not in self._stored and quad not in shared:
                    shared.add(quad)
                    quads.append(quad)
        return quads, shared

    def _remember(self, shared: set[Quad]) -> None:
        if len(self._stored) + len(shared) > _STORED_MAX:
            self._stored.clear()
        self._stored.update(shared)

    def close(self) -> None:
        """Finish the writes already queued, stop the readers, close an owned store."""
        with self._lock:
            self._closed = True
        self._writer.shutdown(wait=True)
        self.reader.close()
        if self.owned:
            self.store.close()


#: shared quads remembered as stored (past it, the memory starts again: they are rewritten)
_STORED_MAX = 4096


class _Entry:
    """One queued entry and who waits for it: a thread's future, or a loop's."""

    __slots__ = ("future", "loop", "quads", "shared", "waiter")

    def __init__(
        self,
        quads: list[Quad],
        shared: Sequence[Quad],
        future: Future[None] | None,
        loop: asyncio.AbstractEventLoop | None = None,
        waiter: asyncio.Future[None] | None = None,
    ) -> None:
        self.quads = quads
        self.shared = shared
        self.future = future
        self.loop = loop
        self.waiter = waiter

    def take(self) -> bool:
        """Whether the entry is still wanted (its caller has not given up); marks it taken."""
        if self.future is not None:
            return self.future.set_running_or_notify_cancel()
        return self.waiter is not None and not self.waiter.cancelled()


def _settle(done: Sequence[tuple[_Entry, BaseException | None]]) -> None:
    """Tell each waiter how its entry's write ended: one wake-up per event loop."""
    by_loop: dict[
        asyncio.AbstractEventLoop, list[tuple[asyncio.Future[None], BaseException | None]]
    ]
    by_loop = {}
    for entry, error in done:
        if entry.future is not None:
            if error is None:
                entry.future.set_result(None)
            else:
                entry.future.set_exception(error)
        elif entry.loop is not None and entry.waiter is not None:
            by_loop.setdefault(entry.loop, []).append((entry.waiter, error))
    for loop, waiters in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(_wake, waiters)


def _wake(waiters: Sequence[tuple[asyncio.Future[None], BaseException | None]]) -> None:
    """On the loop: resolve the waiters whose callers still wait."""
    for waiter, error in waiters:
        if waiter.done():  # cancelled meanwhile (the caller's time limit)
            continue
        if error is None:
            waiter.set_result(None)
        else:
            waiter.set_exception(error)
