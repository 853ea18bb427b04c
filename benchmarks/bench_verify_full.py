"""Full verification against the raw read of the same store, and the quick mode as it grows.

Two measurements, each against a baseline from the same run, on stores of real sessions
built by ``_scale_store`` (ReAct sessions over a scripted model, memory, failures,
interrupted sessions; cached between runs, and any complete build of a size reused):

- **full verification throughput**: ``verify(store)`` (a plain ``trails verify``: every
  sealed graph rehashed, all content recomputed, every catalogue entry recomputed, every
  graph accounted for, in one pass, its per-graph work on every core) against pyoxigraph
  dumping the whole dataset as N-Quads into a sink that keeps nothing (the raw read of
  the same quads). Interleaved rounds; the ratio is raw time / verification time
  (throughput relative to the raw read, target >= 0.5), for the default worker count and
  for ``jobs=1`` (one process), so what the pool brings is measured too.
- **quick verification as the store grows**: ``verify(store, quick=True)`` after a full
  verification's checkpoint and 10 sessions sealed since, on a small and a large store;
  the ratio large / small (target <= 1.5: flat).

Every store is measured on a copy made in seconds (table files hard-linked, as
``bench_scale.snapshot`` does; the cached or given store is never opened itself).

Run: ``python benchmarks/bench_verify_full.py`` (1,000 and 10,000 sessions; quick at
1,000 and 10,000); ``--sessions 1000`` for a short run; ``--store PATH`` to measure an
existing store as well (a 100,000-session store built elsewhere), ``--quick none`` to
skip the quick mode.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _scale_store
from _report import DOC, paired, write_section
from bench_scale import snapshot

from trails.evidence.checkpoint import record_checkpoint
from trails.evidence.graphwork import default_jobs
from trails.evidence.verify import verify
from trails.prov import Recorder
from trails.store import open_store


class _Sink:
    """A binary file that keeps nothing (what the raw read is timed into)."""

    def write(self, data: bytes) -> int:
        return len(data)

    def flush(self) -> None:
        pass


def _raw_read(store: Any) -> None:
    import pyoxigraph as ox

    store.raw.dump(_Sink(), format=ox.RdfFormat.N_QUADS)


def _copy(source: Path, into: Path) -> Path:
    """A hard-linked copy of the store at ``source`` (the original is never opened)."""
    return snapshot(source, into / f"store-{len(list(into.iterdir()))}")


def _cached(sessions: int) -> Path:
    path, _ = _scale_store.cached_store(sessions, reuse_any_digest=True)
    return path


def _rounds(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Seconds of each function in each round, the order rotating from round to round."""
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    for i in range(rounds):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            start = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - start)
    return times


def _full(path: Path, rounds: int, jobs: int) -> dict[str, float]:
    store = open_store(path)
    try:
        first = verify(store, jobs=jobs)
        assert first.ok, first.findings[:3]
        times = _rounds(
            {
                "raw": lambda: _raw_read(store),
                "verify": lambda: verify(store, jobs=jobs),
                "one": lambda: verify(store, jobs=1),
            },
            rounds,
        )
    finally:
        store.close()
    ratios = sorted(r / v for r, v in zip(times["raw"], times["verify"], strict=True))
    one = sorted(r / v for r, v in zip(times["raw"], times["one"], strict=True))
    t_verify = statistics.median(times["verify"])
    return {
        "verify": t_verify,
        "one_time": statistics.median(times["one"]),
        "raw": statistics.median(times["raw"]),
        "throughput": statistics.median(ratios),
        "worst": ratios[0],
        "best": ratios[-1],
        "one": statistics.median(one),
        "one_worst": one[0],
        "one_best": one[-1],
        "sessions": first.sessions_checked,
        "quads": first.quads_read,
        "per_s": first.sessions_checked / t_verify,
        "quads_s": first.quads_read / t_verify,
    }


def _prepared_quick(path: Path, new: int) -> Any:
    """The store at ``path`` with a full verification's checkpoint and ``new`` sessions
    sealed since (open; the caller closes it)."""
    store = open_store(path)
    recorder = Recorder.from_settings(store=store)
    full = verify(store)
    assert full.ok, full.findings[:3]
    record_checkpoint(
        recorder,
        mode="full",
        seals=full.seals,
        graphs=full.graphs_checked,
        verified=full.chain_tips,
        previous=None,
    )
    _scale_store.register_capabilities()
    for i in range(new):
        plan = _scale_store.plan_for(100_000 + i * 2)  # finishing sessions, never left open
        _scale_store.record_session(recorder, plan)
    quick = verify(store, quick=True)
    assert quick.ok and quick.mode == "quick" and quick.graphs_checked == new, quick.findings[:3]
    return store


def _quick(small: Path, large: Path, rounds: int) -> tuple[float, float, float, list[float]]:
    a, b = _prepared_quick(small, 10), _prepared_quick(large, 10)
    try:
        t_large, t_small, ratio, ratios = paired(
            lambda: verify(b, quick=True), lambda: verify(a, quick=True), rounds=rounds, number=3
        )
    finally:
        a.close()
        b.close()
    return t_large, t_small, ratio, ratios


def _row(label: str, f: dict[str, float], jobs: int) -> str:
    return (
        f"| `verify` (full, {jobs} jobs) of {label}: {f['sessions']:,.0f} sessions, "
        f"{f['quads']:,.0f} quads | {f['verify']:.2f} s | throughput **{f['throughput']:.2f}** x "
        f"the raw read (rounds {f['worst']:.2f}-{f['best']:.2f}; target >= 0.5); "
        f"{f['per_s']:,.0f} sessions/s, {f['quads_s']:,.0f} quads/s |\n"
        f"| the same with `--jobs 1` (one process) | {f['one_time']:.2f} s | "
        f"{f['one']:.2f} x the raw read (rounds {f['one_worst']:.2f}-{f['one_best']:.2f}) |\n"
        f"| raw read of the same store: `Store.dump` to N-Quads (baseline) | {f['raw']:.2f} s | |"
    )


def _earlier_rows(measured: set[str], quick: bool) -> str:
    """The rows of the section as it stands that this run did not measure again (a store
    measured by an earlier run, as the 100,000-session one), each marked with the date it
    was measured, so a shorter run does not drop them."""
    text = DOC.read_text() if DOC.exists() else ""
    start, end = "<!-- bench:verify_full -->", "<!-- /bench:verify_full -->"
    if start not in text or end not in text:
        return ""
    section = text.split(start, 1)[1].split(end, 1)[0]
    stamp = re.search(r"_Measured (\d{4}-\d\d-\d\d \d\d:\d\d UTC)", section)
    when = f"measured {stamp.group(1)}" if stamp else "an earlier run"
    groups: list[list[str]] = []
    for line in section.splitlines():
        if line.startswith("| `verify` (full") or line.startswith("| `verify --quick`, 10"):
            groups.append([line])
        elif line.startswith("| ") and groups and not line.startswith("| |"):
            groups[-1].append(line)
    kept: list[str] = []
    for group in groups:
        head = group[0]
        if head.startswith("| `verify --quick`"):
            if quick:
                continue
        else:
            label = head.split(" of ", 1)[1].split(":", 1)[0] if " of " in head else ""
            if label.split(" (", 1)[0] in measured:
                continue
        if "(measured " not in head and "(an earlier run" not in head:
            first, rest = head.split(" | ", 1)
            head = f"{first} ({when}) | {rest}"
        kept.extend([head, *group[1:]])
    return "\n".join(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--sessions", default="1000,10000", help="cached stores for the full check (sizes)"
    )
    parser.add_argument("--store", type=Path, help="an existing store to measure as well")
    parser.add_argument(
        "--quick", default="1000,10000", help="SMALL,LARGE stores for --quick (none: skip)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=default_jobs(), help="default: all cores")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sessions.split(",") if n.strip()]
    quick_sizes = [int(n) for n in args.quick.split(",")] if args.quick.lower() != "none" else []
    full: list[tuple[str, dict[str, float]]] = []
    quick = None
    root = _scale_store.cache_root()  # copies next to the cache: the same file system
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="work-verify-", dir=root) as tmp:
        work = Path(tmp)
        for n in sizes:
            f = _full(_copy(_cached(n), work), args.rounds, args.jobs)
            full.append((f"the {n:,}-session store", f))
            print(f"{n}: {f['throughput']:.2f}x raw ({args.jobs} jobs), {f['one']:.2f}x (1 job)")
        if args.store is not None:
            with tempfile.TemporaryDirectory(prefix="work-verify-", dir=args.store.parent) as t2:
                f = _full(_copy(args.store, Path(t2)), args.rounds, args.jobs)
            name = args.store.parent.name if args.store.name == "store" else args.store.name
            full.append((f"`{name}`", f))
            print(f"{args.store}: {f['throughput']:.2f}x raw, {f['one']:.2f}x (1 job)")
        if quick_sizes:
            small_n, large_n = quick_sizes
            quick = (small_n, large_n, *_quick(
                _copy(_cached(small_n), work), _copy(_cached(large_n), work), max(args.rounds, 7)
            ))  # fmt: skip
            print(f"quick: {quick[4]:.2f}x ({quick[2] * 1e3:.0f} ms vs {quick[3] * 1e3:.0f} ms)")

    command = f"python benchmarks/bench_verify_full.py --sessions {args.sessions}"
    command += f" --quick {args.quick} --rounds {args.rounds}"
    if args.store is not None:
        command += " --store STORE"
    earlier = _earlier_rows({label for label, _ in full}, quick is not None)
    rows = "\n".join(_row(label, f, args.jobs) for label, f in full)
    if quick is not None:
        small_n, large_n, t_large, t_small, q_ratio, q_ratios = quick
        rows += (
            f"\n| `verify --quick`, 10 sessions sealed since the checkpoint, {large_n:,} "
            f"sessions | {t_large * 1e3:.0f} ms | **{q_ratio:.2f}** x at {small_n:,} (rounds "
            f"{q_ratios[0]:.2f}-{q_ratios[-1]:.2f}; target <= 1.5) |\n"
            f"| `verify --quick`, the same at {small_n:,} sessions (baseline) | "
            f"{t_small * 1e3:.0f} ms | |"
        )
    if earlier:
        rows += "\n" + earlier
    write_section(
        "verify_full",
        f"""## Verification: the full check against the raw read, the quick mode as it grows (issue 30)

`{command}`, on-disk stores of realistic sessions (`benchmarks/_scale_store.py`, measured
on hard-linked copies). A plain `trails verify` is the full check: every sealed graph
rehashed, all content recomputed against its digests, every catalogue entry recomputed
from its session, every graph accounted for, read in one N-Quads stream of the whole store,
the work on each graph done by {args.jobs} worker processes (`--jobs`, default every core).
The baseline is pyoxigraph dumping the same store as N-Quads into a sink that keeps
nothing: the raw read of the same quads, in the same run (rounds interleaved, ratio taken
per round).

| | time | ratio |
|---|---|---|
{rows}

`trails verify` prints its sessions/s and quads/s in the line before its verdict. The
quick mode reads only the seals after the checkpoint (walking back from the ledger's
newest-seal pointers) and the graphs they seal: its time follows what is new, not the
store.

Where the time goes, stage by stage in CPU seconds: "Verification: where the CPU time
goes" below (`bench_verify_stages.py`). The dump itself, then recomputing catalogue entries (the
summary lines read and `summarise`), canonical hashing, the content check and cutting the
stream. The stream is cut a block of 1 MB at a time with bytes operations (a graph's run
of lines found by halving, checked by counting), not line by line; a graph whose typed
literals are all in canonical form already (each found by a search for its datatype's
fixed suffix, its form checked alone) is hashed from its N-Quads lines as they come
(sorted, nothing rewritten); a session's summary lines are picked by their predicate
(and, of the types, the few `summarise` asks about) without a regular expression over
the graph; catalogue entries are compared by digest. The dump and the cutting stay in the process
that holds the store, so on a machine of {os.cpu_count()} cores the workers share the
cores with it: the pool pays by what it takes off that process (the `--jobs 1` rows).
Load average at the end of the run: {os.getloadavg()[0]:.1f}.""",
    )


if __name__ == "__main__":
    main()
