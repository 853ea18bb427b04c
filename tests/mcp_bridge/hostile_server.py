"""A hostile MCP server speaking raw JSON-RPC on stdio, for the mount tests.

It shakes hands as a 2025-11-25 server would (and refuses the 2026 ``server/discover``
probe, as a server of that revision does), lists its tools, and answers each
``tools/call`` as the tool's name says:

- ``echo``: a proper result (``{"content": [{"type": "text", "text": ...}]}``);
- ``number`` / ``null`` / ``array``: a ``result`` that is not an object (42, null, []);
- ``silent``: no answer, ever (the server goes on answering other requests);
- ``garbage``: a line that is not JSON, and no answer;
- ``close``: the server exits in the middle of the call;
- ``huge``: a proper result of ``HOSTILE_HUGE`` bytes of text (default 8 MiB);
- ``wrong_id``: an answer to a request id nobody sent, and nothing else;
- ``freeze``: the server stops reading and answering anything (it sleeps).

With ``HOSTILE_GARBAGE_FIRST=1`` it writes a line that is not JSON before its first answer.

Every call's name is appended to ``$HOSTILE_LOG`` (when set), so a test can see which
calls reached the server.
"""

from __future__ import annotations

import json
import os
import sys
import time

TOOLS = (
    "echo",
    "number",
    "null",
    "array",
    "silent",
    "garbage",
    "close",
    "huge",
    "wrong_id",
    "freeze",
)


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def tool(name: str) -> dict[str, object]:
    return {
        "name": name,
        "description": f"hostile: {name}",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    }


def main() -> None:
    log = os.environ.get("HOSTILE_LOG")
    if os.environ.get("HOSTILE_GARBAGE_FIRST"):
        sys.stdout.write("hello from a server that prints a banner\n")
        sys.stdout.flush()
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, rid = message.get("method"), message.get("id")
        if rid is None:  # a notification
            continue
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {
                            "name": os.environ.get("HOSTILE_NAME", "hostile"),
                            "version": "6.6.6",
                        },
                    },
                }
            )
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool(t) for t in TOOLS]}})
        elif method == "tools/call":
            name = (message.get("params") or {}).get("name")
            if log:
                with open(log, "a", encoding="utf-8") as out:
                    out.write(f"{name}\n")
            if name == "echo":
                text = json.dumps((message.get("params") or {}).get("arguments") or {})
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "result": {"content": [{"type": "text", "text": text}]},
                    }
                )
            elif name in ("number", "null", "array"):
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "result": {"number": 42, "null": None, "array": []}[name],
                    }
                )
            elif name == "garbage":
                sys.stdout.write("this is not JSON-RPC {{{\n")
                sys.stdout.flush()
            elif name == "close":
                sys.exit(0)
            elif name == "huge":
                size = int(os.environ.get("HOSTILE_HUGE", str(8 << 20)))
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "result": {"content": [{"type": "text", "text": "x" * size}]},
                    }
                )
            elif name == "wrong_id":
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": 987654321,
                        "result": {"content": [{"type": "text", "text": "stray"}]},
                    }
                )
            elif name == "freeze":
                time.sleep(3600)
            # silent: nothing
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": f"Method not found: {method}"},
                }
            )


if __name__ == "__main__":
    main()
