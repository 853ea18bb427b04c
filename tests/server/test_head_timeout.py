"""Request heads that must arrive in time, against real ``trails serve`` and ``trails otlp``.

A client that sends its request head a byte at a time is answered 408 once
``header_timeout`` has passed (set small in trails.toml here), a connection that sends
nothing is closed, a head that arrives whole is served however slowly its body then
comes, and more trickling connections than the server's connection limit do not keep a
normal client out. Every server is a real process on real sockets.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.server.conftest import TOKENS, free_port, seed, tokens_toml, wait_for

from trails.store import open_store

HEAD = (
    "GET /sparql?query=ASK%7B%7D HTTP/1.1\r\nHost: trails.test\r\n"
    f"Authorization: Bearer {TOKENS['admin']}\r\nAccept: application/json\r\n\r\n"
).encode()


def start(tmp_path: Path, command: list[str], toml: str) -> tuple[subprocess.Popen[bytes], int]:
    """Run ``trails COMMAND`` with ``toml`` as its trails.toml; returns it and its port."""
    config = tmp_path / "trails.toml"
    config.write_text(toml, encoding="utf-8")
    port = free_port()
    env = {**os.environ, "TRAILS_CONFIG": str(config), "TRAILS_STORE": str(tmp_path / "store")}
    process = subprocess.Popen(
        [sys.executable, "-m", "trails.cli", *command, "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )

    def up() -> bool:
        assert process.poll() is None, process.communicate()[1].decode()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    wait_for(up)
    return process, port


def stop(process: subprocess.Popen[bytes]) -> str:
    process.terminate()
    _, err = process.communicate(timeout=60)
    return err.decode()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[int]:
    """``trails serve`` over a seeded directory store, heads cut after 1 s."""
    store = open_store(tmp_path / "store")
    seed(store)
    store.close()
    (tmp_path / "tokens.toml").write_text(tokens_toml(), encoding="utf-8")
    toml = '[serve]\ntokens = "tokens.toml"\nheader_timeout = 1\n'
    process, port = start(tmp_path, ["serve"], toml)
    yield port
    assert "Traceback" not in stop(process)


def trickle(port: int, head: bytes = HEAD) -> tuple[int, bytes]:
    """Send ``head`` a byte at a time, a fifth of a second apart, until the server answers.

    Returns:
        How many bytes were sent, and what the server sent before closing.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sent = 0
        for byte in head:
            sock.sendall(bytes([byte]))
            sent += 1
            if select.select([sock], [], [], 0.2)[0]:
                break
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
        return sent, answer


def test_a_trickling_head_is_answered_408_and_cut(serve: int) -> None:
    sent, answer = trickle(serve)
    assert sent < len(HEAD)  # cut long before the head was whole
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert answer.endswith(b"the request head did not arrive within 1 s\n")
    # the server goes on answering whole requests
    ok = httpx.get(
        f"http://127.0.0.1:{serve}/sparql",
        params={"query": "ASK {}"},
        headers={"Authorization": f"Bearer {TOKENS['admin']}"},
        timeout=60,
    )
    assert ok.status_code == 200 and ok.json()["boolean"] is True


def test_a_silent_connection_is_closed_without_an_answer(serve: int) -> None:
    with socket.create_connection(("127.0.0.1", serve), timeout=60) as sock:
        assert sock.recv(4096) == b""  # closed by the server, nothing written


def test_a_whole_head_is_served_however_slowly_its_body_comes(serve: int) -> None:
    body = b"query=ASK%20%7B%7D"
    head = (
        f"POST /sparql HTTP/1.1\r\nHost: trails.test\r\n"
        f"Authorization: Bearer {TOKENS['admin']}\r\nAccept: application/json\r\n"
        f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", serve), timeout=60) as sock:
        sock.sendall(head)
        # three head timeouts pass with the body not sent: the head timer has stopped
        assert select.select([sock], [], [], 3.0)[0] == []
        sock.sendall(body)
        answer = sock.recv(65536)
        while not answer.endswith(b"}"):  # the body may come in a write of its own
            answer += sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
        assert answer.endswith(b'{"head":{},"boolean":true}')
        # the connection is kept alive, and its next head is timed again: cut at 1 s
        sock.sendall(HEAD[:10])
        rest = b""
        while chunk := sock.recv(4096):
            rest += chunk
        assert rest.startswith(b"HTTP/1.1 408 Request Timeout\r\n")


def test_more_trickling_connections_than_the_limit_leave_room_for_others(
    tmp_path: Path,
) -> None:
    store = open_store(tmp_path / "store")
    seed(store)
    store.close()
    (tmp_path / "tokens.toml").write_text(tokens_toml(), encoding="utf-8")
    # heads may take a minute here, so the crowd is still waiting while the client asks
    toml = '[serve]\ntokens = "tokens.toml"\nheader_timeout = 60\n'
    process, port = start(tmp_path, ["serve"], toml)
    crowd: list[socket.socket] = []
    try:
        for _ in range(300):  # over the server's 256 connections at once
            sock = socket.create_connection(("127.0.0.1", port), timeout=60)
            sock.sendall(HEAD[:20])
            crowd.append(sock)
        for n in range(3):
            answer = httpx.get(
                f"http://127.0.0.1:{port}/sparql",
                params={"query": f"SELECT ({n} AS ?n) {{}}"},
                headers={"Authorization": f"Bearer {TOKENS['admin']}"},
                timeout=60,
            )
            assert answer.status_code == 200, answer.text
            assert answer.json()["results"]["bindings"][0]["n"]["value"] == str(n)
        # each of the crowd is still held open, waiting for the rest of its head
        assert select.select(crowd, [], [], 0)[0] == []
    finally:
        for sock in crowd:
            sock.close()
        assert "Traceback" not in stop(process)


def test_a_bad_header_timeout_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text('[serve]\nheader_timeout = "soon"\n', encoding="utf-8")
    (tmp_path / "tokens.toml").write_text(tokens_toml(), encoding="utf-8")
    store = open_store(tmp_path / "store")
    store.close()
    command = [sys.executable, "-m", "trails.cli", "--store", str(tmp_path / "store"), "serve"]
    result = subprocess.run(
        [*command, "--tokens", str(tmp_path / "tokens.toml"), "--port", "0"],
        cwd=tmp_path,
        env={**os.environ, "TRAILS_CONFIG": str(tmp_path / "trails.toml")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "trails: error: [serve] header_timeout must be a number, not 'soon'"
    )


def test_the_otlp_receiver_cuts_a_trickling_head_too(tmp_path: Path) -> None:
    process, port = start(tmp_path, ["otlp"], "[otel]\nheader_timeout = 1\n")
    try:
        head = b"POST /v1/traces HTTP/1.1\r\nHost: trails.test\r\nContent-Length: 2\r\n\r\n"
        sent, answer = trickle(port, head)
        assert sent < len(head)
        assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
        whole = httpx.post(
            f"http://127.0.0.1:{port}/v1/traces",
            content=b"{}",
            headers={"content-type": "application/json"},
            timeout=60,
        )
        assert whole.status_code == 200, whole.text
    finally:
        stop(process)


def test_mcp_serve_over_http_cuts_a_trickling_head_too(tmp_path: Path) -> None:
    (tmp_path / "tokens.toml").write_text(tokens_toml(), encoding="utf-8")
    config = tmp_path / "trails.toml"
    config.write_text('[serve]\ntokens = "tokens.toml"\nheader_timeout = 1\n', encoding="utf-8")
    port = free_port()
    env = {**os.environ, "TRAILS_CONFIG": str(config), "TRAILS_STORE": str(tmp_path / "store")}
    process = subprocess.Popen(
        [sys.executable, "-m", "trails.cli", "mcp", "serve", "--http", f"127.0.0.1:{port}"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )

    def up() -> bool:
        assert process.poll() is None, process.communicate()[1].decode()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    try:
        wait_for(up)
        head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n"
        sent, answer = trickle(port, head)
        assert sent < len(head)
        assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
        # a whole request is still answered (401: no token given)
        whole = httpx.post(f"http://127.0.0.1:{port}/mcp", content=b"{}", timeout=60)
        assert whole.status_code == 401, whole.text
    finally:
        assert "Traceback" not in stop(process)
