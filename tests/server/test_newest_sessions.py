"""``/queries/sessions?limit=N``: the newest sessions, the pack query's rows, read as a page."""

from __future__ import annotations

import httpx
import pytest
from tests.server.conftest import Seeded, auth

from trails.catalogue import rebuild
from trails.store import Store

pytestmark = pytest.mark.anyio


async def test_a_limit_gives_the_newest_rows_of_the_pack_query(
    client: httpx.AsyncClient, seeded: Seeded, store: Store
) -> None:
    rebuild(store)  # seeded without the sealer: the catalogue the sessions query reads
    whole = await client.get("/queries/sessions", headers=auth("admin"))
    assert whole.status_code == 200, whole.text
    every = whole.json()
    assert len(every["results"]["bindings"]) == 3
    for limit in (1, 2, 3, 50):
        page = await client.get(
            "/queries/sessions", params={"limit": str(limit)}, headers=auth("admin")
        )
        assert page.status_code == 200, page.text
        assert page.json()["head"] == every["head"]
        assert page.json()["results"]["bindings"] == every["results"]["bindings"][:limit]
    # other parameters as for the pack query; CSV too
    ranged = await client.get(
        "/queries/sessions",
        params={"limit": "5", "since": "2025-01-01T00:30:00Z"},
        headers=auth("admin"),
    )
    assert len(ranged.json()["results"]["bindings"]) == 2
    csv = await client.get(
        "/queries/sessions", params={"limit": "1"}, headers={**auth("admin"), "Accept": "text/csv"}
    )
    assert csv.status_code == 200 and len(csv.text.strip().splitlines()) == 2
    # a token that may not read the catalogue graph lists nothing, with or without a limit
    for params in ({}, {"limit": "2"}):
        own = await client.get("/queries/sessions", params=params, headers=auth("bob"))
        assert own.status_code == 200 and own.json()["results"]["bindings"] == []


async def test_another_query_has_no_limit(client: httpx.AsyncClient) -> None:
    answer = await client.get("/queries/agents", params={"limit": "2"}, headers=auth("admin"))
    assert answer.status_code == 400 and "no parameter limit" in answer.text


@pytest.mark.parametrize("bad", ["0", "-1", "many", "10001", "１"])
async def test_a_bad_limit_is_one_line_and_a_400(client: httpx.AsyncClient, bad: str) -> None:
    answer = await client.get("/queries/sessions", params={"limit": bad}, headers=auth("admin"))
    assert answer.status_code == 400
    assert "limit must be a whole number" in answer.text
    assert len(answer.text.strip().splitlines()) == 1
