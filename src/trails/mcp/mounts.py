"""Mounting an MCP server: each of its tools a capability that ``invoke`` records.

``mount(server)`` starts (stdio: a command line as a list) or reaches (streamable
HTTP: an ``http(s)://`` URL) an MCP server with the official SDK, lists its
tools and registers each as the capability ``PREFIX.TOOL`` (the prefix defaults
to the name the server gives in its handshake). The description and the input
and output JSON schemas are the server's; ``readOnlyHint`` / ``destructiveHint``
say whether a call has side effects (a tool that says neither is taken to have
them, as MCP does). Planners then see the tools in their catalogue and every
call goes through ``invoke``: arguments validated against the server's schema,
the tool policy asked, the start written ahead when it has side effects, and
the call recorded with the server as a ``prov:SoftwareAgent``
(``trails.mcp.events``).

The SDK is asyncio: each mounted server keeps a connection open on an event
loop of its own, in a daemon thread, so a sync ``invoke`` waits on it and
``ainvoke`` (a worker thread) does too, whatever loop its caller runs.

Failures are clear and recorded: a server that cannot start fails ``mount``
with ``MountError`` (one line; with ``optional=True`` it is logged and ``None``
returned so a run goes on with the other tools); an error answer or an
``isError`` result is a recorded failed call (``ToolFailed``); a call not
answered within ``call_timeout_s`` fails with ``ToolTimedOut`` (and the server is
stopped when it does not answer a ``tools/list`` either); a server that stops during a
call fails it with ``ServerStopped``, and so does one that sends a message that
is not JSON-RPC (a ``tools/call`` result that is not an object, a line that is
not JSON): it is stopped, and every later call fails at once with the reason.
A tool whose id is already registered (the application's own capability, or
another mount's tool) is refused with ``MountError`` unless ``replace=True``;
a replaced capability of the application comes back when the server is
unmounted. ``tools/list_changed`` re-lists the tools and re-registers them.
Mounted servers are closed at exit.

``[[mcp.servers]]`` tables of trails.toml (``command`` + ``args`` + ``env``, or
``url`` + ``headers``; ``prefix``, ``optional``, ``cwd``) are mounted by
``mount_configured()``, and when a planner builds its catalogue or a session starts
(``install``, named by ``trails.config.MCP_SERVERS``), each once per process.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import create_model

from trails.config import Settings, load_settings
from trails.errors import CapabilityError, CapabilityTimeout, ConfigError, UserError
from trails.kernel.registry import CapabilitySpec, get_capability, register_spec, unregister
from trails.kernel.riders import ride
from trails.mcp.events import McpToolCalled
from trails.mcp.tools import (
    McpToolSpec,
    ToolArgs,
    ToolFailed,
    malformed,
    one_line,
    params_of,
    side_effects_of,
    tool_result,
    validator_of,
    whose,
)

__all__ = [
    "CALL_TIMEOUT_S",
    "McpToolSpec",
    "MountError",
    "MountedServer",
    "ServerStopped",
    "ToolFailed",
    "ToolTimedOut",
    "install",
    "mount",
    "mount_configured",
    "mounted",
    "unmount",
    "unmount_all",
]

log = logging.getLogger(__name__)

#: Seconds a server may take to start and answer its handshake and tool list.
START_TIMEOUT_S = 30.0
#: Seconds a tool call may wait for its answer (the MCP TypeScript SDK's default too).
CALL_TIMEOUT_S = 60.0
#: Seconds a server that let a call time out has to answer a ``tools/list`` before it is
#: stopped.
PROBE_TIMEOUT_S = 5.0
_GRACE_S = 5.0  # past the call's own timeout, the caller stops waiting on the SDK


class MountError(UserError):
    """An MCP server could not be mounted (it did not start, or did not answer)."""


class ServerStopped(CapabilityError):
    """The MCP server behind a mounted tool stopped (before or during the call), or was
    stopped because it broke the protocol (a malformed message)."""


class ToolTimedOut(CapabilityTimeout):
    """A mounted tool did not answer within the mount's ``call_timeout_s``."""

    def __init__(self, capability_id: str, timeout_s: float, detail: str) -> None:
        self.timeout_s = timeout_s
        CapabilityError.__init__(self, capability_id, f"no answer in {timeout_s:g} s; {detail}")


class MountedServer:
    """One MCP server's connection, held open on its own event loop, and its tools."""

    def __init__(
        self,
        server: str | Sequence[str],
        *,
        prefix: str | None = None,
        env: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        cwd: str | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
        call_timeout_s: float = CALL_TIMEOUT_S,
        replace: bool = False,
    ) -> None:
        if (
            isinstance(call_timeout_s, bool)
            or not isinstance(call_timeout_s, int | float)
            or not 0 < call_timeout_s < math.inf
        ):
            raise MountError(
                f"call_timeout_s must be a positive number of seconds, not {call_timeout_s!r}"
            )
        if isinstance(server, str):
            if not server.startswith(("http://", "https://")):
                raise MountError(
                    f"cannot mount {server!r}: give a command line as a list, or an "
                    "http(s):// URL of a streamable HTTP server"
                )
            self.transport = "streamable-http"
            self.target = server
        else:
            if not server or not all(isinstance(part, str) and part for part in server):
                raise MountError("cannot mount an MCP server: the command line is empty")
            self.transport = "stdio"
            self.target = " ".join(server)
        self._server = server
        self._env = dict(env or {})
        self._headers = dict(headers or {})
        self._cwd = cwd
        self._start_timeout_s = start_timeout_s
        self._call_timeout_s = float(call_timeout_s)
        self._replace = replace
        self._replaced: dict[str, CapabilitySpec] = {}
        """Capabilities of the application this mount replaced (``replace=True``), by id."""
        self._failed: str | None = None
        """Why the server was stopped for breaking the protocol, once it was."""
        self._ready: concurrent.futures.Future[list[Any]] | None = None
        self._prefix = prefix
        self.name = ""
        self.version = ""
        self.tools: dict[str, str] = {}
        """Capability id -> the tool's name on the server."""
        self._client: Any = None
        self._stopped: asyncio.Event | None = None
        self._gone: str | None = None
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="trails-mcp", daemon=True
        )

    @property
    def prefix(self) -> str:
        """The prefix of the capability ids (the server's name unless one was given)."""
        return self._prefix or self.name

    def start(self) -> MountedServer:
        """Connect, list the tools and register them.

        Raises:
            MountError: the server did not start, or did not answer in time.
        """
        self._thread.start()
        ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        self._ready = ready
        self._holder = asyncio.run_coroutine_threadsafe(self._hold(ready), self._loop)
        try:
            tools = ready.result(timeout=self._start_timeout_s)
        except concurrent.futures.TimeoutError:
            self.close()
            raise MountError(
                f"cannot mount the MCP server {self.target!r}: no answer in "
                f"{self._start_timeout_s:g}s"
            ) from None
        except Exception as exc:
            self.close()
            detail = str(exc) if isinstance(exc, _Broken) else one_line(exc)
            raise MountError(f"cannot mount the MCP server {self.target!r}: {detail}") from exc
        if not self.prefix.strip():
            self.close()
            raise MountError(f"the MCP server {self.target!r} has no name: give prefix=")
        try:
            self._register(tools, starting=True)
        except MountError:
            self.close()
            raise
        return self

    def _connection(self) -> Any:
        from mcp.client.stdio import StdioServerParameters

        if isinstance(self._server, str):
            if not self._headers:
                return self._server
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            return streamable_http_client(
                self._server, http_client=create_mcp_http_client(headers=self._headers)
            )
        command, *args = self._server
        return StdioServerParameters(
            command=command, args=list(args), env=self._env or None, cwd=self._cwd
        )

    async def _hold(self, ready: concurrent.futures.Future[list[Any]]) -> None:
        """Open the connection, hand over the tool list, keep it open until ``close``."""
        from mcp import Client
        from mcp.types import Implementation

        self._stopped = asyncio.Event()
        try:
            async with Client(
                self._connection(),
                client_info=Implementation(name="trails", version="0.1.0"),
                message_handler=self._on_message,
            ) as client:
                self._client = client
                info = client.session.server_info
                self.name = str(getattr(info, "name", "") or "")
                self.version = str(getattr(info, "version", "") or "")
                tools = await self._list(client)
                if self._failed is not None:  # a malformed message during the handshake
                    raise _Broken(self._failed)
                ready.set_result(tools)
                listening = asyncio.ensure_future(self._listen(client))
                try:
                    await self._stopped.wait()
                finally:
                    listening.cancel()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(exc))
            else:
                self._gone = self._failed or one_line(exc)
                log.warning("the MCP server %s stopped: %s", self.prefix, self._gone)
            if not isinstance(exc, Exception):
                raise
        finally:
            self._client = None
            if self._gone is None:
                self._gone = "it was unmounted"

    async def _list(self, client: Any) -> list[Any]:
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def _on_message(self, message: Any) -> None:
        """What the SDK passes on: a message it could not read (the server is stopped), or a
        changed tool list, which handshake-era servers announce as a plain notification."""
        if isinstance(message, Exception):
            self._fail(f"it sent {malformed(message)}")
            return
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            await self._resync()

    async def _listen(self, client: Any) -> None:
        """Newer servers announce it on a ``subscriptions/listen`` stream, when they offer one."""
        caps = client.session.server_capabilities
        tools = getattr(caps, "tools", None)
        if not getattr(tools, "list_changed", False):
            return
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    await self._resync()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an old server, or the stream dropped: no re-sync then
            log.debug("no tools/list_changed from %s: %s", self.prefix, one_line(exc))

    async def _resync(self) -> None:
        client = self._client
        if client is None:
            return
        try:
            tools = await asyncio.wait_for(self._list(client), self._call_timeout_s)
        except Exception as exc:  # TimeoutError too: the list is bounded like a call
            log.warning("could not re-list the tools of %s: %s", self.prefix, one_line(exc))
            return
        self._register(tools)

    def resync(self) -> None:
        """List the tools again and register what changed (``tools/list_changed`` does this)."""
        asyncio.run_coroutine_threadsafe(self._resync(), self._loop).result()

    def _fail(self, reason: str) -> None:
        """Stop a server that broke the protocol: the calls in flight, and every later one,
        fail with ``reason`` (run on the server's loop)."""
        if self._failed is None:
            self._failed = reason
            log.warning("stopping the MCP server %s: %s", self.prefix or self.target, reason)
        self._gone = self._failed
        self._client = None
        ready = self._ready
        if ready is not None and not ready.done():
            ready.set_exception(_Broken(reason))
        if self._stopped is not None:
            self._stopped.set()

    def _taken(self, capability_id: str) -> CapabilitySpec | None:
        """The capability registered under ``capability_id`` by someone else, if any (a tool
        of a mounted server that has stopped does not count: mounting anew replaces it)."""
        try:
            found = get_capability(capability_id)
        except UserError:
            return None
        if isinstance(found, McpToolSpec):
            owner = mounted().get(found.server)
            if found.owner == id(self) or (
                owner is not None and id(owner) == found.owner and not owner.alive
            ):
                return None
        return found

    @property
    def alive(self) -> bool:
        """Whether the connection is up (False once the server stopped or was stopped)."""
        return self._client is not None and self._holder_alive()

    def _register(self, tools: Sequence[Any], *, starting: bool = False) -> None:
        """Register the tools; a tool whose id is taken is refused (``MountError`` when
        mounting, left out with a warning on a later re-list) unless ``replace``."""
        with self._lock:
            specs = [self._spec(tool) for tool in tools]
            taken = {s.id: found for s in specs if (found := self._taken(s.id)) is not None}
            if taken and not self._replace:
                groups: dict[str, list[str]] = {}
                for cid, found in sorted(taken.items()):
                    groups.setdefault(whose(found), []).append(cid)
                what = "; ".join(
                    ", ".join(ids[:3])
                    + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
                    + f" ({owner})"
                    for owner, ids in groups.items()
                )
                message = (
                    f"the MCP server {self.target!r} would replace {what}: "
                    "give another prefix=, or replace=True"
                )
                if starting:
                    raise MountError(message)
                log.warning("%s; those tools are left out", message)
                specs = [s for s in specs if s.id not in taken]
            for cid, found in taken.items():
                if not isinstance(found, McpToolSpec):  # the application's: back at unmount
                    self._replaced.setdefault(cid, found)
            fresh: dict[str, str] = {}
            for spec in specs:
                register_spec(spec)
                fresh[spec.id] = str(spec.tool.get("name"))
            for gone in set(self.tools) - set(fresh):
                self._unregister(gone)
            self.tools = fresh

    def _unregister(self, capability_id: str) -> None:
        """Unregister a tool of this server (not one registered since under its id), and
        put back the application's capability it replaced."""
        try:
            spec = get_capability(capability_id)
        except UserError:
            return
        if isinstance(spec, McpToolSpec) and spec.owner == id(self):
            unregister(capability_id)
            replaced = self._replaced.pop(capability_id, None)
            if replaced is not None:
                register_spec(replaced)

    def _spec(self, tool: Any) -> McpToolSpec:
        wire = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        capability_id = f"{self.prefix}.{tool.name}"
        annotations = dict(wire.get("annotations") or {})
        name = str(tool.name)

        def call(ctx: Any, **kwargs: Any) -> Any:
            ride(
                getattr(ctx, "riders", None),
                getattr(ctx, "parent", None),
                McpToolCalled(
                    session=str(ctx.session),
                    activity=str(ctx.parent),
                    capability_id=capability_id,
                    tool=name,
                    server_name=self.name or self.prefix,
                    server_version=self.version or "unknown",
                    transport=self.transport,
                ),
            )
            return self.call(capability_id, name, kwargs)

        return McpToolSpec(
            id=capability_id,
            description=str(wire.get("description") or wire.get("title") or name),
            handler=call,
            takes_ctx=True,
            params=params_of(wire.get("inputSchema") or {}),
            input_model=create_model(f"{name}Input", __base__=ToolArgs),
            output_adapter=None,
            side_effects=side_effects_of(annotations),
            annotations={"mcp": annotations} if annotations else {},
            tool=wire,
            server=self.prefix,
            owner=id(self),
            validator=validator_of(wire),
        )

    def call(self, capability_id: str, tool: str, arguments: Mapping[str, Any]) -> Any:
        """Call ``tool`` and wait for its result (structured content, else its text).

        Raises:
            ToolFailed: the server answered with an error, or an ``isError`` result.
            ServerStopped: the server is gone, or went during the call.
        """
        client = self._client
        if client is None or self._loop.is_closed():
            raise ServerStopped(
                capability_id, f"the MCP server {self.prefix} stopped: {self._gone}"
            )
        timeout = self._call_timeout_s
        future = asyncio.run_coroutine_threadsafe(
            self._call(client, tool, dict(arguments)), self._loop
        )
        try:
            result = future.result(timeout=timeout + _GRACE_S)
        except concurrent.futures.TimeoutError:  # the SDK did not time out: the pipe is stuck
            future.cancel()
            self._loop.call_soon_threadsafe(
                self._fail, f"a call got no answer in {timeout:g} s and could not be cancelled"
            )
            raise ToolTimedOut(capability_id, timeout, "the server was stopped") from None
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                future.cancel()
                raise
            if isinstance(exc, _TimedOut):
                raise ToolTimedOut(capability_id, timeout, str(exc)) from None
            from mcp.shared.exceptions import MCPError
            from mcp.types import CONNECTION_CLOSED

            if self._failed is not None:
                raise ServerStopped(
                    capability_id,
                    f"the MCP server {self.prefix} was stopped during the call: {self._failed}",
                ) from exc
            closed = isinstance(exc, MCPError) and exc.error.code == CONNECTION_CLOSED
            if closed or self._client is None or not self._holder_alive():
                self._gone = "the connection closed"
                self._client = None
                raise ServerStopped(
                    capability_id,
                    f"the MCP server {self.prefix} stopped during the call ({one_line(exc)})",
                ) from exc
            if isinstance(exc, MCPError):
                raise ToolFailed(
                    capability_id, f"the server answered: {exc.error.message}"
                ) from exc
            raise ServerStopped(
                capability_id, f"the call to the MCP server {self.prefix} failed: {one_line(exc)}"
            ) from exc
        return tool_result(capability_id, result)

    async def _call(self, client: Any, tool: str, arguments: dict[str, Any]) -> Any:
        """One ``tools/call``, bounded by ``call_timeout_s``; past it, a ``tools/list`` (which
        every revision of MCP has, unlike ``ping``) says whether the server still answers:
        if it does not either, it is stopped."""
        from mcp.shared.exceptions import MCPError
        from mcp.types import REQUEST_TIMEOUT

        timeout = self._call_timeout_s
        try:
            return await client.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except MCPError as exc:
            if exc.error.code != REQUEST_TIMEOUT:
                raise
        probe = min(PROBE_TIMEOUT_S, timeout)
        try:
            await asyncio.wait_for(client.list_tools(cache_mode="refresh"), probe)
        except Exception:
            self._fail(
                f"it answered neither a call in {timeout:g} s nor a tools/list in {probe:g} s"
            )
            raise _TimedOut(
                "it did not answer a tools/list either: the server was stopped"
            ) from None
        raise _TimedOut("the server still answers (tools/list), so it stays mounted")

    def _holder_alive(self) -> bool:
        holder = getattr(self, "_holder", None)
        return holder is not None and not holder.done()

    def close(self) -> None:
        """Unregister the tools and close the connection (the stdio server stops)."""
        with self._lock:
            for capability_id in self.tools:
                self._unregister(capability_id)
            self.tools = {}
        if self._loop.is_closed():
            return
        stopped = self._stopped
        if stopped is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(stopped.set)
            holder = getattr(self, "_holder", None)
            if holder is not None and self._client is None:  # not mounted: do not wait on it
                holder.cancel()
            if holder is not None:
                try:
                    holder.result(timeout=10)
                except Exception:  # closing: what the connection says on its way out is moot
                    log.debug("closing %s", self.prefix, exc_info=True)
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        if not self._loop.is_running():
            self._loop.close()


class _Broken(Exception):
    """The server broke the protocol (its message says how)."""


class _TimedOut(Exception):
    """A call got no answer in time (its message says what became of the server)."""


_mounted: dict[str, MountedServer] = {}
_mounted_lock = threading.Lock()


def mount(
    server: str | Sequence[str],
    *,
    prefix: str | None = None,
    optional: bool = False,
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    cwd: str | None = None,
    start_timeout_s: float = START_TIMEOUT_S,
    call_timeout_s: float = CALL_TIMEOUT_S,
    replace: bool = False,
) -> MountedServer | None:
    """Mount an MCP server's tools as capabilities ``PREFIX.TOOL``.

    Args:
        server: a command line as a list (a stdio server this process starts), or the
            ``http(s)://`` URL of a streamable HTTP server.
        prefix: the capability ids' prefix (default: the server's name).
        optional: when the server cannot be mounted, log it and return None instead
            of raising, so a run goes on with the other tools.
        env: environment variables for a stdio server (over a safe default set).
        headers: HTTP headers for a streamable HTTP server (``Authorization`` ...).
        cwd: the working folder of a stdio server.
        start_timeout_s: how long the server may take to answer its handshake.
        call_timeout_s: how long a tool call may wait for its answer (default 60 s);
            past it the call fails with ``ToolTimedOut`` (recorded), and the server is
            stopped if it does not answer a ``tools/list`` either.
        replace: let the tools replace capabilities registered under the same ids
            (the application's own, or another mount's) and this mount replace a
            server mounted under the same prefix. Without it such a collision is a
            ``MountError``: a server cannot shadow a capability by naming itself after
            its prefix. A replaced capability of the application comes back when the
            server is unmounted.

    Returns:
        The mounted server (its ``tools`` map capability ids to tool names), or None
        when an optional server could not be mounted.

    Raises:
        MountError: the server could not be mounted, or its tools would replace
            registered capabilities (and ``optional`` is False).
    """
    try:
        mounted_server = MountedServer(
            server,
            prefix=prefix,
            env=env,
            headers=headers,
            cwd=cwd,
            start_timeout_s=start_timeout_s,
            call_timeout_s=call_timeout_s,
            replace=replace,
        ).start()
        with _mounted_lock:
            old = _mounted.get(mounted_server.prefix)
            if old is None or replace or not old.alive:
                _mounted[mounted_server.prefix] = mounted_server
        if old is not None and not replace and old.alive:
            mounted_server.close()
            raise MountError(
                f"an MCP server is already mounted as {mounted_server.prefix!r} "
                f"({old.target}): unmount it, give another prefix=, or replace=True"
            )
    except MountError as exc:
        if not optional:
            raise
        log.warning("%s; going on without its tools", exc)
        return None
    if old is not None:
        old.close()
    return mounted_server


def mounted() -> dict[str, MountedServer]:
    """The mounted servers by prefix."""
    with _mounted_lock:
        return dict(_mounted)


def unmount(prefix: str) -> None:
    """Close the server mounted under ``prefix`` and unregister its tools (no-op if none)."""
    with _mounted_lock:
        found = _mounted.pop(prefix, None)
    if found is not None:
        found.close()


def unmount_all() -> None:
    """Close every mounted server (run at exit)."""
    with _mounted_lock:
        servers = list(_mounted.values())
        _mounted.clear()
    for found in servers:
        found.close()


atexit.register(unmount_all)

_SERVER_KEYS = frozenset(
    {"command", "args", "env", "url", "headers", "prefix", "optional", "cwd"}
    | {"call_timeout_s", "replace"}
)
_configured: dict[str, str | None] = {}
"""Each configured server this process tried -> the prefix it is mounted under (None: an
optional one that could not be mounted, not tried again)."""


def _strings(entry: Mapping[str, Any], key: str, where: str) -> dict[str, str]:
    value = entry.get(key) or {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(f"{where}: {key} must be a table of strings")
    return dict(value)


def _server_of(entry: Any, where: str) -> tuple[str | list[str], dict[str, Any]]:
    """The ``server`` and keyword arguments of ``mount`` one ``[[mcp.servers]]`` table says."""
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(entry) - _SERVER_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
    command, url = entry.get("command"), entry.get("url")
    if (command is None) == (url is None):
        raise ConfigError(f"{where}: give either command (with args) or url")
    options: dict[str, Any] = {
        "prefix": entry.get("prefix"),
        "optional": bool(entry.get("optional", False)),
        "replace": bool(entry.get("replace", False)),
    }
    if entry.get("call_timeout_s") is not None:
        options["call_timeout_s"] = entry["call_timeout_s"]
    if url is not None:
        if not isinstance(url, str):
            raise ConfigError(f"{where}: url must be a string")
        options["headers"] = _strings(entry, "headers", where)
        return url, options
    args = entry.get("args") or []
    if not isinstance(command, str) or not command:
        raise ConfigError(f"{where}: command must be a non-empty string")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where}: args must be a list of strings")
    options["env"] = _strings(entry, "env", where)
    if entry.get("cwd") is not None:
        options["cwd"] = str(entry["cwd"])
    return [command, *args], options


def mount_configured(settings: Settings | None = None) -> list[MountedServer]:
    """Mount every ``[[mcp.servers]]`` of trails.toml not mounted yet by this process.

    Returns:
        The servers mounted by this call (an optional one that failed is left out).

    Raises:
        ConfigError: a table is malformed.
        MountError: a server that is not optional could not be mounted.
    """
    settings = settings or load_settings()
    servers = settings.section("mcp").get("servers") or []
    if not isinstance(servers, list):
        raise ConfigError(f"[[mcp.servers]] in {settings.config_path} must be an array of tables")
    done: list[MountedServer] = []
    for index, entry in enumerate(servers):
        where = f"{settings.config_path} [[mcp.servers]] #{index + 1}"
        server, options = _server_of(entry, where)
        key = repr((server, options.get("prefix")))
        if key in _configured and (_configured[key] is None or _configured[key] in mounted()):
            continue
        found = mount(server, **options)
        _configured[key] = None if found is None else found.prefix
        if found is not None:
            done.append(found)
    return done


def install(recorder: Any, settings: Settings) -> None:
    """The recorder plugin: mount the configured servers when a session's recorder is made."""
    mount_configured(settings)
