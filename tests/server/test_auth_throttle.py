"""Abusive clients: failed authentications throttled per client, slow bodies cut off.

A real endpoint on a real store, over HTTP (httpx through the ASGI app): a client that
guesses tokens gets 401s up to the limit, then 429 with ``Retry-After`` before its
token is even checked (a right token too, from that address, until the window passes);
the access log holds one entry per counted failure and one for the block, not one per
guess. Another client is not affected. A body that trickles in over a real socket
(a real uvicorn) is answered 408 once its time is up, freeing the connection.
"""

from __future__ import annotations

import socket

import httpx
import pytest
from tests.server.conftest import TOKENS, auth, serving

import trails.server.app as app_module
from trails.server.app import Endpoint
from trails.server.limits import FailureThrottle
from trails.store import Solutions

QUERY = {"query": "SELECT * WHERE { ?s ?p ?o } LIMIT 1"}


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
        assert right.status_code == 429  # the address is blocked, whatever it sends
        assert _logged(endpoint) == 6  # five failures and the block, not 36 entries

        other = httpx.ASGITransport(app=endpoint.app, client=("10.0.0.8", 4000))
        async with httpx.AsyncClient(transport=other, base_url="http://trails.test") as fine:
            assert (await fine.get("/sparql", params=QUERY, headers=auth("bob"))).status_code == 200

        now[0] = 61.0  # the window passed: the guesser may try again
        again = await guesser.get("/sparql", params=QUERY, headers=auth("bob"))
        assert again.status_code == 200, again.text


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
