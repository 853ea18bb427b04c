"""``trails mcp serve`` and ``trails mcp proxy``: trails over MCP, and a recording MCP proxy.

A thin shell over ``trails.mcp``. ``serve`` offers the registered capabilities
(from ``--import`` modules), the query pack, sessions, reports and ``verify`` to
an MCP client on stdio or, with ``--http HOST:PORT``, over streamable HTTP at
``/mcp``, where the bearer tokens and grants are those of ``trails serve``
(``--tokens``). ``proxy`` runs an MCP server (``-- COMMAND ARGS...``) or reaches
one (``--upstream URL``) and relays a client on its own stdio to it, recording
every tool call.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from trails.config import load_settings
from trails.errors import ConfigError, UserError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``mcp`` command group (``serve``, ``proxy``).

    Args:
        subparsers: the CLI's subparsers action.
    """
    group = subparsers.add_parser(
        "mcp", help="trails over MCP (serve) and a recording MCP proxy (proxy)"
    )
    sub = group.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND")
    group.set_defaults(func=lambda args: _usage(group))

    s = sub.add_parser(
        "serve",
        help="offer capabilities, the query pack, sessions and verify as an MCP server",
        description="Serve trails over MCP: on stdio by default, or streamable HTTP at "
        "http://HOST:PORT/mcp with --http (bearer tokens from --tokens, as trails serve).",
    )
    s.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP instead of stdio")
    s.add_argument(
        "--tools",
        nargs="+",
        default=[],
        metavar="GLOB",
        help="offer only the capabilities whose id matches one of these globs",
    )
    s.add_argument("--tokens", help="with --http: TOML file of [[token]] entries ([serve] tokens)")
    s.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first (it registers capabilities; found in the current directory "
        "too); repeatable",
    )
    s.add_argument("--principal", help="on stdio: whose sessions the calls are recorded in")
    s.set_defaults(func=serve)

    p = sub.add_parser(
        "proxy",
        help="relay an MCP client on stdio to an MCP server, recording every tool call",
        description="Run an MCP server (after --) or reach one (--upstream URL) and relay the "
        "client on this process's stdio to it unchanged; every tools/call is recorded.",
    )
    p.add_argument("--principal", help="who runs the proxy (default: settings' principal)")
    p.add_argument("--upstream", metavar="URL", help="a streamable HTTP MCP server to relay to")
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="with --upstream: an HTTP header for every request (Authorization: Bearer ...)",
    )
    p.add_argument(
        "--connect-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --upstream: how long the server has to answer the first request "
        "(default 10); past it, one line and exit status 2",
    )
    p.add_argument(
        "server_command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND ARGS",
        help="the server's command line (stdio)",
    )
    p.set_defaults(func=proxy)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _import(modules: list[str]) -> None:
    if modules and "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the user's own modules, as `python -m` would find them
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise UserError(f"--import {name}: {exc}") from exc


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UserError(f"--http wants HOST:PORT (port 0 picks a free one), not {text!r}")
    return host.strip("[]"), int(port)


def serve(args: argparse.Namespace) -> int:
    """``trails mcp serve``: run until the client leaves (stdio) or until interrupted (HTTP).

    Raises:
        UserError: a bad ``--http`` address or an ``--import`` that fails.
        ConfigError: ``--http`` without a tokens file, or a bad tokens file.
    """
    import anyio

    from trails.audit.access import writing
    from trails.mcp.server import TrailsServer
    from trails.prov.recorder import Recorder

    _import(args.imports)
    settings = load_settings()
    address = _address(args.http) if args.http else None
    tokens = None
    if address is not None:
        from trails.server.auth import load_tokens

        tokens_path = args.tokens or settings.section("serve").get("tokens")
        if not tokens_path:
            raise ConfigError(
                "trails mcp serve --http needs --tokens FILE (or [serve] tokens in trails.toml): "
                "no token, no call; make entries with: trails serve --hash-token --principal NAME"
            )
        tokens = load_tokens(tokens_path if args.tokens else settings.resolve_path(tokens_path))
    with writing(args.store) as store:
        recorder = Recorder.from_settings(settings, store=store)
        server = TrailsServer(recorder, tools=args.tools, principal=args.principal)
        if address is None or tokens is None:
            anyio.run(server.serve_stdio)
            return 0
        _serve_http(server, tokens, address, settings.base_iri)
    return 0


def _serve_http(server: Any, tokens: Any, address: tuple[str, int], base_iri: str) -> None:
    import uvicorn

    from trails.cli.serve import _listen
    from trails.mcp.reads import Access
    from trails.server.auth import Grant
    from trails.server.graphs import allowed_graphs
    from trails.server.heads import head_timeout, server_limits
    from trails.server.stopping import stop_on_signals

    store = server.store

    def access_of(grant: Grant) -> Access:
        if grant.universal:
            return Access(grant.principal)
        return Access(grant.principal, lambda: allowed_graphs(store, grant, None, base_iri))

    def authenticate(header: str | None) -> Access | None:
        grant = tokens.authenticate(header)
        return None if grant is None else access_of(grant)

    host, port = address
    sock = _listen(host, port)
    try:
        app = server.http_app(authenticate, host=host)
        # keep-alive, connections and request heads limited as `trails serve`'s
        limits = server_limits(head_timeout(load_settings().section("serve"), "serve"))
        uv = uvicorn.Server(uvicorn.Config(app, log_level="warning", **limits))
        stop_on_signals(uv)  # Ctrl-C or SIGTERM, however early: "stopped" and status 0
        where = f"[{host}]" if ":" in host else host
        print(
            f"trails mcp serve: {len(tokens)} token(s), {len(server.capabilities())} "
            f"capabilities, http://{where}:{sock.getsockname()[1]}/mcp",
            file=sys.stderr,
            flush=True,
        )
        uv.run(sockets=[sock])
        print("trails mcp serve: stopped", file=sys.stderr)
    finally:
        sock.close()


def proxy(args: argparse.Namespace) -> int:
    """``trails mcp proxy``: relay until the client or the server closes the connection.

    Raises:
        UserError: neither a command nor ``--upstream``, or both.
    """
    from trails.audit.access import writing
    from trails.mcp.proxy import CONNECT_TIMEOUT_S, Proxy
    from trails.prov.recorder import Recorder

    command = list(args.server_command)
    if command[:1] == ["--"]:
        command = command[1:]
    if bool(command) == bool(args.upstream):
        raise UserError(
            "trails mcp proxy needs the server: -- COMMAND ARGS... (stdio) or --upstream URL"
        )
    headers: dict[str, str] = {}
    for header in args.header:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            raise UserError(f"--header wants NAME:VALUE, not {header!r}")
        headers[name.strip()] = value.strip()
    if headers and not args.upstream:
        raise UserError("--header is for --upstream URL (a stdio server gets no HTTP headers)")
    timeout = CONNECT_TIMEOUT_S if args.connect_timeout is None else args.connect_timeout
    if not 0 < timeout < float("inf"):
        raise UserError(f"--connect-timeout wants a positive number of seconds, not {timeout:g}")
    settings = load_settings()
    with writing(args.store) as store:
        recorder = Recorder.from_settings(settings, store=store)
        relay = Proxy(
            recorder,
            principal=args.principal or settings.principal,
            command=command or None,
            upstream=args.upstream,
            headers=headers,
            connect_timeout_s=timeout,
        )
        relay.run_stdio()
    return 0
