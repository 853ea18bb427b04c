"""An Anthropic stream delta for a content block that does not exist is a failed completion.

The loopback fake sends a real Messages API event stream in which one ``text_delta``
names content block 1 while only block 0 was started. The real SDK reads it; the text
must not be merged into the answer: the caller gets ``MalformedResponseError`` and the
completion is recorded with status ``error``, read back with SPARQL.
"""

from __future__ import annotations

import pytest
from llm_fakes import FakeServer, Reply, anthropic_stream
from test_llm_cut_streams import SSE, _anthropic, recorded

from trails.kernel import Context
from trails.llm import MalformedResponseError, Response, RetryPolicy
from trails.store import Store
from trails.testing import assert_conforms


def test_a_delta_for_a_block_never_started_is_recorded_as_a_failed_completion(
    server: FakeServer, fast_retry: RetryPolicy, ctx: Context, store: Store
) -> None:
    events = anthropic_stream(["Pay Bob €40", " and Mallory €4000"])
    stray = [i for i, e in enumerate(events) if b"Mallory" in e]
    assert len(stray) == 1
    events[stray[0]] = events[stray[0]].replace(b'"index": 0', b'"index": 1')
    assert b'"index": 1' in events[stray[0]]  # the fake's JSON spelling
    server.enqueue(Reply(chunks=events, content_type=SSE, headers={"request-id": "req_x"}))
    got = []
    with pytest.raises(MalformedResponseError, match="content block 1, which was never started"):
        for item in _anthropic(server.url, fast_retry).stream("pay bob", ctx=ctx):
            got.append(item)
    assert not any(isinstance(item, Response) for item in got)  # never an answer
    assert all("Mallory" not in getattr(item, "text", "") for item in got)
    row = recorded(store, info_activity(store))
    assert row["status"] == "error" and "never started" in row["err"]
    assert_conforms(store)


def info_activity(store: Store) -> str:
    [row] = list(
        store.query(
            "SELECT ?a WHERE { GRAPH ?g { ?a a <https://w3id.org/trails/ns#LLMCompletion> } }"
        )  # type: ignore[union-attr]
    )
    return str(row["a"])
