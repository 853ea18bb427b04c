"""What crosses the pipe between the endpoint and its worker processes.

A ``QueryJob`` goes to a worker, an ``Outcome`` comes back (a ``WriteJob`` for
the trace receiver's writes). Every query makes that trip, so on the pipe a
query job and its outcome travel as tuples of plain values (``job_wire`` /
``job_from_wire``, ``outcome_wire`` / ``Outcome(*wire)``): a tuple of strings
and numbers pickles and unpickles in a tenth of the time of the dataclasses,
in the serving process and in the worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, Protocol

from trails.server.auth import Grant
from trails.store.terms import IRI, Term

__all__ = [
    "Outcome",
    "QueryJob",
    "WriteJob",
    "Writer",
    "job_from_wire",
    "job_wire",
    "outcome_wire",
]


@dataclass(frozen=True)
class QueryJob:
    """One query to evaluate for one grant, with the limits that apply to it.

    ``reserved`` is a graph no grant reads in the store the job runs on (the
    access log's IRI in the data store), or None. ``default_graphs`` /
    ``named_graphs`` are the request's own dataset (None: it names none).
    """

    sparql: str
    grant: Grant
    reserved: IRI | None
    format: str = "json"
    params: Mapping[str, Term] = field(default_factory=dict)
    default_graphs: tuple[IRI, ...] | None = None
    named_graphs: tuple[IRI, ...] | None = None
    base_iri: str = "urn:trails:"
    max_results: int = 100_000
    max_bytes: int = 64 * 1024 * 1024


@dataclass(frozen=True)
class Outcome:
    """What a job produced, as plain data that crosses a process boundary.

    ``kind`` is ``ok``, ``syntax`` (with ``line`` / ``column``), ``parameter``,
    ``too_large``, ``memory`` (past the worker's memory limit) or ``store``.
    """

    kind: str = "ok"
    data: bytes = b""
    count: int = 0
    message: str = ""
    line: int | None = None
    column: int | None = None


@dataclass(frozen=True)
class WriteJob:
    """A write for the worker that holds the store: ``payload`` goes to its ``Writer``."""

    payload: Any


class Writer(Protocol):
    """What a worker writes with, built in the worker over its store (see ``attach_writer``)."""

    def write(self, payload: Any) -> Outcome:
        """Write ``payload``; every failure becomes an ``Outcome``."""
        ...

    def tick(self) -> None:
        """Called every few seconds between writes (ends idle sessions ...)."""
        ...

    def close(self) -> None:
        """Finish before the store closes (the worker is stopping)."""
        ...


def job_wire(job: QueryJob | WriteJob) -> tuple[Any, ...] | WriteJob:
    """A query job as a tuple of plain values for the worker's pipe (a write as is)."""
    if isinstance(job, WriteJob):
        return job
    grant = job.grant
    return (
        job.sparql,
        grant.principal,
        grant.patterns,
        grant.audit,
        None if job.reserved is None else str(job.reserved),
        job.format,
        dict(job.params) if job.params else None,
        job.default_graphs,
        job.named_graphs,
        job.base_iri,
        job.max_results,
        job.max_bytes,
    )


def job_from_wire(wire: tuple[Any, ...] | WriteJob) -> QueryJob | WriteJob:
    """The job ``job_wire`` sent."""
    if isinstance(wire, WriteJob):
        return wire
    sparql, principal, patterns, audit, reserved, fmt, params, default, named, base, most, size = (
        wire
    )
    return QueryJob(
        sparql=sparql,
        grant=Grant(principal, patterns, audit),
        reserved=None if reserved is None else IRI.trusted(reserved),
        format=fmt,
        params=params or {},
        default_graphs=default,
        named_graphs=named,
        base_iri=base,
        max_results=most,
        max_bytes=size,
    )


_OUTCOME_FIELDS = attrgetter(*(f.name for f in fields(Outcome)))


def outcome_wire(outcome: Outcome) -> tuple[Any, ...]:
    """An outcome as the tuple of its fields, in order (``Outcome(*wire)`` rebuilds it)."""
    wire: tuple[Any, ...] = _OUTCOME_FIELDS(outcome)
    return wire
