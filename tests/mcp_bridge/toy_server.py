"""A small MCP server for the mount tests, run as a subprocess (stdio or streamable HTTP).

``python toy_server.py stdio`` or ``python toy_server.py http PORT``. Its tools: ``sleep_ms``
(a tool that takes a given time, for the latency benchmark), ``slow`` (writes the server's
pid to ``$TOY_MARKER`` and then waits, so a test can kill the server mid-call), ``fail``
(raises: an ``isError`` result), ``write_note`` (destructive: a tool with side effects) and
``grow`` (adds a tool and announces the changed list).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("toy", version="1.2.3")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def sleep_ms(ms: int) -> str:
    """Wait ``ms`` milliseconds and say so."""
    time.sleep(ms / 1000)
    return f"slept {ms} ms"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def slow(seconds: float) -> str:
    """Tell the test this server's pid, then wait."""
    Path(os.environ["TOY_MARKER"]).write_text(str(os.getpid()), encoding="utf-8")
    time.sleep(seconds)
    return "done"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def fail(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"refusing: {reason}")


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def write_note(text: str) -> str:
    """Keep a note (a change to the world)."""
    return f"kept {text!r}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def grow(ctx: Context) -> str:
    """Add the tool ``extra`` and announce that the tool list changed."""

    def extra() -> str:
        """A tool that appeared later."""
        return "extra"

    server.add_tool(extra)
    await ctx.notify_tools_changed()  # to subscriptions/listen streams (2026-07-28 sessions)
    return "grown"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
