"""Live pages: new sessions and a running session's new steps, pushed as server-sent events.

``/console/events`` is an ``text/event-stream`` a console page subscribes to
with ``EventSource`` (``static/console-live.js``): the sessions list gets a
``sessions`` event with the newest sessions, the page of one session
(``/console/events?s=IRI``) a ``steps`` event with its activities so far. The
list inserts the sessions it does not show yet, the session page redraws its
"Steps so far" list; neither reloads.

One watcher serves every subscriber: once a second it compares the store's
change marker (``trails.store.snapshot.change_marker``: the files a write
changes, read from the file system, never by opening the store); only when it
changed (or a subscriber has just arrived) does it open one fresh read-only
snapshot, read the newest sessions once and each watched session's steps once,
and close it. So a page is at most about a second behind the writer, and the
server reads the store at most once a second however many pages watch it. A
store that keeps no marker (a SPARQL server) is read once a second instead.

What a subscriber receives is within its token's grant: the sessions whose
graphs the grant reads (its patterns, or its principal's own sessions), and the
steps only of a session ``may_read`` let it open. Streams end when the server
stops (``stop``: ``trails serve`` calls it when it is told to stop, before it
waits for open connections), so a browser never holds the shutdown up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from trails.audit.sessions_page import sessions_page
from trails.prov.iri import agent_iri
from trails.server.console.base import Console, Login
from trails.store import Solutions, Store, open_store
from trails.store.snapshot import change_marker
from trails.store.terms import IRI, to_python

__all__ = ["EVERY", "NEWEST", "STEPS_SHOWN", "Live", "events", "readable_row", "session_steps"]

EVERY = 1.0
"""Seconds between two looks at the store's change marker."""
NEWEST = 25
"""The newest sessions a ``sessions`` event carries (those the subscriber may read)."""
_ENDED = """PREFIX prov: <http://www.w3.org/ns/prov#>
ASK { GRAPH $session { $session prov:endedAtTime ?ended } }"""
STEPS_SHOWN = 500
"""The most steps of a session a page lists and an event carries (the newest)."""
_KEEP_ALIVE = 15.0
_STEPS = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?a ?label ?started ?ended ?status $session WHERE {
  GRAPH $session {
    ?a trails:inSession $session ; prov:startedAtTime ?started .
    OPTIONAL { ?a rdfs:label ?label }
    OPTIONAL { ?a prov:endedAtTime ?ended }
    OPTIONAL { ?a trails:status ?status }
  }
} ORDER BY DESC(?started) DESC(?a) LIMIT #LIMIT"""
_COLUMNS = ("session", "label", "principal", "started", "ended", "outcome", "activities")


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def readable_row(console: Console, login: Login, row: dict[str, Any]) -> bool:
    """Whether the login's grant reads the session of a catalogue row (its patterns, or its
    principal's own sessions), decided from the row alone."""
    session = row.get("session", "")
    if not session or (console.reserved is not None and session == str(console.reserved)):
        return False
    if login.grant.matches(session):
        return True
    if not login.grant.own_sessions:
        return False
    return bool(row.get("principal", "") == str(agent_iri(login.grant.principal, console.base_iri)))


@dataclass(eq=False)
class _Subscriber:
    login: Login
    session: str | None
    queue: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    sent: str = ""


def session_steps(store: Store, session: str) -> dict[str, Any]:
    """A session's activities so far (the newest ``STEPS_SHOWN``), in start order:
    ``session``, ``ended`` (whether the session has ended), ``more`` (whether older ones
    are left out) and ``steps`` (each one's ``activity``, ``label``, ``started``, ``ended``
    and ``status``)."""
    found = store.query(
        _STEPS.replace("#LIMIT", str(STEPS_SHOWN)), {"session": IRI.trusted(session)}
    )
    rows = found.rows if isinstance(found, Solutions) else []
    names = found.variables if isinstance(found, Solutions) else []
    listed = [dict(zip(names, row, strict=True)) for row in reversed(rows)]  # oldest first

    def text(row: dict[str, Any], name: str) -> str:
        term = row.get(name)
        return "" if term is None else _text(to_python(term))

    return {
        "session": session,
        "ended": bool(store.query(_ENDED, {"session": IRI.trusted(session)})),
        "more": len(listed) >= STEPS_SHOWN,
        "steps": [
            {
                "activity": text(r, "a"),
                "label": text(r, "label"),
                "started": text(r, "started"),
                "ended": text(r, "ended"),
                "status": text(r, "status"),
            }
            for r in listed
        ],
    }


class Live:
    """The one watcher of the store behind every live page.

    Args:
        console: the console (its evaluator says where the store is).
        every: seconds between two looks at the change marker.
    """

    def __init__(self, console: Console, *, every: float = EVERY) -> None:
        self.console = console
        self.every = every
        self.reads = 0  # how many times the store was read (a test counts them)
        self._subscribers: set[_Subscriber] = set()
        self._fresh: set[_Subscriber] = set()
        self._task: asyncio.Task[None] | None = None
        self._arrival: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped = threading.Event()
        self._marker: object = None
        self._sessions: list[dict[str, Any]] = []
        self._steps: dict[str, dict[str, Any]] = {}

    # -- where the store is and whether it changed ----------------------------------

    def _directory(self) -> Path | None:
        where = getattr(self.console.evaluator, "location", None)
        if isinstance(where, str) and not where.startswith(("http://", "https://", "memory:")):
            return Path(where)
        return None

    def _inline(self) -> Store | None:
        store = getattr(self.console.evaluator, "store", None)
        return store if isinstance(store, Store) else None

    def _changed(self) -> bool:
        """Whether the store changed since the last read (always, for a store with no marker)."""
        directory, inline = self._directory(), self._inline()
        marker: object
        if directory is not None:
            marker = change_marker(directory)
        elif inline is not None and isinstance(getattr(inline, "changes", None), int):
            marker = getattr(inline, "changes", None)
        else:
            return True
        if marker == self._marker:
            return False
        self._marker = marker
        return True

    def _read(self, sessions: set[str]) -> None:
        """Read the newest sessions and the steps of each watched session, from one fresh
        snapshot (a directory store), the store itself (in process) or the evaluator."""
        directory, inline = self._directory(), self._inline()
        store: Store
        if directory is not None:
            store = open_store(directory, base_iri=self.console.base_iri, read_only=True)
        else:
            store = inline if inline is not None else self.console.system
        try:
            self.reads += 1
            page = sessions_page(store, {}, NEWEST)
            self._sessions = [
                {
                    c: _text(to_python(t)) if t is not None else ""
                    for c, t in zip(page.variables, row, strict=True)
                    if c in _COLUMNS
                }
                for row in page.rows
            ]
            self._steps = {s: session_steps(store, s) for s in sessions}
        finally:
            if directory is not None:
                store.close()

    # -- the watcher ----------------------------------------------------------------

    def _payload(self, subscriber: _Subscriber) -> str:
        """The event a subscriber is due: its session's steps, or the sessions it may read."""
        if subscriber.session is not None:
            steps = self._steps.get(subscriber.session)
            return "" if steps is None else "event: steps\ndata: " + json.dumps(steps) + "\n\n"
        rows = [r for r in self._sessions if readable_row(self.console, subscriber.login, r)]
        return "event: sessions\ndata: " + json.dumps({"rows": rows}) + "\n\n"

    async def _watch(self) -> None:
        assert self._arrival is not None
        while self._subscribers and not self._stopped.is_set():
            self._arrival.clear()
            fresh, self._fresh = self._fresh, set()
            try:
                changed = await asyncio.to_thread(self._changed)
                unknown = {s.session for s in fresh if s.session is not None} - set(self._steps)
                if changed or unknown or (fresh and not self.reads):
                    watched = {s.session for s in self._subscribers if s.session is not None}
                    await asyncio.to_thread(self._read, watched)
                for subscriber in list(self._subscribers):
                    payload = self._payload(subscriber)
                    if payload and payload != subscriber.sent:
                        subscriber.sent = payload
                        subscriber.queue.put_nowait(payload)
            except Exception as exc:  # a read that failed: said once to each page, retried
                said = "event: problem\ndata: " + json.dumps({"message": str(exc)}) + "\n\n"
                for subscriber in list(self._subscribers):
                    subscriber.queue.put_nowait(said)
                self._marker = None
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._arrival.wait(), self.every)
        self._task = None

    async def stream(self, login: Login, session: str | None) -> AsyncIterator[str]:
        """The events of one subscriber, until it goes away or the server stops."""
        subscriber = _Subscriber(login, session)
        self._loop = asyncio.get_running_loop()
        if self._arrival is None:
            self._arrival = asyncio.Event()
        self._subscribers.add(subscriber)
        self._fresh.add(subscriber)
        self._arrival.set()  # its first event is not a second late
        if self._task is None:
            self._task = asyncio.create_task(self._watch())
        try:
            yield "retry: 1000\n\n"
            while not self._stopped.is_set():
                try:
                    item = await asyncio.wait_for(subscriber.queue.get(), _KEEP_ALIVE)
                except TimeoutError:
                    yield ": still here\n\n"
                    continue
                if item is None:
                    break
                yield item
        finally:
            self._subscribers.discard(subscriber)
            self._fresh.discard(subscriber)

    @property
    def subscribers(self) -> int:
        """How many streams are open."""
        return len(self._subscribers)

    def stop(self) -> None:
        """End every stream (from any thread, a signal handler's included)."""
        self._stopped.set()
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            for subscriber in list(self._subscribers):
                loop.call_soon_threadsafe(subscriber.queue.put_nowait, None)
            if self._arrival is not None:
                loop.call_soon_threadsafe(self._arrival.set)


def live_of(console: Console) -> Live:
    """The console's watcher, made on first use."""
    found = getattr(console, "live", None)
    if not isinstance(found, Live):
        found = Live(console)
        console.live = found
    return found


async def events(console: Console, request: Request, login: Login) -> Response:
    """``/console/events`` (``?s=IRI``: one session's steps): the live page's event stream."""
    live = live_of(console)
    session = request.query_params.get("s")
    if session is not None:
        session = str(await asyncio.to_thread(console.may_read, login, session))
    if live._stopped.is_set():
        return PlainTextResponse("the server is stopping\n", status_code=503)
    return StreamingResponse(
        live.stream(login, session),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
