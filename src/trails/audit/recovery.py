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

from trails.audit.seal import install_sealer, ledger_iri
from trails.config import Settings, load_settings
from trails.errors import TrailsError, UserError
from trails.prov.events import Interrupted, SessionEnded
from trails.prov.recorder import Recorder
from trails.prov.vocab import T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, literal, to_python

__all__ = [
    "RecoveryReport",
    "interrupted_sessions",
    "recover",
    "recover_on_open",
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
        items = _unfinished(store, session)
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
        if seal and not _is_sealed(store, ledger, session):
            seal_ended(recorder, session)
    if seal:
        for session, last in _sessions(store, _ENDED_UNSEALED, {"ledger": ledger}):
            if last < cutoff:
                seal_ended(recorder, session)
                report.sealed.append(session)
    return report


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


def recover_on_open(recorder: Recorder, settings: Settings | None = None) -> None:
    """Recover an embedded store once, the first time a recorder is configured over it.

    Does nothing for stores shared with other processes (a SPARQL server: use
    ``trails recover``), for in-memory stores, or when ``[audit] recover = false``.
    A failure is logged, never raised: recording must not depend on it.

    Args:
        recorder: the newly configured recorder.
        settings: the settings it was configured from.
    """
    store = recorder.store
    if getattr(store, "exclusive_since", None) is None or store in _recovered:
        return
    settings = settings or load_settings()
    if not settings.section("audit").get("recover", True):
        return
    _recovered.add(store)
    try:
        report = recover(recorder, settings=settings)
    except TrailsError:
        log.warning("could not recover the sessions left open in %r", store, exc_info=True)
        return
    if report.interrupted or report.sealed:
        log.warning(
            "recovered %r: %d session(s) left open by a process that stopped were ended as "
            "interrupted, %d ended session(s) were sealed",
            store,
            len(report.interrupted),
            len(report.sealed),
        )
