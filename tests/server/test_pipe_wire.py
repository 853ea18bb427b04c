"""Jobs and outcomes travel to and from the worker processes as tuples of plain values.

Every query makes that trip, so ``job_wire`` / ``job_from_wire`` and
``outcome_wire`` must carry every field of a job and an outcome unchanged,
through pickling as the pipe does.
"""

from __future__ import annotations

import pickle
from dataclasses import fields

from trails.server.auth import Grant
from trails.server.jobs import (
    Outcome,
    QueryJob,
    WriteJob,
    job_from_wire,
    job_wire,
    outcome_wire,
)
from trails.store import IRI, BNode, Literal


def through_pipe(value: object) -> object:
    return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def test_a_query_job_arrives_whole() -> None:
    job = QueryJob(
        sparql="SELECT ?s WHERE { ?s ?p ?o }",
        grant=Grant("did:example:alice", ("own-sessions", "urn:trails:graph:memory"), audit=True),
        reserved=IRI("urn:trails:graph:access-log"),
        format="xml",
        params={"p": IRI("urn:p"), "o": Literal("x", language="en"), "b": BNode("b1")},
        default_graphs=(IRI("urn:g1"),),
        named_graphs=(IRI("urn:g2"), IRI("urn:g3")),
        base_iri="https://trails.example/",
        max_results=7,
        max_bytes=1234,
    )
    # every field set apart from its default: a field the wire left out would not arrive
    assert all(getattr(job, f.name) != f.default for f in fields(QueryJob) if f.init)
    arrived = job_from_wire(through_pipe(job_wire(job)))  # type: ignore[arg-type]
    assert arrived == job
    assert isinstance(arrived, QueryJob)
    assert type(arrived.reserved) is IRI


def test_a_job_without_options_arrives_with_its_defaults() -> None:
    job = QueryJob(sparql="ASK {}", grant=Grant("bob", ("*",)), reserved=None)
    assert job_from_wire(through_pipe(job_wire(job))) == job  # type: ignore[arg-type]


def test_a_write_job_travels_as_itself() -> None:
    job = WriteJob({"spans": [1, 2]})
    assert job_wire(job) is job
    assert job_from_wire(through_pipe(job_wire(job))) == job  # type: ignore[arg-type]


def test_an_outcome_arrives_whole() -> None:
    for outcome in (
        Outcome(data=b'{"head": {}}', count=3),
        Outcome("syntax", message="bad", line=2, column=5),
        Outcome("too_large", message="over the limit"),
    ):
        assert Outcome(*through_pipe(outcome_wire(outcome))) == outcome  # type: ignore[misc]
