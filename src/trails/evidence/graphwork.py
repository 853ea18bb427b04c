"""The full verification's per-graph work, spread over every core.

The full pass (``trails.evidence.verify``) reads the store once, as one N-Quads stream cut
into graphs (``trails.evidence.sweep.Sweep``): that read is sequential and stays in the
process that holds the store. What each graph then costs needs nothing but the graph's
bytes: its canonical hash against its seal, the session's state, the catalogue entry its
graph gives, the digests its content is checked against, and the check of that content.
``Workers`` runs that work in a pool of worker processes, the graphs handed over in
batches large enough that sending them costs little next to the work, and gives the
results back in the order the graphs were read. With one job it runs the same functions
in the calling process, so a run with one job and a run with many find the same things.

A worker has no store. What only the store can settle is left to the process that holds
it, as in a run with one job: a graph that does not match its seal is read again there,
and a content check that would have to ask whether a receipt was sealed meanwhile is
judged again there (``Judged.asked``).
"""

from __future__ import annotations

import hashlib
import os
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

from trails.evidence.canonical import digest_nquads, digest_ntriples
from trails.evidence.content import (
    Accounts,
    ContentChecker,
    ContentTally,
    structure_from_ntriples,
)
from trails.evidence.findings import Finding
from trails.evidence.sweep import (
    entry_lines,
    ntriples_rows,
    session_state,
    stored_entries,
    summary_triples,
)
from trails.prov.content import content_graph
from trails.prov.vocab import RDF, T
from trails.store.terms import IRI, Term

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

__all__ = [
    "BATCH_BYTES",
    "POOL_FROM",
    "Graph",
    "GraphRead",
    "Judge",
    "Judged",
    "Shared",
    "Structure",
    "Workers",
    "default_jobs",
    "entry_digest",
    "jobs_for",
    "judge_content",
    "read_graph",
]

BATCH_BYTES = 4 << 20
"""How many bytes of graphs a batch carries to a worker (a batch also closes at
``_BATCH_ITEMS`` items): large enough that handing it over is a small part of its work."""
_BATCH_ITEMS = 512
POOL_FROM = 200
"""Below this many graphs, a pass without ``jobs`` runs in one process (starting the
workers would cost more than they save)."""

Structure = list[tuple[Term, Term, Term]]
"""A graph's digest and content-policy quads (``structure_from_ntriples``)."""


def jobs_for(jobs: int | None, graphs: int) -> int:
    """The worker processes for a pass over ``graphs`` graphs: ``jobs`` when given, else
    every core for a store large enough to repay starting them (``POOL_FROM`` graphs)."""
    if jobs is not None:
        return max(1, jobs)
    return default_jobs() if graphs >= POOL_FROM else 1


def default_jobs() -> int:
    """The cores this process may run on."""
    count = getattr(os, "process_cpu_count", None)  # Python 3.13+
    if count is not None:
        return int(count() or 1)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def entry_digest(lines: Iterable[str]) -> str:
    """One catalogue entry's lines as a short digest (what is compared, and sent back)."""
    return hashlib.sha256("\n".join(sorted(lines)).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Shared:
    """What every worker knows: sent once, when the pool starts."""

    base: str
    catalogue: str
    skip: frozenset[str]
    """Graphs whose content is not checked (receipts, unsealed receipts)."""
    accounts: Accounts
    """The receipts of removed content (without ``recheck``: a worker has no store)."""


class Graph(NamedTuple):
    """One graph to read: its quads as N-Triples, or as N-Quads naming it (``nquads``)."""

    graph: str
    data: bytes
    nquads: bool
    quads: int
    kind: str
    expect: tuple[str, int] | None
    """The hash and quad count of its newest seal (None: not sealed, or a seal of an
    older canonical form, which only a read of its own can check)."""
    sealed: bool


class GraphRead(NamedTuple):
    """What reading one graph told."""

    graph: str
    quads: int
    kind: str
    sealed: bool
    matches: bool
    """False when sealed and its hash or count is not its seal's (or its seal is of an
    older canonical form): it is read again with its seal then."""
    is_session: bool
    ended: bool
    status: str
    entry: str | None
    """The digest of the catalogue entry a sealed, ended session's graph gives."""
    stored: dict[str, str] | None
    """The catalogue graph's entries: session -> digest of its entry as stored."""
    projection: bool
    wants_content: bool
    """Whether its content is checked (then ``structure`` None: read by query)."""
    structure: Structure | None


class Judge(NamedTuple):
    """One graph's content (its content graph's quads, as N-Triples or N-Quads) to check
    against the digests of its graph."""

    graph: str
    structure: Structure
    data: bytes
    nquads: bool
    sealed: bool


class Judged(NamedTuple):
    """What the content check of one graph found."""

    graph: str
    findings: list[Finding]
    tally: ContentTally
    asked: bool
    """It would have asked the store whether a receipt is sealed now: judge it again
    where the store is (its findings and tally are then not to be used)."""
    judge: Judge | None
    """The task again, when ``asked``."""


_PROJECTION = f" <{RDF.type}> <{T.SessionProjection}> .".encode()


def _ntriples(graph: str, nquads: bytes) -> bytes:
    """N-Quads lines of one graph as N-Triples (the graph name dropped)."""
    return nquads.replace(f" <{graph}> .\n".encode(), b" .\n")


def read_graph(shared: Shared, task: Graph) -> GraphRead:
    """Everything one graph tells that needs no store."""
    graph, kind, sealed = task.graph, task.kind, task.sealed
    ntriples = _ntriples(graph, task.data) if task.nquads else task.data
    matches = True
    if sealed and task.expect is None:
        matches = False
    elif sealed and task.nquads:
        matches = digest_nquads(task.data, ntriples, IRI.trusted(graph)) == task.expect
    elif sealed:
        matches = digest_ntriples(ntriples, IRI.trusted(graph)) == task.expect
    is_session, ended, status = session_state(graph, ntriples)
    entry = stored = None
    if is_session and sealed and ended:
        lines = entry_lines(IRI.trusted(graph), summary_triples(ntriples), shared.catalogue)
        entry = entry_digest(lines)
    projection = False
    if not is_session and kind == "catalogue" and graph == shared.catalogue:
        stored = {s: entry_digest(lines) for s, lines in stored_entries(ntriples).items()}
    elif not is_session and not sealed and kind == "other":
        projection = _PROJECTION in ntriples
    wants = (
        graph not in shared.skip and not projection and (sealed or is_session or kind == "memory")
    )
    structure = structure_from_ntriples(ntriples) if wants else None
    return GraphRead(
        graph, task.quads, kind, sealed, matches, is_session, ended, status, entry, stored,
        projection, wants, structure,
    )  # fmt: skip


def judge_content(checker: ContentChecker, task: Judge) -> None:
    """Check one graph's content with ``checker`` (its findings and tally go there)."""
    text = _ntriples(content_graph(task.graph), task.data) if task.nquads else task.data
    rows = ntriples_rows(text) if text else []
    checker.judge(IRI.trusted(task.graph), task.structure, rows, sealed=task.sealed)


def _judge_here(shared: Shared, task: Judge) -> Judged:
    asked: list[str] = []

    def ask(graph: str) -> bool:
        asked.append(graph)
        return False

    findings: list[Finding] = []
    tally = ContentTally()
    judge_content(ContentChecker(replace(shared.accounts, recheck=ask), findings, tally), task)
    if asked:
        return Judged(task.graph, [], ContentTally(), True, task)
    return Judged(task.graph, findings, tally, False, None)


_SHARED: Shared | None = None


def _start(shared: Shared) -> None:
    global _SHARED
    _SHARED = shared


def _work(batch: list[Graph | Judge]) -> list[GraphRead | Judged]:
    shared = _SHARED
    assert shared is not None
    return [
        read_graph(shared, task) if isinstance(task, Graph) else _judge_here(shared, task)
        for task in batch
    ]


class Workers:
    """Runs the per-graph tasks of one full pass, in ``jobs`` processes (in this one when
    ``jobs`` is 1), and gives their results back in the order the tasks were given.

    Args:
        shared: what every task needs to know.
        checker: the content checker of the pass (with ``recheck``: it judges here what a
            worker could not, and every content task when ``jobs`` is 1).
        jobs: worker processes (1: none, the work is done in ``submit``).
    """

    def __init__(self, shared: Shared, checker: ContentChecker, jobs: int) -> None:
        self.shared, self.checker, self.jobs = shared, checker, max(1, jobs)
        self.batch: list[Graph | Judge] = []
        self.size = 0
        self.running: deque[Future[list[GraphRead | Judged]]] = deque()
        self.pool: ProcessPoolExecutor | None = None
        if self.jobs > 1:
            import multiprocessing  # loaded by a pass with workers only
            from concurrent.futures import ProcessPoolExecutor

            methods = multiprocessing.get_all_start_methods()
            # fork: a worker starts in milliseconds with everything imported; it never
            # touches the store it inherits, and ends without closing anything
            context = multiprocessing.get_context("fork" if "fork" in methods else None)
            self.pool = ProcessPoolExecutor(
                self.jobs, mp_context=context, initializer=_start, initargs=(shared,)
            )

    def submit(self, task: Graph | Judge) -> list[GraphRead]:
        """Hand on one task; returns the graphs read by now, in order (content checks
        add their findings and tally to the pass's checker as they come)."""
        if self.pool is None:
            return self._here(task)
        self.batch.append(task)
        self.size += len(task.data)
        if self.size < BATCH_BYTES and len(self.batch) < _BATCH_ITEMS:
            return []
        self._send()
        done: list[GraphRead] = []
        while self.running and (self.running[0].done() or len(self.running) > 2 * self.jobs):
            done.extend(self._settled(self.running.popleft().result()))
        return done

    def drain(self) -> list[GraphRead]:
        """Every result still to come, in order."""
        self._send()
        done: list[GraphRead] = []
        while self.running:
            done.extend(self._settled(self.running.popleft().result()))
        return done

    def close(self) -> None:
        """Stop the worker processes."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

    def _send(self) -> None:
        if self.batch and self.pool is not None:
            self.running.append(self.pool.submit(_work, self.batch))
        self.batch, self.size = [], 0

    def _here(self, task: Graph | Judge) -> list[GraphRead]:
        if isinstance(task, Graph):
            return [read_graph(self.shared, task)]
        judge_content(self.checker, task)  # findings and tally go to the pass's own
        return []

    def _settled(self, results: list[GraphRead | Judged]) -> list[GraphRead]:
        """A worker's results: graphs read, in order; content checks added to the pass's
        checker (one that asked about the store judged again here)."""
        out: list[GraphRead] = []
        tally = self.checker.tally
        for result in results:
            if isinstance(result, GraphRead):
                out.append(result)
            elif result.asked and result.judge is not None:
                self._here(result.judge)
            else:
                self.checker.findings.extend(result.findings)
                tally.graphs += result.tally.graphs
                tally.values += result.tally.values
                tally.hash_only += result.tally.hash_only
                for key, n in result.tally.accounted.items():
                    tally.accounted[key] = tally.accounted.get(key, 0) + n
        return out
