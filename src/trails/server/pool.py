"""Where the endpoint's queries run, and how one that runs too long is stopped.

pyoxigraph cannot interrupt a query from Python: once ``Store.query`` starts a
join, it runs to its end. So the endpoint evaluates in worker processes and
stops an overrunning query by killing the process that runs it:

- ``ProcessPool`` starts ``processes`` workers (``spawn``), each opening the
  store itself with ``open_store(location)`` and evaluating up to ``threads``
  jobs at once (pyoxigraph releases the GIL while it evaluates). A watchdog
  thread kills a worker whose job passes its deadline; that job fails with
  ``QueryTimeout``, the worker's other jobs (all read-only) run again on a
  fresh worker, and the endpoint goes on serving. A directory store may be
  opened by one process only (RocksDB locks it), so for a directory the pool
  has one worker; a SPARQL server store (``http(s)://``) takes any number.
  Workers only read queries: the access log is a store of the server process.
  The one write a worker takes is a ``WriteJob`` for the trace receiver: a
  directory store has one opener, so its single worker is also its one writer
  (``attach_writer``); it runs writes one at a time, never under a time limit,
  and runs a write again on a fresh worker when a query's overrun killed the
  old one (the receiver's writes are idempotent).
- ``InlineEvaluator`` runs jobs in threads over a ``Store`` object of this
  process (an in-memory store, tests, embedding the endpoint in an
  application). It cannot stop a query: the endpoint answers 503 at the time
  limit and the thread finishes in the background.

``run_job`` is the one function both run: resolve the graphs the token may
read (``graphs``: from a graph list each evaluator keeps for a
second), evaluate over that dataset (or unrestricted, for a token that may
read everything), serialise, count, check the limits. The answer is
serialised into a buffer that stops the store at ``max_bytes`` (the embedded
store serialises as it evaluates; the remote one is read as a stream), so a
huge answer never exists in full in a worker; the results of an answer
within that size are then counted against ``max_results``.

What the serialising buffer cannot bound is what the engine holds while it
evaluates: one ``GROUP_CONCAT`` over a large store is a single value built whole
before the first byte is serialised. So each worker runs under a data-size limit
(``RLIMIT_DATA``, Linux): what it holds once the store is open (the store's caches
and threads, which vary with the machine) plus ``memory_mb`` for its queries. A
query that passes it fails the engine's allocation, which aborts the worker; the
pool then answers that query with a ``memory`` outcome naming the limit and starts
a fresh worker. When several
queries shared the dead worker, each runs again by itself: the one that passes
the limit alone is the one refused, the others are answered.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import multiprocessing
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from trails.errors import (
    ConfigError,
    QueryParameterError,
    QueryRefused,
    QuerySyntaxError,
    QueryTimeout,
    StoreError,
    StoreLockedError,
    TrailsError,
)
from trails.server.graphs import GRAPH_LIST_TTL, GraphCache, dataset
from trails.server.jobs import (
    Outcome,
    QueryJob,
    WriteJob,
    Writer,
    job_from_wire,
    job_wire,
    outcome_wire,
)
from trails.store import Store, open_store
from trails.store.base import DEFAULT_BASE_IRI
from trails.store.results import count_results
from trails.store.snapshot import SNAPSHOT_EVERY, LiveSnapshot

__all__ = [
    "Evaluator",
    "InlineEvaluator",
    "Outcome",
    "ProcessPool",
    "QueryJob",
    "WriteJob",
    "Writer",
    "run_job",
]


#: seconds between a worker's calls of ``Writer.tick``
TICK_EVERY = 5.0


def run_job(store: Store, job: QueryJob, graphs: GraphCache | None = None) -> Outcome:
    """Run one query against ``store``; every failure becomes an ``Outcome``.

    Args:
        store: the store (of this process).
        job: the query.
        graphs: the evaluator's graph list of ``store`` (default: list it now).

    Returns:
        The result bytes and count, or the kind and message of the failure.
    """
    try:
        cache = graphs if graphs is not None else GraphCache(store, ttl=0)
        asked = job.default_graphs is not None or job.named_graphs is not None
        readable = cache.readable(job.grant, job.reserved, job.base_iri, listed=asked)
        try:
            # stops at max_bytes while the store serialises (or downloads) the answer
            data = store.query_to(
                job.sparql,
                dict(job.params) or None,
                format=job.format,
                max_bytes=job.max_bytes,
                **dataset(readable, job.default_graphs, job.named_graphs),
            )
        except QueryRefused as exc:
            return Outcome("too_large", message=str(exc))
        count = count_results(data, job.format)
        if count > job.max_results:
            return Outcome(
                "too_large",
                message=f"the result has {count} results, over the limit of {job.max_results}; "
                f"add a LIMIT or narrow the query",
            )
        return Outcome(data=data, count=count)
    except QuerySyntaxError as exc:
        message = _public(str(exc), store)
        return Outcome("syntax", message=message, line=exc.line, column=exc.column)
    except QueryParameterError as exc:
        return Outcome("parameter", message=_public(str(exc), store))
    except TrailsError as exc:
        return Outcome("store", message=_public(str(exc), store))
    except MemoryError:  # Python's side of the worker's memory limit (the pool names it)
        return Outcome("memory", message="the query needed more memory than it may use")
    except Exception as exc:  # a worker must answer every job, whatever the backend raised
        return Outcome("store", message=_public(f"{type(exc).__name__}: {exc}", store))


def _public(message: str, store: Store) -> str:
    """``message`` without the addresses of a SPARQL server behind the endpoint.

    A remote store names its server in its errors, which is right for an
    operator and wrong for a client of the endpoint: the server is internal.
    """
    for name in ("query_url", "update_url", "gsp_url"):
        url = getattr(store, name, None)
        if not isinstance(url, str) or not url:
            continue
        parts = urlsplit(url)
        netloc = parts.netloc.rsplit("@", 1)[-1]
        for spelling in (url, urlunsplit(parts._replace(netloc=netloc))):
            message = message.replace(spelling, "the store")
        if netloc:
            message = message.replace(netloc, "the store")
    return message


class Evaluator(Protocol):
    """Runs jobs: the endpoint awaits the future ``submit`` returns."""

    def start(self) -> None:
        """Get ready to run jobs (idempotent)."""
        ...

    def submit(self, job: QueryJob, time_limit: float | None) -> Future[Outcome]:
        """Queue ``job``; the future fails with ``QueryTimeout`` when it overruns."""
        ...

    def close(self) -> None:
        """Stop, failing jobs still queued."""
        ...


class InlineEvaluator:
    """Jobs in a thread pool over a ``Store`` of this process (no hard time limit).

    Args:
        store: the store to evaluate on.
        threads: how many jobs run at once.
        graph_ttl: seconds the store's graph list is kept (see ``GraphCache``).
    """

    stops_queries = False

    def __init__(
        self, store: Store, *, threads: int = 4, graph_ttl: float = GRAPH_LIST_TTL
    ) -> None:
        self.store = store
        self.graphs = GraphCache(store, graph_ttl)
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="trails-endpoint")

    def start(self) -> None:
        """Nothing to start: the store is open."""

    def submit(self, job: QueryJob, time_limit: float | None) -> Future[Outcome]:
        """Run ``job`` in a thread (the caller enforces ``time_limit``)."""
        return self._executor.submit(run_job, self.store, job, self.graphs)

    def close(self) -> None:
        """Stop the threads after the jobs already running."""
        self._executor.shutdown(wait=False, cancel_futures=True)


class _WorkerStopped(BaseException):
    """SIGTERM reached a worker: it stops serving, closes its store and exits quietly."""


def _stop_worker(signum: int, frame: Any) -> None:
    raise _WorkerStopped


def _worker_main(
    conn: Connection,
    location: str,
    *,
    threads: int,
    graph_ttl: float,
    base_iri: str | None,
    make_writer: Callable[[Store], Writer] | None = None,
    snapshot_interval: float = SNAPSHOT_EVERY,
    memory_mb: int | None = None,
) -> None:
    """A worker process: open the store, then run queries (and writes) until the pipe closes.

    Ctrl-C reaches every process of the terminal's group: a worker ignores it, and
    the serving process stops its workers on its way out. SIGTERM (a service manager
    stopping the group) makes a worker stop serving, close its store and exit; a
    pipe the serving process no longer holds ends it too. Either way it exits
    without a word: no traceback of a broken pipe on the operator's terminal.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_worker)
    # stopped before serving, or the serving process is gone: nothing to report
    with contextlib.suppress(_WorkerStopped, BrokenPipeError, EOFError):
        _serve_jobs(
            conn,
            location,
            threads=threads,
            graph_ttl=graph_ttl,
            base_iri=base_iri,
            make_writer=make_writer,
            snapshot_interval=snapshot_interval,
            memory_mb=memory_mb,
        )


def _limit_memory(megabytes: int) -> None:
    """Cap this process's data (heap, private mappings) at what it holds now + ``megabytes``.

    Past the cap, allocations fail (the engine then aborts the process).
    """
    if sys.platform == "win32":  # pragma: no cover - no resource limits there
        return
    import resource

    held = 0
    with contextlib.suppress(OSError, ValueError):  # Linux: the data size now
        status = Path("/proc/self/status").read_text(encoding="ascii")
        held = int(status.split("VmData:", 1)[1].split()[0]) * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = held + megabytes * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def _serve_jobs(
    conn: Connection,
    location: str,
    *,
    threads: int,
    graph_ttl: float,
    base_iri: str | None,
    make_writer: Callable[[Store], Writer] | None,
    snapshot_interval: float = SNAPSHOT_EVERY,
    memory_mb: int | None = None,
) -> None:
    try:
        directory = not location.startswith(("http://", "https://", "memory:"))
        try:
            if directory and make_writer is None:
                # serving only reads: never the writer's lock, so agents, `trails hold`
                # and `trails erase` open the store whenever they start
                raise StoreLockedError("a reader takes no lock")
            store = open_store(location, base_iri=base_iri, create=False)
        except StoreLockedError:
            # read-only snapshots, renewed every few seconds (what an agent records appears)
            store = LiveSnapshot(
                location, base_iri=base_iri or DEFAULT_BASE_IRI, interval=snapshot_interval
            )
            make_writer = None  # spans go to the process that writes the store
        writer = make_writer(store) if make_writer is not None else None
    except Exception as exc:  # reported to the pool, which explains it to the operator
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    graphs = GraphCache(store, graph_ttl)
    if memory_mb is not None:
        _limit_memory(memory_mb)  # the queries' share, on top of the open store's
    conn.send(("ready", None))
    send_lock = threading.Lock()
    writes = ThreadPoolExecutor(1, thread_name_prefix="trails-writer")  # one write at a time
    stopping = threading.Event()

    def write(payload: Any) -> Outcome:
        if isinstance(store, LiveSnapshot):
            return Outcome(
                "store",
                message="the store is being written by another process and is served as "
                "read-only snapshots: nothing was written (record into that process's "
                "store, or share one store through a SPARQL server)",
            )
        if writer is None:
            return Outcome("store", message="this endpoint takes no writes")
        try:
            return writer.write(payload)
        except Exception as exc:  # a worker must answer every job
            return Outcome("store", message=f"{type(exc).__name__}: {exc}")

    def ticker() -> None:
        while not stopping.wait(TICK_EVERY):
            if writer is not None:
                with contextlib.suppress(RuntimeError):  # the executor is shutting down
                    writes.submit(writer.tick)

    def finish(job_id: int, future: Future[Outcome]) -> None:
        try:
            outcome = future.result()
        except BaseException as exc:  # pragma: no cover - run_job catches everything
            outcome = Outcome("store", message=f"{type(exc).__name__}: {exc}")
        with send_lock, contextlib.suppress(OSError):  # the serving process is gone
            conn.send((job_id, outcome_wire(outcome)))

    threading.Thread(target=ticker, name="trails-writer-tick", daemon=True).start()
    with ThreadPoolExecutor(threads) as executor:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError, _WorkerStopped):
                break
            if message is None:
                break
            job_id, wire = message
            job = job_from_wire(wire)
            if isinstance(job, WriteJob):
                future = writes.submit(write, job.payload)
            else:
                future = executor.submit(run_job, store, job, graphs)
            future.add_done_callback(functools.partial(finish, job_id))
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the close
    stopping.set()
    writes.shutdown(wait=True)
    if writer is not None:
        writer.close()
    store.close()


@dataclass(eq=False)
class _Pending:
    id: int
    job: QueryJob | WriteJob
    future: Future[Outcome]
    queued_until: float | None
    limit: float | None
    deadline: float | None = None
    tries: int = 0
    timed_out: bool = False
    alone: bool = False  # runs on a worker with no other job (after a memory death)


@dataclass(eq=False)
class _Slot:
    process: Any
    conn: Connection
    running: dict[int, _Pending] = field(default_factory=dict)
    ready: bool = True
    killed: bool = False
    send_lock: threading.Lock = field(default_factory=threading.Lock)


class ProcessPool:
    """Worker processes that each open the store; overrunning queries are killed.

    Args:
        location: the store location each worker opens (a directory, or
            ``http(s)://``); a directory gets exactly one worker.
        processes: how many workers for a SPARQL server store.
        threads: jobs each worker runs at once.
        max_pending: jobs allowed to wait for a free thread before the pool
            refuses more with a 503.
        start_timeout: seconds a worker may take to open the store.
        graph_ttl: seconds each worker keeps the store's graph list.
        base_iri: the base relative IRIs in queries resolve against (default:
            the configured one).
        snapshot_interval: a directory store another process writes is served as
            read-only snapshots, a new one every this many seconds.
        memory_mb: the data each worker's queries may use, in MiB, on top of what
            the worker holds with the store open (None: no limit); a query past it
            is answered with a ``memory`` outcome.
    """

    stops_queries = True

    def __init__(
        self,
        location: str,
        *,
        processes: int = 2,
        threads: int = 4,
        max_pending: int = 256,
        start_timeout: float = 60.0,
        graph_ttl: float = GRAPH_LIST_TTL,
        base_iri: str | None = None,
        snapshot_interval: float = SNAPSHOT_EVERY,
        memory_mb: int | None = None,
    ) -> None:
        self.base_iri = base_iri
        self.memory_mb = memory_mb
        self.snapshot_interval = snapshot_interval
        remote = location.startswith(("http://", "https://"))
        self.location = location
        self.processes = max(1, processes) if remote else 1
        self.threads = max(1, threads)
        self.max_pending = max_pending
        self.start_timeout = start_timeout
        self.graph_ttl = graph_ttl
        self._context = multiprocessing.get_context("spawn")
        self._lock = threading.RLock()
        self._slots: list[_Slot | None] = [None] * self.processes
        self._backlog: deque[_Pending] = deque()
        self._ids = itertools.count(1)
        self._closing = False
        self._started = False
        self._ready = threading.Semaphore(0)
        self._start_error: str | None = None
        self._make_writer: Callable[[Store], Writer] | None = None
        self.restarts = 0

    @property
    def writes(self) -> bool:
        """Whether the workers take ``WriteJob``s (a writer is attached)."""
        return self._make_writer is not None

    def attach_writer(self, make_writer: Callable[[Store], Writer]) -> None:
        """Let the workers write: each builds ``make_writer(store)`` over the store it opens.

        Only a pool of one worker can have a writer (one writer per store); the
        function must be picklable (workers are spawned).

        Raises:
            ConfigError: the pool has more than one worker, or has started.
        """
        if self.processes != 1 or self._started:
            raise ConfigError("only a pool of one worker, not yet started, can take writes")
        self._make_writer = make_writer

    # -- life cycle -------------------------------------------------------------

    def start(self) -> None:
        """Start the workers and wait until each has opened the store.

        Raises:
            StoreError: a worker could not open the store (locked, unreachable ...).
        """
        with self._lock:
            if self._started:
                return
            self._started = True
        for index in range(self.processes):
            threading.Thread(
                target=self._keep,
                args=(index,),
                name=f"trails-endpoint-keeper-{index}",
                daemon=True,
            ).start()
        threading.Thread(target=self._watch, name="trails-endpoint-watchdog", daemon=True).start()
        for _ in range(self.processes):
            self._ready.acquire()
            if self._start_error is not None:
                self.close()
                raise StoreError(
                    f"the endpoint's worker could not open the store: {self._start_error}"
                )

    def close(self) -> None:
        """Stop every worker; queued and running jobs fail with ``StoreError``."""
        with self._lock:
            self._closing = True
            slots = [s for s in self._slots if s is not None]
            pending = list(self._backlog)
            self._backlog.clear()
            for slot in slots:
                pending.extend(slot.running.values())
                slot.running.clear()
        for slot in slots:
            try:
                with slot.send_lock:
                    slot.conn.send(None)
            except OSError:
                pass
        for slot in slots:  # a writer ends its open sessions first
            slot.process.join(timeout=60 if self._make_writer is not None else 5)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join(timeout=5)
        for item in pending:
            _fail(item.future, StoreError("the endpoint is shutting down"))

    # -- jobs -------------------------------------------------------------------

    def submit(self, job: QueryJob | WriteJob, time_limit: float | None) -> Future[Outcome]:
        """Queue ``job``; it fails with ``QueryTimeout`` past ``time_limit`` seconds.

        Raises:
            QueryRefused: 503, too many jobs are already waiting.
            StoreError: the pool is closed.
        """
        future: Future[Outcome] = Future()
        # The time limit runs while a worker evaluates the job; waiting for a free (or a
        # restarting) worker has its own, longer bound.
        queued_until = time.monotonic() + max(3 * time_limit, 30.0) if time_limit else None
        with self._lock:
            if self._closing:
                raise StoreError("the endpoint is shutting down")
            if len(self._backlog) >= self.max_pending:
                raise QueryRefused(
                    f"the endpoint is busy ({len(self._backlog)} queries waiting); try again",
                    status=503,
                )
            self._backlog.append(_Pending(next(self._ids), job, future, queued_until, time_limit))
        self._dispatch()
        return future

    def _dispatch(self) -> None:
        sends: list[tuple[_Slot, _Pending]] = []
        with self._lock:
            while self._backlog:
                alone = self._backlog[0].alone
                free = [
                    s
                    for s in self._slots
                    if s is not None
                    and s.ready
                    and len(s.running) < self.threads
                    and not (s.running and alone)
                    and not any(i.alone for i in s.running.values())
                ]
                if not free:
                    break
                slot = min(free, key=lambda s: len(s.running))
                item = self._backlog.popleft()
                if item.limit:
                    item.deadline = time.monotonic() + item.limit
                slot.running[item.id] = item
                sends.append((slot, item))
        for slot, item in sends:
            try:
                with slot.send_lock:
                    slot.conn.send((item.id, job_wire(item.job)))
            except OSError:
                pass  # the worker died; its keeper runs the job again elsewhere

    # -- workers ----------------------------------------------------------------

    def _spawn(self) -> tuple[Any, Connection]:
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=_worker_main,
            args=(child, self.location),
            kwargs={
                "threads": self.threads,
                "graph_ttl": self.graph_ttl,
                "base_iri": self.base_iri,
                "make_writer": self._make_writer,
                "snapshot_interval": self.snapshot_interval,
                "memory_mb": self.memory_mb,
            },
            name="trails-endpoint-worker",
            daemon=True,
        )
        process.start()
        child.close()
        if not parent.poll(self.start_timeout):
            process.kill()
            process.join()
            raise StoreError(f"no answer within {self.start_timeout} s")
        try:
            status, detail = parent.recv()
        except EOFError:
            process.join()
            raise StoreError(f"the worker exited with status {process.exitcode}") from None
        if status != "ready":
            process.join()
            raise StoreError(str(detail))
        return process, parent

    def _keep(self, index: int) -> None:
        """Run one worker slot: spawn, serve, and after a death handle its jobs and respawn."""
        first = True
        failures = 0
        while not self._closing:
            try:
                process, conn = self._spawn()
            except StoreError as exc:
                failures += 1
                if first or failures >= 5:
                    self._start_error = str(exc)
                    if first:
                        self._ready.release()
                    self._fail_backlog(StoreError(f"no worker can open the store: {exc}"))
                    return
                time.sleep(0.2 * failures)
                continue
            failures = 0
            slot = _Slot(process, conn)
            with self._lock:
                self._slots[index] = slot
            if first:
                first = False
                self._ready.release()
            self._dispatch()
            self._serve(slot)
            self._after_death(slot)

    def _serve(self, slot: _Slot) -> None:
        while True:
            try:
                job_id, wire = slot.conn.recv()
            except (EOFError, OSError):
                return
            outcome = Outcome(*wire)
            with self._lock:
                item = slot.running.pop(job_id, None)
            if outcome.kind == "memory":
                outcome = self._memory_outcome()
            if item is not None:
                _resolve(item.future, outcome)
            self._dispatch()

    def _after_death(self, slot: _Slot) -> None:
        slot.process.join(timeout=10)  # the store's lock is free only once it has exited
        failed: list[tuple[_Pending, TrailsError]] = []
        refused: list[_Pending] = []
        # a worker that passed its memory limit: the query that ran alone on it is refused,
        # queries that shared it run again one at a time (the one past the limit dies alone)
        memory = not slot.killed and self._memory_death(slot.process)
        queries = sum(isinstance(i.job, QueryJob) for i in slot.running.values())
        with self._lock:
            slot.ready = False
            self.restarts += 1
            for item in sorted(slot.running.values(), key=lambda p: p.id, reverse=True):
                if item.timed_out:
                    failed.append((item, _timeout(item.limit)))
                elif memory and isinstance(item.job, QueryJob) and (item.alone or queries == 1):
                    refused.append(item)
                elif memory and isinstance(item.job, QueryJob) and not self._closing:
                    item.alone = True
                    self._backlog.appendleft(item)
                elif item.tries < 2 and not self._closing:
                    item.tries += 1
                    self._backlog.appendleft(item)
                else:
                    failed.append((item, StoreError("the worker evaluating this query died")))
            slot.running.clear()
        for item, error in failed:
            _fail(item.future, error)
        for item in refused:
            _resolve(item.future, self._memory_outcome())

    def _memory_death(self, process: Any) -> bool:
        """Whether ``process`` ended by passing its memory limit (a failed allocation aborts)."""
        return self.memory_mb is not None and process.exitcode == -signal.SIGABRT

    def _memory_outcome(self) -> Outcome:
        limit = f" of {self.memory_mb} MiB ([serve] worker_memory_mb)" if self.memory_mb else ""
        return Outcome(
            "memory",
            message=f"the query was stopped at its memory limit{limit}; narrow it, "
            "or aggregate less at once",
        )

    def _fail_backlog(self, error: TrailsError) -> None:
        with self._lock:
            if any(s is not None and s.ready for s in self._slots):
                return
            pending = list(self._backlog)
            self._backlog.clear()
        for item in pending:
            _fail(item.future, error)

    def _watch(self) -> None:
        """Kill workers whose jobs overran; fail jobs that waited past their deadline."""
        while not self._closing:
            time.sleep(0.02)
            now = time.monotonic()
            expired: list[_Pending] = []
            kill: list[_Slot] = []
            with self._lock:
                for item in list(self._backlog):
                    if item.queued_until is not None and now > item.queued_until:
                        self._backlog.remove(item)
                        expired.append(item)
                for slot in self._slots:
                    if slot is None or slot.killed:
                        continue
                    overdue = [
                        i
                        for i in slot.running.values()
                        if i.deadline is not None and now > i.deadline
                    ]
                    if overdue:
                        for item in overdue:
                            item.timed_out = True
                        slot.killed = True
                        slot.ready = False
                        kill.append(slot)
            for slot in kill:
                slot.process.kill()
            for item in expired:
                _fail(item.future, _timeout(item.limit))


def _timeout(limit: float | None) -> QueryTimeout:
    return QueryTimeout(
        f"the query was stopped after its time limit of {limit or 0:g} s; narrow it or add a LIMIT",
        limit=limit,
    )


def _fail(future: Future[Outcome], error: TrailsError) -> None:
    with contextlib.suppress(InvalidStateError):  # the caller may have given up on it
        future.set_exception(error)


def _resolve(future: Future[Outcome], outcome: Outcome) -> None:
    with contextlib.suppress(InvalidStateError):
        future.set_result(outcome)
