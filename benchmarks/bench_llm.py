"""Per-call overhead of ``LLMClient.complete`` (cost envelope + provenance) over the bare adapter.

Both sides answer the same prompt from the same scripted mock model, in the
same process, alternating rounds so they see the same machine noise:

- **client**: ``LLMClient.complete(messages, ctx=ctx)``: message checks, the
  request hash, the budget check, the adapter call, pricing, one cost
  envelope, the ``LLMCompleted`` event and its PROV-O quads in one atomic
  write to an on-disk store.
- **bare**: ``MockAdapter.complete(request)``: the adapter call alone, what a
  program calling the model with no accounting at all would pay.

A third row runs the client on an in-memory store, to separate the client's
own work from the disk write. The ratio is large by construction (the bare
mock does almost nothing); the figure that matters is the absolute overhead
next to a real model call. Target: overhead below 1 % of a 300 ms model call,
i.e. under 3 ms per call on disk.

Run: ``python benchmarks/bench_llm.py``
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import interleaved, write_section

from trails.kernel import Context, CostTracker
from trails.llm import LLMClient, Message, Request
from trails.llm.mock import MockAdapter
from trails.prov import Recorder
from trails.store import open_store

MESSAGES = [
    Message("system", "You are a ReAct planner. Reply with one JSON object per turn."),
    Message("user", "Goal: find urgent notes.\nObservation: {'hits': ['n1', 'n2']}"),
]
ANSWER = '{"thought":"done","action":"finish","action_input":{},"final_answer":"2 notes"}'


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "store")
        ctx = Context.open("did:local:bench", recorder=Recorder(store), tracker=CostTracker())
        client = LLMClient.mock(response=ANSWER)
        mem_ctx = Context.open(
            "did:local:bench", recorder=Recorder(open_store("memory:")), tracker=CostTracker()
        )
        mem_client = LLMClient.mock(response=ANSWER)
        bare = MockAdapter(ANSWER)
        request = Request(model="mock", messages=tuple(MESSAGES))

        def via_client() -> None:
            client.complete(MESSAGES, ctx=ctx)

        def via_bare() -> None:
            bare.complete(request)

        def via_memory() -> None:
            mem_client.complete(MESSAGES, ctx=mem_ctx)

        for _ in range(300):  # warm up both sides and the store
            via_client()
            via_bare()
        t_client, t_bare = interleaved(via_client, via_bare, rounds=9, number=300)
        for _ in range(300):
            via_memory()
        t_memory, t_bare2 = interleaved(via_memory, via_bare, rounds=9, number=300)
        store.close()
    ratio = t_client / t_bare
    overhead_us = (t_client - t_bare) * 1e6
    memory_us = (t_memory - t_bare2) * 1e6
    verdict = "meets" if overhead_us < 3000 else "misses"
    md = f"""## Per-call overhead of the LLM client (issue 3)

`python benchmarks/bench_llm.py`: `LLMClient.complete` on the scripted mock
(budget check, request hash, pricing, cost envelope, the `trails:LLMCompletion`
activity with its prompt and completion entities written atomically to an on-disk
store) against the bare `MockAdapter.complete` call. Median of 9 interleaved
rounds of 300 calls.

| | µs per call |
|---|---|
| `LLMClient.complete` (provenance + cost), on-disk store | {t_client * 1e6:.1f} |
| `LLMClient.complete`, in-memory store | {t_memory * 1e6:.1f} |
| bare `MockAdapter.complete` | {t_bare * 1e6:.1f} |
| **ratio client (on disk) / bare** | **{ratio:.0f}** |
| **overhead per call, on disk** | **{overhead_us:.0f} µs** (target < 3000 µs, 1 % of a 300 ms call: {verdict}) |
| overhead per call, in memory | {memory_us:.0f} µs |

The bare mock does nearly nothing, so the ratio only says the call is almost all
accounting. Most of the on-disk overhead is the store's atomic write of the
completion (about 40 quads); the in-memory row is the client's own work (hashing,
pricing, the envelope, building the event).
"""
    write_section("llm", md)
    print(md)


if __name__ == "__main__":
    main()
