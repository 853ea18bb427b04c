"""The live pages' watcher (``trails.server.console.live.Live``): one read per change.

Three pages subscribe at once (an auditor's sessions list, alice's, bob's); the
watcher looks at the store's change marker every tick and reads the store once
for all of them when it changed, never while it did not. Each subscriber gets
only the sessions its grant reads, and ``stop`` ends every stream. The browser
side (a real ``trails serve`` and a writer process) is in ``test_console_demo``;
``change_marker`` itself is checked on a directory store another process writes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from trails.agent import Session
from trails.server.auth import OWN_SESSIONS, Grant, TokenTable
from trails.server.console.base import Console, Login
from trails.server.console.live import Live
from trails.server.pool import InlineEvaluator
from trails.store import Store, open_store
from trails.store.snapshot import change_marker


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def first(stream: AsyncIterator[str]) -> str:
    """The next event of a stream (its data line's JSON text), skipping ``retry:``."""
    while True:
        item = await asyncio.wait_for(anext(stream), 30)
        if item.startswith("event: "):
            return item.split("data: ", 1)[1]


@pytest.mark.anyio
async def test_one_read_per_change_for_every_subscriber_within_each_grant(store: Store) -> None:
    with Session(principal="did:local:alice", store=store) as session:
        session.context  # noqa: B018 - opening it records its start
    console = Console(InlineEvaluator(store), TokenTable({}), {}, None)
    live = Live(console, every=0.02)
    console.live = live
    auditor = live.stream(Login(Grant("did:example:auditor", ("*",)), "c"), None)
    alice = live.stream(Login(Grant("did:local:alice", (OWN_SESSIONS,)), "c"), None)
    bob = live.stream(Login(Grant("did:local:bob", (OWN_SESSIONS,)), "c"), None)
    seen = [json.loads(await first(s)) for s in (auditor, alice, bob)]
    assert [len(s["rows"]) for s in seen] == [1, 1, 0]
    reads = live.reads
    assert reads == 1  # one read for the three arrivals, never one per tick
    await asyncio.sleep(0.3)  # fifteen ticks, nothing written: not one read
    assert live.reads == reads
    with Session(principal="did:local:alice", store=store) as later:
        later.context  # noqa: B018
    # one change: one read, and the news for those who may read it
    now = [json.loads(await first(s)) for s in (auditor, alice)]
    assert [len(s["rows"]) for s in now] == [2, 2]
    await asyncio.sleep(0.2)
    assert live.reads - reads <= 2  # the start and the end of the session: two writes
    assert live.subscribers == 3
    live.stop()
    for stream in (auditor, alice, bob):
        with pytest.raises(StopAsyncIteration):
            while True:
                await asyncio.wait_for(anext(stream), 30)
    assert live.subscribers == 0
    console.evaluator.close()  # type: ignore[attr-defined]


def test_the_change_marker_moves_with_writes_only(tmp_path: Path) -> None:
    folder = tmp_path / "store"

    def record() -> None:  # a writer's session, and the writer gone (no compaction after)
        written = open_store(str(folder))
        with Session(principal="did:local:alice", store=written) as session:
            session.context  # noqa: B018 - opening it records its start
        written.close()

    record()
    before = change_marker(folder)
    reader = open_store(str(folder), read_only=True)
    reader.query("SELECT * WHERE { ?s ?p ?o } LIMIT 1")
    reader.close()
    assert change_marker(folder) == before  # reading does not move it
    record()
    assert change_marker(folder) != before
    assert change_marker(tmp_path / "nothing") == ()


def test_a_sessions_steps_newest_kept_and_its_end_said(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trails.kernel import capability, invoke
    from trails.server.console import live

    @capability(id="live.unit", description="One step.")
    def one(n: int) -> int:
        return n

    monkeypatch.setattr(live, "STEPS_SHOWN", 3)
    session = Session(principal="did:local:alice", store=store)
    iri = str(session.context.session)
    for n in range(5):
        invoke("live.unit", {"n": n}, ctx=session.context)
    shown = live.session_steps(store, iri)
    assert not shown["ended"] and shown["more"] and len(shown["steps"]) == 3
    started = [s["started"] for s in shown["steps"]]
    assert started == sorted(started)  # the newest three, oldest first
    assert all(s["label"] == "invoke live.unit" and s["status"] == "ok" for s in shown["steps"])
    session.close()
    assert live.session_steps(store, iri)["ended"]
