"""The console's sessions page: a page of the catalogue and its totals, at a cost that stays flat.

Sorting every catalogue entry to keep 25, and summing every entry's cost for
the totals, grows with the store. This module reads the page the way
``trails sessions`` does (``trails.audit.sessions_page``): the catalogue's
start days, newest first (a few hundred small nodes), then their minutes and
seconds, and the entries of a run of the newest seconds at a time until the page
is full (how many sessions a day, or a second, holds does not matter). The totals say what they cover:

- no filter: the catalogue's daily totals (``trails.catalogue.totals``, kept by
  the sealer as sessions end): the running totals, the totals of the days after
  them and the entries of the days not totalled yet (today's: their figures
  kept by the console between pages, see ``_open_day``), one row per model
  each, as the pack's ``cost-by-model`` adds them up; and the count of
  sessions from the daily counts kept with those totals (the sessions that ended
  on the days totalled, the entries of the days not totalled yet) plus the
  sessions that have not ended (their summaries typed
  ``trails:OpenSessionSummary``: one index lookup each);
- a time range alone: the entries started in it (each one's figures read);
- any other filter (principal, status: the outcome, planner, model, text), or a token that
  reads only part of the store: every catalogue entry of the time range is
  read once, and the page says so.

Every filter value is a bound parameter; the only text spliced into a query is
a constant of this module or a ``LIMIT`` this module computes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from trails.audit.sessions_page import BOUND, walk
from trails.catalogue.entries import OUTCOME_FILTER, OUTCOME_SPARQL
from trails.prov.iri import agent_iri
from trails.server.console.base import Console, ConsoleError, Login
from trails.store import Solutions
from trails.store.terms import IRI, Term, to_python

__all__ = ["FILTERS", "PAGE_SIZE", "Listing", "listing"]

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
_RANGE = """
      FILTER(COALESCE(?started >= $since, true))
      FILTER(COALESCE(?started < $until, true))
#FILTER"""
#: one clause per filter, in the text only when its value is given (each value bound)
_CLAUSES = {
    "principal": "FILTER EXISTS { GRAPH ?catalogue { ?entry prov:wasAttributedTo $principal } }",
    # the outcome (a session whose run failed is failed, though it ended ok)
    "status": OUTCOME_FILTER,
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
    + """SELECT ?session ?principal ?label ?started ?ended ?outcome ?outcomeReason ?activities ?planner
       ?stopReason ?costUSD ?inputTokens ?outputTokens ?sealed
       (GROUP_CONCAT(DISTINCT ?modelLabel; separator=", ") AS ?models)
       $status $since $until $model $text #BOUND
WHERE {
  { SELECT ?entry ?started $principal $status $since $until $planner $model $text #BOUND
      WHERE {
#ENTRIES
    } ORDER BY DESC(?started) ?entry #PAGE
  }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:summaryOf ?session } }
  OPTIONAL { GRAPH ?catalogue { ?entry prov:wasAttributedTo ?principal } }
  OPTIONAL { GRAPH ?catalogue { ?entry rdfs:label ?entryLabel } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:sessionEnded ?ended } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:sessionStatus ?endStatus } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:sessionOutcome ?storedOutcome } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:outcomeReason ?storedReason } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:activityCount ?activities } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:sessionStopReason ?stopReason } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:totalCostUSD ?costUSD } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:totalInputTokens ?inputTokens } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:totalOutputTokens ?outputTokens } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:sealed ?sealed } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:planner ?planner } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:usedModel/rdfs:label ?modelLabel } }
  BIND(STRAFTER(STR(?entryLabel), "summary of ") AS ?label)
  BIND(#OUTCOME AS ?outcome)
  BIND(COALESCE(?storedReason, "") AS ?outcomeReason)
}
GROUP BY ?session ?principal ?label ?started ?ended ?outcome ?outcomeReason ?activities ?planner ?stopReason
         ?costUSD ?inputTokens ?outputTokens ?sealed $status $since $until $model $text #BOUND
ORDER BY DESC(?started) ?session
"""
).replace("#OUTCOME", OUTCOME_SPARQL)
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
_COUNT = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT (COUNT(?entry) AS ?n) WHERE { GRAPH ?catalogue { ?entry a trails:SessionSummary } }"""


#: the catalogue's days: whether each is totalled, what the running totals run through, and
#: whether every entry is dated (a few hundred rows: one per day, never one per session)
_ROLLUP_DAYS = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?day ?date ?totalled ?counted ?through ?running ?dated ?typed WHERE {
  GRAPH ?catalogue {
    ?catalogue trails:entriesDated ?dated .
    OPTIONAL { ?catalogue trails:openSummariesTyped ?typed }
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
#: the sessions that have not ended (running, or stopped before their end was written)
_OPEN_COUNT = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT (COUNT(?entry) AS ?n) WHERE { GRAPH ?catalogue { ?entry a trails:OpenSessionSummary } }"""
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
SELECT ?entry ?model ?inputTokens ?outputTokens ?costUSD $day WHERE {
  GRAPH ?catalogue {
    ?entry trails:endedOn $day ; trails:usage ?total .
    ?total trails:usedAgent ?model ;
             """
    + _FIGURES
    + """
  }
}"""
)
#: the sessions that ended on a day not totalled yet and when (what each page reads again)
_DAY_ENDS = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?entry ?ended $day WHERE {
  GRAPH ?catalogue { ?entry trails:endedOn $day OPTIONAL { ?entry trails:sessionEnded ?ended } }
}"""
#: one entry's figures, one row per model
_ENTRY_FIGURES = (
    """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?model ?inputTokens ?outputTokens ?costUSD $entry WHERE {
  GRAPH ?catalogue {
    $entry trails:usage ?total .
    ?total trails:usedAgent ?model ;
             """
    + _FIGURES
    + """
  }
}"""
)
ONE_BY_ONE = 8
"""Up to this many new sessions of a day not totalled are read one by one; more, the day."""


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
    bound = " ".join(f"${name}" for name in BOUND if f"${name}" in entries)
    return (
        template.replace("#ENTRIES", entries.replace("#FILTER", clauses))
        .replace("#PAGE", page)
        .replace("#BOUND", bound)
    )


def _walk(console: Console, params: dict[str, Term], wanted: int) -> list[dict[str, Any]]:
    """The newest ``wanted`` rows of the range, read as ``trails sessions`` reads them
    (``trails.audit.sessions_page.walk``): the start days, their minutes and their seconds,
    newest first, the entries of a run of the newest seconds at a time, never a whole
    minute nor every entry."""
    rows: list[dict[str, Any]] = []

    def run(pattern: str, bound: Mapping[str, Term], limit: int) -> int:
        text = _text(_ROWS, "\n      " + pattern + _RANGE, params, f"LIMIT {limit}")
        found = _rows(console.system.query(text, {**params, **bound}))
        rows.extend(found)
        return len(found)

    walk(console.system, params, wanted, run)
    return rows


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


def _counted(
    console: Console, days: list[dict[str, Any]], open_days: dict[str, tuple[int, Any]]
) -> int:
    """How many sessions the catalogue holds, from its daily counts: the sessions that ended
    on the days the running totals cover (``trails:runningSessions``), on each totalled day
    after them (``trails:sessionCount``) and on each day not totalled (``open_days``: their
    entries, as ``_open_day`` read them), and the sessions that have not ended (their
    summaries typed ``trails:OpenSessionSummary``). A few hundred rows, today's entries and
    the open sessions, whatever the store holds. A catalogue whose entries are not dated or
    typed, or totalled before counts were kept (``trails catalogue rollup`` brings it up to
    date; a session end does too, within a day), is counted entry by entry."""
    through = days[0].get("through") if days else None
    running = days[0].get("running") if days else None
    if (
        not days
        or not days[0].get("dated")
        or not days[0].get("typed")
        or (through is not None and running is None)
    ):
        count = _rows(console.system.query(_COUNT))
        return int(count[0].get("n") or 0) if count else 0
    sessions = int(running or 0)
    for day in _after(days):
        if day.get("totalled") is not None and day.get("counted") is not None:
            sessions += int(day["counted"])
        elif str(day["day"]) in open_days:
            sessions += open_days[str(day["day"])][0]
        else:
            sessions += _count(console, _ENDED_COUNT, str(day["day"]))
    found = _rows(console.system.query(_OPEN_COUNT))
    return sessions + (int(found[0].get("n") or 0) if found else 0)


def _after(days: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The catalogue's days after those its running totals cover (``_ROLLUP_DAYS`` rows)."""
    through = days[0].get("through") if days else None
    return [
        day
        for day in days
        if day.get("day") is not None
        and (through is None or day.get("date") is None or day["date"] > through)
    ]


def _open_day(console: Console, day: str) -> tuple[int, list[dict[str, Any]]]:
    """How many sessions ended on ``day``, a day not totalled yet, and their figures (one row
    per model each).

    The console keeps what it read of such a day (``Console.open_days``): each entry's end
    and figures. Each page reads the day's entries and their ends again (index lookups, no
    figures) and the figures only of the entries it has not read or whose end changed (a
    session summarised again); an entry no longer on the day is dropped. So a page reads
    the figures of the sessions that ended since the last one, not of every session of
    the day, and never shows figures older than the entry's end.
    """
    bound: dict[str, Term] = {"day": IRI.trusted(day)}
    ends = {
        str(r["entry"]): str(r.get("ended") or "")
        for r in _rows(console.system.query(_DAY_ENDS, bound))
    }
    known = console.open_days.get(day, {})
    kept = {e: known[e] for e, end in ends.items() if e in known and known[e][0] == end}
    fresh = [e for e in ends if e not in kept]
    if len(fresh) > ONE_BY_ONE:
        by_entry: dict[str, list[dict[str, Any]]] = {}
        for row in _rows(console.system.query(_DAY_ENTRIES, bound)):
            by_entry.setdefault(str(row["entry"]), []).append(row)
        kept.update((e, (ends[e], by_entry.get(e, []))) for e in fresh)
    else:
        for e in fresh:
            figures = _rows(console.system.query(_ENTRY_FIGURES, {"entry": IRI.trusted(e)}))
            kept[e] = (ends[e], figures)
    console.open_days[day] = kept
    return len(ends), [row for _, figures in kept.values() for row in figures]


def _rolled_up(console: Console) -> dict[str, Any]:
    """Every session's totals from the catalogue's daily totals: the running totals, the
    totals of the days after them, and the entries of the days not totalled yet (today's,
    typically: ``_open_day``); one row per model each. A catalogue whose entries are not
    dated yet (``trails catalogue rollup`` dates them) is read through the pack's
    ``cost-by-model``."""
    days = _rows(console.system.query(_ROLLUP_DAYS))
    dated = bool(days and days[0].get("dated"))
    open_days = {
        str(day["day"]): _open_day(console, str(day["day"]))
        for day in (_after(days) if dated else [])
        if not day.get("totalled")
    }
    for gone in set(console.open_days) - set(open_days):  # totalled since: forget it
        console.open_days.pop(gone, None)
    sessions = _counted(console, days, open_days)
    if not dated:
        query = console.pack.get("cost-by-model")
        if query is None:
            raise ConsoleError("the query pack has no cost-by-model query")
        figures = _rows(query.run(console.system))
    else:
        through = days[0].get("through")
        figures = _rows(console.system.query(_RUNNING)) if through is not None else []
        for day in _after(days):
            if str(day["day"]) in open_days:
                figures += open_days[str(day["day"])][1]
            else:
                totalled = {"day": IRI.trusted(str(day["day"]))}
                figures += _rows(console.system.query(_DAY_TOTALS, totalled))
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
                " the sessions that ended, and those that have not; a filter counts every"
                " entry)"
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
