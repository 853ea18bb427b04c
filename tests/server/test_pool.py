"""Worker processes over an on-disk store: a slow query is stopped, the others are served.

These run a real uvicorn (and, for the CLI, a real ``trails serve`` process)
over a directory store that the endpoint's single worker process opens.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from SPARQLWrapper import JSON, SPARQLWrapper
from tests.server.conftest import (
    ACCESS_LOG,
    TOKENS,
    Seeded,
    auth,
    free_port,
    seed,
    serving,
    tokens_toml,
    wait_for,
)
from tests.server.test_live import LOG_QUERY

from trails.prov.vocab import T
from trails.server import EndpointConfig, create_app
from trails.server.auth import TokenTable, load_tokens
from trails.server.pool import ProcessPool, QueryJob
from trails.store import IRI, Literal, Quad, Solutions, open_store
from trails.testing import assert_conforms

# A cross product of 150 triples with itself three times: millions of rows to count.
SLOW = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?a ?b ?c . ?d ?e ?f . ?h ?i ?j } }"
G9 = IRI("urn:example:g9")
FAST = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g"


@pytest.fixture
def on_disk(tmp_path: Path) -> tuple[Path, Seeded]:
    folder = tmp_path / "store"
    store = open_store(folder)
    seeded = seed(store)
    bulk = IRI("urn:trails:graph:bulk")
    store.write(
        [Quad(IRI(f"urn:x:{n}"), IRI("urn:x:p"), Literal(str(n)), bulk) for n in range(150)]
    )
    store.close()
    return folder, seeded


@pytest.fixture
def pool_url(on_disk: tuple[Path, Seeded], token_table: TokenTable) -> Iterator[str]:
    config = EndpointConfig(time_limit=1.0, threads=4)
    endpoint = create_app(on_disk[0], token_table, config)
    assert isinstance(endpoint.evaluator, ProcessPool)
    with serving(endpoint.app) as url:
        yield url
    endpoint.close()


def test_slow_query_is_stopped_and_the_others_are_served(
    pool_url: str, on_disk: tuple[Path, Seeded]
) -> None:
    seeded = on_disk[1]
    expected = sorted([*seeded.alice_sessions, seeded.memory])

    def fast(_: int) -> list[str]:
        sparql = SPARQLWrapper(f"{pool_url}/sparql")
        sparql.setOnlyConneg(True)
        sparql.addCustomHttpHeader("Authorization", f"Bearer {TOKENS['alice']}")
        sparql.setReturnFormat(JSON)
        sparql.setQuery(FAST)
        result: Any = sparql.queryAndConvert()
        return [b["g"]["value"] for b in result["results"]["bindings"]]

    with httpx.Client(base_url=pool_url, timeout=60) as client, ThreadPoolExecutor(8) as pool:
        slow = pool.submit(client.post, "/sparql", data={"query": SLOW}, headers=auth("admin"))
        answers = list(pool.map(fast, range(24)))
        stopped = slow.result()
        assert stopped.status_code == 503, stopped.text
        assert "time limit of 1 s" in stopped.text
        assert answers == [expected] * 24
        # the endpoint still serves after the worker was replaced
        again = client.get("/sparql", params={"query": FAST}, headers=auth("alice"))
        assert again.status_code == 200
        log = client.get(
            "/access-log/sparql",
            params={"query": LOG_QUERY, "default-graph-uri": ACCESS_LOG},
            headers=auth("auditor"),
        )
        rows = log.json()["results"]["bindings"]
        timeouts = [r["text"]["value"] for r in rows if r["status"]["value"] == "timeout"]
        assert timeouts == [SLOW]
        assert sum(r["status"]["value"] == "ok" for r in rows) == 25


def test_a_store_another_process_holds_is_served_as_snapshots(
    on_disk: tuple[Path, Seeded], token_table: TokenTable
) -> None:
    held = open_store(on_disk[0])  # an agent recording into it
    try:
        pool = ProcessPool(str(on_disk[0]), threads=1, start_timeout=60, snapshot_interval=0.2)
        pool.start()
        try:
            grant = token_table.authenticate(f"Bearer {TOKENS['admin']}")
            assert grant is not None
            job = QueryJob(FAST, grant=grant, reserved=None)
            before = pool.submit(job, 30).result(timeout=60)
            assert before.kind == "ok", before.message
            late = Quad(IRI("urn:example:late"), IRI("urn:example:says"), Literal("new"), G9)
            held.write([late])
            for _ in range(300):  # a newer snapshot shows what the writer added since
                after = pool.submit(job, 30).result(timeout=60)
                if b"urn:example:g9" in after.data:
                    break
                time.sleep(0.05)
            else:
                raise AssertionError("the served snapshot never showed the new graph")
        finally:
            pool.close()
    finally:
        held.close()


def test_trails_serve_command_end_to_end(on_disk: tuple[Path, Seeded], tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(tokens_toml())
    port = free_port()
    env = {**os.environ, "TRAILS_STORE": "memory:"}
    command = [sys.executable, "-m", "trails.cli", "--store", str(on_disk[0]), "serve"]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--tokens", str(tokens), "--time-limit", "5"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert process.poll() is None, process.communicate()[1].decode()
        try:
            return httpx.get(f"{url}/sparql", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(up)
        response = httpx.get(
            f"{url}/sparql", params={"query": FAST}, headers=auth("bob"), timeout=30
        )
        assert response.status_code == 200, response.text
        graphs = [b["g"]["value"] for b in response.json()["results"]["bindings"]]
        assert graphs == [on_disk[1].bob_session]
        assert httpx.get(f"{url}/sparql", params={"query": FAST}, timeout=30).status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=30)
    # the server recorded both requests in its access log, a store beside the data
    store = open_store(on_disk[0])
    try:
        assert ACCESS_LOG not in store.graphs()
    finally:
        store.close()
    log = open_store(on_disk[0].with_name(on_disk[0].name + ".access-log"))
    try:
        assert log.graphs() == [ACCESS_LOG]
        statuses = log.query(
            "SELECT ?status ?p WHERE { GRAPH ?g { ?a ?p ?status } } ORDER BY ?status",
            {"p": T.status},
        )
        assert isinstance(statuses, Solutions)
        found = [v.value for v in statuses.column("status") if isinstance(v, Literal)]
        assert found == ["ok", "unauthorized"]
        assert_conforms(log, ACCESS_LOG)
    finally:
        log.close()


def test_hash_token_prints_an_entry_that_loads(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "trails.cli",
            "serve",
            "--hash-token",
            "--principal",
            "did:x:y",
            "--graph",
            "urn:trails:session:*",
            "--audit",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    token = result.stderr.splitlines()[0].rsplit(" ", 1)[-1]  # the token, once, on stderr
    path = tmp_path / "t.toml"
    path.write_text(result.stdout)
    grant = load_tokens(path).authenticate(f"Bearer {token}")
    assert grant is not None and grant.principal == "did:x:y" and grant.audit
