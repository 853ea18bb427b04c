"""A received span records what it carried, and nothing it did not: absent means absent.

A chat span says nothing of retries or of a response cache, so its completion has no
``trails:retries`` and no ``trails:cacheHit`` (a native completion, which knows both,
still must have them); an agent span that ended OK says the run ended, not that it
reached its goal, so its run has no ``trails:stopReason`` (a failed one: ``error``).
Both still conform to the shapes.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.otel.test_mapping import ingestor, rows, span

from trails.evidence.verify import verify
from trails.prov import Recorder
from trails.prov.vocab import T
from trails.store import IRI, Quad, Store
from trails.store.base import Solutions
from trails.testing import assert_conforms
from trails.testing.conformance import record_sample_session

CHAT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "ollama",
    "gen_ai.request.model": "qwen3:8b",
    "gen_ai.usage.input_tokens": 12,
    "gen_ai.usage.output_tokens": 3,
}


def _values(store: Store, prop: Any) -> list[Any]:
    found = rows(store, f"SELECT ?v WHERE {{ GRAPH ?g {{ ?a {prop.n3()} ?v }} }}")
    return [r["v"] for r in found]


def test_a_received_completion_has_no_retries_or_cache_hit(store: Store) -> None:
    ing = ingestor(store)
    result = ing.ingest(
        [
            span(1, "invoke_agent shop", {"gen_ai.operation.name": "invoke_agent"}, at=0),
            span(2, "chat qwen3:8b", CHAT, parent=1, at=1),
        ]
    )
    assert result.written == 2 and len(result.ended) == 1
    assert len(_values(store, T.inputTokens)) == 1  # what the span carried is there
    assert _values(store, T.retries) == []
    assert _values(store, T.cacheHit) == []
    assert_conforms(store)
    assert verify(store).ok


def test_an_ok_agent_span_in_a_failed_session_claims_no_stop_reason(store: Store) -> None:
    ing = ingestor(store)
    result = ing.ingest(
        [
            span(1, "session", {"trails.kind": "session"}, status="error", at=0),
            span(2, "invoke_agent shop", {"gen_ai.operation.name": "invoke_agent"}, parent=1, at=1),
            span(
                3,
                "invoke_agent pay",
                {"gen_ai.operation.name": "invoke_agent"},
                parent=1,
                status="error",
                at=2,
            ),
        ]
    )
    assert len(result.ended) == 1, result
    assert rows(store, "SELECT ?s WHERE { GRAPH ?g { ?g trails:status ?s } }") == [{"s": "error"}]
    assert _values(store, T.stopReason) == ["error"]  # only the failed run says why it stopped
    runs = rows(
        store, "SELECT ?a ?end WHERE { GRAPH ?g { ?a a trails:PlanRun ; prov:endedAtTime ?end } }"
    )
    assert len(runs) == 2  # the OK run still ended
    assert_conforms(store)


@pytest.mark.parametrize("prop", [T.retries, T.cacheHit])
def test_a_native_completion_still_records_retries_and_cache_hit(store: Store, prop: IRI) -> None:
    iris = record_sample_session(Recorder.from_settings(store=store))
    assert_conforms(store)
    completion, graph = iris["completion"], iris["session"]
    found = store.query(
        "SELECT ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"s": completion, "p": prop}
    )
    assert isinstance(found, Solutions) and len(found) == 1
    quad = Quad(completion, prop, found.column("o")[0], graph)
    store.write([], remove=[quad])
    with pytest.raises(AssertionError, match="does not conform"):
        assert_conforms(store)  # a completion trails ran itself says both
    store.write([quad])
