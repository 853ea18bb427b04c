"""Bad input gets a clear error and writes nothing; any text in any field round-trips."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trails.memory as memory
from trails.errors import MemoryInputError, UserError, ValidationError
from trails.kernel import Context
from trails.memory import service
from trails.memory.lexical import stem, tokenize
from trails.memory.model import MAX_CONTENT_CHARS
from trails.prov import Recorder
from trails.store import Store
from trails.testing import assert_conforms


def quad_count(store: Store) -> int:
    result = store.query("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }")
    return int(next(iter(result)).get("n").value)  # type: ignore[arg-type, union-attr]


def memory_quads(store: Store) -> int:
    result = store.query(
        "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } "
        'FILTER(STRSTARTS(STR(?g), "urn:trails:graph:memory")) }'
    )
    return int(next(iter(result)).get("n").value)  # type: ignore[arg-type, union-attr]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"content": "x", "confidence": 1.5}, "confidence must be between 0 and 1"),
        ({"content": "x", "confidence": -0.1}, "confidence must be between 0 and 1"),
        ({"content": "x", "confidence": float("nan")}, "confidence must be between 0 and 1"),
        ({"content": ""}, "content must not be empty"),
        ({"content": "   \n\t"}, "content must not be empty"),
        ({"content": "x" * (MAX_CONTENT_CHARS + 1)}, "the limit is 100000"),
        ({"content": "x", "scope": "global"}, "unknown scope 'global'"),
        ({"content": "x", "supersedes": "urn:trails:entity:nope"}, "no memory with id"),
        ({"content": "x", "supersedes": "not an iri <>"}, "not a memory id"),
        ({"content": "x", "tags": [""]}, "tags must not be empty"),
        ({"content": "x", "tags": ["t"] * 2 + [str(i) for i in range(40)]}, "the limit is 32"),
        ({"content": "x", "topic": "t" * 201}, "topic is 201 characters"),
        ({"content": "x", "agent_did": " "}, "agent_did must be a non-empty string"),
        ({"content": "bad \ud800 surrogate"}, "content is not valid Unicode text"),
        (
            {"content": "x", "valid_from": "2024-01-02", "valid_until": "2024-01-01"},
            "valid_until",
        ),
    ],
)
def test_bad_learn_input_is_refused_and_nothing_is_written(
    ctx: Context, args: dict[str, Any], message: str
) -> None:
    kept = memory.learn("a fact that must survive", scope="shared", ctx=ctx)
    before = memory_quads(ctx.store)
    with pytest.raises(MemoryInputError, match=message.replace("(", r"\(")):
        memory.learn(ctx=ctx, **args)
    assert memory_quads(ctx.store) == before
    assert [m.id for m in memory.list(scope="all", ctx=ctx)] == [kept.id]


def test_wrong_types_are_validation_errors(ctx: Context) -> None:
    with pytest.raises(ValidationError, match="confidence"):
        memory.learn("x", confidence="very", ctx=ctx)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="tags: Input should be a valid list"):
        memory.learn("x", tags="solo", ctx=ctx)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="valid_from: Input should be a valid datetime"):
        memory.learn("x", valid_from="yesterday", ctx=ctx)
    with pytest.raises(ValidationError, match="content"):
        memory.learn(None, ctx=ctx)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scope": "everywhere"}, "unknown scope"),
        ({"scope": "shared", "k": 0}, "k must be an integer"),
        ({"scope": "shared", "min_confidence": 2}, "confidence must be between"),
        ({"scope": "shared", "as_of": "soon"}, "as_of: Input should be a valid datetime"),
        ({"scope": "shared", "agent_did": "did:x:\ud800"}, "agent_did is not valid Unicode"),
    ],
)
def test_bad_recall_input(ctx: Context, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        memory.recall("x", ctx=ctx, **kwargs)


def test_forget_unknown_and_retired_ids(ctx: Context) -> None:
    with pytest.raises(MemoryInputError, match="no memory with id"):
        memory.forget("urn:trails:entity:00000000-0000-0000-0000-000000000000", ctx=ctx)
    with pytest.raises(MemoryInputError, match="no memory with id"):
        memory.history("urn:trails:entity:missing", ctx=ctx)
    m = memory.learn("short-lived", ctx=ctx)
    memory.forget(m.id, ctx=ctx)
    with pytest.raises(MemoryInputError, match="already forgotten"):
        memory.learn("replacement", supersedes=m.id, ctx=ctx)


def test_supersede_chain_loop_in_loaded_data_is_refused(ctx: Context) -> None:
    """A store could hold a revision loop (imported data); learn refuses to extend it."""
    a = memory.learn("version a", scope="shared", ctx=ctx)
    b = memory.learn("version b", scope="shared", supersedes=a.id, ctx=ctx)
    idx = service.index(ctx)
    # forge a loop in the cache only: a revises b while b revises a, both current
    import dataclasses

    idx._docs[idx._by_id[a.id]] = dataclasses.replace(
        idx.get(a.id), revision_of=b.id, invalidated_at=None, superseded_by=None
    )
    with pytest.raises(MemoryInputError, match="revision loop"):
        memory.learn("version c", scope="shared", supersedes=b.id, ctx=ctx)
    assert len(memory.history(b.id, ctx=ctx)) == 2  # walking the loop terminates


NASTY = [
    '"; DROP ALL; SELECT * WHERE { ?s ?p ?o } #',
    "} } INSERT DATA { GRAPH <urn:x> { <urn:a> <urn:b> <urn:c> } } #",
    "<urn:trails:entity:x> \\ \\u0022 '''\"\"\" ?var $var @en ^^xsd:string",
    "東京の会議は火曜日 · Zürich ß ﬁ 🚀 \u200b\u0000 end",
    "line one\nline two\r\n\ttabbed",
]


@pytest.mark.parametrize("text", NASTY)
def test_metacharacters_and_unicode_round_trip_in_every_field(ctx: Context, text: str) -> None:
    m = memory.learn(
        text,
        topic=text[:200],
        tags=[text[:100], "plain"],
        scope="shared",
        agent_did=f"did:example:{text[:20]}",
        ctx=ctx,
    )
    assert m.content == text
    service.index(ctx).reload()
    [stored] = memory.list(scope="shared", agent_did="did:local:other", ctx=ctx)
    assert stored.content == text
    assert stored.topic == text[:200].strip()
    assert set(stored.tags) == {text[:100].strip(), "plain"}
    assert stored.agent_did == f"did:example:{text[:20]}"
    if tokenize(text):
        hits = memory.recall(text, scope="shared", ctx=ctx)
        assert [h.id for h in hits] == [m.id]
    assert_conforms(ctx.store)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80))
def test_any_text_round_trips(store: Store, text: str) -> None:
    if not text.strip():
        return
    ctx = Context.open("did:local:prop", recorder=Recorder(store))
    m = service.learn(ctx, text, scope="session")
    service.index(ctx).reload()
    assert service.index(ctx).get(m.id).content == text


def test_very_long_content_within_the_limit_is_stored_whole(ctx: Context) -> None:
    text = ("lorem ipsum dolor " * 6000)[:MAX_CONTENT_CHARS]
    m = memory.learn(text, scope="shared", ctx=ctx)
    service.index(ctx).reload()
    assert service.index(ctx).get(m.id).content == text


def test_stemmer_is_predictable() -> None:
    assert {stem(w) for w in ("rejects", "rejected", "rejecting")} == {"reject"}
    assert stem("queries") == stem("query") == "queri" and stem("status") == "status"
    assert tokenize("The SPARQL Proxy") == ["sparql", "proxi"] == tokenize("sparql proxies")
