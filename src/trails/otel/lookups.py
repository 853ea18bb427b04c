"""The look-ups an OTLP request needs, asked together: one query for all its traces.

``trails.otel.ingest`` dedupes each trace's spans against those already recorded and
checks each session the traces go to (does it exist, does it hold received spans, has it
ended). Asked one trace and one session at a time, that was a query per trace and three
per session; these queries ask them for up to ``BATCH`` at once, each trace or session a
bound parameter (``?t0``, ``?s0`` ...), each row carrying its index (``?n``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from trails.otel.otlp import Span
from trails.prov.vocab import PROV, T
from trails.store.terms import Literal

__all__ = ["BATCH", "conversation", "recorded_query", "states_query", "true"]

BATCH = 64
"""Traces (or sessions) looked up in one query: a request's are asked together."""


@lru_cache(maxsize=16)
def recorded_query(n: int) -> str:
    """The spans recorded for ``n`` traces (``?t0`` ...), each row with its trace's index."""
    branches = " UNION ".join(
        f"{{ GRAPH ?g {{ ?a {T.traceId.n3()} ?t{i} ; {T.spanId.n3()} ?sid }} BIND({i} AS ?n) }}"
        for i in range(n)
    )
    columns = " ".join(f"?t{i}" for i in range(n))
    return f"SELECT ?g ?sid ?n {columns} WHERE {{ {branches} }}"


@lru_cache(maxsize=16)
def states_query(n: int) -> str:
    """Whether each of ``n`` sessions (``?s0`` ...) holds received spans and has ended: a row
    for each one that exists, with its index."""
    branches = " UNION ".join(
        f"{{ GRAPH ?s{i} {{ ?s{i} a {T.Session.n3()} }} BIND({i} AS ?n)"
        f" BIND(EXISTS {{ GRAPH ?s{i} {{ ?a{i} {T.traceId.n3()} ?trace{i} }} }} AS ?received)"
        f" BIND(EXISTS {{ GRAPH ?s{i} {{ ?s{i} {PROV.endedAtTime.n3()} ?end{i} }} }} AS ?ended) }}"
        for i in range(n)
    )
    columns = " ".join(f"?s{i}" for i in range(n))
    return f"SELECT ?n ?received ?ended {columns} WHERE {{ {branches} }}"


def conversation(span: Span) -> Any:
    """A span's conversation id, from its attributes alone."""
    attrs = span.attributes
    return (
        attrs.get("gen_ai.conversation.id")
        or attrs.get("session.id")
        or attrs.get("trails.session.id")
    )


def true(term: object) -> bool:
    """Whether a result term is the boolean ``true``."""
    return isinstance(term, Literal) and term.value == "true"
