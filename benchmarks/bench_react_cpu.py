"""Where the Python of a sealed 10-step ReAct run goes, counted in instructions.

The ReAct benchmark (``bench_invoke.py``) times a run against the raw writes of its
quads; on these shared machines a run's Python swings by a third from round to round,
which hides the 5-10 % a change to the recording path is worth. Instructions do not
swing: under valgrind's callgrind, with a fixed hash seed, the same runs execute the
same instructions to within about 0.1 %. This script counts them for the ReAct run of
``bench_invoke.py`` with the store's write replaced by the conversion of its quads for
pyoxigraph (the write itself is Rust and RocksDB, the same for trails and raw), in
four configurations:

- **recorded and sealed**: the default recorder (``Recorder.from_settings``);
- **recorded, no sealer**: a recorder without plugins;
- **not recorded**: the planner, the scripted model through the LLM client and the
  capability calls, with every write dropped;
- **raw**: the raw side of ``bench_invoke.py`` building the same writes as pyoxigraph
  quads, without ``extend``.

The differences give the Python of the run itself, of recording (building the events'
quads and converting them), and of the sealer (the canonical lines and hash of the
session at its end, its catalogue entry, the per-write bookkeeping). Each figure is
``(I(warm + runs) - I(warm)) / runs``: the process start-up and the warm-up cancel.

A sealed run must stay at or under ``CEILING`` instructions (the count of the recording
path as it stands; the goal is ``TARGET``): above it the script writes its section, says
by how much, and exits 1, so ``run_all.py`` and CI report the regression.

Run: ``python benchmarks/bench_react_cpu.py [--runs 20] [--ceiling M] [--no-doc]`` (needs
``valgrind``; ``--no-doc`` prints the section without rewriting it in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_section

MODES = ("sealed", "unsealed", "unrecorded", "raw")
WARM = 5
CEILING = 55.2e6
"""The most a sealed run may cost: its count when this ceiling was last set, plus the
count's noise (about 0.1 %) and some room; lowered whenever recording gets cheaper."""
TARGET = 45e6
"""What a sealed run should cost (issue "Scale, restated"): not reached yet."""
_COLLECTED = re.compile(r"Collected : (\d+)")


def child(mode: str, runs: int) -> None:
    """Make ``runs`` ReAct runs (or raw builds of their writes) in this process."""
    import bench_invoke

    from trails.prov import Recorder
    from trails.store.oxigraph import OxigraphStore

    class Converting(OxigraphStore):
        """The embedded store's own write (conversion, an update's text when it removes),
        with the call into pyoxigraph left out: nothing is kept."""

        def _call(self, what: str, fn: Any) -> Any:
            return None if what == "write" else super()._call(what, fn)

    class Unrecorded(Recorder):
        def record_all(self, events: Any, *, remove: Any = (), hooked: Any = None) -> None:
            return None

    if mode == "raw":

        class Dropped:
            def extend(self, quads: Any) -> None:
                return None

        build, _, _ = bench_invoke._raw_react(Dropped())  # type: ignore[arg-type]
        for _ in range(runs):
            build()
        return
    recorder = {
        "sealed": lambda: Recorder.from_settings(store=Converting(None)),
        "unsealed": lambda: Recorder(Converting(None)),
        "unrecorded": lambda: Unrecorded(Converting(None)),
    }[mode]()
    for _ in range(runs):
        bench_invoke.react_run(recorder)


def instructions(mode: str, runs: int) -> int:
    """Instructions callgrind counts for a process that makes ``runs`` runs in ``mode``."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("bench_react_cpu needs valgrind (apt-get install valgrind)")
    counted = [sys.executable, __file__, "--child", mode, str(runs)]
    done = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *counted],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        check=True,
    )
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no count for {mode}:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_run(mode: str, runs: int) -> float:
    """Instructions of one run in ``mode``: start-up and warm-up cancel in the difference."""
    return (instructions(mode, WARM + runs) - instructions(mode, WARM)) / runs


def render(counts: dict[str, float], runs: int, ceiling: float = CEILING) -> str:
    """The markdown section of the counts (millions of instructions per run)."""
    m = {k: v / 1e6 for k, v in counts.items()}
    sealed, unsealed, unrecorded, raw = (m[k] for k in MODES)
    rows = [
        ("the run itself (planner, LLM client, capability calls)", unrecorded),
        ("recording: events' quads, conversion for pyoxigraph", unsealed - unrecorded),
        ("the sealer: session hash, catalogue entry, bookkeeping", sealed - unsealed),
        ("**a sealed run, all of it**", sealed),
        ("raw: the same writes built as pyoxigraph quads", raw),
    ]
    verdict = "met" if sealed * 1e6 <= TARGET else f"{sealed - TARGET / 1e6:.2f} M to go"
    table = "\n".join(
        f"| {name} | {value:.2f} | {value / sealed:.0%} |" for name, value in rows[:3]
    )
    return f"""## Where a ReAct run's Python goes (`benchmarks/bench_react_cpu.py`)

`python benchmarks/bench_react_cpu.py --runs {runs}`: the 10-step ReAct run of `bench_invoke.py`,
its store write replaced by the conversion of its quads for pyoxigraph, counted in
instructions by valgrind's callgrind (fixed hash seed; the count repeats to about 0.1 %,
where a timing of the same Python swings by a third here). Millions of instructions per
run, and each part's share of a sealed run.

| part | M instructions | share |
|---|---:|---:|
{table}
| {rows[3][0]} | **{sealed:.2f}** | 100% |
| {rows[4][0]} | {raw:.2f} | {raw / sealed:.0%} |
| what trails runs beyond raw (sealed run less raw) | {sealed - raw:.2f} | {(sealed - raw) / sealed:.0%} |

A sealed run may cost at most **{ceiling / 1e6:.2f} M** (the script exits 1 above it: a
regression of the recording path); the target is {TARGET / 1e6:.0f} M ({verdict}).

The ReAct ratio of `bench_invoke.py` divides a run's time (the store's writes plus this
Python) by the raw side's (the same writes plus raw's building of its quads), so what it
shows of trails is the last row. The sealer's part is the work that makes a session
verifiable, which the raw side does not do: the canonical N-Quads lines of the whole
session, sorted and hashed, and its catalogue entry, at the session's end.
"""


def over_ceiling(counts: dict[str, float], ceiling: float = CEILING) -> str | None:
    """Why a sealed run's count is a regression (above ``ceiling``), or None when it is not."""
    sealed = counts["sealed"]
    if sealed <= ceiling:
        return None
    return (
        f"a sealed ReAct run costs {sealed / 1e6:.2f} M instructions, above the ceiling of "
        f"{ceiling / 1e6:.2f} M by {(sealed - ceiling) / 1e6:.2f} M: recording got dearer"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="counted runs per configuration")
    parser.add_argument(
        "--ceiling",
        type=float,
        default=CEILING / 1e6,
        help="fail above this many M instructions per sealed run",
    )
    parser.add_argument(
        "--no-doc",
        action="store_true",
        help="print the section without rewriting it in docs/benchmarks.md",
    )
    parser.add_argument("--child", nargs=2, metavar=("MODE", "RUNS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    counts = {mode: per_run(mode, args.runs) for mode in MODES}
    md = render(counts, args.runs, args.ceiling * 1e6)
    if not args.no_doc:
        write_section("react-cpu", md)
    print(md)
    regression = over_ceiling(counts, args.ceiling * 1e6)
    if regression is not None:
        print(f"FAILED: {regression}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
