"""Starting a session under a chosen id: the id is checked and the start written as one step.

A session id names one session graph, and that graph is written by the
principal and the writer that started it, by nobody else. ``record_start``
records a ``SessionStarted`` only while nothing holds its graph, and otherwise
refuses with ``SessionTaken``, whose ``reason`` says why:

- ``principal``: the session belongs to another principal;
- ``ended``: the session has ended (sealed, or ended unsealed). A session is
  never reopened: its seal fixes what it holds, and a write after it would be a
  revision of someone's evidence, not a conversation going on. A later session
  gets an id of its own (``Session.replay(iri).fork()`` carries a persisted
  conversation on in a new session derived from it);
- ``open``: the session is open, in this process (keep using its context) or in
  another writer (two writers would interleave their events; one that stopped
  leaves it open until recovery ends it, and the id stays taken);
- ``data``: the graph holds data no session started (a projection or an import);
- ``removed``: the ledger holds a seal of the graph, which was since removed (an
  id is never given to a second session);
- ``starting``: other writers are starting a session with that id right now.

How atomic the step is depends on who can write the store:

- a store only this process writes (the embedded store, whose directory a
  process holds alone: ``exclusive``): the check (one query) and the start (one
  write) run under one lock per store object, so no other start in this process
  comes between them, and no other process writes there at all;
- a store several processes write (a SPARQL server): a conditional update
  (``INSERT ... WHERE { FILTER NOT EXISTS ... }``) is not enough, since servers
  run updates under snapshot isolation (two concurrent ones on Oxigraph's server
  both insert when their snapshots predate each other's commit). So the start is
  claimed first: the writer adds a claim of its own (a fresh IRI in
  ``<base>graph:session-claims``), reads in one query every claim of the session
  and what its graph holds, and writes the start only when no other live claim
  and nothing else holds the graph; then, started or not, it withdraws its claim.
  Of two writers, the one whose read comes second sees the first one's claim, or
  its start (a claim is withdrawn only after its start is written), so at most
  one of them starts the session. When each sees the other's claim, both
  withdraw and try again after a random pause, ``ATTEMPTS`` times in all.
  A claim older than ``CLAIM_TTL_S`` is one a writer left when it stopped before
  withdrawing it: ignored, and removed by the next start. Within one process
  the per-store lock holds too, so threads sharing a store object never contend
  through claims.

A session whose id trails mints (a UUID4) needs none of this: no one else can
hold it, so ``Context.open`` without ``session_id`` writes its start at once.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
import weakref
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from trails.errors import SessionTaken, StoreError
from trails.prov.events import SessionStarted
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T, sparql_prefixes
from trails.store.base import select
from trails.store.terms import IRI, Literal, Quad, Term, literal, to_python

if TYPE_CHECKING:
    from trails.prov.recorder import Recorder
    from trails.store.base import Store

__all__ = ["ATTEMPTS", "CLAIM_TTL_S", "claims_graph", "record_start"]

log = logging.getLogger(__name__)

CLAIM_TTL_S = 600.0
"""After this many seconds a claim is one a stopped writer left (ignored, then removed)."""

ATTEMPTS = 8
"""How many times a writer claims a start before it gives up on contention."""

_PAUSE_S = 0.005
"""The first pause after a contended claim; each further one may be twice as long."""

# What holds a session graph, in one query: any data (one subject is enough), the
# session's principal(s) and end, a seal of it in the ledger, and the claims to start it.
_STATE = (
    sparql_prefixes()
    + """
SELECT ?data ?agent ?ended ?seal ?claim ?claimedAt $graph $ledger $claims WHERE {
  { SELECT $graph ?data WHERE { GRAPH $graph { ?data ?p ?o } } LIMIT 1 }
  UNION { GRAPH $graph { $graph prov:wasAssociatedWith ?agent } }
  UNION { GRAPH $graph { $graph prov:endedAtTime ?ended } }
  UNION { GRAPH $ledger { ?seal trails:sealedGraph $graph } }
  UNION { GRAPH $claims { ?claim trails:claimsSession $graph ; prov:generatedAtTime ?claimedAt } }
}
"""
)


def claims_graph(minter: Minter) -> IRI:
    """The graph of the claims to start sessions (``<base>graph:session-claims``)."""
    return minter.graph("session-claims")


@dataclass
class _Held:
    """What holds a session graph, as one query read it."""

    data: bool = False
    agents: set[IRI] = field(default_factory=set)
    ended: bool = False
    sealed: bool = False
    claims: dict[IRI, Term] = field(default_factory=dict)


def _read(recorder: Recorder, graph: IRI) -> _Held:
    minter = recorder.minter
    params: dict[str, Term] = {
        "graph": graph,
        "ledger": minter.graph("ledger"),
        "claims": claims_graph(minter),
    }
    held = _Held()
    for row in select(recorder.store, _STATE, params):
        if "data" in row:
            held.data = True
        if "agent" in row:
            held.agents.add(IRI.trusted(str(row["agent"])))
        if "ended" in row:
            held.ended = True
        if "seal" in row:
            held.sealed = True
        if "claim" in row and "claimedAt" in row:
            held.claims[IRI.trusted(str(row["claim"]))] = row["claimedAt"]
    return held


def _refusal(
    held: _Held, event: SessionStarted, minter: Minter, *, open_here: bool
) -> SessionTaken | None:
    """Why ``held`` keeps ``event`` from starting its session, or None when nothing does."""
    sid = minter.session_id(event.graph)

    def taken(reason: str, why: str) -> SessionTaken:
        return SessionTaken(f"session id {sid!r} is taken: {why}", session_id=sid, reason=reason)

    if held.agents - {minter.agent(event.principal)}:
        return taken(
            "principal",
            "its session belongs to another principal. A session is written only by the "
            "principal that started it: choose another id",
        )
    if held.agents and held.ended:
        sealed = " and is sealed" if held.sealed else ""
        return taken(
            "ended",
            f"that session has ended{sealed}, and a session is never reopened. Open a new "
            "session under a new id (to carry a persisted conversation on: "
            "Session.replay(iri).fork())",
        )
    if held.agents:
        where = (
            "in this process (keep using its Context or Session instead of opening it again)"
            if open_here
            else "in another writer (if that writer stopped, `trails recover` ends it as "
            "interrupted, and the id stays taken)"
        )
        return taken("open", f"the session is open {where}; two writers would interleave")
    if held.data:
        return taken(
            "data",
            f"its graph {event.graph} already holds data that no session started; "
            "choose another id",
        )
    if held.sealed:
        return taken(
            "removed",
            "a session with that id was sealed and has since been removed; an id is never "
            "given to a second session",
        )
    return None


_locks: weakref.WeakKeyDictionary[object, threading.Lock] = weakref.WeakKeyDictionary()
_locks_lock = threading.Lock()
_any_store = threading.Lock()  # for a store that cannot be weakly referenced


def _lock(store: Store) -> threading.Lock:
    with _locks_lock:
        try:
            lock = _locks.get(store)
            if lock is None:
                lock = _locks[store] = threading.Lock()
        except TypeError:
            return _any_store
        return lock


def record_start(recorder: Recorder, event: SessionStarted, *, open_here: bool = False) -> None:
    """Record ``event`` (a session's start) unless something already holds its graph.

    The check and the write are one step (see the module docstring for how, on
    each kind of store). Pre-write hooks (the sealer's catalogue entry, the
    open-sessions register) run only when the start is written, in its write.

    Args:
        recorder: the recorder to write with.
        event: the start of a session whose id the caller chose.
        open_here: whether this process has that session open (only changes the
            message of a refusal).

    Raises:
        SessionTaken: the id is taken (``reason`` says why); nothing was written.
        StoreError: the store could not be read or written; nothing was started.
    """
    store = recorder.store
    with _lock(store):
        if getattr(store, "exclusive", False):
            refusal = _refusal(
                _read(recorder, event.graph), event, recorder.minter, open_here=open_here
            )
            if refusal is not None:
                raise refusal
            recorder.record(event)
            return
        _claimed_start(recorder, event, open_here)


def _claimed_start(recorder: Recorder, event: SessionStarted, open_here: bool) -> None:
    """Claim, read, then start or not; the claim is withdrawn either way."""
    store, minter, graph = recorder.store, recorder.minter, event.graph
    claims = claims_graph(minter)
    for attempt in range(ATTEMPTS):
        claim = Minter.part(claims, str(uuid.uuid4()))
        mine = _claim_quads(claim, graph, literal(datetime.now(UTC)), claims)
        store.write(mine)
        withdrawn = list(mine)
        try:
            held = _read(recorder, graph)
            refusal = _refusal(held, event, minter, open_here=open_here)
            if refusal is not None:
                raise refusal
            now = datetime.now(UTC)
            others = {c: at for c, at in held.claims.items() if c != claim}
            if all(_stale(at, now) for at in others.values()):
                withdrawn += [
                    q for c, at in others.items() for q in _claim_quads(c, graph, at, claims)
                ]
                recorder.record(event)  # the start, written as any start is
                return
        finally:  # after the start (or the refusal): a claim never outlives its use
            _withdraw(store, withdrawn)
        time.sleep(random.uniform(0, _PAUSE_S * 2**attempt))
    sid = minter.session_id(graph)
    raise SessionTaken(
        f"session id {sid!r} is taken: other writers are starting a session with it right "
        f"now (still contended after {ATTEMPTS} claims); choose another id",
        session_id=sid,
        reason="starting",
    )


def _claim_quads(claim: IRI, graph: IRI, at: Term, claims: IRI) -> list[Quad]:
    return [
        Quad(claim, T.claimsSession, graph, claims),
        Quad(claim, PROV.generatedAtTime, at, claims),
    ]


def _stale(at: Term, now: datetime) -> bool:
    """Whether a claim made at ``at`` is older than ``CLAIM_TTL_S`` (or has no readable time)."""
    when = to_python(at) if isinstance(at, Literal) else None
    if not isinstance(when, datetime):
        return True
    return (now - when).total_seconds() > CLAIM_TTL_S


def _withdraw(store: Store, mine: list[Quad]) -> None:
    """Remove this writer's claim; a failure is logged (the claim then goes stale)."""
    try:
        store.write([], remove=mine)
    except StoreError:
        log.warning("could not withdraw the session claim %s", mine[0].subject, exc_info=True)
