"""Request heads that must arrive in time: the HTTP protocol of ``trails serve`` and ``otlp``.

uvicorn closes a keep-alive connection that stays idle, and the endpoint cuts off a
request body that trickles in (``limits.BODY_SECONDS``), but uvicorn itself puts no
bound on the request *head*: a client that opens a connection and sends its request
line and headers one byte a second holds that connection for as long as it likes, and
a few hundred such clients fill the server's connection limit.

``head_limited(seconds)`` is uvicorn's h11 protocol with a head timer. The timer starts
when a connection is made, and again when the first byte of a later request on a
keep-alive connection arrives; it stops when the head is complete. A head still
incomplete after ``seconds`` is answered ``408 Request Timeout`` and the connection
closed (a connection that sent nothing at all is closed without an answer). While its
head is awaited, a connection does not count against uvicorn's ``limit_concurrency``:
a crowd of trickling clients waits for its own timeout instead of making the server
answer 503 to everyone else.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from trails.errors import ConfigError

__all__ = ["HEAD_SECONDS", "HeadLimitedProtocol", "head_limited", "head_timeout", "server_limits"]

HEAD_SECONDS = 10.0
"""How long a request head (request line and headers) may take to arrive, whole."""

LINGER_SECONDS = 2.0
"""How long a connection answered 408 stays half-open, its input dropped, before it closes."""


class HeadLimitedProtocol(H11Protocol):
    """uvicorn's h11 protocol, with a time limit on each request head (see the module).

    Use a class made by ``head_limited``: it holds the limit and the set of
    connections of one server whose head is awaited.
    """

    head_timeout: ClassVar[float] = HEAD_SECONDS
    awaiting: ClassVar[set[HeadLimitedProtocol]] = set()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limit = self.limit_concurrency
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_begun = False
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
        """Bytes arrived: a new head starts its timer, a complete head stops it."""
        if self._lingering:
            return  # answered 408: what the client still sends is read and dropped
        if self._head_timer is None and self.conn.their_state is h11.IDLE:
            self._arm()  # the first bytes of a later request on a keep-alive connection
        self._head_begun = self._head_begun or bool(data)
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()

    def handle_events(self) -> None:
        """Count against the concurrency limit only connections whose head has arrived."""
        if self._limit is not None:
            waiting = len(self.awaiting) - (self in self.awaiting)
            self.limit_concurrency = self._limit + waiting
        super().handle_events()

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
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self._head_begun:  # h11 sends no response before a request: written as is
            message = f"the request head did not arrive within {self.head_timeout:g} s\n"
            body = message.encode()
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\n"
                b"content-type: text/plain; charset=utf-8\r\n"
                b"connection: close\r\n"
                b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )
            if self.transport.can_write_eof():
                # a lingering close: closing now, with the client's last bytes unread,
                # would reset the connection and could destroy the 408 before it is read;
                # half-close, drop what still comes, close once the client has had time
                self.transport.write_eof()
                self._lingering = True
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
    """The connection limits every trails HTTP server runs with (``uvicorn.Config(app,
    **server_limits(...))``): an idle keep-alive connection is closed after 5 s, at most
    256 connections are served at once (503 beyond), and a request head may hold 64 KiB
    and must arrive within ``seconds`` (408): a crowd of slow clients cannot hold the
    server.

    Args:
        seconds: how long a request head may take to arrive.
    """
    return {
        "http": head_limited(seconds),
        "timeout_keep_alive": 5,
        "limit_concurrency": 256,
        "h11_max_incomplete_event_size": 64 * 1024,
    }
