"""The web console's pages at 1k and 10k sessions, as ratios to 1k: sessions page, a session, search.

Each size is a store of real recorded sessions (``_scale_store``: ReAct runs over a
scripted model, sealed, with a catalogue entry each), served the way ``trails serve``
serves it: ``create_app`` over the store's folder (one worker process holds it) with
the console mounted, driven in-process through ``httpx.ASGITransport`` by a
logged-in browser's requests. Timed, each the median of ``--rounds``:

- the sessions page (the first 25, newest first, and the totals of the filter);
- one session's page (timeline, provenance graph, I/O, seal verification), the
  session in the middle of the store;
- a search for a word recorded in every session (stops at the first 50 hits) and
  for a word recorded nowhere (scans every readable literal: the worst case).

Usage: ``python benchmarks/bench_console.py [--sizes 1000,10000] [--rounds 5] [--no-doc]``
(it writes its section of docs/benchmarks.md unless told not to).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import tomllib
from pathlib import Path
from urllib.parse import quote

import _scale_store
from _report import write_section

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "bench-console-token-0123456789abcdef"
COMMON = "action"
NOWHERE = "zqxjv-never-recorded"


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


async def _measure(path: Path, rounds: int) -> dict[str, float]:
    import httpx

    from trails.server import EndpointConfig, create_app
    from trails.server.auth import load_tokens, token_entry
    from trails.store import Solutions

    tokens = load_tokens(tomllib.loads(token_entry(TOKEN, "did:example:auditor", ["*"])))
    endpoint = create_app(
        str(path), tokens, EndpointConfig(processes=1, time_limit=600), access_log="memory:"
    )
    await endpoint.start()
    try:
        sessions = endpoint.console.system.query(
            "PREFIX trails: <https://w3id.org/trails/ns#> "
            "SELECT ?s WHERE { GRAPH ?c { ?e trails:summaryOf ?s ; trails:sealed true } } "
            "ORDER BY ?s"
        )
        assert isinstance(sessions, Solutions)
        middle = str(sessions.rows[len(sessions.rows) // 2][0])
        transport = httpx.ASGITransport(app=endpoint.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            login = await client.post("/console/login", data={"token": TOKEN})
            assert login.status_code == 303, login.text
            pages = {
                "sessions page": "/console/",
                "session page": "/console/session?s=" + quote(middle, safe=""),
                "search, 50 hits": f"/console/search?q={COMMON}",
                "search, no hit": f"/console/search?q={NOWHERE}",
            }
            out: dict[str, float] = {}
            for name, url in pages.items():
                first = await client.get(url)  # warm: templates, caches
                assert first.status_code == 200, (url, first.text[-500:])
                times = []
                for _ in range(rounds):
                    start = time.perf_counter()
                    response = await client.get(url)
                    times.append(time.perf_counter() - start)
                    assert response.status_code == 200
                out[name] = statistics.median(times)
            return out
    finally:
        await asyncio.to_thread(endpoint.close)


def main(argv: list[str] | None = None) -> int:
    """Measure and print (and write the docs section)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, dict[str, float]] = {}
    for size in sizes:
        path, _ = _scale_store.cached_store(size, reuse_any_digest=True)
        results[size] = asyncio.run(_measure(path, args.rounds))
        results[size]["(the store's graph list)"] = _listing(path, args.rounds)
        print(size, {k: f"{v * 1000:.1f} ms" for k, v in results[size].items()}, flush=True)
    base = sizes[0]
    names = list(results[base])
    head = "| page | " + " | ".join(f"{s:,} sessions" for s in sizes) + " | ratio |"
    lines = [
        "## The web console: page times as the store grows (`benchmarks/bench_console.py`)",
        "",
        "Stores of real recorded sessions (`_scale_store`), served by `create_app` as "
        "`trails serve` serves them (one worker process holds the store) and read by a "
        "logged-in `*` token; the median of "
        f"{args.rounds} requests each, after one to warm up. The ratio is the largest store's "
        f"time over the {base:,}-session store's. What each page reads: the sessions page, the "
        "newest 25 catalogue entries and the totals of the filter (every matching entry's "
        "cost and tokens: linear in the sessions); a session's page, the report's data "
        "(`report_data`: one session's graphs, its seal, and pack queries such as `batches` "
        "that read every graph), plus the endpoint's graph list, relisted once a second; "
        "search, the content of the newest 1,000 sessions (no index, so erased content is "
        "never found).",
        "",
        head,
        "|---" * (len(sizes) + 2) + "|",
    ]
    for name in names:
        cells = " | ".join(f"{results[s][name] * 1000:.0f} ms" for s in sizes)
        ratio = results[sizes[-1]][name] / results[base][name]
        lines.append(f"| {name} | {cells} | {ratio:.2f}x |")
    pages = ("sessions page", "session page")
    worst = max(results[sizes[-1]][p] / results[base][p] for p in pages)
    verdict = "met" if worst <= 1.5 else "MISSED"
    lines += [
        "",
        f"Target: the sessions page and a session's page flat (<= 1.5x): {verdict} "
        f"(worst {worst:.2f}x). Load average (1 min) {os.getloadavg()[0]:.1f} at the end, "
        f"on {os.cpu_count()} cores.",
        "",
        f"Command: `python benchmarks/bench_console.py --sizes {args.sizes}`.",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_doc:
        write_section("console", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
