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

Why this module: it is the ``Session``-level face of persistence, the
functions that take or return a ``Session`` (``trails.testing.rerun`` and
users call ``replay`` here). The work is done on data in
``trails.agent.projection``, which ``Session`` itself uses; this module imports
``trails.agent.context`` and nothing imports it back, so there is no circle.

The session's credential (``auth=``) is never persisted: a replayed or
forked session has ``auth.credential`` None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trails.agent.context import Session
from trails.agent.projection import ReplayOrigin, is_sealed, persist, project

if TYPE_CHECKING:
    from trails.store.base import Store

__all__ = ["ReplayOrigin", "fork", "is_sealed", "persist", "project", "replay"]


def replay(iri: str, *, store: Store | None = None) -> Session:
    """Rebuild a persisted session from its projection, with SPARQL alone (``Session.replay``).

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
    return Session.replay(iri, store=store)


def fork(session: Session, *, llm: Any = None, observers: Any = ()) -> Session:
    """Continue a replayed session as a new, live session in the store it was read from.

    The new session starts with copies of the history, invocations and
    metadata; its start is recorded at once, with a ``trails:SessionFork``
    entity ``prov:wasDerivedFrom`` the replayed projection and used by the
    new session (``Session.fork``).

    Args:
        session: a session returned by ``Session.replay``.
        llm: the LLM client the fork runs with (default: the replayed session's).
        observers: observers of the new session (they hear its ``session_load``).

    Returns:
        The new session (a new id and graph).

    Raises:
        SessionError: ``session`` is not a replayed session.
        StoreError: the fork could not be recorded.
    """
    return session.fork(llm=llm, observers=observers)
