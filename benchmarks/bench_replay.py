"""Replay time of persisted sessions of 10, 100 and 1,000 steps: it must grow linearly.

Each session is a real ReAct run (a scripted model, one capability call per
step, the default 32,000-token window), recorded and sealed as by default and
persisted once, into an on-disk store that already holds many other sessions
(a copy of the scale benchmark's cached store of ``--sessions`` recorded
sessions, 1,000 by default, about 100 of them persisted too), so replay has to
find its session among them. ``Session.replay`` is then timed (median of
several rounds). The figure that matters is the ratio of the 1,000-step
replay to the 100-step one: near 10 means replay is linear in the number of
steps. How one replay grows with the number of sessions in the store is
measured by ``bench_scale.py``.

Run: ``python benchmarks/bench_replay.py [--sessions 1000]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _scale_store
from _report import write_section

from trails.agent import Session
from trails.kernel import capability
from trails.llm import LLMClient
from trails.prov import Recorder
from trails.store import Store, open_store

SIZES = (10, 100, 1_000)


def _turn(action: str, action_input: dict[str, object], **extra: object) -> str:
    payload = {"thought": f"step for {action}", "action": action, "action_input": action_input}
    payload.update(extra)
    return "```json\n" + json.dumps(payload) + "\n```"


@capability(id="bench.lookup", description="Look a number up.")
def lookup(n: int) -> dict[str, object]:
    return {"n": n, "square": n * n, "note": f"entry {n} — ok"}


def record(store: Store, steps: int) -> str:
    """Run a ReAct session of ``steps`` capability calls and persist it."""
    script = [_turn("bench.lookup", {"n": i}) for i in range(steps)]
    script.append(_turn("finish", {}, final_answer="done"))
    recorder = Recorder.from_settings(store=store)  # sealed, as by default
    session = Session.new(strategy="react", principal="did:example:bench", recorder=recorder)
    result = session.run("Look every number up.", llm=LLMClient.mock(script), max_steps=steps + 1)
    assert result.stopped == "goal_achieved" and len(session.invocations) == steps
    graph = str(session.persist())
    session.close()
    return graph


def time_replay(store: Store, graph: str, rounds: int) -> float:
    """Median seconds of one ``Session.replay``."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        replayed = Session.replay(graph, store=store)
        samples.append(time.perf_counter() - start)
        assert replayed.read_only
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1_000, help="sessions already stored")
    args = parser.parse_args()
    cached, manifest = _scale_store.cached_store(args.sessions)
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        shutil.copytree(cached, Path(tmp) / "store")
        store = open_store(Path(tmp) / "store")
        try:
            measure(store, int(str(manifest["sessions"])))
        finally:
            store.close()


def measure(store: Store, others: int) -> None:
    graphs = {n: record(store, n) for n in SIZES}
    rounds = {10: 41, 100: 21, 1_000: 9}
    times: dict[int, float] = {n: 0.0 for n in SIZES}
    for _ in range(3):  # interleave sizes so they see the same noise
        for n in SIZES:
            times[n] += time_replay(store, graphs[n], rounds[n]) / 3
    ratio = times[1_000] / times[100]
    rows = "\n".join(
        f"| {n:,} | {times[n] * 1000:.2f} ms | {times[n] / n * 1e6:.1f} µs |" for n in SIZES
    )
    markdown = f"""## Session replay

`python benchmarks/bench_replay.py`: `Session.replay` of a persisted ReAct session (one
LLM completion and one capability call per step), recorded and sealed as by default,
read back with SPARQL from an on-disk store that also holds {others:,} other recorded
sessions (the scale benchmark's store).

| steps | replay (median) | per step |
| ---: | ---: | ---: |
{rows}

**Ratio 1,000 / 100 steps: {ratio:.1f}** (target: near 10, linear).
"""
    write_section("replay", markdown)
    print(markdown)


if __name__ == "__main__":
    main()
