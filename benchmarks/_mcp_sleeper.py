"""An MCP server with one tool that takes 10 ms: what ``bench_mcp_proxy.py`` calls."""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer

app = MCPServer("sleeper")


@app.tool()
async def sleep10(n: int) -> str:
    """Wait 10 ms, then answer."""
    await anyio.sleep(0.010)
    return f"slept {n}"


if __name__ == "__main__":
    app.run()
