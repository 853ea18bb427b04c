"""Write throughput of the remote store against the embedded one, in the same run.

A recorded session here is what an agent's bookkeeping costs: a session
start, three capability invocations and the session end, each one event and
one atomic write, recorded by the kernel through ``Context`` and ``invoke``.
The same sessions are recorded, in alternating rounds, into an embedded
on-disk store and through a SPARQL server (a real ``oxigraph serve`` on
loopback, persisting to disk as well). The figure is events per second, and
the ratio remote / embedded. A further line shows the remote store with four
threads writing at once.

Run: ``python benchmarks/bench_remote.py`` (writes the ``remote`` section of
docs/benchmarks.md).
"""

from __future__ import annotations

import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _report import interleaved, write_section

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from servers import OxigraphServer
from trails.kernel import Context, capability, invoke
from trails.prov import Recorder
from trails.store import Store, open_store

INVOCATIONS = 3
EVENTS_PER_SESSION = 2 + INVOCATIONS


@capability(id="bench.echo")
def echo(text: str) -> str:
    return text


def session(recorder: Recorder) -> None:
    with Context.open("did:local:bench", recorder=recorder) as ctx:
        for n in range(INVOCATIONS):
            invoke("bench.echo", {"text": f"call {n}"}, ctx=ctx)


def events_recorded(store: Store) -> int:
    counted: list[int] = []
    recorder = Recorder(store)
    recorder.subscribe(lambda _r, _e: counted.append(1))
    session(recorder)
    return len(counted)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = OxigraphServer(Path(tmp) / "server")
        url = server.start()
        embedded = open_store(Path(tmp) / "embedded")
        remote = open_store(url)
        try:
            assert events_recorded(embedded) == events_recorded(remote) == EVENTS_PER_SESSION
            on_embedded, on_remote = Recorder(embedded), Recorder(remote)
            t_embedded, t_remote = interleaved(
                lambda: session(on_embedded), lambda: session(on_remote), rounds=5, number=40
            )
            threads, per_thread = 4, 40
            start = time.perf_counter()
            with ThreadPoolExecutor(threads) as pool:
                for _ in pool.map(
                    lambda _: [session(on_remote) for _ in range(per_thread)], range(threads)
                ):
                    pass
            t_threads = (time.perf_counter() - start) / (threads * per_thread)
        finally:
            embedded.close()
            remote.close()
            server.stop()
    rate = {
        "embedded": EVENTS_PER_SESSION / t_embedded,
        "remote": EVENTS_PER_SESSION / t_remote,
        "threads": EVENTS_PER_SESSION / t_threads,
    }
    table = "\n".join(
        [
            "## Remote store: write throughput",
            "",
            f"Recorded sessions of {EVENTS_PER_SESSION} events (start, {INVOCATIONS} invocations, "
            "end), one atomic write per event. Embedded: pyoxigraph on disk. Remote: "
            "`SparqlStore` through `oxigraph serve` on loopback (on disk), one SPARQL Update "
            "request per event. Median of 5 alternating rounds of 40 sessions.",
            "",
            "| store | events/s | ms per session | ratio to embedded |",
            "|---|---:|---:|---:|",
            f"| embedded (baseline) | {rate['embedded']:,.0f} | {t_embedded * 1000:.2f} | 1.00 |",
            f"| remote, one writer | {rate['remote']:,.0f} | {t_remote * 1000:.2f} | "
            f"{rate['remote'] / rate['embedded']:.2f} |",
            f"| remote, {threads} threads | {rate['threads']:,.0f} | {t_threads * 1000:.2f} | "
            f"{rate['threads'] / rate['embedded']:.2f} |",
            "",
            "Each remote event costs one HTTP round trip on a pooled connection. Threads share "
            "this machine's cores with the server, so they show that concurrent writers are "
            "served, not that they add throughput here; several processes or machines (what "
            "the remote store is for) each bring their own client work.",
        ]
    )
    write_section("remote", table)
    print(table)


if __name__ == "__main__":
    main()
