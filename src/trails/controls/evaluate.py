"""Evaluating controls: a session's controls over its graphs, the store's over everything.

``evaluate_session(store, session, controls)`` runs each session-scoped control with the
default graph the union of the session's graphs (its session graph and its content graph,
also visible as named graphs) and ``?session`` bound to the session's IRI;
``evaluate_store(store, controls)`` runs each store-scoped control over the union of every
graph. Values reach the query only as bound parameters. Each control gets an ``Outcome``:
``passed`` (no row), ``violated`` (one ``Violation`` per row), ``timed out`` (it ran past
``timeout`` seconds: never reported as passed) or ``error`` (the store refused it).
A session's control whose query needs a triple none of the session's graphs holds is
``passed`` without running its query (``needs``: the answer it would give, read from the
store's indexes in microseconds instead of a parse, a plan and a run).

Nothing here writes: ``trails.controls.record`` turns an ``Evaluation`` into evidence.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from trails.controls.model import Control, severity_rank
from trails.controls.needs import Clause, Pattern, needs
from trails.errors import TrailsError
from trails.prov.content import content_graph
from trails.store.base import Store, select
from trails.store.terms import IRI, Term, Triple, to_rdflib
from trails.store.terms import Literal as RDFLiteral

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "Evaluation",
    "Outcome",
    "Violation",
    "evaluate_session",
    "evaluate_store",
    "session_graphs",
]

DEFAULT_TIMEOUT_S = 30.0
"""How long one control may run before it is reported ``timed out``."""

Status = Literal["passed", "violated", "timed out", "error"]


@dataclass(frozen=True)
class Violation:
    """One row of a control's check: what is at fault, in which session, and why."""

    control: str
    severity: str
    subject: str | None
    session: str | None
    message: str | None = None


@dataclass
class Outcome:
    """One control evaluated once (over one session, or over the store)."""

    control: Control
    status: Status
    violations: list[Violation] = field(default_factory=list)
    session: str | None = None
    graphs: tuple[str, ...] = ()
    """The graphs the evaluation read (empty: the whole store)."""
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    ended: datetime = field(default_factory=lambda: datetime.now(UTC))
    error: str | None = None

    @property
    def failed(self) -> bool:
        """Not passed: violated, timed out, or not evaluated because of an error."""
        return self.status != "passed"


@dataclass
class Evaluation:
    """The outcomes of one evaluation run (one session's, or the store's)."""

    outcomes: list[Outcome] = field(default_factory=list)
    scope: Literal["session", "store"] = "session"
    session: str | None = None

    @property
    def violations(self) -> list[Violation]:
        return [v for o in self.outcomes for v in o.violations]

    def failing(self, at_least: str) -> list[Outcome]:
        """Outcomes that fail at ``at_least`` or above (a time-out or error always counts)."""
        rank = severity_rank(at_least)
        return [
            o
            for o in self.outcomes
            if o.status in ("timed out", "error")
            or (o.status == "violated" and severity_rank(o.control.severity) >= rank)
        ]


def session_graphs(session: str) -> list[IRI]:
    """The graphs of a session: its own graph and its content graph."""
    return [IRI(session), content_graph(session)]


class _Worker:
    """One daemon thread that runs jobs one after another, so a batch of controls costs
    one hand-off, not a thread start (nor a hand-off per control). A control that overruns
    its limit keeps this worker (a query cannot be stopped from outside); what is left of
    its batch goes to a fresh one."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[Callable[[], Any], queue.SimpleQueue[Any]]] = (
            queue.SimpleQueue()
        )
        threading.Thread(target=self._loop, name="trails-control", daemon=True).start()

    def _loop(self) -> None:
        while True:
            work, box = self.jobs.get()
            try:
                box.put((True, work()))
            except BaseException as exc:
                box.put((False, exc))


_lock = threading.Lock()
_free: list[_Worker] = []


def _take() -> _Worker:
    with _lock:
        worker = _free.pop() if _free else None
    return worker if worker is not None else _Worker()


def _give_back(worker: _Worker) -> None:
    with _lock:
        _free.append(worker)


class _Batch:
    """Controls run one after another on one worker; the caller watches the one running.

    The worker notes, under ``lock``, which control it is on and since when; the caller
    sleeps until the batch is done or the running control's limit is reached, and only
    then looks. A control past its limit is given up (``abandoned``: the worker keeps
    no result of it and starts nothing more of this batch)."""

    def __init__(self, run: Callable[[Control], Outcome], controls: Sequence[Control]) -> None:
        self.run, self.controls = run, list(controls)
        self.lock = threading.Lock()
        self.done: list[Outcome] = []
        self.started = time.monotonic()
        self.started_at = datetime.now(UTC)
        self.abandoned = False

    def __call__(self) -> None:
        for control in self.controls:
            outcome = self.run(control)
            with self.lock:
                if self.abandoned:
                    return
                self.done.append(outcome)
                self.started = time.monotonic()
                self.started_at = datetime.now(UTC)


def _bounded_all(
    run: Callable[[Control], Outcome],
    controls: Sequence[Control],
    timeout: float,
    timed_out: Callable[[Control, datetime], Outcome],
) -> list[Outcome]:
    """``run(c)`` for each control in order on one worker thread; a control that runs
    ``timeout`` seconds is ``timed_out(c, started)`` and the rest run on a fresh worker."""
    outcomes: list[Outcome] = []
    rest = list(controls)
    while rest:
        worker, batch = _take(), _Batch(run, rest)
        box: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        with batch.lock:
            batch.started, batch.started_at = time.monotonic(), datetime.now(UTC)
        worker.jobs.put((batch, box))
        wait = timeout
        while True:
            try:
                ok, value = box.get(timeout=max(wait, 0.0))
            except queue.Empty:
                with batch.lock:
                    overdue = time.monotonic() - batch.started
                    if overdue < timeout:
                        wait = timeout - overdue
                        continue
                    batch.abandoned = True
                    done, started_at = list(batch.done), batch.started_at
                outcomes.extend(done)
                outcomes.append(timed_out(rest[len(done)], started_at))
                rest = rest[len(done) + 1 :]
                break
            _give_back(worker)
            if not ok:
                raise value
            outcomes.extend(batch.done)
            rest = []
            break
    return outcomes


def _text(term: Term | None) -> str | None:
    if term is None:
        return None
    if isinstance(term, RDFLiteral):
        return term.value
    return str(term)


def _sparql_rows(
    store: Store, control: Control, session: IRI | None, graphs: list[IRI]
) -> list[Violation]:
    if session is not None:
        result = select(
            store,
            control.check,
            control.bindings(session),
            default_graph=graphs,
            named_graphs=graphs,
        )
    else:
        result = select(store, control.check, control.bindings(None), union_default_graph=True)
    return [
        Violation(
            control.id,
            control.severity,
            _text(row.get("subject")),
            _text(row.get("session")) or (str(session) if session is not None else None),
            _text(row.get("message")),
        )
        for row in result
    ]


def _shacl_rows(
    store: Store, control: Control, session: IRI | None, graphs: list[IRI]
) -> list[Violation]:
    import rdflib

    try:
        from pyshacl import validate
    except ImportError as exc:
        raise TrailsError("SHACL checks need pyshacl (pip install pyshacl)") from exc
    everything = "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }"
    if session is not None:
        triples = store.query(everything, default_graph=graphs)
    else:
        triples = store.query(everything, union_default_graph=True)
    data = rdflib.Graph()
    assert isinstance(triples, list)
    for t in triples:
        assert isinstance(t, Triple)
        data.add((to_rdflib(t.subject), to_rdflib(t.predicate), to_rdflib(t.object)))
    shapes = rdflib.Graph().parse(data=control.check, format="turtle")
    _conforms, report, _text_report = validate(data, shacl_graph=shapes, inference="none")
    sh = rdflib.Namespace("http://www.w3.org/ns/shacl#")
    rows = []
    for result in sorted(report.subjects(rdflib.RDF.type, sh.ValidationResult), key=str):
        focus = report.value(result, sh.focusNode)
        message = report.value(result, sh.resultMessage)
        rows.append(
            Violation(
                control.id,
                control.severity,
                str(focus) if focus is not None else None,
                str(session) if session is not None else None,
                str(message) if message is not None else None,
            )
        )
    return rows


def _start(
    control: Control, session: IRI | None, graphs: Sequence[IRI], started: datetime
) -> Outcome:
    return Outcome(
        control,
        "passed",
        session=str(session) if session is not None else None,
        graphs=tuple(str(g) for g in graphs),
        started=started,
    )


def _evaluate(store: Store, control: Control, session: IRI | None, graphs: list[IRI]) -> Outcome:
    """One control run to its end (on the caller's thread, or a batch's worker)."""
    outcome = _start(control, session, graphs, datetime.now(UTC))
    run = _sparql_rows if control.kind == "sparql" else _shacl_rows
    try:
        outcome.violations = run(store, control, session, graphs)
    except TrailsError as exc:
        outcome.status = "error"
        outcome.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    else:
        outcome.status = "violated" if outcome.violations else "passed"
    outcome.ended = datetime.now(UTC)
    return outcome


#: how often each clause was found missing (this process): looked up first next time, so
#: a skipped control costs one look-up, not one per pattern it needs (bounded, then reset)
_MISSED: dict[Clause, int] = {}


def _unmatchable(store: Store, controls: Sequence[Control], graphs: list[IRI]) -> list[bool]:
    """For each control, whether its query has no row over ``graphs`` because a triple
    every row needs (``trails.controls.needs``) is in none of them (False: run it)."""
    seen: dict[Pattern, bool | None] = {}
    look_up = getattr(store, "has_triple", None)  # a store of another maker may not have it
    if look_up is None:
        return [False] * len(controls)

    def holds(clause: Clause) -> bool | None:
        for pattern in clause:
            if pattern not in seen:
                try:
                    seen[pattern] = look_up(pattern[0], pattern[1], graphs)
                except TrailsError:  # the queries will say, each in its outcome
                    seen[pattern] = None
            if seen[pattern] is not False:
                return seen[pattern]  # True, or None: this store cannot tell
        return False

    answers = []
    for control in controls:
        missing = False
        if control.kind == "sparql":
            for clause in sorted(needs(control.check), key=lambda c: -_MISSED.get(c, 0)):
                held = holds(clause)
                if held is None:  # the store cannot tell: run every query
                    return [False] * len(controls)
                if not held:
                    if len(_MISSED) > 4096:
                        _MISSED.clear()
                    _MISSED[clause] = _MISSED.get(clause, 0) + 1
                    missing = True
                    break
        answers.append(missing)
    return answers


def _evaluate_all(
    store: Store,
    controls: Sequence[Control],
    session: IRI | None,
    timeout: float | None,
    prefilter: bool = False,
) -> list[Outcome]:
    graphs = session_graphs(session) if session is not None else []
    if prefilter and controls:
        skipped = _unmatchable(store, controls, graphs)
        if any(skipped):
            to_run = [c for c, skip in zip(controls, skipped, strict=True) if not skip]
            ran = iter(_evaluate_all(store, to_run, session, timeout))
            now = datetime.now(UTC)
            return [
                _start(c, session, graphs, now) if skip else next(ran)
                for c, skip in zip(controls, skipped, strict=True)
            ]
    if timeout is None:
        return [_evaluate(store, c, session, graphs) for c in controls]

    def timed_out(control: Control, started: datetime) -> Outcome:
        outcome = _start(control, session, graphs, started)
        outcome.status = "timed out"
        outcome.error = f"ran past its limit of {timeout:g} s"
        return outcome

    return _bounded_all(
        lambda c: _evaluate(store, c, session, graphs), controls, timeout, timed_out
    )


def evaluate_session(
    store: Store,
    session: str,
    controls: Sequence[Control],
    *,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    prefilter: bool = True,
) -> Evaluation:
    """Evaluate the session-scoped ``controls`` over one session's graphs.

    A SPARQL control whose query needs a triple the session's graphs do not hold (its
    mandatory patterns, ``trails.controls.needs``, looked up in the store's indexes) has
    no row: it passed, and its query is not run.

    Args:
        store: the store holding the session.
        session: the session's IRI (its graph's name).
        controls: controls to run; store-scoped ones are skipped.
        timeout: seconds each control may run (None: no limit).
        prefilter: False: run every query, even one that cannot have a row (the same
            outcomes, at the queries' full cost).
    """
    iri = IRI(session)
    chosen = [c for c in controls if c.scope == "session"]
    outcomes = _evaluate_all(store, chosen, iri, timeout, prefilter)
    return Evaluation(outcomes, scope="session", session=str(iri))


def evaluate_store(
    store: Store,
    controls: Sequence[Control],
    *,
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> Evaluation:
    """Evaluate the store-scoped ``controls`` over the whole store (session-scoped ones are
    skipped: ``evaluate_session`` runs those per session)."""
    chosen = [c for c in controls if c.scope == "store"]
    return Evaluation(_evaluate_all(store, chosen, None, timeout), scope="store")
