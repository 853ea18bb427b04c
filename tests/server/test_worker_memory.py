"""The memory of one query is bounded: a huge aggregate stops at ``worker_memory_mb``.

``max_result_bytes`` bounds an answer while it is serialised, but one ``GROUP_CONCAT``
is a single value the engine builds whole first. Over a store where that value would be
a gigabyte, a real ``trails serve`` (its worker under a 256 MiB limit) answers 503
naming the limit, replaces the worker, keeps its resident memory near the limit, logs
the refusal, and answers the next query; queries that shared the dead worker are run
again alone and answered.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.server.conftest import ACCESS_LOG, TOKENS, auth, seed, tokens_toml
from tests.server.test_head_timeout import start, stop
from tests.server.test_live import LOG_QUERY

from trails.config import load_settings
from trails.errors import ConfigError
from trails.server import EndpointConfig
from trails.server.auth import load_tokens
from trails.server.pool import ProcessPool, QueryJob
from trails.store import IRI, Literal, Quad, open_store

BIG = IRI("urn:trails:graph:big")
# 1000 literals of 1000 characters, concatenated once per literal: a 1 GB value
HUGE = (
    f"SELECT (STRLEN(GROUP_CONCAT(?o)) AS ?n) WHERE {{ GRAPH <{BIG}> {{ ?a ?p ?o . ?b ?q ?r }} }}"
)
# 10 x 1000 x 1000 rows to count: long enough to be running when HUGE passes the limit
LONG = (
    "SELECT (COUNT(*) AS ?n) WHERE { VALUES ?k { 0 1 2 3 4 5 6 7 8 9 } "
    f"GRAPH <{BIG}> {{ ?a ?p ?o . ?b ?q ?r }} }}"
)
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"
MIB = 1024 * 1024


def big_store(folder: Path) -> Path:
    store = open_store(folder)
    seed(store)
    store.write(
        [
            Quad(IRI(f"urn:big:s{i}"), IRI("urn:big:p"), Literal("v" * 1000), BIG)
            for i in range(1000)
        ]
    )
    store.close()
    return folder


def proc_status(pid: int, field: str) -> int:
    """A ``/proc/PID/status`` size in bytes (0 once the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:
        return 0
    _, found, rest = text.partition(f"{field}:")
    return int(rest.split()[0]) * 1024 if found else 0  # an exited process has no sizes


def worker_of(server: int) -> int:
    """The pid of the endpoint's worker process (a child running ``spawn_main``)."""
    # spawned by the pool's keeper threads: children of any of the server's threads
    tasks = Path(f"/proc/{server}/task").iterdir()
    children = [c for t in tasks for c in (t / "children").read_text().split()]
    for child in children:
        with open(f"/proc/{child}/cmdline", "rb") as fh:
            if b"spawn_main" in fh.read():
                return int(child)
    raise AssertionError(f"no worker among {children}")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """``trails serve`` over the big store, its worker's queries allowed 256 MiB."""
    big_store(tmp_path / "store")
    (tmp_path / "tokens.toml").write_text(tokens_toml(), encoding="utf-8")
    toml = '[serve]\ntokens = "tokens.toml"\nworker_memory_mb = 256\ntime_limit = 120\n'
    process, port = start(tmp_path, ["serve"], toml)
    yield process.pid, port
    assert "Traceback" not in stop(process)


def test_a_huge_group_concat_is_stopped_at_the_memory_limit(served: tuple[int, int]) -> None:
    server, port = served
    url = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=url, timeout=120) as client:
        first = client.post("/sparql", data={"query": COUNT}, headers=auth("admin"))
        assert first.status_code == 200, first.text
        worker = worker_of(server)
        idle = proc_status(worker, "VmRSS")
        peak = [0]
        done = threading.Event()

        def watch() -> None:  # the worker's resident memory while it evaluates
            while not done.wait(0.005):
                peak[0] = max(peak[0], proc_status(worker, "VmRSS"))

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            huge = client.post("/sparql", data={"query": HUGE}, headers=auth("admin"))
        finally:
            done.set()
            watcher.join()
        assert huge.status_code == 503, huge.text
        assert "memory limit of 256 MiB" in huge.text and "worker_memory_mb" in huge.text
        # resident memory stayed near the limit: nowhere near the 1 GB the value needs
        assert 0 < peak[0] <= idle + 256 * MIB + 64 * MIB, (idle, peak[0])
        # a fresh worker serves the next query
        again = client.post("/sparql", data={"query": COUNT}, headers=auth("admin"))
        assert again.status_code == 200, again.text
        assert worker_of(server) != worker
        log = client.get(
            "/access-log/sparql",
            params={"query": LOG_QUERY, "default-graph-uri": ACCESS_LOG},
            headers={"Authorization": f"Bearer {TOKENS['auditor']}"},
        )
        rows = log.json()["results"]["bindings"]
        refused = [
            (r["status"]["value"], r["code"]["value"])
            for r in rows
            if "GROUP_CONCAT" in r["text"]["value"]
        ]
        assert refused == [("refused", "503")]


def test_queries_sharing_the_worker_are_run_again_alone(tmp_path: Path) -> None:
    folder = big_store(tmp_path / "store")
    (tmp_path / "tokens.toml").write_text(tokens_toml(), encoding="utf-8")
    grant = load_tokens(tmp_path / "tokens.toml").authenticate(f"Bearer {TOKENS['admin']}")
    assert grant is not None
    # a small limit: the huge query passes it long before the long one can finish
    pool = ProcessPool(str(folder), threads=4, memory_mb=96)
    pool.start()
    try:
        long = pool.submit(QueryJob(LONG, grant=grant, reserved=None), 300)
        huge = pool.submit(QueryJob(HUGE, grant=grant, reserved=None), 300)
        stopped = huge.result(timeout=600)
        assert stopped.kind == "memory"
        assert stopped.message.startswith("the query was stopped at its memory limit of 96 MiB")
        answered = long.result(timeout=600)
        assert answered.kind == "ok", answered.message
        assert b'"10000000"' in answered.data
        # the worker died with both aboard, then again with the huge one alone
        assert pool.restarts == 2
    finally:
        pool.close()


def test_worker_memory_mb_must_be_a_positive_number(tmp_path: Path) -> None:
    config = tmp_path / "trails.toml"
    config.write_text("[serve]\nworker_memory_mb = 300\n", encoding="utf-8")
    configured = EndpointConfig.from_settings(load_settings(environ={}, cwd=tmp_path))
    assert configured.worker_memory_mb == 300
    assert EndpointConfig().worker_memory_mb == 512
    for bad in ("0", '"lots"'):
        config.write_text(f"[serve]\nworker_memory_mb = {bad}\n", encoding="utf-8")
        with pytest.raises(ConfigError, match=r"\[serve\] worker_memory_mb must be"):
            EndpointConfig.from_settings(load_settings(environ={}, cwd=tmp_path))
