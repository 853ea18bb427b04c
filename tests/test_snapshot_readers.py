"""Readers never wait for a writer: while an agent records into the embedded store in one
process, ``trails sessions``, ``report``, ``query`` and ``verify`` read it in others, as a
snapshot of the moment they open it; commands that change the store are refused."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from trails.errors import StoreReadOnlyError
from trails.store.oxigraph import OxigraphStore
from trails.store.terms import IRI, Literal, Quad

WRITER = textwrap.dedent(
    """
    import pathlib, sys, time
    import trails
    from trails import Context, capability
    from trails.store import set_default_store
    from trails.store.oxigraph import OxigraphStore

    store = OxigraphStore(sys.argv[1])
    set_default_store(store)

    @capability(id="notes.search", description="Search notes by tag.")
    def search(tag: str) -> dict:
        return {"hits": [tag]}

    stop = pathlib.Path(sys.argv[2])
    n = 0
    while True:
        with Context.open("did:example:writer") as ctx:
            trails.invoke("notes.search", {"tag": f"urgent-{n}"}, ctx=ctx)
        n += 1
        if n == 3:
            print("ready", flush=True)
        if stop.exists():
            break
        time.sleep(0.02)
    print(n, flush=True)
    """
)


def _trails(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trails.cli", "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def live_writer(tmp_path: Path) -> Iterator[Path]:
    """A store an agent process is recording into for as long as the test runs."""
    store = tmp_path / "store"
    stop = tmp_path / "stop"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store), str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
    try:
        yield store
    finally:
        stop.touch()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert int(out.strip()) >= 3


def test_readers_see_a_snapshot_while_an_agent_records(live_writer: Path) -> None:
    listed = _trails("sessions", "--format", "json", store=live_writer)
    assert listed.returncode == 0, listed.stderr
    assert "reading a snapshot as of" in listed.stderr
    rows = json.loads(listed.stdout)["results"]["bindings"]
    assert len(rows) >= 3

    ended = next(r for r in rows if r.get("endStatus", {}).get("value") == "ok")
    out = live_writer.parent / "r.html"
    report = _trails("report", ended["session"]["value"], "--out", str(out), store=live_writer)
    assert report.returncode == 0, report.stderr
    assert "urgent-" in (live_writer.parent / "r.html").read_text("utf-8")

    counted = _trails(
        "query",
        "SELECT (COUNT(?a) AS ?n) WHERE { ?a a <https://w3id.org/trails/ns#CapabilityInvocation> }",
        "--format",
        "json",
        store=live_writer,
    )
    assert counted.returncode == 0, counted.stderr
    assert int(json.loads(counted.stdout)["results"]["bindings"][0]["n"]["value"]) >= 3

    later = _trails("sessions", "--format", "json", store=live_writer)
    assert later.returncode == 0, later.stderr
    newer = json.loads(later.stdout)["results"]["bindings"]
    assert len(newer) >= len(rows)  # a newer snapshot sees at least as much


def test_a_command_that_changes_the_store_waits_for_no_snapshot(live_writer: Path) -> None:
    held = _trails("hold", "add", "did:example:writer", "--reason", "case 7", store=live_writer)
    assert held.returncode != 0
    assert "already open in another process" in held.stderr
    assert "Traceback" not in held.stderr


def test_a_snapshot_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "store"
    writer = OxigraphStore(path)
    g = IRI("urn:example:g")
    writer.write([Quad(IRI("urn:example:s"), IRI("urn:example:p"), Literal("one"), g)])
    snapshot = OxigraphStore(path, create=False, read_only=True)
    try:
        assert snapshot.read_only and snapshot.snapshot_at is not None
        writer.write([Quad(IRI("urn:example:s"), IRI("urn:example:p"), Literal("two"), g)])
        # the snapshot shows the store as it was when opened
        assert len(snapshot.query("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }")) == 1
        with pytest.raises(StoreReadOnlyError, match="nothing was written"):
            snapshot.write([Quad(IRI("urn:example:s"), IRI("urn:example:p"), Literal("3"), g)])
        with pytest.raises(StoreReadOnlyError):
            snapshot.clear(g)
    finally:
        snapshot.close()
        writer.close()
    assert OxigraphStore(path, create=False).query("ASK { GRAPH ?g { ?s ?p 'two' } }") is True


def test_serve_reads_a_store_an_agent_is_writing(live_writer: Path, tmp_path: Path) -> None:
    """``trails serve`` on a held store: snapshots renewed every snapshot_interval seconds."""
    import os
    import time

    import httpx
    from tests.server.conftest import free_port

    from trails.server.auth import token_entry

    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry("s3cret-admin-token", "did:example:admin", ["*"]))
    (tmp_path / "trails.toml").write_text("[serve]\nsnapshot_interval = 0.5\n")
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trails.cli",
            "--store",
            str(live_writer),
            "serve",
            "--port",
            str(port),
            "--tokens",
            str(tokens),
        ],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("TRAILS_")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/sparql"
    count = (
        "SELECT (COUNT(?a) AS ?n) WHERE { ?a a <https://w3id.org/trails/ns#CapabilityInvocation> }"
    )
    headers = {"Authorization": "Bearer s3cret-admin-token"}

    def counted() -> int | None:
        assert process.poll() is None, process.communicate()[1].decode()
        try:
            r = httpx.get(url, params={"query": count}, headers=headers, timeout=10)
        except httpx.TransportError:
            return None
        assert r.status_code == 200, r.text
        return int(r.json()["results"]["bindings"][0]["n"]["value"])

    try:
        first = None
        for _ in range(600):
            first = counted()
            if first is not None:
                break
            time.sleep(0.1)
        assert first is not None and first >= 3
        later = first
        for _ in range(600):  # the agent records on; a newer snapshot shows it
            later = counted() or 0
            if later > first:
                break
            time.sleep(0.1)
        assert later > first
    finally:
        process.terminate()
        process.communicate(timeout=30)
