"""Parallel tool calls: 8 calls of 100 ms requested in one model turn, parallel vs sequential.

A native-tool-calling ReAct run on the scripted mock asks, in its first turn,
for 8 calls of a capability that takes 100 ms, then answers. The same run is
timed with ``max_parallel_tools=8`` (the calls run concurrently) and with
``max_parallel_tools=1`` (one after another, the baseline), in interleaved
rounds, recording to an on-disk store. Both a sync handler (``time.sleep``:
worker threads) and an ``async def`` handler (``asyncio.sleep``) are measured,
and the same run under ``react.arun`` (the turn's calls as asyncio tasks on one
event loop, ``_drive.adrive``) for the async one.
Target: parallel ≤ 0.2x sequential. Afterwards every invocation is checked in
the store: 8 per run, each ``ok``, carrying its tool-call id and informed by
the completion that asked for it.

Run: ``python benchmarks/run_all.py tools``
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_section

from trails.agent import Session
from trails.agent.planners import react
from trails.kernel import Context, capability
from trails.llm import LLMClient, ToolCall
from trails.prov import Recorder, T
from trails.store import Solutions, Store, open_store

CALLS = 8
DELAY_S = 0.1
ROUNDS = 5
PROV = "http://www.w3.org/ns/prov#"


@capability(id="bench.wait", description="Take 100 ms.")
def wait(i: int) -> int:
    time.sleep(DELAY_S)
    return i


@capability(id="bench.await", description="Take 100 ms, asynchronously.")
async def await_(i: int) -> int:
    await asyncio.sleep(DELAY_S)
    return i


def _turn(capability_id: str) -> list[ToolCall]:
    return [ToolCall(f"call_{i}", capability_id, {"i": i}) for i in range(CALLS)]


def _run(ctx: Context, capability_id: str, parallel: int) -> float:
    client = LLMClient.mock([_turn(capability_id), "done"])
    session = Session(principal="did:local:bench")
    start = time.perf_counter()
    result = react.run(
        "Wait eight times.",
        llm=client,
        session=session,
        tools=[capability_id],
        ctx=ctx,
        tool_calling="native",
        max_parallel_tools=parallel,
    )
    took = time.perf_counter() - start
    assert result.stopped == "goal_achieved", result
    assert [s.observation for s in result.steps[:CALLS]] == list(range(CALLS))
    return took


def _arun(ctx: Context, parallel: int) -> float:
    client = LLMClient.mock([_turn("bench.await"), "done"])
    session = Session(principal="did:local:bench")
    start = time.perf_counter()
    result = asyncio.run(
        react.arun(
            "Wait eight times.",
            llm=client,
            session=session,
            tools=["bench.await"],
            ctx=ctx,
            tool_calling="native",
            max_parallel_tools=parallel,
        )
    )
    took = time.perf_counter() - start
    assert result.stopped == "goal_achieved", result
    assert [s.observation for s in result.steps[:CALLS]] == list(range(CALLS))
    return took


def _pair(seq: Callable[[], float], par: Callable[[], float]) -> tuple[float, float]:
    a: list[float] = []
    b: list[float] = []
    for _ in range(ROUNDS):
        a.append(seq())
        b.append(par())
    return statistics.median(a), statistics.median(b)


def linked(store: Store) -> tuple[int, int]:
    """(invocations carrying a tool-call id, those also ok and informed by the asking completion)."""
    every = store.query(
        f"SELECT (COUNT(?inv) AS ?n) WHERE {{ GRAPH ?g {{ ?inv {T.toolCallId.n3()} ?id ;"
        f" a {T.CapabilityInvocation.n3()} }} }}"
    )
    whole = store.query(
        f"""SELECT (COUNT(?inv) AS ?n) WHERE {{ GRAPH ?g {{
              ?inv a {T.CapabilityInvocation.n3()} ; {T.toolCallId.n3()} ?id ;
                   {T.status.n3()} "ok" ; <{PROV}wasInformedBy> ?c .
              ?c a {T.LLMCompletion.n3()} ; {T.toolCallId.n3()} ?id .
            }} }}"""
    )
    assert isinstance(every, Solutions) and isinstance(whole, Solutions)
    return int(next(iter(every))["n"].value), int(next(iter(whole))["n"].value)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "tools")
        ctx = Context.open("did:local:bench", recorder=Recorder(store))
        sync_seq, sync_par = _pair(
            lambda: _run(ctx, "bench.wait", 1), lambda: _run(ctx, "bench.wait", CALLS)
        )
        async_seq, async_par = _pair(
            lambda: _run(ctx, "bench.await", 1), lambda: _run(ctx, "bench.await", CALLS)
        )
        task_seq, task_par = _pair(lambda: _arun(ctx, 1), lambda: _arun(ctx, CALLS))
        ctx.close()
        found, whole = linked(store)
        store.close()
    expected = 3 * 2 * ROUNDS * CALLS
    ratio = sync_par / sync_seq
    md = f"""## Parallel tool calls: {CALLS} calls of {DELAY_S * 1000:.0f} ms in one turn (issue 15)

`python benchmarks/run_all.py tools`. A native-tool-calling ReAct run on the scripted
mock asks in one turn for {CALLS} calls of a capability that takes {DELAY_S * 1000:.0f} ms,
then answers; recorded to an on-disk store. `max_parallel_tools={CALLS}` (concurrent)
against `max_parallel_tools=1` (one after another) in the same run; median of {ROUNDS}
interleaved rounds, wall time of the whole run (two model turns, {CALLS} recorded
invocations).

| handler | sequential | parallel | ratio |
|---|---|---|---|
| sync (`time.sleep`, worker threads) | {sync_seq * 1000:.0f} ms | {sync_par * 1000:.0f} ms | **{ratio:.3f}x** (target ≤ 0.2x: {"meets" if ratio <= 0.2 else "misses"}) |
| `async def` (`asyncio.sleep`, a loop per thread) | {async_seq * 1000:.0f} ms | {async_par * 1000:.0f} ms | {async_par / async_seq:.3f}x |
| `async def`, `react.arun` (asyncio tasks on one loop) | {task_seq * 1000:.0f} ms | {task_par * 1000:.0f} ms | {task_par / task_seq:.3f}x |

Invocations expected / carrying a tool-call id / also `ok` and informed by the completion
that asked for that id: {expected} / {found} / {whole}. The floor of a parallel run is one
call's {DELAY_S * 1000:.0f} ms plus two recorded model turns and {CALLS} invocation writes
(each one atomic write, from whichever thread finished).
"""
    write_section("tools", md)
    print(md)
    if found != expected or whole != expected:
        raise SystemExit(f"expected {expected} linked invocations, found {found} / {whole}")


if __name__ == "__main__":
    main()
