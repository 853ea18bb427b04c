"""Mounted MCP servers: their tools are capabilities, every call recorded with the server.

Real servers in subprocesses: the small MCP server beside this file (stdio and
streamable HTTP), driven through the official SDK by ``trails.mcp.mount``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trails import ainvoke, invoke
from trails.agent import Session
from trails.agent.loop.tools import discover_tools, render_catalogue
from trails.agent.planners import react
from trails.errors import ConfigError, UnknownCapability, ValidationError
from trails.kernel import Context
from trails.kernel.registry import get_capability
from trails.llm import LLMClient
from trails.mcp import (
    MountedServer,
    MountError,
    ServerStopped,
    ToolFailed,
    mount,
    mount_configured,
    unmount,
)
from trails.store import Store, open_store
from trails.store.terms import Literal

TOY = Path(__file__).with_name("toy_server.py")

CALLS = """
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT ?id ?status ?error ?server ?name ?version ?transport ?tool WHERE {
  GRAPH ?g {
    ?call a trails:CapabilityInvocation ; trails:capability ?cap ;
          prov:qualifiedAssociation/prov:hadPlan ?cap ;
          prov:wasAssociatedWith ?server .
    OPTIONAL { ?call trails:status ?status }
    ?cap trails:capabilityId ?id ; a trails:McpTool ; trails:mcpToolName ?tool ;
         prov:wasAttributedTo ?server .
    ?server a trails:McpServer, prov:SoftwareAgent ; trails:mcpServerName ?name ;
            trails:mcpServerVersion ?version ; trails:mcpTransport ?transport .
  }
  OPTIONAL { GRAPH ?h { ?call trails:errorMessage ?error } }
}
"""


def calls_of(store: Store, capability_id: str) -> list[dict[str, Any]]:
    rows = store.query(CALLS, {"id": Literal(capability_id)})
    keys = ("id", "status", "error", "server", "name", "version", "transport", "tool")
    return [{k: getattr(row.get(k), "value", row.get(k)) for k in keys} for row in rows]


@pytest.fixture
def toy(tmp_path: Path) -> Iterator[MountedServer]:
    server = mount([sys.executable, str(TOY), "stdio"], env={"TOY_MARKER": str(tmp_path / "pid")})
    assert server is not None
    yield server
    unmount(server.prefix)


def test_each_tool_is_a_capability_with_the_servers_schema_and_hints(
    toy: MountedServer,
) -> None:
    assert toy.name == "toy" and toy.version == "1.2.3" and toy.transport == "stdio"
    assert set(toy.tools) == {
        f"toy.{t}" for t in ("sleep_ms", "slow", "fail", "write_note", "grow")
    }
    sleep = get_capability("toy.sleep_ms")
    assert sleep.description.startswith("Wait ``ms`` milliseconds")
    assert sleep.side_effects is False  # readOnlyHint
    assert get_capability("toy.write_note").side_effects is True  # destructiveHint
    schema = sleep.manifest()["input_schema"]
    assert schema["required"] == ["ms"] and schema["properties"]["ms"]["type"] == "integer"
    catalogue = render_catalogue(discover_tools(["toy.sleep_ms", "toy.write_note"]))
    assert "- toy.sleep_ms: Wait" in catalogue and "    ms: int (required)" in catalogue
    assert "toy.write_note: Keep a note" in catalogue and "side effects" in catalogue


def test_a_call_is_recorded_with_the_server_as_its_software_agent(
    toy: MountedServer, ctx: Context, store: Store
) -> None:
    assert invoke("toy.sleep_ms", {"ms": 1}, ctx=ctx) == {"result": "slept 1 ms"}
    assert invoke("toy.write_note", {"text": "hi"}, ctx=ctx) == {"result": "kept 'hi'"}
    [row] = calls_of(store, "toy.sleep_ms")
    assert row["status"] == "ok" and row["tool"] == "sleep_ms"
    assert (row["name"], row["version"], row["transport"]) == ("toy", "1.2.3", "stdio")
    [note] = calls_of(store, "toy.write_note")  # written ahead, then completed
    assert note["status"] == "ok" and note["server"] == row["server"]


def test_bad_arguments_and_error_results_are_recorded_failures(
    toy: MountedServer, ctx: Context, store: Store
) -> None:
    with pytest.raises(ValidationError, match="'x' is not of type 'integer'"):
        invoke("toy.sleep_ms", {"ms": "x"}, ctx=ctx)
    with pytest.raises(ToolFailed, match="Error executing tool fail"):
        invoke("toy.fail", {"reason": "no"}, ctx=ctx)
    [failed] = calls_of(store, "toy.fail")
    assert failed["status"] == "error" and "Error executing tool fail" in failed["error"]
    rows = store.query(
        "PREFIX trails: <https://w3id.org/trails/ns#> SELECT ?id ?status WHERE { GRAPH ?g "
        "{ ?call trails:capability/trails:capabilityId ?id ; trails:status ?status } }",
        {"id": Literal("toy.sleep_ms")},
    )
    assert [r["status"].value for r in rows] == ["invalid"]  # the server was never asked


def test_a_server_killed_mid_call_fails_the_call_and_every_later_one(
    toy: MountedServer, ctx: Context, store: Store, tmp_path: Path
) -> None:
    outcome: dict[str, BaseException] = {}

    def call() -> None:
        try:
            invoke("toy.slow", {"seconds": 120}, ctx=ctx)
        except BaseException as exc:
            outcome["error"] = exc

    caller = threading.Thread(target=call)
    caller.start()
    marker = tmp_path / "pid"
    while not marker.exists() and caller.is_alive():  # the tool writes it once it runs
        time.sleep(0.02)
    os.kill(int(marker.read_text()), signal.SIGKILL)
    caller.join()
    assert isinstance(outcome["error"], ServerStopped)
    assert "the MCP server toy stopped during the call" in str(outcome["error"])
    [row] = calls_of(store, "toy.slow")
    assert row["status"] == "error" and "stopped during the call" in row["error"]
    with pytest.raises(ServerStopped, match="stopped"):
        invoke("toy.sleep_ms", {"ms": 1}, ctx=ctx)


def test_a_server_that_cannot_start_fails_the_mount_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = str(tmp_path / "no-such-server")
    with pytest.raises(MountError) as raised:
        mount([missing, "--stdio"])
    assert "\n" not in str(raised.value) and "No such file or directory" in str(raised.value)
    with pytest.raises(MountError, match="Connection closed"):
        mount([sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(MountError, match="give a command line as a list"):
        mount("ftp://example.invalid/")
    with caplog.at_level(logging.WARNING, logger="trails.mcp.mounts"):
        assert mount([missing], optional=True) is None
    assert "going on without its tools" in caplog.text


def test_a_changed_tool_list_is_synced(toy: MountedServer, ctx: Context) -> None:
    assert "toy.extra" not in toy.tools
    invoke("toy.grow", {}, ctx=ctx)
    for _ in range(400):  # the notification arrives on the server's own loop
        if "toy.extra" in toy.tools:
            break
        time.sleep(0.01)
    assert invoke("toy.extra", {}, ctx=ctx) == {"result": "extra"}


def test_ainvoke_calls_a_mounted_tool_from_a_running_loop(
    toy: MountedServer, ctx: Context, store: Store
) -> None:
    async def both() -> list[Any]:
        return list(
            await asyncio.gather(
                ainvoke("toy.sleep_ms", {"ms": 20}, ctx=ctx),
                ainvoke("toy.sleep_ms", {"ms": 10}, ctx=ctx),
            )
        )

    assert asyncio.run(both()) == [{"result": "slept 20 ms"}, {"result": "slept 10 ms"}]
    assert [r["status"] for r in calls_of(store, "toy.sleep_ms")] == ["ok", "ok"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_toy(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(TOY), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TOY_MARKER": str(tmp_path / "pid")},
    )
    try:
        while process.poll() is None:  # until it listens (or dies)
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        assert process.poll() is None, "the HTTP server did not start"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait()


def test_a_streamable_http_server_is_mounted_by_url(
    http_toy: str, ctx: Context, store: Store
) -> None:
    server = mount(http_toy, prefix="web", headers={"X-Caller": "trails"})
    assert server is not None and server.transport == "streamable-http"
    try:
        assert invoke("web.sleep_ms", {"ms": 1}, ctx=ctx) == {"result": "slept 1 ms"}
    finally:
        unmount("web")
    [row] = calls_of(store, "web.sleep_ms")
    assert (row["name"], row["transport"], row["tool"]) == ("toy", "streamable-http", "sleep_ms")
    with pytest.raises(UnknownCapability):  # unmounted: gone from the registry
        get_capability("web.sleep_ms")


def test_configured_servers_are_mounted_once(tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text(
        "[[mcp.servers]]\n"
        f"command = {sys.executable!r}\n"
        f"args = [{str(TOY)!r}, 'stdio']\n"
        "prefix = 'cfg'\n"
        "env = { TOY_MARKER = 'pid' }\n"
        "[[mcp.servers]]\n"
        "command = 'no-such-mcp-server-anywhere'\n"
        "optional = true\n",
        encoding="utf-8",
    )
    try:
        [server] = mount_configured()
        assert server.prefix == "cfg" and "cfg.sleep_ms" in server.tools
        assert mount_configured() == []  # already mounted by this process
        assert invoke("cfg.sleep_ms", {"ms": 1}) == {"result": "slept 1 ms"}
    finally:
        unmount("cfg")


def test_a_session_mounts_the_configured_servers_when_it_starts(tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text(
        "[[mcp.servers]]\n"
        f"command = {sys.executable!r}\n"
        f"args = [{str(TOY)!r}, 'stdio']\n"
        "prefix = 'started'\n",
        encoding="utf-8",
    )
    step = {"thought": "t", "action": "started.sleep_ms", "action_input": {"ms": 1}}
    done = {"thought": "d", "action": "finish", "action_input": {}, "final_answer": "slept"}
    script = ["```json\n" + json.dumps(s) + "\n```" for s in (step, done)]
    store = open_store("memory:")
    try:
        with Session(principal="did:local:alice", store=store) as session:
            result = react.run("Sleep.", llm=LLMClient.mock(response=script), session=session)
        assert result.answer == "slept"
        assert [r["status"] for r in calls_of(store, "started.sleep_ms")] == ["ok"]
    finally:
        unmount("started")
        store.close()


def test_a_malformed_server_table_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text(
        "[[mcp.servers]]\ncommand = 'x'\nurl = 'http://127.0.0.1:1/mcp'\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="either command"):
        mount_configured()
