"""``trails mcp proxy -- python -m mcp_server_time``, driven by the official MCP client SDK.

The server is a real third-party one from PyPI, run offline. The same calls are
made directly and through the proxy: the answers must be the same, and the
proxied ones must be on the record.
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from tests.mcp_serve.conftest import (
    ALICE,
    PYTHON,
    TOKENS,
    TRAILS,
    Served,
    assert_conforming,
    environment,
    rows,
    trails,
)

BOB = "did:example:bob"
TIME_SERVER = [PYTHON, "-m", "mcp_server_time", "--local-timezone", "UTC"]

CALLS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g ?cap ?status ?who ?server ?version ?transport ?client ?cversion ?error ?input ?output
WHERE { GRAPH ?g {
  ?a a trails:CapabilityInvocation ; trails:capability/trails:capabilityId ?cap ;
     trails:status ?status ; prov:wasAssociatedWith ?p, ?s ; prov:used ?in ;
     prov:startedAtTime ?start ; prov:endedAtTime ?end ; trails:latencyMs ?ms .
  ?p trails:principalId ?who ; prov:actedOnBehalfOf ?c .
  ?c a prov:SoftwareAgent ; trails:mcpClientName ?client ; trails:mcpClientVersion ?cversion .
  ?s a trails:McpServer ; trails:mcpServerName ?server ; trails:mcpServerVersion ?version ;
     trails:mcpTransport ?transport .
  ?g prov:endedAtTime ?ended .
  }
  OPTIONAL { GRAPH ?eg { ?a trails:errorMessage ?error } }
  OPTIONAL { GRAPH ?cg { ?in prov:value ?input } }
  OPTIONAL { GRAPH ?g { ?out prov:wasGeneratedBy ?a } GRAPH ?cg2 { ?out prov:value ?output } }
} ORDER BY ?status ?cap"""

CONVERT = {"source_timezone": "Europe/Paris", "time": "12:00", "target_timezone": "Asia/Tokyo"}


def direct() -> StdioServerParameters:
    return StdioServerParameters(command=TIME_SERVER[0], args=TIME_SERVER[1:], env=environment())


def proxied(store: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=TRAILS,
        args=[
            "--store",
            str(store),
            "mcp",
            "proxy",
            "--principal",
            BOB,
            *extra,
            "--",
            *TIME_SERVER,
        ],
        env=environment(),
    )


async def session_calls(params: StdioServerParameters) -> dict[str, Any]:
    info = types.Implementation(name="agent-under-audit", version="3.1")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=info) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            converted = await session.call_tool("convert_time", CONVERT)
            failed = await session.call_tool("get_current_time", {"timezone": "Not/AZone"})
            return {"init": init, "tools": tools, "converted": converted, "failed": failed}


def test_answers_are_those_of_a_direct_connection(tmp_path: Path) -> None:
    store = tmp_path / "store"
    plain = anyio.run(session_calls, direct())
    relayed = anyio.run(session_calls, proxied(store))
    assert relayed["init"].server_info == plain["init"].server_info  # the server's, not the proxy's
    assert relayed["init"].capabilities == plain["init"].capabilities
    assert relayed["tools"] == plain["tools"]
    for name in ("converted", "failed"):
        assert relayed[name].content == plain[name].content
        assert relayed[name].structured_content == plain[name].structured_content
        assert relayed[name].is_error == plain[name].is_error
    assert plain["failed"].is_error and not plain["converted"].is_error


def test_calls_are_recorded_and_sealed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    relayed = anyio.run(session_calls, proxied(store))
    calls = rows(store, CALLS)
    assert [(r["cap"], r["status"]) for r in calls] == [
        ("mcp-time.get_current_time", "error"),
        ("mcp-time.convert_time", "ok"),
    ]
    version = relayed["init"].server_info.version
    for row in calls:
        assert row["who"] == BOB
        assert (row["client"], row["cversion"]) == ("agent-under-audit", "3.1")
        assert (row["server"], row["version"], row["transport"]) == ("mcp-time", version, "stdio")
    error, ok = calls
    assert "Not/AZone" in error["error"] and "Not/AZone" in error["input"]
    assert "Asia/Tokyo" in ok["input"] and "Asia/Tokyo" in ok["output"]
    assert len({r["g"] for r in calls}) == 1  # one session for the one client connection
    done = trails("--store", str(store), "verify", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 seal(s)" in done.stdout
    assert_conforming(store)


def test_each_client_connection_is_a_session(tmp_path: Path) -> None:
    store = tmp_path / "store"
    anyio.run(session_calls, proxied(store))
    anyio.run(session_calls, proxied(store))
    assert len({r["g"] for r in rows(store, CALLS)}) == 2


def test_an_upstream_over_http_with_its_token(served: Served, tmp_path: Path) -> None:
    store = tmp_path / "proxy-store"
    relay = StdioServerParameters(
        command=TRAILS,
        args=[
            *("--store", str(store), "mcp", "proxy", "--principal", BOB),
            *("--upstream", served.url, "--header", f"Authorization: Bearer {TOKENS[ALICE]}"),
        ],
        env=environment(),
    )

    async def work() -> types.CallToolResult:
        info = types.Implementation(name="http-agent", version="2.0")
        async with stdio_client(relay) as (read, write):
            async with ClientSession(read, write, client_info=info) as session:
                await session.initialize()
                return await session.call_tool("notes.count", {"text": "abcd"})

    counted = anyio.run(work)
    assert not counted.is_error and counted.content == [types.TextContent(text="4")]
    calls = rows(store, CALLS)
    assert [(r["cap"], r["status"], r["who"], r["transport"]) for r in calls] == [
        ("trails.notes.count", "ok", BOB, "streamable-http")
    ]
    assert calls[0]["client"] == "http-agent"
    served.stop()  # the server recorded the same call, as the token's principal
    upstream = rows(
        served.store,
        "SELECT ?who WHERE { GRAPH ?g { ?a a <https://w3id.org/trails/ns#CapabilityInvocation> ; "
        "<http://www.w3.org/ns/prov#wasAssociatedWith> [ "
        "<https://w3id.org/trails/ns#principalId> ?who ] } }",
    )
    assert [r["who"] for r in upstream] == [ALICE]


def test_without_a_server_it_says_so(tmp_path: Path) -> None:
    done = trails("mcp", "proxy", cwd=tmp_path)
    assert done.returncode == 2
    assert "-- COMMAND ARGS" in done.stderr and "Traceback" not in done.stderr
    both = trails("mcp", "proxy", "--upstream", "http://127.0.0.1:9/mcp", "--", "x", cwd=tmp_path)
    assert both.returncode == 2 and "Traceback" not in both.stderr


INIT = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}\n'
)


def test_a_server_that_cannot_start_or_be_reached_is_one_line(tmp_path: Path) -> None:
    missing = subprocess.run(
        [TRAILS, "--store", str(tmp_path / "a"), "mcp", "proxy", "--", str(tmp_path / "nope")],
        input=INIT,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.startswith("trails: error: cannot start the MCP server")
    unreachable = subprocess.run(
        [
            TRAILS,
            "--store",
            str(tmp_path / "b"),
            "mcp",
            "proxy",
            "--upstream",
            "http://127.0.0.1:9/mcp",
        ],
        input=INIT,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert unreachable.returncode == 2 and "Traceback" not in unreachable.stderr
    assert unreachable.stderr.startswith(
        "trails: error: cannot reach the MCP server at http://127.0.0.1:9/mcp: ConnectError"
    )
    assert unreachable.stderr.count("\n") == 1


def proxy_upstream(tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``trails mcp proxy --upstream URL < /dev/null`` (a hang fails: TimeoutExpired)."""
    return subprocess.run(
        [TRAILS, "--store", str(tmp_path / "s"), "mcp", "proxy", "--upstream", url, *extra],
        stdin=subprocess.DEVNULL,
        env=environment(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_an_unreachable_upstream_is_one_line_even_without_input(tmp_path: Path) -> None:
    refused = proxy_upstream(tmp_path, "http://127.0.0.1:9/mcp")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith("trails: error: cannot reach the MCP server at")
    assert refused.stderr.count("\n") == 1
    unknown = proxy_upstream(tmp_path, "http://no-such-host.invalid/mcp")
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1
    assert "cannot reach the MCP server at http://no-such-host.invalid/mcp" in unknown.stderr
    for bad in ("0", "-1", "nan", "soon"):
        done = proxy_upstream(tmp_path, "http://127.0.0.1:9/mcp", "--connect-timeout", bad)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr


def test_an_upstream_that_accepts_but_never_answers_is_given_up_on(tmp_path: Path) -> None:
    with socket.socket() as silent:  # the kernel accepts connections; nothing ever answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"
        done = proxy_upstream(tmp_path, url, "--connect-timeout", "1")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"trails: error: cannot reach the MCP server at {url}: no answer in 1 s\n"


def test_a_client_that_closes_at_once_ends_the_proxy(served: Served, tmp_path: Path) -> None:
    bearer = f"Authorization: Bearer {TOKENS[ALICE]}"
    done = proxy_upstream(tmp_path, served.url, "--header", bearer)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


DYING = '''
import os

from mcp.server.mcpserver import MCPServer

app = MCPServer("dying")


@app.tool()
def fine() -> str:
    """Answer."""
    return "fine"


@app.tool()
def die() -> str:
    """Exit in the middle of the call."""
    os._exit(3)


app.run()
'''


def test_a_server_that_dies_mid_call_leaves_an_interrupted_call(tmp_path: Path) -> None:
    (tmp_path / "dying.py").write_text(DYING)
    store = tmp_path / "store"
    relay = StdioServerParameters(
        command=TRAILS,
        args=["--store", str(store), "mcp", "proxy", "--", PYTHON, str(tmp_path / "dying.py")],
        env=environment(),
    )

    async def work() -> tuple[types.CallToolResult, BaseException | None]:
        async with stdio_client(relay) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                answered = await session.call_tool("fine", {})
                try:
                    await session.call_tool("die", {})
                except MCPError as exc:  # the connection closed under the call
                    return answered, exc
                return answered, None

    answered, cut = anyio.run(work)
    assert not answered.is_error and isinstance(cut, MCPError)
    assert [(r["cap"], r["status"]) for r in rows(store, CALLS)] == [
        ("dying.die", "interrupted"),
        ("dying.fine", "ok"),
    ]
    done = trails("--store", str(store), "verify", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    strict = trails("--store", str(store), "verify", "--strict", cwd=tmp_path)
    assert strict.returncode == 1 and "dying.die" in strict.stdout
    assert "the connection closed before the server answered" in strict.stdout
    assert_conforming(store)
