"""Batches as evidence: one ``trails:Batch`` activity that every run of a batch is informed by.

A planner's ``batch`` / ``abatch`` runs each goal in its own new session. What
ties those sessions together is recorded in a graph of the batch's own,
``<base>graph:batch/<id>`` (as an erasure's receipt has its own): a
``trails:Batch`` activity (a ``prov:Activity``) with its ``trails:batchId``,
the principal it ran for, when it started and ended, how many goals it was
given (``trails:goalCount``) and how many raised (``trails:failedCount``);
and, in that graph, each run of the batch and each session it opened
``prov:wasInformedBy`` the batch. The start is written before the first goal
runs and the end after the last one, each one atomic write; the graph is then
sealed into the ledger (when sealing is on), so ``trails verify`` checks it.

Observers (the runs' ``observers=`` and the sessions', and the global ones)
get ``batch_start`` (``batch_id``, ``prompts_count``) before the first goal
and ``batch_end`` (``batch_id``, ``results_count``, ``errors_count``,
``total_duration_ms``) after the last.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from trails.config import load_settings
from trails.errors import UserError
from trails.kernel.context import now
from trails.kernel.observe import check_observers, notify
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.recorder import Recorder, default_recorder
from trails.prov.vocab import PROV, T
from trails.store.terms import IRI

if TYPE_CHECKING:
    from trails.agent.context import Session
    from trails.agent.result import PlanResult
    from trails.kernel.context import Context

__all__ = [
    "BatchEnded",
    "BatchRecord",
    "BatchStarted",
    "batch_graph",
    "batch_principal",
    "batch_session",
    "check_batch",
    "note_informed",
]


def check_batch(goals: Any, max_concurrency: Any) -> list[str]:
    """The goals of a batch, checked with its ``max_concurrency``.

    Raises:
        UserError: ``goals`` is not a list, or ``max_concurrency`` not an int >= 1.
    """
    if isinstance(goals, str) or not isinstance(goals, Sequence):
        raise UserError(f"goals must be a list of goal strings, not {type(goals).__name__}")
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
        raise UserError(f"max_concurrency must be an int, not {max_concurrency!r}")
    if max_concurrency < 1:
        raise UserError(f"max_concurrency must be >= 1, not {max_concurrency}")
    return list(goals)


def batch_principal(principal: str | None) -> str:
    """Who a batch runs for: ``principal=``, else ``[agent] principal``."""
    return principal if principal is not None else load_settings().principal


def batch_session(principal: str, session_options: Mapping[str, Any] | None) -> Session:
    """A new session for one goal of a batch."""
    from trails.agent.context import Session

    return Session(principal=principal, **dict(session_options or {}))


def note_informed(session: Session | None, result: PlanResult | None, into: list[str]) -> None:
    """Note the session (once opened) and the run of one goal, for the batch's end."""
    if session is not None and session.iri is not None:
        into.append(session.iri)
    if result is not None and result.activity_iri:
        into.append(result.activity_iri)


def batch_graph(minter: Minter, batch_id: str) -> IRI:
    """The graph of one batch (``<base>graph:batch/<id>``)."""
    return minter.graph(f"batch/{batch_id}")


class BatchStarted(Event):
    """A batch began (``session`` is the batch's graph)."""

    activity: str
    batch_id: str
    principal: str
    strategy: str
    goals: int
    started: datetime

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        b.activity(a, T.Batch, self.started)
        b.associate(a, b.agent(self.principal))
        b.value(a, T.batchId, self.batch_id)
        b.value(a, T.strategy, self.strategy)
        b.value(a, T.goalCount, self.goals)
        b.label(a, f"{self.strategy} batch of {self.goals}")


class BatchEnded(Event):
    """A batch ended: its end, its failures, and what it informed (its runs and sessions)."""

    activity: str
    ended: datetime
    failed: int
    informed: tuple[str, ...] = ()

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        b.value(a, PROV.endedAtTime, self.ended)
        b.value(a, T.failedCount, self.failed)
        for iri in self.informed:
            b.add(IRI.trusted(iri), PROV.wasInformedBy, a)


@dataclass(frozen=True)
class _Scope:
    """What ``notify`` reads of a context, for events of a batch (no run, no session)."""

    observers: tuple[Any, ...]
    session: str
    run: None = None


def _recorder(session_options: Mapping[str, Any]) -> Recorder:
    """The recorder the batch's sessions record with (as ``Session`` picks it)."""
    given = session_options.get("recorder")
    if isinstance(given, Recorder):
        return given
    store = session_options.get("store")
    return Recorder.from_settings(store=store) if store is not None else default_recorder()


class BatchRecord:
    """The evidence and the events of one batch (see the module docstring).

    Args:
        strategy: the planner's name.
        goals: how many goals the batch was given.
        principal: who the batch runs for.
        session_options: the ``Session`` keywords of its sessions (their store).
        options: the run keywords (their ``observers``).
    """

    def __init__(
        self,
        strategy: str,
        goals: int,
        *,
        principal: str,
        session_options: Mapping[str, Any] | None,
        options: Mapping[str, Any],
    ) -> None:
        session_options = dict(session_options or {})
        self.id = str(uuid.uuid4())
        self.strategy = strategy
        self.goals = goals
        self.principal = principal
        self.recorder = _recorder(session_options)
        self.graph = batch_graph(self.recorder.minter, self.id)
        self.activity = Minter.part(self.graph, "batch")
        observers = check_observers(options.get("observers")) + check_observers(
            session_options.get("observers")
        )
        self._scope = cast("Context", _Scope(observers, str(self.graph)))
        self._t0 = time.monotonic()

    def start(self) -> None:
        """Record the batch's start and tell observers (``batch_start``)."""
        self.recorder.record(
            BatchStarted(
                session=str(self.graph),
                activity=str(self.activity),
                batch_id=self.id,
                principal=self.principal,
                strategy=self.strategy,
                goals=self.goals,
                started=now(),
            )
        )
        notify(self._scope, "batch_start", batch_id=self.id, prompts_count=self.goals)

    def end(self, results: Sequence[Any], informed: Sequence[str]) -> None:
        """Record the batch's end (what it informed), seal its graph, tell observers.

        Args:
            results: one ``PlanResult`` or exception per goal.
            informed: the runs and sessions of the batch.
        """
        failed = sum(1 for r in results if isinstance(r, BaseException))
        self.recorder.record(
            BatchEnded(
                session=str(self.graph),
                activity=str(self.activity),
                ended=now(),
                failed=failed,
                informed=tuple(dict.fromkeys(informed)),
            )
        )
        if load_settings().section("audit").get("seal", True):
            from trails.evidence.seal import install_sealer

            install_sealer(self.recorder).seal(self.recorder, self.graph)
        notify(
            self._scope,
            "batch_end",
            batch_id=self.id,
            results_count=len(results) - failed,
            errors_count=failed,
            total_duration_ms=(time.monotonic() - self._t0) * 1000.0,
        )
