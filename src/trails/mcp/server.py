"""trails as an MCP server: its capabilities, query pack, sessions and ``verify`` over MCP.

``trails mcp serve`` builds a ``TrailsServer`` and runs it on stdio or streamable
HTTP, through the official SDK's low-level ``Server``. What a client sees:

- every registered capability (those ``--tools`` globs select) as a tool, its input
  schema the capability's; a call runs through ``invoke`` (validated, policy-checked,
  written ahead when it has side effects, recorded), in a trails session of the
  calling principal: one session per MCP client connection, opened at its first
  capability call, labelled with the client's name and version, and ended (so
  sealed) when the connection closes;
- the regulator query pack as read-only tools ``query_NAME`` and ``verify``
  (``trails.mcp.reads``), each call recorded in the same session as a
  capability invocation of that name (no side effects; its arguments, result or
  error);
- sessions as resources ``trails://session/{id}`` (TriG) and
  ``trails://session/{id}/jsonld``, and their HTML reports as ``trails://report/{id}``.

Who calls is an ``Access``: on stdio the principal the operator named; on HTTP the
one the bearer token speaks for, with the graphs its grant reads (the caller of
``serve_http`` turns a token into an ``Access``: this room stands below the HTTP
server's, so it takes the check as a function). A request without a valid token
is answered 401 before the SDK sees it, and a connection keeps the principal it
opened with: a request on it with another token is refused (403).

A tool the server does not offer is a protocol error, as the MCP specification
says of unknown tools: a JSON-RPC error ``-32602`` ("Unknown tool: NAME"), not a
result; the attempt is recorded too (status ``invalid``). A call whose arguments do
not fit, or that fails, is a result with ``isError`` (recorded ``invalid`` or
``error``), which a model can read and correct.

The session of a connection is found through the SDK's per-connection state and
closed from the connection's exit stack, which the SDK unwinds however the
connection ends (the client closed it, an idle timeout, stdin reached its end).
"""

from __future__ import annotations

import fnmatch
import json
import logging
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any

import anyio
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from trails.audit.querypack import Query
from trails.errors import QueryParameterError, TrailsError, UserError, ValidationError
from trails.kernel.context import Context, now
from trails.kernel.invoke import ainvoke
from trails.kernel.registry import CapabilitySpec, all_capabilities
from trails.mcp.reads import (
    Access,
    pack_tools,
    read_report,
    read_session,
    run_pack_query,
    run_verify,
)
from trails.prov.content import canonical_json
from trails.prov.events import CapabilityInvoked
from trails.prov.recorder import Recorder

__all__ = ["Authenticate", "TrailsServer"]

log = logging.getLogger(__name__)

Authenticate = Callable[[str | None], Access | None]
"""An ``Authorization`` header -> the caller's ``Access``, or None when it is not valid."""

VERIFY_TOOL = "verify"
_STATE = "trails.mcp"  # the key of this server's entry in a connection's state
_SESSION = "trails://session/"
_REPORT = "trails://report/"
_VERIFY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "session": {
            "type": "string",
            "description": "the session id (or IRI) to verify; omitted: the whole store",
        }
    },
    "additionalProperties": False,
}
_NOT_FOUND = -32002  # MCP's "resource not found" error code
_UNKNOWN_TOOL = types.INVALID_PARAMS  # what the MCP specification answers an unknown tool
_READ_ONLY = types.ToolAnnotations(read_only_hint=True, destructive_hint=False)


class _Refused(Exception):
    """A request this connection may not make (another principal's token)."""


class TrailsServer:
    """The MCP server over a recorder's store (see the module docstring).

    Args:
        recorder: records the capability calls (and reads the store it writes).
        tools: globs of the capability ids to offer (default: every capability).
        principal: the caller on stdio (whose sessions the calls are recorded in).
        pack: the query pack folder (default: the shipped pack).
        name: the server's name in ``initialize``.
    """

    def __init__(
        self,
        recorder: Recorder,
        *,
        tools: Sequence[str] = (),
        principal: str | None = None,
        pack: str | None = None,
        name: str = "trails",
    ) -> None:
        self.recorder = recorder
        self.store = recorder.store
        self.minter = recorder.minter
        self.globs = tuple(tools) or ("*",)
        self.principal = principal
        self.queries: dict[str, tuple[Query, dict[str, Any]]] = pack_tools(pack)
        self.authenticate: Authenticate | None = None
        self.sessions_opened: list[str] = []
        self.server: Server[Any] = Server(
            name,
            version=_version(),
            instructions="trails: recorded capabilities, and the audit evidence they leave.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
        )

    # -- what is offered ---------------------------------------------------------------

    def capabilities(self) -> list[CapabilitySpec]:
        """The registered capabilities the globs select, in registration order."""
        return [
            spec
            for spec in all_capabilities()
            if any(fnmatch.fnmatchcase(spec.id, glob) for glob in self.globs)
        ]

    def tools(self) -> list[types.Tool]:
        """Every tool: the capabilities, the pack queries and ``verify``."""
        tools = [
            types.Tool(
                name=spec.id,
                description=spec.description or None,
                input_schema=spec.manifest()["input_schema"],
                annotations=types.ToolAnnotations(
                    read_only_hint=not spec.side_effects, destructive_hint=spec.side_effects
                ),
            )
            for spec in self.capabilities()
        ]
        for name, (query, schema) in self.queries.items():
            text = query.title + (f": {query.description}" if query.description else "")
            tools.append(
                types.Tool(
                    name=name,
                    description=f"query pack (read-only) {text}".strip(),
                    input_schema=schema,
                    annotations=_READ_ONLY,
                )
            )
        tools.append(
            types.Tool(
                name=VERIFY_TOOL,
                description="check that recorded sessions still match their seals (read-only)",
                input_schema=_VERIFY_SCHEMA,
                annotations=_READ_ONLY,
            )
        )
        return tools

    # -- who calls ---------------------------------------------------------------------

    def _access(self, ctx: ServerRequestContext[Any]) -> Access:
        """The caller of this request, checked against the one its connection opened with."""
        state = _connection(ctx).state
        if self.authenticate is None:  # stdio: the operator's principal reads everything
            access = Access(self._principal())
        else:
            request = ctx.request
            header = request.headers.get("authorization") if isinstance(request, Request) else None
            found = self.authenticate(header)
            if found is None:  # the HTTP guard lets no such request through
                raise _Refused("a valid bearer token is needed")
            access = found
        known = state.setdefault(_STATE, {"principal": access.principal})
        if known["principal"] != access.principal:
            raise _Refused("this MCP session belongs to another principal")
        return access

    def _principal(self) -> str:
        if self.principal:
            return self.principal
        from trails.config import load_settings

        return load_settings().principal

    def _session(self, ctx: ServerRequestContext[Any], access: Access) -> Context:
        """The trails session of this connection, opened at its first call."""
        connection = _connection(ctx)
        entry: dict[str, Any] = connection.state[_STATE]
        session: Context | None = entry.get("session")
        if session is None:
            client = connection.client_params.client_info if connection.client_params else None
            label = "MCP client"
            if client is not None:
                label = f"MCP client {client.name} {client.version}".strip()
            session = Context.open(access.principal, recorder=self.recorder, label=label)
            entry["session"] = session
            self.sessions_opened.append(str(session.session))
            connection.exit_stack.callback(_close, session)
        return session

    # -- handlers ----------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools())

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name, arguments = params.name, dict(params.arguments or {})
        try:
            access = self._access(ctx)
            reads = name in self.queries or name == VERIFY_TOOL
            if not reads and name in {spec.id for spec in self.capabilities()}:
                result: Any = await ainvoke(name, arguments, ctx=self._session(ctx, access))
            else:  # the pack, verify, or no tool at all: recorded here
                session = self._session(ctx, access)
                result = await anyio.to_thread.run_sync(
                    self._read_tool, session, access, name, arguments
                )
        except (TrailsError, _Refused) as exc:
            return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)
        if result is _UNKNOWN:
            raise MCPError(_UNKNOWN_TOOL, f"Unknown tool: {name}")
        return _result(result)

    def _read_tool(self, session: Context, access: Access, name: str, arguments: Any) -> Any:
        """Run a query pack tool or ``verify`` (or find that ``name`` is no tool) and record
        the call in the connection's session, as ``invoke`` records a capability's."""
        started = now()
        status, output = "error", None
        error: str | None = "the call failed"
        if name in self.queries:
            what = f"query pack tool {name} (read-only)"
        elif name == VERIFY_TOOL:
            what = "verify: check that recorded sessions still match their seals (read-only)"
        else:
            what = f"{name}: not a tool of this server"
        try:
            if name in self.queries:
                output = run_pack_query(self.store, access, self.queries[name][0], arguments)
            elif name == VERIFY_TOOL:
                wanted = arguments.get("session")
                output = run_verify(
                    self.store, self.minter, access, str(wanted) if wanted else None
                )
            else:
                status, error = "invalid", f"Unknown tool: {name}"
                return _UNKNOWN
            status, error = "ok", None
            return output
        except (ValidationError, QueryParameterError) as exc:
            status, error = "invalid", str(exc)
            raise
        except Exception as exc:
            error = str(exc) if isinstance(exc, TrailsError) else f"{type(exc).__name__}: {exc}"
            raise
        finally:
            event = CapabilityInvoked(
                session=str(session.session),
                activity=str(self.minter.activity()),
                parent=None,
                principal=session.principal,
                capability_id=name,
                description=what,
                started=started,
                ended=now(),
                status=status,  # type: ignore[arg-type]
                inputs=arguments,
                output=output,
                error=error,
            )
            try:
                self.recorder.record(event)
            except TrailsError:
                log.exception("could not record the MCP call of %s", name)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    async def _list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name="session",
                    uri_template=_SESSION + "{id}",
                    description="a recorded session as TriG (its graph and its content)",
                    mime_type="application/trig",
                ),
                types.ResourceTemplate(
                    name="session-jsonld",
                    uri_template=_SESSION + "{id}/jsonld",
                    description="a recorded session as JSON-LD",
                    mime_type="application/ld+json",
                ),
                types.ResourceTemplate(
                    name="report",
                    uri_template=_REPORT + "{id}",
                    description="the HTML audit report of a session",
                    mime_type="text/html",
                ),
            ]
        )

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            access = self._access(ctx)
            text, mime = await self._read(access, uri)
        except (TrailsError, _Refused) as exc:  # answered as a JSON-RPC error, nothing logged
            raise MCPError(_NOT_FOUND, str(exc)) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
        )

    async def _read(self, access: Access, uri: str) -> tuple[str, str]:
        """The text of a resource and its media type."""
        if uri.startswith(_REPORT):
            sid = uri[len(_REPORT) :]
            html = await anyio.to_thread.run_sync(read_report, self.store, self.minter, access, sid)
            return html, "text/html"
        if uri.startswith(_SESSION):
            sid = uri[len(_SESSION) :]
            fmt, mime = "trig", "application/trig"
            if sid.endswith("/jsonld"):
                sid, fmt, mime = sid[: -len("/jsonld")], "jsonld", "application/ld+json"
            data = await anyio.to_thread.run_sync(
                lambda: read_session(self.store, self.minter, access, sid, format=fmt)
            )
            return data, mime
        raise UserError(f"no resource {uri}: use {_SESSION}ID or {_REPORT}ID")

    # -- transports --------------------------------------------------------------------

    async def serve_stdio(self) -> None:
        """Serve one client on standard input and output until it closes them."""
        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self, authenticate: Authenticate, *, host: str = "127.0.0.1") -> ASGIApp:
        """The streamable HTTP application (at ``/mcp``), refusing requests without a token.

        Args:
            authenticate: turns an ``Authorization`` header into the caller's access.
            host: the address served (a loopback address turns on the SDK's DNS
                rebinding protection).
        """
        self.authenticate = authenticate
        app: Starlette = self.server.streamable_http_app(host=host)
        return _TokenGuard(app, authenticate)


class _TokenGuard:
    """ASGI middleware: a request without a valid bearer token gets 401, nothing else."""

    def __init__(self, app: ASGIApp, authenticate: Authenticate) -> None:
        self.app = app
        self.authenticate = authenticate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = None
            for key, value in scope.get("headers", []):
                if key == b"authorization":
                    header = value.decode("latin-1")
            if self.authenticate(header) is None:
                response = JSONResponse(
                    {"error": "unauthorized", "detail": "a valid bearer token is needed"},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer realm="trails"'},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


_UNKNOWN = object()  # what ``_read_tool`` returns for a tool the server does not offer


def _version() -> str:
    """The installed trails version (read from the package metadata, not the package)."""
    try:
        return metadata.version("trails")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        return ""


def _connection(ctx: ServerRequestContext[Any]) -> Any:
    """The SDK's per-connection object of a request (its ``state`` and ``exit_stack``)."""
    return ctx.session._connection


def _close(session: Context) -> None:
    """End (and so seal) a connection's session; a failure is logged, never raised."""
    try:
        session.close()
    except TrailsError:
        log.exception("could not end the MCP client's session %s", session.session)


def _result(value: Any) -> types.CallToolResult:
    """A tool's return value as MCP content: its canonical JSON, structured when an object."""
    text = value if isinstance(value, str) else canonical_json(value)
    structured = value if isinstance(value, dict) else None
    if structured is not None:
        try:
            json.dumps(structured)
        except (TypeError, ValueError):
            structured = None
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=structured
    )
