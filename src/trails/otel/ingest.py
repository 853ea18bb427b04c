"""Received spans -> sessions in the store: grouping, idempotence, one write per batch, ends.

``Ingestor.ingest(spans)`` is what ``POST /v1/traces`` calls. For one batch it

1. drops the spans already recorded (spans are identified by trace and span
   id, so an exporter's retry duplicates nothing);
2. puts each trace in its session: ``gen_ai.conversation.id`` (or
   OpenInference's ``session.id``) when a span of the trace has one, else the
   session the trace already went to, else the trace id. Spans sent with a
   write token go to the token's own namespace: the session id is
   ``otlp-DIGEST-KEY``, DIGEST the first 16 hex digits of the SHA-256 of the
   token's principal, so two tenants' ``conv-1`` are two sessions; the
   token's principal is the session's writer (``prov:wasAssociatedWith``) and
   the span's ``enduser.id`` the one it acted for (``prov:actedOnBehalfOf``),
   never the writer. A trace that would land in a session already ended (and
   sealed) goes to a continuation session ``KEY~TRACEID`` instead, so a
   sealed graph is never written again;
3. never writes into a graph it did not start: the spans of a trace whose
   session exists without received spans (a session of the Python API, or
   of another kind) or whose continuation has ended too are refused and
   counted in ``IngestResult.rejected`` with the reason (the receiver
   answers them as the OTLP partial success); the rest of the batch is
   written;
4. turns every span into its trails event (``trails.otel.mapping``), plus a
   ``SessionStarted`` for each new session, and writes all their quads in
   **one** atomic store write: the batch is whole or absent, and the receiver
   answers 200 only after it;
5. ends a session keyed by trace id when its root span (the one without a
   parent) has arrived, by recording ``SessionEnded`` through the recorder, so
   the configured sealer seals it. Sessions keyed by a conversation id (which
   span many traces) and sessions whose root never comes are ended by
   ``sweep()`` after ``idle_timeout`` seconds without a new span. The end
   status is what the spans say (``trails.otel.ends``: ``error``,
   ``interrupted`` or ``ok``), and a span without ``enduser.id`` acts for its
   nearest ancestor's (``trails.otel.mapping.EndUsers``).

Spans a trails exporter sent for a session itself (``trails.kind = session``)
are not activities: they carry the session's start, end and status.

``Ingestor.ingest_logs(records)`` is what ``POST /v1/logs`` calls: GenAI log
records (``trails.otel.logs``) become content of their span's completion,
whichever arrives first (the records wait for their span; a completion of an
open session is rewritten when they come after it). ``group_window`` puts the
root-less traces of one service and end user into one session, for apps that
start no span around their work.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from trails.errors import ConfigError, StoreError
from trails.evidence.seal import sealer_of
from trails.llm.catalogue import Catalogue, default_catalogue
from trails.otel.conventions import Reading, read_span
from trails.otel.ends import session_end
from trails.otel.events import (
    SpanCompletion,
    SpanIdentity,
    SpanOfSession,
    SpanSessionStarted,
    span_activity,
)
from trails.otel.logs import LogRecord, genai_events
from trails.otel.lookups import BATCH as _BATCH
from trails.otel.lookups import conversation as _conversation
from trails.otel.lookups import recorded_query as _recorded_query
from trails.otel.lookups import states_query as _states_query
from trails.otel.lookups import true as _true
from trails.otel.mapping import EndUsers, span_event
from trails.otel.otlp import Span, SpanEvent
from trails.otel.refusals import SpansRefused, refusals_graph
from trails.otel.replayable import projection_of
from trails.prov.events import SessionEnded
from trails.prov.iri import foreign_session_key
from trails.prov.recorder import Recorder
from trails.prov.vocab import PROV, T
from trails.store.base import ask, select
from trails.store.terms import IRI, Literal, Quad, to_python

__all__ = ["MAX_WAITING_LOGS", "IngestResult", "Ingestor", "ingest_options"]

MAX_WAITING_LOGS = 100_000
"""Log records kept while their span has not arrived; beyond, new ones are refused."""

_NAMESPACED = ("otlp-",)  # how a write token's sessions begin (``_namespace``)
_IS_SESSION = f"ASK {{ GRAPH ?s {{ ?s a {T.Session.n3()} }} }}"
_IS_ENDED = f"ASK {{ GRAPH ?s {{ ?s a {T.Session.n3()} ; {PROV.endedAtTime.n3()} ?end }} }}"
_OPEN_SESSIONS = f"""
SELECT ?s (MAX(?end) AS ?last) WHERE {{
  GRAPH ?s {{
    ?s a {T.Session.n3()} .
    FILTER NOT EXISTS {{ ?s {PROV.endedAtTime.n3()} ?ended }}
    ?a {T.spanId.n3()} ?id ; {PROV.endedAtTime.n3()} ?end .
  }}
}} GROUP BY ?s"""
_UNLINKED_CALLS = f"""
SELECT ?g ?t ?call WHERE {{
  GRAPH ?g {{ ?t a {T.CapabilityInvocation.n3()} ; {T.toolCallId.n3()} ?call .
             FILTER NOT EXISTS {{ ?t {T.requestedBy.n3()} ?any }} }}
}}"""
_REQUESTER = f"""
SELECT ?a ?g ?call WHERE {{
  GRAPH ?g {{ ?a a {T.LLMCompletion.n3()} ; {T.toolCallId.n3()} ?call }}
}} LIMIT 1"""


def ingest_options(section: dict[str, Any]) -> dict[str, Any]:
    """The ``Ingestor`` options of an ``[otel]`` settings section.

    ``log_wait`` (seconds, default 5: the receivers mount ``/v1/logs``) and
    ``group_window`` (seconds, default none).

    Raises:
        ConfigError: a value that is not a non-negative number of seconds.
    """
    out: dict[str, Any] = {"log_wait": 5.0, "group_window": None}
    for name in out:
        value = section.get(name, out[name])
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigError(
                f"[otel] {name} must be a non-negative number of seconds, not {value!r}"
            )
        out[name] = float(value)
    return out


@dataclass
class IngestResult:
    """What one batch did: spans written, already recorded or refused (and why), sessions."""

    written: int = 0
    duplicates: int = 0
    sessions: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)
    rejected: int = 0
    refusals: list[str] = field(default_factory=list)
    ignored: int = 0


@dataclass
class _Open:
    last_seen: float
    last_end: datetime


@dataclass
class _Kept:
    """A completion of an open session, as written: log records may add to its content."""

    span: Span
    event: SpanCompletion


def _literal(text: str) -> Literal:
    return Literal(text, "http://www.w3.org/2001/XMLSchema#string")


def _only_in(old: list[Quad], new: list[Quad], event: SpanIdentity) -> list[Quad]:
    """The quads of an activity (and of its parts) that ``old`` has and ``new`` has not."""
    kept = set(new)
    activity = str(getattr(event, "activity", ""))
    return [
        q
        for q in old
        if q not in kept
        and (str(q.subject) == activity or str(q.subject).startswith(f"{activity}:"))
    ]


class Ingestor:
    """Writes received spans as provenance (see the module docstring).

    Args:
        recorder: writes the events (build it with ``Recorder.from_settings`` so
            ended sessions are sealed).
        idle_timeout: seconds without a new span after which ``sweep`` ends a session.
        catalogue: prices completions (default: trails' model catalogue).
        principal: who spans without ``enduser.id`` / ``user.id`` act for
            (default: the resource's ``service.name``).
        clock: monotonic seconds (tests pass their own).
        replayable: write each session's projection when it ends, so
            ``Session.replay`` rebuilds it (``trails.otel.replayable``).
        group_window: for apps that send no root span (one trace per model call):
            traces without ``gen_ai.conversation.id`` from the same service and end
            user go to one session while they arrive less than this many seconds
            after its last span did (the session then ends on ``idle_timeout``); None
            (the default) keys each such trace's session by its trace id.
        log_wait: seconds a session keyed by its trace stays open after its root
            span arrived when a completion of it carried no content, for the log
            records that may bring it (``sweep`` ends it then); 0 ends it at once.
    """

    def __init__(
        self,
        recorder: Recorder,
        *,
        idle_timeout: float = 300.0,
        catalogue: Catalogue | None = None,
        principal: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        replayable: bool = True,
        log_wait: float = 0.0,
        group_window: float | None = None,
    ) -> None:
        self.recorder = recorder
        self.idle_timeout = idle_timeout
        self.catalogue = catalogue if catalogue is not None else default_catalogue()
        self.principal = principal
        self.clock = clock
        self.replayable = replayable
        self.log_wait = log_wait
        self.group_window = group_window
        self._groups: dict[tuple[str, str, str], str] = {}  # (namespace, service, user) -> key
        self._grouped_sessions: set[str] = set()
        self._closing: dict[str, tuple[float, datetime]] = {}  # root arrived, ends after log_wait
        self._lock = threading.Lock()
        self._open: dict[str, _Open] = {}
        # who spans without enduser.id act for (their ancestor's), kept per token namespace:
        # a span of one token never names the end user of another's spans
        self._users_of: defaultdict[str, EndUsers] = defaultdict(EndUsers)
        # GenAI log records, by (namespace, trace, span): waiting for their span, and the
        # completions of open sessions they may still add content to
        self._waiting_logs: dict[tuple[str, str, str], list[tuple[float, SpanEvent]]] = {}
        self._kept: dict[tuple[str, str, str], _Kept] = {}
        #: (exists, received, ended) of sessions, for the request being ingested only
        self._known: dict[str, tuple[bool, bool, bool]] = {}

    @property
    def base(self) -> str:
        return self.recorder.minter.base

    # -- lookups ----------------------------------------------------------------

    def _recorded(self, trace_id: str, namespace: str) -> tuple[str | None, set[str]]:
        """The session of ``namespace`` a trace already went to, and its recorded span ids."""
        return self._recorded_all([trace_id], namespace)[trace_id]

    def _recorded_all(
        self, trace_ids: Sequence[str], namespace: str
    ) -> dict[str, tuple[str | None, set[str]]]:
        """``_recorded`` of every trace of a request, in one query (per ``_BATCH`` traces)."""
        found: dict[str, tuple[str | None, set[str]]] = {t: (None, set()) for t in trace_ids}
        prefix = f"{self.recorder.minter.base}session:{namespace}"
        for at in range(0, len(trace_ids), _BATCH):
            chunk = trace_ids[at : at + _BATCH]
            params = {f"t{i}": _literal(t) for i, t in enumerate(chunk)}
            for row in select(self.recorder.store, _recorded_query(len(chunk)), params):
                g = str(row["g"])
                if not g.startswith(prefix) or (
                    not namespace and g[len(prefix) :].startswith(_NAMESPACED)
                ):
                    continue  # another token's session: never this one's to write or to skip
                trace = chunk[int(str(to_python(row["n"])))]
                ids = found[trace][1]
                ids.add(str(to_python(row["sid"])))
                found[trace] = (g, ids)
        return found

    def _states(self, sessions: Iterable[str]) -> dict[str, tuple[bool, bool, bool]]:
        """``(exists, received, ended)`` of each session, in one query (per ``_BATCH``)."""
        names = list(dict.fromkeys(sessions))
        states = dict.fromkeys(names, (False, False, False))
        for at in range(0, len(names), _BATCH):
            chunk = names[at : at + _BATCH]
            params = {f"s{i}": IRI.trusted(s) for i, s in enumerate(chunk)}
            for row in select(self.recorder.store, _states_query(len(chunk)), params):
                session = chunk[int(str(to_python(row["n"])))]
                states[session] = (True, _true(row["received"]), _true(row["ended"]))
        return states

    def _state(self, session: str) -> tuple[bool, bool, bool]:
        """``(exists, received, ended)``: known for the request's sessions, else asked."""
        state = self._known.get(session)
        if state is None:
            state = self._known[session] = self._states([session])[session]
        return state

    def _namespace(self, token_principal: str | None) -> str:
        """The prefix of the session ids the spans of ``token_principal`` go to."""
        if token_principal is None:
            return ""
        digest = hashlib.sha256(token_principal.encode("utf-8", "surrogatepass")).hexdigest()
        return f"otlp-{digest[:16]}-"

    def _refused(
        self, session: str, spans: Sequence[Span], why: str, principal: str | None
    ) -> SpansRefused:
        """The record of spans refused for ``session`` (written with the batch)."""
        return SpansRefused(
            session=str(refusals_graph(self.recorder.minter)),
            activity=str(self.recorder.minter.activity()),
            refused_session=session,
            spans=len(spans),
            trace_ids=tuple(sorted({s.trace_id for s in spans})),
            reason=why,
            principal=principal,
            at=datetime.now(UTC),
        )

    def _exists(self, session: str) -> bool:
        return ask(self.recorder.store, _IS_SESSION, {"s": IRI.trusted(session)})

    def _ended(self, session: str) -> bool:
        return ask(self.recorder.store, _IS_ENDED, {"s": IRI.trusted(session)})

    def _prefetch(
        self, by_trace: dict[str, list[Span]], namespace: str
    ) -> dict[str, tuple[str | None, set[str]]]:
        """The request's look-ups, asked together before its spans are read: the spans each
        trace already recorded (one query), then whether each session the traces may go to
        exists, holds received spans and has ended (one query), kept in ``_known`` for this
        request (the store does not change before the request's one write)."""
        recorded = self._recorded_all(list(by_trace), namespace)
        likely: list[str] = []
        for trace_id, group in by_trace.items():
            session = recorded[trace_id][0]
            if session is None:
                # a guess from the attributes alone (a session not guessed is asked later)
                conversation = next((c for c in map(_conversation, group) if c), None)
                key = (
                    foreign_session_key(str(conversation), _NAMESPACED)
                    if conversation
                    else trace_id
                )
                session = str(self.recorder.minter.session(namespace + key))
                likely.append(str(self.recorder.minter.session(f"{namespace}{key}~{trace_id}")))
            likely.append(session)
        self._known = self._states(likely)
        return recorded

    def _requester(self, session: str, call_id: str) -> str | None:
        rows = list(
            select(
                self.recorder.store,
                _REQUESTER,
                {"g": IRI.trusted(session), "call": _literal(call_id)},
            )
        )
        return str(rows[0]["a"]) if rows else None

    # -- the batch --------------------------------------------------------------

    def _principal(self, span: Span, reading: Reading, fallback: str | None) -> str:
        return str(
            reading.principal
            or fallback
            or self.principal
            or span.resource.get("service.name")
            or "otel:unknown-service"
        )

    def ingest(self, spans: Sequence[Span], *, principal: str | None = None) -> IngestResult:
        """Record a batch of spans (see the module docstring).

        Args:
            spans: the decoded spans of one request.
            principal: the principal of the request's bearer token, used for spans
                that do not name their end user.

        Returns:
            What was written.

        Raises:
            StoreError: the store did not confirm the write (it may have committed: its
                sessions are tracked and ended like any other).
        """
        with self._lock:
            return self._ingest(spans, principal)

    def _ingest(self, spans: Sequence[Span], token_principal: str | None) -> IngestResult:
        result = IngestResult()
        by_trace: dict[str, list[Span]] = defaultdict(list)
        seen: set[tuple[str, str]] = set()
        for span in spans:
            if (span.trace_id, span.span_id) in seen:
                result.duplicates += 1
                continue
            seen.add((span.trace_id, span.span_id))
            by_trace[span.trace_id].append(span)

        events: list[SpanIdentity] = []
        started: dict[str, SpanSessionStarted] = {}
        roots: dict[str, Span] = {}
        touched: dict[str, datetime] = {}
        keyed_by_trace: set[str] = set()
        rewrites: list[tuple[SpanIdentity, SpanIdentity]] = []
        refused: list[SpansRefused] = []  # recorded, so the refusal is evidence too
        namespace = self._namespace(token_principal)
        users = self._users_of[namespace]
        known = self._prefetch(by_trace, namespace)
        for trace_id, group in by_trace.items():
            earlier_session, recorded = known[trace_id]
            fresh = [self._with_logs(namespace, s) for s in group if s.span_id not in recorded]
            result.duplicates += len(group) - len(fresh)
            if not fresh:
                continue
            readings = {s.span_id: read_span(s) for s in fresh}
            conversation = next(
                (r.conversation_id for r in readings.values() if r.conversation_id), None
            )
            # an id spelling a continuation (``~``) or, from loopback, a tenant's namespace
            # names a session of its own (``:`` the minter escapes in every session id)
            key = foreign_session_key(str(conversation), _NAMESPACED) if conversation else trace_id
            grouped = None
            if not conversation and earlier_session is None and self.group_window is not None:
                grouped = self._group_of(namespace, fresh, readings, token_principal)
                if grouped in self._groups and grouped in self._open_groups():
                    key = self._groups[grouped]  # a trace of the same service and user, soon after
            session = earlier_session or str(self.recorder.minter.session(namespace + key))
            if session not in started and self._state(session)[1] and self._state(session)[2]:
                key = f"{key}~{trace_id}"
                session = str(self.recorder.minter.session(namespace + key))
                if self._state(session)[2]:
                    why = f"session {session} has ended and was sealed; its spans arrived too late"
                    result.rejected += len(fresh)
                    result.refusals.append(why)
                    refused.append(self._refused(session, fresh, why, token_principal))
                    continue
            if session not in started and self._state(session)[0] and not self._state(session)[1]:
                why = (
                    f"session {session} was not started by this receiver; "
                    f"its spans are not written into it"
                )
                result.rejected += len(fresh)  # a session of the Python API, or of anything else
                result.refusals.append(why)
                refused.append(self._refused(session, fresh, why, token_principal))
                continue
            if grouped is not None:  # ended on idle time, like a conversation
                self._groups[grouped] = key
                self._grouped_sessions.add(session)
            elif not conversation and session not in self._grouped_sessions:
                keyed_by_trace.add(session)
            session_spans = {
                s.span_id for s in fresh if s.attributes.get("trails.kind") == "session"
            }
            known_session_spans = session_spans | {
                s.parent_id for s in fresh if s.parent_id and s.parent_id in session_spans
            }
            first = min(fresh, key=lambda s: s.start)
            principal = self._principal(first, readings[first.span_id], token_principal)
            end_user = None
            if token_principal is not None:  # the token's principal writes; enduser.id is kept
                end_user = principal if principal != token_principal else None
                principal = token_principal
            if session not in started and not self._state(session)[0]:
                session_span = next((s for s in fresh if s.span_id in session_spans), None)
                label = session_span.name if session_span is not None else None
                started[session] = SpanSessionStarted(
                    session=session,
                    principal=principal,
                    started=(session_span or first).start,
                    label=label or f"otel session {key}",
                    conversation_id=str(conversation) if conversation else None,
                    end_user=end_user,
                )
                result.sessions.append(session)
            calls: dict[str, str] = {}
            for span in fresh:
                user = readings[span.span_id].principal
                users.note(session, trace_id, span.span_id, span.parent_id, user)
            for span in sorted(fresh, key=lambda s: (s.start, s.end)):
                reading = readings[span.span_id]
                if span.span_id in session_spans:
                    roots[session] = span
                    events.append(
                        SpanOfSession(
                            session=session,
                            trace_id=span.trace_id,
                            span_id=span.span_id,
                            operation=reading.operation,
                            error_type=reading.error_type,
                        )
                    )
                    continue
                if span.parent_id is None:
                    roots.setdefault(session, span)
                parent = None
                under_session = span.attributes.get("trails.parent") == "session"
                if (
                    span.parent_id
                    and not under_session
                    and span.parent_id not in known_session_spans
                ):
                    parent = str(span_activity(self.base, trace_id, span.parent_id))
                requested_by = None
                if reading.category == "tool" and reading.tool_call_id:
                    requested_by = calls.get(str(reading.tool_call_id)) or self._requester(
                        session, str(reading.tool_call_id)
                    )
                event = span_event(
                    span,
                    reading,
                    session=session,
                    base=self.base,
                    principal=users.of(trace_id, span.span_id)
                    or self._principal(span, reading, token_principal),
                    parent=parent,
                    requested_by=requested_by,
                    catalogue=self.catalogue,
                )
                if isinstance(event, SpanCompletion):
                    for call in event.tool_call_ids:
                        calls[call] = event.activity
                    self._kept[(namespace, trace_id, span.span_id)] = _Kept(span, event)
                events.append(event)
                if users.of(trace_id, span.span_id) is None:
                    users.wait(event)
                result.written += 1
            rewrites.extend(users.adopted(trace_id))
            touched[session] = max(touched.get(session, first.end), max(s.end for s in fresh))

        quads: list[Quad] = []
        for opened in started.values():
            quads.extend(self.recorder.quads(opened))
        for event in events:
            quads.extend(self.recorder.quads(event))
        for refusal in refused:
            quads.extend(self.recorder.quads(refusal))
        stale: list[Quad] = []
        for as_written, as_now in rewrites:  # an ancestor named the end user after them
            kept = self._kept.get((namespace, as_now.trace_id, as_now.span_id))
            if kept is not None and isinstance(as_now, SpanCompletion):
                kept.event = as_now
            now_quads = self.recorder.quads(as_now)
            stale.extend(_only_in(self.recorder.quads(as_written), now_quads, as_written))
            quads.extend(now_quads)
        if quads:
            # each once: a session's principal, model and tool are described by every span
            quads = list(dict.fromkeys(quads))
            sealer = sealer_of(self.recorder)
            new_graphs = [IRI.trusted(s) for s in started]
            if sealer is not None:  # it seals them from this write's quads, not read back
                for graph in new_graphs:
                    sealer.track(graph)
            try:
                self.recorder.write_quads(quads, remove=stale)  # the whole batch, atomically
            except StoreError:
                # a write that timed out may still have been committed: its sessions are
                # tracked all the same, so the sweep (or shutdown) ends those that exist,
                # and their seals read them as stored
                if sealer is not None:
                    sealer.forget(new_graphs)
                now = self.clock()
                for session, last in touched.items():
                    self._open.setdefault(session, _Open(now, last))
                raise
        now = self.clock()
        for session, last in touched.items():
            state = self._open.get(session)
            if state is None:
                self._open[session] = _Open(now, last)
            else:
                state.last_seen, state.last_end = now, max(state.last_end, last)
        for session, root in roots.items():
            if session in keyed_by_trace or root.attributes.get("trails.kind") == "session":
                own = root.attributes.get("trails.kind") == "session"  # its status, as sent
                if not own and self.log_wait > 0 and self._awaits_content(session):
                    self._closing[session] = (now, root.end)  # its content may come as logs
                    continue
                self._end(
                    session,
                    root.end,
                    ("error" if root.status == "error" else "ok") if own else None,
                )
                result.ended.append(session)
        return result

    # -- grouping traces without a root ---------------------------------------------

    def _group_of(
        self,
        namespace: str,
        spans: Sequence[Span],
        readings: dict[str, Reading],
        token_principal: str | None,
    ) -> tuple[str, str, str]:
        """(namespace, service, end user) of a trace: what ``group_window`` groups by."""
        first = min(spans, key=lambda s: s.start)
        user = next((r.principal for r in readings.values() if r.principal), None)
        service = str(first.resource.get("service.name") or "")
        return namespace, service, str(user or token_principal or "")

    def _open_groups(self) -> set[tuple[str, str, str]]:
        """The groups whose session is open and had a span within ``group_window`` seconds."""
        window = self.group_window or 0.0
        now = self.clock()
        out = set()
        for group, key in self._groups.items():
            session = str(self.recorder.minter.session(group[0] + key))
            state = self._open.get(session)
            if state is not None and now - state.last_seen <= window:
                out.add(group)
        return out

    # -- log records --------------------------------------------------------------

    def _link_calls(self, completion: SpanCompletion, call: str) -> list[Quad]:
        """``requestedBy`` for the recorded tool executions of ``call`` not yet linked."""
        graph = IRI.trusted(completion.session)
        requester = IRI.trusted(completion.activity)
        found = select(self.recorder.store, _UNLINKED_CALLS, {"g": graph, "call": _literal(call)})
        out = []
        for row in found:
            tool = IRI.trusted(str(row["t"]))
            out += [
                Quad(tool, T.requestedBy, requester, graph),
                Quad(tool, PROV.wasInfluencedBy, requester, graph),
            ]
        return out

    def _awaits_content(self, session: str) -> bool:
        """Whether a completion of ``session`` was recorded without its prompt's messages."""
        return any(
            kept.event.session == session and not kept.event.messages
            for kept in self._kept.values()
        )

    def _with_logs(self, namespace: str, span: Span) -> Span:
        """``span`` with the GenAI log records that arrived for it before it did, as events."""
        waiting = self._waiting_logs.pop((namespace, span.trace_id, span.span_id), None)
        if not waiting:
            return span
        return dataclasses.replace(span, events=(*span.events, *(e for _, e in waiting)))

    def ingest_logs(
        self, records: Sequence[LogRecord], *, principal: str | None = None
    ) -> IngestResult:
        """Record the content GenAI log records carry as content of their span's completion.

        A record whose completion is recorded in an open session rewrites that
        completion (its prompt, completion text and request hash) in one atomic
        write; a record whose span has not arrived waits for it (until
        ``idle_timeout`` without another record for that span); a record whose
        span's session has ended is refused (a sealed graph is never written
        again). Records that are not GenAI events, or name no span, are ignored.

        Args:
            records: the decoded log records of one request.
            principal: the principal of the request's bearer token (its namespace).

        Returns:
            ``written``: records recorded or kept for their span; ``ignored``:
            records that are not GenAI events of a span; ``rejected`` and
            ``refusals``: refused records.

        Raises:
            StoreError: the store failed; nothing of the batch was written.
        """
        with self._lock:
            return self._ingest_logs(records, principal)

    def _ingest_logs(
        self, records: Sequence[LogRecord], token_principal: str | None
    ) -> IngestResult:
        result = IngestResult()
        namespace = self._namespace(token_principal)
        found = genai_events(records)
        result.ignored = len(records) - len(found)
        by_span: dict[tuple[str, str, str], list[SpanEvent]] = defaultdict(list)
        for trace_id, span_id, event in found:
            by_span[(namespace, trace_id, span_id)].append(event)
        now = self.clock()
        quads: list[Quad] = []
        stale: list[Quad] = []
        rewritten: dict[tuple[str, str, str], _Kept] = {}
        for key, events in by_span.items():
            _, trace_id, span_id = key
            kept = rewritten.get(key) or self._kept.get(key)
            if kept is None:
                session, recorded = self._recorded(trace_id, namespace)
                if session is not None and span_id in recorded:
                    result.rejected += len(events)
                    result.refusals.append(
                        f"span {span_id} of trace {trace_id} is not a completion of a session "
                        f"this receiver holds open; its log records are not written"
                    )
                    continue
                waiting = sum(len(w) for w in self._waiting_logs.values())
                if waiting + len(events) > MAX_WAITING_LOGS:
                    result.rejected += len(events)
                    result.refusals.append(
                        f"{waiting} log records already wait for their spans; send the spans"
                    )
                    continue
                self._waiting_logs.setdefault(key, []).extend((now, e) for e in events)
                result.written += len(events)
                continue
            span = dataclasses.replace(kept.span, events=(*kept.span.events, *events))
            old = kept.event
            new = span_event(
                span,
                read_span(span),
                session=old.session,
                base=self.base,
                principal=old.principal,
                parent=old.parent,
                catalogue=self.catalogue,
            )
            assert isinstance(new, SpanCompletion)
            new_quads = self.recorder.quads(new)
            stale.extend(_only_in(self.recorder.quads(old), new_quads, old))
            quads.extend(new_quads)
            for call in set(new.tool_call_ids) - set(old.tool_call_ids):
                quads.extend(self._link_calls(new, call))  # tool spans that came before
            rewritten[key] = _Kept(span, new)
            result.written += len(events)
        if quads:
            self.recorder.write_quads(quads, remove=stale)  # the whole batch, atomically
        for key, kept in rewritten.items():
            self._kept[key] = kept
            self._users_of[key[0]].replace(kept.event)
            state = self._open.get(kept.event.session)
            if state is not None:
                state.last_seen = now
        return result

    def _end(self, session: str, at: datetime, status: str | None, *, idle: bool = False) -> None:
        """End ``session``: with ``status``, else as its spans say (``trails.otel.ends``)."""
        state = self._open.get(session)
        if not self._ended(session) and self._exists(session):  # (a failed write: nothing)
            if state is not None:
                at = max(at, state.last_end)
            if self.replayable:  # before the end, so the seal covers it
                add, remove = projection_of(self.recorder.store, session, self.recorder.minter, at)
                self.recorder.write_quads(add, remove=remove)
            ended = (
                session_end(self.recorder.store, session, at, idle=idle)
                if status is None
                else SessionEnded(session=session, ended=at, status=status)
            )
            self.recorder.record(ended)
        self._open.pop(session, None)
        self._closing.pop(session, None)
        self._grouped_sessions.discard(session)
        for group, group_key in list(self._groups.items()):
            if str(self.recorder.minter.session(group[0] + group_key)) == session:
                del self._groups[group]
        for users in self._users_of.values():
            users.forget(session)
        for key in [k for k, kept in self._kept.items() if kept.event.session == session]:
            del self._kept[key]

    def sweep(self, now: float | None = None) -> list[str]:
        """End the sessions that received no span for ``idle_timeout`` seconds.

        Args:
            now: the monotonic time to judge by (default: the clock).

        Returns:
            The sessions ended.

        Raises:
            StoreError: the store failed (the session stays open, for the next sweep).
        """
        with self._lock:
            now = self.clock() if now is None else now
            idle = [s for s, st in self._open.items() if now - st.last_seen >= self.idle_timeout]
            for session in idle:
                state = self._open[session]
                self._end(session, state.last_end, None, idle=True)
            for session, (since, at) in list(self._closing.items()):
                if now - since >= self.log_wait and session in self._open:
                    self._end(session, at, None)
                    idle.append(session)
            for key, waiting in list(self._waiting_logs.items()):  # their span never came
                if now - waiting[-1][0] >= self.idle_timeout:
                    del self._waiting_logs[key]
            return idle

    def adopt_open_sessions(self) -> list[str]:
        """Take over the received sessions a previous receiver left open (it stopped abruptly).

        They are ended by ``sweep`` after ``idle_timeout`` from now, unless spans arrive.

        Returns:
            The sessions adopted.

        Raises:
            StoreError: the store cannot be read.
        """
        with self._lock:
            now = self.clock()
            adopted = []
            for row in select(self.recorder.store, _OPEN_SESSIONS):
                session = str(row["s"])
                if session not in self._open:
                    self._open[session] = _Open(now, to_python(row["last"]))
                    adopted.append(session)
            return sorted(adopted)

    def open_sessions(self) -> list[str]:
        """The sessions this ingester has written to and not yet ended."""
        with self._lock:
            return sorted(self._open)
