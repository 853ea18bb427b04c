"""The console's sessions page on a dense catalogue: pages continue across a second of ties.

A hundred sessions start in one second (whole-second starts, so every comparison is
a tie broken by the session IRI): the console walks the catalogue's seconds, and
its pages, one after another, list every session once, in the pack query's order.
"""

from __future__ import annotations

import re
import tomllib
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import httpx
import pytest

from trails.audit.querypack import get_query
from trails.audit.sessions_page import paged
from trails.catalogue.entries import catalogue_iri, start_quads
from trails.prov.iri import Minter
from trails.server import create_app
from trails.server.auth import load_tokens, token_entry
from trails.server.console import sessions as console_sessions
from trails.store import Literal, Quad, Solutions, Store

TOKEN = "auditor-dense-token-0123456789abcdef"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_pages_continue_across_a_second_of_ties(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    minter = Minter()
    catalogue = catalogue_iri(minter)
    origin = datetime(2026, 3, 1, 22, 0, 59, tzinfo=UTC)  # the dense second ends a minute
    quads: list[Quad] = []
    for i in range(130):
        started = origin if i < 100 else origin + timedelta(seconds=i - 99)
        quads += start_quads(
            minter.session(),
            minter.agent("did:example:u"),
            started,
            label=f"s{i}",
            catalogue=catalogue,
            principal_id=Literal("did:example:u"),
        )
    store.write(quads)
    found = store.query(paged(get_query("sessions").text, None))
    assert isinstance(found, Solutions)
    expected = [quote(str(row[0]), safe="") for row in found.rows]
    monkeypatch.setattr(console_sessions, "PAGE_SIZE", 9)
    served = create_app(
        store,
        load_tokens(tomllib.loads(token_entry(TOKEN, "did:example:auditor", ["*"]))),
        access_log="memory:",
    )
    await served.start()
    try:
        transport = httpx.ASGITransport(app=served.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://console") as client:
            login = await client.post("/console/login", data={"token": TOKEN})
            assert login.status_code == 303
            listed: list[str] = []
            for page in range(1, 16):
                html = (await client.get("/console/", params={"page": page})).text
                listed += _listed(html)
    finally:
        served.close()
    assert listed == expected
    assert len(set(listed)) == 130


def _listed(html: str) -> list[str]:
    return re.findall(r'href="/console/session\?s=([^"]+)"', html)
