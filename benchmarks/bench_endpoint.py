"""Queries per second of ``trails serve`` against ``oxigraph serve`` on the same data.

Both servers run as their own processes on loopback, each over its own copy of
the same on-disk data (recorded trails sessions, one named graph each), in the
same run; one client alternates between them (``interleaved``) so both see the
same machine noise. Two store sizes (300 and 3,000 sessions) and two tokens:

- ``*``: may read every graph. trails evaluates it with no dataset restriction
  and the union default graph; Oxigraph gets the same query as is (or with
  ``union-default-graph`` for a query over the default graph).
- a pattern token matching one session graph in 600 (five at 3,000): trails
  evaluates it over exactly those graphs; Oxigraph gets the same query with
  those graphs as ``named-graph-uri``, the same dataset.

The trails endpoint does more per query than Oxigraph's server: it checks the
bearer token, resolves the graphs the token may read (from a graph list cached
for a second), evaluates in a worker process, counts the results and writes the
request to the access log (its own store, in the server process) before
answering. The ratio says what that costs.

A second measure (``memory``) is the worker's memory on an answer far larger
than ``max_result_bytes``: the peak RSS of the worker process (``VmHWM``) when
the limit is set high enough for the whole answer (what building the answer
before checking the limit cost) against the default-like limit, where the
store stops serialising at the limit and the client gets the documented 400.

A third (``cpu``) splits the CPU one query costs: the trails server's
event-loop thread, its other threads (the access-log writer), the worker, and
Oxigraph's server for the same query.

Run: ``python benchmarks/bench_endpoint.py [qps] [memory] [cpu] [sizes=1000,10000]``
(qps and memory by default, at 300 and 3,000 sessions unless ``sizes=`` says;
each writes its section of docs/benchmarks.md).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import interleaved, write_section

from trails.prov import PROV, Recorder, SessionEnded, SessionStarted, T
from trails.server.auth import token_entry
from trails.store import open_store

SIZES = (300, 3000)
ALL_TOKEN = "bench-token-0123456789abcdef0123456789"
TEAM_TOKEN = "bench-team-0123456789abcdef0123456789"
TEAM_EVERY = 600  # every 600th session belongs to the team: five graphs at 3,000
LATEST = (
    f"SELECT ?s ?started WHERE {{ GRAPH ?g {{ ?s a {T.Session.n3()} ; "
    f"{PROV.startedAtTime.n3()} ?started }} }} ORDER BY DESC(?started) LIMIT 10"
)
# Over the default graph (the union of the readable graphs): no GRAPH clause.
COUNT = f"SELECT (COUNT(?s) AS ?n) WHERE {{ ?s a {T.Session.n3()} }}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, process: subprocess.Popen[bytes]) -> None:
    for _ in range(1200):
        if process.poll() is not None:
            raise RuntimeError(f"{url} exited: {process.communicate()[1].decode()[-2000:]}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not start")


def session_name(n: int) -> str:
    return f"team-{n}" if n % TEAM_EVERY == 0 else f"bench-{n}"


def make_data(folder: Path, sessions: int) -> tuple[bytes, list[str]]:
    store = open_store(folder / "trails")
    recorder = Recorder(store)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    team = []
    for n in range(sessions):
        s = recorder.minter.session(session_name(n))
        if n % TEAM_EVERY == 0:
            team.append(str(s))
        recorder.record(
            SessionStarted(
                session=s, principal=f"did:example:p{n % 7}", started=start + timedelta(minutes=n)
            )
        )
        recorder.record(SessionEnded(session=s, ended=start + timedelta(minutes=n, seconds=30)))
    data = store.dump(format="nquads")
    store.close()
    assert data is not None
    return data, team


def concurrent(fn: Callable[[], None], total: int = 400, clients: int = 8) -> float:
    """Queries per second of ``total`` calls from ``clients`` threads."""
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(lambda _: fn(), range(total)))
    return total / (time.perf_counter() - start)


@dataclass
class Serving:
    """Both servers over copies of one store: their URLs, processes and the team graphs."""

    ox_url: str
    tr_url: str
    oxigraph: subprocess.Popen[bytes]
    trails: subprocess.Popen[bytes]
    team: list[str]


@contextlib.contextmanager
def serving(folder: Path, sessions: int) -> Iterator[Serving]:
    """Record ``sessions`` sessions, then serve them with ``oxigraph serve`` and ``trails serve``."""
    data, team = make_data(folder, sessions)
    team_pattern = str(team[0]).rsplit(":", 1)[0] + ":team-*"
    (folder / "data.nq").write_bytes(data)
    subprocess.run(
        ["oxigraph", "load", "--location", str(folder / "oxigraph"),
         "--file", str(folder / "data.nq")],
        check=True, capture_output=True,
    )  # fmt: skip
    tokens = folder / "tokens.toml"
    tokens.write_text(
        token_entry(ALL_TOKEN, "did:example:bench", ["*"])
        + token_entry(TEAM_TOKEN, "did:example:team", [team_pattern])
    )
    ox_port, tr_port = free_port(), free_port()
    oxigraph = subprocess.Popen(
        ["oxigraph", "serve", "--location", str(folder / "oxigraph"),
         "--bind", f"127.0.0.1:{ox_port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    trails = subprocess.Popen(
        [sys.executable, "-m", "trails.cli", "--store", str(folder / "trails"), "serve",
         "--port", str(tr_port), "--tokens", str(tokens), "--threads", "4",
         "--time-limit", "120"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "TRAILS_STORE": "memory:"},
    )  # fmt: skip
    try:
        ox_url = f"http://127.0.0.1:{ox_port}/query"
        tr_url = f"http://127.0.0.1:{tr_port}/sparql"
        wait_up(ox_url, oxigraph)
        wait_up(tr_url, trails)
        yield Serving(ox_url, tr_url, oxigraph, trails, team)
    finally:
        for process in (trails, oxigraph):
            process.terminate()
            process.wait(timeout=30)


def client_pair(
    http: httpx.Client, served: Serving, query: str, token: str, ox_params: list[tuple[str, str]],
    expect: int,
) -> tuple[Callable[[], None], Callable[[], None]]:  # fmt: skip
    """One query against trails (with ``token``) and against Oxigraph (with ``ox_params``)."""
    accept = {"Accept": "application/sparql-results+json"}
    headers = {**accept, "Authorization": f"Bearer {token}"}

    def ask_tr() -> None:
        r = http.get(served.tr_url, params={"query": query}, headers=headers)
        assert r.status_code == 200, r.text
        assert len(r.json()["results"]["bindings"]) == expect

    def ask_ox() -> None:
        r = http.get(served.ox_url, params=[("query", query), *ox_params], headers=accept)
        assert r.status_code == 200, r.text
        assert len(r.json()["results"]["bindings"]) == expect

    return ask_tr, ask_ox


def cases(team: list[str]) -> list[tuple[str, str, str, list[tuple[str, str]], int, int, bool]]:
    """(label, query, token, Oxigraph's dataset parameters, results, rounds, 8 clients too)."""
    team_graphs = [("named-graph-uri", g) for g in team]
    return [
        ("`*` token, latest sessions (GRAPH ?g)", LATEST, ALL_TOKEN, [], 10, 100, True),
        ("`*` token, count over the default graph", COUNT, ALL_TOKEN,
         [("union-default-graph", "")], 1, 20, True),
        (f"pattern token ({len(team)} graph{'s' if len(team) > 1 else ''}), "
         "count over the default graph", COUNT, TEAM_TOKEN,
         [("default-graph-uri", g) for g in team], 1, 20, True),
        (f"pattern token ({len(team)} graph{'s' if len(team) > 1 else ''}), "
         "latest sessions", LATEST, TEAM_TOKEN,
         team_graphs, min(10, len(team)), 100, True),
    ]  # fmt: skip


def measure(folder: Path, sessions: int) -> list[tuple[str, float, float]]:
    """Rows of (measure, trails qps, oxigraph qps) for one store size."""
    out: list[tuple[str, float, float]] = []
    with serving(folder, sessions) as served, httpx.Client(timeout=300) as http:
        for label, query, token, ox_params, expect, number, parallel in cases(served.team):
            ask_tr, ask_ox = client_pair(http, served, query, token, ox_params, expect)
            for _ in range(5):  # warm both
                ask_ox()
                ask_tr()
            t_tr, t_ox = interleaved(ask_tr, ask_ox, rounds=5, number=number)
            out.append((f"{sessions:,} sessions, {label}, 1 client", 1 / t_tr, 1 / t_ox))
            if parallel:
                c_tr, c_ox = concurrent(ask_tr), concurrent(ask_ox)
                out.append((f"{sessions:,} sessions, {label}, 8 clients", c_tr, c_ox))
    return out


def _cpu_seconds(stat: Path) -> float:
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_split(server: int, worker: int, oxigraph: int) -> dict[str, float]:
    """CPU seconds so far: the server's event-loop thread, its other threads, the rest."""
    threads = {
        int(t.name): _cpu_seconds(t / "stat") for t in Path(f"/proc/{server}/task").iterdir()
    }
    return {
        "loop": threads.pop(server),
        "threads": sum(threads.values()),
        "worker": _cpu_seconds(Path(f"/proc/{worker}/stat")),
        "oxigraph": _cpu_seconds(Path(f"/proc/{oxigraph}/stat")),
    }


CPU_QUERIES = 400


def measure_cpu(folder: Path, sessions: int) -> list[tuple[str, dict[str, float]]]:
    """Milliseconds of CPU per query, by process (and thread), with 8 clients.

    Under load the wall clock swings; the CPU a query costs each process does
    much less, and it says where trails' time goes: the server's event-loop
    thread (HTTP, token, graph hand-off, access-log entry), its other threads
    (the access-log writer, the worker pipe's reader), the worker process
    (evaluation, serialisation, counting) and, for comparison, Oxigraph's
    server. The first row is a request that does no query at all (the
    capabilities document): the HTTP stack's own floor.
    """
    rows: list[tuple[str, dict[str, float]]] = []
    with serving(folder, sessions) as served, httpx.Client(timeout=300) as http:
        worker = _worker_pid(served.trails.pid)
        pids = (served.trails.pid, worker, served.oxigraph.pid)
        base = served.tr_url.rsplit("/", 1)[0]

        def per_query(fn: Callable[[], None]) -> dict[str, float]:
            before = _cpu_split(*pids)
            concurrent(fn, total=CPU_QUERIES)
            after = _cpu_split(*pids)
            return {k: 1000 * (after[k] - before[k]) / CPU_QUERIES for k in after}

        def capabilities() -> None:
            assert http.get(f"{base}/.well-known/capabilities").status_code == 200

        rows.append(
            ("trails serve, no query (`/.well-known/capabilities`)", per_query(capabilities))
        )
        for label, query, token, ox_params, expect, _, parallel in cases(served.team):
            if not parallel:
                continue
            ask_tr, ask_ox = client_pair(http, served, query, token, ox_params, expect)
            for _ in range(5):
                ask_ox()
                ask_tr()
            rows.append((f"trails serve, {label}", per_query(ask_tr)))
            rows.append((f"oxigraph serve, {label}", per_query(ask_ox)))
    return rows


MEMORY_TRIPLES = 150_000
MEMORY_LITERAL = 400  # bytes of text per triple: a SPARQL JSON answer of about 90 MB
MEMORY_LIMIT = 8 * 1024 * 1024
EVERYTHING = "SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }"


def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for process {pid}")


def _worker_pid(server: int) -> int:
    """The endpoint's worker: the spawned child of the server that is not the tracker."""
    for _ in range(600):
        children: list[str] = []
        for task in Path(f"/proc/{server}/task").iterdir():
            children += (task / "children").read_text().split()
        for child in children:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
            if b"spawn_main" in cmdline and b"resource_tracker" not in cmdline:
                return int(child)
        time.sleep(0.05)
    raise RuntimeError("the endpoint's worker process did not start")


def memory_run(folder: Path, max_bytes: int) -> tuple[int, int, int, int]:
    """(idle RSS KiB, peak RSS KiB, HTTP status, answer bytes) of one fresh server."""
    (folder / "trails.toml").write_text(
        f"[serve]\nmax_result_bytes = {max_bytes}\nmax_results = 100000000\n"
    )
    port = free_port()
    trails = subprocess.Popen(
        [sys.executable, "-m", "trails.cli", "--store", str(folder / "big"), "serve",
         "--port", str(port), "--tokens", str(folder / "tokens.toml"), "--threads", "1",
         "--time-limit", "300"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=folder,
        env={**os.environ, "TRAILS_STORE": "memory:"},
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/sparql"
        wait_up(url, trails)
        worker = _worker_pid(trails.pid)
        idle = _kib(worker, "VmRSS")
        response = httpx.post(
            url,
            data={"query": EVERYTHING},
            headers={"Authorization": f"Bearer {ALL_TOKEN}"},
            timeout=600,
        )
        peak = _kib(worker, "VmHWM")
        return idle, peak, response.status_code, len(response.content)
    finally:
        trails.terminate()
        trails.wait(timeout=60)


def measure_memory(folder: Path) -> str:
    lines = []
    padding = "x" * MEMORY_LITERAL
    for n in range(MEMORY_TRIPLES):
        lines.append(f'<urn:bench:s{n}> <urn:bench:p> "{n} {padding}" <urn:bench:g{n // 1000}> .\n')
    store = open_store(folder / "big")
    store.load("".join(lines).encode(), format="nquads")
    store.close()
    (folder / "tokens.toml").write_text(token_entry(ALL_TOKEN, "did:example:bench", ["*"]))
    whole = memory_run(folder, 1024 * 1024 * 1024)
    limited = memory_run(folder, MEMORY_LIMIT)
    assert whole[2] == 200 and limited[2] == 400, (whole, limited)
    mib = 1024
    grown_whole = (whole[1] - whole[0]) / mib
    grown_limited = (limited[1] - limited[0]) / mib
    return f"""## SPARQL endpoint: worker memory on an answer past the size limit

One query (`SELECT ?g ?s ?p ?o` over {MEMORY_TRIPLES:,} triples, {MEMORY_LITERAL}-byte
literals; about {whole[3] / 1e6:.0f} MB of SPARQL JSON) against `trails serve` over a
directory store, one worker process, each case on a fresh server. The worker's
peak resident memory (`VmHWM`) is read from `/proc` after the answer.

| `max_result_bytes` | answer | worker RSS idle | worker peak RSS | grown by |
| --- | --- | ---: | ---: | ---: |
| 1 GiB (the whole answer is built) | {whole[2]}, {whole[3] / 1e6:.0f} MB | {whole[0] / mib:.0f} MiB | {whole[1] / mib:.0f} MiB | {grown_whole:.0f} MiB |
| {MEMORY_LIMIT // (1024 * 1024)} MiB | {limited[2]} (over the limit) | {limited[0] / mib:.0f} MiB | {limited[1] / mib:.0f} MiB | {grown_limited:.0f} MiB |

With the limit, the store stops serialising at {MEMORY_LIMIT // (1024 * 1024)} MiB: the worker grows
{grown_limited / max(grown_whole, 1e-9):.2f} times as much as when it builds the whole answer (the
old behaviour for every answer, whatever the limit), and the client gets the
documented 400 instead of waiting for the whole answer.
"""


def cpu() -> None:
    rows = []
    for sessions in SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            rows += [(sessions, label, ms) for label, ms in measure_cpu(Path(tmp), sessions)]
            print(rows[-1], flush=True)

    def line(sessions: int, label: str, ms: dict[str, float]) -> str:
        if label.startswith("oxigraph"):
            return f"| {sessions:,} | {label} | | | | {ms['oxigraph']:.3f} |"
        total = ms["loop"] + ms["threads"] + ms["worker"]
        return (
            f"| {sessions:,} | {label} | {ms['loop']:.3f} | {ms['threads']:.3f} | "
            f"{ms['worker']:.3f} | {total:.3f} |"
        )

    table = "\n".join(line(*row) for row in rows)
    text = f"""## SPARQL endpoint: where a query's CPU goes

The same servers and queries as the section above, 8 clients sending
{CPU_QUERIES} queries; milliseconds of CPU per query read from `/proc` for
each process, and for the trails server apart for its event-loop thread
(HTTP, token check, hand-off, access-log entry) and its other threads (the
access-log writer, the worker pipe's reader). The worker evaluates,
serialises and counts. Oxigraph's server is one process. CPU per query swings
far less with the machine's load than queries per second do.

| sessions | request | trails loop thread | trails other threads | trails worker | total |
| ---: | --- | ---: | ---: | ---: | ---: |
{table}

The first row of each size is a request that runs no query: the HTTP stack's
own cost per request in the loop thread, before any endpoint work.
"""
    write_section("endpoint-cpu", text)
    print(text)


def main(parts: list[str]) -> None:
    global SIZES
    sizes = [p for p in parts if p.startswith("sizes=")]
    if sizes:  # sizes=1000,10000: the store sizes of qps and cpu
        SIZES = tuple(int(n) for n in sizes[-1].removeprefix("sizes=").split(","))
        parts = [p for p in parts if not p.startswith("sizes=")]
    parts = parts or ["qps", "memory"]
    if "cpu" in parts:
        cpu()
    if "memory" in parts:
        with tempfile.TemporaryDirectory() as tmp:
            text = measure_memory(Path(tmp))
        write_section("endpoint-memory", text)
        print(text, flush=True)
    if "qps" in parts:
        qps()


def qps() -> None:
    rows: list[tuple[str, float, float]] = []
    for sessions in SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            rows += measure(Path(tmp), sessions)
            print(rows[-1], flush=True)
    table = "\n".join(
        f"| {label} | {tr:.0f} | {ox:.0f} | {tr / ox:.2f} |" for label, tr, ox in rows
    )
    text = f"""## SPARQL endpoint: `trails serve` against `oxigraph serve`

Same data (recorded sessions, one named graph each), each server over its own
on-disk copy, same machine, same run; keep-alive HTTP clients; SPARQL JSON.
"Latest sessions" lists the ten latest sessions across the readable graphs
(`GRAPH ?g`); "count" counts sessions over the default graph (no `GRAPH`).
The `*` token may read every graph; the pattern token matches one session
graph in 600 (Oxigraph gets the same graphs as `named-graph-uri`, the `*` count
gets `union-default-graph`). `trails serve` runs one worker process with 4 threads
and writes every request to its access log (a store of its own) before
answering. Figures are queries per second: one client is the median of 5
interleaved rounds; 8 clients send 400 queries.

| measure | trails serve | oxigraph serve | ratio (trails / oxigraph) |
| --- | ---: | ---: | ---: |
{table}

Per query, trails adds the token check, the graph resolution, the hop to the
worker process, result counting and the access-log write to Oxigraph's own
evaluation. A `*` token is evaluated with no dataset restriction (the union
default graph); a pattern token over exactly its graphs.
"""
    write_section("endpoint", text)
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
