"""Recovery: the sessions of a process that stopped are ended as interrupted, and sealed.

A process killed (SIGKILL, power loss) while recording leaves its session
open and, maybe, activities that started and never ended: a plan run, or a
capability with side effects whose start was written ahead of its handler.
Each write was atomic, so nothing is torn; what is missing is the end.
``recover`` writes it, as evidence rather than silence. For each such session,
in one write (the ``SessionEnded`` event, so a sealer seals it as usual):

- the session ends with ``trails:status "interrupted"``; its
  ``prov:endedAtTime`` is the last moment it is known to have been alive (the
  latest time recorded in its graph: the process stopped some time after);
- a ``trails:Interruption`` (a ``trails:Termination``) ends it
  (``trails:wasTerminatedBy`` / ``prov:wasEndedBy``), with the reason and
  ``trails:detectedAt``, when recovery found it;
- every activity of the session that had started and not ended is ended by
  the same interruption: an invocation gets status ``interrupted``, a plan run
  stop reason ``interrupted``; none gets an end time (when it ended is unknown).

Sessions that ended but were never sealed (a crash between the end and its
seal) are sealed too (``seal_ended``).

Which open sessions belong to a dead process?

- On the embedded store the directory's lock makes it certain: every session
  whose latest record is older than the moment this process took the lock
  (``OxigraphStore.exclusive_since``) was written by a process that is gone.
  ``recover_on_open`` runs this once per store when a recorder is configured
  over it, so the next program that records into the store recovers it.
  It must not cost more as the store grows (it runs in every short-lived
  process that records), so it reads a register instead of scanning every
  session: a configured recorder over an embedded store lists each session
  it starts in the ``<base>graph:open-sessions`` graph
  (``<register> trails:openSession <session>``), in the write that starts it,
  and drops it in the write that ends (and seals) it. Recovery on open reads
  only the sessions still listed: its work follows the number of sessions
  left open, not the size of the store. A session recorded by a bare
  ``Recorder`` (no plugins) is not listed; ``recover`` (``trails recover``)
  still scans the whole store and finds every open session.
- On a SPARQL server several live processes share the store and nothing
  tells a dead writer from an idle one, so recovery is explicit
  (``trails recover``) and by age: a session is presumed dead when nothing
  was recorded in it for ``older_than``. Choose an age longer than any pause
  of a live writer; a writer that does record into a session after it was
  recovered makes a late write, which is visible (the graph is resealed as a
  revision), never silent.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from trails.config import Settings, load_settings
from trails.errors import TrailsError, UserError
from trails.evidence.seal import install_sealer, ledger_iri
from trails.prov.events import Event, Interrupted, SessionEnded, SessionStarted
from trails.prov.recorder import Recorder
from trails.prov.vocab import T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Quad, literal, to_python

__all__ = [
    "RecoveryReport",
    "interrupted_sessions",
    "recover",
    "recover_on_open",
    "recover_registered",
    "recovered_here",
    "register_iri",
    "register_open_sessions",
    "seal_ended",
]

log = logging.getLogger(__name__)

_TIMES = "VALUES ?when { prov:startedAtTime prov:endedAtTime prov:generatedAtTime }"

_OPEN = f"""
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?session (MAX(?t) AS ?last) WHERE {{
  GRAPH ?session {{
    ?session a trails:Session .
    FILTER NOT EXISTS {{ ?session prov:endedAtTime ?ended }}
    {_TIMES}
    ?x ?when ?t .
  }}
}}
GROUP BY ?session
"""

_ENDED_UNSEALED = f"""
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?session (MAX(?t) AS ?last) $ledger WHERE {{
  GRAPH ?session {{
    ?session a trails:Session ; prov:endedAtTime ?ended .
    {_TIMES}
    ?x ?when ?t .
  }}
  FILTER NOT EXISTS {{ GRAPH $ledger {{ ?seal trails:sealedGraph ?session }} }}
}}
GROUP BY ?session $ledger
"""

_UNFINISHED = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?activity ?type ?termination $session WHERE {
  GRAPH $session {
    ?activity trails:inSession $session ;
              prov:startedAtTime ?started ;
              a ?type .
    FILTER NOT EXISTS { ?activity prov:endedAtTime ?ended }
    OPTIONAL { ?activity trails:wasTerminatedBy ?termination }
  }
}
"""

_REGISTERED = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?session $register WHERE { GRAPH $register { $register trails:openSession ?session } }
ORDER BY ?session
"""

_ENDED = """
PREFIX prov: <http://www.w3.org/ns/prov#>
ASK { GRAPH $session { $session prov:endedAtTime ?ended } }
"""

_LAST = f"""
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT $session (MAX(?t) AS ?last) WHERE {{ GRAPH $session {{ {_TIMES} ?x ?when ?t }} }}
GROUP BY $session
"""

_INTERRUPTED = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?session WHERE {
  GRAPH ?session { ?session a trails:Session ; trails:wasTerminatedBy ?t . ?t a trails:Interruption }
}
ORDER BY ?session
"""


@dataclass
class RecoveryReport:
    """What ``recover`` did.

    Attributes:
        interrupted: the sessions it ended as interrupted.
        activities: the activities of those sessions it marked interrupted.
        sealed: sessions that had ended unsealed and that it sealed.
        skipped: open sessions it left alone (possibly live: too recent).
    """

    interrupted: list[IRI] = field(default_factory=list)
    activities: list[IRI] = field(default_factory=list)
    sealed: list[IRI] = field(default_factory=list)
    skipped: list[IRI] = field(default_factory=list)


def _sessions(store: Store, sparql: str, params: dict[str, Any]) -> list[tuple[IRI, datetime]]:
    result = store.query(sparql, params)
    assert isinstance(result, Solutions)
    found = []
    for row in result:
        last = to_python(row.get("last"))
        if isinstance(last, datetime):
            found.append((IRI.trusted(str(row["session"])), last.astimezone(UTC)))
    return sorted(found)


def _unfinished(store: Store, session: IRI) -> list[Interrupted]:
    result = store.query(_UNFINISHED, {"session": session})
    assert isinstance(result, Solutions)
    types: dict[str, set[str]] = {}
    terminated: set[str] = set()
    for row in result:
        activity = str(row["activity"])
        types.setdefault(activity, set()).add(str(row["type"]))
        if "termination" in row:
            terminated.add(activity)
    items = []
    for activity, kinds in sorted(types.items()):
        kind: Literal["invocation", "run", "activity"] = "activity"
        if T.CapabilityInvocation in kinds:
            kind = "invocation"
        elif T.PlanRun in kinds:
            kind = "run"
        items.append(Interrupted(activity=activity, kind=kind, terminated=activity in terminated))
    return items


def seal_ended(recorder: Recorder, graph: IRI) -> None:
    """Seal a session graph that ended without a seal (the one place recovery seals).

    Args:
        recorder: the recorder whose store and ledger to use.
        graph: the session graph.

    Raises:
        StoreError: the graph could not be read or the seal not written.
    """
    install_sealer(recorder).seal(recorder, graph)


def _is_sealed(store: Store, ledger: IRI, graph: IRI) -> bool:
    return bool(
        store.query(
            "PREFIX trails: <https://w3id.org/trails/ns#>\n"
            "ASK { GRAPH $ledger { ?seal trails:sealedGraph $graph } }",
            {"ledger": ledger, "graph": graph},
        )
    )


def recover(
    recorder: Recorder,
    *,
    older_than: timedelta | None = None,
    seal: bool | None = None,
    settings: Settings | None = None,
) -> RecoveryReport:
    """End the sessions of processes that stopped as interrupted, and seal what ended unsealed.

    Args:
        recorder: records the ends (and, with its sealer, seals them).
        older_than: a session is presumed dead when nothing was recorded in it for
            this long. Required unless the store is an embedded store this process
            holds exclusively, where every session last written before the lock was
            taken is certainly dead.
        seal: seal what recovery ends, and sessions that ended unsealed (default:
            ``[audit] seal`` of the settings, on unless turned off).
        settings: where to read ``[audit]`` from (default: ``load_settings()``).

    Returns:
        What was ended, marked, sealed and left alone.

    Raises:
        UserError: no ``older_than`` on a store shared with other processes, or a
            negative one.
        StoreError: the store could not be read or written.
    """
    store = recorder.store
    now = datetime.now(UTC)
    if older_than is not None:
        if older_than < timedelta(0):
            raise UserError(f"older_than must not be negative, not {older_than}")
        cutoff = now - older_than
    else:
        since = getattr(store, "exclusive_since", None)
        if not isinstance(since, datetime):
            raise UserError(
                f"{store!r} may be shared with live writers: say how long a session must "
                "have recorded nothing to be presumed dead (older_than / --older-than)"
            )
        cutoff = since
    if seal is None:
        seal = bool((settings or load_settings()).section("audit").get("seal", True))
    ledger = ledger_iri(recorder.minter)
    report = RecoveryReport()
    for session, last in _sessions(store, _OPEN, {}):
        if last >= cutoff:
            report.skipped.append(session)
            continue
        _interrupt(recorder, session, last, now, seal=seal, ledger=ledger, report=report)
    if seal:
        for session, last in _sessions(store, _ENDED_UNSEALED, {"ledger": ledger}):
            if last < cutoff:
                seal_ended(recorder, session)
                report.sealed.append(session)
    return report


def _interrupt(
    recorder: Recorder,
    session: IRI,
    last: datetime,
    now: datetime,
    *,
    seal: bool,
    ledger: IRI,
    report: RecoveryReport,
) -> None:
    """End ``session`` as interrupted at ``last`` (and seal it), in one write."""
    items = _unfinished(recorder.store, session)
    recorder.record(
        SessionEnded(
            session=session,
            ended=last,
            status="interrupted",
            reason=(
                "the process recording this session stopped before ending it; "
                f"the last record in it is from {literal(last).value}"
            ),
            detected=now,
            interrupted=tuple(items),
        )
    )
    report.interrupted.append(session)
    report.activities.extend(IRI.trusted(i.activity) for i in items)
    if seal and not _is_sealed(recorder.store, ledger, session):
        seal_ended(recorder, session)


def register_iri(recorder: Recorder) -> IRI:
    """The graph listing the sessions a configured recorder started and did not end."""
    return recorder.minter.graph("open-sessions")


class _Register:
    """The pre-write hook keeping the open-sessions register, in each session's own writes.

    A session is listed by the write that starts it and dropped by the write
    that ends it, unless sealing is wanted and this recorder has no sealer (a
    session that ends unsealed stays listed, so the next recovery seals it).
    """

    def __init__(self, register: IRI, seal: bool) -> None:
        self.register = register
        self.seal = seal

    def entry(self, session: IRI) -> Quad:
        return Quad(self.register, T.openSession, session, self.register)

    def __call__(
        self, recorder: Recorder, event: Event, quads: list[Quad]
    ) -> tuple[list[Quad], list[Quad]]:
        if isinstance(event, SessionStarted):
            return [self.entry(IRI.trusted(event.session))], []
        if isinstance(event, SessionEnded):
            if self.seal and not _has_sealer(recorder):
                return [], []
            return [], [self.entry(IRI.trusted(event.session))]
        return [], []


def _has_sealer(recorder: Recorder) -> bool:
    from trails.evidence.seal import _installed

    return recorder in _installed


_registers: weakref.WeakKeyDictionary[Recorder, _Register] = weakref.WeakKeyDictionary()


def register_open_sessions(recorder: Recorder, settings: Settings | None = None) -> None:
    """Make ``recorder`` list the sessions it starts until they end (once per recorder).

    Only for an embedded store this process holds (what recovery on open reads);
    a store shared with other processes is recovered by age (``trails recover``).

    Args:
        recorder: the recorder to hook into.
        settings: where to read ``[audit] seal`` from (default: ``load_settings()``).
    """
    if getattr(recorder.store, "exclusive_since", None) is None or recorder in _registers:
        return
    seal = bool((settings or load_settings()).section("audit").get("seal", True))
    hook = _Register(register_iri(recorder), seal)
    _registers[recorder] = hook
    recorder.add_prewrite(hook)


def recover_registered(recorder: Recorder, *, settings: Settings | None = None) -> RecoveryReport:
    """Recover the sessions the register lists: what ``recover`` does, without a store scan.

    Each listed session that is still open and whose last record is older than
    the moment this process took the store's lock is ended as interrupted (and
    sealed); a listed session that has ended is sealed if it is not, and
    dropped from the register. The work follows the number of sessions listed.

    Args:
        recorder: the recorder over the embedded store this process holds.
        settings: where to read ``[audit] seal`` from (default: ``load_settings()``).

    Returns:
        What was ended, marked, sealed and left alone.

    Raises:
        UserError: the store is not an embedded store this process holds.
        StoreError: the store could not be read or written.
    """
    store = recorder.store
    since = getattr(store, "exclusive_since", None)
    if not isinstance(since, datetime):
        raise UserError(f"{store!r} has no register of open sessions: use recover(older_than=...)")
    seal = bool((settings or load_settings()).section("audit").get("seal", True))
    register = register_iri(recorder)
    ledger = ledger_iri(recorder.minter)
    now = datetime.now(UTC)
    report = RecoveryReport()
    listed = store.query(_REGISTERED, {"register": register})
    assert isinstance(listed, Solutions)
    for row in list(listed):
        session = IRI.trusted(str(row["session"]))
        entry = Quad(register, T.openSession, session, register)
        if bool(store.query(_ENDED, {"session": session})):
            if seal and not _is_sealed(store, ledger, session):
                seal_ended(recorder, session)
                report.sealed.append(session)
            store.write([], remove=[entry])
            continue
        last = _last_record(store, session)
        if last is None:  # listed, but nothing of it was written: nothing to end
            store.write([], remove=[entry])
            continue
        if last >= since:
            report.skipped.append(session)
            continue
        _interrupt(recorder, session, last, now, seal=seal, ledger=ledger, report=report)
        store.write([], remove=[entry])
    return report


def _last_record(store: Store, session: IRI) -> datetime | None:
    result = store.query(_LAST, {"session": session})
    assert isinstance(result, Solutions)
    for row in result:
        last = to_python(row.get("last"))
        if isinstance(last, datetime):
            return last.astimezone(UTC)
    return None


def interrupted_sessions(store: Store) -> list[IRI]:
    """The sessions recovery ended as interrupted (for ``trails verify`` to name them).

    Args:
        store: the store.

    Returns:
        Their IRIs, sorted.
    """
    result = store.query(_INTERRUPTED)
    assert isinstance(result, Solutions)
    return [IRI.trusted(str(row["session"])) for row in result]


_recovered: weakref.WeakSet[Any] = weakref.WeakSet()
# the sessions each store's recovery on open ended as interrupted, in this process
_ended_here: weakref.WeakKeyDictionary[Any, frozenset[str]] = weakref.WeakKeyDictionary()


def recovered_here(store: Store) -> frozenset[str]:
    """The sessions this process's recovery on open ended as interrupted in ``store``.

    An operation that removes evidence (retention) leaves them alone in the run that
    ended them: nobody has seen that they were interrupted yet, and the plan shown
    before the run (read without recovering) did not list them.
    """
    return _ended_here.get(store, frozenset())


def recover_on_open(recorder: Recorder, settings: Settings | None = None) -> None:
    """Recover an embedded store once, the first time a recorder is configured over it.

    Installs the open-sessions register on ``recorder`` and recovers the
    sessions it lists (``recover_registered``): the work follows the sessions
    left open, not the size of the store. Does nothing for stores shared with
    other processes (a SPARQL server: use ``trails recover``) or in-memory
    stores, and recovers nothing when ``[audit] recover = false``. A failure is
    logged, never raised: recording must not depend on it.

    Args:
        recorder: the newly configured recorder.
        settings: the settings it was configured from.
    """
    store = recorder.store
    if getattr(store, "exclusive_since", None) is None:
        return
    settings = settings or load_settings()
    register_open_sessions(recorder, settings)
    if store in _recovered or not settings.section("audit").get("recover", True):
        return
    _recovered.add(store)
    try:
        report = recover_registered(recorder, settings=settings)
    except TrailsError:
        log.warning("could not recover the sessions left open in %r", store, exc_info=True)
        return
    _ended_here[store] = frozenset(str(s) for s in report.interrupted)
    if report.interrupted or report.sealed:
        log.warning(
            "recovered %r: %d session(s) left open by a process that stopped were ended as "
            "interrupted, %d ended session(s) were sealed",
            store,
            len(report.interrupted),
            len(report.sealed),
        )
