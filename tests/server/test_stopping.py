"""Ctrl-C or SIGTERM stops every trails HTTP server gracefully, however early it comes.

uvicorn installs its signal handlers only once its loop runs. A SIGTERM sent the moment
the banner appeared used to meet Python's default action (the process died, status
-15, without its closing line), or a handler that raised where the exception could be
lost, leaving a server that no signal had stopped. Here each server is a real process
stopped the instant its banner is read, and ``stop_on_signals`` is checked on a real
uvicorn server asked to stop before it runs.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import uvicorn
from tests.server.conftest import seed, tokens_toml

from trails.server.stopping import STOP_SIGNALS, stop_on_signals
from trails.store import open_store


async def _app(scope: dict[str, object], receive: object, send: object) -> None:
    """An ASGI app that serves nothing (lifespan events are not supported)."""


@pytest.mark.parametrize("number", STOP_SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_a_signal_before_the_server_runs_stops_it_as_soon_as_it_has_started(
    number: signal.Signals,
) -> None:
    saved = {n: signal.getsignal(n) for n in STOP_SIGNALS}
    server = uvicorn.Server(uvicorn.Config(_app, log_level="error", lifespan="off"))
    forced: list[bool] = []

    def guard() -> None:  # a server that no signal stopped would hold the test for ever
        forced.append(True)
        server.should_exit = True

    watchdog = threading.Timer(120, guard)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        stop_on_signals(server)
        signal.raise_signal(number)  # after the banner, before uvicorn's own handlers
        assert server.should_exit
        watchdog.start()
        server.run(sockets=[sock])
        assert server.started  # it started, skipped its main loop and shut down
        assert forced == []
        # uvicorn gave the signals back to the handler it found: the server's, again
        assert all(signal.getsignal(n) == server.handle_exit for n in STOP_SIGNALS)
    finally:
        watchdog.cancel()
        sock.close()
        for n, handler in saved.items():
            signal.signal(n, handler)


def _banner_then_sigterm(
    command: list[str], cwd: Path, env: dict[str, str], first: str
) -> tuple[int, list[str]]:
    """Start ``trails COMMAND``, send SIGTERM to its group the moment its banner is read."""
    process = subprocess.Popen(
        [sys.executable, "-m", "trails.cli", *command],
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a service manager starts it
    )
    assert process.stderr is not None
    lines: list[str] = []
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stderr, selectors.EVENT_READ)
            while not lines or not lines[-1].startswith(first):
                assert selector.select(timeout=120), f"no banner: {lines}"
                line = process.stderr.readline()
                assert line, f"ended before its banner: {lines}"
                lines.append(line)
        os.killpg(process.pid, signal.SIGTERM)
        rest = process.stderr.read()
        status = process.wait(120)
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    finally:
        process.stderr.close()
    return status, rest.splitlines()


def test_trails_serve_stopped_the_moment_its_banner_appears_says_stopped(tmp_path: Path) -> None:
    store = open_store(tmp_path / "store")
    seed(store)
    store.close()
    (tmp_path / "tokens.toml").write_text(tokens_toml(), encoding="utf-8")
    status, rest = _banner_then_sigterm(
        ["--store", "store", "serve", "--tokens", "tokens.toml", "--port", "0"],
        tmp_path,
        {},
        "trails serve:",
    )
    assert (status, rest) == (0, ["trails serve: stopped"])


def test_trails_otlp_stopped_the_moment_its_banner_appears_exits_cleanly(tmp_path: Path) -> None:
    status, rest = _banner_then_sigterm(
        ["--store", "store", "otlp", "--port", "0"], tmp_path, {}, "trails otlp:"
    )
    assert (status, rest) == (0, [])


def test_trails_mcp_serve_stopped_the_moment_its_banner_appears_says_stopped(
    tmp_path: Path,
) -> None:
    (tmp_path / "tokens.toml").write_text(tokens_toml(), encoding="utf-8")
    (tmp_path / "trails.toml").write_text('[serve]\ntokens = "tokens.toml"\n', encoding="utf-8")
    status, rest = _banner_then_sigterm(
        ["--store", "store", "mcp", "serve", "--http", "127.0.0.1:0"],
        tmp_path,
        {"TRAILS_CONFIG": str(tmp_path / "trails.toml")},
        "trails mcp serve:",
    )
    assert (status, rest) == (0, ["trails mcp serve: stopped"])
