"""The web console of ``trails serve``: evidence to browse, search and check in a browser.

Mounted at ``/console/`` beside the SPARQL endpoint (``/`` leads there), with
the same tokens and grants (``base`` explains the login, its cookie
and the CSRF check). Server-rendered with jinja2 (``templates/``);
every page works without JavaScript, and the one vendored stylesheet is
served from ``static/``, never a CDN. The pages:

========================  ===================================================
``/console/``             the sessions, newest first, filtered, with totals
``/console/session``      one session (``?s=IRI``): timeline, graph, I/O, seal
``/console/step``         one step of it (``&a=IRI``): evidence, lineage (a side panel)
``/console/download``     its report, TriG, PROV-N or evidence bundle
``/console/search``       recorded content by words, or an entity by IRI
``/console/queries``      the query pack as forms, results as table, CSV, JSON
``/console/sparql``       a SPARQL editor (the endpoint's limits)
``/console/verify``       run ``verify`` (full or quick), see the findings
``/console/head``         the transparency log's newest tree head (JSON)
``/console/compliance``   legal holds, erasure receipts, retention, Article 12
``/console/charts``       cost, calls, failures and refusals per day and model
``/console/controls``     controls x outcomes over a period, per day, their findings
``/console/diff``         two sessions side by side (``?a=&b=``), first divergence marked
``/console/events``       the live pages' server-sent events (new sessions, new steps)
========================  ===================================================

Every page but the login form answers only a logged-in browser; anything
else gets the login form (401) and nothing of the store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from trails.audit.querypack import Query
from trails.errors import TrailsError
from trails.server.auth import TokenTable
from trails.server.console import controls, diff, live, pages, tools
from trails.server.console.base import Console, ConsoleError, Login, QueryLog
from trails.server.limits import FailureThrottle, Throttled, failure_keys
from trails.server.pool import Evaluator
from trails.store.terms import IRI

__all__ = ["Console", "console_routes", "mount_console"]

Page = Callable[[Console, Request, Login], Awaitable[Response]]


def _guarded(console: Console, page: Page) -> Callable[[Request], Awaitable[Response]]:
    """``page`` for logged-in browsers only; its errors as an error page, never a traceback."""

    async def handler(request: Request) -> Response:
        login = console.login_of(request)
        if login is None:
            return console.login_form(request)
        try:
            await console.ready()
            return await page(console, request, login)
        except (ConsoleError, TrailsError) as exc:
            return console.error(request, login, exc)

    return handler


def console_routes(console: Console, throttle: FailureThrottle | None = None) -> list[Route]:
    """The console's routes (under ``/console``) and ``/`` leading to it.

    Args:
        console: the console's shared state.
        throttle: counts failed logins per client (None: not counted).
    """

    async def root(request: Request) -> Response:
        return RedirectResponse("/console/", status_code=303)

    async def login_page(request: Request) -> Response:
        if request.method == "GET":
            return console.login_form(request, status=200)
        try:
            fields = await console.form(request, None)
        except ConsoleError as exc:
            return console.login_form(request, message=str(exc), status=exc.status)
        made = console.log_in(fields.get("token", ""))
        if made is None:  # counted against the client and the token; a right one gets in
            if throttle is not None:
                client = request.client.host if request.client else ""
                keys = failure_keys(client, fields.get("token", "").strip())
                try:
                    throttle.check(*keys)
                except Throttled as exc:
                    response = console.login_form(request, message=str(exc), status=429)
                    response.headers["Retry-After"] = str(exc.retry_after)
                    return response
                throttle.failed(*keys)
            return console.login_form(request, message="unknown token", status=401)
        key, _ = made
        target = fields.get("next", "/console/")
        if not target.startswith("/console/") or target.startswith("//"):
            target = "/console/"
        response = RedirectResponse(target, status_code=303)
        console.set_cookie(response, request, key)
        return response

    async def logout(request: Request) -> Response:
        login = console.login_of(request)
        if login is not None:
            try:
                await console.form(request, login)
            except ConsoleError as exc:
                return console.error(request, login, exc)
            console.log_out(request)
        response = RedirectResponse("/console/login", status_code=303)
        response.delete_cookie("trails_console", path="/")
        return response

    async def static(request: Request) -> Response:
        path = console.static_file(request.path_params["name"])
        if path is None:
            return PlainTextResponse("not found\n", status_code=404)
        return FileResponse(path, headers={"Cache-Control": "max-age=3600"})

    def page(path: str, handler: Page, methods: tuple[str, ...] = ("GET",)) -> Route:
        return Route(path, _guarded(console, handler), methods=list(methods))

    return [
        Route("/", root, methods=["GET"]),
        Route("/console", root, methods=["GET"]),
        Route("/console/login", login_page, methods=["GET", "POST"]),
        Route("/console/logout", logout, methods=["POST"]),
        Route("/console/static/{name}", static, methods=["GET"]),
        page("/console/", pages.sessions),
        page("/console/session", pages.session),
        page("/console/step", pages.step_page),
        page("/console/download", pages.download),
        page("/console/search", pages.search),
        page("/console/queries", tools.queries),
        page("/console/sparql", tools.sparql, ("GET", "POST")),
        page("/console/verify", tools.verification, ("GET", "POST")),
        page("/console/head", tools.head),
        page("/console/compliance", tools.compliance),
        page("/console/charts", tools.charts),
        page("/console/controls", controls.controls_page),
        page("/console/diff", diff.diff),
        page("/console/events", live.events),
    ]


def mount_console(
    app: Starlette,
    evaluator: Evaluator,
    tokens: TokenTable,
    pack: Mapping[str, Query],
    reserved: IRI | None,
    *,
    base_iri: str = "urn:trails:",
    time_limit: float = 30.0,
    max_results: int = 100_000,
    max_query_bytes: int = 64 * 1024,
    start: Callable[[], Awaitable[None]] | None = None,
    log: QueryLog | None = None,
    throttle: FailureThrottle | None = None,
) -> Console:
    """Add the console's routes to ``app`` (the endpoint's), reading through ``evaluator``.

    Args:
        app: the endpoint's application.
        evaluator: the endpoint's evaluator.
        tokens: the endpoint's tokens.
        pack: the query pack.
        reserved: the access log's graph IRI.
        base_iri: the store's base IRI.
        time_limit: seconds a query may run.
        max_results: most results of a reader's own query.
        max_query_bytes: largest query a reader may write.
        start: starts the evaluator (idempotent), awaited before a page reads.
        log: writes the access-log entry of each query a reader runs.
        throttle: the endpoint's count of failed authentications per client (a wrong
            token at the login form counts; past the limit the form answers 429).

    Returns:
        The console.
    """
    console = Console(
        evaluator,
        tokens,
        pack,
        reserved,
        base_iri=base_iri,
        time_limit=time_limit,
        max_results=max_results,
        max_query_bytes=max_query_bytes,
        start=start,
        log=log,
    )
    app.router.routes.extend(console_routes(console, throttle))
    return console
