"""The sessions page over catalogues of 1k, 10k (and 100k) sessions at three densities, in CPU.

``trails sessions``, the console's sessions page and the endpoint's
``/queries/sessions?limit=N`` read only the catalogue graph: the newest page is
found by walking its start days, hours, minutes and seconds from the newest
(``trails.audit.sessions_page.walk``). This benchmark writes catalogues alone
(no session graphs: the page never reads them), on disk, with ``start_quads``
as the sealer writes them (bulk loaded, then compacted), at 1, 10 and 100 sessions starting each second, in
two layouts of start times:

- ``sub-second``: the starts ``1/R`` s apart, with the microseconds the sealer records;
- ``ties``: the starts at the whole second, ``R`` to a second (how ties arise when
  many writers record at once): the page's ``ORDER BY DESC(?started) ?entry``
  breaks every tie by the entry IRI.

Each figure is the median CPU time (``time.process_time``: every thread of the
process, so the evaluator's threads too) of ``--rounds`` rounds of ``--number``
first pages (20, or the console's 25), on a store opened once per size:

- ``trails sessions``: ``sessions_page`` (the pack query's rows);
- ``console``: the console's page rows (``console.sessions._walk``, then each shown
  row's goal, answer and duration: ``_with_ends``) through the endpoint's evaluator (``InlineEvaluator``, ``EvaluatorView``), as the console reads;
- ``endpoint``: ``sessions_page_to(..., format="json")`` through the same
  evaluator: what ``GET /queries/sessions?limit=20`` answers.

Usage: ``python benchmarks/bench_sessions_page.py [--sizes 1000,10000,100000]
[--densities 1,10,100] [--rounds 7] [--no-doc]`` (it writes its section of
docs/benchmarks.md unless told not to).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

from _report import write_section

ROOT = Path(__file__).resolve().parent.parent
ORIGIN = datetime(2026, 1, 1, tzinfo=UTC)


def start_of(i: int, per_second: int, *, ties: bool) -> datetime:
    """The start of the ``i``-th session at ``per_second`` sessions a second."""
    if ties:
        return ORIGIN + timedelta(seconds=i // per_second)
    return ORIGIN + timedelta(microseconds=i * 1_000_000 // per_second + 7)


def build(path: Path, size: int, *, per_second: int = 10, ties: bool = False) -> None:
    """A catalogue of ``size`` started sessions, ``per_second`` to a second, bulk loaded and
    compacted."""
    from trails.catalogue.entries import catalogue_iri, start_quads
    from trails.prov.iri import Minter
    from trails.store.oxigraph import OxigraphStore, _convert_quads
    from trails.store.terms import Literal

    store = OxigraphStore(path)
    minter = Minter()
    catalogue = catalogue_iri(minter)
    principals = [minter.agent(f"did:example:user{p}") for p in range(50)]
    quads = []
    for i in range(size):
        quads += start_quads(
            minter.session(),
            principals[i % 50],
            start_of(i, per_second, ties=ties),
            label=f"s{i}",
            catalogue=catalogue,
            principal_id=Literal(f"did:example:user{i % 50}"),
        )
        if len(quads) > 500_000:
            store.raw.bulk_extend(_convert_quads(set(quads)))
            quads = []
    store.raw.bulk_extend(_convert_quads(set(quads)))
    # compacted, as a store written session by session is: a bulk load leaves its tables
    # overlapping, and the store compacts them in threads of the reading process, whose CPU
    # the figures would count (more at 100,000 sessions than at 1,000)
    store.raw.optimize()
    store.close()


def _cpu(fn: Callable[[], object], rounds: int, number: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(number):
            fn()
        times.append((time.process_time() - start) / number)
    return statistics.median(times)


PATHS = ("trails sessions", "console", "endpoint")


def pages(path: Path, rounds: int, number: int) -> dict[str, float]:
    """Median CPU seconds of one first page, by path, on the store at ``path``."""
    from trails.audit.sessions_page import sessions_page, sessions_page_to
    from trails.cli.sessions import DEFAULT_LIMIT
    from trails.server.auth import Grant
    from trails.server.console import sessions as console_sessions
    from trails.server.console.store import EvaluatorView
    from trails.server.pool import InlineEvaluator
    from trails.store.oxigraph import OxigraphStore

    store = OxigraphStore(path)
    evaluator = InlineEvaluator(store, threads=1)
    view = EvaluatorView(evaluator, Grant("urn:trails:bench", ("*",)), None)
    console = SimpleNamespace(system=view)
    size = console_sessions.PAGE_SIZE + 1

    def cli() -> None:
        assert len(sessions_page(store, {}, DEFAULT_LIMIT).rows) == DEFAULT_LIMIT

    def web() -> None:  # the page's rows, then each shown row's goal, answer and duration
        rows = console_sessions._walk(console, {}, size)  # type: ignore[arg-type]
        assert len(rows) == size
        console_sessions._with_ends(console, rows[: size - 1])  # type: ignore[arg-type]

    def endpoint() -> None:
        assert sessions_page_to(view, {}, DEFAULT_LIMIT, format="json").count(b'"session"') > 0

    try:
        return {
            name: _cpu(fn, rounds, number)
            for name, fn in zip(PATHS, (cli, web, endpoint), strict=True)
        }
    finally:
        evaluator.close()
        store.close()


def page(path: Path, rounds: int, *, walk: bool) -> float:
    """Median CPU seconds of the first page of ``trails sessions`` on the store at ``path``:
    ``walk``, as ``trails sessions`` reads it; otherwise the pack query alone (it sorts
    every entry)."""
    from trails.audit.querypack import get_query, parse_query
    from trails.audit.sessions_page import paged, sessions_page
    from trails.cli.sessions import DEFAULT_LIMIT
    from trails.store.oxigraph import OxigraphStore

    store = OxigraphStore(path)
    try:
        text = paged(get_query("sessions").text, DEFAULT_LIMIT)

        def once() -> None:
            if walk:
                rows = sessions_page(store, {}, DEFAULT_LIMIT).rows
            else:
                rows = list(parse_query(text, name="sessions").run(store))
            assert len(rows) == DEFAULT_LIMIT

        return _cpu(once, rounds, 1)
    finally:
        store.close()


def on_stores(parser: argparse.ArgumentParser, values: list[str], rounds: int) -> int:
    """The page (sorted, and the walk) on whole stores, each read from a copy whose
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
            for layout, walk in (("recorded, sorted", False), ("recorded, walk", True)):
                results[layout, size] = page(copy, rounds, walk=walk)
                print(f"{layout:>24} {size:>9,}: {results[layout, size] * 1000:8.1f} ms")
        finally:
            shutil.rmtree(work)
    head = "| page read | " + " | ".join(f"{s:,} sessions" for s in sizes)
    head += " | " + " | ".join(f"{s:,} / {sizes[0]:,}" for s in sizes[1:]) + " |"
    lines = [head, "|" + "---|" * (2 * len(sizes))]
    for layout in ("recorded, sorted", "recorded, walk"):
        cells = [f"{results[layout, s] * 1000:.1f} ms" for s in sizes]
        ratios = [f"{results[layout, s] / results[layout, sizes[0]]:.2f}x" for s in sizes[1:]]
        lines.append(f"| {layout} | " + " | ".join(cells + ratios) + " |")
    print("\n".join(lines))
    print(f"load average (1 min) {os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} cores")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="store sizes, comma separated")
    parser.add_argument(
        "--densities", default="1,10,100", help="sessions a second, comma separated"
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=5, help="pages a round")
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
    densities = [int(d) for d in args.densities.split(",")]
    if args.store:
        return on_stores(parser, args.store, args.rounds)
    layouts = [(d, ties) for d in densities for ties in (False, True)]
    results: dict[tuple[str, int, bool, int], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            for per_second, ties in layouts:
                path = Path(tmp) / f"{size}-{per_second}-{int(ties)}"
                build(path, size, per_second=per_second, ties=ties)
                for name, cpu in pages(path, args.rounds, args.number).items():
                    results[name, per_second, ties, size] = cpu
                    print(
                        f"{name:>16} {per_second:>4}/s {'ties' if ties else 'sub-second':>10} "
                        f"{size:>8,}: {cpu * 1000:7.2f} ms CPU",
                        flush=True,
                    )
    head = "| page | sessions a second | " + " | ".join(f"{s:,}" for s in sizes)
    head += " | " + " | ".join(f"{s:,} / {sizes[0]:,}" for s in sizes[1:]) + " |"
    lines = [head, "|" + "---|" * (2 * len(sizes) + 1)]
    worst = 0.0
    for name in PATHS:
        for per_second, ties in layouts:
            cells = [f"{results[name, per_second, ties, s] * 1000:.2f} ms" for s in sizes]
            base = results[name, per_second, ties, sizes[0]]
            ratios = [results[name, per_second, ties, s] / base for s in sizes[1:]]
            worst = max([worst, *ratios])
            layout = f"{per_second}{', whole-second ties' if ties else ', sub-second'}"
            lines.append(
                f"| {name} | {layout} | " + " | ".join(cells + [f"{r:.2f}x" for r in ratios]) + " |"
            )
    table = "\n".join(lines)
    print(table)
    print(f"worst ratio {worst:.2f}x (target <= 1.5x)")
    if not args.no_doc:
        write_section(
            "sessions-page",
            "## The sessions page\n\n"
            "The first page (20 rows; the console's 26, its 25 and whether more follow) over "
            "catalogues alone, on disk, at 1, 10 and 100 sessions starting each second, "
            "sub-second starts and whole-second ties (`benchmarks/bench_sessions_page.py "
            f"--sizes {args.sizes} --densities {args.densities} --rounds {args.rounds}`): the "
            f"median CPU time of a page (each round {args.number} pages; CPU of every thread "
            "of the process). *trails sessions*: `sessions_page`; *console*: the console's "
            "page rows through the endpoint's evaluator; *endpoint*: `GET /queries/sessions"
            "?limit=20`'s answer through the same evaluator. All three walk the catalogue's "
            "start days, then the newest day's hours, the newest hour's minutes, then the "
            "newest minute's seconds "
            "(`trails:startedInSecond`), and read the entries of the newest second first, "
            "then as many seconds as the rows still wanted need at the rows per second seen: "
            "a dense minute is never read whole. Target: <= 1.5x CPU from the smallest size "
            f"at every density (worst here {worst:.2f}x). Load average (1 min) "
            f"{os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} cores shared with "
            "other work.\n\n" + table,
        )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main(sys.argv[1:]))
