"""``trails serve``: the authenticated read-only SPARQL endpoint, and token entries for it.

A thin shell over ``trails.audit.endpoint``: read the settings, the tokens file
and the limits, then run the app under uvicorn. Loopback is the default bind
address; anything else is the operator's explicit choice (put TLS in front).
The access log is a store of its own (``--access-log``; by default beside a
directory store as ``PATH.access-log``).
``trails serve --hash-token`` prints a new token and its ``[[token]]`` entry.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from trails.audit.endpoint import EndpointConfig, create_app
from trails.audit.endpoint_auth import OWN_SESSIONS, load_tokens, new_token, token_entry
from trails.config import load_settings
from trails.errors import ConfigError

__all__ = ["register", "run"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def register(subparsers: Any) -> None:
    """Add the ``serve`` command.

    Args:
        subparsers: the CLI's subparsers action.
    """
    p = subparsers.add_parser(
        "serve",
        help="run the authenticated read-only SPARQL endpoint",
        description="Serve the store over the SPARQL 1.1 Protocol at /sparql (and the query "
        "pack at /queries/NAME) to holders of a bearer token from --tokens.",
    )
    p.add_argument("--host", help="address to bind (default 127.0.0.1, [serve] host)")
    p.add_argument("--port", type=int, help="port (default 8080, [serve] port)")
    p.add_argument("--tokens", help="TOML file of [[token]] entries ([serve] tokens)")
    p.add_argument(
        "--access-log",
        metavar="LOCATION",
        help="store of the access log: a directory, memory: or http(s):// ([serve] access_log; "
        "default: PATH.access-log beside a directory store, .trails/access-log for a server)",
    )
    p.add_argument("--time-limit", type=float, help="seconds a query may run (default 30)")
    p.add_argument("--max-query-bytes", type=int, help="largest query accepted (default 65536)")
    p.add_argument("--max-results", type=int, help="most results per answer (default 100000)")
    p.add_argument("--processes", type=int, help="worker processes for a SPARQL server store")
    p.add_argument("--threads", type=int, help="queries each worker runs at once (default 4)")
    p.add_argument(
        "--hash-token",
        nargs="?",
        const="",
        metavar="TOKEN",
        help="print a [[token]] entry for TOKEN (a new random token when omitted) and exit",
    )
    p.add_argument("--principal", help="with --hash-token: who the token speaks for")
    p.add_argument(
        "--graph",
        action="append",
        help=f"with --hash-token: a graph pattern it may read (repeat; default {OWN_SESSIONS})",
    )
    p.add_argument(
        "--audit", action="store_true", help="with --hash-token: may read the access log"
    )
    p.set_defaults(func=run)


def _hash_token(args: argparse.Namespace) -> int:
    if not args.principal:
        raise ConfigError("--hash-token needs --principal: who the token speaks for")
    token = args.hash_token or new_token()
    if not args.hash_token:
        print(f"# token (give it to {args.principal}; it is not stored anywhere): {token}")
    print(token_entry(token, args.principal, args.graph or [OWN_SESSIONS], audit=args.audit))
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the endpoint until interrupted, or print a token entry.

    Args:
        args: the parsed command line (global ``--store`` is ``args.store``).

    Returns:
        The exit status.

    Raises:
        ConfigError: no tokens file, or a bad ``[serve]`` value.
    """
    if args.hash_token is not None:
        return _hash_token(args)
    import uvicorn

    settings = load_settings()
    section = settings.section("serve")
    tokens_path = args.tokens or section.get("tokens")
    if not tokens_path:
        raise ConfigError(
            "trails serve needs --tokens FILE (or [serve] tokens in trails.toml); "
            "make entries with: trails serve --hash-token --principal NAME"
        )
    tokens = load_tokens(tokens_path if args.tokens else settings.resolve_path(str(tokens_path)))
    config = EndpointConfig.from_settings(
        settings,
        time_limit=args.time_limit,
        max_query_bytes=args.max_query_bytes,
        max_results=args.max_results,
        processes=args.processes,
        threads=args.threads,
    )
    location = args.store or str(settings.resolve_path(settings.store))
    if settings.store.startswith(("http://", "https://", "memory:")) and not args.store:
        location = settings.store
    host = args.host or str(section.get("host", "127.0.0.1"))
    port = args.port or int(section.get("port", 8080))
    if host not in _LOOPBACK:
        print(
            f"trails serve: binding to {host}, reachable beyond this machine; "
            f"put TLS in front of it",
            file=sys.stderr,
        )
    log_location: str | None = args.access_log
    if log_location is None and section.get("access_log"):
        configured = str(section["access_log"])
        log_location = (
            configured
            if configured.startswith(("http://", "https://", "memory:"))
            else str(settings.resolve_path(configured))
        )
    endpoint = create_app(location, tokens, config, access_log=log_location, settings=settings)
    from trails.otel.receiver import mount_traces  # POST /v1/traces for tokens with write = true

    mount_traces(
        endpoint.app,
        location,
        args.tokens or str(settings.resolve_path(str(tokens_path))),
        settings,
    )
    print(
        f"trails serve: {len(tokens)} token(s), store {location}, access log "
        f"{endpoint.access_log.store!r}, http://{host}:{port}/sparql "
        f"(time limit {config.time_limit:g} s)",
        file=sys.stderr,
    )
    uvicorn.run(endpoint.app, host=host, port=port, log_level="warning")
    return 0
