"""Reliability campaign: crashes, concurrent writers, hostile input, flipped bytes, endpoint load.

Re-measures the table of ``docs/reliability.md`` with the harnesses the test suite
already has (nothing here is a harness of its own):

- writers killed with SIGKILL at random moments (``tests/crash_writer.py``, driven as
  ``tests/test_crash_harness.py`` drives it): torn activities after recovery, and
  ``verify`` findings;
- several writer processes recording into one Oxigraph server (``tests/servers.py``'s
  server, ``tests/crash_writer.py``'s sessions through the remote store): findings of
  ``verify`` afterwards;
- hostile strings (SPARQL, IRI and N-Triples syntax, quotes, newlines, NUL) as session
  labels, principals and bound query parameters: any that changed a query or a graph
  beyond its own value is an injection;
- single-byte flips of an evidence bundle (``tests/audit/test_bundle_archive.py``'s
  campaign): flips verification did not detect, and flips that crashed it;
- ``trails serve`` under many concurrent clients, a share of them sending queries over
  the result limit: the server's resident memory (its process tree) before and at peak;
- ``trails serve`` with a crowd of connections sending their request head a byte a
  second: how long each is held, and whether another client is served meanwhile;
- ``trails serve`` asked for one ``GROUP_CONCAT`` value far over its workers' memory
  limit: the answer, the resident memory at peak, and the next query.

    python benchmarks/bench_reliability.py              # small sizes (a minute or two)
    python benchmarks/bench_reliability.py --campaign   # the campaign's sizes
    python benchmarks/bench_reliability.py --smallest --out /tmp/r.md   # a smoke run

Each run rewrites the table between ``<!-- reliability -->`` markers of ``--out``
(default ``docs/reliability.md``) and exits 1 when any row found a failure.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import select as io_select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the test suite's harnesses

import httpx  # noqa: E402
from tests.audit.test_bundle_archive import _flips  # noqa: E402
from tests.server.conftest import free_port, wait_for  # noqa: E402
from tests.servers import OxigraphServer  # noqa: E402
from tests.test_crash_harness import CALL, TORN, Zygote, select  # noqa: E402

from trails.audit.bundle import verify_bundle, write_bundle  # noqa: E402
from trails.evidence.seal import install_sealer  # noqa: E402
from trails.evidence.verify import verify  # noqa: E402
from trails.kernel import Context  # noqa: E402
from trails.prov import Recorder  # noqa: E402
from trails.server.auth import token_entry  # noqa: E402
from trails.store import IRI, Literal, Quad, Solutions, open_store  # noqa: E402
from trails.store.oxigraph import OxigraphStore  # noqa: E402

SIZES = {  # (kills, writers x sessions, hostile strings, byte flips, clients)
    "smallest": (1, (2, 1), 20, 40, 4),
    "small": (5, (2, 3), 200, 400, 20),
    "campaign": (200, (6, 10), 25_000, 10_000, 200),
}
TRICKLERS = {"smallest": (20, 2.0), "small": (300, 10.0), "campaign": (300, 10.0)}
"""Connections trickling their head, and the ``header_timeout`` they meet (the default: 10)."""
START, END = "<!-- reliability -->", "<!-- /reliability -->"


@dataclass
class Row:
    test: str
    inputs: str
    result: str
    failures: int


def kills(trials: int, work: Path) -> Row:
    rng, torn, findings, effects = random.Random(12), 0, 0, 0
    zygote = Zygote()
    try:
        for trial in range(trials):
            store_dir, done = work / f"kill{trial}", work / f"effects{trial}"
            done.touch()
            pid = zygote.ask(f"go {store_dir} {done} {trial}")
            while not done.stat().st_size:  # recording has begun
                time.sleep(0.002)
            time.sleep(rng.uniform(0.0, 0.3))
            os.kill(pid, signal.SIGKILL)
            zygote.ask(f"wait {pid}")
            store = OxigraphStore(store_dir)
            try:
                Recorder.from_settings(store=store)  # the next program recovers it
                torn += len(select(store, TORN))
                for call in [c for c in done.read_text().split("\n") if c]:
                    effects += 1
                    rows = select(store, CALL, call=IRI(call))
                    torn += not rows or rows[0].get("effects") is not True
                findings += len(verify(store).findings)
            finally:
                store.close()
    finally:
        zygote.close()
    return Row(
        "writers killed with SIGKILL at random moments, then recovered and verified",
        f"{trials} kills ({effects} side effects on record)",
        f"{torn} torn, {findings} verify findings",
        torn + findings,
    )


WRITER = """
import sys
from trails.kernel import Context
from trails.prov import Recorder
from trails.evidence.seal import install_sealer
from trails.store import open_store

store = open_store(sys.argv[1])
recorder = Recorder(store)
install_sealer(recorder)
for i in range(int(sys.argv[2])):
    with Context.open(f"did:local:writer-{sys.argv[3]}", recorder=recorder, label=f"s{i}"):
        pass
"""


def writers(count: int, sessions: int, work: Path) -> Row:
    server = OxigraphServer(work / "server")
    url = server.start()
    try:
        procs = [
            subprocess.Popen([sys.executable, "-c", WRITER, url, str(sessions), str(n)])
            for n in range(count)
        ]
        failed = sum(p.wait(timeout=600) != 0 for p in procs)
        store = open_store(url)
        try:
            report = verify(store)
            found = len(report.findings)
        finally:
            store.close()
    finally:
        server.stop()
    return Row(
        "writer processes recording into one Oxigraph server at once",
        f"{count} writers x {sessions} sealed sessions",
        f"{found} verify findings, {failed} writers failed",
        found + failed,
    )


HOSTILE = [
    '" } ; DROP ALL ; SELECT * { "',
    "> } INSERT DATA { GRAPH <urn:x> { <urn:a> <urn:b> <urn:c> } } #",
    "\\u0022 . <urn:x> <urn:y> <urn:z> .",
    "line\nbreak\r\n<urn:a> <urn:b> <urn:c> .",
    "nul\x00byte",
    "'''triple quotes'''",
    '"""more"""',
    "<urn:trails:session:other>",
    "?s ?p ?o",
    "$session",
    "\\",
    "FILTER(true) }",
]


def hostile(count: int, work: Path) -> Row:
    rng = random.Random(7)
    store = open_store(str(work / "hostile"))
    injected = 0
    try:
        recorder = Recorder(store)
        install_sealer(recorder)
        with Context.open("did:x:first", recorder=recorder):
            pass  # the catalogue and the ledger exist from here on
        for i in range(count):
            text = "".join(rng.choice(HOSTILE) for _ in range(rng.randint(1, 3))) + f"#{i}"
            graphs = set(store.graphs())
            with Context.open(f"did:x:{i}", recorder=recorder, label=text) as ctx:
                session = ctx.session
            new = set(store.graphs()) - graphs
            injected += any(not g.startswith(str(session)) for g in new)  # only its own graphs
            got = store.query(
                "SELECT ?v WHERE { GRAPH ?g { ?s <https://w3id.org/trails/ns#sessionLabel> $v } }",
                {"v": Literal(text)},
            )
            assert isinstance(got, Solutions)
            injected += len(got.rows) != 1  # the bound value matched itself, and only it
        report = verify(store)
        injected += len(report.findings)
    finally:
        store.close()
    return Row(
        "hostile strings as labels and bound query parameters",
        f"{count} strings (SPARQL, N-Triples and IRI syntax, quotes, newlines, NUL)",
        f"{injected} injections",
        injected,
    )


def flips(count: int, work: Path) -> Row:
    store = open_store("memory:")
    recorder = Recorder(store)
    install_sealer(recorder)
    with Context.open("did:local:alice", recorder=recorder) as ctx:
        session = ctx.session
    path = work / "evidence.zip"
    write_bundle(store, path, [session])
    raw = path.read_bytes()
    chosen = _flips(raw)
    rng = random.Random(5)
    while len(chosen) < count:  # beyond the harness's own list: more random flips
        chosen.append((rng.randrange(len(raw)), 1 << rng.randrange(8)))
    chosen = chosen[:count]
    undetected = crashes = 0
    flipped = work / "flipped.zip"
    for offset, mask in chosen:
        data = bytearray(raw)
        data[offset] ^= mask
        flipped.write_bytes(bytes(data))
        try:
            undetected += verify_bundle(flipped).ok
        except Exception:
            crashes += 1
    return Row(
        "single-byte flips of an evidence bundle, verified offline",
        f"{len(chosen)} flips (flags, compression methods, headers, anywhere)",
        f"{undetected} undetected, {crashes} crashes",
        undetected + crashes,
    )


def _rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` and its descendants (from /proc), in KiB."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def endpoint(clients: int, work: Path) -> Row:
    store_dir = work / "served"
    store = open_store(str(store_dir))
    recorder = Recorder(store)
    install_sealer(recorder)
    for i in range(20):
        with Context.open(f"did:local:u{i}", recorder=recorder, label="x" * 2000):
            pass
    store.close()
    tokens = work / "tokens.toml"
    tokens.write_text(token_entry("reliability-token", "did:local:auditor", ["*"]))
    port = free_port()
    command = [sys.executable, "-m", "trails.cli", "--store", str(store_dir), "serve"]
    server = subprocess.Popen(
        [*command, "--port", str(port), "--tokens", str(tokens), "--time-limit", "10"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TRAILS_STORE": "memory:"},
    )
    url = f"http://127.0.0.1:{port}/sparql"
    headers = {"Authorization": "Bearer reliability-token"}
    errors: list[str] = []
    try:

        def up() -> bool:
            try:
                return httpx.get(url, timeout=2).status_code in (200, 401)
            except httpx.TransportError:
                return False

        wait_for(up)
        before = _rss_kib(server.pid)
        peak = [before]
        big = "SELECT ?s ?p ?o ?x WHERE { GRAPH ?g { ?s ?p ?o } GRAPH ?h { ?x ?q ?y } }"
        small = "SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o } } LIMIT 5"

        def client(n: int) -> None:
            query = big if n % 4 == 0 else small  # a quarter over the limits
            try:
                with httpx.Client(timeout=120) as http:
                    for _ in range(3):
                        answer = http.get(url, params={"query": query}, headers=headers)
                        if answer.status_code >= 500 and answer.status_code != 503:
                            errors.append(f"{answer.status_code}")
            except httpx.TransportError as exc:
                errors.append(type(exc).__name__)

        def watch(stop: threading.Event, sample: Callable[[], int]) -> None:
            while not stop.wait(0.05):
                peak[0] = max(peak[0], sample())

        stop = threading.Event()
        watcher = threading.Thread(target=watch, args=(stop, lambda: _rss_kib(server.pid)))
        watcher.start()
        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        watcher.join()
    finally:
        server.terminate()
        server.wait(timeout=60)
    return Row(
        "`trails serve` under concurrent clients, a quarter over the result limit",
        f"{clients} clients x 3 queries",
        f"RSS {before // 1024} MiB before, {peak[0] // 1024} MiB at peak "
        f"({peak[0] / max(before, 1):.2f}x); {len(errors)} server errors",
        len(errors),
    )


def _serve(store_dir: Path, work: Path, toml: str) -> tuple[subprocess.Popen[bytes], str]:
    """``trails serve`` over ``store_dir`` with ``toml`` as its trails.toml; (process, URL)."""
    tokens = work / "tokens.toml"
    tokens.write_text(token_entry("reliability-token", "did:local:auditor", ["*"]))
    config = work / "trails.toml"
    config.write_text(toml)
    port = free_port()
    command = [sys.executable, "-m", "trails.cli", "--store", str(store_dir), "serve"]
    server = subprocess.Popen(
        [*command, "--port", str(port), "--tokens", str(tokens)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TRAILS_STORE": "memory:", "TRAILS_CONFIG": str(config)},
    )
    url = f"http://127.0.0.1:{port}/sparql"

    def up() -> bool:
        try:
            return httpx.get(url, timeout=2).status_code in (200, 401)
        except httpx.TransportError:
            return False

    wait_for(up)
    return server, url


def trickling(count: int, timeout: float, work: Path) -> Row:
    store_dir = work / "trickled"
    open_store(str(store_dir)).close()
    server, url = _serve(store_dir, work, f"[serve]\nheader_timeout = {timeout}\n")
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    head = b"GET /sparql?query=ASK%7B%7D HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer r\r\n\r\n"
    held: list[float] = []
    cut = asked = served = 0
    try:
        start = time.monotonic()
        crowd = {socket.create_connection(("127.0.0.1", port)): 0 for _ in range(count)}
        while crowd:  # one byte a second to each, until the server cuts it
            for sock in [s for s in crowd if io_select.select([s], [], [], 0)[0]]:
                reply = sock.recv(4096)
                cut += reply.startswith(b"HTTP/1.1 408")
                held.append(time.monotonic() - start)
                del crowd[sock]
                sock.close()
            for sock, sent in list(crowd.items()):
                if sent < len(head):
                    with contextlib.suppress(OSError):
                        sock.sendall(head[sent : sent + 1])
                    crowd[sock] = sent + 1
            asked += 1  # meanwhile, another client asks once a second
            answer = httpx.get(
                url,
                params={"query": "ASK {}"},
                headers={"Authorization": "Bearer reliability-token"},
                timeout=60,
            )
            served += answer.status_code == 200
            time.sleep(max(0.0, 1.0 - (time.monotonic() - start) % 1.0))
    finally:
        server.terminate()
        server.wait(timeout=60)
    return Row(
        f"`trails serve` with connections sending their request head a byte a second "
        f"(`header_timeout` {timeout:g} s)",
        f"{count} connections at once",
        f"{cut} of {count} answered 408 and closed, each held {max(held, default=0):.0f} s "
        f"at most; another client answered {served} of {asked} times meanwhile",
        (count - cut) + (asked - served),
    )


def huge_aggregate(work: Path) -> Row:
    store_dir = work / "aggregated"
    store = open_store(str(store_dir))
    graph = IRI("urn:trails:graph:big")
    store.write(
        [
            Quad(IRI(f"urn:big:s{i}"), IRI("urn:big:p"), Literal("v" * 1000), graph)
            for i in range(1000)
        ]
    )
    store.close()
    server, url = _serve(store_dir, work, "[serve]\n")  # the defaults: 512 MiB, 30 s
    headers = {"Authorization": "Bearer reliability-token"}
    huge = (
        f"SELECT (STRLEN(GROUP_CONCAT(?o)) AS ?n) {{ GRAPH <{graph}> {{ ?a ?p ?o . ?b ?q ?r }} }}"
    )
    try:
        before = _rss_kib(server.pid)
        peak = [before]
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(0.01):
                peak[0] = max(peak[0], _rss_kib(server.pid))

        watcher = threading.Thread(target=watch)
        watcher.start()
        start = time.monotonic()
        answer = httpx.post(url, data={"query": huge}, headers=headers, timeout=120)
        seconds = time.monotonic() - start
        stop.set()
        watcher.join()
        after = httpx.post(url, data={"query": "ASK {}"}, headers=headers, timeout=120)
    finally:
        server.terminate()
        server.wait(timeout=60)
    named = "worker_memory_mb" in answer.text
    return Row(
        "`trails serve` asked for one `GROUP_CONCAT` value of 1 GB (default limits)",
        "1000 literals of 1000 characters, concatenated 1000 times",
        f"{answer.status_code} {'naming' if named else 'not naming'} the memory limit after "
        f"{seconds:.1f} s; RSS {before // 1024} MiB before, {peak[0] // 1024} MiB at peak; "
        f"next query {after.status_code}",
        int(answer.status_code != 503 or not named) + int(after.status_code != 200),
    )


def table(rows: list[Row], size: str) -> str:
    lines = [
        f"Measured with `python benchmarks/bench_reliability.py"
        f"{'' if size == 'small' else ' --' + size}`.",
        "",
        "| test | inputs tried | result |",
        "|---|---|---|",
    ]
    lines += [f"| {r.test} | {r.inputs} | {r.result} |" for r in rows]
    return "\n".join(lines)


def write(out: Path, text: str) -> None:
    body = out.read_text() if out.exists() else f"# Reliability\n\n{START}\n{END}\n"
    if START not in body:
        body = body.rstrip() + f"\n\n{START}\n{END}\n"
    before, rest = body.split(START, 1)
    after = rest.split(END, 1)[1]
    out.write_text(f"{before}{START}\n{text}\n{END}{after}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--campaign", action="store_true", help="the campaign's sizes")
    group.add_argument("--smallest", action="store_true", help="a smoke run")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "reliability.md")
    args = parser.parse_args(argv)
    size = "campaign" if args.campaign else "smallest" if args.smallest else "small"
    n_kills, (n_writers, n_sessions), n_hostile, n_flips, n_clients = SIZES[size]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows = [
            kills(n_kills, work),
            writers(n_writers, n_sessions, work),
            hostile(n_hostile, work),
            flips(n_flips, work),
            endpoint(n_clients, work),
            trickling(*TRICKLERS[size], work),
            huge_aggregate(work),
        ]
    text = table(rows, size)
    print(text)
    write(args.out, text)
    return 1 if any(r.failures for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
