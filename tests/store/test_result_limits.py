"""``query_to(max_bytes=...)`` stops at the limit on every backend, before the answer is whole.

The embedded store serialises into a ``ResultBuffer`` that refuses to grow
past the limit (which stops pyoxigraph's lazy serialisation); the remote store
reads the server's answer as a stream into one and closes the connection at
the limit.
"""

from __future__ import annotations

import json

import pytest

from trails.errors import QueryRefused
from trails.store import IRI, Literal, Quad, Store
from trails.store.base import ResultBuffer

G = IRI("urn:test:limits")
ALL = "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }"


def fill(store: Store, n: int = 400) -> None:
    store.write(
        [Quad(IRI(f"urn:test:s{i}"), IRI("urn:test:p"), Literal("v" * 200), G) for i in range(n)]
    )


@pytest.mark.parametrize("fmt", ["json", "xml", "csv", "tsv"])
def test_an_answer_over_max_bytes_is_refused(any_store: Store, fmt: str) -> None:
    fill(any_store)
    whole = any_store.query_to(ALL, format=fmt)
    assert len(whole) > 80_000
    with pytest.raises(QueryRefused) as err:
        any_store.query_to(ALL, format=fmt, max_bytes=20_000)
    assert err.value.status == 400
    assert "over the limit of 20000 bytes" in str(err.value)


def test_an_answer_within_max_bytes_is_whole(any_store: Store) -> None:
    fill(any_store, 10)
    limited = any_store.query_to(ALL, max_bytes=1_000_000)
    assert len(json.loads(limited)["results"]["bindings"]) == 10
    assert limited == any_store.query_to(ALL)


def test_graph_answers_are_bounded_too(any_store: Store) -> None:
    fill(any_store)
    query = "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }"
    assert len(any_store.query_to(query, format="ntriples")) > 80_000
    with pytest.raises(QueryRefused):
        any_store.query_to(query, format="ntriples", max_bytes=10_000)


def test_the_buffer_refuses_the_write_that_passes_the_limit() -> None:
    buffer = ResultBuffer(10)
    assert buffer.write(b"12345") == 5
    assert buffer.write(memoryview(b"67890")) == 5
    with pytest.raises(QueryRefused):
        buffer.write(b"x")
    assert buffer.getvalue() == b"1234567890" and len(buffer) == 10
    unlimited = ResultBuffer()
    unlimited.write(b"x" * 100_000)
    assert len(unlimited) == 100_000
