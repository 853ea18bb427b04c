"""Queries per second of ``trails serve`` against ``oxigraph serve`` on the same data.

Both servers run as their own processes on loopback, each over its own copy of
the same on-disk data (recorded trails sessions), in the same run; one client
alternates between them (``interleaved``) so both see the same machine noise.
The trails endpoint does more per query than Oxigraph's server: it checks the
bearer token, lists the graphs the token may read, evaluates in a worker
process over exactly that dataset, counts the results and writes the request
to the access log before answering. The ratio says what that costs.

Run: ``python benchmarks/bench_endpoint.py`` (writes its section of docs/benchmarks.md).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import interleaved, write_section

from trails.audit.endpoint_auth import token_entry
from trails.prov import PROV, Recorder, SessionEnded, SessionStarted, T
from trails.store import open_store

SESSIONS = 300
TOKEN = "bench-token-0123456789abcdef0123456789"
QUERY = (
    f"SELECT ?s ?started WHERE {{ GRAPH ?g {{ ?s a {T.Session.n3()} ; "
    f"{PROV.startedAtTime.n3()} ?started }} }} ORDER BY DESC(?started) LIMIT 10"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, process: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        if process.poll() is not None:
            raise RuntimeError(f"{url} exited: {process.communicate()[1].decode()[-2000:]}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not start")


def make_data(folder: Path) -> bytes:
    store = open_store(folder / "trails")
    recorder = Recorder(store)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for n in range(SESSIONS):
        s = recorder.minter.session(f"bench-{n}")
        recorder.record(
            SessionStarted(
                session=s, principal=f"did:example:p{n % 7}", started=start + timedelta(minutes=n)
            )
        )
        recorder.record(SessionEnded(session=s, ended=start + timedelta(minutes=n, seconds=30)))
    data = store.dump(format="nquads")
    store.close()
    assert data is not None
    return data


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = make_data(folder)
        (folder / "data.nq").write_bytes(data)
        subprocess.run(
            [
                "oxigraph",
                "load",
                "--location",
                str(folder / "oxigraph"),
                "--file",
                str(folder / "data.nq"),
            ],
            check=True,
            capture_output=True,
        )
        tokens = folder / "tokens.toml"
        tokens.write_text(token_entry(TOKEN, "did:example:bench", ["*"]))
        ox_port, tr_port = free_port(), free_port()
        oxigraph = subprocess.Popen(
            [
                "oxigraph",
                "serve",
                "--location",
                str(folder / "oxigraph"),
                "--bind",
                f"127.0.0.1:{ox_port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        trails = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "trails.cli",
                "--store",
                str(folder / "trails"),
                "serve",
                "--port",
                str(tr_port),
                "--tokens",
                str(tokens),
                "--threads",
                "4",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "TRAILS_STORE": "memory:"},
        )
        try:
            ox_url, tr_url = (
                f"http://127.0.0.1:{ox_port}/query",
                f"http://127.0.0.1:{tr_port}/sparql",
            )
            wait_up(ox_url, oxigraph)
            wait_up(tr_url, trails)
            accept = {"Accept": "application/sparql-results+json"}
            with httpx.Client(timeout=60) as ox, httpx.Client(timeout=60) as tr:
                auth = {**accept, "Authorization": f"Bearer {TOKEN}"}

                def ask_ox() -> None:
                    r = ox.get(ox_url, params={"query": QUERY}, headers=accept)
                    assert r.status_code == 200 and len(r.json()["results"]["bindings"]) == 10

                def ask_tr() -> None:
                    r = tr.get(tr_url, params={"query": QUERY}, headers=auth)
                    assert r.status_code == 200 and len(r.json()["results"]["bindings"]) == 10

                for _ in range(20):  # warm both
                    ask_ox()
                    ask_tr()
                t_tr, t_ox = interleaved(ask_tr, ask_ox, rounds=5, number=100)

                def concurrent(fn: object, total: int = 400, clients: int = 8) -> float:
                    start = time.perf_counter()
                    with ThreadPoolExecutor(clients) as pool:
                        list(pool.map(lambda _: fn(), range(total)))  # type: ignore[operator]
                    return total / (time.perf_counter() - start)

                c_tr = concurrent(ask_tr)
                c_ox = concurrent(ask_ox)
        finally:
            for process in (trails, oxigraph):
                process.terminate()
                process.wait(timeout=30)
    q_tr, q_ox = 1 / t_tr, 1 / t_ox
    text = f"""## SPARQL endpoint: `trails serve` against `oxigraph serve`

Same data ({SESSIONS} recorded sessions, one named graph each), each server over its
own on-disk copy, same machine, same run; one keep-alive HTTP client. The query
lists the ten latest sessions across all graphs (SPARQL JSON). `trails serve` runs
with a `*` token, one worker process with 4 threads, and writes every request to
its access log before answering.

| measure | trails serve | oxigraph serve | ratio (trails / oxigraph) |
| --- | ---: | ---: | ---: |
| one client, queries per second (median of 5 interleaved rounds of 100) | {q_tr:.0f} | {q_ox:.0f} | {q_tr / q_ox:.2f} |
| 8 parallel clients, 400 queries, queries per second | {c_tr:.0f} | {c_ox:.0f} | {c_tr / c_ox:.2f} |

Per query, trails adds token check, graph listing, the hop to the worker process,
result counting and an access-log write (an atomic store write) to Oxigraph's own
evaluation: {1000 * (t_tr - t_ox):.2f} ms at one client.
"""
    write_section("endpoint", text)
    print(text)


if __name__ == "__main__":
    main()
