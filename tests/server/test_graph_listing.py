"""The endpoint's graph list is listed again only when the store changed since."""

from __future__ import annotations

from trails.server.auth import Grant
from trails.server.graphs import GraphCache
from trails.store import IRI, Literal, Quad, Store


def test_an_unchanged_store_is_not_listed_again(store: Store) -> None:
    store.write([Quad(IRI("urn:x:s"), IRI("urn:x:p"), Literal("a"), IRI("urn:trails:graph:a"))])
    now = [0.0]
    cache = GraphCache(store, ttl=1.0, clock=lambda: now[0])
    team = Grant("did:example:team", ("urn:trails:graph:*",))
    first = cache.readable(team, None, "urn:trails:")
    for later in (1.0, 5.0, 60.0):  # past the ttl, nothing written: the same listing
        now[0] = later
        assert cache.readable(team, None, "urn:trails:") == first
    assert cache.listings == 1
    new = IRI("urn:trails:graph:new")
    store.write([Quad(IRI("urn:x:s"), IRI("urn:x:p"), Literal("new"), new)])
    now[0] = 60.5  # written, within the ttl of the listing: kept (narrower, never wider)
    assert new not in cache.readable(team, None, "urn:trails:").graphs
    now[0] = 61.0
    assert new in cache.readable(team, None, "urn:trails:").graphs
    assert cache.listings == 2
    store.clear(new)
    now[0] = 62.0  # a clear is a change too
    assert new not in cache.readable(team, None, "urn:trails:").graphs
    assert cache.listings == 3
