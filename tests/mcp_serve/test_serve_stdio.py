"""``trails mcp serve`` on stdio, driven by the official MCP client SDK."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from tests.mcp_serve.conftest import TRAILS, assert_conforming, environment, rows, trails

ALICE = "did:example:alice"
HOSTILE = 'ok" } } ; DROP ALL ; INSERT DATA { <a:b> <a:c> "pwned" } #'
HOSTILE_IRI = 'did:x> } } ; DROP ALL ; INSERT DATA { <a:b> <a:c> "pwned" } #'

CALLS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g ?cap ?status ?who ?ended ?label WHERE { GRAPH ?g {
  ?a a trails:CapabilityInvocation ; trails:capability/trails:capabilityId ?cap ;
     trails:status ?status ; prov:wasAssociatedWith ?p .
  ?p trails:principalId ?who .
  ?g prov:endedAtTime ?ended .
} } ORDER BY ?cap ?status"""


def serve(store: Path, cwd: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=TRAILS,
        args=["--store", str(store), "mcp", "serve", "--import", "mcpcaps", *extra],
        cwd=str(cwd),
        env=environment(),
    )


def client(name: str = "auditor-ide") -> types.Implementation:
    return types.Implementation(name=name, version="1.2.3")


async def drive(params: StdioServerParameters, work: Any) -> Any:
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=client()) as session:
            await session.initialize()
            return await work(session)


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def test_tools_calls_resources_and_the_record(workdir: Path) -> None:
    store = workdir / "store"

    async def work(session: ClientSession) -> dict[str, Any]:
        listed = await session.list_tools()
        tools = {t.name: t for t in listed.tools}
        added = await session.call_tool("notes.add", {"text": "ab", "times": 2})
        invalid = await session.call_tool("notes.count", {"text": 5})
        overview = await session.call_tool("query_sessions", {"principal": ALICE})
        hostile = await session.call_tool("query_sessions", {"status": HOSTILE})
        hostile_iri = await session.call_tool("query_sessions", {"principal": HOSTILE_IRI})
        templates = await session.list_resource_templates()
        mine = json.loads(text(overview))["results"]["bindings"]
        sid = mine[0]["session"]["value"].rsplit(":", 1)[1]
        trig = await session.read_resource(f"trails://session/{sid}")
        report = await session.read_resource(f"trails://report/{sid}")
        return {
            "tools": tools,
            "added": added,
            "invalid": invalid,
            "mine": mine,
            "hostile": hostile,
            "hostile_iri": hostile_iri,
            "templates": [t.uri_template for t in templates.resource_templates],
            "trig": trig.contents[0],
            "report": report.contents[0],
        }

    got = anyio.run(drive, serve(store, workdir, "--principal", ALICE), work)
    tools = got["tools"]
    assert {"notes.add", "notes.count", "admin.wipe", "verify", "query_sessions"} <= set(tools)
    schema = tools["notes.add"].input_schema
    assert schema["required"] == ["text"] and schema["properties"]["times"]["type"] == "integer"
    assert tools["notes.add"].annotations.destructive_hint is True
    assert tools["query_sessions"].annotations.read_only_hint is True
    assert tools["query_sessions"].input_schema["properties"]["principal"]["type"] == "string"

    assert not got["added"].is_error and json.loads(text(got["added"])) == {"kept": "abab"}
    assert got["added"].structured_content == {"kept": "abab"}
    assert got["invalid"].is_error and "notes.count" in text(got["invalid"])
    assert len(got["mine"]) == 1  # the client's own session, open while it is connected
    assert not got["hostile"].is_error  # bound as a literal: no session has it, nothing ran
    assert json.loads(text(got["hostile"]))["results"]["bindings"] == []
    assert got["hostile_iri"].is_error  # not an IRI: refused by its declared type, one line
    assert "expects" in text(got["hostile_iri"]) and "Traceback" not in text(got["hostile_iri"])
    assert got["templates"] == [
        "trails://session/{id}",
        "trails://session/{id}/jsonld",
        "trails://report/{id}",
    ]
    assert got["trig"].mime_type == "application/trig" and "notes.add" in got["trig"].text
    assert got["report"].mime_type == "text/html" and "<html" in got["report"].text.lower()

    calls = rows(store, CALLS)
    assert [(r["cap"], r["status"], r["who"]) for r in calls] == [
        ("notes.add", "ok", ALICE),
        ("notes.count", "invalid", ALICE),
        ("query_sessions", "invalid", ALICE),  # the principal that is not an IRI
        ("query_sessions", "ok", ALICE),
        ("query_sessions", "ok", ALICE),
    ]
    assert len({r["g"] for r in calls}) == 1  # one trails session for the client connection
    assert not rows(store, 'SELECT ?s WHERE { GRAPH ?g { ?s ?p "pwned" } }')
    done = trails("--store", str(store), "verify", cwd=workdir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 seal(s)" in done.stdout  # the client's session was sealed when it left
    assert_conforming(store)


def test_session_label_names_the_client_and_each_connection_is_a_session(workdir: Path) -> None:
    store = workdir / "store"

    async def once(session: ClientSession) -> str:
        return text(await session.call_tool("notes.count", {"text": "four"}))

    params = serve(store, workdir, "--principal", ALICE)
    assert anyio.run(drive, params, once) == "4"
    assert anyio.run(drive, params, once) == "4"
    calls = rows(store, CALLS)
    assert len(calls) == 2 and len({r["g"] for r in calls}) == 2
    labels = rows(
        store,
        "SELECT ?label WHERE { GRAPH ?g { ?g a ?t . } GRAPH ?c { ?g ?p ?label } "
        'FILTER(CONTAINS(STR(?label), "auditor-ide")) }',
    )
    assert labels and all("1.2.3" in r["label"] for r in labels)


def test_tools_globs_select_the_capabilities(workdir: Path) -> None:
    store = workdir / "store"

    async def work(session: ClientSession) -> tuple[set[str], MCPError]:
        names = {t.name for t in (await session.list_tools()).tools}
        with pytest.raises(MCPError) as refused:
            await session.call_tool("admin.wipe", {})
        return names, refused.value

    names, refused = anyio.run(
        drive, serve(store, workdir, "--principal", ALICE, "--tools", "notes.*"), work
    )
    assert {"notes.add", "notes.count", "verify"} <= names and "admin.wipe" not in names
    # an unknown tool is a protocol error (JSON-RPC -32602), as the MCP specification says
    assert refused.error.code == types.INVALID_PARAMS
    assert refused.error.message == "Unknown tool: admin.wipe"
    # nothing ran, and the attempt is on the record
    assert [(r["cap"], r["status"]) for r in rows(store, CALLS)] == [("admin.wipe", "invalid")]
    assert_conforming(store)


def test_unknown_tools_are_json_rpc_errors_and_recorded(workdir: Path) -> None:
    store = workdir / "store"
    odd = 'no such tool \u00e9 <>"{}'

    async def work(session: ClientSession) -> list[MCPError]:
        errors = []
        for name in ("nope", odd, "query_nope", "x" * 2000):
            with pytest.raises(MCPError) as raised:
                await session.call_tool(name, {"a": 1})
            errors.append(raised.value)
        return errors

    errors = anyio.run(drive, serve(store, workdir, "--principal", ALICE), work)
    assert [e.error.code for e in errors] == [types.INVALID_PARAMS] * 4
    assert errors[1].error.message == f"Unknown tool: {odd}"
    calls = rows(store, CALLS)
    assert sorted(r["cap"] for r in calls) == sorted(["nope", odd, "query_nope", "x" * 2000])
    assert {r["status"] for r in calls} == {"invalid"} and len({r["g"] for r in calls}) == 1
    assert_conforming(store)


def test_verify_tool_checks_the_seals(workdir: Path) -> None:
    store = workdir / "store"

    async def first(session: ClientSession) -> str:
        return text(await session.call_tool("notes.count", {"text": "x"}))

    async def check(session: ClientSession) -> dict[str, Any]:
        report: dict[str, Any] = json.loads(text(await session.call_tool("verify", {})))
        return report

    params = serve(store, workdir, "--principal", ALICE)
    anyio.run(drive, params, first)
    report = anyio.run(drive, params, check)
    assert report["ok"] is True and report["seals"] == 1 and report["findings"] == []
    calls = rows(store, CALLS)  # the verify call is on the record, in the second session
    assert [(r["cap"], r["status"]) for r in calls] == [("notes.count", "ok"), ("verify", "ok")]
    assert len({r["g"] for r in calls}) == 2
    done = trails("--store", str(store), "verify", cwd=workdir)
    assert done.returncode == 0 and "2 seal(s)" in done.stdout, done.stdout + done.stderr


def test_bad_import_is_one_line(workdir: Path) -> None:
    done = trails("mcp", "serve", "--import", "no_such_module_here", cwd=workdir)
    assert done.returncode == 2
    assert done.stderr.startswith("trails: error: --import no_such_module_here")
    assert "Traceback" not in done.stderr
