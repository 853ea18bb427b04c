"""The data side of session persistence: project a session, write it, read it back, fork it.

Sessions are ephemeral by default: their provenance is recorded either way,
but their conversation state (history window, invocation envelopes,
metadata) lives in memory. ``persist`` writes that state on request as one
``trails:SessionProjection`` into a named graph (the session's own by
default), in one atomic write that replaces any earlier projection, so
persisting twice duplicates nothing. ``load_projection`` reads it back with
SPARQL alone, from any store (embedded or remote, in any process), with the
``ReplayOrigin`` saying where it came from; ``fork_projection`` and
``record_fork`` are the data of a fork and its recorded derivation.

Why this module: it works on a session's data (``SessionState``, the
``Projection`` of ``trails.prov.projection``), never on the ``Session`` class,
so ``Session`` (``trails.agent.context``) can use it without an import circle:
``Session.persist``, ``Session.replay`` and ``Session.fork`` build the sessions
themselves from what these functions return. ``trails.agent.persistence`` is the
``Session``-level API over it (the functions that take or return a ``Session``).

The session's credential (``auth=``) is never persisted: a replayed or
forked session has ``auth.credential`` None.

Sealed evidence is read-only to ``persist``: it refuses the graphs trails
keeps for itself (``<base>graph:...``: the ledger, the access log, memory)
and any graph the ledger has sealed, unless it is the session's own graph,
before anything is written (``_refusal``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from trails.agent.history import HistoryEntry, TokenWindow
from trails.agent.session_events import SessionLoaded, SessionSaved
from trails.config import load_settings
from trails.errors import SessionError
from trails.kernel.context import Context, InvocationRecord, now
from trails.kernel.observe import notify
from trails.prov.content import canonical_json
from trails.prov.iri import Minter
from trails.prov.projection import (
    ProjectedCompletion,
    ProjectedEntry,
    ProjectedInvocation,
    Projection,
    SessionForked,
    find_projection,
    projection_iri,
    projection_quads,
    read_projection,
    recorded_completion_refs,
    stored_projection_quads,
)
from trails.prov.vocab import T
from trails.store import default_store
from trails.store.base import ask
from trails.store.terms import IRI
from trails.text import check_text

if TYPE_CHECKING:
    from trails.prov.recorder import Recorder
    from trails.store.base import Store

__all__ = [
    "ReplayOrigin",
    "SessionState",
    "fork_projection",
    "history_entries",
    "invocation_records",
    "is_sealed",
    "load_projection",
    "persist",
    "project",
    "projected_invocations",
    "record_fork",
]


@dataclass(frozen=True)
class ReplayOrigin:
    """Where a replayed session came from.

    Attributes:
        graph: the graph its projection was read from.
        session: the IRI of the session that was persisted.
        projection: the projection's IRI.
        store: the store it was read from (a fork records into it).
        completions: the session's LLM completion activity IRIs, in order.
    """

    graph: IRI
    session: IRI
    projection: IRI
    store: Store
    completions: tuple[str, ...] = ()


class SessionState(Protocol):
    """What persistence reads of a session (``Session`` satisfies it): its data, never its class."""

    @property
    def id(self) -> str: ...

    @property
    def principal(self) -> str: ...

    @property
    def strategy(self) -> str | None: ...

    @property
    def budget(self) -> Mapping[str, float]: ...

    @property
    def metadata(self) -> dict[str, Any]: ...

    @property
    def card(self) -> Any: ...

    @property
    def history(self) -> TokenWindow: ...

    @property
    def invocations(self) -> Sequence[InvocationRecord]: ...

    @property
    def read_only(self) -> bool: ...

    @property
    def opened(self) -> bool: ...

    @property
    def context(self) -> Context: ...

    @property
    def _recorder(self) -> Recorder | None: ...

    @property
    def _store(self) -> Store | None: ...


def _graph(graph: str) -> IRI:
    try:
        return IRI(graph)
    except (ValueError, TypeError) as exc:
        raise SessionError(
            f"persist(graph={graph!r}): a graph name must be an absolute IRI "
            "(urn:..., https://..., audit:...)"
        ) from exc


_SEALED = f"ASK {{ GRAPH ?ledger {{ ?seal {T.sealedGraph.n3()} ?graph }} }}"

# What each graph trails keeps for itself holds (``Minter.graph`` names), for the refusal.
_RESERVED = (
    ("ledger", "the ledger, the chain of seals that proves the record unaltered"),
    ("access-log", "the access log, the endpoint's record of every query"),
    ("memory", "an agent memory graph, written only by the memory capabilities"),
)


def is_sealed(store: Store, minter: Minter, graph: IRI) -> bool:
    """Whether the ledger (``<base>graph:ledger``) holds a seal of ``graph``.

    The one place ``persist`` asks the ledger; a bound-parameter ASK.
    """
    return ask(store, _SEALED, {"ledger": minter.graph("ledger"), "graph": graph})


def _where(session: SessionState) -> tuple[Store, Minter]:
    """The store and minter the session records with, without opening it."""
    if session.opened:
        recorder = session.context.recorder
        return recorder.store, recorder.minter
    if session._recorder is not None:
        return session._recorder.store, session._recorder.minter
    store = session._store if session._store is not None else default_store()
    return store, Minter(load_settings().base_iri)


def _refusal(session: SessionState, target: IRI) -> str | None:
    """Why ``persist`` must not write into ``target``, or None when it may."""
    store, minter = _where(session)
    if target == minter.session(session.id):
        return None  # its own graph, sealed or not: a later seal revises the earlier one
    reserved = minter.graph("")
    if target.startswith(reserved):
        name = target[len(reserved) :]
        why = next(
            (text for prefix, text in _RESERVED if name.startswith(prefix)),
            "a graph trails keeps for itself",
        )
        return f"it is {why}"
    if is_sealed(store, minter, target):
        return (
            "it is sealed evidence (the ledger holds a seal of it) and not this session's own graph"
        )
    return None


def _check_recordable(session: SessionState) -> None:
    """Refuse state RDF cannot hold (text that is not valid Unicode), naming the field."""
    for field, value in (("metadata", session.metadata), ("card", session.card)):
        check_text(canonical_json(value), f"session {field}", SessionError)
    for i, entry in enumerate(session.history):
        check_text(entry.content, f"history entry #{i} content", SessionError)


def project(session: SessionState) -> Projection:
    """The projection of a live session's current state (nothing is written).

    Args:
        session: an opened session.

    Returns:
        Its projection.

    Raises:
        SessionError: the session is read-only or was never opened.
    """
    if session.read_only:
        raise SessionError(
            f"session {session.id} is a read-only replay; fork() it to continue, "
            "then persist the fork"
        )
    ctx = session.context
    return _projection(
        session,
        iri=str(ctx.session),
        invocations=tuple(projected_invocations(session)),
        completions=tuple(recorded_completion_refs(ctx.store, str(ctx.session))),
    )


def projected_invocations(session: SessionState) -> list[ProjectedInvocation]:
    """The session's invocation records as a projection holds them."""
    return [
        ProjectedInvocation(
            capability=r.capability,
            args=r.args,
            result=r.result,
            args_sha256=r.args_sha256,
            result_sha256=r.result_sha256,
            status=r.status,
            activity=str(r.activity),
            error=r.error,
            started=r.started,
            ended=r.ended,
        )
        for r in session.invocations
    ]


def _projection(
    session: SessionState,
    *,
    iri: str,
    invocations: tuple[ProjectedInvocation, ...],
    completions: tuple[ProjectedCompletion, ...],
) -> Projection:
    """The session's state (principal, strategy, budget, card, history window) as a projection."""
    return Projection(
        session=iri,
        session_id=session.id,
        principal=session.principal,
        strategy=session.strategy,
        budget=dict(session.budget),
        metadata=session.metadata,
        card=session.card,
        window_tokens=session.history.max_tokens,
        pin_head=session.history.pin_head,
        history=tuple(
            ProjectedEntry(e.role, e.content, e.tokens, e.pinned) for e in session.history
        ),
        invocations=invocations,
        completions=completions,
    )


def persist(session: SessionState, *, graph: str | None = None) -> IRI:
    """Write the session's replayable projection into ``graph`` in one atomic write.

    A session that never ran is opened first (its start is recorded), so the
    projection always names a recorded session. An earlier projection of the
    same session in that graph is replaced in the same write.

    Args:
        session: the session to persist.
        graph: the named graph to write into (default: the session's own graph).

    Returns:
        The graph IRI, which ``Session.replay`` accepts.

    Raises:
        SessionError: the session is a read-only replay, ``graph`` is not an IRI, or
            it is a graph sealed evidence lives in (the ledger, the access log, a
            memory graph, another session's sealed graph), or the metadata, card or
            history hold text that is not valid Unicode; nothing was written.
        StoreError: the write failed; nothing was written.
    """
    chosen = None if graph is None else _graph(graph)
    if chosen is not None and not session.read_only:
        why = _refusal(session, chosen)
        if why is not None:
            raise SessionError(
                f"persist(graph={str(chosen)!r}) refused: {why}; sealed evidence is "
                "read-only. Persist into the session's own graph (the default) or a graph "
                "of your own"
            )
    _check_recordable(session)
    projection = project(session)
    ctx = session.context
    target = ctx.session if chosen is None else chosen
    quads = projection_quads(
        projection, target, ctx.recorder.minter, now(), masking=ctx.recorder.masking
    )
    old = stored_projection_quads(ctx.store, target, projection.session)
    count = len(projection.history)
    saved = SessionSaved(
        session=str(ctx.session),
        activity=str(ctx.recorder.minter.activity()),
        at=now(),
        message_count=count,
        target=str(target),
    )
    quads = [*quads, *ctx.recorder.quads(saved)]  # the save and what it saved: one write
    ctx.recorder.write_quads(quads, remove=old)  # seen by the sealer, like an event's write
    notify(ctx, "session_save", call_id=saved.activity, session_id=session.id, message_count=count)
    return target


def _invocation(inv: ProjectedInvocation) -> InvocationRecord:
    return InvocationRecord(
        capability=inv.capability,
        args=inv.args,
        result=inv.result,
        args_sha256=inv.args_sha256,
        result_sha256=inv.result_sha256,
        status=inv.status,
        activity=inv.activity,
        error=inv.error,
        started=inv.started,
        ended=inv.ended,
    )


def history_entries(projection: Projection) -> list[HistoryEntry]:
    """The history window entries of a projection, oldest first, pinned flags kept."""
    return [HistoryEntry(e.role, e.content, e.tokens, e.pinned) for e in projection.history]  # type: ignore[arg-type]


def invocation_records(projection: Projection) -> list[InvocationRecord]:
    """The invocation envelopes of a projection, in order."""
    return [_invocation(i) for i in projection.invocations]


def load_projection(iri: str, *, store: Store | None = None) -> tuple[Projection, ReplayOrigin]:
    """Read a persisted session's projection, with SPARQL alone; nothing is written.

    Args:
        iri: the graph the session was persisted into, or the session's IRI.
        store: the store to read (default: the process default store).

    Returns:
        The projection, and where it was read from (``ReplayOrigin``; its
        ``store`` is the store read, its ``completions`` the session's LLM
        completion activity IRIs).

    Raises:
        SessionError: ``iri`` names no session, its graph holds no projection,
            or the projection is of an incompatible format version or incomplete.
    """
    source = store if store is not None else default_store()
    graph, session_iri = find_projection(source, iri)
    projection = read_projection(source, graph, session_iri)
    origin = ReplayOrigin(
        graph,
        session_iri,
        projection_iri(session_iri),
        source,
        tuple(c.activity for c in projection.completions),
    )
    return projection, origin


def fork_projection(session: SessionState, origin: ReplayOrigin) -> Projection:
    """What a fork of a replayed session starts from: its state, without invocations.

    Args:
        session: the replayed session.
        origin: where it was replayed from.

    Returns:
        The projection to build the fork from (the fork copies the invocations itself).
    """
    return _projection(session, iri=str(origin.session), invocations=(), completions=())


def record_fork(ctx: Context, origin: ReplayOrigin, *, message_count: int = 0) -> None:
    """Record a fork's start: a ``trails:SessionFork`` derived from the replayed projection,
    and the ``trails:SessionLoad`` that read it (one write); observers get ``session_load``.

    Args:
        ctx: the fork's (just opened) session context.
        origin: where the forked session was replayed from.
        message_count: how many history entries the fork starts with.

    Raises:
        StoreError: the fork could not be recorded.
    """
    at = now()
    loaded = SessionLoaded(
        session=str(ctx.session),
        activity=str(ctx.recorder.minter.activity()),
        at=at,
        message_count=message_count,
        projection=str(origin.projection),
    )
    forked = SessionForked(
        session=str(ctx.session),
        projection=str(origin.projection),
        origin=str(origin.session),
        at=at,
    )
    ctx.recorder.record_all([forked, loaded])
    notify(
        ctx,
        "session_load",
        call_id=loaded.activity,
        session_id=ctx.session_id,
        message_count=message_count,
    )
