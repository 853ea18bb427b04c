"""``trails otlp``: receive OpenTelemetry traces and GenAI logs (OTLP/HTTP) as provenance.

A thin shell over ``trails.server.traces``: loopback without a token, like a
local collector; with ``--tokens FILE``, or on any other address (where a
tokens file is required), only bearer tokens whose entry says ``write = true``.
Sessions are ended and sealed when their root span arrives, or after
``--idle`` seconds without a span (``[otel] idle_timeout``, default 300).
The port is bound before the listening line, as ``trails serve`` binds it: a busy
or bad port is one ``trails: error:`` line and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from trails.config import load_settings
from trails.errors import ConfigError

__all__ = ["register", "run"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def register(subparsers: Any) -> None:
    """Add the ``otlp`` command.

    Args:
        subparsers: the CLI's subparsers action.
    """
    p = subparsers.add_parser(
        "otlp",
        help="receive OpenTelemetry GenAI traces (OTLP/HTTP) as provenance",
        description="Accept POST /v1/traces and /v1/logs (protobuf or JSON) and record the "
        "spans, and the message content their log records carry, as PROV-O sessions in the store.",
    )
    p.add_argument("--host", help="address to bind (default 127.0.0.1, [otel] host)")
    p.add_argument("--port", help="port (default 4318, [otel] port; 0 picks a free one)")
    p.add_argument("--tokens", help="tokens file; entries need write = true ([otel] tokens)")
    p.add_argument("--idle", type=float, help="seconds before an idle session is ended (300)")
    p.add_argument("--max-bytes", type=int, help="largest request body (default 16 MiB)")
    p.add_argument(
        "--group-window",
        type=float,
        metavar="SECONDS",
        help="one session for the root-less traces of a service and user arriving within "
        "SECONDS of each other ([otel] group_window; default: one session per trace)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the receiver until interrupted.

    Args:
        args: the parsed command line.

    Returns:
        The exit status.

    Raises:
        ConfigError: a non-loopback address without a tokens file, or a bad value.
    """
    import uvicorn

    from trails.cli.serve import _listen, _port
    from trails.otel.ingest import Ingestor, ingest_options
    from trails.prov.recorder import Recorder
    from trails.server.heads import head_timeout, server_limits
    from trails.server.logs import mount_logs
    from trails.server.stopping import stop_on_signals
    from trails.server.traces import DEFAULT_MAX_BYTES, receiver_app
    from trails.server.write_tokens import load_write_tokens
    from trails.store import open_store

    settings = load_settings()
    section = settings.section("otel")
    host = args.host or str(section.get("host", "127.0.0.1"))
    port = _port(args.port if args.port is not None else section.get("port", 4318))
    tokens_path = args.tokens or section.get("tokens")
    if host not in _LOOPBACK and not tokens_path:
        raise ConfigError(
            f"trails otlp on {host} needs --tokens FILE: beyond loopback every exporter "
            "must send a bearer token with write = true"
        )
    tokens = None
    if tokens_path:
        tokens = load_write_tokens(
            tokens_path if args.tokens else settings.resolve_path(str(tokens_path))
        )
    idle = args.idle if args.idle is not None else float(section.get("idle_timeout", 300.0))
    if idle <= 0:
        raise ConfigError("--idle must be a positive number of seconds")
    header_seconds = head_timeout(section, "otel")
    store = (
        open_store(args.store, settings=settings) if args.store else open_store(settings=settings)
    )
    recorder = Recorder.from_settings(settings, store=store)
    options = ingest_options(section)
    if args.group_window is not None:
        if args.group_window <= 0:
            raise ConfigError("--group-window must be a positive number of seconds")
        options["group_window"] = args.group_window
    ingestor = Ingestor(recorder, idle_timeout=idle, **options)
    app = receiver_app(ingestor, tokens=tokens, max_bytes=args.max_bytes or DEFAULT_MAX_BYTES)
    mount_logs(app, ingestor, tokens=tokens, max_bytes=args.max_bytes or DEFAULT_MAX_BYTES)
    sock = _listen(host, port)  # a busy or bad port: one line, exit 2, before the banner
    try:
        # keep-alive, connections and request heads limited as `trails serve`'s ([otel]
        # header_timeout, 408); a body must arrive in 30 s
        server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", **server_limits(header_seconds))
        )
        stop_on_signals(server)  # Ctrl-C or SIGTERM, however early: status 0
        where = f"[{host}]" if ":" in host else host
        print(
            f"trails otlp: http://{where}:{sock.getsockname()[1]}/v1/traces and /v1/logs, "
            f"{'tokens with write = true' if tokens is not None else 'no token (loopback)'}, "
            f"idle sessions end after {idle:g} s",
            file=sys.stderr,
            flush=True,
        )
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0
