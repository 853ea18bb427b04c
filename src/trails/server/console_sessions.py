"""The console's sessions page: a page of the catalogue and its totals, at a cost that stays flat.

Sorting every catalogue entry to keep 25, and summing every entry's cost for
the totals, grows with the store. This module reads the page the way
``trails sessions`` does (``trails.audit.sessions_page``): the catalogue's
start days, newest first (a few hundred small nodes), then the entries of one
day at a time, until the page is full. The totals say what they cover:

- no filter: the catalogue's daily totals (``trails.catalogue.totals``, kept by
  the sealer as sessions end): the running totals, the totals of the days after
  them and the entries of the days not totalled yet (today's), one row per
  model each, as the pack's ``cost-by-model`` adds them up; and the count of
  sessions from the daily counts kept with those totals (the sessions that ended
  on the days totalled, the entries of the days not totalled yet) plus the
  sessions of the newest start days that have not ended (a session that
  started before them and never ended is left out, and the page says so);
- a time range alone: the entries started in it (each one's figures read);
- any other filter (principal, status, planner, model, text), or a token that
  reads only part of the store: every catalogue entry of the time range is
  read once, and the page says so.

Every filter value is a bound parameter; the only text spliced into a query is
a constant of this module or a ``LIMIT`` this module computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from trails.prov.iri import agent_iri
from trails.server.console_base import Console, ConsoleError, Login
from trails.store import Solutions
from trails.store.terms import IRI, Term, to_python

__all__ = ["FILTERS", "OPEN_DAYS", "PAGE_SIZE", "Listing", "listing"]

PAGE_SIZE = 25
FILTERS = ("principal", "since", "until", "status", "planner", "model", "text")
#: the filters a day's entries cannot be narrowed by (each one reads every entry)
_NARROWING = ("principal", "status", "planner", "model", "text")

_PREFIXES = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""
#: every entry of the time range (the one pass a narrowing filter costs)
_ALL = """
      GRAPH ?catalogue { ?entry trails:sessionStarted ?started }
      FILTER(COALESCE(?started >= $since, true))
      FILTER(COALESCE(?started < $until, true))
#FILTER"""
#: the entries of one start day (its minutes, then their entries: index lookups)
_DAY = """
      GRAPH ?catalogue {
        ?minute trails:minuteOf $day .
        ?entry trails:startedInMinute ?minute ; trails:sessionStarted ?started }
      FILTER(COALESCE(?started >= $since, true))
      FILTER(COALESCE(?started < $until, true))
#FILTER"""
#: entries written before start minutes existed (older than every dated one)
_UNDATED = """
      GRAPH ?catalogue { ?entry trails:sessionStarted ?started
        FILTER NOT EXISTS { ?entry trails:startedInMinute ?anyMinute } }
      FILTER(COALESCE(?started >= $since, true))
      FILTER(COALESCE(?started < $until, true))
#FILTER"""
#: one clause per filter, in the text only when its value is given (each value bound)
_CLAUSES = {
    "principal": "FILTER EXISTS { GRAPH ?catalogue { ?entry prov:wasAttributedTo $principal } }",
    "status": "FILTER EXISTS { GRAPH ?catalogue { ?entry trails:sessionStatus $status } }",
    "planner": "FILTER EXISTS { GRAPH ?catalogue { ?entry trails:planner $planner } }",
    "model": """FILTER EXISTS { GRAPH ?catalogue {
        ?entry trails:usedModel/rdfs:label ?modelName
        FILTER(CONTAINS(LCASE(STR(?modelName)), $model)) } }""",
    "text": """FILTER EXISTS { GRAPH ?catalogue {
        { ?entry rdfs:label ?entryName } UNION { ?entry trails:summaryOf ?entryName }
        FILTER(CONTAINS(LCASE(STR(?entryName)), $text)) } }""",
}
_ROWS = (
    _PREFIXES
    + """SELECT ?session ?principal ?label ?started ?ended ?status ?activities ?planner
       ?stopReason ?costUSD ?inputTokens ?outputTokens ?sealed
       (GROUP_CONCAT(DISTINCT ?modelLabel; separator=", ") AS ?models)
       $since $until $model $text $day
WHERE {
  { SELECT ?entry ?started $principal $status $since $until $planner $model $text $day WHERE {
#ENTRIES
    } ORDER BY DESC(?started) ?entry #PAGE
  }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:summaryOf ?session } }
  OPTIONAL { GRAPH ?catalogue { ?entry prov:wasAttributedTo ?principal } }
  OPTIONAL { GRAPH ?catalogue { ?entry rdfs:label ?entryLabel } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:sessionEnded ?ended } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:sessionStatus ?status } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:activityCount ?activities } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:sessionStopReason ?stopReason } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:totalCostUSD ?costUSD } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:totalInputTokens ?inputTokens } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:totalOutputTokens ?outputTokens } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:sealed ?sealed } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:planner ?planner } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:usedModel/rdfs:label ?modelLabel } }
  BIND(STRAFTER(STR(?entryLabel), "summary of ") AS ?label)
}
GROUP BY ?session ?principal ?label ?started ?ended ?status ?activities ?planner ?stopReason
         ?costUSD ?inputTokens ?outputTokens ?sealed $since $until $model $text $day
ORDER BY DESC(?started) ?session
"""
)
#: the figures the totals add up, one row per entry: summed here, exactly
_TOTALS = (
    _PREFIXES
    + """SELECT ?cost ?in ?out $principal $status $since $until $planner $model $text
WHERE {
#ENTRIES
  OPTIONAL { GRAPH ?catalogue { ?entry trails:totalCostUSD ?cost } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:totalInputTokens ?in } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:totalOutputTokens ?out } }
}
"""
)
#: the start days, sorted here (newest first): the store's ORDER BY on IRIs reads their text
#: at each comparison, which grows with the store
_DAYS = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?day WHERE { GRAPH ?catalogue { ?day a trails:StartDay } }"""
_COUNT = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT (COUNT(?entry) AS ?n) WHERE { GRAPH ?catalogue { ?entry a trails:SessionSummary } }"""


#: the catalogue's days: whether each is totalled, what the running totals run through, and
#: whether every entry is dated (a few hundred rows: one per day, never one per session)
_ROLLUP_DAYS = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?day ?date ?totalled ?counted ?through ?running ?dated WHERE {
  GRAPH ?catalogue {
    ?catalogue trails:entriesDated ?dated .
    OPTIONAL { ?catalogue trails:runningThrough ?through }
    OPTIONAL { ?catalogue trails:runningSessions ?running }
    OPTIONAL { ?day a trails:CatalogueDay ; trails:day ?date
      OPTIONAL { ?day trails:totalledAt ?totalled OPTIONAL { ?day trails:sessionCount ?counted } } }
  }
}"""
#: the sessions that ended on a day not counted yet (an index lookup per entry of that day)
_ENDED_COUNT = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT (COUNT(?entry) AS ?n) $day WHERE { GRAPH ?catalogue { ?entry trails:endedOn $day } }
GROUP BY $day"""
#: the sessions started on a start day that have not ended (running, or never ended)
_OPEN_COUNT = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT (COUNT(?entry) AS ?n) $day WHERE {
  GRAPH ?catalogue {
    ?minute trails:minuteOf $day . ?entry trails:startedInMinute ?minute
    FILTER NOT EXISTS { ?entry trails:endedOn ?endDay } }
}
GROUP BY $day"""
OPEN_DAYS = 2
"""The newest start days whose sessions that have not ended the sessions count counts."""
_FIGURES = """trails:completionCount ?n ; trails:totalInputTokens ?inputTokens ;
             trails:totalOutputTokens ?outputTokens ; trails:totalCostUSD ?costUSD .
    FILTER EXISTS { ?model trails:modelId ?modelId ; trails:provider ?provider }"""
_RUNNING = (
    """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?model ?inputTokens ?outputTokens ?costUSD WHERE {
  GRAPH ?catalogue {
    ?total a trails:RunningTotal ; trails:totalAgent ?model ;
             """
    + _FIGURES
    + """
  }
}"""
)
_DAY_TOTALS = (
    """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?model ?inputTokens ?outputTokens ?costUSD $day WHERE {
  GRAPH ?catalogue {
    ?total trails:totalsOf $day ; trails:totalAgent ?model ;
             """
    + _FIGURES
    + """
  }
}"""
)
_DAY_ENTRIES = (
    """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?model ?inputTokens ?outputTokens ?costUSD $day WHERE {
  GRAPH ?catalogue {
    ?entry trails:endedOn $day ; trails:usage ?total .
    ?total trails:usedAgent ?model ;
             """
    + _FIGURES
    + """
  }
}"""
)


@dataclass
class Listing:
    """One sessions page: its rows, whether more follow, the totals and what they cover."""

    rows: list[dict[str, Any]]
    more: bool
    totals: dict[str, Any]
    covers: str


def _py(term: Term | None) -> Any:
    return None if term is None else to_python(term)


def _rows(result: object) -> list[dict[str, Any]]:
    if not isinstance(result, Solutions):
        return []
    return [{k: _py(v) for k, v in zip(result.variables, row, strict=True)} for row in result.rows]


def _text(template: str, entries: str, params: dict[str, Term], page: str = "") -> str:
    clauses = "".join(f"      {c}\n" for name, c in _CLAUSES.items() if name in params)
    return template.replace("#ENTRIES", entries.replace("#FILTER", clauses)).replace("#PAGE", page)


def _day_of(node: str) -> date | None:
    """The date a start day's IRI names (``<catalogue>:started:YYYY-MM-DD``), or None."""
    try:
        return date.fromisoformat(node.rpartition(":started:")[2])
    except ValueError:
        return None


def _moment(term: Term | None) -> datetime | None:
    value = _py(term)
    if not isinstance(value, datetime):
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)


def _walk(console: Console, params: dict[str, Term], wanted: int) -> list[dict[str, Any]]:
    """The newest ``wanted`` rows of the range: its start days, newest first, one at a time."""
    since, until = _moment(params.get("since")), _moment(params.get("until"))
    rows: list[dict[str, Any]] = []
    days = console.system.query(_DAYS)
    assert isinstance(days, Solutions)
    for day in sorted({str(row[0]) for row in days.rows}, reverse=True):
        when = _day_of(day)
        if when is None or (until is not None and when > until.date()):
            continue
        if since is not None and when < since.date():
            break
        text = _text(_ROWS, _DAY, params, f"LIMIT {wanted - len(rows)}")
        rows += _rows(console.system.query(text, {**params, "day": IRI.trusted(day)}))
        if len(rows) >= wanted:
            return rows
    text = _text(_ROWS, _UNDATED, params, f"LIMIT {wanted - len(rows)}")
    return rows + _rows(console.system.query(text, params))


def _summed(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The totals of rows of figures (``cost in out``): how many, USD (exact), tokens."""
    return {
        "sessions": len(rows),
        "costUSD": sum((Decimal(str(r.get("cost") or 0)) for r in rows), Decimal(0)),
        "inputTokens": sum(int(r.get("in") or 0) for r in rows),
        "outputTokens": sum(int(r.get("out") or 0) for r in rows),
    }


def _count(console: Console, text: str, day: str) -> int:
    found = _rows(console.system.query(text, {"day": IRI.trusted(day)}))
    return sum(int(r.get("n") or 0) for r in found)


def _counted(console: Console, days: list[dict[str, Any]]) -> int:
    """How many sessions the catalogue holds, from its daily counts: the sessions that ended
    on the days the running totals cover (``trails:runningSessions``), on each totalled day
    after them (``trails:sessionCount``) and on each day not totalled (its entries counted),
    and the sessions of the ``OPEN_DAYS`` newest start days that have not ended. A few
    hundred rows and today's entries, whatever the store holds. A catalogue whose entries
    are not dated, or totalled before counts were kept (``trails catalogue rollup`` counts
    its days), is counted entry by entry."""
    through = days[0].get("through") if days else None
    running = days[0].get("running") if days else None
    if not days or not days[0].get("dated") or (through is not None and running is None):
        count = _rows(console.system.query(_COUNT))
        return int(count[0].get("n") or 0) if count else 0
    sessions = int(running or 0)
    for day in days:
        if day.get("day") is None or (
            through is not None and day.get("date") is not None and day["date"] <= through
        ):
            continue
        if day.get("totalled") is not None and day.get("counted") is not None:
            sessions += int(day["counted"])
        else:
            sessions += _count(console, _ENDED_COUNT, str(day["day"]))
    started = _rows(console.system.query(_DAYS))
    newest = sorted({str(r["day"]) for r in started if r.get("day")}, reverse=True)
    for start_day in newest[:OPEN_DAYS]:
        sessions += _count(console, _OPEN_COUNT, start_day)
    return sessions


def _rolled_up(console: Console) -> dict[str, Any]:
    """Every session's totals from the catalogue's daily totals: the running totals, the
    totals of the days after them, and the entries of the days not totalled yet (today's,
    typically); one row per model each. A catalogue whose entries are not dated yet
    (``trails catalogue rollup`` dates them) is read through the pack's ``cost-by-model``."""
    days = _rows(console.system.query(_ROLLUP_DAYS))
    sessions = _counted(console, days)
    if not days or not days[0].get("dated"):
        query = console.pack.get("cost-by-model")
        if query is None:
            raise ConsoleError("the query pack has no cost-by-model query")
        figures = _rows(query.run(console.system))
    else:
        through = days[0].get("through")
        figures = _rows(console.system.query(_RUNNING)) if through is not None else []
        for day in days:
            if day.get("day") is None or (
                through is not None and day.get("date") is not None and day["date"] <= through
            ):
                continue
            text = _DAY_TOTALS if day.get("totalled") else _DAY_ENTRIES
            figures += _rows(console.system.query(text, {"day": IRI.trusted(str(day["day"]))}))
    return {
        "sessions": sessions,
        "costUSD": sum((Decimal(str(r.get("costUSD") or 0)) for r in figures), Decimal(0)),
        "inputTokens": sum(int(r.get("inputTokens") or 0) for r in figures),
        "outputTokens": sum(int(r.get("outputTokens") or 0) for r in figures),
    }


def _owned_by(console: Console, login: Login) -> str | None:
    """The agent IRI whose sessions an ``own-sessions`` grant reads (None: no such pattern)."""
    if not login.grant.own_sessions:
        return None
    return str(agent_iri(login.grant.principal, console.base_iri))


def _readable(console: Console, login: Login, row: dict[str, Any]) -> bool:
    """Whether the login's grant reads the row's session (a pattern, or its own session)."""
    session = str(row.get("session") or "")
    if not session or (console.reserved is not None and session == str(console.reserved)):
        return False
    if login.grant.matches(session):
        return True
    owner = _owned_by(console, login)
    return owner is not None and str(row.get("principal") or "") == owner


def listing(console: Console, login: Login, params: dict[str, Term], page: int) -> Listing:
    """The ``page``-th page of the sessions the filter ``params`` selects, and its totals.

    Args:
        console: the console.
        login: whose page (its grant decides which sessions are listed).
        params: the filter, as bound parameters.
        page: from 1.

    Returns:
        The page's rows (at most ``PAGE_SIZE``), whether more follow, the totals and a
        sentence saying what they cover.
    """
    narrowed = [name for name in _NARROWING if name in params]
    ranged = "since" in params or "until" in params
    if login.grant.universal and not narrowed:
        rows = _walk(console, params, page * PAGE_SIZE + 1)[(page - 1) * PAGE_SIZE :]
        if ranged:
            figures = _rows(console.system.query(_text(_TOTALS, _ALL, params), params))
            totals = _summed(figures)
            covers = "the totals add up the sessions started in the time range"
        else:
            totals = _rolled_up(console)
            covers = (
                "the totals are every session's, from the catalogue's daily totals (the count:"
                f" the sessions that ended, and those of the {OPEN_DAYS} newest start days"
                " that have not; a filter counts every entry)"
            )
        return Listing(rows[:PAGE_SIZE], len(rows) > PAGE_SIZE, totals, covers)
    # a narrowing filter, or a grant on part of the store: one pass over the range's entries
    rows = _rows(console.system.query(_text(_ROWS, _ALL, params), params))
    if not login.grant.universal:
        rows = [r for r in rows if _readable(console, login, r)]
    totals = _summed(
        [
            {"cost": r.get("costUSD"), "in": r.get("inputTokens"), "out": r.get("outputTokens")}
            for r in rows
        ]
    )
    why = f"filtered by {', '.join(narrowed)}" if narrowed else "this token reads part of the store"
    covers = (
        f"{why}: the page and its totals read every catalogue entry"
        + (" of the time range" if ranged else "")
        + " (a narrower time range reads fewer)"
    )
    start = (page - 1) * PAGE_SIZE
    return Listing(rows[start : start + PAGE_SIZE], len(rows) > start + PAGE_SIZE, totals, covers)
