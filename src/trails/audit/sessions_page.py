"""The newest sessions, a page at a time, read from the catalogue's start minutes.

The ``sessions`` pack query sorts every catalogue entry before it keeps a page:
its cost grows with the store. Every entry also points to the UTC minute it
started in (``trails:startedInMinute``), and minutes to their day
(``trails:minuteOf``); their IRIs sort in time order. So the newest page is
found by walking days from the newest, then their minutes from the newest,
running the pack query on a run of minutes at a time until the page is full.
Every minute holds at least one entry, so the newest ``n`` minutes of a day
hold at least the ``n`` entries the page still wants: one pack query reads
them (its entries, index lookups from the day), and the next run of minutes is
read only if some entries were erased. The newest page is then three small
queries (the days, the newest day's minutes, the page), whatever the store holds.

What the walk cannot serve runs the pack query as before: ``--all``, a filter by
principal or status (a rare match would walk every minute), and the entries
written before minutes existed (older than every minute-linked entry, so they
fill the end of a page that the minutes did not, in order). The rows, their
columns and their order are the pack query's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from trails.audit.querypack import get_query
from trails.catalogue.days import day_of
from trails.errors import UserError
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, Term, to_python

__all__ = [
    "PAGE_MARKER",
    "newest_first",
    "paged",
    "sessions_page",
    "sessions_page_to",
    "start_days",
]

PAGE_MARKER = "#PAGE"
"""The line of ``queries/sessions.rq`` where the page's ``LIMIT`` goes (inside its subquery)."""

_ENTRIES = "GRAPH ?catalogue { ?entry trails:sessionStarted ?started }"
# the run's minutes first (a subquery: joined flat, the store reads the entries of every
# minute of the day before it filters), then their entries
_IN_MINUTES = (
    "{ SELECT ?minute ?catalogue $day $oldest $newest WHERE { GRAPH ?catalogue { "
    "?minute trails:minuteOf $day FILTER(STR(?minute) >= $oldest && STR(?minute) <= $newest) "
    "} } } GRAPH ?catalogue { ?entry trails:startedInMinute ?minute ; trails:sessionStarted ?started }"
)
_BOUND = ("day", "oldest", "newest")
"""The parameters of a run of minutes, projected by the query and left out of the page."""
_UNDATED = (
    "GRAPH ?catalogue { ?entry trails:sessionStarted ?started "
    "FILTER NOT EXISTS { ?entry trails:startedInMinute ?anyMinute } }"
)

_PROJECTED = ("SELECT ?session", "SELECT ?entry ?started", "GROUP BY ?session")

# Days and minutes are sorted here, not by ORDER BY: the store compares IRIs by reading
# their text from its dictionary at each comparison, which costs more as the store grows
# (a few hundred days took 20 ms sorted at 100,000 sessions, under 1 ms unsorted).
_DAYS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?day WHERE { GRAPH ?catalogue { ?day a trails:StartDay } }
"""
_MINUTES = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?minute $day WHERE { GRAPH ?catalogue { ?minute trails:minuteOf $day } }
"""


def newest_first(found: Solutions) -> list[str]:
    """The IRIs of a query's first column, newest first (day and minute IRIs sort in time)."""
    return sorted({str(row[0]) for row in found.rows}, reverse=True)


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
    bound = " ".join(f"${name}" for name in _BOUND if f"${name}" in pattern)
    if bound:  # a bound parameter is projected, by the subquery and the query
        for anchor in _PROJECTED:
            if anchor not in out:
                raise UserError("the sessions query does not project the way the page expects")
            out = out.replace(anchor, f"{anchor} {bound}", 1)
    return out


def start_days(store: Store, params: Mapping[str, Term]) -> Iterator[tuple[IRI, list[str]]]:
    """The catalogue's start days and their minutes, newest first, within the ``since`` and
    ``until`` of ``params`` (a day's minutes are read when the walk reaches it)."""
    since, until = (_moment(params.get(k)) for k in ("since", "until"))
    days = store.query(_DAYS)
    assert isinstance(days, Solutions)
    for day in newest_first(days):
        when = day_of(day, part="started")
        if when is None or (until is not None and when > until.astimezone(UTC).date()):
            continue
        if since is not None and when < since.astimezone(UTC).date():
            return
        found = store.query(_MINUTES, {"day": IRI.trusted(day)})
        assert isinstance(found, Solutions)
        yield IRI.trusted(day), newest_first(found)


def _moment(term: Term | None) -> datetime | None:
    value = None if term is None else to_python(term)
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _walkable(params: Mapping[str, Term], limit: int | None) -> bool:
    """Whether the page can be read minute by minute (no filter a minute cannot narrow)."""
    return limit is not None and "principal" not in params and "status" not in params


Run = Callable[[str, Mapping[str, Term]], int]
"""Runs one piece of a page (its query text and parameters) and says how many rows it gave."""


def _fill(store: Store, params: Mapping[str, Term], limit: int, run: Run) -> None:
    """Run the pieces of the page (runs of minutes, then the undated entries) until it is full.

    A run is the newest minutes not read yet, as many as the entries still wanted.
    """
    text = get_query("sessions").text_for(dict(params))
    have = 0
    in_minutes = _variant(text, _IN_MINUTES)
    for day, minutes in start_days(store, params):
        while minutes:
            batch, minutes = minutes[: limit - have], minutes[limit - have :]
            bound: dict[str, Term] = {
                "day": day,
                "oldest": Literal(batch[-1]),
                "newest": Literal(batch[0]),
            }
            have += run(paged(in_minutes, limit - have), {**params, **bound})
            if have >= limit:
                return
    run(paged(_variant(text, _UNDATED), limit - have), dict(params))


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
    names = [v for v in parts[-1].variables if v not in _BOUND]
    out: list[tuple[Term | None, ...]] = []
    for part in parts:
        at = [part.variables.index(v) for v in names]
        out.extend(tuple(row[i] for i in at) for row in part.rows)
    return Solutions(names, out)


def sessions_page_to(
    store: Store, params: Mapping[str, Term], limit: int | None, *, format: str
) -> bytes:
    """``sessions_page`` as SPARQL JSON results, or another format the store writes.

    JSON is read minute by minute like ``sessions_page``; CSV, TSV and XML run the
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
    head = [v for v in pieces[-1]["head"]["vars"] if v not in _BOUND]
    bindings = [
        {k: v for k, v in b.items() if k not in _BOUND}
        for data in pieces
        for b in data["results"]["bindings"]
    ]
    body = {"head": {"vars": head}, "results": {"bindings": bindings}}
    return json.dumps(body, ensure_ascii=False).encode("utf-8")
