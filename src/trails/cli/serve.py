"""``trails serve``: the authenticated read-only SPARQL endpoint, and token entries for it.

A thin shell over ``trails.server``: read the settings, the tokens file
and the limits, then run the app under uvicorn. Loopback is the default bind
address; anything else is the operator's explicit choice (put TLS in front).
The access log is a store of its own (``--access-log``; by default beside a
directory store as ``PATH.access-log``).
``trails serve --hash-token`` prints a ``[[token]]`` entry on standard output
(what goes into the tokens file) and a new token, once, on standard error.

Start-up is checked before the "serving" line: the listening socket is bound
and the store opened first, so a busy or bad port, or a locked store, is one
``trails: error:`` line and a non-zero exit, never a traceback from the server.
A location that is not a store is refused before anything else (exit 2):
serving never creates a store, nor the access log beside one that is missing.
"""

from __future__ import annotations

import argparse
import ipaddress
import signal
import socket
import sys
from typing import Any

from trails.audit.access import check_reading
from trails.cli.common import store_place
from trails.config import load_settings
from trails.errors import ConfigError, TrailsError
from trails.server import EndpointConfig, create_app
from trails.server.auth import OWN_SESSIONS, load_tokens, new_token, token_entry

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
    p.add_argument("--port", help="port (default 8080, [serve] port; 0 picks a free one)")
    p.add_argument("--tokens", help="TOML file of [[token]] entries ([serve] tokens)")
    p.add_argument(
        "--access-log",
        metavar="LOCATION",
        help="store of the access log: a directory, memory: or http(s):// ([serve] access_log; "
        "default: PATH.access-log beside a directory store, .trails/access-log for a server)",
    )
    p.add_argument(
        "--forwarded-allow-ips",
        metavar="ADDRESSES",
        help="comma-separated addresses or networks of the reverse proxies whose "
        "X-Forwarded-For names the client (default 127.0.0.1, [serve] forwarded_allow_ips; "
        '"*" trusts any, "" none)',
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
    p.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first: the capabilities it registers are listed at "
        "/.well-known/capabilities (repeatable)",
    )
    p.set_defaults(func=run)


def _hash_token(args: argparse.Namespace) -> int:
    if not args.principal:
        raise ConfigError("--hash-token needs --principal: who the token speaks for")
    token = args.hash_token or new_token()
    if not args.hash_token:
        print(
            f"token for {args.principal} (give it to them; it is not stored anywhere): {token}",
            file=sys.stderr,
        )
    sys.stdout.write(
        token_entry(token, args.principal, args.graph or [OWN_SESSIONS], audit=args.audit)
    )
    return 0


class _StartupError(ConfigError):
    """The endpoint cannot start (port, address or store): one line, exit 2."""


def _trusted_proxies(value: Any, where: str) -> str:
    """The proxies whose ``X-Forwarded-For`` names the client: addresses or networks."""
    text = str(value).strip()
    if text == "*":
        return text
    for item in (part.strip() for part in text.split(",") if part.strip()):
        try:
            if "/" in item:
                ipaddress.ip_network(item, strict=False)
            else:
                ipaddress.ip_address(item)
        except ValueError:
            raise _StartupError(
                f"{where}: {item!r} is not an IP address or network "
                '(give addresses or networks separated by commas, "*" or "")'
            ) from None
    return text


def _port(value: Any) -> int:
    try:
        port = int(str(value))
    except ValueError:
        raise _StartupError(f"--port must be a number from 0 to 65535, not {value!r}") from None
    if not 0 <= port <= 65535:
        raise _StartupError(f"--port must be a number from 0 to 65535, not {port}")
    return port


def _listen(host: str, port: int) -> socket.socket:
    """Bind the listening socket now, so a busy or bad port fails before the banner."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (OSError, UnicodeError) as exc:
        raise _StartupError(f"cannot listen on {host}: {exc}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise _StartupError(f"cannot listen on {host}:{port}: {reason}") from None
    sock.set_inheritable(True)
    return sock


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

    from trails.cli.capabilities import import_modules
    from trails.server.heads import head_timeout, server_limits
    from trails.server.stopping import stop_on_signals

    import_modules(getattr(args, "imports", []))

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
    header_seconds = head_timeout(section, "serve")
    proxies = _trusted_proxies(
        *(
            (args.forwarded_allow_ips, "--forwarded-allow-ips")
            if args.forwarded_allow_ips is not None
            else (section.get("forwarded_allow_ips", "127.0.0.1"), "[serve] forwarded_allow_ips")
        )
    )
    location = args.store or str(settings.resolve_path(settings.store))
    if settings.store.startswith(("http://", "https://", "memory:")) and not args.store:
        location = settings.store
    check_reading(location)  # serving reads: never a store created by starting a server
    host = args.host or str(section.get("host", "127.0.0.1"))
    port = _port(args.port if args.port is not None else section.get("port", 8080))
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
    sock = _listen(host, port)
    try:
        try:
            endpoint = create_app(
                location, tokens, config, access_log=log_location, settings=settings
            )
        except TrailsError as exc:
            raise _StartupError(_one_line(exc)) from None
        from trails.server.logs import mount_logs  # POST /v1/logs, through the same writer
        from trails.server.traces import (  # POST /v1/traces, tokens with write = true
            end_received_sessions,
            mount_traces,
        )

        tokens_file = args.tokens or str(settings.resolve_path(str(tokens_path)))
        writer = mount_traces(
            endpoint.app,
            location,
            tokens_file,
            settings,
            evaluator=endpoint.evaluator,  # on a directory store, its worker writes the spans
        )
        mount_logs(endpoint.app, writer, tokens_file=tokens_file)
        if section.get("log_tiles"):  # the published transparency log, read-only at /log/
            from trails.server.tiles import mount_tiles

            mount_tiles(endpoint.app, settings.resolve_path(str(section["log_tiles"])))
        server = uvicorn.Server(
            uvicorn.Config(
                endpoint.app,
                log_level="warning",
                # the client a trusted reverse proxy reports is the one failures count against
                proxy_headers=True,
                forwarded_allow_ips=proxies,
                # keep-alive, connections and request heads limited ([serve] header_timeout);
                # bodies: BODY_SECONDS
                **server_limits(header_seconds),
            )
        )
        # told to stop, the console's live pages end their streams first: uvicorn waits for
        # open connections, and an event stream would otherwise hold the stop up
        told = server.handle_exit

        def handle_exit(sig: int, frame: Any) -> None:
            endpoint.console.stop_streams()
            told(sig, frame)

        server.handle_exit = handle_exit  # type: ignore[method-assign]
        # workers open the store now, not after the banner; they ignore Ctrl-C (the
        # terminal sends it to them too): this process stops them on its way out
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            endpoint.evaluator.start()
        except BaseException as exc:
            signal.signal(signal.SIGINT, previous)
            if not isinstance(exc, TrailsError):
                raise
            endpoint.close()
            raise _StartupError(_one_line(exc)) from None
        # from here on Ctrl-C and SIGTERM stop the server gracefully, however early they
        # come: a signal at any moment ends with "stopped" and status 0
        stop_on_signals(server)
        bound = sock.getsockname()[1]
        where = f"[{host}]" if ":" in host else host
        print(
            f"trails serve: {len(tokens)} token(s), store {location}, access log "
            f"{store_place(endpoint.access_log.store)}, http://{where}:{bound}/sparql "
            f"(time limit {config.time_limit:g} s), the console at "
            f"http://{where}:{bound}/console/",
            file=sys.stderr,
            flush=True,
        )
        server.run(sockets=[sock])
        end_received_sessions(writer)  # the sessions the receiver wrote end with it
        print("trails serve: stopped", file=sys.stderr)
    finally:
        sock.close()
    return 0


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
