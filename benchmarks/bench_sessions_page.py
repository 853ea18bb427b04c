"""The sessions page and the cost totals over catalogues of 1k and 10k sessions, as ratios to 1k.

``trails sessions`` reads only the catalogue graph: its first page (20, newest
first) is the ``sessions`` pack query limited inside its subquery. This
benchmark writes catalogues alone (no session graphs: the page never reads
them), on disk, in two layouts of start times:

- ``whole seconds``: ten sessions start in each second, their starts stored to the
  whole second (how ties arise when many writers record at once): the page's
  ``ORDER BY DESC(?started) ?entry`` compares entry IRIs on every tie;
- ``sub-second``: the same sessions with the microseconds the sealer records.

Each figure is the median of ``--rounds`` runs of the page through trails' path
(``paged`` + the pack query's parse, typed binding and evaluation) on a store
opened once per size. Usage:
``python benchmarks/bench_sessions_page.py [--sizes 1000,10000] [--rounds 7] [--no-doc]``
(it writes its section of docs/benchmarks.md unless told not to).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _report import write_section

ROOT = Path(__file__).resolve().parent.parent
PER_SECOND = 10


def build(path: Path, size: int, *, sub_second: bool) -> None:
    """A catalogue of ``size`` started sessions, ``PER_SECOND`` to a second."""
    from trails.catalogue.entries import catalogue_iri, start_quads
    from trails.prov.iri import Minter
    from trails.store.oxigraph import OxigraphStore

    store = OxigraphStore(path)
    minter = Minter()
    catalogue = catalogue_iri(minter)
    origin = datetime(2026, 1, 1, tzinfo=UTC)
    quads = []
    for i in range(size):
        started = origin + timedelta(seconds=i // PER_SECOND)
        if sub_second:
            started += timedelta(microseconds=(i % PER_SECOND) * 100_000 + 7)
        principal = minter.agent(f"did:example:user{i % 50}")
        quads += start_quads(
            minter.session(), principal, started, label=f"s{i}", catalogue=catalogue
        )
    store.write(quads)
    store.close()


def page(path: Path, rounds: int, *, walk: bool) -> float:
    """Median seconds of the first page of ``trails sessions`` on the store at ``path``.

    ``walk``: as ``trails sessions`` reads it (minute by minute from the newest);
    otherwise the pack query alone, which sorts every entry.
    """
    from trails.audit.querypack import get_query, parse_query
    from trails.audit.sessions_page import paged, sessions_page
    from trails.cli.sessions import DEFAULT_LIMIT
    from trails.store.oxigraph import OxigraphStore

    store = OxigraphStore(path)
    try:
        text = paged(get_query("sessions").text, DEFAULT_LIMIT)
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            if walk:
                rows = sessions_page(store, {}, DEFAULT_LIMIT).rows
            else:
                rows = list(parse_query(text, name="sessions").run(store))
            times.append(time.perf_counter() - start)
            assert len(rows) == DEFAULT_LIMIT
        return statistics.median(times)
    finally:
        store.close()


def on_stores(parser: argparse.ArgumentParser, values: list[str], rounds: int) -> int:
    """The page (sorted, and the minute walk) on whole stores, each read from a copy whose
    table files are hard-linked (opening a store takes its lock; the original is not
    touched); ratios to the smallest size."""
    import shutil

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_scale import snapshot

    folders: dict[int, Path] = {}
    for value in values:
        size, sep, folder = value.partition("=")
        path = Path(folder).expanduser() / "store"
        if not sep or not size.strip().isdigit() or not path.is_dir():
            parser.error(f"--store wants SIZE=FOLDER with FOLDER/store, not {value!r}")
        folders[int(size)] = path
    sizes = sorted(folders)
    results: dict[tuple[str, int], float] = {}
    for size in sizes:
        work = Path(tempfile.mkdtemp(prefix="page-", dir=folders[size].parent.parent))
        try:
            copy = snapshot(folders[size], work / "store")
            for layout, walk in (("recorded, sorted", False), ("recorded, minute walk", True)):
                results[layout, size] = page(copy, rounds, walk=walk)
                print(f"{layout:>24} {size:>9,}: {results[layout, size] * 1000:8.1f} ms")
        finally:
            shutil.rmtree(work)
    head = "| page read | " + " | ".join(f"{s:,} sessions" for s in sizes)
    head += " | " + " | ".join(f"{s:,} / {sizes[0]:,}" for s in sizes[1:]) + " |"
    lines = [head, "|" + "---|" * (2 * len(sizes))]
    for layout in ("recorded, sorted", "recorded, minute walk"):
        cells = [f"{results[layout, s] * 1000:.1f} ms" for s in sizes]
        ratios = [f"{results[layout, s] / results[layout, sizes[0]]:.2f}x" for s in sizes[1:]]
        lines.append(f"| {layout} | " + " | ".join(cells + ratios) + " |")
    print("\n".join(lines))
    print(f"load average (1 min) {os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} cores")
    return 0


LAYOUTS = (
    ("whole seconds, sorted", False, False),
    ("sub-second, sorted", True, False),
    ("sub-second, minute walk", True, True),
)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="store sizes, comma separated")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-doc", action="store_true", help="print, do not write the doc")
    parser.add_argument(
        "--store",
        action="append",
        default=[],
        metavar="SIZE=FOLDER",
        help="measure the page on the recorded (or multiplied) store in FOLDER (its store/, "
        "as the scale benchmark caches it) as the SIZE point, instead of a catalogue built "
        "here; repeatable; prints, writes no doc",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.store:
        return on_stores(parser, args.store, args.rounds)
    results: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            for sub in (False, True):
                path = Path(tmp) / f"{size}-{int(sub)}"
                build(path, size, sub_second=sub)
                for layout, sub_second, walk in LAYOUTS:
                    if sub_second != sub:
                        continue
                    results[layout, size] = page(path, args.rounds, walk=walk)
                    print(f"{layout:>24} {size:>7,}: {results[layout, size] * 1000:8.1f} ms")
    head = "| page read | " + " | ".join(f"{s:,} sessions" for s in sizes)
    head += " | " + " | ".join(f"{s:,} / {sizes[0]:,}" for s in sizes[1:]) + " |"
    lines = [head, "|" + "---|" * (1 + 2 * len(sizes) - 1)]
    for layout, _, _ in LAYOUTS:
        cells = [f"{results[layout, s] * 1000:.1f} ms" for s in sizes]
        ratios = [f"{results[layout, s] / results[layout, sizes[0]]:.2f}x" for s in sizes[1:]]
        lines.append(f"| {layout} | " + " | ".join(cells + ratios) + " |")
    table = "\n".join(lines)
    print(table)
    if not args.no_doc:
        write_section(
            "sessions-page",
            "## The sessions page\n\n"
            "`trails sessions`' first page (20, newest first) over catalogues alone, on disk, "
            f"{PER_SECOND} sessions starting in each second (`benchmarks/bench_sessions_page.py "
            f"--sizes {args.sizes}`, median of {args.rounds}). *Sorted*: the `sessions` pack "
            "query alone, which sorts every entry before it keeps 20 (whole-second starts make "
            "each comparison a tie broken by the entry IRI; the sealer stores microseconds). "
            "*Minute walk*: what `trails sessions` and the console run "
            "(`trails.audit.sessions_page`): the catalogue's start days, then their minutes, "
            "from the newest, the pack query run once on the newest minutes not read yet (as "
            "many as the entries the page still wants: each minute holds at least one) until "
            "the page is full. Target: the page flat in the store's size (<= 1.5x). Load average "
            f"(1 min) {os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} cores.\n\n" + table,
        )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main(sys.argv[1:]))
