"""Daily cost totals in the catalogue, so store-wide cost questions read a few rows a day.

Summing cost per model or per principal over the catalogue reads one
``trails:AgentUsage`` per session and agent: linear in the sessions a store
has ever held. Every summary of an ended session points to its UTC day
(``trails:endedOn`` a ``trails:CatalogueDay``, see ``trails.catalogue.entries``).
Once a day is over, ``rollup`` sums its sessions' usage per agent into
``trails:DailyTotal`` nodes and marks the day ``trails:totalledAt`` (with its
``trails:sessionCount``, how many sessions ended on it), then sums
the daily totals of every day up to the newest one with no untotalled day
before it into one ``trails:RunningTotal`` per agent (the catalogue graph's
``trails:runningThrough`` names that day, ``trails:runningSessions`` their
sessions). The ``cost-by-model`` and
``cost-by-principal`` pack queries read the running totals, the daily totals
of the days after them, and the summaries of the days not totalled (today's,
typically): one row per agent plus what today added, whatever the store holds.

Totals are derived data and never trusted beyond their inputs: any write that
changes a summary of a day (a late write to an ended session, recovery,
``trails catalogue rebuild``, retention removing a session) removes that
day's totals and mark, and the running totals if they cover that day, in the
same write (``trails.catalogue.days.day_totals``), so totals that exist equal the
sum of the summaries they cover, and what has none is read from its summaries.
Only days that ended ``settle`` ago are totalled: a session's summary is
written when it ends, with the writer's clock, so a writer whose clock runs
behind by more than ``settle`` could add a summary to a day already totalled
without seeing its totals (the totals would miss that session until the day
is totalled again; ``trails catalogue rebuild`` recomputes every day).

Catalogues begun before days existed hold summaries without a day: ``rollup``
dates them first and then marks the catalogue graph ``trails:entriesDated``;
until that mark exists the cost queries also read every undated summary.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from trails.catalogue.days import (
    cost_literal,
    dated_mark,
    day_iri,
    day_quads,
    day_totals,
    ended_day,
    keep_through,
    kept_through,
    running_quads,
    typed_mark,
)
from trails.catalogue.entries import catalogue_iri, open_mark
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, RDF, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, Quad, literal, to_python

__all__ = ["KEEP_UP_DAYS", "SETTLE", "RollupResult", "keep_up", "rollup"]

SETTLE = timedelta(hours=1)
"""How long after a day's end its totals may be computed (room for clock skew)."""

KEEP_UP_DAYS = 7
"""The most days ``keep_up`` totals at one session end (the rest at the next ends)."""

log = logging.getLogger(__name__)

_UNDATED = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?entry ?ended $catalogue WHERE {
  GRAPH $catalogue {
    ?entry trails:sessionEnded ?ended .
    FILTER NOT EXISTS { ?entry trails:endedOn ?day }
  }
}
"""

_TYPED = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH $catalogue { $catalogue trails:openSummariesTyped true } }
"""

_UNTYPED = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?entry $catalogue WHERE {
  GRAPH $catalogue {
    ?entry a trails:SessionSummary .
    FILTER NOT EXISTS { ?entry trails:sessionEnded ?ended }
    FILTER NOT EXISTS { ?entry a trails:OpenSessionSummary }
  }
}
"""

_OPEN_ENDED = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?entry $catalogue WHERE {
  GRAPH $catalogue { ?entry a trails:OpenSessionSummary ; trails:sessionEnded ?ended }
}
"""

_UNTOTALLED = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?day ?date $catalogue WHERE {
  GRAPH $catalogue {
    ?day a trails:CatalogueDay ; trails:day ?date .
    FILTER NOT EXISTS { ?day trails:totalledAt ?at }
  }
}
"""

_DAYS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?date ?totalled $catalogue WHERE {
  GRAPH $catalogue {
    ?day a trails:CatalogueDay ; trails:day ?date .
    OPTIONAL { ?day trails:totalledAt ?totalled }
  }
}
"""

_RUNNING_SUMS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?agent (SUM(?n) AS ?completions) (SUM(?un) AS ?unpriced) (SUM(?in) AS ?inputTokens)
       (SUM(?out) AS ?outputTokens) (SUM(?usd) AS ?costUSD) $catalogue $through
WHERE {
  GRAPH $catalogue {
    ?day a trails:CatalogueDay ; trails:day ?date ; trails:totalledAt ?at .
    FILTER(?date <= $through)
    ?total trails:totalsOf ?day ;
           trails:totalAgent ?agent ;
           trails:completionCount ?n ;
           trails:unpricedCount ?un ;
           trails:totalInputTokens ?in ;
           trails:totalOutputTokens ?out ;
           trails:totalCostUSD ?usd .
  }
}
GROUP BY ?agent $catalogue $through
"""

_SUMS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?agent (SUM(?n) AS ?completions) (SUM(?un) AS ?unpriced) (SUM(?in) AS ?inputTokens)
       (SUM(?out) AS ?outputTokens) (SUM(?usd) AS ?costUSD) $catalogue $day
WHERE {
  GRAPH $catalogue {
    ?entry trails:endedOn $day ; trails:usage ?usage .
    ?usage trails:usedAgent ?agent ;
           trails:completionCount ?n ;
           trails:unpricedCount ?un ;
           trails:totalInputTokens ?in ;
           trails:totalOutputTokens ?out ;
           trails:totalCostUSD ?usd .
  }
}
GROUP BY ?agent $catalogue $day
"""

_DAY_COUNT = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT (COUNT(?entry) AS ?n) ?counted $catalogue $day WHERE {
  GRAPH $catalogue {
    { ?entry trails:endedOn $day } UNION { $day trails:sessionCount ?counted }
  }
}
GROUP BY ?counted $catalogue $day
"""

_COUNTS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?day ?date ?n $catalogue WHERE {
  GRAPH $catalogue {
    ?day a trails:CatalogueDay ; trails:day ?date ; trails:totalledAt ?at .
    OPTIONAL { ?day trails:sessionCount ?n }
  }
}
"""


@dataclass
class RollupResult:
    """What one ``rollup`` did."""

    dated: int = 0
    """Summaries that had no day and were given theirs."""
    totalled: list[date] = field(default_factory=list)
    """Days whose totals were computed."""
    open_days: list[date] = field(default_factory=list)
    """Days without totals that are not over yet (read from their summaries)."""
    running_through: date | None = None
    """The day the running totals run through (``None``: no day is totalled)."""
    left: list[date] = field(default_factory=list)
    """Days that are over but were left for a next rollup (past its ``limit``)."""
    counted: int = 0
    """Days totalled before session counts were kept that were given their count."""
    typed: int = 0
    """Summaries without an end written before ``trails:OpenSessionSummary`` existed, typed."""


def _solutions(result: object) -> Solutions:
    assert isinstance(result, Solutions)
    return result


def _count_days(store: Store, catalogue: IRI) -> int:
    """Give each totalled day without a session count (totalled before counts were kept)
    its count; one write per day. How many were counted."""
    counted = 0
    for row in _solutions(store.query(_COUNTS, {"catalogue": catalogue})):
        if row.get("n") is None and row.get("day") is not None:
            day = IRI.trusted(str(row["day"]))
            store.write([_session_count(store, catalogue, day)[0]])
            counted += 1
    return counted


def _rows(result: object) -> list[tuple[object, ...]]:
    assert isinstance(result, Solutions)
    return [tuple(r) for r in result.rows]


def _chunks(rows: list[tuple[object, ...]], size: int) -> Iterator[list[tuple[object, ...]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _date_entries(store: Store, catalogue: IRI, batch: int) -> int:
    """Point every ended summary without a day to its day; one write per ``batch``."""
    undated = _rows(store.query(_UNDATED, {"catalogue": catalogue}))
    dated = 0
    for chunk in _chunks(undated, batch):
        add: list[Quad] = []
        days: dict[IRI, date] = {}
        for entry, ended, *_ in chunk:
            day = ended_day(ended)
            if day is None or entry is None:
                continue
            node = day_iri(catalogue, day)
            days[node] = day
            add.append(Quad(IRI.trusted(str(entry)), T.endedOn, node, catalogue))
            dated += 1
        for day in days.values():
            add.extend(day_quads(catalogue, day))
        if add:  # a day that gains a summary loses its totals, in the same write
            store.write(add, remove=day_totals(store, catalogue, days))
    return dated


def _type_open(store: Store, catalogue: IRI, batch: int) -> int:
    """Type every summary without an end ``trails:OpenSessionSummary`` (summaries written
    before the type existed), then mark the catalogue; once: a marked catalogue is not read
    again. One write per ``batch`` summaries. How many were typed."""
    if store.query(_TYPED, {"catalogue": catalogue}):
        return 0
    untyped = _rows(store.query(_UNTYPED, {"catalogue": catalogue}))
    for chunk in _chunks(untyped, batch):
        store.write([open_mark(IRI.trusted(str(row[0])), catalogue) for row in chunk if row[0]])
    # a session that ended between the read and the write above was typed open after its
    # end removed the type: taken off again (an end after this write removes it itself)
    ended = _rows(store.query(_OPEN_ENDED, {"catalogue": catalogue}))
    store.write(
        [typed_mark(catalogue)],
        remove=[open_mark(IRI.trusted(str(row[0])), catalogue) for row in ended if row[0]],
    )
    taken_off = {str(row[0]) for row in ended}
    return sum(1 for row in untyped if str(row[0]) not in taken_off)


def _number(term: object) -> float:
    value = to_python(term) if isinstance(term, Literal) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _sum_quads(node: IRI, row: dict[str, object], catalogue: IRI) -> list[Quad]:
    def count(name: str) -> Any:
        return literal(int(_number(row.get(name))))

    return [
        Quad(node, T.completionCount, count("completions"), catalogue),
        Quad(node, T.unpricedCount, count("unpriced"), catalogue),
        Quad(node, T.totalInputTokens, count("inputTokens"), catalogue),
        Quad(node, T.totalOutputTokens, count("outputTokens"), catalogue),
        Quad(node, T.totalCostUSD, _cost(row.get("costUSD")), catalogue),
    ]


def _cost(term: object) -> Literal:
    """A summed cost as stored: entries' ``xsd:decimal`` costs sum exactly in SPARQL (and
    stay decimal); a sum over entries written before (``xsd:double``) stays a double."""
    value = to_python(term) if isinstance(term, Literal) else None
    if isinstance(value, float):
        return literal(value)
    return cost_literal(value if isinstance(value, Decimal) else Decimal(0))


def _agent_key(agent: object) -> str:
    return hashlib.sha256(str(agent).encode()).hexdigest()[:16]


def _per_agent(
    rows: Solutions, cls: IRI, node_of: Callable[[str], IRI], catalogue: IRI, *also: tuple[IRI, IRI]
) -> list[Quad]:
    """One ``cls`` node per agent of ``rows`` (the sums of ``_SUMS`` / ``_RUNNING_SUMS``),
    named by ``node_of(agent key)``, each with the extra ``(predicate, object)`` pairs ``also``."""
    out: list[Quad] = []
    for row in rows:
        agent = row.get("agent")
        if agent is None:
            continue
        node = node_of(_agent_key(agent))
        out += [
            Quad(node, RDF.type, cls, catalogue),
            Quad(node, RDF.type, PROV.Entity, catalogue),
            *(Quad(node, p, o, catalogue) for p, o in also),
            Quad(node, T.totalAgent, IRI.trusted(str(agent)), catalogue),
            *_sum_quads(node, dict(row), catalogue),
        ]
    return out


def _session_count(store: Store, catalogue: IRI, day: IRI) -> tuple[Quad, list[Quad]]:
    """The count of the sessions that ended on ``day`` (``trails:sessionCount``), and the
    count stored before it (to remove in the same write)."""
    rows = store.query(_DAY_COUNT, {"catalogue": catalogue, "day": day})
    assert isinstance(rows, Solutions)
    ended = sum(int(_number(r.get("n"))) for r in rows if r.get("counted") is None)
    old = [Quad(day, T.sessionCount, r["counted"], catalogue) for r in rows if r.get("counted")]
    return Quad(day, T.sessionCount, literal(ended), catalogue), old


def _total_quads(store: Store, catalogue: IRI, day: IRI, at: datetime) -> list[Quad]:
    """The totals of ``day`` per agent, how many sessions ended on it, and the mark that
    they are current."""
    rows = store.query(_SUMS, {"catalogue": catalogue, "day": day})
    assert isinstance(rows, Solutions)
    return [
        Quad(day, T.totalledAt, literal(at), catalogue),
        _session_count(store, catalogue, day)[0],
        *_per_agent(
            rows,
            T.DailyTotal,
            lambda key: Minter.part(day, "total:" + key),
            catalogue,
            (T.totalsOf, day),
        ),
    ]


def _run_through(store: Store, catalogue: IRI) -> date | None:
    """The newest day such that it and every day before it are totalled."""
    rows = store.query(_DAYS, {"catalogue": catalogue})
    assert isinstance(rows, Solutions)
    days = [(to_python(r["date"]), r.get("totalled") is not None) for r in rows]
    through = None
    for day, totalled in sorted(d for d in days if isinstance(d[0], date)):
        if not totalled:
            break
        through = day
    return through


def _running(store: Store, catalogue: IRI) -> date | None:
    """Write the running totals over every day up to the newest that has all before it
    totalled, replacing the stored ones; one write. Returns that day."""
    through = _run_through(store, catalogue)
    _, stored = running_quads(store, catalogue)
    add: list[Quad] = []
    if through is not None:
        add.append(Quad(catalogue, T.runningThrough, literal(through), catalogue))
        counts = [
            to_python(r["n"]) if r.get("n") is not None else None
            for r in _solutions(store.query(_COUNTS, {"catalogue": catalogue}))
            if isinstance(to_python(r["date"]), date) and to_python(r["date"]) <= through
        ]
        if all(isinstance(n, int) for n in counts):  # every day counted (rollups before not)
            count = sum(n for n in counts if isinstance(n, int))
            add.append(Quad(catalogue, T.runningSessions, literal(count), catalogue))
        rows = store.query(_RUNNING_SUMS, {"catalogue": catalogue, "through": literal(through)})
        assert isinstance(rows, Solutions)
        add += _per_agent(
            rows, T.RunningTotal, lambda key: Minter.part(catalogue, "running:" + key), catalogue
        )
    keep, have = set(add), set(stored)
    more, less = [q for q in add if q not in have], [q for q in stored if q not in keep]
    if more or less:
        store.write(more, remove=less)
    return through


def rollup(
    store: Store,
    minter: Minter | None = None,
    *,
    now: datetime | None = None,
    settle: timedelta = SETTLE,
    batch: int = 1000,
    limit: int | None = None,
) -> RollupResult:
    """Date the summaries that have no day, then total every day that is over (and, once,
    type the summaries without an end ``trails:OpenSessionSummary``).

    One write per ``batch`` summaries dated and one write per day totalled (its
    totals and its ``trails:totalledAt`` mark together). Days already totalled
    are left as they are: a change to one of their summaries removed their
    totals, so a day with totals is current.

    Args:
        store: the store.
        minter: names the catalogue graph (default ``urn:trails:``).
        now: the time that decides which days are over (default: now, UTC).
        settle: how long after its end a day is totalled.
        batch: summaries dated per write.
        limit: total at most this many days (the oldest first; ``None``: every day over).

    Returns:
        What was dated and totalled, and the days left to their summaries.

    Raises:
        StoreError: the store could not be read or written.
    """
    catalogue = catalogue_iri(minter or Minter())
    now = now or datetime.now(UTC)
    result = RollupResult(dated=_date_entries(store, catalogue, batch))
    store.write([dated_mark(catalogue)])
    result.typed = _type_open(store, catalogue, batch)
    for day, value, *_ in sorted(
        _rows(store.query(_UNTOTALLED, {"catalogue": catalogue})), key=lambda r: str(r[1])
    ):
        when = to_python(value) if isinstance(value, Literal) else None
        if day is None or not isinstance(when, date):
            continue
        over = datetime(when.year, when.month, when.day, tzinfo=UTC) + timedelta(days=1)
        if over + settle > now:
            result.open_days.append(when)
            continue
        if limit is not None and len(result.totalled) >= limit:
            result.left.append(when)
            continue
        node = IRI.trusted(str(day))
        stale = _session_count(store, catalogue, node)[1]  # one left by a concurrent removal
        store.write(_total_quads(store, catalogue, node, now), remove=stale)
        result.totalled.append(when)
    result.counted = _count_days(store, catalogue)
    result.running_through = _running(store, catalogue)
    return result


_BEHIND = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK {
  GRAPH $catalogue {
    ?day a trails:CatalogueDay ; trails:day ?date .
    FILTER(?date <= $due)
    FILTER NOT EXISTS { ?day trails:totalledAt ?at }
  }
}
"""


def keep_up(
    store: Store,
    minter: Minter | None = None,
    *,
    now: datetime | None = None,
    settle: timedelta = SETTLE,
    limit: int = KEEP_UP_DAYS,
) -> RollupResult | None:
    """Total the days that are over and have no totals yet, a few at a time: the sealer
    calls it after each session end, so cost questions read totals without a daily job.

    Once a process has found every day up to the newest one over totalled, it does not
    look again until another day is over (a date comparison per session end). Else one
    ``ASK`` over the catalogue's days decides, and ``rollup`` totals at most ``limit``
    days (the oldest first); it dates a catalogue begun before days first, once. A store
    whose sessions all ended today writes nothing here. A day whose totals a write of
    this process removed (a late write, a session that ended on a day already over) is
    totalled again at the next session end (``day_totals`` makes this process look
    again); one whose totals another process removed, by the next process to look
    (until then the queries read that day's entries: right, only slower). Never raises: totals are derived data, and a failure leaves them to the next call
    (or ``trails catalogue rollup``).

    Returns:
        What the rollup did, or ``None`` when nothing was due.
    """
    catalogue = catalogue_iri(minter or Minter())
    now = now or datetime.now(UTC)
    due = (now - settle).date() - timedelta(days=1)  # the newest day that is over
    try:
        known = kept_through(store, catalogue)
        if known is not None and known >= due:
            return None
        result = None
        if store.query(_BEHIND, {"catalogue": catalogue, "due": literal(due)}):
            result = rollup(store, minter, now=now, settle=settle, limit=limit)
        if result is None or not result.left:
            keep_through(store, catalogue, due)
        return result
    except Exception:  # derived data must never cost the session end
        log.exception("the catalogue's daily totals were not brought up to date")
        return None
