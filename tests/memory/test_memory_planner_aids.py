"""Working memory (scratchpad) and episodic memory (past trajectories, on recall)."""

from __future__ import annotations

import threading

import pytest

from trails.errors import MemoryInputError
from trails.kernel import Context
from trails.memory import (
    Episode,
    EpisodicMemory,
    NoOpEpisodicMemory,
    StoreEpisodicMemory,
    WorkingMemory,
)
from trails.prov import Recorder
from trails.store import Store


def test_working_memory_snapshot_is_frozen_and_restorable() -> None:
    wm = WorkingMemory({"goal": "fix the build"})
    wm.set("findings", {"file": "ci.yml"})
    snap = wm.snapshot()
    wm.get("findings")["file"] = "changed in place"
    wm.set("goal", "something else")
    assert snap["goal"] == "fix the build" and snap["findings"] == {"file": "ci.yml"}
    with pytest.raises(TypeError):
        snap["goal"] = "x"  # type: ignore[index]
    wm.restore(snap)
    assert wm.get("goal") == "fix the build" and wm.get("findings") == {"file": "ci.yml"}
    assert wm.delete("goal") and not wm.delete("goal")
    assert "goal" not in wm and len(wm) == 1
    assert "findings: {'file': 'ci.yml'}" in wm.render()
    with pytest.raises(MemoryInputError, match="non-empty strings"):
        wm.set("", 1)


def test_working_memory_is_thread_safe() -> None:
    wm = WorkingMemory()

    def work(n: int) -> None:
        for i in range(500):
            wm.append("log", (n, i))
            wm.set(f"t{n}", i)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wm.get("log")) == 8 * 500
    assert all(wm.get(f"t{n}") == 499 for n in range(8))
    with pytest.raises(MemoryInputError, match="not a list"):
        wm.append("t0", 1)


def test_episodes_are_stored_and_retrieved_through_recall(store: Store, recorder: Recorder) -> None:
    ctx = Context.open("did:local:planner", recorder=recorder)
    episodic = StoreEpisodicMemory(ctx)
    assert isinstance(episodic, EpisodicMemory)
    ok = episodic.store(
        Episode(
            goal="rotate the TLS certificate of the billing API",
            steps=("find the cert secret", "issue a new cert", "restart billing pods"),
            outcome="success",
            result="cert valid until 2027",
        )
    )
    episodic.store(
        Episode(
            goal="rotate the TLS certificate of the auth API", steps=("guess",), outcome="failure"
        )
    )
    episodic.store(
        Episode(goal="clean the build cache", steps=("rm -rf cache",), outcome="success")
    )
    found = episodic.retrieve("renew billing TLS certificate", k=2)
    assert found[0].id == ok and found[0].steps[-1] == "restart billing pods"
    assert found[0].result == "cert valid until 2027" and found[0].score is not None
    assert all(e.outcome in ("success", "failure") for e in found)
    only_ok = episodic.retrieve("rotate TLS certificate", outcome="success")
    assert [e.goal for e in only_ok] == ["rotate the TLS certificate of the billing API"]
    assert "Goal: rotate the TLS" in only_ok[0].render()
    # private to the planner's agent
    other = StoreEpisodicMemory(Context.open("did:local:someone-else", recorder=recorder))
    assert other.retrieve("rotate TLS certificate") == []
    with pytest.raises(MemoryInputError, match="needs a goal"):
        episodic.store(Episode(goal=" ", steps=(), outcome="success"))


def test_noop_episodic_memory() -> None:
    noop = NoOpEpisodicMemory()
    assert isinstance(noop, EpisodicMemory)
    assert noop.store(Episode(goal="g", steps=(), outcome="success")) is None
    assert noop.retrieve("g") == []
