"""A mounted server cannot shadow a capability: a collision of ids is refused unless asked.

The server names its own prefix (its handshake's name), so without this check a server
calling itself ``evil`` would replace the application's ``evil.echo``, policy and all.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from pathlib import Path

import pytest

from trails import capability, invoke
from trails.kernel import Context
from trails.kernel.registry import all_capabilities, get_capability
from trails.mcp import MountError, mount, mounted, unmount
from trails.mcp.mounts import McpToolSpec
from trails.store import Store

HERE = Path(__file__).parent
HOSTILE = [sys.executable, str(HERE / "hostile_server.py")]
TOY = [sys.executable, str(HERE / "toy_server.py"), "stdio"]


def test_a_server_cannot_shadow_an_application_capability(
    ctx: Context, store: Store, tmp_path: Path
) -> None:
    @capability(id="evil.echo", description="the application's own", side_effects=True)
    def own(a: int = 0) -> str:
        return "the application's"

    before = [spec.id for spec in all_capabilities()]
    with pytest.raises(MountError) as raised:
        mount(HOSTILE, env={"HOSTILE_NAME": "evil", "HOSTILE_LOG": str(tmp_path / "calls")})
    message = str(raised.value)
    assert "would replace evil.echo (the application's own)" in message
    assert "replace=True" in message and "\n" not in message
    assert [spec.id for spec in all_capabilities()] == before  # none of its tools registered
    assert "evil" not in mounted()
    assert invoke("evil.echo", {}, ctx=ctx) == "the application's"
    assert not (tmp_path / "calls").exists()  # the server was never called
    assert mount(HOSTILE, env={"HOSTILE_NAME": "evil"}, optional=True) is None


def test_replace_true_mounts_over_it_and_unmounting_brings_it_back(ctx: Context) -> None:
    @capability(id="evil.echo", description="the application's own")
    def own(a: int = 0) -> str:
        return "the application's"

    server = mount(HOSTILE, env={"HOSTILE_NAME": "evil"}, replace=True)
    assert server is not None
    try:
        assert isinstance(get_capability("evil.echo"), McpToolSpec)
        assert invoke("evil.echo", {"a": 1}, ctx=ctx) == '{"a": 1}'
    finally:
        unmount("evil")
    spec = get_capability("evil.echo")
    assert not isinstance(spec, McpToolSpec) and spec.description == "the application's own"
    assert invoke("evil.echo", {}, ctx=ctx) == "the application's"


def test_a_second_server_under_a_mounted_prefix_is_refused_unless_replace() -> None:
    first = mount(HOSTILE, prefix="twice")
    assert first is not None
    try:
        with pytest.raises(
            MountError,
            match=re.escape(
                "would replace twice.array, twice.close, twice.echo and 7 more "
                "(the MCP server mounted as twice)"
            ),
        ):
            mount(HOSTILE, prefix="twice")
        with pytest.raises(MountError, match="already mounted as 'twice'"):
            mount(TOY, prefix="twice")  # other tools, same prefix
        assert mounted()["twice"] is first and get_capability("twice.echo").owner == id(first)
        second = mount(HOSTILE, prefix="twice", replace=True)
        assert second is not None and mounted()["twice"] is second
        assert get_capability("twice.echo").owner == id(second)
    finally:
        unmount("twice")


def test_a_tool_that_appears_later_under_a_taken_id_is_left_out(
    ctx: Context, caplog: pytest.LogCaptureFixture
) -> None:
    @capability(id="toy.extra", description="the application's own")
    def extra() -> str:
        return "the application's"

    toy = mount(TOY, env={"TOY_MARKER": "pid"})
    assert toy is not None
    try:
        with caplog.at_level(logging.WARNING, logger="trails.mcp.mounts"):
            invoke("toy.grow", {}, ctx=ctx)  # the server adds `extra` and says so
            for _ in range(400):
                if "would replace toy.extra" in caplog.text:
                    break
                time.sleep(0.01)
        assert "would replace toy.extra (the application's own)" in caplog.text
        assert "toy.extra" not in toy.tools
        assert invoke("toy.extra", {}, ctx=ctx) == "the application's"
    finally:
        unmount("toy")
    assert invoke("toy.extra", {}, ctx=ctx) == "the application's"
