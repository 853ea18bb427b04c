"""A recording MCP proxy: any client, any server, every tool call on the record.

``trails mcp proxy -- COMMAND ARGS...`` (or ``--upstream URL``) sits between an MCP
client on the proxy's standard input and output and an MCP server it starts (stdio)
or reaches (streamable HTTP). It relays JSON-RPC messages, not MCP calls: a server
it started gets each line the client wrote, byte for byte, and the client each line
the server wrote (the SDK's parser reads a copy, only to watch it); a server over
HTTP gets each message the SDK's transports read, as it is, in the order it came.
So the client gets what a direct connection would give it: the proxy neither
negotiates nor re-encodes anything of its own (a proxy that spoke MCP to both sides
would answer with its own handshake and capabilities instead of the server's).

What it watches as messages pass: the client's ``initialize`` (its name and
version), the server's answer (its name and version) and every ``tools/call``
with the response or error that settles it. Each call becomes a
``trails:CapabilityInvocation`` (``SERVER.TOOL``, the arguments as input, the
result as output, ``isError`` results and JSON-RPC errors as ``error``, start and
end time) associated with the proxy's principal and with the server as a
``prov:SoftwareAgent`` (``trails.mcp.events``), the principal acting on behalf of
the client's software agent. A call is written after its response is passed on,
so recording adds no wait to the answer. One trails session per client
connection, opened when the client connects and ended (so sealed) when either
side closes; a call the server never answered ends ``interrupted``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO
from urllib.parse import quote

import anyio
from mcp import types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.message import SessionMessage

from trails.errors import TrailsError, UserError
from trails.kernel.context import Context, now
from trails.mcp.events import McpToolCalled
from trails.prov.builder import QuadBuilder
from trails.prov.events import CapabilityInvoked, Event
from trails.prov.recorder import Recorder
from trails.prov.vocab import PROV, T
from trails.store.terms import IRI

__all__ = ["McpClientActedFor", "Proxy", "ProxyError", "client_iri"]

log = logging.getLogger(__name__)

_EXIT_WAIT = 2.0  # seconds a server gets to exit once its input closed (then once stopped)
#: Seconds an ``--upstream`` server has to answer the proxy's first request (a GET).
CONNECT_TIMEOUT_S = 10.0
_UNANSWERED = "the connection closed before the server answered"


class ProxyError(UserError):
    """The proxy cannot reach its server (a command that does not start)."""


def client_iri(base: str, name: str, version: str) -> IRI:
    """The IRI of an MCP client's software agent: one per name and version."""
    parts = ":".join(quote(part, safe="-._~") for part in (name, version))
    return IRI.trusted(f"{base}mcp-client:{parts}")


class McpClientActedFor(Event):
    """The client behind a proxied call: the principal acted on its behalf."""

    activity: str
    principal: str
    client_name: str
    client_version: str
    latency_ms: float

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        client = client_iri(b.minter.base, self.client_name, self.client_version)
        b.types(client, PROV.SoftwareAgent, PROV.Agent)
        b.label(client, f"MCP client {self.client_name} {self.client_version}".strip())
        b.value(client, T.mcpClientName, self.client_name)
        b.value(client, T.mcpClientVersion, self.client_version)
        b.add(b.agent(self.principal), PROV.actedOnBehalfOf, client)
        b.value(a, T.latencyMs, round(self.latency_ms, 3))


@dataclass
class _Call:
    """A ``tools/call`` on its way: what was asked, and when."""

    tool: str
    arguments: Any
    started: Any
    clock: float


class _Watch:
    """One client connection: what the messages said, and its trails session."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self.client = ("unknown", "")
        self.server = ("unknown", "")
        self.init_id: Any = None
        self.pending: dict[Any, _Call] = {}
        self.session: Context | None = None

    def open(self) -> Context:
        if self.session is None:
            name, version = self.client
            self.session = Context.open(
                self.proxy.principal,
                recorder=self.proxy.recorder,
                label=f"MCP proxy: client {name} {version} to server {self.server[0]}".strip(),
            )
            self.proxy.sessions.append(str(self.session.session))
        return self.session

    def from_client(self, message: Any) -> None:
        if isinstance(message, types.JSONRPCRequest):
            params = message.params or {}
            if message.method == "initialize":
                info = params.get("clientInfo") or {}
                self.client = (str(info.get("name", "unknown")), str(info.get("version", "")))
                self.init_id = message.id
            elif message.method == "tools/call":
                self.pending[message.id] = _Call(
                    str(params.get("name", "")), params.get("arguments"), now(), time.perf_counter()
                )

    def from_server(self, message: Any) -> None:
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return
        if message.id == self.init_id and self.init_id is not None:
            self.init_id = None
            if isinstance(message, types.JSONRPCResponse):
                info = message.result.get("serverInfo") or {}
                self.server = (str(info.get("name", "unknown")), str(info.get("version", "")))
            self.open()
            return
        call = self.pending.pop(message.id, None)
        if call is None:
            return
        if isinstance(message, types.JSONRPCError):
            error: str | None = f"JSON-RPC error {message.error.code}: {message.error.message}"
            self.record(call, "error", None, error)
        elif message.result.get("isError"):
            self.record(call, "error", message.result, _error_text(message.result))
        else:
            self.record(call, "ok", message.result, None)

    def record(self, call: _Call, status: str, output: Any, error: str | None) -> None:
        """Write one call, its server and its client in one atomic write."""
        ctx = self.open()
        recorder = self.proxy.recorder
        activity = str(recorder.minter.activity())
        name, version = self.server
        capability = f"{name}.{call.tool}"
        event = CapabilityInvoked(
            session=str(ctx.session),
            activity=activity,
            parent=None,
            principal=ctx.principal,
            capability_id=capability,
            description=f"tool {call.tool} of the MCP server {name}, through the proxy",
            started=call.started,
            ended=now(),
            status=status,  # type: ignore[arg-type]
            inputs=call.arguments,
            output=output,
            error=error,
        )
        server = McpToolCalled(
            session=str(ctx.session),
            activity=activity,
            capability_id=capability,
            tool=call.tool,
            server_name=name,
            server_version=version,
            transport=self.proxy.transport,
        )
        client = McpClientActedFor(
            session=str(ctx.session),
            activity=activity,
            principal=ctx.principal,
            client_name=self.client[0],
            client_version=self.client[1],
            latency_ms=(time.perf_counter() - call.clock) * 1000,
        )
        try:
            recorder.record(event, also=[server, client])
        except TrailsError:
            log.exception("could not record the proxied call to %s", capability)

    def close(self) -> None:
        """Record the calls left unanswered, then end (and seal) the session."""
        cut = list(self.pending.values())
        self.pending.clear()
        for call in cut:
            self.record(call, "interrupted", None, _UNANSWERED)
        if self.session is None:
            return
        try:
            if cut:  # the calls name the session's interruption, which its end writes
                self.session.close("interrupted", reason=_UNANSWERED)
            else:
                self.session.close()
        except TrailsError:
            log.exception("could not end the proxied session %s", self.session.session)


def _lines(fd: int) -> Iterator[bytes]:
    """The lines read from file descriptor ``fd``, each with its newline, until its end.

    Read with ``os.read``, not a buffered file: the thread that reads the client may
    still be waiting when the server has gone and the process exits, and a buffered
    reader's lock held at exit stops the interpreter.
    """
    pending = b""
    while chunk := os.read(fd, 65536):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line + b"\n"
    if pending:
        yield pending


def _innermost(exc: BaseException) -> BaseException:
    """The first exception inside nested exception groups (what actually went wrong)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _parse(line: bytes) -> Any:
    """The JSON-RPC message on one line, or None for a line that is not one."""
    try:
        return types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:
        return None


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Let the server exit on the end of its input; stop it if it does not."""
    for stop in (None, process.terminate, process.kill):
        if stop is not None:
            stop()
        try:
            process.wait(timeout=_EXIT_WAIT)
            return
        except subprocess.TimeoutExpired:
            continue


def _error_text(result: dict[str, Any]) -> str:
    texts = [
        str(block.get("text", ""))
        for block in result.get("content") or []
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    return "\n".join(texts) or "the tool reported an error"


class Proxy:
    """Relays one MCP client to one MCP server and records the tool calls.

    Args:
        recorder: writes the calls (``Recorder.from_settings`` seals the sessions).
        principal: who runs the proxy (the calls are associated with it).
        command: the server's command line (stdio), or None with ``upstream``.
        upstream: the server's streamable HTTP URL, or None with ``command``.
        env: extra environment for the server's process.
        cwd: the server's working directory.
        headers: HTTP headers for every request to ``upstream`` (its ``Authorization``).
        connect_timeout_s: how long ``upstream`` has to answer the first request, a GET
            sent before the client is relayed (any HTTP answer will do): past it, or
            when it cannot be connected to at all, ``run_stdio`` fails with ``ProxyError``.
    """

    def __init__(
        self,
        recorder: Recorder,
        *,
        principal: str,
        command: list[str] | None = None,
        upstream: str | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        headers: dict[str, str] | None = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> None:
        if bool(command) == bool(upstream):
            raise ValueError("give the server's command or its upstream URL, not both")
        self.recorder = recorder
        self.principal = principal
        self.command = command
        self.upstream = upstream
        self.env = env
        self.cwd = cwd
        self.headers = dict(headers or {})
        self.connect_timeout_s = connect_timeout_s
        self.transport = "stdio" if command else "streamable-http"
        self.sessions: list[str] = []
        """The trails sessions this proxy recorded, one per client connection."""

    @asynccontextmanager
    async def _server(self) -> AsyncIterator[tuple[Any, Any]]:
        if self.command:
            params = StdioServerParameters(
                command=self.command[0], args=self.command[1:], env=self.env, cwd=self.cwd
            )
            async with stdio_client(params) as streams:
                yield streams
        else:
            assert self.upstream is not None
            async with (
                create_mcp_http_client(headers=self.headers) as http,
                streamable_http_client(self.upstream, http_client=http) as streams,
            ):
                yield streams[0], streams[1]

    def run_stdio(
        self, client_in: BinaryIO | None = None, client_out: BinaryIO | None = None
    ) -> None:
        """Relay a client (this process's stdin and stdout by default) until either side closes.

        A server started from ``command`` is relayed line by line: each JSON-RPC message
        is passed on as the very bytes it arrived as (read by the SDK's parser on the way,
        only to be watched). A server at ``upstream`` is reached through the SDK's
        streamable HTTP client (``relay``).

        Raises:
            ProxyError: the server's command cannot be started, or the ``upstream``
                server cannot be reached (no HTTP answer in ``connect_timeout_s``).
        """
        if self.upstream:
            try:
                anyio.run(self._relay_stdio)
            except ProxyError:
                raise
            except Exception as exc:  # the SDK's transport raises inside its task groups
                cause = _innermost(exc)
                raise ProxyError(
                    f"the MCP server at {self.upstream} failed: {type(cause).__name__}: {cause}"
                ) from None
            return
        assert self.command is not None
        client_in = client_in or sys.stdin.buffer
        client_out = client_out or sys.stdout.buffer
        try:
            process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                cwd=self.cwd,
                env={**os.environ, **(self.env or {})},
            )
        except OSError as exc:
            raise ProxyError(f"cannot start the MCP server {self.command[0]!r}: {exc}") from None
        watch = _Watch(self)
        to_server, from_server = process.stdin, process.stdout
        assert to_server is not None and from_server is not None

        def forward() -> None:  # client -> server, on a thread of its own
            try:
                for line in _lines(client_in.fileno()):
                    watch.from_client(_parse(line))  # noted before the server can answer
                    to_server.write(line)
                    to_server.flush()
            except OSError:  # the server went away
                pass
            finally:
                with contextlib.suppress(OSError):
                    to_server.close()

        threading.Thread(target=forward, name="trails-mcp-proxy", daemon=True).start()
        try:
            for line in iter(from_server.readline, b""):
                client_out.write(line)
                client_out.flush()
                watch.from_server(_parse(line))  # recorded once the client has the answer
        except OSError:  # the client went away
            pass
        finally:
            _stop(process)
            watch.close()

    async def _relay_stdio(self) -> None:
        await self._reach()
        async with stdio_server() as (read, write):
            try:
                await self.relay(read, write)
            finally:  # the SDK's stdout writer runs until this stream closes
                await write.aclose()

    async def _reach(self) -> None:
        """Check that an HTTP server answers at ``upstream`` before relaying anything (a
        client that sends nothing, or only after a while, would otherwise not learn it).

        Raises:
            ProxyError: no connection, or no answer within ``connect_timeout_s``.
        """
        import httpx2

        assert self.upstream is not None
        timeout = self.connect_timeout_s
        problem = f"no answer in {timeout:g} s"
        try:
            with anyio.move_on_after(timeout):
                async with (
                    create_mcp_http_client(
                        headers=self.headers, timeout=httpx2.Timeout(timeout)
                    ) as http,
                    http.stream("GET", self.upstream, headers={"Accept": "text/event-stream"}),
                ):
                    return  # any answer: the server is there
        except (httpx2.TimeoutException, TimeoutError):
            pass
        except (httpx2.HTTPError, OSError, ValueError) as exc:
            problem = f"{type(exc).__name__}: {' '.join(str(exc).split()) or 'no detail'}"
        raise ProxyError(f"cannot reach the MCP server at {self.upstream}: {problem}")

    async def relay(self, client_read: Any, client_write: Any) -> None:
        """Relay one client connection (a pair of SDK message streams) to the server."""
        watch = _Watch(self)
        try:
            async with (
                self._server() as (server_read, server_write),
                anyio.create_task_group() as tg,
            ):

                async def pump(source: Any, sink: Any, seen: Any, first: bool) -> None:
                    async for item in source:
                        if isinstance(item, Exception):  # a line that was not JSON-RPC
                            log.warning("dropped an unreadable MCP message: %s", item)
                            continue
                        if first:  # a request is noted before the server can answer it
                            seen(item.message)
                        await sink.send(SessionMessage(item.message))
                        if not first:  # an answer is recorded once the client has it
                            seen(item.message)
                    tg.cancel_scope.cancel()  # one side closed: the connection is over

                tg.start_soon(pump, client_read, server_write, watch.from_client, True)
                tg.start_soon(pump, server_read, client_write, watch.from_server, False)
        finally:
            with anyio.CancelScope(shield=True):
                watch.close()
