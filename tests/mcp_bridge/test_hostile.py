"""Mounted MCP servers that misbehave: malformed answers, no answers, a stuck pipe.

Each is a real process (``hostile_server.py``, raw JSON-RPC on stdio). Whatever it
does, a call through ``invoke`` ends (a result or a clear error) and is recorded,
and a server that broke the protocol is stopped so later calls fail at once.
Each call runs on a thread the test waits on for a bounded time, so a call that
hangs fails the test instead of hanging it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trails import invoke
from trails.kernel import Context
from trails.mcp import (
    MountedServer,
    MountError,
    ServerStopped,
    ToolTimedOut,
    mount,
    mount_configured,
    unmount,
)
from trails.store import Store
from trails.store.terms import Literal

HOSTILE = [sys.executable, str(Path(__file__).with_name("hostile_server.py"))]

STATUS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?id ?status ?error WHERE {
  GRAPH ?g { ?call trails:capability/trails:capabilityId ?id ; trails:status ?status }
  OPTIONAL { GRAPH ?h { ?call trails:errorMessage ?error } }
}"""


def recorded(store: Store, capability_id: str) -> list[tuple[str, str]]:
    rows = store.query(STATUS, {"id": Literal(capability_id)})
    return sorted((r["status"].value, getattr(r.get("error"), "value", "")) for r in rows)


def call(capability_id: str, args: dict[str, Any], ctx: Context, wait_s: float = 60) -> Any:
    """``invoke`` on a thread: its result or the exception it raised (a hang fails)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = invoke(capability_id, args, ctx=ctx)
        except BaseException as exc:
            outcome["error"] = exc

    caller = threading.Thread(target=run, daemon=True)
    caller.start()
    caller.join(wait_s)
    assert not caller.is_alive(), f"{capability_id} still waiting after {wait_s} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[MountedServer]:
    server = mount(HOSTILE, call_timeout_s=1, env={"HOSTILE_LOG": str(tmp_path / "calls")})
    assert server is not None
    yield server
    unmount(server.prefix)


@pytest.mark.parametrize(
    ("tool", "kind"), [("number", "a number"), ("null", "null"), ("array", "an array")]
)
def test_a_result_that_is_not_an_object_is_a_failed_call_and_stops_the_server(
    hostile: MountedServer, ctx: Context, store: Store, tool: str, kind: str
) -> None:
    assert call("hostile.echo", {"a": 1}, ctx) == '{"a": 1}'
    with pytest.raises(ServerStopped) as raised:
        call(f"hostile.{tool}", {}, ctx)
    reason = f"result is {kind}, not an object"
    assert "was stopped during the call" in str(raised.value) and reason in str(raised.value)
    [(status, error)] = recorded(store, f"hostile.{tool}")
    assert status == "error" and reason in error
    with pytest.raises(ServerStopped, match=reason):  # later calls: at once, with the reason
        call("hostile.echo", {"a": 2}, ctx, wait_s=5)
    assert [s for s, _ in recorded(store, "hostile.echo")] == ["error", "ok"]
    assert not hostile.alive
    again = mount(HOSTILE)  # mounting anew replaces the stopped server, no replace= needed
    assert again is not None and again.alive and again is not hostile
    assert call("hostile.echo", {"a": 3}, ctx) == '{"a": 3}'


def test_a_line_that_is_not_json_stops_the_server(
    hostile: MountedServer, ctx: Context, store: Store, tmp_path: Path
) -> None:
    with pytest.raises(ServerStopped, match="a message that is not JSON-RPC"):
        call("hostile.garbage", {}, ctx)
    with pytest.raises(ServerStopped, match="not JSON-RPC"):
        call("hostile.echo", {}, ctx, wait_s=5)
    assert (tmp_path / "calls").read_text().split() == ["garbage"]  # the echo never went out
    [(status, error)] = recorded(store, "hostile.garbage")
    assert status == "error" and "not JSON-RPC" in error


@pytest.mark.parametrize("tool", ["silent", "wrong_id"])
def test_a_call_never_answered_times_out_and_the_server_stays_when_it_answers(
    hostile: MountedServer, ctx: Context, store: Store, tool: str
) -> None:
    with pytest.raises(ToolTimedOut, match="no answer in 1 s; the server still answers") as raised:
        call(f"hostile.{tool}", {}, ctx)
    assert raised.value.timeout_s == 1
    [(status, error)] = recorded(store, f"hostile.{tool}")
    assert status == "error" and "no answer in 1 s" in error
    assert call("hostile.echo", {"b": 2}, ctx) == '{"b": 2}'  # it still answers


def test_a_server_that_stops_answering_anything_is_stopped(
    hostile: MountedServer, ctx: Context, store: Store
) -> None:
    with pytest.raises(ToolTimedOut, match="did not answer a tools/list either"):
        call("hostile.freeze", {}, ctx)
    with pytest.raises(ServerStopped, match="answered neither a call in 1 s nor a tools/list"):
        call("hostile.echo", {}, ctx, wait_s=5)
    [(status, _)] = recorded(store, "hostile.freeze")
    assert status == "error"


def test_a_huge_answer_is_returned_and_recorded(ctx: Context, store: Store) -> None:
    server = mount(HOSTILE, prefix="big", env={"HOSTILE_HUGE": str(2 << 20)})
    assert server is not None
    try:
        assert call("big.huge", {}, ctx) == "x" * (2 << 20)
        assert recorded(store, "big.huge") == [("ok", "")]
        assert call("big.echo", {}, ctx) == "{}"
    finally:
        unmount("big")


def test_a_server_that_closes_the_pipe_mid_call_fails_it(
    hostile: MountedServer, ctx: Context, store: Store
) -> None:
    with pytest.raises(ServerStopped, match="stopped during the call"):
        call("hostile.close", {}, ctx)
    with pytest.raises(ServerStopped, match="the connection closed"):
        call("hostile.echo", {}, ctx, wait_s=5)
    assert [s for s, _ in recorded(store, "hostile.close")] == ["error"]


def test_garbage_before_the_handshake_fails_the_mount_in_one_line() -> None:
    with pytest.raises(MountError) as raised:
        mount(HOSTILE, env={"HOSTILE_GARBAGE_FIRST": "1"}, start_timeout_s=20)
    assert "not JSON-RPC" in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan"), True, "60"])
def test_the_call_timeout_must_be_a_positive_number(bad: Any) -> None:
    with pytest.raises(MountError, match="call_timeout_s must be a positive number"):
        mount(HOSTILE, call_timeout_s=bad)


def test_trails_toml_sets_the_call_timeout(tmp_path: Path, ctx: Context) -> None:
    (tmp_path / "trails.toml").write_text(
        "[[mcp.servers]]\n"
        f"command = {sys.executable!r}\n"
        f"args = [{HOSTILE[1]!r}]\n"
        "prefix = 'slow'\n"
        "call_timeout_s = 1\n",
        encoding="utf-8",
    )
    try:
        [server] = mount_configured()
        assert server.prefix == "slow"
        with pytest.raises(ToolTimedOut, match="no answer in 1 s"):
            call("slow.silent", {}, ctx)
    finally:
        unmount("slow")
    (tmp_path / "trails.toml").write_text(
        "[[mcp.servers]]\n"
        f"command = {sys.executable!r}\n"
        f"args = [{HOSTILE[1]!r}]\n"
        "prefix = 'odd'\n"
        "call_timeout_s = 'soon'\n",
        encoding="utf-8",
    )
    with pytest.raises(MountError, match="call_timeout_s must be a positive number"):
        mount_configured()
