"""Request heads that must arrive in time: the HTTP protocol of ``trails serve`` and ``otlp``.

uvicorn closes a keep-alive connection that stays idle, and the endpoint cuts off a
request body that trickles in (``limits.BODY_SECONDS``), but uvicorn itself puts no
bound on the request *head*: a client that opens a connection and sends its request
line and headers one byte a second holds that connection for as long as it likes, and
a few hundred such clients fill the server's connection limit.

``head_limited(seconds)`` is uvicorn's httptools protocol (a C parser: the HTTP layer
costs the event loop far less per request than the pure-Python h11 one) with a head
timer. The timer starts when a connection is made, and again when the first byte of a
later request on a keep-alive connection arrives; it stops when the head is complete
(the parser's ``on_headers_complete``). A head still incomplete after ``seconds`` is
answered ``408 Request Timeout`` and the connection closed (a connection that sent
nothing at all is closed without an answer). While its head is awaited, a connection
does not count against uvicorn's ``limit_concurrency``: a crowd of trickling clients
waits for its own timeout instead of making the server answer 503 to everyone else.

A head may hold ``HEAD_BYTES`` (64 KiB): the parser has no limit of its own, so the
protocol counts the bytes of each head as they arrive and answers a longer one ``431
Request Header Fields Too Large``. The server runs on uvloop where it can be imported,
on asyncio's own loop elsewhere (uvicorn's ``loop="auto"``).
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from trails.errors import ConfigError

__all__ = [
    "HEAD_BYTES",
    "HEAD_SECONDS",
    "HeadLimitedProtocol",
    "head_limited",
    "head_timeout",
    "server_limits",
]

HEAD_SECONDS = 10.0
"""How long a request head (request line and headers) may take to arrive, whole."""

HEAD_BYTES = 64 * 1024
"""How large a request head (request line and headers) may be (431 beyond)."""

LINGER_SECONDS = 2.0
"""How long a connection answered 408 or 431 stays half-open, its input dropped, before it
closes."""


class HeadLimitedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with a time and size limit on each request head.

    Use a class made by ``head_limited``: it holds the limits and the set of
    connections of one server whose head is awaited (see the module).
    """

    head_timeout: ClassVar[float] = HEAD_SECONDS
    head_bytes: ClassVar[int] = HEAD_BYTES
    awaiting: ClassVar[set[HeadLimitedProtocol]] = set()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limit = self.limit_concurrency
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_begun = False
        self._in_head = True  # the bytes that come next belong to a request head
        self._head_size = 0  # bytes of that head so far
        self._lingering = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """A new connection: its first head is awaited from now."""
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        """The connection is gone: no head to wait for."""
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Bytes arrived: fed to the parser, a head's counted against ``head_bytes``."""
        if self._lingering:
            return  # answered 408 or 431: what the client still sends is read and dropped
        if self._head_timer is None and self._in_head:
            self._arm()  # the first bytes of a later request on a keep-alive connection
        self._head_begun = self._head_begun or bool(data)
        while data:
            if not self._in_head:  # a request body: fed as it comes
                super().data_received(data)
                return
            # a head: fed up to its limit, so a head that would pass it is never buffered
            # (a request pipelined in the same piece as the one before it starts its count
            # after that piece: its head may reach twice the limit before it is refused)
            room = self.head_bytes - self._head_size
            piece, data = data[:room], data[room:]
            self._head_size += len(piece)
            if piece:
                super().data_received(piece)
            if self.transport.is_closing() or self._lingering:
                return
            if data and self._in_head:
                self._refuse(431, f"the request head is larger than {self.head_bytes} bytes\n")
                return

    def on_message_begin(self) -> None:
        """A request starts (one pipelined behind another too): its head is timed."""
        if self._head_timer is None:
            self._arm()
            self._head_begun = True
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        """The head is whole: stop its timer, count the connection against the limit."""
        self._disarm()
        self._in_head = False
        if self._limit is not None:  # connections still awaiting their head are not counted
            self.limit_concurrency = self._limit + len(self.awaiting)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        """The request is whole: what comes next is the next request's head."""
        self._in_head, self._head_size = True, 0
        super().on_message_complete()

    def _arm(self) -> None:
        self._head_begun = False
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_late)
        self.awaiting.add(self)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self.awaiting.discard(self)

    def _head_late(self) -> None:
        self._head_timer = None
        self.awaiting.discard(self)
        if self.transport.is_closing():
            return
        if self._head_begun:
            self._refuse(408, f"the request head did not arrive within {self.head_timeout:g} s\n")
        else:
            self.transport.close()

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` before any request reached the app, and close (lingering)."""
        self._disarm()
        self._lingering = True  # what the client still sends is read and dropped
        if self.cycle is not None and not self.cycle.response_complete:
            # a request pipelined behind one still being answered: no answer of its
            # own; the connection closes once that answer is sent
            self.cycle.keep_alive = False
            return
        reason = {408: b"Request Timeout", 431: b"Request Header Fields Too Large"}[status]
        body = message.encode()
        status_line = b"HTTP/1.1 %d %s\r\n" % (status, reason)
        self.transport.write(
            status_line + b"content-type: text/plain; charset=utf-8\r\n"
            b"connection: close\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        if self.transport.can_write_eof():
            # a lingering close: closing now, with the client's last bytes unread,
            # would reset the connection and could destroy the answer before it is read;
            # half-close, drop what still comes, close once the client has had time
            self.transport.write_eof()
            self.loop.call_later(LINGER_SECONDS, self.transport.close)
            return
        self.transport.close()


def head_limited(seconds: float = HEAD_SECONDS) -> type[HeadLimitedProtocol]:
    """The protocol class to give uvicorn (``uvicorn.Config(app, http=...)``).

    Args:
        seconds: how long a request head may take to arrive.

    Returns:
        A subclass of ``HeadLimitedProtocol`` of its own (one per server: it keeps
        the connections whose head that server awaits).
    """
    attributes: dict[str, Any] = {"head_timeout": float(seconds), "awaiting": set()}
    return type("HeadLimitedProtocol", (HeadLimitedProtocol,), attributes)


def head_timeout(section: dict[str, Any], name: str, value: Any = None) -> float:
    """The head timeout from ``value`` (the command line), else ``section["header_timeout"]``.

    Args:
        section: the trails.toml table (``[serve]`` or ``[otel]``).
        name: the table's name, for the error message.
        value: a value given on the command line (None: not given).

    Returns:
        Seconds (default ``HEAD_SECONDS``).

    Raises:
        ConfigError: the value is not a positive number.
    """
    raw = value if value is not None else section.get("header_timeout", HEAD_SECONDS)
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"[{name}] header_timeout must be a number, not {raw!r}") from None
    if not seconds > 0 or seconds == float("inf"):
        raise ConfigError(f"[{name}] header_timeout must be a positive number, not {raw!r}")
    return seconds


def server_limits(seconds: float = HEAD_SECONDS) -> dict[str, Any]:
    """The protocol, loop and connection limits every trails HTTP server runs with
    (``uvicorn.Config(app, **server_limits(...))``): an idle keep-alive connection is
    closed after 5 s, at most 256 connections are served at once (503 beyond), and a
    request head may hold 64 KiB (431 beyond) and must arrive within ``seconds`` (408):
    a crowd of slow clients cannot hold the server.

    Args:
        seconds: how long a request head may take to arrive.
    """
    return {
        "http": head_limited(seconds),
        "loop": "auto",  # uvloop where it can be imported, else asyncio's own loop
        "timeout_keep_alive": 5,
        "limit_concurrency": 256,
    }
