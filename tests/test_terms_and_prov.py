"""Terms, IRI minting and the recorder's PROV-O rules."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trails.prov import PROV, Minter, Recorder, T, agent_iri, canonical_json
from trails.prov.events import LLMCompleted, SessionStarted, Terminated
from trails.store import IRI, Literal, Quad, Store, instant, literal, open_store, to_python

values = (
    st.text()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.decimals(allow_nan=False, allow_infinity=False, places=6)
    | st.datetimes(timezones=st.just(UTC))
    | st.dates()
)


@given(values)
def test_literal_round_trip(value: Any) -> None:
    back = to_python(literal(value))
    assert back == value and type(back) is type(value)


@given(st.lists(st.datetimes(timezones=st.just(UTC)), min_size=2, max_size=8, unique=True))
def test_instants_read_back_from_a_store_sort_in_time_order(moments: list[datetime]) -> None:
    # the store hands dateTimes back in canonical form (03.12Z, 03.119Z, 03Z), which do
    # not sort as strings; instant() orders them as the times they name
    store = open_store("memory:")
    g, p = IRI("urn:x:g"), IRI("urn:x:at")
    store.write([Quad(IRI(f"urn:x:{i}"), p, literal(m), g) for i, m in enumerate(moments)])
    result = store.query("SELECT ?at $p WHERE { GRAPH ?g { ?s $p ?at } }", {"p": p})
    store.close()
    read = [row["at"] for row in result]  # type: ignore[union-attr]
    assert [instant(t) for t in sorted(read, key=instant)] == sorted(moments)


def test_a_canonical_lexical_out_of_string_order_is_ordered_by_time() -> None:
    early, late = "2026-12-07T01:02:03.1Z", "2026-12-07T01:02:03.12Z"
    assert early > late  # as strings, the earlier sorts last
    assert instant(early) < instant(late) < instant("2026-12-07T01:02:03.5Z")
    assert instant(Literal(late, "http://www.w3.org/2001/XMLSchema#dateTime")) == instant(late)
    assert instant("2026-12-07T01:02:03") == instant("2026-12-07T01:02:03Z")  # no zone is UTC
    assert instant(None) == instant("not a time") < instant(early)  # unreadable sorts first


def test_iri_validation_and_n3() -> None:
    assert IRI("did:local:alice").n3() == "<did:local:alice>"
    for bad in ("no scheme", "urn:a b", "urn:a>b", 'urn:"x"', "urn:{x}"):
        with pytest.raises(ValueError):
            IRI(bad)
    assert Literal('a "quoted"\nline\\').n3() == '"a \\"quoted\\"\\nline\\\\"'
    assert literal(3).n3() == '"3"^^<http://www.w3.org/2001/XMLSchema#integer>'
    with pytest.raises(ValueError):
        Literal("x", language="en } DROP").n3()


def test_minter_is_safe_for_any_input() -> None:
    m = Minter("urn:trails:")
    assert m.capability("notes search <x>").startswith(
        "urn:trails:capability:notes%20search%20%3Cx%3E"
    )
    IRI(m.capability("a b{c}"))  # valid
    assert agent_iri("did:key:z6Mk") == "did:key:z6Mk"
    assert agent_iri("alice smith") == "urn:trails:agent:alice%20smith"
    assert m.session_id(m.session("abc")) == "abc"


def test_canonical_json_is_stable() -> None:
    assert canonical_json({"b": 1, "a": [date(2024, 1, 2), Decimal("1.5")]}) == (
        '{"a":["2024-01-02","1.5"],"b":1}'
    )
    assert canonical_json("é") == '"é"'


def _types(store: Store, iri: str) -> set[str]:
    rows = store.query(
        "SELECT ?t WHERE { GRAPH ?g { $s a ?t } }".replace("SELECT", "SELECT $s", 1),
        {"s": IRI(iri)},
    )
    return {str(r["t"]) for r in rows}  # type: ignore[union-attr]


def test_every_resource_carries_its_prov_class(store: Store) -> None:
    rec = Recorder(store)
    session = rec.minter.session()
    now = datetime.now(UTC)
    rec.record(SessionStarted(session=session, principal="did:local:alice", started=now))
    act = rec.minter.activity()
    rec.record(
        LLMCompleted(
            session=session,
            activity=act,
            parent=session,
            principal="did:local:alice",
            provider="mock",
            model="m",
            started=now,
            ended=now,
            messages=[{"role": "user", "content": "hi"}],
            request_hash="h",
            text="hello",
            input_tokens=3,
            output_tokens=1,
            usd=0.0,
        )
    )
    rec.record(
        Terminated(
            session=session,
            activity=act,
            kind="budget",
            reason="max_cost",
            limit=1.0,
            observed=1.5,
            at=now,
        )
    )
    assert {T.Session, PROV.Activity} <= _types(store, session)
    assert {T.LLMCompletion, PROV.Activity} <= _types(store, act)
    assert {T.Model, PROV.SoftwareAgent, PROV.Agent} <= _types(store, rec.minter.model("mock", "m"))
    assert {T.Prompt, PROV.Entity} <= _types(store, Minter.part(act, "prompt"))
    assert {T.BudgetBreach, T.Termination, PROV.Entity} <= _types(
        store, Minter.part(act, "termination")
    )
    # the trails sub-property is written together with its PROV-O super-property
    assert (
        store.query(
            "ASK { GRAPH ?g { ?a <https://w3id.org/trails/ns#wasTerminatedBy> ?t ; "
            "<http://www.w3.org/ns/prov#wasEndedBy> ?t } }"
        )
        is True
    )
    assert b"_:" not in store.dump(format="nquads")  # type: ignore[operator]


def test_listener_failure_does_not_undo_the_write(store: Store) -> None:
    rec = Recorder(store)
    seen: list[str] = []

    def bad(_: Recorder, event: Any) -> None:
        seen.append(type(event).__name__)
        raise RuntimeError("listener broke")

    rec.subscribe(bad)
    rec.record(
        SessionStarted(
            session=rec.minter.session(), principal="did:local:a", started=datetime.now(UTC)
        )
    )
    assert seen == ["SessionStarted"] and len(store.graphs()) == 1
