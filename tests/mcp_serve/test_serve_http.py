"""``trails mcp serve --http``: streamable HTTP, the tokens and grants of ``trails serve``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from tests.mcp_serve.conftest import ALICE, AUDITOR, BOB, TOKENS, Served, rows, trails

CALLS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g ?cap ?who ?status WHERE { GRAPH ?g {
  ?a a trails:CapabilityInvocation ; trails:capability/trails:capabilityId ?cap ;
     trails:status ?status ; prov:wasAssociatedWith ?p .
  ?p trails:principalId ?who .
  ?g prov:endedAtTime ?ended .
} } ORDER BY ?who ?cap"""


async def connect(url: str, who: str | None, work: Any) -> Any:
    headers = {"Authorization": f"Bearer {TOKENS[who]}"} if who else {}
    async with httpx2.AsyncClient(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            info = types.Implementation(name=f"client-of-{who}", version="0.1")
            async with ClientSession(read, write, client_info=info) as session:
                await session.initialize()
                return await work(session)


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside the SDK's task groups' exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def test_no_token_no_call(served: Served) -> None:
    url = served.url
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "curl", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    plain = httpx.post(url, json=init, headers=accept)
    assert plain.status_code == 401 and plain.headers["www-authenticate"].startswith("Bearer")
    wrong = httpx.post(url, json=init, headers={**accept, "Authorization": "Bearer nope"})
    assert wrong.status_code == 401

    async def never(session: ClientSession) -> None:  # pragma: no cover - refused before
        raise AssertionError("a client without a token got a session")

    with pytest.raises(BaseException) as refused:  # the SDK raises the 401 inside its task group
        anyio.run(connect, url, None, never)
    assert "401" in repr(refused.value) or isinstance(refused.value, MCPError | BaseExceptionGroup)
    served.stop()
    assert not rows(served.store, CALLS)


def test_calls_are_recorded_in_the_token_principals_sessions(served: Served) -> None:
    url, store = served.url, served.store

    async def alice(session: ClientSession) -> dict[str, Any]:
        added = await session.call_tool("notes.add", {"text": "hello"})
        own = await session.call_tool("query_side-effects", {})
        bindings = json.loads(text(own))["results"]["bindings"]
        sid = bindings[0]["session"]["value"].rsplit(":", 1)[1]
        trig = await session.read_resource(f"trails://session/{sid}")
        return {"added": added, "own": bindings, "sid": sid, "trig": trig.contents[0]}

    async def bob(session: ClientSession) -> dict[str, Any]:
        counted = await session.call_tool("notes.count", {"text": "abc"})
        seen = await session.call_tool("query_side-effects", {})
        verify_all = await session.call_tool("verify", {})
        return {"counted": counted, "seen": seen, "verify_all": verify_all}

    a = anyio.run(connect, url, ALICE, alice)
    assert json.loads(text(a["added"])) == {"kept": "hello"}
    assert len(a["own"]) == 1 and "notes.add" in a["trig"].text
    b = anyio.run(connect, url, BOB, bob)
    assert text(b["counted"]) == "3"
    seen = [x["session"]["value"] for x in json.loads(text(b["seen"]))["results"]["bindings"]]
    assert all(a["sid"] not in s for s in seen)  # bob's grant does not reach alice's session
    assert b["verify_all"].is_error and "whole store" in text(b["verify_all"])

    async def bob_reads_alice(session: ClientSession) -> None:
        await session.read_resource(f"trails://session/{a['sid']}")

    with pytest.raises(BaseException) as refused:
        anyio.run(connect, url, BOB, bob_reads_alice)
    errors = [e for e in leaves(refused.value) if isinstance(e, MCPError)]
    assert errors and "no readable session" in str(errors[0])

    async def auditor(session: ClientSession) -> tuple[dict[str, Any], str, list[Any]]:
        report = json.loads(text(await session.call_tool("verify", {})))
        page = await session.read_resource(f"trails://report/{a['sid']}")
        effects = await session.call_tool("query_side-effects", {})
        return report, page.contents[0].text, json.loads(text(effects))["results"]["bindings"]

    report, page, effects = anyio.run(connect, url, AUDITOR, auditor)
    assert report["ok"] is True and report["seals"] >= 2  # both clients' sessions sealed
    assert "notes.add" in page
    assert [e["session"]["value"] for e in effects] == [a["own"][0]["session"]["value"]]

    served.stop()
    calls = rows(store, CALLS)
    assert sorted((r["who"], r["cap"], r["status"]) for r in calls) == [
        (ALICE, "notes.add", "ok"),
        (ALICE, "query_side-effects", "ok"),
        (AUDITOR, "query_side-effects", "ok"),
        (AUDITOR, "verify", "ok"),
        (BOB, "notes.count", "ok"),
        (BOB, "query_side-effects", "ok"),
        (BOB, "verify", "error"),  # the whole store is not bob's to verify
    ]
    assert len({r["g"] for r in calls}) == 3
    done = trails("--store", str(store), "verify", cwd=store.parent)
    assert done.returncode == 0, done.stdout + done.stderr


def test_http_needs_a_tokens_file(workdir: Path) -> None:
    done = trails("mcp", "serve", "--http", "127.0.0.1:0", cwd=workdir)
    assert done.returncode == 2 and "needs --tokens" in done.stderr
    bad = trails("mcp", "serve", "--http", "nowhere", "--tokens", "t.toml", cwd=workdir)
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr
