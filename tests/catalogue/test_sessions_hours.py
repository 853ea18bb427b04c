"""The sessions page walks a day's hours: the same pages, an hour's minutes read at most.

Catalogues spanning several hours and days at 1, 10 and 100 sessions a second (bursts
that cross an hour's and a day's edge), with sub-second starts and whole-second ties;
catalogues written before hours existed (minutes that belong to their day) and after a
rebuild; sessions erased inside an hour. Every page is the pack query's page, which
sorts every entry (what the walk before hours was proven to give).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.catalogue.conftest import queries_asked

from trails.audit.querypack import get_query
from trails.audit.sessions_page import paged, sessions_page, sessions_page_to
from trails.catalogue.days import hour_of_minute, start_day_iri
from trails.catalogue.entries import catalogue_iri, existing_entry, rebuild, start_quads
from trails.prov.iri import Minter
from trails.prov.vocab import T
from trails.store import Solutions, Store, open_store
from trails.store.terms import IRI, Literal, Quad

ORIGIN = datetime(2026, 3, 1, 21, 59, 58, tzinfo=UTC)
"""Two seconds before an hour's edge; the bursts below reach into the next day."""
BURSTS = (
    timedelta(0),  # 21:59:58 -> 22:00
    timedelta(minutes=50),  # 22:49:58
    timedelta(hours=2),  # 23:59:58 -> the next day's 00:00
    timedelta(hours=2, minutes=17),
    timedelta(hours=4, seconds=3),  # 02:00:01, in the next day
)
PER_BURST = 60
CATALOGUE = catalogue_iri(Minter())


def _starts(per_second: int, *, ties: bool) -> list[datetime]:
    """``PER_BURST`` starts per burst, ``per_second`` to a second."""
    out = []
    for burst in BURSTS:
        for i in range(PER_BURST):
            if ties:
                out.append(ORIGIN + burst + timedelta(seconds=i // per_second))
            else:
                out.append(ORIGIN + burst + timedelta(microseconds=i * 1_000_000 // per_second + 7))
    return out


def _entries(starts: list[datetime]) -> list[Quad]:
    minter = Minter()
    quads: list[Quad] = []
    for i, started in enumerate(starts):
        did = f"did:example:u{i % 3}"
        quads += start_quads(
            minter.session(),
            minter.agent(did),
            started,
            label=f"s{i}",
            catalogue=CATALOGUE,
            principal_id=Literal(did),
        )
    return quads


def _pre_hour(quads: list[Quad], minutes: set[str] | None = None) -> list[Quad]:
    """The quads as written before hours existed: each minute (of ``minutes``, or every one)
    belongs to its day, and no hour is written for it."""
    hours = {str(q.object) for q in quads if q.predicate == T.minuteOfHour}
    days = {str(q.subject): q.object for q in quads if q.predicate == T.hourOf}
    out: list[Quad] = []
    for q in quads:
        if q.predicate == T.minuteOfHour and (minutes is None or str(q.subject) in minutes):
            out.append(Quad(q.subject, T.minuteOf, days[str(q.object)], q.graph))
        elif minutes is None and str(q.subject) in hours:
            continue
        else:
            out.append(q)
    return out


def _sorted(store: Store, limit: int | None) -> list[Any]:
    text = get_query("sessions").text_for({})
    result = store.query(paged(text, limit), {})
    assert isinstance(result, Solutions)
    return result.rows


def _pages_match(store: Store, everything: list[Any], sizes: tuple[int, ...]) -> None:
    for size in sizes:
        for page in range(1, len(everything) // size + 2):
            limit = page * size
            assert sessions_page(store, {}, limit).rows == everything[:limit], (size, page)


_LAYOUTS = [(r, ties) for r in (1, 10, 100) for ties in (False, True)]


@pytest.fixture(
    scope="module", params=_LAYOUTS, ids=[f"{r}-a-second{'-ties' * t}" for r, t in _LAYOUTS]
)
def dense(request: pytest.FixtureRequest) -> Iterator[tuple[Store, list[Any]]]:
    per_second, ties = request.param
    store = open_store("memory:")
    store.write(_entries(_starts(per_second, ties=ties)))
    yield store, _sorted(store, None)
    store.close()


def test_pages_over_hours_and_days_are_the_pack_querys(dense: tuple[Store, list[Any]]) -> None:
    store, everything = dense
    assert len(everything) == len(BURSTS) * PER_BURST
    _pages_match(store, everything, (45,))
    for limit in (1, 20, 26, 61, 299, 301):
        assert sessions_page(store, {}, limit).rows == everything[:limit]


def test_the_endpoints_json_over_hours_is_the_pack_querys(dense: tuple[Store, list[Any]]) -> None:
    store, _ = dense
    text = paged(get_query("sessions").text_for({}), 140)
    expected = json.loads(store.query_to(text, {}, format="json"))
    assert json.loads(sessions_page_to(store, {}, 140, format="json")) == expected


@pytest.fixture(scope="module")
def long_day() -> Iterator[Store]:
    """A session every 20 s for 23 hours of one day (4,140 sessions: 1,380 minutes)."""
    store = open_store("memory:")
    start = datetime(2026, 3, 1, 0, 30, tzinfo=UTC)
    store.write(_entries([start + timedelta(seconds=20 * i) for i in range(23 * 180)]))
    yield store
    store.close()


def test_a_page_reads_an_hours_minutes_not_the_days(
    long_day: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _sorted(long_day, 20)
    asked = queries_asked(long_day, monkeypatch)
    assert sessions_page(long_day, {}, 20).rows == expected
    # the day's 23 hours, the newest hour's 60 minutes, its newest minute's 3 seconds, the
    # seconds of the next 6 minutes: never the day's 1,380 minutes
    listed = [rows for sparql, rows in asked if "SELECT ?session" not in sparql]
    assert max(listed) <= 60
    assert sum(listed) < 23 + 60 + 3 + 20 + 5


def test_a_page_longer_than_an_hour_reads_the_hours_it_needs(long_day: Store) -> None:
    everything = _sorted(long_day, 700)
    for limit in (179, 180, 181, 500, 700):  # 180 sessions an hour
        assert sessions_page(long_day, {}, limit).rows == everything[:limit]


@pytest.fixture(scope="module")
def upgraded() -> Iterator[tuple[Store, list[Any]]]:
    """Sessions at 10 a second over several hours and two days: the older day's minutes and
    some of the newer day's written before hours existed (one minute by both: the store was
    upgraded inside it)."""
    store = open_store("memory:")
    quads = _entries(_starts(10, ties=True))
    minutes = sorted({str(q.subject) for q in quads if q.predicate == T.minuteOfHour})
    day_two = [m for m in minutes if ":started:2026-03-02" in m]
    old = {m for m in minutes if m not in day_two} | set(day_two[:2])
    store.write(_pre_hour(quads, old))
    both = day_two[2]  # the minute trails was upgraded in: linked to its day and to its hour
    day = next(q.object for q in quads if q.predicate == T.hourOf and "2026-03-02" in q.object)
    store.write([Quad(IRI.trusted(both), T.minuteOf, day, CATALOGUE)])
    yield store, _sorted(store, None)
    store.close()


def test_minutes_written_before_hours_are_paged_in_order(
    upgraded: tuple[Store, list[Any]],
) -> None:
    store, everything = upgraded
    assert store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> ASK { GRAPH ?c { ?m trails:minuteOf ?d } }"
    )
    _pages_match(store, everything, (45,))


def test_a_rebuild_links_minutes_written_before_hours_to_their_hours(
    upgraded: tuple[Store, list[Any]],
) -> None:
    store, everything = upgraded
    rebuild(store)
    left = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> ASK { GRAPH ?c { ?m trails:minuteOf ?d } }"
    )
    assert not left
    found = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?m ?h ?d WHERE { GRAPH ?c { "
        "?m a trails:StartMinute OPTIONAL { ?m trails:minuteOfHour ?h . ?h trails:hourOf ?d } } }"
    )
    assert isinstance(found, Solutions) and found.rows
    for minute, hour, day in found.rows:
        assert hour == hour_of_minute(str(minute))
        assert str(day).endswith(str(minute).rpartition(":started:")[2][:10])
    _pages_match(store, everything, (45,))


def test_pre_hour_and_hour_minutes_conform_to_the_shapes(store: Store) -> None:
    quads = _entries([ORIGIN + timedelta(seconds=s) for s in (0, 1, 3, 65)])
    minutes = sorted({str(q.subject) for q in quads if q.predicate == T.minuteOfHour})
    store.write(_pre_hour(quads, {minutes[0]}))
    assert sessions_page(store, {}, 4).rows == _sorted(store, 4)


def _erase(store: Store, rows: list[Any]) -> None:
    """Remove the entries of ``rows`` as retention does (``existing_entry``): their second,
    minute and hour nodes stay."""
    for row in rows:
        store.write([], remove=existing_entry(store, IRI.trusted(str(row[0])), CATALOGUE))


def test_sessions_erased_inside_an_hour_are_walked_past() -> None:
    store = open_store("memory:")
    try:
        store.write(_entries(_starts(1, ties=False)))
        everything = _sorted(store, None)
        # the newest burst's hour emptied, and half of another hour's sessions
        _erase(store, everything[:PER_BURST] + everything[PER_BURST + 5 : PER_BURST + 35])
        left = _sorted(store, None)
        assert len(left) == len(everything) - 90
        _pages_match(store, left, (33,))
        day = start_day_iri(CATALOGUE, (ORIGIN + BURSTS[-1]).date())
        assert store.query(
            "PREFIX trails: <https://w3id.org/trails/ns#> ASK { GRAPH ?c { ?h trails:hourOf $day } }",
            {"day": day},
        )
    finally:
        store.close()


_STARTS = st.lists(
    st.tuples(
        st.integers(0, 30),  # hours after the origin: over two days
        st.integers(0, 3),  # seconds into it
        st.sampled_from([0, 0, 250_000, 999_999]),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(starts=_STARTS, size=st.integers(1, 25))
def test_pages_over_any_hours_continue_without_a_gap_or_a_repeat(
    starts: list[tuple[int, int, int]], size: int
) -> None:
    store = open_store("memory:")
    try:
        at = [ORIGIN + timedelta(hours=h, seconds=s, microseconds=m) for h, s, m in starts]
        store.write(_entries(at))
        everything = _sorted(store, None)
        assert len(everything) == len(starts)
        _pages_match(store, everything, (size,))
    finally:
        store.close()
