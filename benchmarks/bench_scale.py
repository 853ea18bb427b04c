"""Audit at scale: each command a user runs, on stores of 1k, 10k (and 100k) recorded sessions.

The stores are real: every session recorded through the recorder by the
planner, sealed by the default sealer, a few left open and recovered
(``_scale_store``), about 340 quads a session. They are built once and cached
outside the repository (``TRAILS_BENCH_CACHE``, else ``~/.cache/trails-bench``),
keyed by size, trails' version and what shapes the recorded graphs. A run
makes one copy of each store for the commands that only read; a command that
writes (``trails verify`` records a checkpoint, the first-session row records a
session) gets a fresh copy for each run, so its write never leaks into the next
run. A copy hard-links the store's table files (RocksDB never rewrites one: it
writes new files and deletes old ones) and copies the rest, so it costs seconds
and no disk even at 100k sessions; the working copies live next to the cache
(the same file system) and are removed at the end.

When ``trails catalogue rollup`` exists in the trails measured, it runs once on
each size's copy before the timed commands, as a daily job would (the daily
cost totals the cost queries read), and its time is a context row.

Each command runs as a user runs it: a new ``trails`` process (or a new
Python process for the library rows), ``--runs`` times, the sizes interleaved
so they see the same machine noise; the figure is the median wall time, and
the ratio is to the same command's median on the smallest store (1k).
Targets (issue 19): a question about one session at 100k sessions within
1.5x of its time at 1k; ``trails sessions`` (the first page) within 1.5x;
``cost-by-model`` and ``cost-by-principal`` at most 1 s; ``import trails`` and a
no-op command flat.

Run: ``python benchmarks/bench_scale.py [--sizes 1000,10000] [--runs 5]``;
the 100k point: ``--sizes 1000,10000,100000`` (the first build of 100k
sessions takes hours on a shared 2-core machine and about 12 GB on disk).
``--build-only`` builds the stores and stops; ``--prune`` removes cached stores
of other trails versions; ``--reuse-any-digest`` measures the newest complete
store of each size whatever sources built it (the doc names its key and
commit); ``trails verify`` (all) runs once on stores above 10,000 sessions, and
not at all above ``--verify-all-max``. ``--store SIZE=FOLDER`` measures another
store as a size (a multiplied one, ``_multiply_store.py``: 100,000 sessions and
more), ``--rows`` runs only the rows named (``verify_quick``, the quick verification
after three new sessions, only when named: it needs stores with a checkpoint); both
print the table and leave the doc's section alone.
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

QUICK_VERIFY = """
import json, subprocess, sys, time
import trails
from trails.kernel import Context, capability
from trails.prov import Recorder
from trails.store import open_store

@capability(id="bench.echo", description="Echo.")
def echo(text: str) -> str:
    return text

store = open_store(sys.argv[1])
recorder = Recorder.from_settings(store=store)
for n in range(3):
    with Context.open(f"did:example:late{n}", recorder=recorder) as ctx:
        trails.invoke("bench.echo", {"text": f"call {n}"}, ctx=ctx)
store.close()
start = time.perf_counter()
done = subprocess.run([sys.argv[2], "verify", "--quick", "--store", sys.argv[1]],
                      capture_output=True, text=True)
elapsed = time.perf_counter() - start
assert done.returncode == 0 and "quick, since the checkpoint" in done.stdout, done.stdout
print(json.dumps({"quick": elapsed}))
"""


@dataclass(frozen=True)
class Command:
    """One row of the table: how to run it, and its target."""

    key: str
    label: str
    argv: Callable[[Path, dict[str, object], Path], list[str]]
    target: str  # "ratio" (within 1.5x of 1k), "1s" (at most 1 s), "rate" or "" (context)
    inner: str | None = None  # the child prints {inner: seconds}: report that, not wall time
    heavy: bool = False  # run fewer times (whole-store work): once above HEAVY_ONCE_ABOVE
    writes: bool = False  # changes the store: a fresh copy for each run
    note: str = ""  # the target cell of a context row


#: heavy commands run once on stores larger than this
HEAVY_ONCE_ABOVE = 10_000

#: run once per size on the copy before the timed commands, when the trails measured has it
ROLLUP = Command(
    "rollup",
    "`trails catalogue rollup` (once, before the rows above)",
    lambda s, m, out: [TRAILS, "catalogue", "rollup", *_store_args(s)],
    "",
    note="context: daily totals computed, as a daily job would",
)


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
        "cost_by_principal",
        "`trails query cost-by-principal`",
        lambda s, m, out: [TRAILS, "query", "cost-by-principal", *_store_args(s)],
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
        writes=True,
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
        "rate",
        heavy=True,
        writes=True,  # a verification checkpoint: the next run would check only what follows it
    ),
)


#: rows run only when ``--rows`` names them: the quick verification needs stores with a
#: checkpoint (``_multiply_store`` records one; a recorded store has none)
OPTIONAL: tuple[Command, ...] = (
    Command(
        "verify_quick",
        "`trails verify --quick` after 3 new sessions (from the store's checkpoint)",
        lambda s, m, out: [sys.executable, "-c", QUICK_VERIFY, str(s), TRAILS],
        "ratio",
        inner="quick",
        writes=True,  # records sessions and a checkpoint
    ),
)


def snapshot(source: Path, target: Path) -> Path:
    """A copy of the on-disk store at ``source`` in ``target``, made in seconds.

    RocksDB never rewrites a table file (``*.sst``, ``*.blob``): it writes new
    ones and deletes old ones, so the copy hard-links them (deleting one in the
    copy removes only the link) and copies the files it appends to (the log,
    the manifest). Across file systems it copies everything. Folders (the data
    directory a store's pointer names) are copied the same way.
    """
    target.mkdir(parents=True)
    for item in source.iterdir():
        into = target / item.name
        if item.is_dir():
            snapshot(item, into)
        elif item.suffix in (".sst", ".blob"):
            try:
                os.link(item, into)
            except OSError:
                shutil.copy2(item, into)
        else:
            shutil.copy2(item, into)
    return target


def disk_mb(store: Path) -> int:
    """Megabytes the store's files take."""
    return sum(f.stat().st_size for f in store.rglob("*") if f.is_file()) >> 20


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


def has_rollup() -> bool:
    """Whether the trails measured has ``trails catalogue rollup``."""
    done = subprocess.run(
        [TRAILS, "catalogue", "rollup", "--help"], capture_output=True, text=True, check=False
    )
    return done.returncode == 0


def runs_of(command: Command, size: int, runs: int, verify_all_max: int | None) -> int:
    """How many times ``command`` runs on the store of ``size`` sessions."""
    if command.key == "verify_all" and verify_all_max is not None and size > verify_all_max:
        return 0
    if command.heavy:
        return 1 if size > HEAVY_ONCE_ABOVE else max(1, runs // 2)
    return runs


def ratio_verdict(command: Command, base: float, value: float) -> tuple[str, str]:
    """The ratio cell and the verdict of ``value`` against ``base`` (the 1k median)."""
    ratio = value / base if base else float("inf")
    if command.target == "ratio":
        return f"{ratio:.2f}x", "met" if ratio <= 1.5 else "**missed**"
    if command.target == "1s":
        return f"{ratio:.2f}x", "met" if value <= 1.0 else "**missed**"
    return f"{ratio:.2f}x", ""


def table(
    sizes: list[int],
    medians: dict[str, dict[int, float]],
    manifests: dict[int, dict[str, object]],
    commands: tuple[Command, ...] = COMMANDS,
) -> str:
    """The markdown table of medians, ratios to the smallest size and verdicts.

    A command with no figure at a size (``trails verify`` above
    ``--verify-all-max``) shows "not run" there; a command with none at all is left out.
    """
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
    for command in commands:
        row = medians.get(command.key, {})
        if not row:
            continue
        cells = [command.label, *(f"{row[n]:.3f} s" if n in row else "not run" for n in sizes)]
        verdict = ""
        for n in sizes[1:]:
            if base in row and n in row:
                cell, verdict = ratio_verdict(command, row[base], row[n])
            else:
                cell, verdict = "-", "not measured"
            cells.append(cell)
        if command.target == "ratio":
            cells.append(f"<= 1.5x: {verdict}" if len(sizes) > 1 else "<= 1.5x")
        elif command.target == "1s":
            met = "not measured" if top not in row else "met" if row[top] <= 1.0 else "**missed**"
            cells.append(f"<= 1 s: {met}")
        elif command.target == "rate":
            rates = ", ".join(
                f"{int(manifests[n]['sessions']) / row[n]:,.0f}/s" for n in sizes if n in row
            )
            cells.append(f"context: {rates} sessions verified")
        else:
            cells.append(command.note or "context")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def measure(
    sizes: list[int],
    runs: int,
    *,
    reuse_any_digest: bool = False,
    verify_all_max: int | None = None,
    given: dict[int, Path] | None = None,
    commands: tuple[Command, ...] = COMMANDS,
) -> tuple[dict[str, dict[int, float]], dict[int, dict]]:
    """Build (or reuse) the stores, copy each, and time every command ``runs`` times.

    One copy per size serves the commands that only read (after the rollup, when
    there is one); a command that writes gets a fresh copy of that copy each run.
    ``given`` names the store of a size instead (``--store SIZE=FOLDER``).
    """
    stores: dict[int, tuple[Path, dict[str, object]]] = {}
    for n in sizes:
        start = time.perf_counter()
        if given and n in given:
            stores[n] = given_store(given[n])
        else:
            stores[n] = _scale_store.cached_store(n, reuse_any_digest=reuse_any_digest)
        manifest = stores[n][1]
        manifest["disk_mb"] = disk_mb(stores[n][0])
        print(
            f"store of {n:,} sessions ready in {time.perf_counter() - start:.1f} s: "
            f"{manifest['key']} (commit {manifest['commit']})",
            file=sys.stderr,
        )
    samples: dict[str, dict[int, list[float]]] = {c.key: {n: [] for n in sizes} for c in commands}
    medians: dict[str, dict[int, float]] = {}
    root = _scale_store.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="work-", dir=root) as tmp:
        work: dict[int, Path] = {}
        for n in sizes:
            start = time.perf_counter()
            work[n] = snapshot(stores[n][0], Path(tmp) / f"store-{n}")
            print(f"copy of {n:,} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        out = Path(tmp) / "out"
        out.mkdir()
        if has_rollup():
            medians[ROLLUP.key] = {n: run_once(ROLLUP, work[n], stores[n][1], out) for n in sizes}
            print(f"rollup           {_figures(medians[ROLLUP.key])}", file=sys.stderr)
        else:
            print("no `trails catalogue rollup` in this trails: no rollup step", file=sys.stderr)
        for command in commands:
            counts = {n: runs_of(command, n, runs, verify_all_max) for n in sizes}
            for turn in range(max(counts.values())):
                for n in sizes:
                    if turn >= counts[n]:
                        continue
                    if not command.writes:
                        samples[command.key][n].append(
                            run_once(command, work[n], stores[n][1], out)
                        )
                        continue
                    fresh = snapshot(work[n], Path(tmp) / f"run-{n}")
                    try:
                        samples[command.key][n].append(run_once(command, fresh, stores[n][1], out))
                    finally:
                        shutil.rmtree(fresh)
            row = {n: statistics.median(v) for n, v in samples[command.key].items() if v}
            medians[command.key] = row
            print(f"{command.key:16} {_figures(row)}", file=sys.stderr, flush=True)
    return medians, {n: m for n, (_, m) in stores.items()}


def given_store(folder: Path) -> tuple[Path, dict[str, object]]:
    """The store and manifest of a cache folder (``store/`` and its ``complete`` manifest,
    as ``_scale_store`` and ``_multiply_store`` write them)."""
    manifest: dict[str, object] = json.loads((folder / _scale_store.COMPLETE).read_text())
    manifest.setdefault("key", folder.name)
    manifest.setdefault("commit", "unknown")
    return folder / "store", manifest


def _figures(row: dict[int, float]) -> str:
    return ", ".join(f"{n:,}: {seconds:.3f} s" for n, seconds in row.items())


def report(
    sizes: list[int],
    runs: int,
    medians: dict[str, dict[int, float]],
    manifests: dict[int, dict],
    *,
    load: tuple[float, float] | None = None,
) -> str:
    """The ``bench:scale`` section of ``docs/benchmarks.md``."""
    builds = "; ".join(
        f"{n:,} sessions: recorded in {m['record_s']:,.0f} s "
        f"({int(m['sessions']) / float(m['record_s']):.0f} sessions/s), {m['disk_mb']:,} MB, "
        f"started {_days(m)}, store `{m['key']}` built from commit `{m['commit']}`"
        for n, m in manifests.items()
    )
    sizes_flag = ",".join(str(n) for n in sizes)
    verify_all = next(c for c in COMMANDS if c.key == "verify_all")
    heavy = ", ".join(
        f"{runs_of(verify_all, n, runs, None) if n in medians.get('verify_all', {}) else 0} at {n:,}"
        for n in sizes
    )
    rollup = (
        "`trails catalogue rollup` ran once on each copy before the timed commands, as a daily "
        "job would (the daily cost totals the cost queries read); its time is the last row."
        if ROLLUP.key in medians
        else "The trails measured has no `trails catalogue rollup`: no maintenance step ran."
    )
    machine = (
        f" Load average (1 min) {load[0]:.1f} at the start, {load[1]:.1f} at the end, on "
        f"{os.cpu_count()} cores."
        if load
        else ""
    )
    return f"""## Audit at scale: one session's question as the store grows

`python benchmarks/bench_scale.py --sizes {sizes_flag}`: stores of real sessions recorded
through the recorder by one process (the ReAct planner over a scripted model with token
counts and prices, capability calls with and without side effects, `memory.learn` /
`memory.recall` through `invoke`, 1 in 20 with a failing capability, 1 in 25 stopped at
its step limit, 1 in 50 left open and ended as interrupted by the recovery of the next
process, 1 in 10 persisted for replay; each sealed by the default sealer; about 340 quads
a session), their start times spread evenly over the {_scale_store.SPREAD_DAYS} days before
the build. Each command runs as a new process, {runs} times (`trails verify`: {heavy}), sizes
interleaved; medians of wall time (in process for the two library rows). The commands that
only read share one copy of each store; the two that write (the first session, and `trails
verify`, which records a checkpoint) get a fresh copy every run (table files hard-linked).
{rollup} Ratios are to the {sizes[0]:,}-session store.{machine}

{table(sizes, medians, manifests, (*COMMANDS, ROLLUP))}

Start-up: a reading command opens the store and loads no recorder, so it does no work that
grows with the store besides opening RocksDB. The first session of a fresh process used to
scan every session graph twice when its recorder was configured (recovery on open: open
sessions, and ended ones without a seal; 4.8 s of a 5.5 s first session at 1k sessions under
load); recovery on open now reads the open-sessions register configured recorders keep in the
writes that start and end each session, so it reads only what was left open. What remains of
that row is the session's own writes and reading the ledger head for its seal.

Builds (cached between runs, keyed by size, trails' version, the session mix and the sources
that shape a recorded graph): {builds}. The 100k point: `python benchmarks/bench_scale.py
--sizes 1000,10000,100000` (its first build records 100,000 sessions, about 12 GB on disk;
`--build-only` builds without measuring, `--reuse-any-digest` measures stores built by
earlier sources, `--verify-all-max 10000` leaves out `trails verify` (all) at 100k).
"""


def _days(manifest: dict[str, object]) -> str:
    spread = manifest.get("spread")
    if not isinstance(spread, list) or len(spread) != 2:
        return "within the build"
    first, last = (str(t)[:10] for t in spread)
    return f"{first} to {last}"


def parse_given(parser: argparse.ArgumentParser, values: list[str]) -> dict[int, Path]:
    """``--store SIZE=FOLDER`` values as ``{size: folder}`` (each folder must hold a
    complete store)."""
    given: dict[int, Path] = {}
    for value in values:
        size, sep, folder = value.partition("=")
        if not sep or not size.strip().isdigit():
            parser.error(f"--store wants SIZE=FOLDER, not {value!r}")
        path = Path(folder).expanduser()
        if not (path / _scale_store.COMPLETE).is_file() or not (path / "store").is_dir():
            parser.error(f"--store {value}: {path} holds no complete store (store/ and complete)")
        given[int(size)] = path
    return given


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
    parser.add_argument(
        "--verify-all-max",
        type=int,
        default=None,
        metavar="SESSIONS",
        help="largest store `trails verify` (all) runs on (default: every size; it runs once "
        f"on stores above {HEAVY_ONCE_ABOVE:,} sessions)",
    )
    parser.add_argument(
        "--store",
        action="append",
        default=[],
        metavar="SIZE=FOLDER",
        help="measure the store in FOLDER (its store/ and complete manifest, as "
        "_multiply_store.py caches them) as the SIZE point; repeatable",
    )
    parser.add_argument(
        "--rows",
        default=None,
        help="comma-separated keys of the rows to run (default: all but the optional "
        "verify_quick): " + ",".join(c.key for c in (*COMMANDS, *OPTIONAL)),
    )
    parser.add_argument("--no-doc", action="store_true", help="print, do not write the doc")
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if not sizes or sizes[0] < 1 or args.runs < 1:
        parser.error("--sizes needs positive sizes and --runs at least 1")
    given, commands = parse_given(parser, args.store), COMMANDS
    if args.rows:
        keys = [k.strip() for k in args.rows.split(",") if k.strip()]
        unknown = sorted(set(keys) - {c.key for c in (*COMMANDS, *OPTIONAL)})
        if unknown:
            parser.error(f"--rows: no row {', '.join(unknown)}")
        commands = tuple(c for c in (*COMMANDS, *OPTIONAL) if c.key in keys)
    if given or args.rows:
        args.no_doc = True  # not the recorded table of the doc's section: printed only
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
    before = os.getloadavg()[0]
    medians, manifests = measure(
        sizes,
        args.runs,
        reuse_any_digest=args.reuse_any_digest,
        verify_all_max=args.verify_all_max,
        given=given,
        commands=commands,
    )
    if given or args.rows:
        print(table(sizes, medians, manifests, (*commands, ROLLUP)))
        print(json.dumps({"medians": medians, "load": [before, os.getloadavg()[0]]}))
        return
    text = report(sizes, args.runs, medians, manifests, load=(before, os.getloadavg()[0]))
    if not args.no_doc:
        write_section("scale", text)
    print(text)


if __name__ == "__main__":
    main()
