"""What selectools' ``Agent`` costs over the planner it runs: CPU seconds per run, as a ratio.

``trails.agent.Agent`` wraps ``react.run`` with ``tool_calling="native"``: a session per
run, the config mapped onto the run's keywords, the observer bridge (usage counted per
model call) and the ``AgentResult``. Both sides make the same two-turn run (one tool call,
then the answer) on a scripted model, each in a new session closed after it, recorded in
an in-memory store; rounds alternate which side goes first. The figure is the median of
the rounds' ratios of CPU seconds (``time.process_time``), target <= 1.25: the agent's
observer makes every lifecycle event be built (its usage is counted from ``llm_end``), and
its name is recorded with each session (a ``prov:SoftwareAgent``), a few per cent each. Reading
``result.trace`` (one SPARQL query of the recorded session) is timed on its own, against
the run it reads.

Run: ``python benchmarks/bench_agent.py [--rounds 7] [--runs 20] [--no-doc]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import write_section

from trails.agent import Agent, Session
from trails.agent.planners import react
from trails.kernel import capability
from trails.llm import LLMClient, ToolCall
from trails.store import open_store, set_default_store

TARGET = 1.25


def _model(messages: list[object]) -> object:
    """A tool call first, the answer once the tool's result is in."""
    if any(getattr(m, "role", "") == "tool" for m in messages):
        return "Python is a language."
    return [ToolCall("c1", "bench.search", {"query": "python"})]


def setup() -> tuple[Callable[[], object], Callable[[], object], Callable[[], object]]:
    """The planner's run, the Agent's run, and a trace read, each on its own script."""
    set_default_store(open_store("memory:"))

    @capability(id="bench.search", description="Search.")
    def search(query: str) -> str:
        return f"results for {query}"

    model = LLMClient.mock(_model)

    def planner() -> object:
        session = Session(principal="did:local:bench")
        with session:
            return react.run(
                "Search for Python",
                llm=model,
                session=session,
                tools=["bench.search"],
                tool_calling="native",
                max_steps=6,
                max_tokens_per_call=1000,
            )

    runner = Agent(tools=[search], provider=LLMClient.mock(_model), principal="did:local:bench")

    def agent() -> object:  # one agent, reused (the seed's advice)
        return runner.run("Search for Python")

    done = runner.run("Search for Python")

    def trace() -> object:
        done._trace = None
        return done.trace

    return planner, agent, trace


def cpu(fn: Callable[[], object], runs: int) -> float:
    start = time.process_time()
    for _ in range(runs):
        fn()
    return (time.process_time() - start) / runs


def measure(rounds: int, runs: int) -> dict[str, float]:
    planner, agent, trace = setup()
    planner(), agent(), trace()  # warm
    ratios, trace_ratios, base, wrapped, read = [], [], [], [], []
    for i in range(rounds):
        order = (planner, agent) if i % 2 == 0 else (agent, planner)
        times = {fn: cpu(fn, runs) for fn in order}
        base.append(times[planner])
        wrapped.append(times[agent])
        ratios.append(times[agent] / times[planner])
        read.append(cpu(trace, runs))
        trace_ratios.append(read[-1] / times[planner])
    return {
        "planner_ms": statistics.median(base) * 1e3,
        "agent_ms": statistics.median(wrapped) * 1e3,
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "trace_ms": statistics.median(read) * 1e3,
        "trace_ratio": statistics.median(trace_ratios),
    }


def render(m: dict[str, float], rounds: int, runs: int) -> str:
    verdict = "meets" if m["ratio"] <= TARGET else "misses"
    return f"""## selectools' `Agent` over the ReAct planner (`benchmarks/bench_agent.py`)

A two-turn run (one native tool call, then the answer) on a scripted model, in a new
session closed after it, in an in-memory store: `Agent.run` (one agent, reused) against
`react.run` with the same keywords. CPU seconds per run, median of {rounds} alternating rounds of {runs} runs.
What the agent adds: its observer (every lifecycle event is built, usage is counted from
each `llm_end`), its name recorded with each session, the `AgentResult`.

| | CPU ms per run |
| --- | --- |
| `react.run` (`tool_calling="native"`) | {m["planner_ms"]:.2f} |
| `Agent.run` | {m["agent_ms"]:.2f} |
| **ratio** (target <= {TARGET}) | **{m["ratio"]:.3f}** ({m["ratio_min"]:.3f} to {m["ratio_max"]:.3f}), {verdict} it |
| `result.trace` (read from the graph) | {m["trace_ms"]:.2f} ({m["trace_ratio"]:.2f} of a run) |

Command: `python benchmarks/bench_agent.py --rounds {rounds} --runs {runs}`.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args(argv)
    text = render(measure(args.rounds, args.runs), args.rounds, args.runs)
    print(text)
    if not args.no_doc:
        write_section("agent", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
