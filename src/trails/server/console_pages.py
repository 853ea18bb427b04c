"""The console's reading pages: the sessions list, one session, its downloads, and search.

- ``sessions``: newest first, a page at a time, from the catalogue graph (one
  summary per session), filtered by principal, start-time range, status,
  planner, model and text (the session's label), with the totals (sessions,
  cost, tokens) of the filter. Every filter value is a bound parameter.
- ``session``: the report's data (``trails.audit.report.report_data``) made
  interactive: a Gantt timeline and the provenance graph drawn as SVG
  (``console_svg``), each input and output in a ``<details>``, costs, policy
  decisions, terminations, memories used and the seal with its verification.
- ``download``: the report (HTML), TriG, PROV-N and the evidence bundle of one
  session, made by the audit room's own writers.
- ``search``: recorded content (prompts, completions, inputs, outputs, goals,
  answers) by words, or an entity by IRI. No index is kept: the search is one
  query over the session and content graphs the reader may read, at request
  time, stopping at the first ``SEARCH_LIMIT`` hits. So it is always in step
  with recording and erasure (erased content is no longer in the store, so it
  is no longer found), at the cost of a scan of the readable literals per
  search (see ``docs/benchmarks.md`` for its figures).
"""

from __future__ import annotations

import asyncio
import io
import tempfile
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from trails.audit.bundle import write_bundle
from trails.audit.export import export
from trails.audit.report import render_report, report_data
from trails.prov.content import (
    CONTENT_PROPERTIES,
    CONTENT_SUFFIX,
    content_graph,
    is_content_graph,
    structure_graph,
)
from trails.server.console_base import Console, ConsoleError, Login
from trails.server.console_svg import GraphPicture, prov_graph_svg, timeline_svg
from trails.store import Solutions
from trails.store.terms import IRI, Literal, Term, to_python

__all__ = [
    "PAGE_SIZE",
    "SEARCH_LIMIT",
    "SEARCH_SESSIONS",
    "download",
    "search",
    "session",
    "sessions",
]

PAGE_SIZE = 25
SEARCH_LIMIT = 50
SEARCH_SESSIONS = 1000
"""A search reads the newest this many readable sessions of its time range."""
_NEWEST = """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?session $since $until WHERE {
  GRAPH ?catalogue { ?entry trails:sessionStarted ?started ; trails:summaryOf ?session }
  FILTER(COALESCE(?started >= $since, true))
  FILTER(COALESCE(?started < $until, true))
} ORDER BY DESC(?started) ?session #LIMIT"""
_FILTER = """
      GRAPH ?catalogue { ?entry trails:sessionStarted ?started }
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


def _filtered(text: str, params: dict[str, Term]) -> str:
    """``text`` with the clauses of the filters given (an unused clause costs every entry)."""
    clauses = "".join(f"      {c}\n" for name, c in _CLAUSES.items() if name in params)
    return text.replace("#FILTER", clauses)


_PREFIXES = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""
_ROWS = (
    _PREFIXES
    + """SELECT ?session ?principal ?label ?started ?ended ?status ?activities ?planner
       ?stopReason ?costUSD ?inputTokens ?outputTokens ?sealed
       (GROUP_CONCAT(DISTINCT ?modelLabel; separator=", ") AS ?models) $since $until $model $text
WHERE {
  { SELECT ?entry ?started $principal $status $since $until $planner $model $text WHERE {"""
    + _FILTER
    + """    } ORDER BY DESC(?started) ?entry #PAGE
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
         ?costUSD ?inputTokens ?outputTokens ?sealed $since $until $model $text
ORDER BY DESC(?started) ?session
"""
)
#: the figures the totals add up, one row per session of the filter: summed here, exactly
#: (the store's SUM of xsd:decimal costs more than reading the values)
_TOTALS = (
    _PREFIXES
    + """SELECT ?cost ?in ?out $principal $status $since $until $planner $model $text
WHERE {"""
    + _FILTER
    + """  OPTIONAL { GRAPH ?catalogue { ?entry trails:totalCostUSD ?cost } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:totalInputTokens ?in } }
  OPTIONAL { GRAPH ?catalogue { ?entry trails:totalOutputTokens ?out } }
}
"""
)
#: the content properties, spelled from the vocabulary (constants of trails, never a request's)
_CONTENT = " ".join(f"<{p}>" for p in sorted(CONTENT_PROPERTIES))
_SEARCH = (
    """SELECT ?g ?s ?p ?o $prefix $needle WHERE {
  VALUES ?p { """
    + _CONTENT
    + """ }
  GRAPH ?g { ?s ?p ?o }
  FILTER(CONTAINS(LCASE(STR(?o)), $needle) && STRSTARTS(STR(?g), $prefix))
} LIMIT #LIMIT"""
)
_IN_NEWEST = (
    """PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g ?s ?p ?o $needle $since $until WHERE {
  { SELECT ?g $since $until WHERE {
      GRAPH ?catalogue { ?entry trails:sessionStarted ?started ; trails:summaryOf ?session }
      FILTER(COALESCE(?started >= $since, true))
      FILTER(COALESCE(?started < $until, true))
      BIND(IRI(CONCAT(STR(?session), \""""
    + CONTENT_SUFFIX
    + """\")) AS ?g)
    } ORDER BY DESC(?started) LIMIT """
    + str(SEARCH_SESSIONS)
    + """ }
  VALUES ?p { """
    + _CONTENT
    + """ }
  GRAPH ?g { ?s ?p ?o }
  FILTER(CONTAINS(LCASE(STR(?o)), $needle))
} LIMIT #LIMIT"""
)
_ENTITY = """SELECT ?g ?s ?p ?o $prefix $entity WHERE {
  { GRAPH ?g { $entity ?p ?o } BIND($entity AS ?s) }
  UNION { GRAPH ?g { ?s ?p $entity } BIND($entity AS ?o) }
  FILTER(STRSTARTS(STR(?g), $prefix))
} LIMIT #LIMIT"""
_PROV = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?s ?p ?o $session WHERE {
  GRAPH $session { ?s ?p ?o .
    FILTER(STRSTARTS(STR(?p), STR(prov:)) || ?p = rdfs:label
           || (?p = rdf:type && STRSTARTS(STR(?o), STR(prov:)))) }
}"""
_FORMATS = {
    "html": ("text/html; charset=utf-8", "html"),
    "trig": ("application/trig", "trig"),
    "provn": ("text/provenance-notation; charset=utf-8", "provn"),
    "bundle": ("application/zip", "zip"),
}
FILTERS = ("principal", "since", "until", "status", "planner", "model", "text")


def _py(term: Term | None) -> Any:
    return None if term is None else to_python(term)


def _rows(result: object) -> list[dict[str, Any]]:
    if not isinstance(result, Solutions):
        return []
    return [{k: _py(v) for k, v in zip(result.variables, row, strict=True)} for row in result.rows]


def _params(console: Console, fields: dict[str, str]) -> dict[str, Term]:
    """The filter fields as bound parameters (the pack's own conversion for the shared ones)."""
    given = {k: v.strip() for k, v in fields.items() if k in FILTERS and v.strip()}
    shared = {k: v for k, v in given.items() if k in ("principal", "since", "until", "status")}
    query = console.pack.get("sessions")
    if query is None:
        raise ConsoleError("the query pack has no sessions query")
    params: dict[str, Term] = dict(query.bind(shared))
    for name in ("model", "text"):
        if name in given:
            params[name] = Literal(given[name].lower())
    if "planner" in given:
        params["planner"] = Literal(given["planner"])
    return params


def _money(value: Any) -> str:
    try:
        return f"{Decimal(str(value or 0)):.6f}".rstrip("0").rstrip(".") or "0"
    except InvalidOperation:
        return str(value)


def _sum(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The totals of the filter's sessions: how many, USD (exact), tokens in and out."""
    return {
        "sessions": len(rows),
        "costUSD": sum((Decimal(str(r.get("cost") or 0)) for r in rows), Decimal(0)),
        "inputTokens": sum(int(r.get("in") or 0) for r in rows),
        "outputTokens": sum(int(r.get("out") or 0) for r in rows),
    }


def _list(console: Console, login: Login, fields: dict[str, str]) -> dict[str, Any]:
    params = _params(console, fields)
    try:
        page = max(int(fields.get("page", "1") or 1), 1)
    except ValueError:
        raise ConsoleError("page must be a whole number") from None
    readable = console.readable_sessions(login)
    if readable is None:
        text = _ROWS.replace("#PAGE", f"LIMIT {PAGE_SIZE + 1} OFFSET {(page - 1) * PAGE_SIZE}")
        rows = _rows(console.system.query(_filtered(text, params), params))
        totals = _sum(_rows(console.system.query(_filtered(_TOTALS, params), params)))
    else:  # a grant narrower than everything: the filter's rows, then only the readable ones
        text = _filtered(_ROWS.replace("#PAGE", ""), params)
        rows = _rows(console.system.query(text, params))
        rows = [r for r in rows if str(r.get("session")) in readable]
        totals = _sum(
            [
                {"cost": r.get("costUSD"), "in": r.get("inputTokens"), "out": r.get("outputTokens")}
                for r in rows
            ]
        )
        rows = rows[(page - 1) * PAGE_SIZE : page * PAGE_SIZE + 1]
    more = len(rows) > PAGE_SIZE
    for r in rows:
        r["cost"] = _money(r.get("costUSD"))
        session, label = str(r.get("session") or ""), str(r.get("label") or "")
        if label in (session, f"session {session.rsplit(':', 1)[-1]}"):
            r["label"] = ""  # a default label only repeats the id: show the id once
    totals["cost"] = _money(totals.get("costUSD"))
    return {
        "rows": rows[:PAGE_SIZE],
        "totals": totals,
        "page": page,
        "more": more,
        "filters": {k: fields.get(k, "") for k in FILTERS},
    }


async def sessions(console: Console, request: Request, login: Login) -> Response:
    """The sessions page: newest first, filtered, a page at a time, with the filter's totals."""
    fields = {k: v for k, v in request.query_params.items()}
    data = await asyncio.to_thread(_list, console, login, fields)
    return console.page(request, "sessions.html.j2", login, **data)


def _session(console: Console, login: Login, session: str) -> dict[str, Any]:
    iri = console.may_read(login, session)
    data = report_data(console.system, iri, minter=console.minter)
    prov = console.system.query(_PROV, {"session": iri})
    assert isinstance(prov, Solutions)
    picture = GraphPicture.from_triples(row[:3] for row in prov.rows)
    data["graph_svg"] = prov_graph_svg(picture)
    data["timeline_svg"] = timeline_svg(data["timeline"])
    data["nodes"] = len(picture.kinds)
    return data


async def session(console: Console, request: Request, login: Login) -> Response:
    """One session: timeline, provenance graph, inputs and outputs, costs, seal, downloads."""
    iri = request.query_params.get("s", "")
    data = await asyncio.to_thread(_session, console, login, iri)
    return console.page(request, "session.html.j2", login, **data)


def _download(console: Console, login: Login, session: str, kind: str) -> bytes:
    iri = console.may_read(login, session)
    store = console.system
    if kind == "html":
        return render_report(store, iri, minter=console.minter).encode("utf-8")
    graphs = [iri] + ([c] if (c := content_graph(iri)) in set(store.graphs()) else [])
    if kind in ("trig", "provn"):
        out = io.BytesIO()
        export(store, out, graphs, format=kind, minter=console.minter)
        return out.getvalue()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bundle.zip"
        write_bundle(store, path, graphs, minter=console.minter, selection=f"session {iri}")
        return path.read_bytes()


async def download(console: Console, request: Request, login: Login) -> Response:
    """A session's report, TriG, PROV-N or evidence bundle, as a file to save."""
    iri = request.query_params.get("s", "")
    kind = request.query_params.get("format", "")
    if kind not in _FORMATS:
        raise ConsoleError(f"format must be one of {', '.join(_FORMATS)}, not {kind!r}")
    data = await asyncio.to_thread(_download, console, login, iri, kind)
    media, extension = _FORMATS[kind]
    name = iri.rsplit(":", 1)[-1] or "session"
    return Response(
        data,
        media_type=media,
        headers={
            "Content-Disposition": f'attachment; filename="{name}.{extension}"',
            "Cache-Control": "no-store",
        },
    )


def _search(
    console: Console, login: Login, text: str, fields: dict[str, str]
) -> tuple[list[dict[str, Any]], int]:
    """The hits of ``text`` (at most ``SEARCH_LIMIT``) and how many sessions the range holds.

    A grant on every graph searches the newest ``SEARCH_SESSIONS`` sessions of the time
    range, reached from the catalogue (each session's graphs looked up by name); a
    narrower grant searches every session it may read (its dataset is those graphs).
    """
    query = console.pack.get("sessions")
    if query is None:
        raise ConsoleError("the query pack has no sessions query")
    given = {k: fields[k].strip() for k in ("since", "until") if fields.get(k, "").strip()}
    params: dict[str, Term] = dict(query.bind(given))
    params["needle"] = Literal(text.lower())
    params["prefix"] = Literal(f"{console.base_iri}session:")
    limit = str(SEARCH_LIMIT)  # a constant of this module, never a request's value
    reader = console.reader(login)
    hits: list[dict[str, Any]] = []
    if login.grant.universal:
        newest = _rows(
            reader.query(
                _NEWEST.replace("#LIMIT", f"LIMIT {SEARCH_SESSIONS + 1}"),
                {k: v for k, v in params.items() if k in ("since", "until")},
            )
        )
        in_range = len(newest)
        searches = [_IN_NEWEST]
    else:
        readable = console.readable_sessions(login) or set()
        in_range = len(readable)
        searches = [_SEARCH]
    looks_like_iri = ":" in text and " " not in text
    if looks_like_iri:
        try:
            params["entity"] = IRI(text)
            searches.insert(0, _ENTITY)
        except ValueError:
            pass
    for sparql in searches:
        if len(hits) >= SEARCH_LIMIT:
            break
        names = {"prefix", "needle", "since", "until", "entity"}
        found = reader.query(
            sparql.replace("#LIMIT", limit),
            {k: v for k, v in params.items() if k in names and f"${k}" in sparql},
        )
        hits += _rows(found)
    out: list[dict[str, Any]] = []
    for hit in hits[:SEARCH_LIMIT]:
        graph = str(hit["g"])
        owner = str(structure_graph(graph)) if is_content_graph(graph) else graph
        value = str(hit.get("o") or "")
        at = value.lower().find(text.lower())
        start = max(at - 60, 0)
        out.append(
            {
                "session": owner,
                "subject": str(hit.get("s") or ""),
                "property": str(hit.get("p") or "").rsplit("#", 1)[-1].rsplit("/", 1)[-1],
                "before": value[start:at] if at >= 0 else value[:120],
                "match": value[at : at + len(text)] if at >= 0 else "",
                "after": value[at + len(text) : at + len(text) + 60] if at >= 0 else "",
            }
        )
    return out, in_range


async def search(console: Console, request: Request, login: Login) -> Response:
    """Search recorded content by words, or an entity by IRI, in the readable sessions."""
    fields = dict(request.query_params)
    text = fields.get("q", "").strip()
    hits: list[dict[str, Any]] = []
    in_range = 0
    if text:
        if len(text) > 500:
            raise ConsoleError("search for at most 500 characters")
        hits, in_range = await asyncio.to_thread(_search, console, login, text, fields)
    return console.page(
        request,
        "search.html.j2",
        login,
        q=text,
        hits=hits,
        limit=SEARCH_LIMIT,
        scope=SEARCH_SESSIONS,
        in_range=in_range,
        since=fields.get("since", ""),
        until=fields.get("until", ""),
    )
