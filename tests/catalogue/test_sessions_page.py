"""The sessions page read minute by minute gives exactly the pack query's rows, in its order."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.catalogue.conftest import queries_asked
from tests.known_store import Fixture

from trails.audit.querypack import get_query
from trails.audit.sessions_page import (
    SECONDS_OF_MINUTE,
    paged,
    sessions_page,
    sessions_page_to,
    walk,
)
from trails.catalogue.days import start_day_iri, start_quads_of
from trails.catalogue.entries import catalogue_iri, rebuild, start_quads
from trails.prov.iri import Minter
from trails.prov.vocab import T
from trails.store import Solutions, Store, open_store
from trails.store.terms import IRI, Literal, Quad
from trails.testing import assert_conforms

ORIGIN = datetime(2026, 3, 1, 22, 0, tzinfo=UTC)


_SLOTS = (T.startedInSecond, T.startedInMinute)


def _old_way(entry: list[Quad]) -> list[Quad]:
    """An entry as written before seconds existed: it points to its minute."""
    second = next(q for q in entry if q.predicate == T.startedInSecond)
    minute = next(q.object for q in entry if q.predicate == T.secondOf)
    kept = [q for q in entry if q.subject != second.object]
    return [Quad(q.subject, T.startedInMinute, minute, q.graph) if q is second else q for q in kept]


def _catalogue(
    store: Store,
    count: int,
    *,
    spacing: timedelta,
    undated: int = 0,
    old: range = range(0),
    micro: bool = True,
) -> None:
    """``count`` started sessions, ``spacing`` apart; the oldest ``undated`` without minutes
    (entries written before minutes existed), those in ``old`` pointing to their minute
    (written before seconds existed); ``micro=False``: whole-second starts (ties)."""
    minter = Minter()
    catalogue = catalogue_iri(minter)
    quads: list[Quad] = []
    for i in range(count):
        started = ORIGIN + spacing * i + timedelta(microseconds=i if micro else 0)
        if not micro:
            started = started.replace(microsecond=0)
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
            entry = [q for q in entry if q.predicate not in _SLOTS]
        elif i in old:
            entry = _old_way(entry)
        quads += entry
    store.write(quads)


@pytest.fixture(scope="module")
def built() -> Iterator[Callable[..., Store]]:
    """Catalogues the tests only read, each written once for the module (and its shapes
    checked then), by ``_catalogue``'s arguments."""
    stores: dict[tuple[Any, ...], Store] = {}

    def get(count: int, **kwargs: Any) -> Store:
        key = (count, *sorted(kwargs.items()))
        if key not in stores:
            store = stores[key] = open_store("memory:")
            _catalogue(store, count, **kwargs)
            assert_conforms(store)
        return stores[key]

    yield get
    for store in stores.values():
        store.close()


def _sorted(store: Store, values: dict[str, str], limit: int | None) -> Solutions:
    query = get_query("sessions")
    bound = query.bind(values)
    result = store.query(paged(query.text_for(bound), limit), bound)
    assert isinstance(result, Solutions)
    return result


@pytest.mark.parametrize("limit", [1, 7, 20, 100, 500])
def test_the_walk_gives_the_pack_querys_page(built: Callable[..., Store], limit: int) -> None:
    # 400 sessions, 37 s apart: about four hours, over two UTC days
    store = built(400, spacing=timedelta(seconds=37), undated=30)
    expected = _sorted(store, {}, limit)
    page = sessions_page(store, {}, limit)
    assert page.variables == expected.variables
    assert page.rows == expected.rows
    assert len(page.rows) == min(limit, 400)


def test_a_time_range_is_walked_within_its_days(built: Callable[..., Store]) -> None:
    store = built(300, spacing=timedelta(minutes=7))
    values = {"since": "2026-03-02T01:00:00Z", "until": "2026-03-02T09:30:00Z"}
    bound = get_query("sessions").bind(values)
    expected = _sorted(store, values, 20)
    assert sessions_page(store, bound, 20).rows == expected.rows
    assert len(expected.rows) == 20


def test_filters_the_minutes_cannot_narrow_run_the_pack_query(
    built: Callable[..., Store],
) -> None:
    store = built(60, spacing=timedelta(seconds=50))
    values = {"principal": str(Minter().agent("did:example:u1"))}
    bound = get_query("sessions").bind(values)
    assert sessions_page(store, bound, 5).rows == _sorted(store, values, 5).rows


def test_json_of_the_walk_is_the_pack_querys_json(built: Callable[..., Store]) -> None:
    store = built(120, spacing=timedelta(seconds=41), undated=5)
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
        "SELECT ?e WHERE { GRAPH ?c { "
        "?e trails:startedInSecond ?s . ?s trails:secondOf ?m . ?m trails:minuteOfHour ?h . "
        "?h trails:hourOf ?d } }"
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


def test_the_newest_page_is_a_few_queries_whatever_the_store_holds(
    built: Callable[..., Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 600 sessions, one a minute, the newest 480 in the newest day: the page reads which old
    # kinds the store holds, the days, that day's hours, the newest hour's minutes, the newest
    # minute's seconds and their entries counted, then the seconds of the newest 20 minutes
    # and their entries; never one query per minute, nor a sort by IRI
    store = built(600, spacing=timedelta(minutes=1))
    expected = _sorted(store, {}, 20)
    listing = queries_asked(store, monkeypatch)
    assert sessions_page(store, {}, 20).rows == expected.rows
    asked = [sparql for sparql, _ in listing]
    assert len(asked) == 8
    assert not any("ORDER BY DESC(?day)" in q or "ORDER BY DESC(?minute)" in q for q in asked)


@pytest.mark.parametrize("micro", [True, False], ids=["sub-second", "whole-second ties"])
@pytest.mark.parametrize("limit", [1, 20, 99, 100, 101, 250])
def test_dense_seconds_give_the_pack_querys_page(
    built: Callable[..., Store], limit: int, micro: bool
) -> None:
    # 100 sessions start in each second: a page ends inside a second, or on its edge
    store = built(400, spacing=timedelta(milliseconds=10), micro=micro)
    expected = _sorted(store, {}, limit)
    assert sessions_page(store, {}, limit).rows == expected.rows
    assert len(expected.rows) == limit


@pytest.mark.parametrize("micro", [True, False], ids=["sub-second", "whole-second ties"])
def test_a_dense_store_reads_only_the_newest_second(
    built: Callable[..., Store], micro: bool
) -> None:
    """The page reads the entries of the seconds it shows, not of the minute around them."""
    store = built(700, spacing=timedelta(milliseconds=10), micro=micro)
    runs: list[tuple[str, dict[str, str]]] = []

    def run(pattern: str, bound: Any, limit: int) -> int:
        runs.append((pattern, {k: getattr(v, "value", str(v)) for k, v in bound.items()}))
        found = store.query(
            "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?entry $second WHERE { GRAPH ?c { "
            "?entry trails:startedInSecond $second } }",
            {"second": IRI.trusted(bound["newest"].value)},
        )
        assert isinstance(found, Solutions)
        return min(limit, len(found.rows))

    walk(store, {}, 20, run)
    newest = ORIGIN + timedelta(milliseconds=10 * 699)
    second = f"started:{newest:%Y-%m-%dT%H%M%S}"
    assert len(runs) == 1
    assert runs[0][0] == SECONDS_OF_MINUTE
    assert runs[0][1]["oldest"].endswith(second) and runs[0][1]["newest"].endswith(second)


def test_minutes_written_before_seconds_are_read_whole_in_order(
    built: Callable[..., Store],
) -> None:
    # entries of the old kind (pointing to their minute) in the minutes between new ones,
    # and in the same minute as new ones (the minute trails was upgraded in)
    store = built(200, spacing=timedelta(seconds=3), old=range(60, 135))
    for limit in (1, 20, 65, 70, 90, 200):
        assert sessions_page(store, {}, limit).rows == _sorted(store, {}, limit).rows


def test_the_start_write_links_an_entry_to_its_second_minute_hour_and_day() -> None:
    catalogue = catalogue_iri(Minter())
    entry = Minter.part(catalogue, "e")
    quads = start_quads_of(catalogue, entry, datetime(2026, 3, 1, 22, 4, 5, 6, tzinfo=UTC))
    links = {(str(q.subject).rpartition(":")[2], q.predicate) for q in quads}
    assert ("e", T.startedInSecond) in links
    assert ("2026-03-01T220405", T.secondOf) in links
    assert ("2026-03-01T2204", T.minuteOfHour) in links
    assert ("2026-03-01T22", T.hourOf) in links
    assert not any(q.predicate == T.minuteOf for q in quads)
    assert not any(q.predicate == T.startedInMinute for q in quads)


_LINKS = (
    "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?e ?s ?m ?c WHERE { GRAPH ?c { "
    "?e trails:startedInSecond ?s . ?s trails:secondOf ?m } }"
)


def test_a_rebuild_links_entries_written_before_seconds(fx: Fixture) -> None:
    links = fx.store.query(_LINKS)
    assert isinstance(links, Solutions) and links.rows
    old = [Quad(r[0], T.startedInMinute, r[2], r[3]) for r in links.rows]  # type: ignore[arg-type]
    new = [Quad(r[0], T.startedInSecond, r[1], r[3]) for r in links.rows]  # type: ignore[arg-type]
    fx.store.write(old, remove=new)
    expected = _sorted(fx.store, {}, 5)
    assert sessions_page(fx.store, {}, 5).rows == expected.rows
    rebuild(fx.store)
    assert sessions_page(fx.store, {}, 5).rows == expected.rows
    assert not fx.store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> ASK { GRAPH ?c { ?e trails:startedInMinute ?m } }"
    )
    again = fx.store.query(_LINKS)
    assert isinstance(again, Solutions) and len(again.rows) == len(links.rows)


_STARTS = st.lists(
    st.tuples(st.integers(0, 150), st.sampled_from([0, 0, 0, 250_000, 999_999])),
    min_size=1,
    max_size=60,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(starts=_STARTS, size=st.integers(1, 25))
def test_pages_of_any_density_continue_without_a_gap_or_a_repeat(
    starts: list[tuple[int, int]], size: int
) -> None:
    """Starts drawn close together (many in a second, whole-second ties, a minute's edge):
    every page is the pack query's, and the pages in turn list every session once."""
    store = open_store("memory:")
    try:
        minter = Minter()
        catalogue = catalogue_iri(minter)
        quads: list[Quad] = []
        for i, (second, micro) in enumerate(starts):
            started = ORIGIN + timedelta(seconds=second, microseconds=micro)
            quads += start_quads(
                minter.session(),
                minter.agent("did:example:u"),
                started,
                label=f"s{i}",
                catalogue=catalogue,
            )
        store.write(quads)
        everything = _sorted(store, {}, None).rows
        assert len(everything) == len(starts)
        seen: list[Any] = []
        for page in range(1, len(starts) // size + 2):
            rows = sessions_page(store, {}, page * size).rows
            assert rows == everything[: page * size]
            seen += rows[(page - 1) * size :]
        assert seen == everything
        assert len({row[0] for row in seen}) == len(starts)
    finally:
        store.close()
