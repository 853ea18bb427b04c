"""Session.persist / Session.replay / fork: round trips, idempotence, read-only, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from replay_support import CARD, LONG, Tools, quads, react_session

from trails.agent import Session
from trails.errors import SessionError
from trails.prov.content import content_graph
from trails.prov.projection import FORMAT_VERSION, projection_iri
from trails.prov.vocab import NAMESPACES, PROV, T
from trails.store import IRI, Literal, Quad, Store, literal, open_store, select
from trails.testing import assert_conforms, assert_prov_readable

PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())


def assert_same_state(replayed: Session, original: Session) -> None:
    assert replayed.id == original.id
    assert replayed.iri == original.iri
    assert replayed.principal == original.principal
    assert replayed.card == original.card
    assert replayed.strategy == original.strategy
    assert replayed.budget == original.budget
    assert replayed.metadata == original.metadata
    assert replayed.history.entries == original.history.entries
    assert replayed.history.max_tokens == original.history.max_tokens
    assert replayed.history.pin_head == original.history.pin_head
    assert replayed.history.total_tokens == original.history.total_tokens
    assert replayed.invocations == original.invocations
    assert replayed.auth.credential is None  # a credential is never persisted


def test_round_trip_for_every_planner(recorded: Session, store: Store) -> None:
    before = quads(store)
    replayed = Session.replay(str(recorded.iri), store=store)

    assert_same_state(replayed, recorded)
    assert replayed.read_only and not recorded.read_only
    origin = replayed.replayed_from
    assert origin is not None and origin.graph == recorded.iri
    # every LLM completion of the session is referenced, in order
    assert len(origin.completions) >= 2
    assert len(set(origin.completions)) == len(origin.completions)
    # a replay never writes
    assert quads(store) == before
    assert_conforms(store)
    assert_prov_readable(store)


def test_round_trip_holds_unicode_long_contents_failures_and_plans(
    store: Store, tools: Tools
) -> None:
    from replay_support import plan_session, reflexion_session

    react = react_session(store)
    react.persist()
    replayed = Session.replay(str(react.iri), store=store)
    results = [r.result for r in replayed.invocations]
    assert results[0]["long"] == LONG and "定义" in results[0]["definition"]
    failed = replayed.invocations[1]
    assert (failed.status, failed.result, failed.result_sha256) == ("error", None, None)
    assert failed.error == "ValueError: no entry for 'x'"
    assert replayed.card == CARD

    planned = plan_session(store)
    planned.persist()
    assert len(Session.replay(str(planned.iri), store=store).metadata["plans"]) == 2

    reflected = reflexion_session(store)
    reflected.persist()
    critiques = Session.replay(str(reflected.iri), store=store).metadata["critiques"]
    assert [c["verdict"] for c in critiques] == ["retry", "accept"]
    assert_conforms(store)


def _without_saves(found: list[str]) -> list[str]:
    saves = {q.split(" ", 1)[0] for q in found if str(T.SessionSave) in q}
    return [q for q in found if q.split(" ", 1)[0] not in saves]


def test_persist_is_idempotent_and_replaces_the_earlier_projection(
    store: Store, tools: Tools
) -> None:
    session = react_session(store)
    graph = session.persist()
    first = _without_saves(quads(store))
    assert session.persist() == graph
    second = _without_saves(quads(store))
    # the second persist replaced the first: only the persist time changed (each save
    # itself is one more trails:SessionSave activity, a record of the action)
    assert len(second) == len(first)
    changed = set(first) ^ set(second)
    assert len(changed) == 2 and all(str(PROV.generatedAtTime) in q for q in changed)

    session.history.clear()
    session.history.append("user", "only this")
    session.metadata["note"] = "later"
    session.persist()
    replayed = Session.replay(graph, store=store)
    assert [e.content for e in replayed.history] == ["only this"]
    assert replayed.metadata == {"note": "later"}
    rows = select(
        store,
        PREFIXES + "SELECT ?g ?e WHERE { GRAPH ?g { ?e a trails:HistoryEntry } }",
        {"g": IRI(graph)},
    )
    assert len(rows) == 1
    assert_conforms(store)


def test_persist_into_another_graph(store: Store, tools: Tools) -> None:
    session = react_session(store)
    graph = session.persist(graph="audit:SKU-7-Q1")
    assert graph == "audit:SKU-7-Q1"
    assert IRI("audit:SKU-7-Q1") in store.graphs()
    by_graph = Session.replay(graph, store=store)
    by_session = Session.replay(str(session.iri), store=store)
    assert_same_state(by_graph, session)
    assert_same_state(by_session, session)
    assert by_graph.replayed_from is not None and by_graph.replayed_from.graph == graph
    assert_conforms(store)


def test_persisting_never_run_session_opens_it(store: Store) -> None:
    session = Session(principal="did:example:eve", store=store, card="https://cards/eve")
    graph = session.persist()
    replayed = Session.replay(graph, store=store)
    assert replayed.card == "https://cards/eve"
    assert replayed.history.entries == [] and replayed.invocations == []
    assert_conforms(store)


def test_persist_rejects_a_graph_that_is_not_an_iri(store: Store) -> None:
    session = Session(principal="did:example:eve", store=store)
    with pytest.raises(SessionError, match="absolute IRI"):
        session.persist(graph="not a graph")


def test_replayed_session_is_read_only(recorded: Session, store: Store) -> None:
    replayed = Session.replay(str(recorded.iri), store=store)
    before = quads(store)
    with pytest.raises(SessionError, match="read-only: call fork"):
        replayed.run("more", llm=object())
    with pytest.raises(SessionError, match="read-only"):
        _ = replayed.context
    with pytest.raises(SessionError, match="read-only replay"):
        replayed.persist()
    from trails.agent.planners import react
    from trails.kernel import Context
    from trails.llm import LLMClient
    from trails.prov import Recorder

    outside = Context.open("did:local:mallory", recorder=Recorder(store))
    before = quads(store)
    with pytest.raises(SessionError, match="read-only"):  # a caller's ctx does not bypass it
        react.run("more", llm=LLMClient.mock("finish"), session=replayed, ctx=outside)
    replayed.close()
    assert quads(store) == before


def test_fork_continues_in_a_new_session_derived_from_the_original(
    store: Store, tools: Tools
) -> None:
    from replay_support import turn

    from trails.llm import LLMClient

    original = react_session(store)
    graph = original.persist()
    replayed = Session.replay(graph, store=store)
    fork = replayed.fork(llm=LLMClient.mock(turn("finish", final_answer="again")))

    assert not fork.read_only and fork.id != replayed.id and fork.iri != original.iri
    assert fork.history.entries == replayed.history.entries
    assert fork.invocations == replayed.invocations
    rows = select(
        store,
        PREFIXES
        + """SELECT ?g ?s ?f ?from WHERE { GRAPH ?g {
               ?s prov:used ?f . ?f a trails:SessionFork ; prov:wasDerivedFrom ?from } }""",
        {"g": IRI(str(fork.iri))},
    )
    assert [(r["s"], r["from"]) for r in rows] == [(fork.iri, projection_iri(str(original.iri)))]

    result = fork.run("Continue")
    assert result.answer == "again"
    assert len(fork.history) > len(replayed.history)
    fork.persist()
    again = Session.replay(str(fork.iri), store=store)
    assert again.history.entries == fork.history.entries
    assert_conforms(store)
    assert_prov_readable(store)


def test_fork_of_a_live_session_is_refused(store: Store) -> None:
    with pytest.raises(SessionError, match="live, not replayed"):
        Session(principal="did:example:eve", store=store).fork()


# -- bad input ---------------------------------------------------------------------


def test_an_iri_naming_no_session(store: Store) -> None:
    with pytest.raises(SessionError, match=r"urn:trails:session:nobody names no session"):
        Session.replay("urn:trails:session:nobody", store=store)
    with pytest.raises(SessionError, match="not an absolute IRI"):
        Session.replay("no iri here", store=store)


def test_a_graph_without_a_projection(store: Store, tools: Tools) -> None:
    session = react_session(store)  # recorded, never persisted
    with pytest.raises(SessionError, match=r"holds no session projection.*persist\(\)") as err:
        Session.replay(str(session.iri), store=store)
    assert str(session.iri) in str(err.value)


def test_a_projection_of_an_incompatible_version(store: Store, tools: Tools) -> None:
    session = react_session(store)
    graph = IRI(session.persist())
    p = projection_iri(str(session.iri))
    store.write(
        [Quad(p, T.formatVersion, literal(FORMAT_VERSION + 1), graph)],
        remove=[Quad(p, T.formatVersion, literal(FORMAT_VERSION), graph)],
    )
    before = quads(store)
    with pytest.raises(SessionError, match=rf"{p} .*format version {FORMAT_VERSION + 1}"):
        Session.replay(graph, store=store)
    assert quads(store) == before


def test_a_projection_missing_a_property_names_it(store: Store, tools: Tools) -> None:
    session = react_session(store)
    graph = IRI(session.persist())
    p = projection_iri(str(session.iri))
    entry = IRI(f"{p}:history:1")
    content = session.history[1].content
    store.write([], remove=[Quad(entry, PROV.value, Literal(content), content_graph(graph))])
    with pytest.raises(
        SessionError, match=rf"{p} in graph {graph} has no prov:value on history #1"
    ):
        Session.replay(graph, store=store)


def test_a_graph_holding_several_sessions_asks_for_one(store: Store, tools: Tools) -> None:
    react_session(store).persist(graph="urn:audit:shared")
    Session(principal="did:example:eve", store=store).persist(graph="urn:audit:shared")
    with pytest.raises(SessionError, match="projections of 2 sessions"):
        Session.replay("urn:audit:shared", store=store)


# -- a fresh process -----------------------------------------------------------------

CHILD = """
import json, sys
from trails.agent import Session
from trails.store import open_store

store = open_store(sys.argv[1])
s = Session.replay(sys.argv[2], store=store)
print(json.dumps({
    "id": s.id, "principal": s.principal, "card": s.card, "strategy": s.strategy,
    "budget": s.budget, "metadata": s.metadata,
    "history": [[e.role, e.content, e.tokens, e.pinned] for e in s.history],
    "invocations": [[r.capability, r.args, r.result, r.args_sha256, r.result_sha256,
                     r.status, r.activity, r.error, r.started.isoformat(), r.ended.isoformat()]
                    for r in s.invocations],
    "read_only": s.read_only,
}, ensure_ascii=False))
store.close()
"""


def test_replay_in_a_separate_process(tmp_path: Path, tools: Tools) -> None:
    location = tmp_path / "store"
    store = open_store(location)
    session = react_session(store)
    graph = session.persist()
    before = quads(store)
    store.close()

    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(location), graph],
        capture_output=True,
        text=True,
        check=True,
        encoding="utf-8",
    )
    got = json.loads(out.stdout)
    assert got["id"] == session.id and got["principal"] == session.principal
    assert got["card"] == session.card and got["budget"] == session.budget
    assert got["strategy"] == "react" and got["metadata"] == session.metadata
    assert got["history"] == [[e.role, e.content, e.tokens, e.pinned] for e in session.history]
    assert got["invocations"] == [
        [
            r.capability,
            r.args,
            r.result,
            r.args_sha256,
            r.result_sha256,
            r.status,
            str(r.activity),
            r.error,
            r.started.isoformat(),
            r.ended.isoformat(),
        ]
        for r in session.invocations
    ]
    assert got["read_only"] is True
    reopened = open_store(location)
    try:
        assert quads(reopened) == before
    finally:
        reopened.close()
