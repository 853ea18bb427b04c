"""The console's sessions page: a page of the catalogue and its totals, at a cost that stays flat.

Sorting every catalogue entry to keep 25, and summing every entry's cost for
the totals, grows with the store. This module reads the page the way
``trails sessions`` does (``trails.audit.sessions_page``): the catalogue's
start days, newest first (a few hundred small nodes), then their hours, minutes
and seconds, and the entries of a run of the newest seconds at a time until the page
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
from datetime import datetime
from decimal import Decimal
from typing import Any

from trails.audit.sessions_page import BOUND, walk
from trails.catalogue.entries import OUTCOME_FILTER, OUTCOME_SPARQL
from trails.prov.iri import agent_iri
from trails.server.console.base import Console, ConsoleError, Login
from trails.store import Solutions
from trails.store.terms import IRI, Term, to_python

__all__ = ["FILTERS", "PAGE_SIZE", "SORTS", "STOP_REASONS", "Listing", "listing", "sort_key"]

PAGE_SIZE = 25
FILTERS = (
    "principal",
    "since",
    "until",
    "status",
    "stop",
    "planner",
    "model",
    "text",
    "cost_min",
    "cost_max",
    "duration_min",
    "duration_max",
)
#: the filters a day's entries cannot be narrowed by (each one reads every entry)
_NARROWING = (
    "principal",
    "status",
    "stop",
    "planner",
    "model",
    "text",
    "costMin",
    "costMax",
    "durationMin",
    "durationMax",
)
#: how the page names a filter that narrows it
_NAMED = {
    "status": "outcome",
    "stop": "stop reason",
    "costMin": "cost (from)",
    "costMax": "cost (to)",
    "durationMin": "duration (from)",
    "durationMax": "duration (to)",
}
#: the parameters a filter binds, projected by every query that may be given them
_PARAMS = "$principal $status $stop $since $until $planner $model $text " + (
    "$costMin $costMax $durationMin $durationMax"
)
#: those of them the rows' outer query projects (``?principal`` and ``?planner`` are its columns)
_OUTER = _PARAMS.replace("$principal ", "").replace("$planner ", "")

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
    # the label, or what the session was about: a run's goal or answer (its content graph)
    # (the label as the list shows it: the entry's own label is "summary of" it)
    "text": """FILTER(EXISTS { GRAPH ?catalogue {
        { ?entry rdfs:label ?entryLabelText BIND(STRAFTER(STR(?entryLabelText), "summary of ")
            AS ?entryName) }
        UNION { ?entry trails:summaryOf ?entrySession BIND(STR(?entrySession) AS ?entryName) }
        FILTER(CONTAINS(LCASE(?entryName), $text)) } }
      || EXISTS { GRAPH ?catalogue { ?entry trails:summaryOf ?textSession }
        GRAPH ?textSession { ?textRun trails:inSession ?textSession ; a trails:PlanRun }
        GRAPH ?textContent { { ?textRun trails:goal ?said } UNION { ?textRun trails:answer ?said } }
        FILTER(CONTAINS(LCASE(STR(?said)), $text)) })""",
    "stop": "FILTER EXISTS { GRAPH ?catalogue { ?entry trails:sessionStopReason $stop } }",
    # a session with no cost recorded yet (still open) is in no cost range
    "costMin": """FILTER EXISTS { GRAPH ?catalogue {
        ?entry trails:totalCostUSD ?costLow FILTER(?costLow >= $costMin) } }""",
    "costMax": """FILTER EXISTS { GRAPH ?catalogue {
        ?entry trails:totalCostUSD ?costHigh FILTER(?costHigh <= $costMax) } }""",
    # a duration is an ended session's: an open one is in no duration range
    "durationMin": """FILTER EXISTS { GRAPH ?catalogue {
        ?entry trails:sessionStarted ?fromLow ; trails:sessionEnded ?toLow
        FILTER(?toLow - ?fromLow >= $durationMin) } }""",
    "durationMax": """FILTER EXISTS { GRAPH ?catalogue {
        ?entry trails:sessionStarted ?fromHigh ; trails:sessionEnded ?toHigh
        FILTER(?toHigh - ?fromHigh <= $durationMax) } }""",
}
_ROWS = (
    _PREFIXES
    + """SELECT ?session ?principal ?label ?started ?ended ?outcome ?outcomeReason ?activities ?planner
       ?stopReason ?costUSD ?inputTokens ?outputTokens ?sealed
       (GROUP_CONCAT(DISTINCT ?modelLabel; separator=", ") AS ?models)
       #OUTER #BOUND
WHERE {
  { SELECT ?entry ?started #PARAMS #BOUND
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
         ?costUSD ?inputTokens ?outputTokens ?sealed #OUTER #BOUND
ORDER BY DESC(?started) ?session
"""
).replace("#OUTCOME", OUTCOME_SPARQL)
#: the figures the totals add up, one row per entry: summed here, exactly
_TOTALS = (
    _PREFIXES
    + """SELECT ?cost ?in ?out #PARAMS
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
#: what a session was about and how it ended: the goal of its first run, the answer of its last
#: one branch of ``_page_ends``: the runs of a session of the page, bound as ``$sN``
_ENDS_BRANCH = """{ GRAPH $sN { ?run trails:inSession $sN ; a trails:PlanRun ;
      prov:startedAtTime ?runStarted }
    BIND($sN AS ?session) }"""
#: the same for every catalogued session at once (a page sorted by goal or answer)
_ALL_ENDS = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?session ?runStarted ?goal ?answer WHERE {
  GRAPH ?catalogue { ?entry trails:summaryOf ?session }
  GRAPH ?session { ?run trails:inSession ?session ; a trails:PlanRun ; prov:startedAtTime ?runStarted }
  OPTIONAL { GRAPH ?goalGraph { ?run trails:goal ?goal } }
  OPTIONAL { GRAPH ?answerGraph { ?run trails:answer ?answer } }
}"""
SORTS = (
    "started",
    "duration",
    "session",
    "goal",
    "answer",
    "principal",
    "outcome",
    "stop",
    "planner",
    "models",
    "activities",
    "cost",
    "tokens",
    "sealed",
)
"""The columns a page may be sorted by (``started``, newest first, is the walk's own order)."""
STOP_REASONS = (
    "goal_achieved",
    "max_steps",
    "max_cost",
    "max_tokens",
    "max_wall_time",
    "error",
    "interrupted",
)
"""The stop reasons the filter offers: what planners record as ``trails:stopReason``, and
``interrupted`` (a run a stopped process cut short)."""

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


def _seconds(row: Mapping[str, Any]) -> float | None:
    """An ended session's duration in seconds (None: it has not ended)."""
    started, ended = row.get("started"), row.get("ended")
    if not isinstance(started, datetime) or not isinstance(ended, datetime):
        return None
    if (started.tzinfo is None) != (ended.tzinfo is None):
        return None
    return max((ended - started).total_seconds(), 0.0)


def sort_key(column: str, row: Mapping[str, Any]) -> tuple[int, Any]:
    """What ``row`` sorts on by ``column`` (one of ``SORTS``): rows with no value come last
    whichever way the page is sorted (the caller puts them there), the rest by value."""
    if column == "duration":
        value: Any = row.get("duration")
    elif column == "session":
        value = str(row.get("label") or row.get("session") or "").lower()
    elif column in ("goal", "answer", "principal", "outcome", "planner", "models"):
        value = str(row.get(column) or "").lower() or None
    elif column == "stop":
        value = row.get("stopReason") or None
    elif column == "cost":
        value = None if row.get("costUSD") is None else Decimal(str(row["costUSD"]))
    elif column == "tokens":
        tokens = (row.get("inputTokens"), row.get("outputTokens"))
        value = None if tokens == (None, None) else sum(int(t or 0) for t in tokens)
    elif column == "activities":
        value = row.get("activities")
    elif column == "sealed":
        value = bool(row.get("sealed"))
    else:
        started = row.get("started")
        value = started.timestamp() if isinstance(started, datetime) else None
    return (1, 0) if value is None else (0, value)


def _sorted(rows: list[dict[str, Any]], column: str, descending: bool) -> list[dict[str, Any]]:
    """``rows`` by ``column``, the rows without a value last; ties newest first."""
    newest = sorted(rows, key=lambda r: sort_key("started", r)[1], reverse=True)
    valued = [r for r in newest if sort_key(column, r)[0] == 0]
    empty = [r for r in newest if sort_key(column, r)[0] == 1]
    return sorted(valued, key=lambda r: sort_key(column, r)[1], reverse=descending) + empty


def _ends_of(found: list[dict[str, Any]]) -> tuple[str, str]:
    """The goal of the first run and the answer of the last run that has one."""
    runs = sorted(found, key=lambda r: str(r.get("runStarted") or ""))
    goals = [str(r["goal"]) for r in runs if r.get("goal")]
    answers = [str(r["answer"]) for r in runs if r.get("answer")]
    return (goals[0] if goals else "", answers[-1] if answers else "")


def _with_ends(console: Console, rows: list[dict[str, Any]], every: bool = False) -> None:
    """Give each row its ``goal``, ``answer`` and ``duration``: one small lookup per row (a
    page's rows), or, ``every``, one query for every catalogued session (a sort by them)."""
    by_session: dict[str, list[dict[str, Any]]] = {}
    if every:
        for found in _rows(console.system.query(_ALL_ENDS)):
            by_session.setdefault(str(found["session"]), []).append(found)
    elif rows:
        for found in _rows(_page_ends(console, rows)):
            by_session.setdefault(str(found["session"]), []).append(found)
    for row in rows:
        row["duration"] = _seconds(row)
        row["goal"], row["answer"] = _ends_of(by_session.get(str(row.get("session") or ""), []))


def _page_ends(console: Console, rows: list[dict[str, Any]]) -> object:
    """The runs of the rows' sessions with their goals and answers, in one query: a branch
    per session, each session a bound parameter (``$s0``, ``$s1`` ...; the text holds only
    their names). The store looks each run's goal and answer up by the run (an index
    lookup per run, whatever else the store holds)."""
    sessions = sorted({str(r["session"]) for r in rows if r.get("session")})
    if not sessions:
        return None
    names = [f"s{i}" for i in range(len(sessions))]
    branches = "\n  UNION ".join(_ENDS_BRANCH.replace("$sN", f"${n}") for n in names)
    text = (
        _PREFIXES
        + "SELECT ?session ?runStarted ?goal ?answer "
        + " ".join(f"${n}" for n in names)
        + " WHERE {\n  "
        + branches
        + """
  OPTIONAL { GRAPH ?goalGraph { ?run trails:goal ?goal } }
  OPTIONAL { GRAPH ?answerGraph { ?run trails:answer ?answer } }
}"""
    )
    bound: dict[str, Term] = {n: IRI.trusted(s) for n, s in zip(names, sessions, strict=True)}
    return console.system.query(text, bound)


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
        .replace("#PARAMS", _PARAMS)
        .replace("#OUTER", _OUTER)
    )


def _walk(console: Console, params: dict[str, Term], wanted: int) -> list[dict[str, Any]]:
    """The newest ``wanted`` rows of the range, read as ``trails sessions`` reads them
    (``trails.audit.sessions_page.walk``): the start days, their hours, minutes and seconds,
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


def listing(
    console: Console,
    login: Login,
    params: dict[str, Term],
    page: int,
    sort: tuple[str, bool] = ("started", True),
) -> Listing:
    """The ``page``-th page of the sessions the filter ``params`` selects, and its totals.

    Args:
        console: the console.
        login: whose page (its grant decides which sessions are listed).
        params: the filter, as bound parameters.
        page: from 1.
        sort: the column (one of ``SORTS``) and whether descending; newest first is the
            walk's own order, any other reads every entry of the time range once.

    Returns:
        The page's rows (at most ``PAGE_SIZE``, each with its goal, answer and duration),
        whether more follow, the totals and a sentence saying what they cover.
    """
    narrowed = [name for name in _NARROWING if name in params]
    ranged = "since" in params or "until" in params
    resorted = sort != ("started", True)
    if login.grant.universal and not narrowed and not resorted:
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
        _with_ends(console, rows[:PAGE_SIZE])
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
    column, descending = sort
    if column in ("goal", "answer"):
        _with_ends(console, rows, every=True)
    elif resorted:
        for row in rows:
            row["duration"] = _seconds(row)
    if resorted:
        rows = _sorted(rows, column, descending)
    named = [_NAMED.get(name, name) for name in narrowed]
    reasons = [f"filtered by {', '.join(named)}"] if narrowed else []
    if resorted:
        reasons.append(f"sorted by {column}")
    if not login.grant.universal:
        reasons.append("this token reads part of the store")
    why = ", ".join(reasons)
    covers = (
        f"{why}: the page and its totals read every catalogue entry"
        + (" of the time range" if ranged else "")
        + " (a narrower time range reads fewer)"
    )
    start = (page - 1) * PAGE_SIZE
    shown = rows[start : start + PAGE_SIZE]
    if column not in ("goal", "answer"):
        _with_ends(console, shown)
    return Listing(shown, len(rows) > start + PAGE_SIZE, totals, covers)
