"""The console's Controls page: which controls passed and which were violated, and where.

Controls (``trails.controls``) record each evaluation as sealed PROV evidence: a
``trails:ControlEvaluation`` with its outcome, the control's definition it used (the
controls that passed together share one, which used each definition), the session it
read (none for a store-wide control) and a ``trails:ControlFinding`` per violation
(subject at fault, session, message). This module reads those records back for
the page (``/console/controls``) and for a session's page, with bound parameters only.

A period selects sessions by their start; for each control the page counts the sessions
whose newest evaluation of it passed, violated it, or could not be completed (timed
out, error), and those of the period it has not evaluated; a trend per day (by session
start) counts passed and violated outcomes; the drill-down lists one control's findings
(session, subject, message), each linked to its session's page. A store-wide control
counts its evaluations ended in the period, and its findings are listed under the
sessions they name.

A token reads only its grant: findings graphs are read through the console's system view
and only what concerns the sessions the token reads is kept (a scoped token sees the
evaluations of its sessions and a store-wide control's findings naming one of them,
never a store-wide control's overall outcome).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from trails.prov.vocab import T
from trails.server.console.base import Console, ConsoleError, Login
from trails.server.console.svg import bar_chart
from trails.store import Solutions, Store
from trails.store.terms import IRI, Literal, Term, instant, to_python

__all__ = [
    "ControlRow",
    "Finding",
    "Overview",
    "controls_page",
    "overview",
    "parse_period",
    "session_controls",
]

_XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"
_PREFIXES = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX trails: <https://w3id.org/trails/ns#>
"""
_SESSIONS = (
    _PREFIXES
    + """SELECT ?g ?started $cls $from $until WHERE {
  GRAPH ?g { ?g a $cls ; prov:startedAtTime ?started }
  FILTER(?started >= $from && ?started < $until)
}"""
)
_EVALUATION = """
    ?evaluation a trails:ControlEvaluation ; trails:outcome ?outcome ;
                prov:endedAtTime ?ended ; prov:used ?definition .
    GRAPH ?defined {
      ?definition a trails:Control ; trails:controlId ?control ; trails:severity ?severity .
      OPTIONAL { ?definition rdfs:label ?title }
      OPTIONAL { ?definition trails:controlScope ?scope }
    }
    OPTIONAL {
      ?finding prov:wasGeneratedBy ?evaluation ; a trails:ControlFinding .
      OPTIONAL { ?finding trails:findingSubject ?subject }
      OPTIONAL { ?finding trails:findingSession ?findingSession }
      OPTIONAL { ?finding trails:findingMessage ?message }
    }"""
_COLUMNS = (
    "?evaluation ?control ?title ?severity ?scope ?outcome ?ended ?session "
    "?finding ?subject ?findingSession ?message"
)
_ALL = (
    _PREFIXES
    + f"SELECT {_COLUMNS} WHERE {{\n  GRAPH ?g {{{_EVALUATION}\n"
    + "    OPTIONAL { ?evaluation trails:evaluatedSession ?session }\n  }\n}"
)
_OF_SESSION = (
    _PREFIXES
    + f"SELECT {_COLUMNS} $s WHERE {{\n  GRAPH ?g {{\n"
    + "    { ?evaluation trails:evaluatedSession $s . BIND($s AS ?session) }\n"
    + "    UNION\n"
    + "    { ?named trails:findingSession $s ; prov:wasGeneratedBy ?evaluation .\n"
    + "      FILTER NOT EXISTS { ?evaluation trails:evaluatedSession ?other } }"
    + f"{_EVALUATION}\n  }}\n}}"
)
_NOT_PASSED = ("timed out", "error")


@dataclass(frozen=True)
class Finding:
    """One violation: the control, its severity, the session and subject at fault."""

    control: str
    severity: str
    session: str
    subject: str
    message: str
    evaluated: str


@dataclass
class ControlRow:
    """One control's outcomes over the period (``not_evaluated`` is None for a store-wide
    control: it reads the store, not a session)."""

    id: str
    title: str
    severity: str
    scope: str
    passed: int = 0
    violated: int = 0
    failed: int = 0
    not_evaluated: int | None = 0
    findings: int = 0


@dataclass
class Overview:
    """What the Controls page shows."""

    start: date | None
    end: date | None
    sessions: int
    controls: list[ControlRow]
    days: list[tuple[str, int, int]]
    findings: list[Finding]
    control: str | None = None
    violating: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class _Evaluation:
    iri: str
    control: str
    title: str
    severity: str
    scope: str
    outcome: str
    ended: str
    session: str | None
    findings: list[tuple[str, str, str]] = field(default_factory=list)


def _text(term: Term | None) -> str:
    if term is None:
        return ""
    value = to_python(term)
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def _evaluations(result: object) -> list[_Evaluation]:
    """The rows (one per finding) grouped by evaluation and control (the controls of one
    evaluation that passed share one activity), newest first."""
    assert isinstance(result, Solutions)
    found: dict[tuple[str, str], _Evaluation] = {}
    seen: set[tuple[tuple[str, str], str]] = set()
    for row in result:
        key = (str(row["evaluation"]), _text(row.get("control")))
        e = found.get(key)
        if e is None:
            session = row.get("session")
            e = found[key] = _Evaluation(
                iri=key[0],
                control=_text(row.get("control")),
                title=_text(row.get("title")),
                severity=_text(row.get("severity")),
                scope=_text(row.get("scope")) or ("session" if session else "store"),
                outcome=_text(row.get("outcome")),
                ended=_text(row.get("ended")),
                session=str(session) if session is not None else None,
            )
        finding = row.get("finding")
        if finding is not None and (key, str(finding)) not in seen:
            seen.add((key, str(finding)))
            where = row.get("findingSession")
            e.findings.append(
                (
                    str(where) if where is not None else (e.session or ""),
                    _text(row.get("subject")),
                    _text(row.get("message")),
                )
            )
    return sorted(found.values(), key=lambda e: (instant(e.ended), e.iri, e.control), reverse=True)


def parse_period(start: str, end: str) -> tuple[date | None, date | None]:
    """The period's first and last days (``YYYY-MM-DD``, either may be blank: unbounded).

    Raises:
        ConsoleError: a day that is not an ISO date, or an end before the start.
    """
    days: list[date | None] = []
    for name, text in (("from", start), ("to", end)):
        text = text.strip()
        if not text:
            days.append(None)
            continue
        try:
            days.append(date.fromisoformat(text))
        except ValueError:
            raise ConsoleError(f"{name} {text!r} is not a date (YYYY-MM-DD)") from None
    first, last = days
    if first is not None and last is not None and last < first:
        raise ConsoleError("the period ends before it starts")
    return first, last


def _moment(day: date | None, default: str) -> Literal:
    text = f"{day.isoformat()}T00:00:00Z" if day is not None else default
    return Literal(text, _XSD_DATETIME)


def overview(
    store: Store,
    readable: set[str] | None,
    start: date | None = None,
    end: date | None = None,
    control: str | None = None,
) -> Overview:
    """The controls' outcomes over the sessions started from ``start`` to ``end`` (days,
    inclusive; None: unbounded), and the trend per day and the findings (of ``control``
    alone when given).

    Args:
        store: reads the sessions and the findings graphs (every graph).
        readable: the session graphs the reader may read (None: every graph); nothing
            else is counted or listed.
        start: the period's first day.
        end: the period's last day.
        control: list only this control's findings (the drill-down).
    """
    until = end + timedelta(days=1) if end is not None else None
    params: dict[str, Term] = {
        "cls": T.Session,
        "from": _moment(start, "0001-01-01T00:00:00Z"),
        "until": _moment(until, "9999-12-31T00:00:00Z"),
    }
    result = store.query(_SESSIONS, params)
    assert isinstance(result, Solutions)
    started: dict[str, str] = {}
    for found in result:
        s = str(found["g"])
        if readable is None or s in readable:
            started[s] = _text(found.get("started"))[:10]
    low = start.isoformat() if start is not None else ""
    high = until.isoformat() if until is not None else "9999"
    rows: dict[str, ControlRow] = {}
    newest: dict[tuple[str, str], _Evaluation] = {}
    findings: list[Finding] = []
    for e in _evaluations(store.query(_ALL)):
        row = rows.get(e.control)
        if row is None:
            row = rows[e.control] = ControlRow(e.control, e.title, e.severity, e.scope)
        if e.session is not None:  # a session's control: its newest evaluation counts
            if e.session in started:
                newest.setdefault((e.control, e.session), e)
            continue
        named = [f for f in e.findings if f[0] in started]
        if readable is None and low <= e.ended < high:
            row.scope = "store"
            row.not_evaluated = None
            _count(row, e.outcome)
        for session, subject, message in named:
            findings.append(Finding(e.control, e.severity, session, subject, message, e.ended))
    days: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (cid, session), e in newest.items():
        row = rows[cid]
        _count(row, e.outcome)
        if control is not None and cid != control:
            pass  # the drill-down's trend is its control's
        elif e.outcome == "passed":
            days[started[session]][0] += 1
        elif e.outcome == "violated":
            days[started[session]][1] += 1
        for where, subject, message in e.findings:
            findings.append(Finding(cid, e.severity, where or session, subject, message, e.ended))
    for cid, row in rows.items():
        row.findings = sum(1 for f in findings if f.control == cid)
        if row.not_evaluated is not None:
            row.not_evaluated = len(started) - row.passed - row.violated - row.failed
    findings.sort(key=lambda f: (f.evaluated, f.control, f.session, f.subject), reverse=True)
    listed = [f for f in findings if control is None or f.control == control]
    per_session: dict[str, int] = defaultdict(int)
    for f in listed:
        per_session[f.session] += 1
    shown = [r for r in rows.values() if r.passed + r.violated + r.failed + r.findings]
    shown.sort(key=lambda r: (-r.violated, -r.findings, r.id))
    return Overview(
        start=start,
        end=end,
        sessions=len(started),
        controls=shown,
        days=[(d, p, v) for d, (p, v) in sorted(days.items())],
        findings=listed,
        control=control,
        violating=sorted(per_session.items(), key=lambda kv: (-kv[1], kv[0])),
    )


def _count(row: ControlRow, outcome: str) -> None:
    if outcome == "passed":
        row.passed += 1
    elif outcome == "violated":
        row.violated += 1
    elif outcome in _NOT_PASSED:
        row.failed += 1


def session_controls(store: Store, session: IRI) -> list[dict[str, Any]]:
    """The controls evaluated on ``session`` (the newest evaluation of each, passed ones
    too) and the store-wide controls' findings naming it, one row per finding or outcome.
    The caller has checked that the reader may read ``session``."""
    rows: list[dict[str, Any]] = []
    shown: set[str] = set()
    for e in _evaluations(store.query(_OF_SESSION, {"s": session})):
        mine = [f for f in e.findings if e.session is not None or f[0] == str(session)]
        if e.session is not None:
            if e.control in shown:
                continue  # an older evaluation of the same control
            shown.add(e.control)
        base = {
            "control": e.control,
            "title": e.title,
            "severity": e.severity,
            "outcome": e.outcome,
            "evaluated": e.ended,
            "scope": "session" if e.session is not None else "store",
        }
        if not mine:
            rows.append({**base, "subject": "", "message": ""})
        for _, subject, message in mine:
            rows.append({**base, "subject": subject, "message": message})
    rows.sort(key=lambda r: (r["outcome"] == "passed", r["control"], r["subject"]))
    return rows


def _page(console: Console, login: Login, fields: dict[str, str]) -> dict[str, Any]:
    start, end = parse_period(fields.get("from", ""), fields.get("to", ""))
    control = fields.get("control", "").strip() or None
    data = overview(console.system, console.readable_sessions(login), start, end, control)
    of = f" of {control}" if control else ""
    chart = bar_chart(
        f"Violations{of} per day (by session start)", [(d, v) for d, _, v in data.days]
    )
    return {
        "data": data,
        "chart": chart,
        "period_from": start.isoformat() if start else "",
        "period_to": end.isoformat() if end else "",
    }


async def controls_page(console: Console, request: Request, login: Login) -> Response:
    """Controls × outcomes over a period, the trend per day, and the findings at fault."""
    fields = {k: v for k, v in request.query_params.items()}
    data = await asyncio.to_thread(_page, console, login, fields)
    return console.page(request, "controls.html.j2", login, **data)
