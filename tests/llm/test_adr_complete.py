"""ADR-0018's ``complete(prompt, *, model, cache=True, principal=...)``, and a cache per principal.

The ADR (seed 001) writes the call with ``cache=`` and ``principal=``: every call "opens a
cost envelope tagged with the acting principal". A response cache shared by everyone would
hand Bob the answer Alice paid for (and record it in Bob's graph as his): answers are kept
per principal unless the cache is made shared, and a shared hit says so in the evidence.
"""

from __future__ import annotations

from typing import Any

import pytest

from trails.errors import UserError
from trails.kernel import Context
from trails.llm import LLMClient, ResponseCache
from trails.prov import T
from trails.store import IRI, Solutions, Store, to_python

_HITS = f"""
SELECT ?a ?who ?hit ?scope ?from WHERE {{
  GRAPH ?g {{
    ?a a {T.LLMCompletion.n3()} ; {T.cacheHit.n3()} ?hit ;
       <http://www.w3.org/ns/prov#wasAssociatedWith> ?p .
    ?p {T.principalId.n3()} ?who .
    OPTIONAL {{ ?a {T.cacheScope.n3()} ?scope }}
    OPTIONAL {{ ?a {T.cachedFrom.n3()} ?from }}
  }}
}}
"""


def recorded(store: Store, activity: str | None) -> dict[str, Any]:
    """The principal, hit flag, scope and origin recorded for one completion."""
    assert activity is not None
    result = store.query(_HITS, {"a": IRI(activity)})
    assert isinstance(result, Solutions)
    rows = list(result)
    assert len(rows) == 1, rows
    row = rows[0]
    return {
        "who": str(to_python(row["who"])),
        "hit": bool(to_python(row["hit"])),
        "scope": None if row.get("scope") is None else str(to_python(row["scope"])),
        "from": None if row.get("from") is None else str(row["from"]),
    }


def test_principal_names_who_the_call_acts_for(store: Store) -> None:
    client = LLMClient.mock(["summary"])
    response = client.complete(
        "Summarize:\nx", model="mock", cache=True, principal="did:key:zAlice"
    )
    assert response.text == "summary" and response.principal == "did:key:zAlice"
    assert recorded(store, response.activity_iri)["who"] == "did:key:zAlice"


def test_principal_agrees_with_the_context_or_is_refused(store: Store) -> None:
    client = LLMClient.mock(["a", "b"])
    with Context.open("did:key:zAlice") as alice:
        same = client.complete("hi", ctx=alice, principal="did:key:zAlice")
        assert recorded(store, same.activity_iri)["who"] == "did:key:zAlice"
        with pytest.raises(UserError, match="differs from the context's principal"):
            client.complete("hi", ctx=alice, principal="did:key:zBob")
        with pytest.raises(UserError, match="non-empty string"):
            client.complete("hi", ctx=alice, principal=" ")


def test_cache_false_neither_reads_nor_fills_the_cache(store: Store) -> None:
    client = LLMClient.mock(["first", "second", "third"], response_cache=True)
    with Context.open("did:key:zAlice") as alice:
        first = client.complete("q", ctx=alice, cache=False)
        second = client.complete("q", ctx=alice)
        third = client.complete("q", ctx=alice)
        fresh = client.complete("q", ctx=alice, cache=False)
    assert (first.text, second.text, third.text) == ("first", "second", "second")
    assert (first.cache_hit, second.cache_hit, third.cache_hit) == (False, False, True)
    assert fresh.cache_hit is False and fresh.text == "third"
    with pytest.raises(UserError, match="cache= must be True or False"):
        client.complete("q", cache="yes")  # type: ignore[arg-type]


def test_bob_never_gets_alices_cached_answer(store: Store) -> None:
    client = LLMClient.mock(["for alice", "for bob"], response_cache=True)
    with Context.open("did:key:zAlice") as alice, Context.open("did:key:zBob") as bob:
        paid = client.complete("Say hi.", ctx=alice)
        again = client.complete("Say hi.", ctx=alice)
        other = client.complete("Say hi.", ctx=bob)
    assert (again.text, again.cache_hit) == ("for alice", True)
    assert (other.text, other.cache_hit) == ("for bob", False)
    hit = recorded(store, again.activity_iri)
    assert (hit["scope"], hit["from"]) == ("principal", paid.activity_iri)
    assert recorded(store, other.activity_iri)["scope"] is None


def test_a_shared_cache_is_opt_in_and_recorded_as_shared(store: Store) -> None:
    client = LLMClient.mock(
        ["for alice", "never"], response_cache=ResponseCache(across_principals=True)
    )
    with Context.open("did:key:zAlice") as alice, Context.open("did:key:zBob") as bob:
        paid = client.complete("Say hi.", ctx=alice)
        reused = client.complete("Say hi.", ctx=bob)
    assert (reused.text, reused.cache_hit, reused.principal) == ("for alice", True, "did:key:zBob")
    hit = recorded(store, reused.activity_iri)
    assert hit == {"who": "did:key:zBob", "hit": True, "scope": "shared", "from": paid.activity_iri}


def test_the_store_cache_answers_a_principal_from_its_own_completions(store: Store) -> None:
    with Context.open("did:key:zAlice") as alice:
        paid = LLMClient.mock(["alice's answer"]).complete("q", ctx=alice)
    with Context.open("did:key:zBob") as bob:
        own = LLMClient.mock(["bob's answer"], store_cache=True).complete("q", ctx=bob)
    assert (own.text, own.cache_hit) == ("bob's answer", False)
    with Context.open("did:key:zAlice") as alice:
        hit = LLMClient.mock(["never"], store_cache=True).complete("q", ctx=alice)
    assert (hit.text, hit.cache_hit) == ("alice's answer", True)
    assert recorded(store, hit.activity_iri)["from"] == paid.activity_iri
    with Context.open("did:key:zCarol") as carol:
        shared = LLMClient.mock(["never"], store_cache="shared").complete("q", ctx=carol)
    assert shared.cache_hit is True and recorded(store, shared.activity_iri)["scope"] == "shared"
