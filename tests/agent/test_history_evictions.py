"""History trimming is evidence (seed 002 Memory: ``summarize_on_trim``, ``on_memory_trim``).

A session's token window that drops entries records a ``trails:HistoryEviction`` that
invalidates (``prov:wasInvalidatedBy``) each dropped entry, and tells observers
(``history_trim``); with ``summarize_on_trim=`` the summary stands in for the dropped
entries in the window and is an entity the eviction generated, derived from them.
Read back with SPARQL.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.history import HistoryEntry
from trails.agent.planners import react
from trails.errors import UserError
from trails.kernel import ObserverBase
from trails.kernel.observe import ObserverEvent
from trails.llm import LLMClient
from trails.store import Solutions, Store, to_python

FINISH = (
    "```json\n"
    + json.dumps({"thought": "t", "action": "finish", "action_input": {}, "final_answer": "ok"})
    + "\n```"
)

EVICTED = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?eviction ?count ?entry ?role ?tokens ?content ?session WHERE {
  GRAPH ?session {
    ?eviction a trails:HistoryEviction, prov:Activity ;
              trails:inSession ?session ; trails:evictedCount ?count .
    ?entry a trails:EvictedEntry ; prov:wasInvalidatedBy ?eviction ;
           trails:role ?role ; trails:tokenCount ?tokens .
  }
  GRAPH ?cg { ?entry prov:value ?content }
}
"""

SUMMARIES = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?summary ?text ?eviction (COUNT(?from) AS ?sources) WHERE {
  GRAPH ?g {
    ?summary a trails:HistorySummary ; prov:wasGeneratedBy ?eviction ; prov:wasDerivedFrom ?from .
    ?eviction a trails:HistoryEviction .
  }
  GRAPH ?cg { ?summary prov:value ?text }
} GROUP BY ?summary ?text ?eviction
"""


def _rows(store: Store, query: str) -> list[dict[str, Any]]:
    result = store.query(query)
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items()} for row in result]


class Trims(ObserverBase):
    def __init__(self) -> None:
        self.seen: list[ObserverEvent] = []

    def on_history_trim(self, event: ObserverEvent) -> None:
        self.seen.append(event)


def test_an_eviction_invalidates_the_entries_it_dropped(store: Store) -> None:
    trims = Trims()
    session = Session(principal="did:local:alice", max_tokens=60, observers=[trims])
    for i in range(3):
        react.run(
            f"goal {i} " + "x " * 40,
            llm=LLMClient.mock(response=FINISH),
            session=session,
            tools=[],
        )
    assert session.history.evicted > 0
    rows = _rows(store, EVICTED)
    assert len(rows) == session.history.evicted  # every dropped entry is on record
    assert {r["session"] for r in rows} == {session.iri}
    contents = {r["content"] for r in rows}
    assert any(c.startswith("Goal: goal 0") for c in contents)  # the first goal was dropped
    assert all(r["tokens"] > 0 and r["role"] in ("user", "assistant") for r in rows)
    evictions = {r["eviction"] for r in rows}
    assert len(trims.seen) == len(evictions)
    assert {e.call_id for e in trims.seen} == {str(e) for e in evictions}
    assert sum(e.data["evicted"] for e in trims.seen) == len(rows)
    assert not any(e.data["summarized"] for e in trims.seen)
    assert _rows(store, SUMMARIES) == []


def test_summarize_on_trim_keeps_a_summary_derived_from_what_was_dropped(
    store: Store,
) -> None:
    seen: list[list[str]] = []

    def summarize(entries: list[HistoryEntry]) -> str:
        seen.append([e.content[:12] for e in entries])
        return f"earlier: {len(entries)} messages"

    session = Session(principal="did:local:alice", max_tokens=40, summarize_on_trim=summarize)
    session.history.set_system("You help.")
    for i in range(4):
        session.history.append("user", f"message {i} " + "y " * 20)
    window = session.history
    summary = window.summary
    assert summary is not None and summary.content.startswith("earlier:")
    assert window.entries[1] == summary  # right after the pinned system prompt
    assert window.entries[-1].content.startswith("message 3")
    assert seen[0] == ["message 0 y "]  # the first eviction summarised what it dropped
    assert len(seen[1]) == 2  # later ones the previous summary too
    rows = _rows(store, SUMMARIES)
    assert len(rows) == len(seen)
    assert sorted(r["sources"] for r in rows) == sorted(len(s) for s in seen)
    latest = [r for r in rows if r["text"] == summary.content]
    assert latest  # the summary in the window is the one on record
    # every summary but the latest was invalidated by the next eviction
    invalidated = _rows(
        store,
        """
        PREFIX prov: <http://www.w3.org/ns/prov#>
        PREFIX trails: <https://w3id.org/trails/ns#>
        SELECT ?s WHERE { GRAPH ?g { ?s a trails:HistorySummary ; prov:wasInvalidatedBy ?e } }
        """,
    )
    assert len(invalidated) == len(rows) - 1
    session.close()


def test_a_summarizer_that_is_not_a_function_is_refused() -> None:
    with pytest.raises(UserError, match="summarize_on_trim= must be a function"):
        Session(principal="did:local:alice", summarize_on_trim="yes")  # type: ignore[arg-type]


def test_a_summarizer_returning_no_text_is_a_clear_error(store: Store) -> None:
    session = Session(
        principal="did:local:alice",
        max_tokens=10,
        pin_head=0,
        summarize_on_trim=lambda entries: None,  # type: ignore[arg-type,return-value]
    )
    session.history.append("user", "a " * 20)
    with pytest.raises(UserError, match="summarize_on_trim must return a str"):
        session.history.append("user", "b " * 20)
    # the eviction is on record all the same, without a summary
    (row,) = _rows(store, EVICTED)
    assert row["content"] == "a " * 20 and _rows(store, SUMMARIES) == []
    session.close()


def test_the_report_shows_evictions_batches_refusals_and_terminal_actions(store: Store) -> None:
    from trails.audit.report import render_report
    from trails.kernel import capability

    @capability(id="ask.user", description="Ask the user.", terminal=True)
    def ask(question: str) -> str:
        return f"asked: {question}"

    refused = (
        "```json\n"
        + json.dumps({"thought": "t", "action": "no.such", "action_input": {}})
        + "\n```"
    )
    terminal = (
        "```json\n"
        + json.dumps({"thought": "t", "action": "ask.user", "action_input": {"question": "which?"}})
        + "\n```"
    )
    (result,) = react.batch(
        ["x " * 30],
        llm=LLMClient.mock([refused, terminal]),
        principal="did:local:alice",
        session_options={"max_tokens": 60, "summarize_on_trim": lambda es: "in short: x"},
    )
    assert not isinstance(result, Exception) and result.terminated_by == "ask.user"
    (session,) = {
        str(r["session"])
        for r in _rows(
            store,
            "PREFIX trails: <https://w3id.org/trails/ns#> "
            "SELECT ?session WHERE { GRAPH ?session { ?session a trails:Session } }",
        )
    }
    html = render_report(store, session)
    assert "History evictions and batches" in html
    assert "summarised: in short: x" in html  # the eviction and its summary
    assert "react batch" in html  # the batch this session's run was informed by
    assert "unknown capability &#39;no.such&#39;" in html  # the refused call, as a failure
    assert "TerminalAction" in html and "terminal capability &#39;ask.user&#39;" in html
