"""A recall's recorded result is the canonical JSON pydantic gives, however often a memory is
returned: memories keep their JSON-able form between recalls, and a retired version has its own."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from pydantic_core import to_jsonable_python

import trails.memory as memory
from trails.kernel import Context
from trails.prov import sparql_prefixes
from trails.prov.content import canonical_json
from trails.store import Literal, Solutions, Store

OUTPUTS = (
    sparql_prefixes()
    + """
SELECT ?text ?digest ?ended WHERE {
  GRAPH ?g {
    ?a trails:capability ?cap ; prov:endedAtTime ?ended .
    ?cap trails:capabilityId "memory.recall" .
    ?out prov:wasGeneratedBy ?a ; trails:sha256 ?digest .
  }
  GRAPH ?content { ?out prov:value ?text }
} ORDER BY ?ended
"""
)


def _pydantic_json(value: Any) -> str:
    """The canonical JSON of ``value`` with every non-JSON value converted by pydantic."""
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=to_jsonable_python,
    )


def _recorded(store: Store) -> list[tuple[str, str]]:
    rows = store.query(OUTPUTS, {})
    assert isinstance(rows, Solutions)
    out = []
    for row in rows:
        text, digest = row["text"], row["digest"]
        assert isinstance(text, Literal) and isinstance(digest, Literal)
        out.append((text.value, digest.value))
    return out


def test_recorded_recall_results_are_pydantics_canonical_json(store: Store, ctx: Context) -> None:
    kept = memory.learn(
        "the lighthouse keeper is called Ada",
        scope="shared",
        topic="coast",
        tags=["people", "harbour"],
        valid_from=datetime(2026, 1, 1, tzinfo=UTC),
        ctx=ctx,
    )
    doomed = memory.learn("the lighthouse lamp is green", scope="shared", ctx=ctx)
    before = datetime.now(UTC)
    returned = [memory.recall("lighthouse", scope="shared", ctx=ctx) for _ in range(2)]
    memory.forget(doomed.id, reason="it is red", ctx=ctx)
    returned.append(memory.recall("lighthouse", scope="shared", ctx=ctx))
    returned.append(memory.recall("lighthouse", scope="shared", as_of=before, ctx=ctx))

    assert [{h.id for h in hits} for hits in returned] == [
        {kept.id, doomed.id},
        {kept.id, doomed.id},
        {kept.id},
        {kept.id, doomed.id},
    ]
    retired = next(h.memory for h in returned[-1] if h.id == doomed.id)
    assert retired.invalidated_at is not None  # the as-of recall returns the retired version

    recorded = _recorded(store)
    assert len(recorded) == len(returned)
    for hits, (text, digest) in zip(returned, recorded, strict=True):
        expected = _pydantic_json(hits)
        assert text == expected
        assert canonical_json(hits) == expected
        assert digest == hashlib.sha256(expected.encode()).hexdigest()
    # the retired version is recorded as retired, not in the form it had when it was current
    [as_recorded] = [h for h in json.loads(recorded[-1][0]) if h["memory"]["id"] == doomed.id]
    assert as_recorded["memory"]["invalidated_at"] == to_jsonable_python(retired.invalidated_at)
    assert as_recorded["memory"]["reason"] == "it is red"
