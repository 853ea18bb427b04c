"""Persist a session as a replayable projection, rebuild it, and fork it to continue.

Sessions are ephemeral by default: their provenance is recorded either way,
but their conversation state (history window, invocation envelopes,
metadata) lives in memory. ``persist`` writes that state on request as one
``trails:SessionProjection`` into a named graph (the session's own by
default), in one atomic write that replaces any earlier projection, so
persisting twice duplicates nothing. ``replay`` reads it back with SPARQL
alone, from any store (embedded or remote, in any process), into a
read-only ``Session``: it records nothing and refuses to run. ``fork`` turns
a replayed session into a new, live one whose provenance says which
projection it was derived from.

The session's credential (``auth=``) is never persisted: a replayed or
forked session has ``auth.credential`` None.

Sealed evidence is read-only to ``persist``: it refuses the graphs trails
keeps for itself (``<base>graph:...``: the ledger, the access log, memory)
and any graph the ledger has sealed, unless it is the session's own graph,
before anything is written (``_refusal``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trails.agent.context import HistoryEntry, Session
from trails.config import load_settings
from trails.errors import SessionError
from trails.kernel.context import InvocationRecord, now
from trails.prov.content import canonical_json
from trails.prov.iri import Minter
from trails.prov.projection import (
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
    from trails.store.base import Store

__all__ = ["ReplayOrigin", "fork", "is_sealed", "persist", "project", "replay"]


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


def _where(session: Session) -> tuple[Store, Minter]:
    """The store and minter the session records with, without opening it."""
    if session.opened:
        recorder = session.context.recorder
        return recorder.store, recorder.minter
    if session._recorder is not None:
        return session._recorder.store, session._recorder.minter
    store = session._store if session._store is not None else default_store()
    return store, Minter(load_settings().base_iri)


def _refusal(session: Session, target: IRI) -> str | None:
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


def _check_recordable(session: Session) -> None:
    """Refuse state RDF cannot hold (text that is not valid Unicode), naming the field."""
    for field, value in (("metadata", session.metadata), ("card", session.card)):
        check_text(canonical_json(value), f"session {field}", SessionError)
    for i, entry in enumerate(session.history):
        check_text(entry.content, f"history entry #{i} content", SessionError)


def project(session: Session) -> Projection:
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
    return Projection(
        session=str(ctx.session),
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
        invocations=tuple(
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
        ),
        completions=tuple(recorded_completion_refs(ctx.store, str(ctx.session))),
    )


def persist(session: Session, *, graph: str | None = None) -> IRI:
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
    ctx.recorder.write_quads(quads, remove=old)  # seen by the sealer, like an event's write
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


def _build(
    projection: Projection, *, session_id: str | None, store: Store, **extra: Any
) -> Session:
    session = Session(
        principal=projection.principal,
        max_tokens=projection.window_tokens,
        pin_head=projection.pin_head,
        card=copy.deepcopy(projection.card),
        store=store,
        strategy=projection.strategy,
        budget=projection.budget,
        session_id=session_id,
        **extra,
    )
    session.history.load(
        [HistoryEntry(e.role, e.content, e.tokens, e.pinned) for e in projection.history]  # type: ignore[arg-type]
    )
    session.invocations.extend(_invocation(i) for i in projection.invocations)
    session.metadata.update(copy.deepcopy(projection.metadata))
    return session


def replay(iri: str, *, store: Store | None = None) -> Session:
    """Rebuild a persisted session from its projection, with SPARQL alone.

    Reads only: nothing is written to the store. The session is read-only
    (``read_only`` is true; running it raises ``SessionError``) until forked.

    Args:
        iri: the graph the session was persisted into, or the session's IRI.
        store: the store to read (default: the process default store).

    Returns:
        The replayed session: equal history, invocations, metadata, principal,
        strategy, budget and card; ``session.replayed_from`` says where it came
        from and lists its LLM completion activity IRIs.

    Raises:
        SessionError: ``iri`` names no session, its graph holds no projection,
            or the projection is of an incompatible format version or incomplete.
    """
    source = store if store is not None else default_store()
    graph, session_iri = find_projection(source, iri)
    projection = read_projection(source, graph, session_iri)
    session = _build(projection, session_id=projection.session_id, store=source)
    session._origin = ReplayOrigin(
        graph,
        session_iri,
        projection_iri(session_iri),
        source,
        tuple(c.activity for c in projection.completions),
    )
    return session


def fork(session: Session, *, llm: Any = None) -> Session:
    """Continue a replayed session as a new, live session in the store it was read from.

    The new session starts with copies of the history, invocations and
    metadata; its start is recorded at once, with a ``trails:SessionFork``
    entity ``prov:wasDerivedFrom`` the replayed projection and used by the
    new session.

    Args:
        session: a session returned by ``Session.replay``.
        llm: the LLM client the fork runs with (default: the replayed session's).

    Returns:
        The new session (a new id and graph).

    Raises:
        SessionError: ``session`` is not a replayed session.
        StoreError: the fork could not be recorded.
    """
    origin = session._origin
    if origin is None:
        raise SessionError(
            f"session {session.id} is live, not replayed: keep running it, or persist() "
            "it, replay it and fork the replay"
        )
    projection = Projection(
        session=str(origin.session),
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
        invocations=(),
        completions=(),
    )
    new = _build(
        projection,
        session_id=None,
        store=origin.store,
        llm=llm if llm is not None else session.llm,
    )
    new.invocations.extend(session.invocations)
    ctx = new.context
    ctx.recorder.record(
        SessionForked(
            session=str(ctx.session),
            projection=str(origin.projection),
            origin=str(origin.session),
            at=now(),
        )
    )
    return new
