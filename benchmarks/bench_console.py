"""The web console's pages at 1k and 10k sessions (and a larger store), as ratios to the smallest.

Each size is a store of real recorded sessions (``_scale_store``: ReAct runs over a
scripted model, sealed, with a catalogue entry each), copied (table files
hard-linked, so the cached original is never written: the search index is a file
beside the store) and served the way ``trails serve`` serves it: ``create_app``
over the copy's folder (one worker process holds it) with the console mounted,
driven in-process through ``httpx.ASGITransport`` by a logged-in browser's
requests. Timed, each the median of ``--rounds``:

- the sessions page (the first 25, newest first, and every session's totals);
- one session's page (timeline, provenance graph, I/O, seal verification), the
  session in the middle of the store;
- a search for a word recorded in every session (the newest 50 hits of many), for
  a rare word (in a few sessions of every thousand) and for a word recorded
  nowhere, each with the index's catch-up with the store first;
- once: the first search, which builds the search index of the whole store (or,
  when the copy came with an index file, catches it up).

Before timing, each copy is brought up to date by ``trails.catalogue.totals.rollup``
(as the sealer's ``keep_up`` does at a session end when a day is over: days totalled
before session counts were kept are given theirs).

Usage: ``python benchmarks/bench_console.py [--sizes 1000,10000] [--store [SIZE=]PATH]...
[--rounds 5] [--no-doc]``: ``--store`` adds a store of any size (a folder; its
sessions counted from its catalogue unless ``SIZE=`` says). It writes its section of
docs/benchmarks.md unless told not to.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from urllib.parse import quote

import _scale_store
from _report import write_section

ROOT = Path(__file__).resolve().parent.parent
FILE = "trails-search.sqlite"  # the index's file beside a store (trails.audit.search)
TOKEN = "bench-console-token-0123456789abcdef"
COMMON = "action"
RARE = "among"
NOWHERE = "zqxjv-never-recorded"


def _rollup(path: Path) -> float:
    """Seconds of a catalogue rollup of the copy at ``path``."""
    from trails.catalogue.totals import rollup
    from trails.store import open_store

    store = open_store(path, create=False)
    try:
        start = time.perf_counter()
        rollup(store)
        return time.perf_counter() - start
    finally:
        store.close()


def _listing(path: Path, rounds: int) -> float:
    """Median seconds of the store's graph list, which the evaluator makes once a second."""
    from trails.store import open_store

    store = open_store(path, create=False)
    try:
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            store.graphs()
            times.append(time.perf_counter() - start)
        return statistics.median(times)
    finally:
        store.close()


def _count(path: Path) -> int:
    """How many sessions the store at ``path`` holds (its catalogue entries)."""
    from trails.store import Solutions, open_store

    store = open_store(path, create=False)
    try:
        found = store.query(
            "PREFIX trails: <https://w3id.org/trails/ns#> SELECT (COUNT(?e) AS ?n) "
            "WHERE { GRAPH ?c { ?e a trails:SessionSummary } }"
        )
        assert isinstance(found, Solutions)
        return int(str(found.rows[0][0]))
    finally:
        store.close()


async def _measure(
    paths: list[Path], rounds: int, only: set[str] | None = None
) -> list[dict[str, float]]:
    """Every page's median time on each store; the stores are served side by side and each
    round asks every store in turn, so a busy machine weighs on every size alike."""
    import httpx

    from trails.server import EndpointConfig, create_app
    from trails.server.auth import load_tokens, token_entry
    from trails.store import Solutions

    tokens = load_tokens(tomllib.loads(token_entry(TOKEN, "did:example:auditor", ["*"])))
    endpoints = [
        create_app(
            str(path), tokens, EndpointConfig(processes=1, time_limit=900), access_log="memory:"
        )
        for path in paths
    ]
    async with contextlib.AsyncExitStack() as stack:
        clients: list[httpx.AsyncClient] = []
        middles: list[str] = []
        for endpoint in endpoints:
            await endpoint.start()
            stack.push_async_callback(asyncio.to_thread, endpoint.close)
            sessions = endpoint.console.system.query(
                "PREFIX trails: <https://w3id.org/trails/ns#> "
                "SELECT ?s WHERE { GRAPH ?c { ?e trails:summaryOf ?s ; trails:sealed true } } "
                "ORDER BY ?s"
            )
            assert isinstance(sessions, Solutions)
            middles.append(str(sessions.rows[len(sessions.rows) // 2][0]))
            transport = httpx.ASGITransport(app=endpoint.app)
            client = await stack.enter_async_context(
                httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=None)
            )
            login = await client.post("/console/login", data={"token": TOKEN})
            assert login.status_code == 303, login.text
            clients.append(client)
        out: list[dict[str, float]] = [{} for _ in paths]
        searched = only is None or any(name.startswith("search") for name in only)
        for index, client in enumerate(clients if searched else []):
            start = time.perf_counter()
            built = await client.get(f"/console/search?q={COMMON}")
            assert built.status_code == 200, built.text[-500:]
            out[index]["search index built (the first search, once)"] = time.perf_counter() - start
        pages = {
            "sessions page": lambda i: "/console/",
            "session page": lambda i: "/console/session?s=" + quote(middles[i], safe=""),
            "search, 50 hits": lambda i: f"/console/search?q={COMMON}",
            "search, rare word": lambda i: f"/console/search?q={RARE}",
            "search, no hit": lambda i: f"/console/search?q={NOWHERE}",
        }
        for name, url in pages.items():
            if only is not None and name not in only:
                continue
            times: list[list[float]] = [[] for _ in paths]
            for index, client in enumerate(clients):
                first = await client.get(url(index))  # warm: templates, caches
                assert first.status_code == 200, (url(index), first.text[-500:])
            for _ in range(rounds):
                for index, client in enumerate(clients):
                    start = time.perf_counter()
                    response = await client.get(url(index))
                    times[index].append(time.perf_counter() - start)
                    assert response.status_code == 200
            for index in range(len(paths)):
                out[index][name] = statistics.median(times[index])
        return out


def main(argv: list[str] | None = None) -> int:
    """Measure and print (and write the docs section)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument(
        "--store", action="append", default=[], help="a larger store to add: [SIZE=]PATH"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-doc", action="store_true")
    parser.add_argument(
        "--pages",
        default=None,
        help="measure only these pages, comma-separated (e.g. 'sessions page,session page'; "
        "no search page: the index is not built); implies --no-doc",
    )
    args = parser.parse_args(argv)
    only = None if args.pages is None else {p.strip() for p in args.pages.split(",")}
    from bench_scale import snapshot

    stores: list[tuple[int | None, Path]] = [
        (int(s), _scale_store.cached_store(int(s), reuse_any_digest=True)[0])
        for s in args.sizes.split(",")
    ]
    for given in args.store:
        size, _, where = given.rpartition("=") if "=" in given else ("", "", given)
        stores.append((int(size) if size else None, Path(where).expanduser()))
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-console-") as scratch:
        # copies, so the originals are never written (the index is a file beside the store)
        paths = [
            snapshot(original, Path(scratch) / f"store-{n}")
            for n, (_, original) in enumerate(stores)
        ]
        sizes = [
            size if size is not None else _count(path)
            for (size, _), path in zip(stores, paths, strict=True)
        ]
        indexed = [size for size, path in zip(sizes, paths, strict=True) if (path / FILE).exists()]
        for size, path in zip(sizes, paths, strict=True):
            print(size, f"rollup {_rollup(path):.1f} s", flush=True)
        measured = asyncio.run(_measure(paths, args.rounds, only))
        for size, path, figures in zip(sizes, paths, measured, strict=True):
            figures["(the store's graph list, off the request path)"] = _listing(path, args.rounds)
            results[size] = figures
            print(size, {k: f"{v * 1000:.1f} ms" for k, v in figures.items()}, flush=True)
    base = sizes[0]
    names = list(results[base])
    head = "| page | " + " | ".join(f"{s:,} sessions" for s in sizes) + " | ratio |"
    lines = [
        "## The web console: page times as the store grows (`benchmarks/bench_console.py`)",
        "",
        "Stores of real recorded sessions (`_scale_store`), served by `create_app` as "
        "`trails serve` serves them (one worker process holds the store) and read by a "
        "logged-in `*` token; the median of "
        f"{args.rounds} requests each, after one to warm up, the stores served side by side "
        "and asked in turn each round (a busy machine weighs on every size alike). The ratio is the largest store's "
        f"time over the {base:,}-session store's. What each page reads: the sessions page, the "
        "catalogue's start days from the newest and the entries of the newest one or two "
        "(the minute walk of `trails sessions`), and every session's totals from the "
        "catalogue's daily totals (one row per model) with the count of sessions from the "
        "daily counts kept with them (the days not totalled, today's, and the sessions "
        "that have not ended, their summaries typed open; today's figures kept "
        "by the console between pages: each page reads today's entries and their ends, "
        "and the figures only of the sessions that ended since the page before); a "
        "session's page, the report's data (one session's graphs, its seal; `batches` read "
        "from the session outward) and the grant checked for that graph alone (a `*` token's "
        "queries no longer wait for a list of the store's graphs); search, the SQLite FTS5 "
        "index beside the store (`trails.audit.search`), brought up to date with the store "
        "before each search (the end days since the last one, erasure and retention "
        "receipts), a word's beginning expanded to the index's own words that begin so "
        "(its word list) and FTS5 reading the rows newest first up to the page's 50. "
        "Building the index (the first search on a store) reads every session "
        "once. Each copy had a catalogue rollup first (days totalled before session counts "
        "were kept get theirs, summaries without an end written before the open type get "
        "it). A larger store is added "
        "as a column with `--store [SIZE=]PATH`."
        + (
            " The copies of "
            + ", ".join(f"{s:,}" for s in indexed)
            + " sessions came with an index file: their first search only caught it up."
            if indexed
            else ""
        ),
        "",
        head,
        "|---" * (len(sizes) + 2) + "|",
    ]
    for name in names:
        cells = " | ".join(f"{results[s][name] * 1000:.0f} ms" for s in sizes)
        ratio = results[sizes[-1]][name] / results[base][name]
        lines.append(f"| {name} | {cells} | {ratio:.2f}x |")
    pages = [p for p in ("sessions page", "session page") if p in results[base]]
    worst = max((results[sizes[-1]][p] / results[base][p] for p in pages), default=0.0)
    verdict = "met" if worst <= 1.5 else "MISSED"
    lines += [
        "",
        f"Target: the sessions page and a session's page flat (<= 1.5x): {verdict} "
        f"(worst {worst:.2f}x). Load average (1 min) {os.getloadavg()[0]:.1f} at the end, "
        f"on {os.cpu_count()} cores.",
        "",
        "Command: `python benchmarks/bench_console.py --sizes "
        + args.sizes
        + f" --rounds {args.rounds}"
        + "".join(
            " --store " + (s.rpartition("=")[0] + "=" if "=" in s else "") + "PATH"
            for s in args.store
        )
        + "`.",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_doc and only is None:
        write_section("console", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
