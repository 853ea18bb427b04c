"""Whole-store exports at scale: linear time and flat memory in every format, against a raw dump.

``trails export --all`` over stores of 1k, 2k, 4k and 8k sessions (``_scale_store`` for
the recorded sample, ``_multiply_store`` for the larger ones, both cached), in every
format (``trig``, ``nquads``, ``jsonld``, ``provn``, ``provjson``), as an evidence
bundle (``--bundle``) and the check of that bundle (``verify-bundle``: ``verify_bundle``
of a bundle written by another process), each measured in a process of its own: its CPU seconds
(``resource.getrusage``, user + system: the machine's other load does not count) and
its peak resident memory (``ru_maxrss``, the store's own caches included). The baseline,
in the same run, is the store's own serialiser: ``pyoxigraph.Store.dump`` of the whole
dataset in N-Quads and in TriG, written to a file as the exports are. A bundle does more
than serialise: it recomputes the pack's answers over a store of its own graphs (and its
check does again, from the archive). The store's own share of that work is the third
baseline, ``dump-and-reload``: the dump in N-Quads, pyoxigraph's bulk loader filling a new
store on disk from it as the bundle fills its scratch store (the same batches), one query
over every graph of that store, then three index look-ups a graph (its triples by
predicate, the triples naming it as subject and as object, in any graph); its peak memory
is what the store itself takes to read one store, fill another of the same size and read
it by index as the bundle's catalogue and answers do.

Targets (issue 44.3): each doubling of sessions <= 2.2x CPU in every format;
N-Quads >= 0.5x and TriG >= 0.3x of the raw dump's throughput (dump CPU / export CPU);
peak memory flat in the store's size (largest / smallest <= 1.5x); for a bundle and its
check, which fill and read a second store, their growth over ``dump-and-reload``'s.

Usage: ``python benchmarks/bench_export_scale.py [--sizes 1000,2000,4000,8000]
[--formats ...] [--no-doc] [--check]``. With ``--check`` (what CI runs, at small sizes)
it exits 1 when a figure misses its target by more than the machine's noise
(``NOISE``): a regression fails the benchmark, never a unit test.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import write_section

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ("nquads", "trig", "jsonld", "provn", "provjson", "bundle", "verify-bundle")
BASELINES = ("dump-nquads", "dump-trig", "dump-and-reload")
GROWTH = 2.2  # per doubling of sessions
THROUGHPUT = {"nquads": 0.5, "trig": 0.3}  # of the raw dump in the same format
MEMORY = 1.5  # peak RSS, largest store over smallest
RELOAD = "dump-and-reload"
SECOND_STORE = ("bundle", "verify-bundle")
"""What fills and reads a second store of the bundle's graphs: their memory's growth is
counted over the growth of the store's own work of that kind (``RELOAD``) in the same run."""
NOISE = 1.25  # how far past a target a shared machine's noise can push a figure


def one(path: Path, what: str) -> dict[str, float]:
    """CPU seconds and peak RSS (MiB) of one export of every graph (run in its own process)."""
    from trails.audit.bundle import write_bundle
    from trails.audit.export import export, select_graphs
    from trails.store.oxigraph import OxigraphStore

    if what == "verify-bundle":
        return _verify(path)
    store = OxigraphStore(path, create=False)
    try:
        with tempfile.TemporaryDirectory() as folder:
            target = Path(folder) / "out"
            before = resource.getrusage(resource.RUSAGE_SELF)
            start = before.ru_utime + before.ru_stime
            if what == "dump-and-reload":
                _dump_and_reload(store, target)
            elif what.startswith("dump-"):
                with target.open("wb") as fh:
                    store.dump(fh, format=what.removeprefix("dump-"))
            elif what == "bundle":
                write_bundle(store, target, select_graphs(store, all_graphs=True))
            else:
                with target.open("wb") as fh:
                    export(store, fh, select_graphs(store, all_graphs=True), format=what)
            after = resource.getrusage(resource.RUSAGE_SELF)
            size = target.stat().st_size
    finally:
        store.close()
    return {
        "cpu": after.ru_utime + after.ru_stime - start,
        "rss_mib": after.ru_maxrss / 1024,
        "bytes": size,
    }


def _dump_and_reload(store: object, target: Path) -> None:
    """The store's own work in a bundle: dump, load into a new store on disk (pyoxigraph's
    bulk loader, ``BATCH`` quads at a time, as ``trails.store.scratch`` loads), and read
    it as the bundle does: every graph in one pass, then each graph by index (what the
    graph holds, what names it, what its session's type is elsewhere)."""
    import itertools

    import pyoxigraph as ox

    from trails.store.scratch import BATCH

    with target.open("wb") as fh:
        store.dump(fh, format="nquads")  # type: ignore[attr-defined]
    copy = ox.Store(str(target.with_suffix(".store")))
    quads = ox.parse(path=str(target), format=ox.RdfFormat.N_QUADS)
    for first in quads:
        copy.bulk_extend(itertools.chain((first,), itertools.islice(quads, BATCH - 1)))
    counted = copy.query("SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g")
    graphs = [row["g"] for row in counted]  # type: ignore[index]
    for g in graphs:  # by index: the graph's triples, its own subject and object elsewhere
        for sparql in _BY_INDEX:
            for _ in copy.query(sparql, substitutions={ox.Variable("g"): g}):  # type: ignore[union-attr]
                pass
    assert graphs
    del copy


_BY_INDEX = (
    "SELECT ?p (COUNT(*) AS ?n) ?g WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?p ?g",
    "SELECT ?p ?o ?x ?g WHERE { GRAPH ?x { ?g ?p ?o } }",
    "SELECT ?s ?p ?x ?g WHERE { GRAPH ?x { ?s ?p ?g } }",
)


def _verify(path: Path) -> dict[str, float]:
    """``trails verify --bundle`` of the whole store's bundle, written by a process of its own."""
    from trails.audit.bundle import verify_bundle

    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "bundle.zip"
        subprocess.run(
            [sys.executable, __file__, "--write-bundle", str(path), str(target)], check=True
        )
        before = resource.getrusage(resource.RUSAGE_SELF)
        report = verify_bundle(target)
        after = resource.getrusage(resource.RUSAGE_SELF)
        if not report.ok:
            raise SystemExit(f"the bundle of {path} does not verify: {report.findings[:3]}")
        size = target.stat().st_size
    return {
        "cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
        "rss_mib": after.ru_maxrss / 1024,
        "bytes": size,
    }


def measure(path: Path, what: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--one", str(path), what],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"{what} on {path} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def store_of(size: int) -> Path:
    import _multiply_store
    from _scale_store import cached_store

    sample = min(size, 1000)
    if size <= sample:
        return cached_store(size, reuse_any_digest=True)[0]
    cached_store(sample, reuse_any_digest=True)
    return _multiply_store.cached_multiplied(size, sample=sample)[0]


def problems(sizes: list[int], fig: dict[int, dict[str, dict[str, float]]]) -> list[str]:
    """Each figure past its target by more than ``NOISE``."""
    out = []
    formats = [f for f in fig[sizes[0]] if f not in BASELINES]
    for a, b in itertools.pairwise(sizes):
        allowed = GROWTH ** math.log2(b / a)  # 2.2x per doubling
        for f in formats:
            growth = fig[b][f]["cpu"] / max(fig[a][f]["cpu"], 1e-9)
            if growth > allowed * NOISE:
                out.append(
                    f"{f}: {growth:.2f}x from {a:,} to {b:,} sessions (target {allowed:.2f}x)"
                )
    for size in sizes:
        for f, target in THROUGHPUT.items():
            if f in fig[size]:
                ratio = fig[size][f"dump-{f}"]["cpu"] / max(fig[size][f]["cpu"], 1e-9)
                if ratio * NOISE < target:
                    out.append(f"{f}: {ratio:.2f}x of the raw dump at {size:,} (target {target}x)")
    for f in formats:
        grown = fig[sizes[-1]][f]["rss_mib"] / fig[sizes[0]][f]["rss_mib"]
        if f in SECOND_STORE and RELOAD in fig[sizes[0]]:  # over the store's own growth
            grown /= fig[sizes[-1]][RELOAD]["rss_mib"] / fig[sizes[0]][RELOAD]["rss_mib"]
        if len(sizes) > 1 and grown > MEMORY * NOISE:
            out.append(f"{f}: peak memory {grown:.2f}x from {sizes[0]:,} to {sizes[-1]:,}")
    return out


def per_doubling(before: float, after: float, scale: float) -> float:
    """The growth from ``before`` to ``after`` brought to one doubling of sessions, for
    sizes ``scale`` times apart (4,000 to 10,000: 2.5 times, 1.32 doublings)."""
    return (after / max(before, 1e-9)) ** (1 / math.log2(scale))


def table(sizes: list[int], fig: dict[int, dict[str, dict[str, float]]]) -> str:
    formats = [f for f in fig[sizes[0]] if f not in BASELINES]
    head = "| format | " + " | ".join(f"{s:,}" for s in sizes) + " | each doubling | peak RSS |"
    lines = [head, "|---" * (len(sizes) + 3) + "|"]
    for f in [*BASELINES, *formats]:
        cpu = [fig[s][f]["cpu"] for s in sizes]
        growth = ", ".join(
            f"{per_doubling(fig[a][f]['cpu'], fig[b][f]['cpu'], b / a):.2f}x"
            for a, b in itertools.pairwise(sizes)
        )
        rss = " → ".join(f"{fig[s][f]['rss_mib']:.0f}" for s in (sizes[0], sizes[-1]))
        cells = " | ".join(f"{c:.2f} s" for c in cpu)
        lines.append(f"| {f} | {cells} | {growth or '-'} | {rss} MiB |")
    lines.append("")
    lines.append("| throughput of the raw dump | " + " | ".join(f"{s:,}" for s in sizes) + " |")
    lines.append("|---" * (len(sizes) + 1) + "|")
    for f in THROUGHPUT:
        if f in formats:
            cells = " | ".join(
                f"{fig[s][f'dump-{f}']['cpu'] / max(fig[s][f]['cpu'], 1e-9):.2f}x" for s in sizes
            )
            lines.append(f"| {f} (target {THROUGHPUT[f]}x) | {cells} |")
    return "\n".join(lines)


def section(sizes: str, fig: dict[int, dict[str, dict[str, float]]], seconds: float) -> str:
    """The section of docs/benchmarks.md for these figures."""
    measured = sorted(fig)
    return (
        "## Whole-store exports at scale\n\n"
        "CPU seconds of `trails export --all` in each format and of `--bundle` "
        "(every graph but the register of open sessions), each in a process of its own, "
        "against the store's own serialiser (`pyoxigraph.Store.dump` of the whole "
        "dataset) in the same run, and the peak resident memory of the smallest and the "
        "largest store (`benchmarks/bench_export_scale.py "
        f"--sizes {sizes}`; {seconds:.0f} s). Stores: "
        "`_scale_store` (1,000 recorded sessions) multiplied by `_multiply_store`. "
        f"Targets: each doubling <= {GROWTH}x, N-Quads >= {THROUGHPUT['nquads']}x and "
        f"TriG >= {THROUGHPUT['trig']}x of the raw dump, peak memory flat "
        f"(<= {MEMORY}x). On {os.cpu_count()} shared cores.\n\n" + table(measured, fig)
    )


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        print(json.dumps(one(Path(argv[1]), argv[2])))
        return 0
    if argv[:1] == ["--write-bundle"]:  # for verify-bundle: the bundle it checks
        from trails.audit.bundle import write_bundle
        from trails.audit.export import select_graphs
        from trails.store.oxigraph import OxigraphStore

        with OxigraphStore(Path(argv[1]), create=False) as store:
            write_bundle(store, Path(argv[2]), select_graphs(store, all_graphs=True))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2000,4000,8000", help="sessions, comma separated")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--no-doc", action="store_true", help="print, do not write the doc")
    parser.add_argument("--check", action="store_true", help="exit 1 on a regression")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    formats = [f for f in args.formats.split(",") if f]
    paths = {size: store_of(size) for size in sizes}
    fig: dict[int, dict[str, dict[str, float]]] = {}
    started = time.monotonic()
    for size in sizes:
        fig[size] = {}
        for what in [*BASELINES, *formats]:
            fig[size][what] = measure(paths[size], what)
            print(size, what, fig[size][what], flush=True)
    text = table(sizes, fig)
    print(text)
    found = problems(sizes, fig)
    for line in found:
        print("REGRESSION:", line, file=sys.stderr)
    if not args.no_doc:
        write_section("export-scale", section(args.sizes, fig, time.monotonic() - started))
    return 1 if args.check and found else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    raise SystemExit(main(sys.argv[1:]))
