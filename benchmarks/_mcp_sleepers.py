"""An MCP server with two 10 ms tools, one read-only and one with side effects, for
``bench_mcp.py``: a mounted read-only tool is recorded in one write, one with side effects
is also written ahead of its call."""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

app = MCPServer("sleepers")


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
async def look10(n: int) -> str:
    """Wait 10 ms, then answer (read-only)."""
    await anyio.sleep(0.010)
    return f"slept {n}"


@app.tool(annotations=ToolAnnotations(destructive_hint=True))
async def act10(n: int) -> str:
    """Wait 10 ms, then answer (a change to the world)."""
    await anyio.sleep(0.010)
    return f"slept {n}"


if __name__ == "__main__":
    app.run()
