"""Memory through the capabilities and the store: learn, recall, supersede, forget, lineage."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

import trails
import trails.memory as memory
from trails.kernel import Context, get_capability, invoke
from trails.memory import service
from trails.prov import PROV, Recorder, T, sparql_prefixes
from trails.prov.content import sha256_hex
from trails.store import IRI, Solutions, Store, to_python
from trails.testing import assert_conforms, assert_prov_readable

PREFIXES = sparql_prefixes()


def rows(store: Store, query: str, **params: IRI) -> list[dict[str, object]]:
    """SELECT rows as Python values, without the bound parameters (which must be projected)."""
    result = store.query(PREFIXES + query, dict(params))
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items() if k not in params} for row in result]


def test_capabilities_are_registered_on_import() -> None:
    for cid in memory.CAPABILITIES:
        assert get_capability(cid).takes_ctx
    assert get_capability("memory.learn").side_effects
    assert not get_capability("memory.recall").side_effects


def test_seed_example_learn_then_recall_from_another_agent(
    store: Store, recorder: Recorder
) -> None:
    alice = Context.open("did:web:alice.example", recorder=recorder)
    trails.invoke(
        "memory.learn",
        {
            "content": "The SPARQL proxy rejects SERVICE queries",
            "confidence": 0.99,
            "topic": "security",
            "agent_did": "did:web:alice.example",
            "scope": "shared",
        },
        ctx=alice,
    )
    alice.close()
    bob = Context.open("did:web:bob.example", recorder=recorder)
    hits = trails.invoke(
        "memory.recall", {"context": "SPARQL security", "scope": "shared"}, ctx=bob
    )
    [hit] = hits
    assert hit.content == "The SPARQL proxy rejects SERVICE queries"
    assert hit.rank == 1 and 0 < hit.score <= 1 and hit.relevance == 1.0
    lineage = hit.memory
    assert lineage.agent_did == "did:web:alice.example"
    assert lineage.session == alice.session != bob.session
    assert lineage.topic == "security" and lineage.confidence == 0.99
    assert lineage.recorded_at <= datetime.now(UTC)
    assert_conforms(store)
    assert_prov_readable(store, agents={"did:web:alice.example", "did:web:bob.example"})


def test_memory_is_provenance_in_a_scope_graph(ctx: Context) -> None:
    m = memory.learn(
        "Deploys freeze on Fridays", topic="ops", tags=["deploy", "policy"], scope="shared", ctx=ctx
    )
    graph = ctx.recorder.minter.graph("memory/shared")
    [row] = rows(
        ctx.store,
        """SELECT ?m ?g ?value ?conf ?scope ?act ?agent ?t ?src WHERE { GRAPH ?g {
            ?m a trails:Memory , prov:Entity ; trails:confidence ?conf ;
               trails:scope ?scope ; prov:wasGeneratedBy ?act ; prov:wasAttributedTo ?agent ;
               prov:generatedAtTime ?t ; prov:wasDerivedFrom ?src }
            GRAPH ?cg { ?m prov:value ?value } }""",
        m=IRI(m.id),
        g=graph,
    )
    assert row["value"] == "Deploys freeze on Fridays" and row["conf"] == 1.0
    assert row["scope"] == "shared" and row["agent"] == "did:local:alice"
    assert row["act"] == m.activity and row["t"] == m.recorded_at
    # learned through the capability: derived from that invocation's input
    [inv] = rows(
        ctx.store,
        """SELECT ?src ?s ?inv WHERE { GRAPH ?s {
            ?inv a trails:CapabilityInvocation ; prov:used ?src ; trails:capability ?cap .
            ?cap trails:capabilityId "memory.learn" } }""",
        src=IRI(str(row["src"])),
        s=ctx.session,
    )
    # the learn activity is on the session's timeline, informed by that invocation
    [op] = rows(
        ctx.store,
        """SELECT ?a ?m ?s ?parent ?session WHERE { GRAPH ?s {
            ?a a trails:MemoryLearn , trails:MemoryOperation , prov:Activity ;
               prov:generated ?m ; prov:wasInformedBy ?parent ; trails:inSession ?session } }""",
        a=IRI(m.activity),
        m=IRI(m.id),
        s=ctx.session,
    )
    assert op == {"parent": inv["inv"], "session": ctx.session}
    # topic and tags are content (they may name a person): in the content graph, with
    # their digests in the memory graph, so erasure removes them
    [tags] = rows(
        ctx.store,
        """SELECT ?m ?tags ?digest WHERE { GRAPH ?cg { ?m trails:tags ?tags }
            GRAPH ?g { ?m trails:tagsSha256 ?digest } FILTER (STRENDS(STR(?cg), ":content")) }""",
        m=IRI(m.id),
    )
    assert sorted(json.loads(tags["tags"])) == ["deploy", "policy"]
    assert tags["digest"] == sha256_hex(tags["tags"])
    assert_conforms(ctx.store)
    assert_prov_readable(ctx.store, entities={m.id})


def test_derived_from_names_the_completion_it_came_from(ctx: Context) -> None:
    source = memory.recall("anything", scope="shared", ctx=ctx)  # any recorded output will do
    assert source == []
    [out] = rows(
        ctx.store,
        "SELECT ?e WHERE { GRAPH ?g { ?e a trails:CapabilityOutput } }",
    )
    m = memory.learn("Recall came back empty", derived_from=str(out["e"]), ctx=ctx)
    assert m.derived_from == out["e"]
    with pytest.raises(trails.UserError, match="no recorded entity"):
        memory.learn("from nowhere", derived_from="urn:trails:entity:missing", ctx=ctx)


def test_auditor_query_which_memories_influenced_a_decision(
    store: Store, recorder: Recorder
) -> None:
    teacher = Context.open("did:local:teacher", recorder=recorder)
    a = memory.learn(
        "Refunds above 500 EUR need a second approver", topic="refunds", scope="shared", ctx=teacher
    )
    memory.learn("The cafeteria opens at eight", scope="shared", ctx=teacher)
    teacher.close()
    agent = Context.open("did:local:clerk", recorder=recorder)
    hits = memory.recall("refund approver rule", scope="shared", k=1, ctx=agent)
    assert [h.id for h in hits] == [a.id]
    # "which memories influenced this session's decisions, and where was each learned"
    found = rows(
        store,
        """SELECT ?session ?memory ?content ?learner ?learnedIn ?learnedAt ?rank WHERE {
            GRAPH ?session {
                ?recall a trails:MemoryRecall ; prov:used ?memory ; prov:qualifiedUsage ?u .
                ?u prov:entity ?memory ; trails:rank ?rank .
            }
            GRAPH ?mg {
                ?memory prov:wasAttributedTo ?learner ;
                        prov:generatedAtTime ?learnedAt ; prov:wasGeneratedBy ?learn .
                ?learn trails:inSession ?learnedIn .
            }
            GRAPH ?cg { ?memory prov:value ?content }
        }""",
        session=agent.session,
    )
    assert found == [
        {
            "memory": a.id,
            "content": a.content,
            "learner": "did:local:teacher",
            "learnedIn": teacher.session,
            "learnedAt": a.recorded_at,
            "rank": 1,
        }
    ]
    assert_conforms(store)


def test_private_memories_only_visible_to_their_agent(store: Store, recorder: Recorder) -> None:
    alice = Context.open("did:local:alice", recorder=recorder)
    bob = Context.open("did:local:bob", recorder=recorder)
    secret = memory.learn("alice keeps the vault key in locker 7", scope="private", ctx=alice)
    assert [h.id for h in memory.recall("vault key locker", scope="private", ctx=alice)] == [
        secret.id
    ]
    assert memory.recall("vault key locker", scope="private", ctx=bob) == []
    assert memory.recall("vault key locker", scope="all", ctx=bob) == []
    assert memory.recall("vault key locker", scope="shared", ctx=alice) == []
    assert memory.list(scope="all", ctx=bob) == []
    with pytest.raises(trails.UserError, match="private to another agent"):
        memory.forget(secret.id, ctx=bob)
    with pytest.raises(trails.UserError, match="private to another agent"):
        memory.history(secret.id, ctx=bob)
    graphs = set(store.graphs())
    assert recorder.minter.graph("memory/private/did:local:alice") in graphs


def test_session_scope_stays_in_its_session(store: Store, recorder: Recorder) -> None:
    one = Context.open("did:local:alice", recorder=recorder)
    two = Context.open("did:local:alice", recorder=recorder)
    m = memory.learn("scratch: the build id is 4411", scope="session", ctx=one)
    assert [h.id for h in memory.recall("build id", scope="session", ctx=one)] == [m.id]
    assert memory.recall("build id", scope="session", ctx=two) == []
    assert [h.id for h in memory.recall("build id", scope="all", ctx=one)] == [m.id]


def test_supersede_retires_the_old_version_and_as_of_sees_the_past(ctx: Context) -> None:
    old = memory.learn(
        "The staging database listens on port 5432", topic="db", scope="shared", ctx=ctx
    )
    between = datetime.now(UTC)
    new = memory.learn(
        "The staging database listens on port 6543",
        topic="db",
        scope="shared",
        supersedes=old.id,
        ctx=ctx,
    )
    assert new.revision_of == old.id
    assert [h.id for h in memory.recall("staging database port", scope="shared", ctx=ctx)] == [
        new.id
    ]
    past = memory.recall("staging database port", scope="shared", as_of=between, ctx=ctx)
    assert [h.id for h in past] == [old.id]
    before_all = old.recorded_at - timedelta(seconds=1)
    assert memory.recall("staging database port", scope="shared", as_of=before_all, ctx=ctx) == []
    chain = memory.history(new.id, ctx=ctx)
    assert [(m.id, m.status) for m in chain] == [(old.id, "superseded"), (new.id, "current")]
    assert chain[0].superseded_by == new.id and chain[0].invalidated_by == new.activity
    [row] = rows(
        ctx.store,
        """SELECT ?new ?rev ?inv ?by WHERE { GRAPH ?g {
            ?new prov:wasRevisionOf ?rev . ?rev prov:invalidatedAtTime ?inv ; prov:wasInvalidatedBy ?by } }""",
        new=IRI(new.id),
    )
    assert row == {"rev": old.id, "inv": new.recorded_at, "by": new.activity}
    with pytest.raises(trails.UserError, match="already superseded"):
        memory.learn("port 7000", supersedes=old.id, scope="shared", ctx=ctx)
    assert_conforms(ctx.store)


def test_forget_invalidates_without_erasing(ctx: Context) -> None:
    m = memory.learn("The office wifi password is hunter2", scope="shared", ctx=ctx)
    gone = memory.forget(m.id, reason="rotated", ctx=ctx)
    assert gone.status == "forgotten" and gone.reason == "rotated"
    assert memory.recall("office wifi password", scope="shared", ctx=ctx) == []
    assert [x.id for x in memory.list(scope="shared", include_retired=True, ctx=ctx)] == [m.id]
    assert memory.list(scope="shared", ctx=ctx) == []
    [row] = rows(
        ctx.store,
        """SELECT ?m ?value ?at ?reason WHERE {
            GRAPH ?g { ?m prov:invalidatedAtTime ?at ; prov:wasInvalidatedBy ?f }
            GRAPH ?cg { ?m prov:value ?value }
            GRAPH ?s { ?f a trails:MemoryForget ; prov:invalidated ?m ; trails:reason ?reason } }""",
        m=IRI(m.id),
    )
    assert row["value"] == m.content and row["reason"] == "rotated"
    # the bare UUID works as an id too
    with pytest.raises(trails.UserError, match="already forgotten"):
        memory.forget(m.id.rsplit(":", 1)[1], ctx=ctx)
    assert_conforms(ctx.store)


def test_validity_interval_is_apart_from_recording_time(ctx: Context) -> None:
    m = memory.learn(
        "The Lyon office hosted the data team",
        valid_from="2019-01-01T00:00:00Z",
        valid_until=datetime(2022, 6, 30, tzinfo=UTC),
        scope="shared",
        ctx=ctx,
    )
    assert m.valid_from == datetime(2019, 1, 1, tzinfo=UTC)
    hits = memory.recall("Lyon office", scope="shared", valid_at="2020-05-01", ctx=ctx)
    assert [h.id for h in hits] == [m.id]
    assert memory.recall("Lyon office", scope="shared", valid_at="2023-01-01", ctx=ctx) == []
    assert [h.id for h in memory.recall("Lyon office", scope="shared", ctx=ctx)] == [m.id]


def test_ranking_uses_confidence_and_filters(ctx: Context) -> None:
    low = memory.learn(
        "The release train leaves on Monday",
        confidence=0.2,
        scope="shared",
        tags=["release"],
        ctx=ctx,
    )
    high = memory.learn(
        "The release train leaves on Thursday",
        confidence=0.95,
        scope="shared",
        topic="Release",
        ctx=ctx,
    )
    hits = memory.recall("release train", scope="shared", ctx=ctx)
    assert [h.id for h in hits] == [high.id, low.id]
    assert hits[0].score > hits[1].score
    assert [
        h.id for h in memory.recall("release train", scope="shared", min_confidence=0.5, ctx=ctx)
    ] == [high.id]
    assert [
        h.id for h in memory.recall("release train", scope="shared", topic="release", ctx=ctx)
    ] == [high.id]
    assert [
        h.id for h in memory.recall("release train", scope="shared", tags=["release"], ctx=ctx)
    ] == [low.id]
    assert [h.id for h in memory.recall("release train", scope="shared", k=1, ctx=ctx)] == [high.id]
    # blank context: everything visible, by confidence and recency
    assert [h.id for h in memory.recall("", scope="shared", ctx=ctx)] == [high.id, low.id]


def test_every_recall_is_recorded_even_when_empty(ctx: Context) -> None:
    memory.recall("nothing here", scope="shared", ctx=ctx)
    [row] = rows(
        ctx.store,
        """SELECT ?s ?q ?scope WHERE { GRAPH ?s { ?a a trails:MemoryRecall ;
            trails:recallQuerySha256 ?d ; trails:scope ?scope . FILTER NOT EXISTS { ?a prov:used ?m } }
            GRAPH ?content { ?a trails:recallQuery ?q } }""",
        s=ctx.session,
    )
    assert row == {"q": "nothing here", "scope": "shared"}
    assert_conforms(ctx.store)


class KeywordRanker:
    """A tiny embedding ranker: similarity is 1 for texts containing a marker word."""

    name = "keyword"

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.calls = 0

    def similarity(self, query: str, texts: list[str]) -> list[float]:
        self.calls += 1
        return [1.0 if self.marker in t else 0.0 for t in texts]


def test_embedding_ranker_is_off_by_default_and_reranks_when_set(ctx: Context) -> None:
    assert service.config().ranker is None
    first = memory.learn("cache invalidation cache invalidation strategy", scope="shared", ctx=ctx)
    second = memory.learn("cache warmup note (preferred)", scope="shared", ctx=ctx)
    assert memory.recall("cache invalidation", scope="shared", ctx=ctx)[0].id == first.id
    ranker = KeywordRanker("preferred")
    assert isinstance(ranker, memory.EmbeddingRanker)
    memory.set_ranker(ranker)
    try:
        hits = memory.recall("cache invalidation", scope="shared", ctx=ctx)
        assert hits[0].id == second.id and ranker.calls == 1
    finally:
        memory.set_config(None)
    assert service.config().ranker is None


def test_index_reload_matches_what_was_learned(ctx: Context) -> None:
    a = memory.learn("alpha fact", scope="shared", tags=["x"], ctx=ctx)
    b = memory.learn("beta fact", scope="shared", supersedes=a.id, ctx=ctx)
    memory.forget(b.id, reason="wrong", ctx=ctx)
    idx = service.index(ctx)
    before = {m: idx.get(m) for m in (a.id, b.id)}
    idx.reload()
    after = {m: idx.get(m) for m in (a.id, b.id)}
    assert after == before
    assert after[b.id].status == "forgotten" and after[a.id].status == "superseded"


def test_vocabulary_used_is_declared() -> None:
    for term in (
        T.MemoryLearn,
        T.MemoryRecall,
        T.MemoryForget,
        T.confidence,
        T.scope,
        T.memoryRevision,
    ):
        assert term.startswith("https://w3id.org/trails/ns#")
    assert PROV.invalidatedAtTime.endswith("invalidatedAtTime")


def test_recall_without_a_context_uses_the_default_session(store: Store) -> None:
    m = memory.learn("default session memory", scope="shared")
    [hit] = memory.recall("default session", scope="shared")
    assert hit.id == m.id and hit.memory.session is not None
    out = invoke("memory.list", {"scope": "shared"})
    assert [x.id for x in out] == [m.id]
