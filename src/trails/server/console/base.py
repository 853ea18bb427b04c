"""What every page of the web console shares: who is logged in, what they may read, rendering.

The console (``/console/...`` on ``trails serve``) takes the endpoint's bearer
tokens and grants. A browser cannot send an ``Authorization`` header by
itself, so the login form takes the token once: the console checks it against
the endpoint's token table and keeps, in this process's memory, a random
login id that names the grant (the token itself is never stored nor sent
back). The id travels in a cookie that is ``HttpOnly`` (no script reads it),
``SameSite=Strict`` (no other site's page sends it) and ``Secure`` behind TLS;
every form that acts (POST) also carries the login's own CSRF value, checked
in constant time. A request without a valid login gets the login form with
status 401 and nothing else: no session, no count, no name.

What a login reads: ``reader`` is an ``EvaluatorView`` under the login's
grant, so every query a page runs for it sees only the graphs the grant may
read (the endpoint's dataset restriction). ``system`` reads everything but the
access log, for the catalogue and the ledger; a page uses it for a session
only after ``may_read`` has confirmed, through ``reader``, that the grant
holds that session's graph (``grants``: the graph's IRI against the grant's
patterns, or one lookup of its owner), and for lists only with the rows
filtered to the sessions the grant reads.
"""

from __future__ import annotations

import hmac
import re
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from trails.audit.querypack import Query
from trails.audit.search import SearchIndex
from trails.errors import UserError
from trails.prov.iri import Minter, agent_iri
from trails.prov.vocab import PROV, T
from trails.server.auth import Grant, TokenTable
from trails.server.console.store import EvaluatorView
from trails.server.pool import Evaluator
from trails.store import Solutions
from trails.store.terms import IRI

__all__ = ["COOKIE", "Console", "ConsoleError", "Login", "QueryLog", "human"]

COOKIE = "trails_console"
_TEMPLATES = Path(__file__).with_name("templates")
_STATIC = Path(__file__).with_name("static")
#: logins are forgotten after this many seconds without a request
_IDLE = 8 * 3600.0
_MAX_FORM = 256 * 1024
_SESSIONS_OF = "SELECT DISTINCT ?g $cls WHERE { GRAPH ?g { ?g a $cls } }"
_IS_SESSION = "ASK { GRAPH $g { $g a $cls } }"
_OWN_SESSION = "ASK { GRAPH $g { $g a $cls ; $assoc $agent } }"


class QueryLog(Protocol):
    """Writes the access-log entry of a query a reader ran; raises when it cannot."""

    async def __call__(
        self,
        principal: str,
        query: str,
        *,
        query_name: str | None = None,
        params: dict[str, Any] | None = None,
        results: int | None = None,
        message: str | None = None,
    ) -> None:
        """Write one entry."""
        ...


def human(name: str) -> str:
    """A column's name as a table's heading: ``costUSD`` -> ``Cost USD``, ``at`` -> ``At``."""
    if str(name).lower() in ("usd", "iri", "id"):
        return str(name).upper()
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(name)).replace("_", " ")
    return words[:1].upper() + words[1:]


class ConsoleError(UserError):
    """A console request that cannot be answered as asked (a bad field, an unknown session)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Login:
    """One browser's login: the grant it acts under and its CSRF value."""

    grant: Grant
    csrf: str
    seen: float = field(default_factory=time.monotonic)


class Console:
    """The console's shared state: the evaluator, tokens, logins, views and templates.

    Args:
        evaluator: the endpoint's evaluator (the console reads only through it).
        tokens: the endpoint's token table.
        pack: the query pack by name.
        reserved: the access log's graph IRI (no grant reads it in the data store).
        base_iri: the base IRI of the store.
        time_limit: seconds one query may take (the endpoint's limit).
        max_results: most results of a query a reader writes (the endpoint's limit).
        max_query_bytes: largest query a reader may write (the endpoint's limit).
        start: starts the evaluator (the endpoint's own, idempotent ``start``), awaited
            before a page reads.
        log: writes the access-log entry of a query a reader runs (the endpoint's).
    """

    def __init__(
        self,
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
    ) -> None:
        self.evaluator = evaluator
        self.start = start
        self.log = log
        self.tokens = tokens
        self.pack = dict(pack)
        self.reserved = reserved
        self.base_iri = base_iri
        self.minter = Minter(base_iri)
        self.time_limit = time_limit
        self.max_results = max_results
        self.max_query_bytes = max_query_bytes
        self._logins: dict[str, Login] = {}
        self._lock = threading.Lock()
        self.system = EvaluatorView(
            evaluator,
            Grant("urn:trails:console", ("*",)),
            reserved,
            base_iri=base_iri,
            time_limit=time_limit,
        )
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(_TEMPLATES),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            finalize=lambda value: "" if value is None else value,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["human"] = human
        self.verifications: dict[str, Any] = {}
        #: what the sessions page read of each day not totalled yet: entry -> (end, figures)
        self.open_days: dict[str, dict[str, tuple[str, list[dict[str, Any]]]]] = {}
        self._index: SearchIndex | None = None
        #: the watcher behind the live pages (``live``), made on first use
        self.live: Any = None

    def search_index(self) -> SearchIndex:
        """The full-text index of the store's content, opened on first use: a file beside a
        directory store (``trails.audit.search``), in memory for any other store."""
        with self._lock:
            if self._index is None:
                where = getattr(self.evaluator, "location", None)
                if where is None:  # an in-process evaluator: its store's folder, if it has one
                    where = getattr(getattr(self.evaluator, "store", None), "path", None)
                self._index = SearchIndex.beside(where)
            return self._index

    def stop_streams(self) -> None:
        """End the live pages' event streams (the server is stopping); safe to call from a
        signal handler, and again."""
        if self.live is not None:
            self.live.stop()

    def close(self) -> None:
        """End the live streams and close the search index's file (the server is stopping)."""
        self.stop_streams()
        with self._lock:
            index, self._index = self._index, None
        if index is not None:
            index.close()

    async def ready(self) -> None:
        """Wait until the evaluator runs (workers have opened the store)."""
        if self.start is not None:
            await self.start()

    async def log_query(
        self,
        login: Login,
        query: str,
        *,
        query_name: str | None = None,
        params: dict[str, Any] | None = None,
        results: int | None = None,
        message: str | None = None,
    ) -> None:
        """Record a reader's query in the endpoint's access log, as ``/sparql`` would.

        Raises:
            StoreError: the entry could not be written: the answer must not be shown.
        """
        if self.log is not None:
            await self.log(
                login.grant.principal,
                query,
                query_name=query_name,
                params=params,
                results=results,
                message=message,
            )

    # -- logins -----------------------------------------------------------------

    def log_in(self, token: str) -> tuple[str, Login] | None:
        """A new login for ``token`` (its id and the login), or None for an unknown token."""
        grant = self.tokens.authenticate(f"Bearer {token.strip()}") if token.strip() else None
        if grant is None:
            return None
        login = Login(grant, secrets.token_urlsafe(24))
        key = secrets.token_urlsafe(32)
        with self._lock:
            now = time.monotonic()
            for old in [k for k, v in self._logins.items() if now - v.seen > _IDLE]:
                del self._logins[old]
            self._logins[key] = login
        return key, login

    def log_out(self, request: Request) -> None:
        """Forget the request's login."""
        with self._lock:
            self._logins.pop(request.cookies.get(COOKIE, ""), None)

    def login_of(self, request: Request) -> Login | None:
        """The request's login, or None (no cookie, unknown or expired)."""
        key = request.cookies.get(COOKIE, "")
        if not key:
            return None
        with self._lock:
            login = self._logins.get(key)
            if login is None:
                return None
            now = time.monotonic()
            if now - login.seen > _IDLE:
                del self._logins[key]
                return None
            login.seen = now
        return login

    def set_cookie(self, response: Response, request: Request, key: str) -> None:
        """Give the browser its login id: HttpOnly, SameSite=Strict, Secure behind TLS."""
        response.set_cookie(
            COOKIE,
            key,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )

    async def form(self, request: Request, login: Login | None) -> dict[str, str]:
        """The POSTed form fields (last value of each); checks the CSRF value when logged in.

        Raises:
            ConsoleError: the body is too large or not UTF-8, or the CSRF value is wrong (403).
        """
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > _MAX_FORM:
                raise ConsoleError("the form is too large", 413)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise ConsoleError("the form is not UTF-8") from None
        fields = {k: v[-1] for k, v in parse_qs(text, keep_blank_values=True).items()}
        if login is not None and not hmac.compare_digest(
            fields.get("csrf", "").encode(), login.csrf.encode()
        ):
            raise ConsoleError("this form has expired or did not come from the console", 403)
        return fields

    # -- what a login reads -----------------------------------------------------

    def reader(self, login: Login) -> EvaluatorView:
        """A view of the store under the login's grant (the endpoint's dataset restriction)."""
        return EvaluatorView(
            self.evaluator,
            login.grant,
            self.reserved,
            base_iri=self.base_iri,
            time_limit=self.time_limit,
            max_results=self.max_results,
        )

    def readable_sessions(self, login: Login) -> set[str] | None:
        """The session graphs the login may read, or None when it may read every graph."""
        if login.grant.universal:
            return None
        result = self.reader(login).query(_SESSIONS_OF, {"cls": T.Session})
        assert isinstance(result, Solutions)
        return {str(g) for g in result.column("g") if g is not None}

    def grants(self, login: Login, graph: IRI) -> bool:
        """Whether the login's grant reads the session graph ``graph``, decided for that
        graph alone (its IRI against the grant's patterns, or one lookup of its owner for
        ``own-sessions``): no list of the store's graphs, whatever their number."""
        if self.reserved is not None and graph == self.reserved:
            return False
        if login.grant.matches(str(graph)):
            return True
        if not login.grant.own_sessions:
            return False
        params = {
            "g": graph,
            "cls": T.Session,
            "assoc": PROV.wasAssociatedWith,
            "agent": agent_iri(login.grant.principal, self.base_iri),
        }
        return bool(self.system.query(_OWN_SESSION, params))

    def may_read(self, login: Login, session: str) -> IRI:
        """``session`` as an IRI, once the login's grant is known to hold that session's graph.

        Raises:
            ConsoleError: 404, the same for a session that does not exist and one the
                grant does not hold (a reader learns nothing of others' sessions).
        """
        try:
            iri = IRI(session)
        except ValueError:
            raise ConsoleError(f"{session!r} is not a session IRI", 404) from None
        if not self.grants(login, iri) or not self.system.query(
            _IS_SESSION, {"g": iri, "cls": T.Session}
        ):
            raise ConsoleError("no such session among those this token may read", 404)
        return iri

    # -- rendering --------------------------------------------------------------

    def page(
        self,
        request: Request,
        template: str,
        login: Login | None,
        *,
        status: int = 200,
        **context: Any,
    ) -> HTMLResponse:
        """A page of the console: ``template`` rendered with the login's name and CSRF value."""
        html = self.env.get_template(template).render(
            principal=login.grant.principal if login else None,
            csrf=login.csrf if login else "",
            universal=bool(login and login.grant.universal),
            path=request.url.path,
            **context,
        )
        return HTMLResponse(
            html,
            status_code=status,
            headers={
                "Cache-Control": "no-store",
                "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                "style-src 'self'; script-src 'self'; frame-ancestors 'none'",
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
            },
        )

    def login_form(self, request: Request, *, message: str = "", status: int = 401) -> Response:
        """The login form: all a request without a valid login ever sees."""
        target = request.url.path
        if request.url.query:
            target += "?" + request.url.query
        if not target.startswith("/console") or target.startswith("/console/login"):
            target = "/console/"
        return self.page(
            request, "login.html.j2", None, status=status, next=target, message=message
        )

    def error(self, request: Request, login: Login | None, exc: Exception) -> Response:
        """An error page: the message of a ``UserError`` or ``TrailsError``, never a traceback."""
        status = exc.status if isinstance(exc, ConsoleError) else 400
        return self.page(request, "error.html.j2", login, status=status, message=str(exc))

    @staticmethod
    def static_file(name: str) -> Path | None:
        """A vendored static file by name, or None."""
        path = (_STATIC / name).resolve()
        if path.parent != _STATIC.resolve() or not path.is_file():
            return None
        return path
