"""Spans the OTLP receiver refused, kept as evidence an auditor can query.

An exporter told that spans were refused (a 200 with ``partial_success``, or a 400)
drops them; without a record, nobody else would ever know they were sent. Spans that
arrive after their session ended and was sealed (too late), and spans naming a session
the receiver did not start (another writer's), are each recorded as a
``trails:SpansRefused`` activity in the receiver's refusals graph
(``Minter.graph("otlp-refusals")``): which session they named, how many, their trace
ids, who sent them (the write token's principal) and why. Written in the same atomic
write as the rest of the batch; nothing is ever written into the refused session.
"""

from __future__ import annotations

from datetime import datetime

from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import T
from trails.store.terms import IRI

__all__ = ["REFUSALS", "SpansRefused", "refusals_graph"]

REFUSALS = "otlp-refusals"
"""The name of the refusals graph (``Minter.graph(REFUSALS)``)."""


def refusals_graph(minter: Minter) -> IRI:
    """The graph the receiver records its refusals in."""
    return minter.graph(REFUSALS)


class SpansRefused(Event):
    """Spans of one batch refused for one session. ``session`` is the refusals graph."""

    activity: str
    refused_session: str
    spans: int
    trace_ids: tuple[str, ...]
    reason: str
    principal: str | None
    at: datetime

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        b.activity(a, T.SpansRefused, self.at, self.at)
        b.add(a, T.refusedSession, IRI.trusted(self.refused_session))
        b.value(a, T.refusedSpanCount, self.spans)
        b.value(a, T.reason, self.reason)
        for trace in self.trace_ids:
            b.value(a, T.traceId, trace)
        if self.principal:
            b.associate(a, b.agent(self.principal))
        b.label(a, f"{self.spans} span(s) refused")
