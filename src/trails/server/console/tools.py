"""The console's working pages: the query pack as forms, a SPARQL editor, verification,
compliance and charts.

- ``queries``: each pack query with its description and one field per
  parameter; the values are bound by the pack's own conversion (never spliced
  into the text) and the query runs under the login's grant, as
  ``/queries/NAME`` would run it; results as a table, or as CSV / JSON files.
- ``sparql``: the reader's own query, with the endpoint's limits (size, results,
  time) and its refusals (updates, ``SERVICE``), under the login's grant.
- ``verify``: ``trails verify`` (full, or quick: from the last checkpoint) over
  what the login may read: the whole store for a grant on every graph, the
  readable sessions one by one otherwise (a narrower grant never learns of
  another principal's session through a finding).
- ``compliance``: legal holds, erasure receipts, retention runs and the
  Article 12 map with each row's queries answered (their result counts).
- ``charts``: cost and calls per day and per model, failures per day, from the
  catalogue's summaries (one row per session, never the session graphs), and
  policy refusals per day.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import defaultdict
from decimal import Decimal
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from trails.catalogue.entries import OUTCOME_SPARQL
from trails.errors import QueryParameterError, QueryRefused, TrailsError
from trails.evidence.proofs import TreeHead
from trails.evidence.transparency import log_iri, read_head
from trails.evidence.verify import verify
from trails.server.console.base import Console, ConsoleError, Login
from trails.server.console.svg import bar_chart
from trails.server.sparql import analyse
from trails.store import Solutions
from trails.store.terms import IRI, to_python

__all__ = [
    "ARTICLE_12",
    "charts",
    "compliance",
    "head",
    "queries",
    "sparql",
    "verification",
]

ARTICLE_12: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Art. 12(1)", "automatic recording of events", ("sessions", "seals")),
    (
        "Art. 12(2)(a)",
        "situations that may present a risk",
        ("risk-situations", "terminations", "policy-denials", "failed-invocations"),
    ),
    (
        "Art. 12(2)(b)",
        "post-market monitoring",
        ("operations-by-day", "cost-by-model", "invocations-by-capability"),
    ),
    (
        "Art. 12(2)(c)",
        "monitoring of operation by deployers",
        ("operations-by-day", "sessions", "cost-by-principal"),
    ),
    ("Art. 14", "human oversight where decisions are recorded", ("policy-decisions",)),
    ("Art. 19(1), 26(6)", "logs kept at least six months", ("retention-runs", "legal-holds")),
)
"""The Article 12 map of docs/compliance.md: obligation, what it asks, the pack queries."""

_ERASURES = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?erasure ?at ?by ?reason ?erased WHERE {
  GRAPH ?g { ?erasure a trails:Erasure .
    OPTIONAL { ?erasure prov:startedAtTime ?at }
    OPTIONAL { ?erasure prov:wasAssociatedWith/trails:principalId ?by }
    OPTIONAL { ?erasure trails:erasureReason ?reason }
    OPTIONAL { ?erasure trails:erasedCount ?erased } }
} ORDER BY DESC(?at)"""
_DAYS = """PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?session ?started ?outcome ?cost ?model ?calls ?usd WHERE {
  GRAPH ?catalogue {
    ?entry trails:summaryOf ?session ; trails:sessionStarted ?started .
    OPTIONAL { ?entry trails:sessionOutcome ?storedOutcome }
    OPTIONAL { ?entry trails:sessionEnded ?ended }
    OPTIONAL { ?entry trails:sessionStatus ?endStatus }
    OPTIONAL { ?entry trails:sessionStopReason ?stopReason }
    OPTIONAL { ?entry trails:totalCostUSD ?cost }
    OPTIONAL { ?entry trails:usage ?usage . ?usage trails:usedAgent ?agent ;
               trails:completionCount ?calls . ?agent trails:modelId ?model
               OPTIONAL { ?usage trails:totalCostUSD ?usd } }
  }
  BIND(#OUTCOME AS ?outcome)
}""".replace("#OUTCOME", OUTCOME_SPARQL)
_REFUSALS = "policy-denials"
_FORMATS = {"csv": "text/csv; charset=utf-8", "json": "application/sparql-results+json"}


def _rows(result: object) -> tuple[list[str], list[list[str]]]:
    if not isinstance(result, Solutions):
        return [], []
    return result.variables, [
        ["" if t is None else str(to_python(t)) for t in row] for row in result.rows
    ]


async def queries(console: Console, request: Request, login: Login) -> Response:
    """The pack as forms; with ``name``, that query run with the given fields."""
    fields = dict(request.query_params)
    name = fields.pop("name", "")
    fmt = fields.pop("format", "html")
    chosen = console.pack.get(name) if name else None
    context: dict[str, Any] = {
        "pack": sorted(console.pack.values(), key=lambda q: q.name),
        "chosen": chosen,
        "values": fields,
        "columns": [],
        "rows": [],
        "message": "",
        "ran": False,
    }
    if name and chosen is None:
        raise ConsoleError(f"no query named {name!r} in the pack", 404)
    if chosen is not None and "run" in fields:
        fields.pop("run")
        values = {k: v for k, v in fields.items() if k in chosen.params and v != ""}
        reader = console.reader(login)
        text, failed, count, data = chosen.text, None, None, b""
        result: object = None
        try:
            params = chosen.bind(values)  # the pack's own conversion: bound, never spliced
            text = chosen.text_for(params)
            if fmt in _FORMATS or chosen.form in ("CONSTRUCT", "DESCRIBE"):
                kind = fmt if fmt in _FORMATS else "turtle"
                data = await asyncio.to_thread(reader.query_to, text, params, format=kind)
            else:
                result = await asyncio.to_thread(reader.query, text, params)
                count = len(result) if isinstance(result, Solutions) else 1
        except (QueryParameterError, TrailsError) as exc:
            failed = str(exc)
        # logged like /queries/NAME before anything is shown (a failed write withholds it)
        await console.log_query(
            login, text, query_name=name, params=values, results=count, message=failed
        )
        if failed is not None:
            context["message"] = failed
        elif fmt in _FORMATS:
            return Response(
                data,
                media_type=_FORMATS[fmt],
                headers={"Content-Disposition": f'attachment; filename="{name}.{fmt}"'},
            )
        else:
            if data:
                context["graph_text"] = data.decode("utf-8", "replace")
            elif isinstance(result, bool):
                context["columns"], context["rows"] = ["answer"], [[str(result).lower()]]
            else:
                context["columns"], context["rows"] = _rows(result)
            context["ran"] = True
    return console.page(request, "queries.html.j2", login, **context)


async def sparql(console: Console, request: Request, login: Login) -> Response:
    """The SPARQL editor: the reader's own query under the endpoint's limits."""
    context: dict[str, Any] = {"query": "", "columns": [], "rows": [], "message": "", "ran": False}
    if request.method == "POST":
        fields = await console.form(request, login)
        text = fields.get("query", "")
        context["query"] = text
        failed, count = None, None
        graph_text: str | None = None
        result: object = None
        try:
            size = len(text.encode("utf-8"))
            if size > console.max_query_bytes:
                raise QueryRefused(
                    f"the query is {size} bytes, over the limit of {console.max_query_bytes}",
                    status=413,
                )
            info = await asyncio.to_thread(analyse, text, console.base_iri)  # no updates
            reader = console.reader(login)
            if info.form in ("CONSTRUCT", "DESCRIBE"):
                data = await asyncio.to_thread(reader.query_to, text, None, format="turtle")
                graph_text = data.decode("utf-8", "replace")
            else:
                result = await asyncio.to_thread(reader.query, text)
                count = len(result) if isinstance(result, Solutions) else 1
        except TrailsError as exc:
            failed = str(exc)
        await console.log_query(
            login, text[: console.max_query_bytes], results=count, message=failed
        )
        if failed is not None:
            context["message"] = failed
        else:
            if graph_text is not None:
                context["graph_text"] = graph_text
            elif isinstance(result, bool):
                context["columns"], context["rows"] = ["answer"], [[str(result).lower()]]
            else:
                context["columns"], context["rows"] = _rows(result)
            context["ran"] = True
    return console.page(request, "sparql.html.j2", login, **context)


def _verify(console: Console, login: Login, quick: bool) -> dict[str, Any]:
    readable = console.readable_sessions(login)
    if readable is None:
        report = verify(console.system, minter=console.minter, incremental=quick)
        findings = [
            {"kind": f.kind, "subject": f.subject, "session": f.session, "detail": f.detail}
            for f in report.findings
        ]
        return {
            "ok": report.ok,
            "mode": report.mode,
            "checked": report.graphs_checked,
            "seals": report.seals,
            "heads": report.heads,
            "findings": findings,
            "sessions": None,
        }
    findings, checked, seals, ok = [], 0, 0, True
    for session in sorted(readable):
        report = verify(console.system, session=IRI.trusted(session), minter=console.minter)
        ok = ok and report.ok
        checked += report.graphs_checked
        seals += report.seals
        findings += [
            {
                "kind": f.kind,
                "subject": f.subject,
                "session": f.session or session,
                "detail": f.detail,
            }
            for f in report.findings
            if f.kind not in ("chain", "signature")  # the chain spans others' sessions
        ]
    return {
        "ok": ok and not findings,
        "mode": "per session",
        "checked": checked,
        "seals": seals,
        "heads": [],
        "findings": findings,
        "sessions": len(readable),
    }


def _head(console: Console, login: Login) -> TreeHead | None:
    """The transparency log's newest tree head, for a grant on every graph (else None)."""
    if not login.grant.universal:  # the log's size counts every principal's seals
        return None
    return read_head(console.system, log_iri(console.minter))


async def verification(console: Console, request: Request, login: Login) -> Response:
    """Run ``verify`` (POST, full or quick) over what the login may read, and show findings."""
    result: dict[str, Any] | None = None
    if request.method == "POST":
        fields = await console.form(request, login)
        quick = fields.get("mode") == "quick"
        result = await asyncio.to_thread(_verify, console, login, quick)
    head = await asyncio.to_thread(_head, console, login)
    return console.page(request, "verify.html.j2", login, result=result, head=head)


async def head(console: Console, request: Request, login: Login) -> Response:
    """The transparency log's newest tree head as a file (``trails verify`` checks it)."""
    found = await asyncio.to_thread(_head, console, login)
    if found is None:
        raise ConsoleError("no tree head this token may read: the log has none yet", 404)
    return Response(
        json.dumps(found.to_json(), indent=2) + "\n",
        media_type="application/json",
        headers={"Content-Disposition": 'attachment; filename="head.json"'},
    )


def _compliance(console: Console, login: Login) -> dict[str, Any]:
    reader = console.reader(login)

    def pack(name: str) -> tuple[list[str], list[list[str]]]:
        query = console.pack.get(name)
        if query is None:
            return [], []
        params = query.bind({})
        return _rows(reader.query(query.text_for(params), params))

    answers: dict[str, str] = {}
    for _, _, names in ARTICLE_12:
        for name in names:
            if name in answers:
                continue
            query = console.pack.get(name)
            if query is None:
                answers[name] = "not in this pack"
                continue
            if any(not p.optional for p in query.params.values()):
                answers[name] = "per session (on each session's page)"
                continue
            try:
                answers[name] = f"{len(pack(name)[1])} row(s)"
            except TrailsError as exc:
                answers[name] = f"failed: {exc}"
    return {
        "holds": _human(pack("legal-holds")),
        "erasures": _human(_rows(reader.query(_ERASURES))),
        "retention": _human(pack("retention-runs")),
        "session_prefix": f"{console.base_iri}session:",
        "article12": [
            {"obligation": o, "asks": a, "queries": [(n, answers[n]) for n in names]}
            for o, a, names in ARTICLE_12
        ],
    }


_HEADERS = {"at": "When", "by": "By", "hold": "Hold", "erased": "Values erased"}


def _human(data: tuple[list[str], list[list[str]]]) -> tuple[list[str], list[list[str]]]:
    """A table's columns as headers a reader reads (``placedAt`` -> ``Placed at``)."""
    columns, rows = data
    return [
        _HEADERS.get(c) or re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", c).lower().capitalize()
        for c in columns
    ], rows


async def compliance(console: Console, request: Request, login: Login) -> Response:
    """Legal holds, erasure receipts, retention runs and the Article 12 map, answered."""
    data = await asyncio.to_thread(_compliance, console, login)
    return console.page(request, "compliance.html.j2", login, **data)


def _charts(console: Console, login: Login) -> dict[str, str]:
    readable = console.readable_sessions(login)
    rows = console.system.query(_DAYS)
    assert isinstance(rows, Solutions)
    cost_day: dict[str, Decimal] = defaultdict(Decimal)
    calls_day: dict[str, int] = defaultdict(int)
    fail_day: dict[str, int] = defaultdict(int)
    cost_model: dict[str, Decimal] = defaultdict(Decimal)
    calls_model: dict[str, int] = defaultdict(int)
    seen: set[str] = set()
    for row in rows:
        session = str(row.get("session", ""))
        if readable is not None and session not in readable:
            continue
        day = str(to_python(row["started"]))[:10] if "started" in row else ""
        if session not in seen:
            seen.add(session)
            cost_day[day] += Decimal(str(to_python(row["cost"]))) if "cost" in row else Decimal(0)
            # the outcome: a session whose run failed is failed, though it ended ok
            outcome = str(to_python(row["outcome"])) if "outcome" in row else ""
            if outcome in ("failed", "interrupted"):
                fail_day[day] += 1
        if "model" in row:
            model = str(to_python(row["model"]))
            calls = int(to_python(row["calls"]))
            calls_day[day] += calls
            calls_model[model] += calls
            if "usd" in row:
                cost_model[model] += Decimal(str(to_python(row["usd"])))
    refusals: dict[str, int] = defaultdict(int)
    query = console.pack.get(_REFUSALS)
    if query is not None:
        params = query.bind({})
        denied = console.reader(login).query(query.text_for(params), params)
        if isinstance(denied, Solutions):
            for row in denied:
                when = str(to_python(row["at"])) if "at" in row else ""
                refusals[when[:10]] += 1
    days = sorted(set(cost_day) | set(calls_day) | set(fail_day))
    models = sorted(set(calls_model))
    return {
        "cost_day": bar_chart(
            "Cost per day (USD)", [(d, float(cost_day[d])) for d in days], unit="USD"
        ),
        "calls_day": bar_chart("LLM calls per day", [(d, calls_day[d]) for d in days]),
        "cost_model": bar_chart(
            "Cost per model (USD)", [(m, float(cost_model[m])) for m in models], unit="USD"
        ),
        "calls_model": bar_chart("LLM calls per model", [(m, calls_model[m]) for m in models]),
        "failures_day": bar_chart(
            "Sessions failed or interrupted per day", [(d, fail_day[d]) for d in days]
        ),
        "refusals_day": bar_chart(
            "Policy refusals per day", [(d, refusals[d]) for d in sorted(refusals)]
        ),
    }


async def charts(console: Console, request: Request, login: Login) -> Response:
    """Cost and calls per day and per model, failures and refusals per day."""
    data: dict[str, Any] = await asyncio.to_thread(_charts, console, login)
    return console.page(request, "charts.html.j2", login, **data)
