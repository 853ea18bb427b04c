"""The catalogue's days and the totals kept on them: names, descriptions, and what a change removes.

Every ended summary points to the UTC day it ended on (a ``trails:CatalogueDay``,
``day_iri``). ``trails.catalogue.totals.rollup`` sums each day that is over into
``trails:DailyTotal`` nodes (``trails:totalsOf`` the day, marked
``trails:totalledAt``) and keeps one running total per agent
(``trails:RunningTotal``) over every day up to the catalogue's
``trails:runningThrough`` date, so a store-wide cost question reads one row per
agent, the totals of the few days after it, and the entries of the days not
totalled yet. This module is what the writers of summaries (the sealer, a
rebuild, retention) and the rollup share: a write that changes a summary of a
day removes that day's totals, and the running totals when they cover it,
``day_totals``, in the same write.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation
from typing import Any

from trails.prov.iri import Minter
from trails.prov.vocab import PROV, RDF, RDFS, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, XSD, Literal, Quad, literal, to_python

__all__ = [
    "cost_literal",
    "cost_of",
    "dated_mark",
    "day_iri",
    "day_of",
    "day_quads",
    "day_totals",
    "ended_day",
    "exact_sum",
    "hour_links",
    "hour_of_minute",
    "hour_quads",
    "keep_through",
    "kept_through",
    "running_quads",
    "start_day_iri",
    "start_quads_of",
    "stored_quads",
    "typed_mark",
]


# exact sums: wide enough that adding costs never rounds; stored to xsd:decimal's 18 places
_EXACT = Context(prec=80)
_PLACES = Decimal("1e-18")


def cost_of(term: Any) -> Decimal | None:
    """A cost as an exact ``Decimal`` from its lexical form (``None`` when it is no number).

    Costs are recorded as ``xsd:double`` (``repr`` of a float, the shortest text that
    reads back as it): summing their text in ``Decimal`` gives the same total in any
    order, where summing the floats does not (``0.006864`` or ``0.0068639999999999994``).
    """
    if not isinstance(term, Literal) or isinstance(to_python(term), bool):
        return None
    try:
        value = Decimal(term.value.strip())
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def cost_literal(total: Decimal) -> Literal:
    """A total cost as the ``xsd:decimal`` the catalogue stores (18 places at most, no
    exponent, no trailing zeros), so SPARQL ``SUM`` over totals is exact as well."""
    fixed = total.quantize(_PLACES, rounding=ROUND_HALF_EVEN, context=_EXACT)
    return Literal(format(fixed.normalize(context=_EXACT), "f"), XSD + "decimal")


def exact_sum(values: Iterable[Decimal]) -> Decimal:
    """The exact sum of ``values`` (no rounding, whatever their order)."""
    total = Decimal(0)
    for value in values:
        total = _EXACT.add(total, value)
    return total


# per store, per catalogue: the newest day over that this process found totalled through
_kept: weakref.WeakKeyDictionary[Any, dict[str, date]] = weakref.WeakKeyDictionary()
_kept_lock = threading.Lock()


def kept_through(store: Store, catalogue: IRI) -> date | None:
    """The day through which this process last found ``catalogue``'s days totalled."""
    with _kept_lock:
        try:
            return _kept.get(store, {}).get(str(catalogue))
        except TypeError:  # a store that cannot be weakly referenced: never known
            return None


def keep_through(store: Store, catalogue: IRI, day: date | None) -> None:
    """Note (or, with ``None``, forget) the day ``catalogue``'s days are totalled through."""
    with _kept_lock:
        try:
            known = _kept.setdefault(store, {})
        except TypeError:
            return
        if day is None:
            known.pop(str(catalogue), None)
        else:
            known[str(catalogue)] = day


def dated_mark(catalogue: IRI) -> Quad:
    """The mark that every ended summary of ``catalogue`` points to its day
    (``trails:entriesDated``): written by ``trails.catalogue.totals.rollup`` once it has
    dated every entry, and by a full ``rebuild``."""
    return Quad(catalogue, T.entriesDated, literal(True), catalogue)


def typed_mark(catalogue: IRI) -> Quad:
    """The mark that every summary of ``catalogue`` without an end is typed
    ``trails:OpenSessionSummary`` (``trails:openSummariesTyped``): written by
    ``trails.catalogue.totals.rollup`` once it has typed them, and by a full ``rebuild``;
    summaries written since are typed when their session starts."""
    return Quad(catalogue, T.openSummariesTyped, literal(True), catalogue)


def day_iri(catalogue: IRI, day: date) -> IRI:
    """The IRI of a catalogue day (``<catalogue>:day:YYYY-MM-DD``)."""
    return Minter.part(catalogue, f"day:{day.isoformat()}")


def start_day_iri(catalogue: IRI, day: date) -> IRI:
    """The IRI of a start day (``<catalogue>:started:YYYY-MM-DD``)."""
    return Minter.part(catalogue, f"started:{day.isoformat()}")


def start_quads_of(catalogue: IRI, entry: IRI, started: Any) -> list[Quad]:
    """Where the sessions page finds an entry by its start: its UTC second, in its UTC minute,
    in its UTC hour, in its UTC day.

    ``<catalogue>:started:2026-11-27T140305`` (a ``trails:StartSecond``) belongs to
    ``<catalogue>:started:2026-11-27T1403`` (a ``trails:StartMinute``), which belongs to
    ``<catalogue>:started:2026-11-27T14`` (a ``trails:StartHour``), which belongs to
    ``<catalogue>:started:2026-11-27`` (a ``trails:StartDay``); the IRIs sort in time
    order, so the newest sessions are found by walking days, hours, minutes, then seconds,
    from the newest, never by sorting every entry nor reading a whole day's minutes. Twelve
    quads, the same for every start (the nodes are shared: writing one again changes
    nothing). Entries written before seconds existed point to their minute
    (``trails:startedInMinute``) instead, and minutes written before hours existed belong
    to their day (``trails:minuteOf``; ``hour_links`` moves them to their hour). Nothing
    for a start that is no dateTime.
    """
    value = to_python(started) if isinstance(started, Literal) else started
    if not isinstance(value, datetime):
        return []
    at = (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    day = start_day_iri(catalogue, at.date())
    hour = Minter.part(catalogue, f"started:{at:%Y-%m-%dT%H}")
    minute = Minter.part(catalogue, f"started:{at:%Y-%m-%dT%H%M}")
    second = Minter.part(catalogue, f"started:{at:%Y-%m-%dT%H%M%S}")
    return [
        Quad(entry, T.startedInSecond, second, catalogue),
        Quad(second, RDF.type, T.StartSecond, catalogue),
        Quad(second, RDF.type, PROV.Entity, catalogue),
        Quad(second, T.secondOf, minute, catalogue),
        Quad(minute, RDF.type, T.StartMinute, catalogue),
        Quad(minute, RDF.type, PROV.Entity, catalogue),
        Quad(minute, T.minuteOfHour, hour, catalogue),
        *hour_quads(catalogue, hour, day),
    ]


def hour_quads(catalogue: IRI, hour: IRI, day: IRI) -> list[Quad]:
    """The description of a start hour and of the start day it belongs to."""
    return [
        Quad(hour, RDF.type, T.StartHour, catalogue),
        Quad(hour, RDF.type, PROV.Entity, catalogue),
        Quad(hour, T.hourOf, day, catalogue),
        Quad(day, RDF.type, T.StartDay, catalogue),
        Quad(day, RDF.type, PROV.Entity, catalogue),
    ]


def hour_of_minute(minute: IRI | str) -> IRI | None:
    """The start hour a start minute's IRI names (``<catalogue>:started:YYYY-MM-DDTHHMM`` ->
    ``<catalogue>:started:YYYY-MM-DDTHH``), ``None`` for another IRI."""
    text = str(minute)
    _, sep, tail = text.rpartition(":started:")
    if not sep or len(tail) != len("YYYY-MM-DDTHHMM"):
        return None
    try:
        datetime.strptime(tail, "%Y-%m-%dT%H%M")
    except ValueError:
        return None
    return IRI.trusted(text[:-2])


_PRE_HOUR = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?minute ?day $catalogue WHERE { GRAPH $catalogue { ?minute trails:minuteOf ?day } }
"""


def hour_links(store: Store, catalogue: IRI) -> tuple[list[Quad], list[Quad]]:
    """``(add, remove)`` that move the start minutes written before hours existed (a
    ``trails:minuteOf`` their day) to their hour (``trails:minuteOfHour``, the hour
    ``trails:hourOf`` the day), so the sessions page reads their day an hour at a time."""
    found = store.query(_PRE_HOUR, {"catalogue": catalogue})
    assert isinstance(found, Solutions)
    add: list[Quad] = []
    remove: list[Quad] = []
    for minute, day, _ in found.rows:
        hour = hour_of_minute(str(minute))
        if hour is None or not isinstance(day, IRI):
            continue
        node, of = IRI.trusted(str(minute)), IRI.trusted(str(day))
        add += [Quad(node, T.minuteOfHour, hour, catalogue), *hour_quads(catalogue, hour, of)]
        remove.append(Quad(node, T.minuteOf, of, catalogue))
    return list(dict.fromkeys(add)), remove


def day_of(node: IRI | str, *, part: str = "day") -> date | None:
    """The date a day IRI names (``None`` for another IRI); ``part="started"`` for a start
    day (``start_day_iri``)."""
    _, _, tail = str(node).rpartition(f":{part}:")
    try:
        return date.fromisoformat(tail)
    except ValueError:
        return None


def ended_day(ended: Any) -> date | None:
    """The UTC day of an ``xsd:dateTime`` literal (``None`` for anything else)."""
    value = to_python(ended) if isinstance(ended, Literal) else ended
    if not isinstance(value, datetime):
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC).date()


def day_quads(catalogue: IRI, day: date) -> list[Quad]:
    """The description of a catalogue day (written with each summary that points to it)."""
    node = day_iri(catalogue, day)
    return [
        Quad(node, RDF.type, T.CatalogueDay, catalogue),
        Quad(node, RDF.type, PROV.Entity, catalogue),
        Quad(node, RDFS.label, Literal(f"sessions that ended on {day.isoformat()}"), catalogue),
        Quad(node, T.day, literal(day), catalogue),
    ]


_DAY_TOTALS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?s ?p ?o $catalogue $day WHERE {
  GRAPH $catalogue {
    { $day trails:totalledAt ?o BIND($day AS ?s) BIND(trails:totalledAt AS ?p) }
    UNION
    { $day trails:sessionCount ?o BIND($day AS ?s) BIND(trails:sessionCount AS ?p) }
    UNION
    { ?s trails:totalsOf $day ; ?p ?o }
  }
}
"""

_RUNNING = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?s ?p ?o $catalogue WHERE {
  GRAPH $catalogue {
    { $catalogue trails:runningThrough ?o BIND($catalogue AS ?s) BIND(trails:runningThrough AS ?p) }
    UNION
    { $catalogue trails:runningSessions ?o
      BIND($catalogue AS ?s) BIND(trails:runningSessions AS ?p) }
    UNION
    { ?s a trails:RunningTotal ; ?p ?o }
  }
}
"""


def stored_quads(result: object, catalogue: IRI) -> list[Quad]:
    """The quads of ``catalogue`` an ``?s ?p ?o`` query read (its first three columns)."""
    assert isinstance(result, Solutions)
    return [
        Quad(IRI.trusted(str(r[0])), IRI.trusted(str(r[1])), r[2], catalogue)  # type: ignore[arg-type]
        for r in result.rows
        if r[0] is not None and r[1] is not None and r[2] is not None
    ]


def running_quads(store: Store, catalogue: IRI) -> tuple[date | None, list[Quad]]:
    """The running totals as stored: the date they run through, and their quads."""
    quads = stored_quads(store.query(_RUNNING, {"catalogue": catalogue}), catalogue)
    through = [to_python(q.object) for q in quads if q.predicate == T.runningThrough]
    days = [d for d in through if isinstance(d, date)]
    return (max(days) if days else None), quads


def day_totals(store: Store, catalogue: IRI, days: Iterable[IRI]) -> list[Quad]:
    """What a write that changes a summary of ``days`` removes with it: their
    ``trails:DailyTotal`` nodes, ``totalledAt`` marks and session counts, and the running
    totals (and their session count) when they run through one of those days."""
    out: list[Quad] = []
    earliest: date | None = None
    for day in dict.fromkeys(days):
        out += stored_quads(
            store.query(_DAY_TOTALS, {"catalogue": catalogue, "day": day}), catalogue
        )
        when = day_of(day)
        if when is not None and (earliest is None or when < earliest):
            earliest = when
    if earliest is not None:
        through, running = running_quads(store, catalogue)
        if through is not None and earliest <= through:
            out += running
    if out:  # totals go: the next session end looks at the days again
        keep_through(store, catalogue, None)
    return out
