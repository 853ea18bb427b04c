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
``isError`` result is a recorded failed call (``ToolFailed``); a server that
stops during a call fails it with ``ServerStopped``. ``tools/list_changed``
re-lists the tools and re-registers them. Mounted servers are closed at exit.

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
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, create_model

from trails.config import Settings, load_settings
from trails.errors import CapabilityError, ConfigError, UserError, ValidationError
from trails.kernel.registry import (
    CapabilitySpec,
    ParamSpec,
    get_capability,
    register_spec,
    unregister,
)
from trails.kernel.riders import ride
from trails.mcp.events import McpToolCalled

__all__ = [
    "McpToolSpec",
    "MountError",
    "MountedServer",
    "ServerStopped",
    "ToolFailed",
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

_JSON_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
    "null": "None",
}


class MountError(UserError):
    """An MCP server could not be mounted (it did not start, or did not answer)."""


class ToolFailed(CapabilityError):
    """A mounted tool answered with an error (an error reply or an ``isError`` result)."""


class ServerStopped(CapabilityError):
    """The MCP server behind a mounted tool stopped (before or during the call)."""


def _one_line(exc: BaseException) -> str:
    """An exception as one line, reaching into the SDK's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"


@dataclass(frozen=True)
class McpToolSpec(CapabilitySpec):
    """A capability that is a tool of a mounted MCP server: validated against the
    server's JSON schema, described by its manifest, and carrying its MCP tool."""

    tool: Mapping[str, Any] = field(default_factory=dict)
    """The tool as the server listed it (the MCP ``Tool`` object, camelCase keys)."""
    server: str = ""
    """The prefix of the mounted server it belongs to."""
    owner: int = 0
    """Which mount registered it (so a later mount's tools are not unregistered)."""
    validator: Any = None
    """The input schema's validator, built once (None: built per call)."""

    def validate(self, args: Mapping[str, Any] | None) -> dict[str, Any]:
        """The arguments, checked against the tool's input schema.

        Raises:
            ValidationError: they do not fit the schema.
        """
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise ValidationError(
                self.id, f"arguments must be a mapping, not {type(args).__name__}"
            )
        checked = dict(args)
        validator = self.validator or _validator(self.tool)
        try:
            if validator.is_valid(checked):
                return checked
            problems = sorted(validator.iter_errors(checked), key=lambda e: list(e.path))
        except Exception as exc:  # the server's schema itself is broken
            raise ValidationError(
                self.id, f"the server's input schema cannot be checked: {_one_line(exc)}"
            ) from exc
        if problems:
            raise ValidationError(
                self.id,
                "; ".join(
                    f"{'.'.join(str(p) for p in e.path) or '(args)'}: {e.message}" for e in problems
                ),
            )
        return checked

    def manifest(self) -> dict[str, Any]:
        """The capability's manifest, with the server's input and output schemas."""
        manifest = super().manifest()
        manifest["input_schema"] = dict(self.tool.get("inputSchema") or {"type": "object"})
        manifest["output_schema"] = dict(self.tool.get("outputSchema") or {})
        return manifest


def _validator(tool: Mapping[str, Any]) -> Any:
    return jsonschema.Draft202012Validator(tool.get("inputSchema") or {"type": "object"})


class _Args(BaseModel):
    """The input model of a mounted tool: the server's schema validates, not this."""

    model_config = ConfigDict(extra="allow")


def _params(schema: Mapping[str, Any]) -> tuple[ParamSpec, ...]:
    required = set(schema.get("required") or [])
    props = schema.get("properties") or {}
    params = []
    for name, prop in props.items() if isinstance(props, Mapping) else ():
        kind = prop.get("type") if isinstance(prop, Mapping) else None
        kind = kind if isinstance(kind, str) else "Any"
        default = prop.get("default") if isinstance(prop, Mapping) else None
        params.append(ParamSpec(str(name), _JSON_TYPES.get(kind, kind), name in required, default))
    return tuple(params)


def _side_effects(annotations: Mapping[str, Any]) -> bool:
    """MCP's hints: read-only means none; otherwise (destructive or unsaid) it has them."""
    return not bool(annotations.get("readOnlyHint", False))


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
    ) -> None:
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
            raise MountError(
                f"cannot mount the MCP server {self.target!r}: {_one_line(exc)}"
            ) from exc
        if not self.prefix.strip():
            self.close()
            raise MountError(f"the MCP server {self.target!r} has no name: give prefix=")
        self._register(tools)
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
                ready.set_result(await self._list(client))
                listening = asyncio.ensure_future(self._listen(client))
                try:
                    await self._stopped.wait()
                finally:
                    listening.cancel()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(exc))
            else:
                self._gone = _one_line(exc)
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
        """Handshake-era servers announce a changed tool list as a plain notification."""
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
            log.debug("no tools/list_changed from %s: %s", self.prefix, _one_line(exc))

    async def _resync(self) -> None:
        client = self._client
        if client is None:
            return
        try:
            tools = await self._list(client)
        except Exception as exc:
            log.warning("could not re-list the tools of %s: %s", self.prefix, _one_line(exc))
            return
        self._register(tools)

    def resync(self) -> None:
        """List the tools again and register what changed (``tools/list_changed`` does this)."""
        asyncio.run_coroutine_threadsafe(self._resync(), self._loop).result()

    def _register(self, tools: Sequence[Any]) -> None:
        with self._lock:
            fresh: dict[str, str] = {}
            for tool in tools:
                spec = self._spec(tool)
                register_spec(spec)
                fresh[spec.id] = tool.name
            for gone in set(self.tools) - set(fresh):
                self._unregister(gone)
            self.tools = fresh

    def _unregister(self, capability_id: str) -> None:
        """Unregister a tool of this server (not one registered since under its id)."""
        try:
            spec = get_capability(capability_id)
        except UserError:
            return
        if isinstance(spec, McpToolSpec) and spec.owner == id(self):
            unregister(capability_id)

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
            params=_params(wire.get("inputSchema") or {}),
            input_model=create_model(f"{name}Input", __base__=_Args),
            output_adapter=None,
            side_effects=_side_effects(annotations),
            annotations={"mcp": annotations} if annotations else {},
            tool=wire,
            server=self.prefix,
            owner=id(self),
            validator=_validator(wire),
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
        future = asyncio.run_coroutine_threadsafe(
            client.call_tool(tool, dict(arguments)), self._loop
        )
        try:
            result = future.result()
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                future.cancel()
                raise
            from mcp.shared.exceptions import MCPError
            from mcp.types import CONNECTION_CLOSED

            closed = isinstance(exc, MCPError) and exc.error.code == CONNECTION_CLOSED
            if closed or self._client is None or not self._holder_alive():
                self._gone = "the connection closed"
                self._client = None
                raise ServerStopped(
                    capability_id,
                    f"the MCP server {self.prefix} stopped during the call ({_one_line(exc)})",
                ) from exc
            if isinstance(exc, MCPError):
                raise ToolFailed(
                    capability_id, f"the server answered: {exc.error.message}"
                ) from exc
            raise ServerStopped(
                capability_id, f"the call to the MCP server {self.prefix} failed: {_one_line(exc)}"
            ) from exc
        return _result(capability_id, result)

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


def _result(capability_id: str, result: Any) -> Any:
    """What a call returns: the structured content, else the text (or the content blocks).

    Raises:
        ToolFailed: the result is an ``isError`` one.
    """
    blocks = [block.model_dump(mode="json", exclude_none=True) for block in result.content]
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    if result.is_error:
        raise ToolFailed(capability_id, " ".join(texts) or "the tool reported an error")
    if result.structured_content is not None:
        return result.structured_content
    if len(blocks) == 1 and len(texts) == 1:
        return texts[0]
    return blocks


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

    Returns:
        The mounted server (its ``tools`` map capability ids to tool names), or None
        when an optional server could not be mounted.

    Raises:
        MountError: the server could not be mounted (and ``optional`` is False).
    """
    try:
        mounted_server = MountedServer(
            server,
            prefix=prefix,
            env=env,
            headers=headers,
            cwd=cwd,
            start_timeout_s=start_timeout_s,
        ).start()
    except MountError as exc:
        if not optional:
            raise
        log.warning("%s; going on without its tools", exc)
        return None
    with _mounted_lock:
        old = _mounted.pop(mounted_server.prefix, None)
        _mounted[mounted_server.prefix] = mounted_server
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

_SERVER_KEYS = frozenset({"command", "args", "env", "url", "headers", "prefix", "optional", "cwd"})
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
    }
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
