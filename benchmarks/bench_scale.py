"""Audit at scale: each command a user runs, on stores of 1k, 10k (and 100k) recorded sessions.

The stores are real: every session recorded through the recorder by the
planner, sealed by the default sealer, a few left open and recovered
(``_scale_store``), about 340 quads a session. They are built once and cached
outside the repository (``TRAILS_BENCH_CACHE``, else ``~/.cache/trails-bench``),
keyed by size, trails' version and what shapes the recorded graphs; each run
measures a fresh copy, so what a command writes (a verification checkpoint,
the session a fresh process records) never leaks into the next run.

Each command runs as a user runs it: a new ``trails`` process (or a new
Python process for the library rows), ``--runs`` times, the sizes interleaved
so they see the same machine noise; the figure is the median wall time, and
the ratio is to the same command's median on the smallest store (1k).
Targets (issue 19): a question about one session at 100k sessions within
1.5x of its time at 1k; ``trails sessions`` (the first page) within 1.5x;
``cost-by-model`` at most 1 s; ``import trails`` and a no-op command flat.

Run: ``python benchmarks/bench_scale.py [--sizes 1000,10000] [--runs 5]``;
the 100k point: ``--sizes 1000,10000,100000`` (the first build of 100k
sessions takes hours on a shared 2-core machine and about 12 GB on disk, twice
that while a copy is measured). ``--build-only`` builds the stores and stops;
``--prune`` removes cached stores of other trails versions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _scale_store
from _report import write_section

TRAILS = str(Path(sys.executable).with_name("trails"))

FIRST_SESSION = """
import json, sys, time
start = time.perf_counter()
import trails
from trails.kernel import Context, capability
from trails.prov import Recorder
from trails.store import open_store

@capability(id="bench.echo", description="Echo.")
def echo(text: str) -> str:
    return text

store = open_store(sys.argv[1])
opened = time.perf_counter()
recorder = Recorder.from_settings(store=store)
with Context.open("did:example:fresh", recorder=recorder) as ctx:  # 5 events, sealed
    for n in range(3):
        trails.invoke("bench.echo", {"text": f"call {n}"}, ctx=ctx)
done = time.perf_counter()
store.close()
print(json.dumps({"session": done - opened}))
"""

REPLAY = """
import json, statistics, sys, time
from trails.agent import Session
from trails.store import open_store

store = open_store(sys.argv[1])
times = []
for _ in range(5):
    start = time.perf_counter()
    replayed = Session.replay(sys.argv[2], store=store)
    times.append(time.perf_counter() - start)
    assert replayed.read_only
store.close()
print(json.dumps({"replay": statistics.median(times)}))
"""


@dataclass(frozen=True)
class Command:
    """One row of the table: how to run it, and its target."""

    key: str
    label: str
    argv: Callable[[Path, dict[str, object], Path], list[str]]
    target: str  # "ratio" (within 1.5x of 1k), "1s" (at most 1 s), or "" (context)
    inner: str | None = None  # the child prints {inner: seconds}: report that, not wall time
    heavy: bool = False  # run fewer times (whole-store work)


def _store_args(store: Path) -> list[str]:
    return ["--store", str(store)]


COMMANDS: tuple[Command, ...] = (
    Command(
        "timeline",
        "`trails query session-timeline` (one session)",
        lambda s, m, out: [
            TRAILS,
            "query",
            "session-timeline",
            "--param",
            f"session={m['middle']}",
            "-f",
            "json",
            *_store_args(s),
        ],
        "ratio",
    ),
    Command(
        "report",
        "`trails report SESSION`",
        lambda s, m, out: [
            TRAILS,
            "report",
            str(m["middle"]),
            "--out",
            str(out / "r.html"),
            *_store_args(s),
        ],
        "ratio",
    ),
    Command(
        "verify_session",
        "`trails verify --session SESSION`",
        lambda s, m, out: [TRAILS, "verify", "--session", str(m["middle"]), *_store_args(s)],
        "ratio",
    ),
    Command(
        "export_session",
        "`trails export --session SESSION`",
        lambda s, m, out: [
            TRAILS,
            "export",
            "--session",
            str(m["middle"]),
            "--out",
            str(out / "s.trig"),
            *_store_args(s),
        ],
        "ratio",
    ),
    Command(
        "sessions",
        "`trails sessions`",
        lambda s, m, out: [TRAILS, "sessions", *_store_args(s)],
        "ratio",
    ),
    Command(
        "cost_by_model",
        "`trails query cost-by-model`",
        lambda s, m, out: [TRAILS, "query", "cost-by-model", *_store_args(s)],
        "1s",
    ),
    Command(
        "noop",
        "a no-op command (`trails query 'ASK {}'`)",
        lambda s, m, out: [TRAILS, "query", "ASK {}", *_store_args(s)],
        "ratio",
    ),
    Command(
        "import",
        "`import trails` (context: no store)",
        lambda s, m, out: [sys.executable, "-c", "import trails"],
        "ratio",
    ),
    Command(
        "first_session",
        "the first session a fresh process records (5 events, sealed; in process)",
        lambda s, m, out: [sys.executable, "-c", FIRST_SESSION, str(s)],
        "ratio",
        inner="session",
    ),
    Command(
        "replay",
        "`Session.replay(X)` in process (median of 5 calls)",
        lambda s, m, out: [sys.executable, "-c", REPLAY, str(s), str(m["persisted"])],
        "ratio",
        inner="replay",
    ),
    Command(
        "verify_all",
        "`trails verify` (all)",
        lambda s, m, out: [TRAILS, "verify", *_store_args(s)],
        "",
        heavy=True,
    ),
)


def run_once(command: Command, store: Path, manifest: dict[str, object], out: Path) -> float:
    """Seconds of one run of ``command`` on ``store`` (a new process)."""
    argv = command.argv(store, manifest, out)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")}
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=out, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1) or (done.returncode == 1 and command.key != "verify_all"):
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    if command.inner:
        return float(json.loads(done.stdout.strip().splitlines()[-1])[command.inner])
    return elapsed


def ratio_verdict(command: Command, base: float, value: float) -> tuple[str, str]:
    """The ratio cell and the verdict of ``value`` against ``base`` (the 1k median)."""
    ratio = value / base if base else float("inf")
    if command.target == "ratio":
        return f"{ratio:.2f}x", "met" if ratio <= 1.5 else "**missed**"
    if command.target == "1s":
        return f"{ratio:.2f}x", "met" if value <= 1.0 else "**missed**"
    return f"{ratio:.2f}x", ""


def table(
    sizes: list[int], medians: dict[str, dict[int, float]], manifests: dict[int, dict[str, object]]
) -> str:
    """The markdown table of medians, ratios to the smallest size and verdicts."""
    base, top = sizes[0], sizes[-1]
    head = [
        "command",
        *(f"{n:,}" for n in sizes),
        *(f"{n // base}x store / {base:,}" for n in sizes[1:]),
        f"target (at {top:,})",
    ]
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + " --- |" + " ---: |" * (len(head) - 2) + " --- |",
    ]
    for command in COMMANDS:
        row = medians[command.key]
        cells = [command.label, *(f"{row[n]:.3f} s" for n in sizes)]
        verdict = ""
        for n in sizes[1:]:
            cell, verdict = ratio_verdict(command, row[base], row[n])
            cells.append(cell)
        if command.target == "ratio":
            cells.append(f"<= 1.5x: {verdict}" if len(sizes) > 1 else "<= 1.5x")
        elif command.target == "1s":
            cells.append(f"<= 1 s: {'met' if row[top] <= 1.0 else '**missed**'}")
        else:
            rates = ", ".join(f"{int(manifests[n]['sessions']) / row[n]:,.0f}/s" for n in sizes)
            cells.append(f"context: {rates} sessions verified")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def measure(
    sizes: list[int], runs: int, *, reuse_any_digest: bool = False
) -> tuple[dict[str, dict[int, float]], dict[int, dict]]:
    """Build (or reuse) the stores, copy each, and time every command ``runs`` times."""
    stores: dict[int, tuple[Path, dict[str, object]]] = {}
    for n in sizes:
        start = time.perf_counter()
        stores[n] = _scale_store.cached_store(n, reuse_any_digest=reuse_any_digest)
        print(
            f"store of {n:,} sessions ready in {time.perf_counter() - start:.1f} s", file=sys.stderr
        )
    samples: dict[str, dict[int, list[float]]] = {c.key: {n: [] for n in sizes} for c in COMMANDS}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        work: dict[int, Path] = {}
        for n in sizes:
            work[n] = Path(tmp) / f"store-{n}"
            shutil.copytree(stores[n][0], work[n])
            stores[n][1]["disk_mb"] = sum(f.stat().st_size for f in work[n].iterdir()) >> 20
        out = Path(tmp) / "out"
        out.mkdir()
        for command in COMMANDS:
            for _ in range(max(1, runs // 2) if command.heavy else runs):
                for n in sizes:
                    samples[command.key][n].append(run_once(command, work[n], stores[n][1], out))
            figures = ", ".join(
                f"{n:,}: {statistics.median(samples[command.key][n]):.3f} s" for n in sizes
            )
            print(f"{command.key:16} {figures}", file=sys.stderr, flush=True)
    medians = {k: {n: statistics.median(v) for n, v in row.items()} for k, row in samples.items()}
    return medians, {n: m for n, (_, m) in stores.items()}


def report(
    sizes: list[int], runs: int, medians: dict[str, dict[int, float]], manifests: dict[int, dict]
) -> str:
    builds = "; ".join(
        f"{n:,} sessions: recorded in {m['record_s']:,.0f} s "
        f"({int(m['sessions']) / float(m['record_s']):.0f} sessions/s), {m['disk_mb']:,} MB, "
        f"store `{m['key']}` built from commit `{m['commit']}`"
        for n, m in manifests.items()
    )
    sizes_flag = ",".join(str(n) for n in sizes)
    return f"""## Audit at scale: one session's question as the store grows

`python benchmarks/bench_scale.py --sizes {sizes_flag}`: stores of real sessions recorded
through the recorder by one process (the ReAct planner over a scripted model with token
counts and prices, capability calls with and without side effects, `memory.learn` /
`memory.recall` through `invoke`, 1 in 20 with a failing capability, 1 in 25 stopped at
its step limit, 1 in 50 left open and ended as interrupted by the recovery of the next
process, 1 in 10 persisted for replay; each sealed by the default sealer; about 340 quads
a session). Each command runs as a new process on a fresh copy of the store, {runs} times
({max(1, runs // 2)} for `trails verify`), sizes interleaved; medians of wall time (in
process for the two library rows). Ratios are to the {sizes[0]:,}-session store.

{table(sizes, medians, manifests)}

Start-up: a reading command opens the store and loads no recorder, so it does no work that
grows with the store besides opening RocksDB. The first session of a fresh process used to
scan every session graph twice when its recorder was configured (recovery on open: open
sessions, and ended ones without a seal; 4.8 s of a 5.5 s first session at 1k sessions under
load); recovery on open now reads the open-sessions register configured recorders keep in the
writes that start and end each session, so it reads only what was left open. What remains of
that row is the session's own writes and reading the ledger head for its seal.

Builds (cached between runs, keyed by size, trails' version and the sources that shape a
recorded graph): {builds}. The 100k point: `python benchmarks/bench_scale.py --sizes
1000,10000,100000` (its first build records 100,000 sessions at the rate above, about 12 GB
on disk, twice that while a copy is measured); `--build-only` builds without measuring.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes",
        default="1000,10000",
        help="comma-separated store sizes in sessions (default 1000,10000)",
    )
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (default 5)")
    parser.add_argument("--build-only", action="store_true", help="build the stores and stop")
    parser.add_argument(
        "--prune", action="store_true", help="remove cached stores of other trails versions first"
    )
    parser.add_argument(
        "--reuse-any-digest",
        action="store_true",
        help="use the newest complete cached store of each size built by any sources "
        "(the key and commit that built it are printed and written in the doc)",
    )
    parser.add_argument("--no-doc", action="store_true", help="print, do not write the doc")
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if not sizes or sizes[0] < 1 or args.runs < 1:
        parser.error("--sizes needs positive sizes and --runs at least 1")
    if args.prune:
        keep = tuple(_scale_store.cache_key(n) for n in sizes)
        if args.reuse_any_digest:  # and what would be reused
            keep += tuple(s.name for n in sizes for s in _scale_store.complete_stores(n)[:1])
        for removed in _scale_store.prune(keep=keep):
            print(f"removed {removed}", file=sys.stderr)
    if args.build_only:
        for n in sizes:
            path, manifest = _scale_store.cached_store(n, reuse_any_digest=args.reuse_any_digest)
            print(f"{n:,} sessions at {path}: {manifest}")
        return
    medians, manifests = measure(sizes, args.runs, reuse_any_digest=args.reuse_any_digest)
    text = report(sizes, args.runs, medians, manifests)
    if not args.no_doc:
        write_section("scale", text)
    print(text)


if __name__ == "__main__":
    main()
