"""Memory at scale: freshness across processes, one write per change, the index snapshot, learn_many."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import trails.memory as memory
from trails.errors import MemoryInputError
from trails.kernel import Context
from trails.memory import service, snapshot
from trails.prov import Recorder, T, sparql_prefixes
from trails.store import IRI, Literal, Quad, Solutions, Store, open_store, set_default_store
from trails.store.oxigraph import OxigraphStore
from trails.store.sparql import SparqlStore
from trails.testing import assert_conforms

PREFIXES = sparql_prefixes()


def _count(store: Store, query: str, **params: IRI) -> int:
    result = store.query(PREFIXES + query, dict(params))
    assert isinstance(result, Solutions)
    return len(result)


# -- freshness -----------------------------------------------------------------


def test_another_client_of_a_shared_server_is_seen_on_the_next_call(
    remote_store: SparqlStore, oxigraph_server: str
) -> None:
    """Two stores on one SPARQL server: each one's learns and forgets reach the other's recall."""
    ctx = Context.open("did:local:alice", recorder=Recorder(remote_store))
    kept = memory.learn("zebras have stripes", scope="shared", ctx=ctx)
    doomed = memory.learn("zebras are purple", scope="shared", ctx=ctx)
    assert {h.id for h in memory.recall("zebras", scope="shared", ctx=ctx)} == {kept.id, doomed.id}

    with open_store(oxigraph_server) as other:
        bob = Context.open("did:local:bob", recorder=Recorder(other))
        assert len(memory.recall("zebras", scope="shared", ctx=bob)) == 2
        new = memory.learn("zebras sleep standing up", scope="shared", ctx=bob)
        memory.forget(doomed.id, reason="wrong", ctx=bob)
        bob.close()

    hits = memory.recall("zebras", scope="shared", ctx=ctx)
    assert {h.id for h in hits} == {kept.id, new.id}
    assert memory.history(doomed.id, ctx=ctx)[0].status == "forgotten"
    # and alice's next write is seen by a third client
    memory.forget(kept.id, ctx=ctx)
    with open_store(oxigraph_server) as third:
        carol = Context.open("did:local:carol", recorder=Recorder(third))
        assert [h.id for h in memory.recall("zebras", scope="shared", ctx=carol)] == [new.id]
        carol.close()
    ctx.close()


SECOND = textwrap.dedent(
    """
    import json, sys
    import trails.memory as memory
    from trails.kernel import Context
    from trails.prov import Recorder
    from trails.store import open_store

    store = open_store(sys.argv[1])
    ctx = Context.open("did:local:bob", recorder=Recorder(store))
    seen = [h.content for h in memory.recall("lighthouse", scope="shared", ctx=ctx)]
    new = memory.learn("the lighthouse keeper is called Ada", scope="shared", ctx=ctx)
    memory.forget(sys.argv[2], reason="outdated", ctx=ctx)
    ctx.close()
    store.close()
    print(json.dumps({"seen": seen, "new": new.id}))
    """
)


def test_a_second_process_on_a_real_server_sees_and_is_seen(
    remote_store: SparqlStore, oxigraph_server: str
) -> None:
    ctx = Context.open("did:local:alice", recorder=Recorder(remote_store))
    old = memory.learn("the lighthouse lamp is red", scope="shared", ctx=ctx)
    stays = memory.learn("the lighthouse stands on a cliff", scope="shared", ctx=ctx)
    assert len(memory.recall("lighthouse", scope="shared", ctx=ctx)) == 2  # index loaded

    done = subprocess.run(
        [sys.executable, "-c", SECOND, oxigraph_server, old.id],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert sorted(out["seen"]) == sorted([old.content, stays.content])

    hits = memory.recall("lighthouse", scope="shared", ctx=ctx)
    assert {h.id for h in hits} == {stays.id, out["new"]}  # learned and forgotten elsewhere
    with pytest.raises(MemoryInputError, match="already forgotten"):
        memory.forget(old.id, ctx=ctx)
    ctx.close()


class CountingStore(OxigraphStore):
    """An embedded store that counts its writes and its reads of the memory-state graph."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__(path)
        self.writes = 0
        self.head_reads = 0

    def write(self, quads: Any, *, remove: Any = ()) -> None:
        self.writes += 1
        super().write(quads, remove=remove)

    def query(self, sparql: str, params: Any = None, **kw: Any) -> Any:
        if "memoryRevision" in sparql:
            self.head_reads += 1
        return super().query(sparql, params, **kw)


def test_an_embedded_store_is_read_for_freshness_once_and_each_change_is_one_write() -> None:
    store = CountingStore()
    store.write(
        [
            Quad(head, T.memoryRevision, Literal(t), head)
            for head in [IRI("urn:trails:graph:memory-state")]
            for t in ("left-by-an-earlier-process", "and-another")
        ]
    )
    ctx = Context.open("did:local:alice", recorder=Recorder(store))
    first = service.learn(ctx, "the first fact", scope="shared")
    assert store.head_reads == 1  # the first load
    assert len(service.index(ctx).head()) == 2  # the first write folded the earlier tokens
    store.head_reads -= 1
    before = store.writes
    for i in range(20):
        service.learn(ctx, f"fact number {i}", scope="shared")
    service.forget(ctx, first.id)
    service.recall(ctx, "fact", scope="shared")
    assert store.head_reads == 1  # nothing can change an embedded store behind this process
    assert store.writes - before == 22  # one write per learn, forget and recall (no invoke)
    idx = service.index(ctx)
    assert idx.head() == idx._seen and len(idx.head()) == 23  # the index knows the revision
    idx.compact()
    assert idx.head() == idx._seen and len(idx.head()) == 1
    service.learn(ctx, "after folding", scope="shared")
    assert store.writes - before == 24 and len(idx.head()) == 2
    ctx.close()
    store.close()


# -- learn_many ------------------------------------------------------------------


def test_learn_many_is_one_invocation_of_many_recorded_memories(store: Store, ctx: Context) -> None:
    old = memory.learn("the ferry leaves at nine", scope="shared", ctx=ctx)
    writes: list[int] = []
    real_write = store.write

    def counting(quads: Any, *, remove: Any = ()) -> None:
        writes.append(1)
        real_write(quads, remove=remove)

    store.write = counting  # type: ignore[method-assign]
    try:
        learned = memory.learn_many(
            [
                "the ferry has a red hull",
                {"content": "the ferry leaves at ten", "supersedes": old.id, "topic": "ferry"},
                {"content": "the captain's code is 42", "scope": "private", "tags": ["crew"]},
            ],
            scope="shared",
            ctx=ctx,
        )
    finally:
        del store.write
    assert len(writes) <= 3  # the memories in one write, plus the invocation's own record
    assert [m.scope for m in learned] == ["shared", "shared", "private"]
    assert len({m.id for m in learned}) == 3 and len({m.activity for m in learned}) == 3
    rows = _count(
        store,
        """SELECT ?m ?act WHERE {
          GRAPH ?g { ?m a trails:Memory ; prov:wasGeneratedBy ?act ; prov:generatedAtTime ?t }
          GRAPH ?s { ?act a trails:MemoryLearn ; prov:wasInformedBy ?inv .
                     ?inv trails:capability ?cap ; trails:status "ok" . }
        }""",
    )
    invocations = _count(
        store,
        """SELECT DISTINCT ?inv WHERE { GRAPH ?s { ?act a trails:MemoryLearn ; prov:wasInformedBy ?inv .
             ?inv a trails:CapabilityInvocation } }""",
    )
    assert rows == 4 and invocations == 2  # the first learn, and the batch
    assert memory.history(old.id, ctx=ctx)[-1].id == learned[1].id
    hits = memory.recall("ferry leaves", scope="shared", ctx=ctx)
    assert hits[0].id == learned[1].id and old.id not in {h.id for h in hits}
    assert_conforms(store)


def test_learn_many_refuses_a_bad_item_and_records_none(store: Store, ctx: Context) -> None:
    with pytest.raises(MemoryInputError, match=r"memories\[1\].*confidence"):
        memory.learn_many(["fine", {"content": "bad", "confidence": 7}], ctx=ctx)
    with pytest.raises(MemoryInputError, match=r"memories\[0\] has unknown fields: colour"):
        memory.learn_many([{"content": "x", "colour": "red"}], ctx=ctx)
    with pytest.raises(MemoryInputError, match=r"1\.\.10000 items"):
        memory.learn_many([], ctx=ctx)
    m = memory.learn("one", ctx=ctx)
    with pytest.raises(MemoryInputError, match="supersede the same memory"):
        memory.learn_many(
            [{"content": "a", "supersedes": m.id}, {"content": "b", "supersedes": m.id}], ctx=ctx
        )
    assert [x.id for x in memory.list_memories(ctx=ctx)] == [m.id]
    assert _count(store, "SELECT ?m WHERE { GRAPH ?g { ?m a trails:Memory } }") == 1


# -- the snapshot beside an on-disk store ------------------------------------------


def _learn_some(location: Path) -> list[str]:
    with open_store(location) as store:
        ctx = Context.open("did:local:alice", recorder=Recorder(store))
        made = memory.learn_many(
            ["the vault opens at dawn", "the vault is made of oak"], scope="shared", ctx=ctx
        )
        service.index(ctx).save_snapshot()
        ctx.close()
    return [m.id for m in made]


def _recall(location: Path, text: str) -> list[str]:
    with open_store(location) as store:
        ctx = Context.open("did:local:bob", recorder=Recorder(store))
        hits = [h.content for h in memory.recall(text, scope="shared", ctx=ctx)]
        ctx.close()
        assert_conforms(store)
    return hits


def _plant(location: Path, old: str, new: str) -> None:
    """Alter the snapshot's copy of a memory (the store keeps the truth)."""
    path = location / snapshot.FILE_NAME
    path.write_bytes(path.read_bytes().replace(old.encode(), new.encode()))


def test_a_valid_snapshot_is_used_by_the_next_process(tmp_path: Path) -> None:
    location = tmp_path / "store"
    _learn_some(location)
    assert (location / snapshot.FILE_NAME).exists()
    _plant(location, "made of oak", "made of elm")  # only the snapshot says elm
    assert sorted(_recall(location, "vault")) == [
        "the vault is made of elm",
        "the vault opens at dawn",
    ]


def test_a_snapshot_is_not_used_once_the_store_changed_behind_it(tmp_path: Path) -> None:
    location = tmp_path / "store"
    _learn_some(location)
    _plant(location, "made of oak", "made of elm")
    # another process learns without leaving a snapshot (killed, say): the revision moved on
    with open_store(location) as store:
        ctx = Context.open("did:local:carol", recorder=Recorder(store))
        idx = service.index(ctx)
        idx.snapshot_path = None  # this process leaves none
        service.learn(ctx, "the vault has a bell", scope="shared")
        ctx.close()
    hits = _recall(location, "vault")
    assert sorted(hits) == [
        "the vault has a bell",
        "the vault is made of oak",
        "the vault opens at dawn",
    ]
    # the stale snapshot was replaced by one at the current revision
    assert b"made of elm" not in (location / snapshot.FILE_NAME).read_bytes()


KILLED = textwrap.dedent(
    """
    import os, sys
    import trails.memory as memory
    from trails.kernel import Context
    from trails.prov import Recorder
    from trails.store import open_store

    store = open_store(sys.argv[1])
    ctx = Context.open("did:local:erin", recorder=Recorder(store))
    if sys.argv[2] == "learn":
        memory.learn("the vault has a bell", scope="shared", ctx=ctx)
    else:
        memory.forget(sys.argv[3], reason="wrong", ctx=ctx)
    os._exit(0)  # killed: no snapshot left at exit
    """
)


@pytest.mark.parametrize("change", ["learn", "forget"])
def test_a_learn_or_forget_in_another_process_invalidates_the_snapshot(
    tmp_path: Path, change: str
) -> None:
    location = tmp_path / "store"
    _, oak = _learn_some(location)
    _plant(location, "opens at dawn", "opens at dusk")  # only the snapshot says dusk
    planted = (location / snapshot.FILE_NAME).read_bytes()
    done = subprocess.run(
        [sys.executable, "-c", KILLED, str(location), change, oak],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (location / snapshot.FILE_NAME).read_bytes() == planted  # left as it was
    expected = (
        ["the vault has a bell", "the vault is made of oak", "the vault opens at dawn"]
        if change == "learn"
        else ["the vault opens at dawn"]  # the oak one was forgotten over there
    )
    assert sorted(_recall(location, "vault")) == expected  # read from the store, not dusk
    assert b"opens at dusk" not in (location / snapshot.FILE_NAME).read_bytes()


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1, 2]\n",
        '{"format": "trails-memory-index", "version": 99}\n',
        '{"format": 1}\n',
        "",
    ],
)
def test_a_broken_or_foreign_snapshot_is_ignored(tmp_path: Path, text: str) -> None:
    location = tmp_path / "store"
    _learn_some(location)
    (location / snapshot.FILE_NAME).write_text(text, encoding="utf-8")
    assert sorted(_recall(location, "vault")) == [
        "the vault is made of oak",
        "the vault opens at dawn",
    ]


def test_a_snapshot_with_matching_tokens_but_bad_rows_is_ignored(tmp_path: Path) -> None:
    location = tmp_path / "store"
    _learn_some(location)
    path = location / snapshot.FILE_NAME
    spoilers = [
        lambda head: dict(head, counts=[c + 1 for c in head["counts"]]),  # more than stored
        lambda head: dict(head, ids=[{"not": "an id"}] * len(head["ids"])),
        lambda head: dict(head, ids=head["ids"][:1] * len(head["ids"])),  # repeated
    ]
    for spoil in spoilers:
        raw = path.read_bytes()
        end = raw.index(b"\n")
        path.write_bytes(json.dumps(spoil(json.loads(raw[:end]))).encode() + raw[end:])
        assert sorted(_recall(location, "vault")) == [
            "the vault is made of oak",
            "the vault opens at dawn",
        ]
        fresh = path.read_bytes()  # the index was built from the store and saved again
        ids = json.loads(fresh[: fresh.index(b"\n")])["ids"]
        assert len(set(ids)) == 2 and all(isinstance(i, str) for i in ids)


EXITING = textwrap.dedent(
    """
    import sys
    import trails.memory as memory
    from trails.kernel import Context
    from trails.prov import Recorder
    from trails.store import open_store

    store = open_store(sys.argv[1])
    ctx = Context.open("did:local:dave", recorder=Recorder(store))
    memory.learn("the harbour closes at six", scope="shared", ctx=ctx)
    ctx.close()
    store.close()
    """
)


def test_a_process_that_changed_memory_leaves_a_snapshot_at_exit(tmp_path: Path) -> None:
    location = tmp_path / "store"
    _learn_some(location)
    done = subprocess.run(
        [sys.executable, "-c", EXITING, str(location)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    text = (location / snapshot.FILE_NAME).read_bytes()
    assert b"the harbour closes at six" in text  # written at exit, at the new revision
    set_default_store(None)
    assert sorted(_recall(location, "harbour vault")) == [
        "the harbour closes at six",
        "the vault is made of oak",
        "the vault opens at dawn",
    ]


def test_quads_removed_with_a_write_are_gone(store: Store) -> None:
    """The store contract the revision token relies on: add and remove in one write."""
    g = IRI("urn:trails:graph:test")
    a = Quad(IRI("urn:x:a"), IRI("urn:x:p"), IRI("urn:x:b"), g)
    b = Quad(IRI("urn:x:a"), IRI("urn:x:p"), IRI("urn:x:c"), g)
    store.write([a])
    store.write([b], remove=[a])
    assert _count(store, "SELECT ?o WHERE { GRAPH ?g { <urn:x:a> <urn:x:p> ?o } }") == 1


# -- a recall through invoke is one write ------------------------------------------


def _writes(store: Store) -> list[list[Quad]]:
    """Record every write made to ``store`` from now on (undone with ``del store.write``)."""
    made: list[list[Quad]] = []
    real_write = store.write

    def counting(quads: Any, *, remove: Any = ()) -> None:
        made.append(list(quads))
        real_write(made[-1], remove=remove)

    store.write = counting  # type: ignore[method-assign]
    return made


def test_a_recall_through_invoke_is_written_with_its_invocation(store: Store, ctx: Context) -> None:
    taught = Context.open("did:local:teacher", recorder=ctx.recorder)
    fact = memory.learn("the harbour closes at dusk", scope="shared", ctx=taught)
    taught.close()
    made = _writes(store)
    try:
        [hit] = memory.recall("harbour", scope="shared", ctx=ctx)
    finally:
        del store.write
    assert hit.id == fact.id
    [write] = made  # the invocation and the recall activity, together
    classes = {q.object for q in write if q.predicate.endswith("#type")}
    assert {T.CapabilityInvocation, T.MemoryRecall} <= classes
    # the provenance is what it was as two writes: the recall informed by its
    # invocation, using the memory, which leads back to the session that taught it
    found = _count(
        store,
        """SELECT ?recall ?session ?m ?taughtIn WHERE {
          GRAPH ?session {
            ?inv a trails:CapabilityInvocation ; trails:status "ok" ;
                 trails:capability/trails:capabilityId "memory.recall" .
            ?recall a trails:MemoryRecall ; prov:wasInformedBy ?inv ; trails:inSession ?session ;
                    prov:used ?m ; prov:qualifiedUsage [ prov:entity ?m ; trails:rank 1 ] .
          }
          GRAPH ?mg { ?m prov:wasGeneratedBy ?learn . ?learn trails:inSession ?taughtIn . }
        }""",
        session=ctx.session,
        m=IRI(fact.id),
        taughtIn=taught.session,
    )
    assert found == 1
    assert_conforms(store)


def test_a_recall_outside_invoke_or_after_its_call_is_written_by_itself(
    store: Store, ctx: Context
) -> None:
    from trails.kernel import capability, invoke

    memory.learn("the mill grinds on Mondays", scope="shared", ctx=ctx)
    kept: list[Context] = []

    @capability(id="test.keeps_its_context")
    def keeps(ctx: Context) -> str:
        kept.append(ctx)
        return "kept"

    invoke("test.keeps_its_context", {}, ctx=ctx)
    made = _writes(store)
    try:
        service.recall(ctx, "mill", scope="shared")  # no invocation: its own write
        service.recall(kept[0], "mill", scope="shared")  # its invocation was written already
    finally:
        del store.write
    assert len(made) == 2
    assert all(any(q.object == T.MemoryRecall for q in write) for write in made)
    assert_conforms(store)


def test_a_recall_in_a_call_that_fails_is_written_with_the_failed_invocation(
    store: Store, ctx: Context
) -> None:
    from trails.errors import CapabilityError
    from trails.kernel import capability, invoke

    memory.learn("the bell rings at noon", scope="shared", ctx=ctx)

    @capability(id="test.recalls_then_fails")
    def fails(ctx: Context) -> str:
        service.recall(ctx, "bell", scope="shared")
        raise RuntimeError("after the recall")

    made = _writes(store)
    try:
        with pytest.raises(CapabilityError, match="after the recall"):
            invoke("test.recalls_then_fails", {}, ctx=ctx)
    finally:
        del store.write
    [write] = made
    assert any(q.object == T.MemoryRecall for q in write)
    assert (
        _count(
            store,
            """SELECT ?r WHERE { GRAPH ?g { ?r a trails:MemoryRecall ; prov:wasInformedBy ?inv .
             ?inv trails:status "error" } }""",
        )
        == 1
    )
    assert_conforms(store)
