"""Every action is evidence: the seeds' last missing behaviours, read back with SPARQL.

One test per row of the seeds' coverage table built here, written from the seed's
text: seed 002's ``trace_metadata``, ``on_session_save`` / ``on_session_load``,
``EntityMemory`` and ``KnowledgeGraphMemory`` (``on_entity_extraction``), streaming
tools (``on_tool_chunk``); seed 004's attachments.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from trails.agent import Session
from trails.agent.knowledge import EntityMemory, KnowledgeGraphMemory
from trails.agent.planners import behaviour_tree, react
from trails.agent.planners.behaviour_tree import AgentNode, Attachment
from trails.errors import UserError
from trails.kernel import ObserverBase, capability
from trails.kernel.observe import ObserverEvent
from trails.llm import LLMClient, ModelServerError
from trails.memory import list_memories
from trails.store import Solutions, Store, to_python

PREFIXES = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""


def finish(answer: str) -> str:
    return json.dumps(
        {"thought": "t", "action": "finish", "action_input": {}, "final_answer": answer}
    )


def call(action: str, **args: Any) -> str:
    return json.dumps({"thought": "t", "action": action, "action_input": args})


def rows(store: Store, query: str, **params: Any) -> list[dict[str, Any]]:
    from trails.store import IRI

    bound = {k: IRI(v) if isinstance(v, str) and ":" in v else v for k, v in params.items()}
    result = store.query(PREFIXES + query, bound)
    assert isinstance(result, Solutions)
    return [{k: to_python(v) for k, v in row.items()} for row in result]


class Seen(ObserverBase):
    def __init__(self) -> None:
        self.events: list[ObserverEvent] = []

    def on_event(self, event: ObserverEvent) -> None:
        self.events.append(event)

    def of(self, kind: str) -> list[ObserverEvent]:
        return [e for e in self.events if e.kind == kind]


# -- seed 002: trace_metadata={"user_id": "u123", "environment": "production"} ----------

TRACE_METADATA = """
SELECT ?session ?m ?value ?at WHERE {
  GRAPH ?session { ?m a trails:TraceMetadata, prov:Entity ;
                      prov:wasGeneratedBy ?session ; prov:generatedAtTime ?at .
                   ?session a trails:Session }
  GRAPH ?content { ?m prov:value ?value }
}
"""


def test_trace_metadata_is_recorded_on_the_session(store: Store) -> None:
    metadata = {"user_id": "u123", "environment": "production"}
    session = Session(principal="did:local:alice", trace_metadata=metadata)
    react.run("classify this", llm=LLMClient.mock([finish("spam")]), session=session, tools=[])
    assert session.trace_metadata == metadata
    found = rows(store, TRACE_METADATA)
    assert len(found) == 1
    assert json.loads(found[0]["value"]) == metadata
    assert found[0]["session"] == session.iri
    react.run("and this", llm=LLMClient.mock([finish("ham")]), session=session, tools=[])
    assert len(rows(store, TRACE_METADATA)) == 1  # recorded once, when the session started


def test_a_session_without_trace_metadata_records_none(store: Store) -> None:
    react.run(
        "g", llm=LLMClient.mock([finish("x")]), session=Session(principal="did:local:a"), tools=[]
    )
    assert rows(store, TRACE_METADATA) == []


@pytest.mark.parametrize(
    "bad", [["user_id"], {"": 1}, {1: "x"}, {"when": object()}, {"x": float("nan")}]
)
def test_bad_trace_metadata_is_a_user_error(bad: Any) -> None:
    with pytest.raises(UserError, match="trace_metadata"):
        Session(principal="did:local:alice", trace_metadata=bad)


# -- seed 002: on_session_save / on_session_load (session_id, message_count) ----------------

SAVES = """
SELECT ?session ?save ?count WHERE {
  GRAPH ?session { ?save a trails:SessionSave, prov:Activity ; trails:inSession ?session ;
                         trails:messageCount ?count ; prov:startedAtTime ?t }
} ORDER BY ?t
"""

LOADS = """
SELECT ?load ?session ?count ?projection WHERE {
  GRAPH ?session { ?load a trails:SessionLoad, prov:Activity ; trails:inSession ?session ;
                         trails:messageCount ?count ; prov:used ?projection }
  GRAPH ?saved { ?projection a trails:SessionProjection }
}
"""


@pytest.mark.seed_row("002-058")
def test_saving_and_loading_a_session_are_recorded_activities(store: Store) -> None:
    seen = Seen()
    session = Session(principal="did:local:alice", observers=[seen])
    react.run("My name is Alice", llm=LLMClient.mock([finish("hi Alice")]), session=session)
    session.persist()
    react.run("What's my name?", llm=LLMClient.mock([finish("Alice")]), session=session)
    graph = session.persist()
    saves = rows(store, SAVES, session=session.iri)
    assert [s["count"] for s in saves] == [3, 5]  # system prompt, goals and answers
    saved = seen.of("session_save")
    assert [(e.data["session_id"], e.data["message_count"]) for e in saved] == [
        (session.id, 3),
        (session.id, 5),
    ]
    assert [e.call_id for e in saved] == [s["save"] for s in saves]

    later = Seen()
    loaded = Session.replay(str(graph)).fork(observers=[later])
    assert "Alice" in loaded.history.entries[-1].content
    found = rows(store, LOADS)
    assert len(found) == 1 and found[0]["session"] == loaded.iri and found[0]["count"] == 5
    assert found[0]["projection"].startswith(session.iri)
    (event,) = later.of("session_load")
    assert event.data == {"session_id": loaded.id, "message_count": 5}
    assert event.call_id == found[0]["load"]


# -- seed 002: EntityMemory / KnowledgeGraphMemory ([Known Entities], [Known Relationships]) --

LEARNED = """
SELECT ?memory ?content ?topic ?completion ?run ?session WHERE {
  GRAPH ?mg { ?memory a trails:Memory ; prov:wasDerivedFrom ?completion .
              FILTER NOT EXISTS { ?memory prov:wasInvalidatedBy ?gone } }
  GRAPH ?mc { ?memory prov:value ?content ; trails:topic ?topic }
  GRAPH ?session { ?completion a trails:Completion ; prov:wasGeneratedBy ?llm .
                   ?llm a trails:LLMCompletion ; prov:wasInformedBy ?run ; trails:inSession ?session .
                   ?run a trails:PlanRun }
} ORDER BY ?content
"""


def test_entity_memory_learns_each_turns_entities_with_provenance(store: Store) -> None:
    seen = Seen()
    extractor = LLMClient.mock(
        [
            json.dumps(
                [
                    {"name": "Alice", "type": "person", "attributes": "works at Acme Corp"},
                    {"name": "Acme Corp", "type": "organization"},
                ]
            ),
            "[]",
        ]
    )
    session = Session(
        principal="did:local:bob", entity_memory=EntityMemory(provider=extractor), observers=[seen]
    )
    model = LLMClient.mock([finish("Noted."), finish("Alice works at Acme Corp.")])
    first = react.run("I'm working with Alice from Acme Corp", llm=model, session=session, tools=[])
    learned = rows(store, LEARNED)
    assert [r["content"] for r in learned] == [
        "Acme Corp (organization)",
        "Alice (person): works at Acme Corp",
    ]
    assert {r["topic"] for r in learned} == {"entity"}
    assert {r["run"] for r in learned} == {first.activity_iri}  # the run that taught them
    assert {r["session"] for r in learned} == {session.iri}
    assert "I'm working with Alice" in extractor.requests[0].messages[1].content
    (event,) = seen.of("entity_extraction")[:1]
    assert event.data["entities"] == [
        "Alice (person): works at Acme Corp",
        "Acme Corp (organization)",
    ]
    assert event.data["turn_count"] == 1

    react.run("Who is Alice?", llm=model, session=session, tools=[])
    system = model.requests[1].messages[0].content
    assert "[Known Entities]\n- Alice (person): works at Acme Corp\n- Acme Corp (organization)" in (
        system
    )
    assert "[Known Relationships]" not in system


def test_an_entity_known_again_with_new_details_supersedes_the_old(store: Store) -> None:
    extractor = LLMClient.mock(
        [
            '[{"name": "Alice", "type": "person", "attributes": "works at Acme Corp"}]',
            '[{"name": "Alice", "type": "person", "attributes": "works at Acme Corp"}]',
            '[{"name": "Alice", "type": "person", "attributes": "moved to Initech"}]',
        ]
    )
    session = Session(principal="did:local:bob", entity_memory=EntityMemory(llm=extractor))
    model = LLMClient.mock([finish("ok")] * 3)
    for goal in ("Alice is at Acme", "Alice is still at Acme", "Alice moved to Initech"):
        react.run(goal, llm=model, session=session, tools=[])
    current = rows(store, LEARNED)
    assert [r["content"] for r in current] == ["Alice (person): moved to Initech"]
    every = list_memories(topic="entity", include_retired=True, ctx=session.context)
    assert len(every) == 2  # the same fact told twice was learned once
    assert "works at Acme Corp" in model.requests[2].messages[0].content


def test_knowledge_graph_memory_learns_triples(store: Store) -> None:
    seen = Seen()
    extractor = LLMClient.mock(
        ['[{"subject": "Alice", "relation": "manages", "object": "Project Alpha"}]', "[]"]
    )
    session = Session(
        principal="did:local:bob",
        knowledge_graph=KnowledgeGraphMemory(llm=extractor),
        observers=[seen],
    )
    model = LLMClient.mock([finish("Noted."), finish("Alice.")])
    react.run("Alice manages Project Alpha", llm=model, session=session, tools=[])
    learned = rows(store, LEARNED)
    assert [(r["content"], r["topic"]) for r in learned] == [
        ("(Alice, manages, Project Alpha)", "relationship")
    ]
    assert seen.of("entity_extraction")[0].data["relationships"] == [
        "(Alice, manages, Project Alpha)"
    ]
    react.run("Who manages Project Alpha?", llm=model, session=session, tools=[])
    assert "[Known Relationships]\n- (Alice, manages, Project Alpha)" in (
        model.requests[1].messages[0].content
    )


def test_a_failed_extraction_leaves_the_run_as_it_was(store: Store) -> None:
    down = LLMClient.mock([ModelServerError("extractor down", provider="mock", status=503)] * 4)
    session = Session(
        principal="did:local:bob",
        entity_memory=EntityMemory(llm=down),
        knowledge_graph=KnowledgeGraphMemory(llm=LLMClient.mock(["not json at all"])),
    )
    result = react.run("Alice is here", llm=LLMClient.mock([finish("ok")]), session=session)
    assert (result.stopped, result.answer) == ("goal_achieved", "ok")
    assert rows(store, LEARNED) == []
    failed = rows(
        store,
        """SELECT ?c WHERE { GRAPH ?g { ?c a trails:LLMCompletion ; trails:status "error" } }""",
    )
    assert len(failed) == 1  # the failed extraction is on record like any model call


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Session(principal="did:local:a", entity_memory="yes"), "entity_memory="),
        (
            lambda: Session(principal="did:local:a", knowledge_graph=EntityMemory()),
            "knowledge_graph=",
        ),
        (lambda: EntityMemory(llm="gpt"), "LLM client"),
        (lambda: KnowledgeGraphMemory(scope="world"), "scope"),
        (lambda: EntityMemory(max_entities=0), "limit"),
    ],
)
def test_bad_knowledge_settings_are_user_errors(make: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        make()


# -- seed 002: streaming tools (on_tool_chunk: call_id, tool_name, chunk) --------------------

OUTPUT = """
SELECT ?inv ?value WHERE {
  GRAPH ?g { ?out a trails:CapabilityOutput ; prov:wasGeneratedBy ?inv }
  GRAPH ?c { ?out prov:value ?value }
}
"""


def test_a_streaming_capability_yields_chunks_and_records_their_join(store: Store) -> None:
    @capability(id="report.stream", description="Stream a report, piece by piece.")
    def stream_report(topic: str) -> Iterator[str]:
        yield from (f"{topic}: ", "revenue ", "was flat")

    model = LLMClient.mock([call("report.stream", topic="Q1"), finish("done")])
    session = Session(principal="did:local:alice")
    events = list(
        react.stream("Report on Q1.", llm=model, session=session, tools=["report.stream"])
    )
    chunks = [e for e in events if isinstance(e, ObserverEvent) and e.kind == "tool_chunk"]
    assert [e.data["chunk"] for e in chunks] == ["Q1: ", "revenue ", "was flat"]
    assert {e.data["capability"] for e in chunks} == {"report.stream"}
    invocation = session.invocations[-1]
    assert {e.call_id for e in chunks} == {invocation.activity}
    assert invocation.result == "Q1: revenue was flat"
    assert [json.loads(r["value"]) for r in rows(store, OUTPUT, inv=invocation.activity)] == [
        "Q1: revenue was flat"
    ]
    kinds = [e.kind for e in events if isinstance(e, ObserverEvent)]
    assert kinds.index("tool_start") < kinds.index("tool_chunk") < kinds.index("tool_end")


def test_a_streaming_capability_of_other_chunks_records_their_list(store: Store) -> None:
    from trails.kernel import invoke

    @capability(id="rows.stream", description="Stream rows.")
    def stream_rows(n: int) -> Iterator[dict[str, int]]:
        for i in range(n):
            yield {"row": i}

    session = Session(principal="did:local:alice")
    assert invoke("rows.stream", {"n": 2}, ctx=session.context) == [{"row": 0}, {"row": 1}]
    assert [json.loads(r["value"]) for r in rows(store, OUTPUT)] == [[{"row": 0}, {"row": 1}]]


# -- seed 004: Attachments (file/media attachments of the incoming message) ------------------

ATTACHMENTS = """
SELECT ?run ?a ?label ?type ?size ?sha WHERE {
  GRAPH ?g { ?run a trails:BehaviourTreePlan ; prov:used ?a .
             ?a a trails:Attachment, prov:Entity ; rdfs:label ?label ; trails:mediaType ?type ;
                trails:byteSize ?size ; trails:sha256 ?sha }
} ORDER BY ?label
"""


def test_attachments_are_entities_with_digests_shown_to_agent_nodes(
    store: Store, tmp_path: Any
) -> None:
    plan = tmp_path / "main.tf"
    plan.write_text('resource "aws_s3_bucket" "logs" {}\n')
    image = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
    model = LLMClient.mock([finish("one bucket")])
    result = behaviour_tree.run(
        "Review the attached plan.",
        llm=model,
        session=Session(principal="did:local:alice"),
        tree=AgentNode("count the resources"),
        tools=[],
        attachments=[Attachment.from_path(plan), Attachment("diagram.png", image, "image/png")],
    )
    assert (result.stopped, result.answer) == ("goal_achieved", "one bucket")
    found = rows(store, ATTACHMENTS, run=result.activity_iri)
    assert [(r["type"], r["size"], r["sha"]) for r in found] == [
        ("text/plain", plan.stat().st_size, hashlib.sha256(plan.read_bytes()).hexdigest()),
        ("image/png", len(image), hashlib.sha256(image).hexdigest()),
    ]
    system = model.requests[0].messages[0].content
    assert 'resource "aws_s3_bucket" "logs"' in system  # a text attachment by its text
    assert "diagram.png (image/png, 48 bytes, sha256 " in system
    assert "attached as an image" in system  # and sent as one, on the first user message
    assert [i.data for i in model.requests[0].messages[1].images] == [image]


def test_bad_attachments_are_user_errors(tmp_path: Any) -> None:
    with pytest.raises(UserError, match="list of trails Attachment"):
        behaviour_tree.run(
            "g",
            llm=LLMClient.mock([]),
            session=Session(principal="did:local:a"),
            tree=AgentNode("x"),
            attachments=Attachment("a.txt", "x", "text/plain"),
        )
    with pytest.raises(UserError, match="cannot read attachment"):
        Attachment.from_path(tmp_path / "missing.txt")
    with pytest.raises(UserError, match="MIME type"):
        Attachment("a", b"x", "png")


# -- where an auditor looks: the pack's session-records ---------------------------------------


def test_the_pack_lists_what_a_session_recorded_about_itself(store: Store) -> None:
    from trails.audit.querypack import get_query

    session = Session(principal="did:local:alice", trace_metadata={"environment": "staging"})
    behaviour_tree.run(
        "Read it.",
        llm=LLMClient.mock([finish("read")]),
        session=session,
        tree=AgentNode("read the note"),
        tools=[],
        attachments=[Attachment("note.txt", "hello", "text/plain")],
    )
    session.persist()
    fork = Session.replay(str(session.iri)).fork()
    fork.context  # noqa: B018 - the fork's start (and its load) is recorded here
    mine = [
        {k: to_python(v) for k, v in row.items()}
        for row in get_query("session-records").run(store, session=session.iri)
    ]
    assert [r["kind"] for r in mine] == ["trace_metadata", "attachment", "save"]
    assert json.loads(mine[0]["metadata"]) == {"environment": "staging"}
    assert mine[1]["sha256"] == hashlib.sha256(b"hello").hexdigest() and mine[1]["bytes"] == 5
    assert mine[2]["messages"] == len(session.history)
    (load,) = [
        to_python(r["kind"]) for r in get_query("session-records").run(store, session=fork.iri)
    ]
    assert load == "load"
