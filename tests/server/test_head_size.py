"""Request heads of at most 64 KiB, and the event loop the servers run on.

The HTTP parser puts no bound on a request head, so the protocol counts each head's
bytes itself: a head over ``HEAD_BYTES`` is answered 431 and its connection closed,
one just under it is served, a large body is not counted as head, and each request on
a keep-alive connection has a limit of its own. These run against a real ``trails
serve``. The servers run on uvloop where it can be imported and on asyncio's loop
where it cannot: an in-process uvicorn given ``server_limits`` shows which loop the
app runs on, and that the head limits hold on both.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import uvicorn
from tests.server.conftest import TOKENS, seed, tokens_toml
from tests.server.test_head_timeout import HEAD, start, stop, trickle

from trails.server.heads import HEAD_BYTES, server_limits
from trails.store import open_store

ASK = "/sparql?query=ASK%7B%7D"
AUTH = {"Authorization": f"Bearer {TOKENS['admin']}", "Accept": "application/json"}


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[int]:
    """``trails serve`` over a seeded directory store."""
    store = open_store(tmp_path / "store")
    seed(store)
    store.close()
    (tmp_path / "tokens.toml").write_text(tokens_toml(), encoding="utf-8")
    process, port = start(tmp_path, ["serve"], '[serve]\ntokens = "tokens.toml"\n')
    yield port
    assert "Traceback" not in stop(process)


def padded_head(size: int) -> bytes:
    """A GET of ``ASK {}`` whose head is ``size`` bytes, padded by an ``X-Pad`` header."""
    pad = size - len(HEAD) - len(b"X-Pad: \r\n")
    assert pad > 0
    return HEAD[:-2] + b"X-Pad: " + b"a" * pad + b"\r\n\r\n"


def answer_of(port: int, data: bytes) -> bytes:
    """Send ``data`` on a new connection; what the server sent before closing it."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def ask(conn: http.client.HTTPConnection, pad: int) -> dict[str, Any]:
    """``ASK {}`` on a kept-alive connection with ``pad`` bytes of extra header."""
    conn.request("GET", ASK, headers={**AUTH, "X-Pad": "a" * pad})
    response = conn.getresponse()
    body = response.read()
    assert response.status == 200, body
    answer: dict[str, Any] = json.loads(body)
    return answer


def test_a_head_over_64_kib_is_answered_431_and_closed(serve: int) -> None:
    answer = answer_of(serve, padded_head(HEAD_BYTES + 1))
    assert answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"), answer[:200]
    assert answer.endswith(b"the request head is larger than 65536 bytes\n")
    # far larger, sent as one write: refused the same way, the rest of it dropped
    assert answer_of(serve, padded_head(1024 * 1024)).startswith(b"HTTP/1.1 431 ")
    # the server goes on answering
    conn = http.client.HTTPConnection("127.0.0.1", serve, timeout=60)
    assert ask(conn, 0)["boolean"] is True
    conn.close()


def test_a_head_of_exactly_64_kib_is_served(serve: int) -> None:
    answer = answer_of(serve, padded_head(HEAD_BYTES).replace(b"HTTP/1.1", b"HTTP/1.0"))
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer[:200]
    assert answer.endswith(b'{"head":{},"boolean":true}')


def test_a_body_sent_with_its_head_is_not_counted_as_head(serve: int) -> None:
    # 50,000 spaces encoded as %20: a 150 KB body, one write with its head
    body = ("query=" + quote("ASK {}" + " " * 50_000)).encode()
    head = (
        f"POST /sparql HTTP/1.0\r\nHost: trails.test\r\n"
        f"Authorization: Bearer {TOKENS['admin']}\r\nAccept: application/json\r\n"
        f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    assert len(head) + len(body) > 2 * HEAD_BYTES
    answer = answer_of(serve, head + body)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer[:200]
    assert answer.endswith(b'{"head":{},"boolean":true}')


def test_each_request_on_a_kept_alive_connection_has_its_own_limit(serve: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", serve, timeout=60)
    try:
        for _ in range(3):  # 120 KiB of heads on one connection, each under 64 KiB
            assert ask(conn, 40 * 1024)["boolean"] is True
        conn.request("GET", ASK, headers={**AUTH, "X-Pad": "a" * HEAD_BYTES})
        response = conn.getresponse()
        assert response.status == 431
        assert response.getheader("connection") == "close"
        assert response.read() == b"the request head is larger than 65536 bytes\n"
    finally:
        conn.close()


async def loop_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An ASGI app answering with the module of the event loop it runs on."""
    if scope["type"] != "http":
        return
    body = type(asyncio.get_running_loop()).__module__.encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


@contextmanager
def in_process(**limits: Any) -> Iterator[int]:
    """``loop_app`` under a real uvicorn given ``limits``, on a free port; yields it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(loop_app, log_level="warning", **limits))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive(), "uvicorn exited while starting"
            time.sleep(0.02)
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()


LOOPS = [False] if sys.platform == "win32" else [True, False]  # no uvloop on Windows


@pytest.mark.parametrize("uvloop", LOOPS, ids=["uvloop", "no-uvloop"][-len(LOOPS) :])
def test_the_head_limits_hold_on_either_loop(uvloop: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not uvloop:
        monkeypatch.setitem(sys.modules, "uvloop", None)
    limits = server_limits(1.0)
    with in_process(**limits) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/")
        loop_module = conn.getresponse().read().decode()
        conn.close()
        assert loop_module.startswith("uvloop" if uvloop else "asyncio")
        assert answer_of(port, padded_head(HEAD_BYTES + 1)).startswith(b"HTTP/1.1 431 ")
        sent, answer = trickle(port)
        assert sent < len(HEAD)
        assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
