"""What ``trails mcp proxy`` adds to a tool call: a 10 ms tool, called through it and directly.

Two official-SDK clients (``ClientSession`` over ``stdio_client``) call the same
tool of the same kind of server (``_mcp_sleeper.py``: one tool that sleeps 10 ms),
one straight to the server, one through ``trails mcp proxy`` recording to a
directory store (each call recorded and, at the end, the session sealed). The
rounds alternate which client goes first, and the figure is the median of the
rounds' ratios (proxied / direct per call), target <= 1.3x.

Run: ``python benchmarks/bench_mcp_proxy.py [--calls N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
from _report import write_section
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

HERE = Path(__file__).resolve().parent
SERVER = [sys.executable, str(HERE / "_mcp_sleeper.py")]
TRAILS = str(Path(sys.executable).with_name("trails"))


async def _timed(session: ClientSession, calls: int) -> float:
    """Seconds per call over ``calls`` calls of the 10 ms tool."""
    start = time.perf_counter()
    for n in range(calls):
        result = await session.call_tool("sleep10", {"n": n})
        assert not result.is_error
    return (time.perf_counter() - start) / calls


async def measure(calls: int, rounds: int, store: str) -> tuple[list[float], list[float], int]:
    direct = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
    proxied = StdioServerParameters(
        command=TRAILS,
        args=["--store", store, "mcp", "proxy", "--principal", "did:example:bench", "--", *SERVER],
    )
    ta: list[float] = []
    tb: list[float] = []
    async with (
        stdio_client(direct) as (r1, w1),
        stdio_client(proxied) as (r2, w2),
        ClientSession(r1, w1) as plain,
        ClientSession(r2, w2) as relayed,
    ):
        await plain.initialize()
        await relayed.initialize()
        await _timed(plain, 5)  # warm both paths (imports, first writes)
        await _timed(relayed, 5)
        for i in range(rounds):
            pairs: list[tuple[Any, list[float]]] = [(plain, ta), (relayed, tb)]
            for session, out in pairs if i % 2 == 0 else pairs[::-1]:
                out.append(await _timed(session, calls))
    return ta, tb, 5 + rounds * calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=40, help="calls per round and client")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        direct, proxied, recorded = anyio.run(measure, args.calls, args.rounds, f"{tmp}/store")
    ratios = sorted(b / a for a, b in zip(direct, proxied, strict=True))
    ratio = statistics.median(ratios)
    d_ms, p_ms = statistics.median(direct) * 1000, statistics.median(proxied) * 1000
    verdict = "meets" if ratio <= 1.3 else "MISSES"
    markdown = f"""## MCP: a tool call through `trails mcp proxy` (`benchmarks/bench_mcp_proxy.py`)

A 10 ms tool of a stdio MCP server (`benchmarks/_mcp_sleeper.py`), called by the official
SDK's `ClientSession` directly and through `trails mcp proxy` (recording each call to a
directory store, {recorded} calls in one sealed session), in alternating rounds of
{args.calls} calls, {args.rounds} rounds.

| path | per call (median) |
|---|---|
| direct | {d_ms:.2f} ms |
| through the proxy, recorded | {p_ms:.2f} ms |

Through the proxy / direct: **{ratio:.2f}x** (median of the rounds' ratios; spread
{ratios[0]:.2f}x-{ratios[-1]:.2f}x), target <= 1.3x: {verdict} it.

Run: `python benchmarks/bench_mcp_proxy.py`."""
    write_section("mcp_proxy", markdown)
    print(markdown)


if __name__ == "__main__":
    main()
