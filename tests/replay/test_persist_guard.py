"""Sealed evidence is read-only to ``persist``: the ledger, the access log, memory graphs
and other sessions' sealed graphs are refused, on the embedded store and a real server,
and the store is left exactly as it was."""

from __future__ import annotations

import pytest
from replay_support import quads

from trails.agent import Session
from trails.agent.persistence import is_sealed
from trails.errors import SessionError, UserError
from trails.memory import learn
from trails.prov.iri import Minter
from trails.store import IRI, Store

MINT = Minter()
LEDGER = MINT.graph("ledger")


def sealed_session(store: Store, principal: str = "did:example:bob") -> Session:
    """A session that ran (opened) and was closed, hence sealed in the ledger."""
    session = Session(principal=principal, store=store)
    assert session.context is not None  # opens the session (its start is recorded)
    session.close()
    return session


def refused(session: Session, store: Store, graph: str, reason: str) -> SessionError:
    before = quads(store)
    with pytest.raises(SessionError) as info:
        session.persist(graph=graph)
    assert quads(store) == before  # nothing was written, not even the projection
    message = str(info.value)
    assert graph in message and reason in message and "read-only" in message
    assert isinstance(info.value, UserError)
    return info.value


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("ledger", "the ledger"),
        ("access-log", "the access log"),
        ("memory/shared", "memory graph"),
        ("memory/private/did:example:alice", "memory graph"),
        ("memory/session/x", "memory graph"),
        ("memory-state", "memory graph"),
    ],
)
def test_graphs_trails_keeps_for_itself_are_refused(
    any_store: Store, name: str, reason: str
) -> None:
    sealed_session(any_store)  # a ledger exists
    learn("the ledger is append-only", scope="shared")  # memory graphs exist
    session = Session(principal="did:example:alice", store=any_store)
    assert session.context is not None  # opened: the refusal must not depend on it
    refused(session, any_store, str(MINT.graph(name)), reason)


def test_a_never_opened_session_is_refused_without_being_opened(any_store: Store) -> None:
    sealed_session(any_store)
    session = Session(principal="did:example:alice", store=any_store)
    refused(session, any_store, str(LEDGER), "the ledger")
    assert not session.opened  # its start was not recorded either


def test_another_sessions_sealed_graph_is_refused(any_store: Store) -> None:
    other = sealed_session(any_store)
    graph = IRI(str(other.iri))
    assert is_sealed(any_store, MINT, graph)
    session = Session(principal="did:example:alice", store=any_store)
    assert session.context is not None
    refused(session, any_store, graph, "sealed evidence")


def test_own_graph_and_graphs_of_your_own_are_still_written(any_store: Store) -> None:
    sealed_session(any_store)
    session = Session(principal="did:example:alice", store=any_store)
    assert session.persist() == session.iri
    assert session.persist(graph=str(session.iri)) == session.iri
    assert session.persist(graph="urn:audit:shared") == "urn:audit:shared"
    assert not is_sealed(any_store, MINT, IRI("urn:audit:shared"))
    # an open (unsealed) session's graph is not sealed evidence yet
    open_one = Session(principal="did:example:carol", store=any_store)
    assert open_one.context is not None
    assert not is_sealed(any_store, MINT, IRI(str(open_one.iri)))
    assert session.persist(graph=str(open_one.iri)) == open_one.iri
    session.close()
    open_one.close()
