"""The login form counts a wrong token like the endpoint counts a wrong bearer token; a
right token gets in at either whatever the count."""

from __future__ import annotations

import httpx
import pytest

from trails.server import create_app
from trails.server.auth import load_tokens, token_entry
from trails.store import Store

TOKEN = "right-token-0123456789abcdefghij"


@pytest.mark.anyio
async def test_guessing_tokens_at_the_login_form_is_throttled(store: Store) -> None:
    tokens = load_tokens(_table())
    endpoint = create_app(store, tokens, access_log="memory:")
    transport = httpx.ASGITransport(app=endpoint.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as client:
        answers = [
            (await client.post("/console/login", data={"token": f"guess-{n}"})).status_code
            for n in range(25)
        ]
        assert answers[:20] == [401] * 20 and set(answers[20:]) == {429}
        late = await client.post("/console/login", data={"token": "guess-x"})
        assert late.status_code == 429 and "retry after" in late.text
        assert int(late.headers["retry-after"]) >= 1
        # the endpoint counts the same failures: its wrong bearer tokens are refused too
        sparql = await client.get(
            "/sparql", params={"query": "ASK {}"}, headers={"Authorization": "Bearer guess-y"}
        )
        assert sparql.status_code == 429
        # ... and a right token gets in, at the form and as a bearer token
        right = await client.post("/console/login", data={"token": TOKEN})
        assert right.status_code == 303, right.text
        sparql = await client.get(
            "/sparql", params={"query": "ASK {}"}, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert sparql.status_code == 200, sparql.text
    endpoint.close()


def _table() -> dict[str, object]:
    import tomllib

    return tomllib.loads(token_entry(TOKEN, "did:example:auditor", ["*"]))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
