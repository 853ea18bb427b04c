"""The console's reading pages: the sessions list, one session, its downloads, and search.

- ``sessions``: newest first, a page at a time, from the catalogue graph (one
  summary per session), filtered by principal, start-time range, status,
  planner, model and text (the session's label), with the totals (sessions,
  cost, tokens) of the filter and what they cover (``sessions``: the
  page walks the catalogue's start days, the totals come from its daily
  totals). Every filter value is a bound parameter.
- ``session``: the report's data (``trails.audit.report.report_data``) made
  interactive: a Gantt timeline and the provenance graph drawn as SVG
  (``svg``), each input and output in a ``<details>``, costs, policy
  decisions, terminations, memories used and the seal with its verification.
- ``download``: the report (HTML), TriG, PROV-N and the evidence bundle of one
  session, made by the audit room's own writers.
- ``search``: recorded content (prompts, completions, inputs, outputs, goals,
  answers) by words, from the full-text index beside the store
  (``trails.audit.search``: brought up to date before each search with the
  sessions ended since, erasures and retention, so erased content is never
  found), or an entity by IRI from the store's own indexes; the first
  ``SEARCH_LIMIT`` hits of the sessions the reader's grant reads.
"""

from __future__ import annotations

import asyncio
import io
import tempfile
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from trails.audit.bundle import write_bundle
from trails.audit.export import export
from trails.audit.render import duration
from trails.audit.report import render_report, report_data, seal_of
from trails.audit.search import Scope
from trails.prov.content import (
    content_graph,
    is_content_graph,
    structure_graph,
)
from trails.prov.iri import agent_iri
from trails.server.auth import OWN_SESSIONS
from trails.server.console.base import Console, ConsoleError, Login
from trails.server.console.controls import session_controls
from trails.server.console.diff import related
from trails.server.console.graph import script_json, session_graph
from trails.server.console.live import session_steps
from trails.server.console.said import kind_of, readable, snippet
from trails.server.console.sessions import FILTERS, PAGE_SIZE, SORTS, STOP_REASONS, listing
from trails.server.console.steps import dressed, step, step_figures
from trails.server.console.svg import timeline_svg
from trails.store import Solutions
from trails.store.terms import IRI, Literal, Term, literal, to_python

__all__ = [
    "PAGE_SIZE",
    "SEARCH_LIMIT",
    "download",
    "search",
    "session",
    "sessions",
    "step_page",
]

SEARCH_LIMIT = 50
_ENTITY_ROWS = 200
"""The most store rows an entity's IRI is looked up in (a constant, never a request's)."""
_ENTITY = """SELECT ?g ?s ?p ?o $prefix $entity WHERE {
  { GRAPH ?g { $entity ?p ?o } BIND($entity AS ?s) }
  UNION { GRAPH ?g { ?s ?p $entity } BIND($entity AS ?o) }
  FILTER(STRSTARTS(STR(?g), $prefix))
} LIMIT #LIMIT"""
_HOLDS = "ASK { GRAPH $g { ?s ?p ?o } }"
_DURATION = "http://www.w3.org/2001/XMLSchema#dayTimeDuration"
_VALUE = "http://www.w3.org/ns/prov#value"
_TYPES = "SELECT ?type $g $s WHERE { GRAPH $g { $s a ?type } }"
_FORMATS = {
    "html": ("text/html; charset=utf-8", "html"),
    "trig": ("application/trig", "trig"),
    "provn": ("text/provenance-notation; charset=utf-8", "provn"),
    "bundle": ("application/zip", "zip"),
}


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
    if "stop" in given:
        params["stop"] = Literal(given["stop"])
    for name, bound in (("cost_min", "costMin"), ("cost_max", "costMax")):
        if name in given:
            params[bound] = literal(_amount(given[name], name, "an amount of USD"))
    for name, bound in (("duration_min", "durationMin"), ("duration_max", "durationMax")):
        if name in given:
            seconds = _amount(given[name], name, "a number of seconds")
            params[bound] = Literal(f"PT{format(seconds, 'f')}S", _DURATION)
    return params


def _amount(text: str, name: str, what: str) -> Decimal:
    """A filter's number (at least 0), or a ``ConsoleError`` naming the field."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ConsoleError(f"{name} must be {what}, not {text!r}") from None
    if not value.is_finite() or value < 0:
        raise ConsoleError(f"{name} must be {what} (0 or more), not {text!r}")
    return value


def _sort(fields: dict[str, str]) -> tuple[str, bool]:
    """The page's sort column and direction (``started``, newest first, unless asked)."""
    column = fields.get("sort", "").strip() or "started"
    if column not in SORTS:
        raise ConsoleError(f"sort must be one of {', '.join(SORTS)}, not {column!r}")
    order = fields.get("order", "").strip() or "desc"
    if order not in ("asc", "desc"):
        raise ConsoleError(f"order must be asc or desc, not {order!r}")
    return column, order == "desc"


def _link(fields: dict[str, str], column: str, descending: bool) -> str:
    """The page's query text (its filters and its sort) without the page number."""
    kept = [(k, fields[k]) for k in FILTERS if fields.get(k, "").strip()]
    if (column, descending) != ("started", True):
        kept += [("sort", column), ("order", "desc" if descending else "asc")]
    return urlencode(kept)


def _sort_links(fields: dict[str, str], column: str, descending: bool) -> dict[str, str]:
    """Each column's header link: sorted by it (again: the other way round), filters kept.
    Text columns sort A to Z first; times, durations, amounts and counts largest first."""
    links = {}
    for name in SORTS:
        if name == column:
            first = not descending
        else:
            first = name not in (
                "session",
                "goal",
                "answer",
                "principal",
                "outcome",
                "stop",
                "planner",
                "models",
            )
        links[name] = "?" + _link(fields, name, first)
    return links


def when(value: Any) -> str:
    """A moment as the console shows it on one line: ``2025-03-01 10:00:05`` (UTC)."""
    if not isinstance(value, datetime):
        return "" if value is None else str(value)
    moment: datetime = value.astimezone(UTC) if value.tzinfo is not None else value
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _money(value: Any) -> str:
    try:
        return f"{Decimal(str(value or 0)):.6f}".rstrip("0").rstrip(".") or "0"
    except InvalidOperation:
        return str(value)


def _list(console: Console, login: Login, fields: dict[str, str]) -> dict[str, Any]:
    params = _params(console, fields)
    try:
        page = max(int(fields.get("page", "1") or 1), 1)
    except ValueError:
        raise ConsoleError("page must be a whole number") from None
    column, descending = _sort(fields)
    found = listing(console, login, params, page, (column, descending))
    for r in found.rows:
        r["cost"] = _money(r.get("costUSD"))
        r["when"] = when(r.get("started"))
        r["ended_when"] = when(r.get("ended"))
        r["took"] = "running" if r.get("ended") is None else duration(r.get("duration"))
        tokens = (r.get("inputTokens"), r.get("outputTokens"))
        r["tokens"] = "" if tokens == (None, None) else sum(int(t or 0) for t in tokens)
        session, label = str(r.get("session") or ""), str(r.get("label") or "")
        if label in (session, f"session {session.rsplit(':', 1)[-1]}"):
            r["label"] = ""  # a default label only repeats the id: show the id once
    totals = dict(found.totals)
    totals["cost"] = _money(totals.get("costUSD"))
    return {
        "rows": found.rows,
        "totals": totals,
        "covers": found.covers,
        "page": page,
        "more": found.more,
        "filters": {k: fields.get(k, "") for k in FILTERS},
        "sort": column,
        "descending": descending,
        "sort_links": _sort_links(fields, column, descending),
        "page_link": _link(fields, column, descending),
        "sorts": SORTS,
        "stop_reasons": STOP_REASONS,
    }


async def sessions(console: Console, request: Request, login: Login) -> Response:
    """The sessions page: newest first, filtered, a page at a time, with the filter's totals."""
    fields = {k: v for k, v in request.query_params.items()}
    data = await asyncio.to_thread(_list, console, login, fields)
    return console.page(request, "sessions.html.j2", login, **data)


def _session(console: Console, login: Login, session: str) -> dict[str, Any]:
    iri = console.may_read(login, session)
    data = report_data(console.system, iri, minter=console.minter)
    data.update(related(console, login, iri))
    data["live"] = session_steps(console.system, str(iri))
    graph = session_graph(console.system, iri)
    data["graph_json"] = script_json(graph)
    graph["by_id"] = {n["id"]: n for n in graph["nodes"]}
    data["graph"] = graph
    data["timeline_svg"] = timeline_svg(data["timeline"])
    data["steps"] = dressed(data["timeline"], step_figures(console.system, iri))
    data["about"] = _about(data)
    data["control_rows"] = session_controls(console.system, iri)
    return data


def _about(data: dict[str, Any]) -> dict[str, str]:
    """What a session was about and what it cost, for the top of its page: the goal of its
    first run, the answer of its last, its duration, tokens and cost."""
    runs = sorted(data.get("runs") or [], key=lambda r: str(r.get("runStarted") or ""))
    goals = [str(r["goal"]) for r in runs if r.get("goal")]
    answers = [str(r["answer"]) for r in runs if r.get("answer")]
    head = data.get("head") or {}
    started, ended = head.get("started"), head.get("ended")
    took = "running (it has not ended)"
    if started and ended:
        seconds = datetime.fromisoformat(str(ended)) - datetime.fromisoformat(str(started))
        took = duration(max(seconds.total_seconds(), 0.0))
    completions = data.get("completions") or []
    tokens_in = sum(int(c.get("inputTokens") or 0) for c in completions)
    tokens_out = sum(int(c.get("outputTokens") or 0) for c in completions)
    return {
        "goal": goals[0] if goals else "",
        "answer": answers[-1] if answers else "",
        "started": f"{started} UTC" if started else "",
        "ended": f"{ended} UTC" if ended else "",
        "duration": took,
        "tokens": f"{tokens_in} in, {tokens_out} out",
        "cost": str(data.get("total_usd") or ""),
    }


async def session(console: Console, request: Request, login: Login) -> Response:
    """One session: timeline, provenance graph, inputs and outputs, costs, seal, downloads."""
    iri = request.query_params.get("s", "")
    data = await asyncio.to_thread(_session, console, login, iri)
    return console.page(request, "session.html.j2", login, **data)


def _step(console: Console, login: Login, session: str, activity: str) -> dict[str, Any]:
    iri = console.may_read(login, session)
    try:
        which = IRI(activity)
    except ValueError:
        raise ConsoleError(f"{activity!r} is not a step's IRI") from None
    found = step(console.system, iri, which)
    if found is None:
        raise ConsoleError(f"no step {activity} in session {session}", status=404)
    seal = seal_of(console.system, iri, console.minter)
    return {"step": found, "seal": seal, "session": str(iri)}


async def step_page(console: Console, request: Request, login: Login) -> Response:
    """One step of a session: its figures, what it used and generated with each value's
    evidence, the session's seal, and its lineage; the page's side panel asks for the
    panel alone (``part=panel``), a browser without scripts gets the whole page."""
    fields = request.query_params
    data = await asyncio.to_thread(_step, console, login, fields.get("s", ""), fields.get("a", ""))
    template = "step_panel.html.j2" if fields.get("part") == "panel" else "step.html.j2"
    return console.page(request, template, login, **data)


def _download(console: Console, login: Login, session: str, kind: str) -> bytes:
    iri = console.may_read(login, session)
    store = console.system
    if kind == "html":
        return render_report(store, iri, minter=console.minter).encode("utf-8")
    content = content_graph(iri)
    graphs = [iri] + ([content] if store.query(_HOLDS, {"g": content}) else [])
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


def _scope(console: Console, login: Login) -> Scope | None:
    """The sessions a login's search may return (None: every session)."""
    if login.grant.universal:
        return None
    patterns = tuple(p for p in login.grant.patterns if p != OWN_SESSIONS)
    agent = agent_iri(login.grant.principal, console.base_iri) if login.grant.own_sessions else None
    return Scope(patterns, None if agent is None else str(agent))


def _moment(term: Term | None) -> datetime | None:
    value = _py(term)
    return value if isinstance(value, datetime) else None


def _search(
    console: Console, login: Login, text: str, fields: dict[str, str], before: int | None
) -> tuple[list[dict[str, Any]], int | None]:
    """The hits of ``text`` (at most ``SEARCH_LIMIT``) in the sessions the login reads, and
    where the next page starts (None: no more).

    Words are looked up in the search index (``trails.audit.search``), brought up to date
    with the store first (sessions ended since, erasures, retention), newest first, from
    ``before`` (a row of the index) on; an entity's IRI in the store's own indexes (on the
    first page). Every hit is of a session the login's grant reads.
    """
    query = console.pack.get("sessions")
    if query is None:
        raise ConsoleError("the query pack has no sessions query")
    given = {k: fields[k].strip() for k in ("since", "until") if fields.get(k, "").strip()}
    bound: dict[str, Term] = dict(query.bind(given))
    found: list[tuple[str, str, str, str]] = []  # graph, subject, property, value
    if ":" in text and " " not in text and before is None:
        try:
            params: dict[str, Term] = {
                "entity": IRI(text),
                "prefix": Literal(f"{console.base_iri}session:"),
            }
        except ValueError:
            params = {}
        if params:
            rows = console.system.query(_ENTITY.replace("#LIMIT", str(_ENTITY_ROWS)), params)
            owners: dict[str, bool] = {}
            for hit in _rows(rows):
                graph = str(hit["g"])
                owner = str(structure_graph(graph))
                if owner not in owners:
                    owners[owner] = console.grants(login, IRI.trusted(owner))
                if owners[owner]:
                    found.append(
                        (
                            graph,
                            str(hit.get("s") or ""),
                            str(hit.get("p") or ""),
                            str(hit.get("o") or ""),
                        )
                    )
    index = console.search_index()
    index.catch_up(console.system)
    matches = index.search(
        text,
        SEARCH_LIMIT,
        _scope(console, login),
        since=_moment(bound.get("since")),
        until=_moment(bound.get("until")),
        before=before,
    )
    for match in matches:
        found.append((match.graph, match.subject, match.property, match.value))
    following = matches[-1].row if len(matches) == SEARCH_LIMIT else None
    return _grouped(console, found[:SEARCH_LIMIT], text), following


def _grouped(
    console: Console, found: list[tuple[str, str, str, str]], text: str
) -> list[dict[str, Any]]:
    """Hits grouped by session (in the order their sessions first come), each typed by what
    it is (goal, answer, prompt, tool input ...: ``said.kind_of``, a recorded value by its
    entity's types) and shown as readable text around the match (``said.readable``)."""
    groups: dict[str, dict[str, Any]] = {}
    types: dict[tuple[str, str], set[str]] = {}
    for graph, subject, prop, value in found:
        owner = str(structure_graph(graph)) if is_content_graph(graph) else graph
        kinds: set[str] = set()
        if prop == _VALUE and subject:
            if (owner, subject) not in types:
                rows = _rows(
                    console.system.query(
                        _TYPES, {"g": IRI.trusted(owner), "s": IRI.trusted(subject)}
                    )
                )
                types[owner, subject] = {str(r["type"]) for r in rows if r.get("type")}
            kinds = types[owner, subject]
        before, match, after = snippet(readable(value), text)
        group = groups.setdefault(owner, {"session": owner, "hits": [], "count": 0})
        group["count"] += 1
        hit = {"kind": kind_of(prop, kinds), "before": before, "match": match, "after": after}
        same = next((h for h in group["hits"] if {**h, "times": 1} == {**hit, "times": 1}), None)
        if same is not None:  # the same text recorded twice (a call's input and its policy's)
            same["times"] += 1
        else:
            group["hits"].append({**hit, "times": 1})
    return list(groups.values())


async def search(console: Console, request: Request, login: Login) -> Response:
    """Search recorded content by words, or an entity by IRI, in the readable sessions."""
    fields = dict(request.query_params)
    text = fields.get("q", "").strip()
    hits: list[dict[str, Any]] = []
    following: int | None = None
    before = fields.get("before", "").strip()
    if before and not before.isdigit():
        raise ConsoleError("before is the row a page of hits starts after (a number)")
    if text:
        if len(text) > 500:
            raise ConsoleError("search for at most 500 characters")
        hits, following = await asyncio.to_thread(
            _search, console, login, text, fields, int(before) if before else None
        )
    return console.page(
        request,
        "search.html.j2",
        login,
        q=text,
        hits=hits,
        limit=SEARCH_LIMIT,
        paged=bool(before),
        following=following,
        since=fields.get("since", ""),
        until=fields.get("until", ""),
    )
