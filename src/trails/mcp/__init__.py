"""MCP both ways: other servers' tools as recorded capabilities, trails' as an MCP server.

Every tool an MCP server offers becomes a capability (``mount``), so a planner
calls it through ``invoke`` like any other and each call is evidence; the
capability manifest (``manifest``) describes every registered capability for
other agents, with its MCP projection. ``import mcp`` inside this room is the
official MCP SDK; it loads only when a mount or the manifest's MCP form is asked
for.
"""

from __future__ import annotations

from trails.mcp.mounts import (
    MountedServer,
    MountError,
    ServerStopped,
    ToolFailed,
    ToolTimedOut,
    mount,
    mount_configured,
    mounted,
    unmount,
    unmount_all,
)

__all__ = [
    "MountError",
    "MountedServer",
    "ServerStopped",
    "ToolFailed",
    "ToolTimedOut",
    "mount",
    "mount_configured",
    "mounted",
    "unmount",
    "unmount_all",
]
