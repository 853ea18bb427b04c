"""What mounting adds to an MCP tool call: a 10 ms tool, through ``trails.mcp.mount`` and directly.

The same kind of server (``_mcp_sleeper.py``: one tool that sleeps 10 ms) is started
twice over stdio: one is called straight with the official SDK (``ClientSession``
over ``stdio_client``), the other is mounted and called with ``invoke`` (validated
against the server's schema, recorded with the server as its agent, in a session on
a directory store that is sealed at the end). The rounds alternate which path goes
first, and the figure is the median of the rounds' ratios (mounted / direct per
call), target <= 1.3x.

Run: ``python benchmarks/bench_mcp.py [--calls N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_section
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from trails import invoke
from trails.kernel import Context
from trails.mcp import mount, unmount
from trails.prov import Recorder
from trails.store import open_store

HERE = Path(__file__).resolve().parent
SERVER = [sys.executable, str(HERE / "_mcp_sleepers.py")]
TOOLS = ("look10", "act10")


def _mounted(ctx: Context, tool: str, calls: int) -> float:
    """Seconds per call over ``calls`` calls of the mounted 10 ms tool."""
    start = time.perf_counter()
    for n in range(calls):
        assert invoke(f"sleepers.{tool}", {"n": n}, ctx=ctx) == {"result": f"slept {n}"}
    return (time.perf_counter() - start) / calls


async def _direct(session: ClientSession, tool: str, calls: int) -> float:
    """Seconds per call over ``calls`` calls of the 10 ms tool, straight through the SDK."""
    start = time.perf_counter()
    for n in range(calls):
        result = await session.call_tool(tool, {"n": n})
        assert not result.is_error
    return (time.perf_counter() - start) / calls


Rounds = dict[str, tuple[list[float], list[float]]]


def measure(calls: int, rounds: int, store_dir: str) -> tuple[Rounds, int]:
    """Per tool, the per-call seconds of each round (direct, mounted); and how many calls
    were recorded.

    Each path runs as its users run it: the direct client on an event loop (in a thread
    of its own, timed inside the loop), ``invoke`` from plain sync code.
    """
    store = open_store(store_dir)
    ctx = Context.open("did:example:bench", recorder=Recorder.from_settings(store=store))
    assert mount(SERVER) is not None
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    ready: concurrent.futures.Future[ClientSession] = concurrent.futures.Future()
    stop = threading.Event()

    async def hold() -> None:
        params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            ready.set_result(session)
            while not stop.is_set():
                await asyncio.sleep(0.05)

    holding = asyncio.run_coroutine_threadsafe(hold(), loop)

    def direct_round(tool: str, n: int) -> float:
        session = ready.result()
        return asyncio.run_coroutine_threadsafe(_direct(session, tool, n), loop).result()

    found: Rounds = {tool: ([], []) for tool in TOOLS}
    try:
        for tool in TOOLS:  # warm every path (imports, first writes)
            direct_round(tool, 5)
            _mounted(ctx, tool, 5)
        for i in range(rounds):
            for tool, (direct, mounted) in found.items():
                if i % 2 == 0:
                    direct.append(direct_round(tool, calls))
                    mounted.append(_mounted(ctx, tool, calls))
                else:
                    mounted.append(_mounted(ctx, tool, calls))
                    direct.append(direct_round(tool, calls))
    finally:
        stop.set()
        holding.result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        unmount("sleepers")
        ctx.close()
        store.close()
    return found, len(TOOLS) * (5 + rounds * calls)


def _row(label: str, direct: list[float], mounted: list[float]) -> tuple[str, float]:
    ratios = sorted(b / a for a, b in zip(direct, mounted, strict=True))
    ratio = statistics.median(ratios)
    d_ms, m_ms = statistics.median(direct) * 1000, statistics.median(mounted) * 1000
    return (
        f"| {label} | {d_ms:.2f} ms | {m_ms:.2f} ms | **{ratio:.2f}x** "
        f"({ratios[0]:.2f}x-{ratios[-1]:.2f}x) |",
        ratio,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=40, help="calls per round and path")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        found, recorded = measure(args.calls, args.rounds, f"{tmp}/store")
    look, look_ratio = _row("read-only (`look10`: one write)", *found["look10"])
    act, act_ratio = _row("side effects (`act10`: written ahead, then completed)", *found["act10"])
    verdicts = ", ".join(
        f"{name} {'meets' if ratio <= 1.3 else 'MISSES'} it"
        for name, ratio in (("read-only", look_ratio), ("side effects", act_ratio))
    )
    markdown = f"""## MCP: a tool call of a mounted server (`benchmarks/bench_mcp.py`)

Two 10 ms tools of a stdio MCP server (`benchmarks/_mcp_sleepers.py`), called directly by
the official SDK's `ClientSession` (on its event loop) and, on a second instance of the
server mounted with `trails.mcp.mount`, by a sync `invoke` (validated against the server's
schema, each call recorded with the server as its agent: {recorded} calls in one session on
a directory store, sealed at the end), in alternating rounds of {args.calls} calls,
{args.rounds} rounds per tool.

| tool | direct (SDK), per call | mounted, through `invoke`, recorded | mounted / direct (median of rounds; spread) |
|---|---|---|---|
{look}
{act}

Target <= 1.3x: {verdicts}.

Run: `python benchmarks/bench_mcp.py`."""
    write_section("mcp_mount", markdown)
    print(markdown)


if __name__ == "__main__":
    main()
