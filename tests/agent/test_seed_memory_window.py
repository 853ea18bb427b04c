"""Seed 002's ``ConversationMemory(max_messages=...)`` and ``summarize_provider``, as evidence.

selectools keeps a sliding window of at most ``max_messages`` messages and can
summarise what it trims with a provider. trails: ``Session(max_messages=N)`` caps
the history window's unpinned entries (each eviction recorded), and
``summarize_on_trim=`` takes an LLM client as well as a function: the client is
asked for the summary, and that request is a recorded completion of the session.
"""

from __future__ import annotations

from typing import Any

import pytest

from trails.agent import Session
from trails.agent.evictions import SUMMARY_PROMPT
from trails.errors import UserError
from trails.llm import LLMClient
from trails.store import Solutions, Store, to_python

EVICTIONS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?eviction ?count ?started WHERE {
  GRAPH ?g { ?eviction a trails:HistoryEviction ; trails:evictedCount ?count ;
                       prov:startedAtTime ?started }
} ORDER BY ?started
"""

SUMMARIES = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?text WHERE {
  GRAPH ?g { ?summary a trails:HistorySummary ; prov:wasGeneratedBy ?eviction }
  GRAPH ?cg { ?summary prov:value ?text }
}
"""

SUMMARY_CALLS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?completion ?session WHERE {
  GRAPH ?session { ?completion a trails:LLMCompletion ; trails:status "ok" ;
                               trails:inSession ?session }
}
"""


def rows(store: Store, query: str) -> list[dict[str, Any]]:
    result = store.query(query)
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items()} for row in result]


def test_max_messages_keeps_a_sliding_window_and_records_each_eviction(store: Store) -> None:
    session = Session(principal="did:local:alice", max_messages=3)
    session.history.set_system("You keep notes.")
    for i in range(5):
        session.history.append("user", f"note {i}")
    assert [e.content for e in session.history] == ["You keep notes.", "note 2", "note 3", "note 4"]
    assert session.history.evicted == 2
    assert [r["count"] for r in rows(store, EVICTIONS)] == [1, 1]
    with pytest.raises(UserError, match="max_messages"):
        Session(principal="did:local:alice", max_messages=0)


def test_a_model_client_summarises_what_the_window_trims(store: Store) -> None:
    summarizer = LLMClient.mock(response="Alice keeps notes 0 and 1.")
    session = Session(principal="did:local:alice", max_messages=2, summarize_on_trim=summarizer)
    session.history.set_system("You keep notes.")
    for i in range(3):
        session.history.append("user", f"note {i} from Alice")
    asked = summarizer.requests[0].messages
    assert asked[0].content == SUMMARY_PROMPT and "note 0 from Alice" in asked[1].content
    assert session.history.summary is not None
    assert session.history.summary.content == "Alice keeps notes 0 and 1."
    assert [r["text"] for r in rows(store, SUMMARIES)] == ["Alice keeps notes 0 and 1."]
    calls = rows(store, SUMMARY_CALLS)
    assert len(calls) == 1 and calls[0]["session"] == str(session.iri)
    with pytest.raises(UserError, match="or an LLM client"):
        Session(principal="did:local:alice", summarize_on_trim=42)
