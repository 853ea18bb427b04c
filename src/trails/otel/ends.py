"""How a received session ends: its status read from its spans, never assumed ``ok``.

A session keyed by trace id ends when its root span arrives; one keyed by
``gen_ai.conversation.id`` (or whose root never comes) ends when no span
arrived for the ingester's idle timeout. Either way the spans already recorded
say how the run went:

- a span with status ERROR or an ``error.type`` (recorded as an activity with
  ``trails:status "error"``, a run stopped ``error``, or a ``trails:errorType``)
  ends the session ``error``: the report's outcome says so, and the failed
  activity keeps its error message and type where the report lists it (failed
  invocations, the run's stop reason, the timeline);
- a session ended on idle time while some span still waits for a parent that
  never arrived (the trace's root span never ended) ends ``interrupted``, its
  interruption saying so: distinguishable from a run that finished;
- else ``ok``.

A session a trails exporter sent carries its own status on its session span,
which is taken as it is.
"""

from __future__ import annotations

from datetime import datetime

from trails.prov.events import SessionEnded
from trails.prov.vocab import PROV, T
from trails.store.base import Store, select
from trails.store.terms import IRI, to_python

__all__ = ["first_error", "session_end"]

_FIRST_ERROR = f"""
SELECT ?s ?a ?end ?message ?type WHERE {{
  GRAPH ?s {{
    ?a {T.spanId.n3()} ?id ; {PROV.endedAtTime.n3()} ?end .
    {{ ?a {T.status.n3()} "error" }} UNION {{ ?a {T.stopReason.n3()} "error" }}
    UNION {{ ?a {T.errorType.n3()} ?anyType }}
    FILTER (?a != ?s)
    OPTIONAL {{ GRAPH ?errorMessageGraph1 {{ ?a {T.errorMessage.n3()} ?message }} }}
    OPTIONAL {{ ?a {T.errorType.n3()} ?type }}
  }}
}} ORDER BY ?end ?a LIMIT 1"""

_ORPHAN = f"""
SELECT ?s ?a ?trace WHERE {{
  GRAPH ?s {{
    ?a {T.spanId.n3()} ?id ; {T.traceId.n3()} ?trace ; {PROV.wasInformedBy.n3()} ?parent .
    FILTER (?parent != ?s)
    FILTER NOT EXISTS {{ ?parent {T.spanId.n3()} ?parentId }}
  }}
}} ORDER BY ?a LIMIT 1"""


def first_error(store: Store, session: str) -> str | None:
    """The first failed span of ``session`` as ``"message (span IRI)"``, or None if none failed.

    Raises:
        StoreError: the store cannot be read.
    """
    failed = list(select(store, _FIRST_ERROR, {"s": IRI.trusted(session)}))
    if not failed:
        return None
    row = {k: to_python(v) for k, v in failed[0].items()}
    message = row.get("message") or row.get("type") or "a span ended with status ERROR"
    return f"{message} (span {row['a']})"


def session_end(store: Store, session: str, at: datetime, *, idle: bool) -> SessionEnded:
    """How ``session`` ends at ``at``, from the spans recorded in it (see the module docstring).

    Args:
        store: the store holding the session.
        session: the session IRI.
        at: when it ends.
        idle: it ends because no span arrived for the idle timeout (not on its root span).

    Returns:
        The ``SessionEnded`` to record, with its status.

    Raises:
        StoreError: the store cannot be read.
    """
    if first_error(store, session) is not None:
        return SessionEnded(session=session, ended=at, status="error")
    if idle:
        orphans = list(select(store, _ORPHAN, {"s": IRI.trusted(session)}))
        if orphans:
            trace = to_python(orphans[0]["trace"])
            reason = (
                f"no span arrived for the idle timeout and the root span of trace {trace} "
                "never did: the run did not finish, or its end was not sent"
            )
            return SessionEnded(
                session=session, ended=at, status="interrupted", reason=reason, detected=at
            )
    return SessionEnded(session=session, ended=at, status="ok")
