"""The newest sessions, a page at a time, read from the catalogue's start days, hours, minutes and seconds.

The ``sessions`` pack query sorts every catalogue entry before it keeps a page:
its cost grows with the store. Every entry also points to the UTC second it
started in (``trails:startedInSecond``), seconds to their minute
(``trails:secondOf``), minutes to their hour (``trails:minuteOfHour``) and hours
to their day (``trails:hourOf``); their IRIs sort in time order. So the newest
page is found by walking days from the newest, then their hours, the minutes of
the newest hours (``Minutes``), then the seconds of the newest minutes, running
the pack query on a run of seconds at a time until the page is full (``walk``).
Each level is read as far as the rows still wanted need: the newest hour's
minutes first, then as many hours as the minutes still wanted need at the
minutes per hour seen so far; likewise minutes for seconds. The first run is
the newest second; the next ones as many seconds as the rows still wanted need
at the rows per second seen so far (every second holds at least one entry unless
it was erased). A page therefore reads the entries of the seconds it shows,
never a whole minute: at 100 sessions a second, with every start on the whole
second (each comparison a tie broken by the entry IRI), the newest page is the
newest second's hundred entries, at 1,000 sessions or at 100,000. Its cost is
the page plus the sessions that started in the seconds it reads, and a few
small queries (the days, the newest day's hours, at most 24, the newest hour's
minutes, at most 60, the newest minutes' seconds), whatever the store holds and
however sparse or dense its sessions.

What the walk cannot serve runs the pack query as before: ``--all``, a filter by
principal or status (a rare match would walk every second), and the entries
written before minutes existed (older than every linked entry, so they fill
the end of a page that the seconds did not, in order). Entries written before
seconds existed point to their minute (``trails:startedInMinute``): such a
minute is read whole, with any newer entries of its seconds, in its place
(``trails catalogue rebuild`` links them to their seconds). Minutes written
before hours existed belong to their day (``trails:minuteOf``): a day that holds
one has all its minutes listed at once, as before hours (``trails catalogue
rebuild`` moves them to their hours). The rows, their columns and their order
are the pack query's.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from trails.audit.querypack import get_query
from trails.catalogue.days import day_of
from trails.errors import UserError
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, Term, to_python

P = TypeVar("P")
C = TypeVar("C")

__all__ = [
    "BOUND",
    "OLD_MINUTES",
    "PAGE_MARKER",
    "SECONDS_OF_MINUTE",
    "SECONDS_OF_MINUTES",
    "SECONDS_OF_TWO_MINUTES",
    "UNDATED",
    "newest_first",
    "paged",
    "sessions_page",
    "sessions_page_to",
    "start_days",
    "walk",
]

PAGE_MARKER = "#PAGE"
"""The line of ``queries/sessions.rq`` where the page's ``LIMIT`` goes (inside its subquery)."""

_ENTRIES = "GRAPH ?catalogue { ?entry trails:sessionStarted ?started }"
# Each pattern reads the slots of a run first (a subquery: joined flat, the store reads the
# entries of every slot it could reach before it filters), then their entries.
SECONDS_OF_MINUTE = (
    "{ SELECT ?slot ?catalogue $minute $oldest $newest WHERE { GRAPH ?catalogue { "
    "?slot trails:secondOf $minute FILTER(STR(?slot) >= $oldest && STR(?slot) <= $newest) "
    "} } } GRAPH ?catalogue { ?entry trails:startedInSecond ?slot ; trails:sessionStarted ?started }"
)
"""The entries of a run of seconds of one minute (at most 60 seconds read to find them)."""
SECONDS_OF_TWO_MINUTES = (
    "{ SELECT ?slot ?catalogue $first $last $oldest $newest WHERE { GRAPH ?catalogue { "
    "{ ?slot trails:secondOf $first } UNION { ?slot trails:secondOf $last } "
    "FILTER(STR(?slot) >= $oldest && STR(?slot) <= $newest) "
    "} } } GRAPH ?catalogue { ?entry trails:startedInSecond ?slot ; trails:sessionStarted ?started }"
)
"""The entries of a run of seconds over two minutes (at most 120 seconds read to find them)."""
_IN_RANGE = (
    "{ ?minute trails:minuteOf $day } UNION { ?hour trails:hourOf $day "
    "FILTER(STR(?hour) >= $early && STR(?hour) <= $late) ?minute trails:minuteOfHour ?hour } "
    "FILTER(STR(?minute) >= $first && STR(?minute) <= $last) "
)
# The minutes of one day from $first to $last (IRIs, as text): those of the hours from
# $early to $late (at most 24 read), and any written before hours existed (of the day; a
# minute trails was upgraded in is linked both ways: the queries below keep it once).
SECONDS_OF_MINUTES = (
    "{ SELECT DISTINCT ?slot ?catalogue $day $early $late $first $last $oldest $newest WHERE { "
    "GRAPH ?catalogue { " + _IN_RANGE + "?slot trails:secondOf ?minute "
    "FILTER(STR(?slot) >= $oldest && STR(?slot) <= $newest) "
    "} } } GRAPH ?catalogue { ?entry trails:startedInSecond ?slot ; trails:sessionStarted ?started }"
)
"""The entries of a run of seconds over more minutes of one day (the minutes of the run's
hours read)."""
OLD_MINUTES = (
    "{ SELECT DISTINCT ?minute ?catalogue $day $early $late $first $last WHERE { GRAPH ?catalogue { "
    + _IN_RANGE
    + "} } } GRAPH ?catalogue { { ?entry trails:startedInMinute ?minute } UNION "
    "{ ?second trails:secondOf ?minute . ?entry trails:startedInSecond ?second } "
    "?entry trails:sessionStarted ?started }"
)
"""The entries of a run of minutes that hold entries written before seconds existed (each
such minute read whole, its newer entries with it)."""
BOUND = ("day", "minute", "first", "last", "early", "late", "oldest", "newest")
"""The parameters of a run, projected by the query and left out of the page."""
UNDATED = (
    "GRAPH ?catalogue { ?entry trails:sessionStarted ?started "
    "FILTER NOT EXISTS { ?entry trails:startedInMinute ?anyMinute } "
    "FILTER NOT EXISTS { ?entry trails:startedInSecond ?anySecond } }"
)
"""The entries written before minutes existed (older than every linked one)."""

_PROJECTED = ("SELECT ?session", "SELECT ?entry ?started", "GROUP BY ?session")

# Days, hours and minutes are sorted here, not by ORDER BY: the store compares IRIs by
# reading their text from its dictionary at each comparison, which costs more as the store
# grows (a few hundred days took 20 ms sorted at 100,000 sessions, under 1 ms unsorted).
_DAYS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?day WHERE { GRAPH ?catalogue { ?day a trails:StartDay } }
"""
_HOURS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?hour $day WHERE { GRAPH ?catalogue { ?hour trails:hourOf $day } }
"""
_MINUTES_OF_HOUR = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?minute $hour WHERE { GRAPH ?catalogue { ?minute trails:minuteOfHour $hour } }
"""
_MINUTES_OF_HOURS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?minute $day $early $late WHERE { GRAPH ?catalogue {
  ?hour trails:hourOf $day FILTER(STR(?hour) >= $early && STR(?hour) <= $late)
  ?minute trails:minuteOfHour ?hour } }
"""
_MINUTES_OF_DAY = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?minute $day WHERE { GRAPH ?catalogue {
  { ?minute trails:minuteOf $day } UNION { ?hour trails:hourOf $day . ?minute trails:minuteOfHour ?hour } } }
"""
_PRE_HOUR_DAY = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH ?catalogue { ?minute trails:minuteOf $day } }
"""
_OLD_KINDS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?minutes ?days WHERE {
  BIND(EXISTS { GRAPH ?catalogue { ?entry trails:startedInMinute ?minute } } AS ?minutes)
  BIND(EXISTS { GRAPH ?catalogue { ?early trails:minuteOf ?day } } AS ?days) }
"""
# whether the store holds entries written before seconds existed, and minutes written
# before hours existed: both are read another way, so a store without them never asks more


def newest_first(found: Solutions) -> list[str]:
    """The IRIs of a query's first column, newest first (day, hour and minute IRIs sort in
    time)."""
    return sorted({str(row[0]) for row in found.rows}, reverse=True)


def _hour(minute: str) -> Literal:
    """The text of a start minute's hour (``...T1403`` -> ``...T14``: the minute's IRI less its
    minutes, ``trails.catalogue.days.start_quads_of``), a bound of a range of hours."""
    return Literal(minute[:-2])


def paged(text: str, limit: int | None) -> str:
    """The ``sessions`` query text limited to the newest ``limit`` sessions (None: all)."""
    if limit is None:
        return text
    if PAGE_MARKER not in text:
        raise UserError("the sessions query has no place for a page limit")
    return text.replace(PAGE_MARKER, f"LIMIT {int(limit)}", 1)


def _variant(text: str, pattern: str) -> str:
    """The pack query with its entries read through ``pattern`` instead of every entry."""
    if _ENTRIES not in text:
        raise UserError("the sessions query does not read its entries the way the page expects")
    out = text.replace(_ENTRIES, pattern, 1)
    bound = " ".join(f"${name}" for name in BOUND if f"${name}" in pattern)
    if bound:  # a bound parameter is projected, by the subquery and the query
        for anchor in _PROJECTED:
            if anchor not in out:
                raise UserError("the sessions query does not project the way the page expects")
            out = out.replace(anchor, f"{anchor} {bound}", 1)
    return out


class _RunReader(ABC, Generic[P, C]):
    """Children of an ordered list of parents (a day's hours, then their minutes; a day's
    minutes, then their seconds), newest first, read a run of parents at a time as the walk
    asks: the first run is one parent; the next ones as many parents as the children still
    wanted need at the children per parent seen so far (every parent holds a child). A
    page of ``n`` rows reads O(n) parents at any density.
    """

    def __init__(self) -> None:
        self.queue: list[C] = []
        self.parents_seen = self.children_seen = 0

    @abstractmethod
    def _parents(self, count: int) -> list[P]:
        """The next ``count`` parents (fewer, or none, when there are no more)."""

    @abstractmethod
    def _children(self, parents: list[P]) -> list[C]:
        """The children of a run of parents, newest first."""

    def take(self, wanted: int) -> list[C]:
        """The newest ``wanted`` children not taken yet (fewer when there are no more)."""
        while len(self.queue) < wanted:
            need = wanted - len(self.queue)
            per = self.children_seen / self.parents_seen if self.parents_seen else 0.0
            count = 1 if not self.parents_seen else min(need, _ceil(need, per))
            batch = self._parents(count)
            if not batch:
                break
            found = self._children(batch)
            self.parents_seen += len(batch)
            self.children_seen += len(found)
            self.queue += found
        out, self.queue = self.queue[:wanted], self.queue[wanted:]
        return out


def _ceil(wanted: int, per: float) -> int:
    """How many units hold ``wanted`` items at ``per`` items a unit (all when none was seen)."""
    return wanted if per <= 0 else max(1, math.ceil(wanted / per))


class Minutes(_RunReader[str, str]):
    """A start day's minutes, newest first, listed a run of hours at a time as the walk asks.

    A day that holds minutes written before hours existed (``trails:minuteOf`` the day: the
    store was upgraded that day, and ``trails catalogue rebuild`` has not linked them)
    lists all its minutes at once, as the walk did before hours.
    """

    def __init__(self, store: Store, day: IRI, *, pre_hour: bool = False) -> None:
        super().__init__()
        self.store, self.day = store, day
        self.hours: list[str] = []
        if pre_hour and self.store.query(_PRE_HOUR_DAY, {"day": day}):
            found = store.query(_MINUTES_OF_DAY, {"day": day})
            assert isinstance(found, Solutions)
            self.queue = newest_first(found)
        else:
            found = store.query(_HOURS, {"day": day})
            assert isinstance(found, Solutions)
            self.hours = newest_first(found)

    def __bool__(self) -> bool:
        return bool(self.queue or self.hours)

    def _parents(self, count: int) -> list[str]:
        batch, self.hours = self.hours[:count], self.hours[count:]
        return batch

    def _children(self, parents: list[str]) -> list[str]:
        if len(parents) == 1:
            found = self.store.query(_MINUTES_OF_HOUR, {"hour": IRI.trusted(parents[0])})
        else:
            bound: dict[str, Term] = {
                "day": self.day,
                "early": Literal(parents[-1]),
                "late": Literal(parents[0]),
            }
            found = self.store.query(_MINUTES_OF_HOURS, bound)
        assert isinstance(found, Solutions)
        return newest_first(found)


def start_days(store: Store, params: Mapping[str, Term]) -> Iterator[IRI]:
    """The catalogue's start days, newest first, within the ``since`` and ``until`` of
    ``params`` (a day's hours and minutes are read when the walk reaches it: ``Minutes``)."""
    since, until = (_moment(params.get(k)) for k in ("since", "until"))
    days = store.query(_DAYS)
    assert isinstance(days, Solutions)
    for day in newest_first(days):
        when = day_of(day, part="started")
        if when is None or (until is not None and when > until.astimezone(UTC).date()):
            continue
        if since is not None and when < since.astimezone(UTC).date():
            return
        yield IRI.trusted(day)


def _moment(term: Term | None) -> datetime | None:
    value = None if term is None else to_python(term)
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _walkable(params: Mapping[str, Term], limit: int | None) -> bool:
    """Whether the page can be walked (no filter the days, minutes and seconds cannot narrow)."""
    return limit is not None and "principal" not in params and "status" not in params


_OLD_MINUTE = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH ?catalogue { ?entry trails:startedInMinute $minute } }
"""
_OLD_IN_MINUTES = (
    "PREFIX trails: <https://w3id.org/trails/ns#> "
    "SELECT DISTINCT ?minute $day $early $late $first $last WHERE { GRAPH ?catalogue { "
    + _IN_RANGE
    + "?entry trails:startedInMinute ?minute } }"
)
_SECONDS_OF = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?slot $minute WHERE { GRAPH ?catalogue { ?slot trails:secondOf $minute } }
"""
_IN_SECOND = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT (COUNT(?entry) AS ?n) $second WHERE { GRAPH ?catalogue { ?entry trails:startedInSecond $second } }
GROUP BY $second
"""
_SECONDS_IN = (
    "PREFIX trails: <https://w3id.org/trails/ns#> "
    "SELECT ?slot ?minute $day $early $late $first $last WHERE { GRAPH ?catalogue { "
    + _IN_RANGE
    + "?slot trails:secondOf ?minute } }"
)


class _Slots(_RunReader[str, tuple[str, str, str]]):
    """A day's slots newest first, listed a run of minutes at a time as the walk asks.

    A slot is a second (``("s", second, minute)``) or, for a minute that holds entries
    written before seconds existed, the whole minute (``("m", minute, minute)``).
    """

    def __init__(self, store: Store, day: IRI, minutes: Minutes, old: bool) -> None:
        super().__init__()
        self.store, self.day, self.minutes, self.old = store, day, minutes, old

    def _parents(self, count: int) -> list[str]:
        return self.minutes.take(count)

    def _children(self, batch: list[str]) -> list[tuple[str, str, str]]:
        if len(batch) == 1:
            bound: dict[str, Term] = {"minute": IRI.trusted(batch[0])}
            seconds, old_query = _SECONDS_OF, _OLD_MINUTE
        else:
            bound = {
                "day": self.day,
                "early": _hour(batch[-1]),
                "late": _hour(batch[0]),
                "first": Literal(batch[-1]),
                "last": Literal(batch[0]),
            }
            seconds, old_query = _SECONDS_IN, _OLD_IN_MINUTES
        old: set[str] = set()
        if self.old:
            found = self.store.query(old_query, bound)
            if isinstance(found, Solutions):
                old = {str(row[0]) for row in found.rows}
            elif found:
                old = {batch[0]}
        rows = self.store.query(seconds, bound)
        assert isinstance(rows, Solutions)
        minute_of = rows.variables.index("minute")
        slots = [("m", m, m) for m in old]
        for row in rows.rows:
            minute = batch[0] if row[minute_of] is None else str(row[minute_of])
            if minute not in old:
                slots.append(("s", str(row[0]), minute))
        return sorted(set(slots), key=lambda slot: slot[1], reverse=True)


def _runs(day: IRI, slots: list[tuple[str, str, str]]) -> Iterator[tuple[str, dict[str, Term]]]:
    """The queries that read ``slots`` (newest first, one day): one per stretch of slots of
    one kind, its pattern and the run's bound parameters."""
    at = 0
    while at < len(slots):
        kind = slots[at][0]
        end = at
        while end < len(slots) and slots[end][0] == kind:
            end += 1
        run, at = slots[at:end], end
        oldest, newest = Literal(run[-1][1]), Literal(run[0][1])
        if kind == "m":
            yield (
                OLD_MINUTES,
                {
                    "day": day,
                    "early": _hour(run[-1][1]),
                    "late": _hour(run[0][1]),
                    "first": oldest,
                    "last": newest,
                },
            )
        elif run[0][2] == run[-1][2]:
            yield (
                SECONDS_OF_MINUTE,
                {
                    "minute": IRI.trusted(run[0][2]),
                    "oldest": oldest,
                    "newest": newest,
                },
            )
        elif len({slot[2] for slot in run}) == 2:
            yield (
                SECONDS_OF_TWO_MINUTES,
                {
                    "first": IRI.trusted(run[-1][2]),
                    "last": IRI.trusted(run[0][2]),
                    "oldest": oldest,
                    "newest": newest,
                },
            )
        else:
            yield (
                SECONDS_OF_MINUTES,
                {
                    "day": day,
                    "early": _hour(run[-1][2]),
                    "late": _hour(run[0][2]),
                    "first": Literal(run[-1][2]),
                    "last": Literal(run[0][2]),
                    "oldest": oldest,
                    "newest": newest,
                },
            )


Run = Callable[[str, Mapping[str, Term], int], int]
"""Runs one piece of a page (the pattern its entries are read through, the run's bound
parameters, how many rows it may give) and says how many rows it gave."""


def walk(store: Store, params: Mapping[str, Term], limit: int, run: Run) -> None:
    """Run the pieces of the newest ``limit`` sessions until the page is full: the slots
    (seconds) of the newest minutes, newest first, then the entries with no slot.

    A run is the newest slots not read yet, as many as the rows still wanted need at the
    rows per slot seen so far (every slot holds an entry unless it was erased): at first
    the entries the newest second holds (counted: an index range), then the rows the runs
    gave. So a dense second is read once, and a sparse store's page is one run. The rows come in the pack query's order: slots in time order, and the entries of
    a run sorted by their start and IRI.
    """
    have = 0
    kinds = store.query(_OLD_KINDS)
    assert isinstance(kinds, Solutions)
    old, pre_hour = (any(to_python(row[i]) is True for row in kinds.rows) for i in (0, 1))
    for day in start_days(store, params):
        slots = _Slots(store, day, Minutes(store, day, pre_hour=pre_hour), old)
        per: float | None = None  # rows per slot: counted in the newest second, then as read
        newest = slots.take(1)
        if newest and newest[0][0] == "s":
            found = store.query(_IN_SECOND, {"second": IRI.trusted(newest[0][1])})
            assert isinstance(found, Solutions)
            counted = to_python(found.rows[0][0]) if found.rows else 0
            per = float(counted) if isinstance(counted, int) else None
        slots.queue[:0] = newest
        slots_read = rows_read = 0
        while True:
            wanted = limit - have
            if slots_read:
                per = rows_read / slots_read
            taken = slots.take(1 if per is None else min(wanted, _ceil(wanted, per)))
            if not taken:
                break
            for pattern, bound in _runs(day, taken):
                got = run(pattern, bound, limit - have)
                have += got
                rows_read += got
                if have >= limit:
                    return
            slots_read += len(taken)
    run(UNDATED, {}, limit - have)


def _fill(
    store: Store,
    params: Mapping[str, Term],
    limit: int,
    run: Callable[[str, Mapping[str, Term]], int],
) -> None:
    """``walk`` with the pack query: each piece is its text (the entries read through the
    piece's pattern, limited to the rows still wanted) and its parameters."""
    text = get_query("sessions").text_for(dict(params))
    variants: dict[str, str] = {}

    def piece(pattern: str, bound: Mapping[str, Term], wanted: int) -> int:
        if pattern not in variants:
            variants[pattern] = _variant(text, pattern)
        return run(paged(variants[pattern], wanted), {**params, **bound})

    walk(store, params, limit, piece)


def sessions_page(store: Store, params: Mapping[str, Term], limit: int | None) -> Solutions:
    """The rows of the ``sessions`` pack query for the newest ``limit`` sessions.

    Args:
        store: the store.
        params: the pack query's parameters, bound (``principal since until status``).
        limit: the page size; None for every session.

    Returns:
        The rows, in the pack query's columns and order.
    """
    if not _walkable(params, limit):
        text = get_query("sessions").text_for(dict(params))
        result = store.query(paged(text, limit), dict(params))
        assert isinstance(result, Solutions)
        return result
    assert limit is not None
    parts: list[Solutions] = []

    def rows(text: str, bound: Mapping[str, Term]) -> int:
        found = store.query(text, bound)
        assert isinstance(found, Solutions)
        parts.append(found)
        return len(found.rows)

    _fill(store, params, limit, rows)
    names = [v for v in parts[-1].variables if v not in BOUND]
    out: list[tuple[Term | None, ...]] = []
    for part in parts:
        at = [part.variables.index(v) for v in names]
        out.extend(tuple(row[i] for i in at) for row in part.rows)
    return Solutions(names, out)


def sessions_page_to(
    store: Store, params: Mapping[str, Term], limit: int | None, *, format: str
) -> bytes:
    """``sessions_page`` as SPARQL JSON results, or another format the store writes.

    JSON is walked like ``sessions_page``; CSV, TSV and XML run the
    pack query as it is (it sorts every entry).
    """
    if not _walkable(params, limit) or format != "json":
        text = get_query("sessions").text_for(dict(params))
        return store.query_to(paged(text, limit), dict(params), format=format)
    assert limit is not None
    pieces: list[dict[str, Any]] = []

    def serialised(text: str, bound: Mapping[str, Term]) -> int:
        data = json.loads(store.query_to(text, bound, format="json"))
        pieces.append(data)
        return len(data["results"]["bindings"])

    _fill(store, params, limit, serialised)
    head = [v for v in pieces[-1]["head"]["vars"] if v not in BOUND]
    bindings = [
        {k: v for k, v in b.items() if k not in BOUND}
        for data in pieces
        for b in data["results"]["bindings"]
    ]
    body = {"head": {"vars": head}, "results": {"bindings": bindings}}
    return json.dumps(body, ensure_ascii=False).encode("utf-8")
