"""Fixtures for the SPARQL endpoint: seeded provenance, tokens, the app and a real server.

The data is real trails provenance written by the recorder: two sessions of
alice, one of bob, and a shared memory graph. Four tokens read it: alice
(own sessions + memory), bob (own sessions), admin (``*``) and an auditor
(``*`` and the access log).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from trails.prov import Minter, Recorder, SessionEnded, SessionStarted
from trails.server import Endpoint, EndpointConfig, create_app
from trails.server.auth import TokenTable, load_tokens, token_entry
from trails.store import IRI, Literal, Quad, Store

TOKENS = {
    "alice": "alice-token-0123456789abcdef",
    "bob": "bob-token-0123456789abcdef",
    "admin": "admin-token-0123456789abcdef",
    "auditor": "auditor-token-0123456789abcdef",
}
ALICE, BOB = "did:example:alice", "did:example:bob"
MINTER = Minter()
MEMORY = MINTER.graph("memory")
ACCESS_LOG = MINTER.graph("access-log")
EX = "http://example.org/"


@dataclass(frozen=True)
class Seeded:
    alice_sessions: tuple[IRI, IRI]
    bob_session: IRI
    memory: IRI


def seed(store: Store) -> Seeded:
    """Write two sessions of alice, one of bob, and one memory triple."""
    recorder = Recorder(store)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    sessions = []
    for n, who in enumerate((ALICE, ALICE, BOB)):
        s = recorder.minter.session(f"s{n}")
        recorder.record(
            SessionStarted(session=s, principal=who, started=start + timedelta(hours=n))
        )
        recorder.record(SessionEnded(session=s, ended=start + timedelta(hours=n, minutes=5)))
        sessions.append(s)
    store.write([Quad(IRI(EX + "fact"), IRI(EX + "says"), Literal("shared"), MEMORY)])
    return Seeded((sessions[0], sessions[1]), sessions[2], MEMORY)


def tokens_toml() -> str:
    return "\n".join(
        [
            token_entry(TOKENS["alice"], ALICE, ["own-sessions", str(MEMORY)]),
            token_entry(TOKENS["bob"], BOB, ["own-sessions"]),
            token_entry(TOKENS["admin"], "did:example:admin", ["*"]),
            token_entry(TOKENS["auditor"], "did:example:auditor", ["*"], audit=True),
        ]
    )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.toml"
    path.write_text(tokens_toml(), encoding="utf-8")
    return path


@pytest.fixture
def token_table(tokens_file: Path) -> TokenTable:
    return load_tokens(tokens_file)


@pytest.fixture
def seeded(store: Store) -> Seeded:
    return seed(store)


@pytest.fixture
def config() -> EndpointConfig:
    return EndpointConfig(time_limit=20, max_query_bytes=4096, max_results=50)


@pytest.fixture
def endpoint(
    store: Store, seeded: Seeded, token_table: TokenTable, config: EndpointConfig
) -> Iterator[Endpoint]:
    ep = create_app(store, token_table, config)
    yield ep
    ep.close()


@pytest.fixture
async def client(endpoint: Endpoint) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=endpoint.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://trails.test") as c:
        yield c


def auth(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[who]}"}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Run ``app`` under a real uvicorn on a free loopback port; yields the base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    until = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive(), "uvicorn exited while starting"
        assert time.monotonic() < until, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture
def live(endpoint: Endpoint) -> Iterator[str]:
    """The in-process endpoint under a real uvicorn; yields the base URL."""
    with serving(endpoint.app) as url:
        yield url


def wait_for(predicate: Callable[[], bool], *, attempts: int = 600) -> None:
    """Poll ``predicate`` a bounded number of times (for processes starting up)."""
    for _ in range(attempts):
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached")
