"""The sessions page read minute by minute gives exactly the pack query's rows, in its order."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.known_store import Fixture

from trails.audit.querypack import get_query
from trails.audit.sessions_page import paged, sessions_page, sessions_page_to
from trails.catalogue.days import start_day_iri
from trails.catalogue.entries import catalogue_iri, start_quads
from trails.prov.iri import Minter
from trails.prov.vocab import T
from trails.store import Solutions, Store
from trails.store.terms import Literal, Quad

ORIGIN = datetime(2026, 3, 1, 22, 0, tzinfo=UTC)


def _catalogue(store: Store, count: int, *, spacing: timedelta, undated: int = 0) -> None:
    """``count`` started sessions, ``spacing`` apart; the oldest ``undated`` without minutes
    (entries written before minutes existed)."""
    minter = Minter()
    catalogue = catalogue_iri(minter)
    quads: list[Quad] = []
    for i in range(count):
        started = ORIGIN + spacing * i + timedelta(microseconds=i)
        did = f"did:example:u{i % 3}"
        entry = start_quads(
            minter.session(),
            minter.agent(did),
            started,
            label=f"s{i}",
            catalogue=catalogue,
            principal_id=Literal(did),
        )
        if i < undated:
            entry = [q for q in entry if q.predicate != T.startedInMinute]
        quads += entry
    store.write(quads)


def _sorted(store: Store, values: dict[str, str], limit: int | None) -> Solutions:
    query = get_query("sessions")
    bound = query.bind(values)
    result = store.query(paged(query.text_for(bound), limit), bound)
    assert isinstance(result, Solutions)
    return result


@pytest.mark.parametrize("limit", [1, 7, 20, 100, 500])
def test_the_walk_gives_the_pack_querys_page(store: Store, limit: int) -> None:
    # 400 sessions, 37 s apart: about four hours, over two UTC days
    _catalogue(store, 400, spacing=timedelta(seconds=37), undated=30)
    expected = _sorted(store, {}, limit)
    page = sessions_page(store, {}, limit)
    assert page.variables == expected.variables
    assert page.rows == expected.rows
    assert len(page.rows) == min(limit, 400)


def test_a_time_range_is_walked_within_its_days(store: Store) -> None:
    _catalogue(store, 300, spacing=timedelta(minutes=7))
    values = {"since": "2026-03-02T01:00:00Z", "until": "2026-03-02T09:30:00Z"}
    bound = get_query("sessions").bind(values)
    expected = _sorted(store, values, 20)
    assert sessions_page(store, bound, 20).rows == expected.rows
    assert len(expected.rows) == 20


def test_filters_the_minutes_cannot_narrow_run_the_pack_query(store: Store) -> None:
    _catalogue(store, 60, spacing=timedelta(seconds=50))
    values = {"principal": str(Minter().agent("did:example:u1"))}
    bound = get_query("sessions").bind(values)
    assert sessions_page(store, bound, 5).rows == _sorted(store, values, 5).rows


def test_json_of_the_walk_is_the_pack_querys_json(store: Store) -> None:
    _catalogue(store, 120, spacing=timedelta(seconds=41), undated=5)
    query = get_query("sessions")
    expected = json.loads(store.query_to(paged(query.text_for({}), 25), {}, format="json"))
    got = json.loads(sessions_page_to(store, {}, 25, format="json"))
    assert got == expected


def test_recorded_sessions_are_walked_too(fx: Fixture) -> None:
    """Sessions the recorder wrote (not a catalogue written by hand) carry their minutes."""
    expected = _sorted(fx.store, {}, 3)
    assert sessions_page(fx.store, {}, 3).rows == expected.rows
    found = fx.store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> "
        "SELECT ?e WHERE { GRAPH ?c { ?e trails:startedInMinute ?m . ?m trails:minuteOf ?d } }"
    )
    assert isinstance(found, Solutions) and len(found.rows) == len(fx.sessions)


def test_minutes_without_entries_are_walked_past(store: Store) -> None:
    # the newest minutes of the day lost their entries (erased): the run of minutes the
    # page reads gives fewer rows than it wants, and the walk reads the next run
    _catalogue(store, 120, spacing=timedelta(seconds=61))
    catalogue = catalogue_iri(Minter())
    newest = ORIGIN + timedelta(seconds=61 * 119)
    empty = [newest + timedelta(minutes=m) for m in range(1, 30)]
    store.write(
        [
            Quad(
                Minter.part(catalogue, f"started:{at:%Y-%m-%dT%H%M}"),
                T.minuteOf,
                start_day_iri(catalogue, at.date()),
                catalogue,
            )
            for at in empty
        ]
    )
    expected = _sorted(store, {}, 20)
    assert sessions_page(store, {}, 20).rows == expected.rows
    assert len(expected.rows) == 20


def test_the_newest_page_is_three_queries_whatever_the_store_holds(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 600 sessions, one a minute, the newest 480 in the newest day: the page reads the days,
    # that day's minutes and one run of 20 minutes, not one query per minute
    _catalogue(store, 600, spacing=timedelta(minutes=1))
    expected = _sorted(store, {}, 20)
    asked: list[str] = []
    query = store.query

    def counted(sparql: str, params: Any = None, **kwargs: Any) -> Any:
        asked.append(sparql)
        return query(sparql, params, **kwargs)

    monkeypatch.setattr(store, "query", counted)
    assert sessions_page(store, {}, 20).rows == expected.rows
    assert len(asked) == 3
    assert not any("ORDER BY DESC(?day)" in q or "ORDER BY DESC(?minute)" in q for q in asked)
