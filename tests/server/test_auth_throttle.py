"""Abusive clients: failed authentications throttled per client and per token, slow
bodies cut off.

A real endpoint on a real store, over HTTP (httpx through the ASGI app): a client that
guesses tokens gets 401s up to the limit, then 429 with ``Retry-After`` for every wrong
token it sends until the window passes, while a right token from the same address still
gets in (behind a reverse proxy every user may share it); the access log holds one entry
per counted failure and one for the block, not one per guess. Another client is not
affected; one wrong token sent from many addresses is blocked on its own. Behind a
trusted proxy (a real ``trails serve --forwarded-allow-ips``), the client is the one the
proxy reports. A body that trickles in over a real socket (a real uvicorn) is answered
408 once its time is up, freeing the connection.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.server.conftest import TOKENS, auth, seed, serving, tokens_toml
from tests.server.test_head_timeout import start, stop

import trails.server.app as app_module
from trails.server.app import Endpoint
from trails.server.limits import FailureThrottle
from trails.store import Solutions, open_store

QUERY = {"query": "SELECT * WHERE { ?s ?p ?o } LIMIT 1"}
TRAILS = (sys.executable, "-m", "trails.cli")


def _env(where: Path, toml: str) -> dict[str, str]:
    (where / "trails.toml").write_text(toml, encoding="utf-8")
    return {
        **os.environ,
        "TRAILS_CONFIG": str(where / "trails.toml"),
        "TRAILS_STORE": str(where / "store"),
    }


def _logged(endpoint: Endpoint) -> int:
    result = endpoint.access_log.store.query(
        "SELECT (COUNT(?a) AS ?n) WHERE { GRAPH ?g { ?a a <https://w3id.org/trails/ns#QueryReceived> } }"
    )
    assert isinstance(result, Solutions)
    return int(result.rows[0][0].value)  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_token_guessing_is_throttled_and_logged_once(endpoint: Endpoint) -> None:
    now = [0.0]
    endpoint.throttle = FailureThrottle(failures=5, window=60.0, clock=lambda: now[0])
    transport = httpx.ASGITransport(app=endpoint.app, client=("10.0.0.7", 4000))
    async with httpx.AsyncClient(transport=transport, base_url="http://trails.test") as guesser:
        for i in range(5):
            wrong = await guesser.get(
                "/sparql", params=QUERY, headers={"Authorization": f"Bearer guess-{i}"}
            )
            assert wrong.status_code == 401
        for _ in range(30):
            blocked = await guesser.get(
                "/sparql", params=QUERY, headers={"Authorization": "Bearer guess-x"}
            )
            assert blocked.status_code == 429
            assert blocked.headers["retry-after"] == "60"
        right = await guesser.get("/sparql", params=QUERY, headers=auth("bob"))
        assert right.status_code == 200, right.text  # a right token from there gets in
        blocked = await guesser.get("/sparql", params=QUERY, headers={"Authorization": "x"})
        assert blocked.status_code == 429  # ... a wrong one still does not
        assert _logged(endpoint) == 7  # five failures, the block and bob, not 38 entries

        other = httpx.ASGITransport(app=endpoint.app, client=("10.0.0.8", 4000))
        async with httpx.AsyncClient(transport=other, base_url="http://trails.test") as fine:
            assert (await fine.get("/sparql", params=QUERY, headers=auth("bob"))).status_code == 200

        now[0] = 61.0  # the window passed: the guesser may try again
        again = await guesser.get("/sparql", params=QUERY, headers=auth("bob"))
        assert again.status_code == 200, again.text


@pytest.mark.anyio
async def test_a_valid_login_gets_into_the_console_from_a_blocked_address(
    endpoint: Endpoint,
) -> None:
    endpoint.throttle.failures = 3  # the console counts on the endpoint's own throttle
    transport = httpx.ASGITransport(app=endpoint.app, client=("10.0.0.7", 4000))
    async with httpx.AsyncClient(transport=transport, base_url="https://trails.test") as user:
        for i in range(3):
            page = await user.post("/console/login", data={"token": f"guess-{i}"})
            assert page.status_code == 401
        page = await user.post("/console/login", data={"token": "guess-x"})
        assert page.status_code == 429
        assert page.headers["retry-after"] == "60"
        page = await user.post("/console/login", data={"token": TOKENS["bob"]})
        assert page.status_code == 303, page.text  # logged in: on to the console


@pytest.mark.anyio
async def test_one_wrong_token_from_many_addresses_is_blocked_on_its_own(
    endpoint: Endpoint,
) -> None:
    endpoint.throttle = FailureThrottle(failures=3, window=60.0, clock=lambda: 0.0)
    stale = {"Authorization": "Bearer revoked-token-of-a-fleet"}
    for i in range(3):
        transport = httpx.ASGITransport(app=endpoint.app, client=(f"10.0.1.{i}", 4000))
        async with httpx.AsyncClient(transport=transport, base_url="http://trails.test") as pod:
            assert (await pod.get("/sparql", params=QUERY, headers=stale)).status_code == 401
    transport = httpx.ASGITransport(app=endpoint.app, client=("10.0.1.99", 4000))
    async with httpx.AsyncClient(transport=transport, base_url="http://trails.test") as pod:
        assert (await pod.get("/sparql", params=QUERY, headers=stale)).status_code == 429
        other = {"Authorization": "Bearer another-wrong-token"}
        assert (await pod.get("/sparql", params=QUERY, headers=other)).status_code == 401
        assert (await pod.get("/sparql", params=QUERY, headers=auth("bob"))).status_code == 200


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    store = open_store(tmp_path / "store")
    seed(store)
    store.close()
    (tmp_path / "tokens.toml").write_text(tokens_toml(), encoding="utf-8")
    yield tmp_path, '[serve]\ntokens = "tokens.toml"\n'


def _guess_from(port: int, forwarded_for: str, token: str) -> int:
    headers = {"Authorization": f"Bearer {token}", "X-Forwarded-For": forwarded_for}
    answer = httpx.get(f"http://127.0.0.1:{port}/sparql", params=QUERY, headers=headers, timeout=60)
    return answer.status_code


@pytest.mark.parametrize(
    ("options", "apart"),
    [
        (["--forwarded-allow-ips", "127.0.0.1"], True),  # the proxy on this machine, trusted
        (["--forwarded-allow-ips", "10.9.9.9"], False),  # a proxy elsewhere: not this peer
    ],
)
def test_behind_a_trusted_proxy_clients_are_counted_apart(
    proxied: tuple[Path, str], options: list[str], apart: bool
) -> None:
    where, toml = proxied
    process, port = start(where, ["serve", *options], toml)
    try:
        codes = [_guess_from(port, "203.0.113.5", f"guess-{i}") for i in range(21)]
        assert codes[:20] == [401] * 20 and codes[20] == 429
        # another user behind the same proxy: a wrong token is still only a 401 for them
        assert _guess_from(port, "203.0.113.6", "typo") == (401 if apart else 429)
        assert _guess_from(port, "203.0.113.5", TOKENS["bob"]) == 200  # a right token: in
    finally:
        assert "Traceback" not in stop(process)


def test_the_trusted_proxies_come_from_trails_toml(proxied: tuple[Path, str]) -> None:
    where, toml = proxied
    process, port = start(where, ["serve"], toml + 'forwarded_allow_ips = "10.9.9.9"\n')
    try:
        for i in range(20):
            _guess_from(port, "203.0.113.5", f"guess-{i}")
        assert _guess_from(port, "203.0.113.6", "typo") == 429  # loopback is not trusted now
    finally:
        stop(process)
    bad = subprocess.run(
        [*TRAILS, "serve", "--forwarded-allow-ips", "not an address"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(where, toml),
    )
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.count("\n") == 1 and "--forwarded-allow-ips" in bad.stderr


def test_a_body_that_trickles_in_is_cut_off_with_408(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "BODY_SECONDS", 0.5)
    with serving(endpoint.app) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as conn:
            conn.sendall(
                b"POST /sparql HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/sparql-query\r\nContent-Length: 1000\r\n"
                + f"Authorization: Bearer {TOKENS['bob']}\r\n\r\n".encode()
                + b"SELECT"  # ... and nothing more: the rest never comes
            )
            conn.settimeout(60)
            answer = b""
            while b"arrive within" not in answer:  # the head and the body may come apart
                part = conn.recv(4096)
                if not part:
                    break
                answer += part
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b"did not arrive within 0.5 s" in answer
