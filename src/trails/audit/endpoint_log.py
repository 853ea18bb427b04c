"""The endpoint's access log: every query received, recorded as provenance.

Each request that reaches the SPARQL endpoint, answered or refused, becomes a
``trails:QueryReceived`` activity in the access-log graph
(``Minter.graph("access-log")``): who asked (``prov:wasAssociatedWith`` the
token's principal; nobody for a request without a valid token), what (it
``prov:used`` a ``trails:SparqlQuery`` entity holding the text and its
sha256), when (start and end), how many results were sent and how it ended
(``trails:status``, ``trails:httpStatus``). Ordinary tokens cannot read that
graph; audit tokens can, through the same endpoint.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from trails.prov.builder import QuadBuilder
from trails.prov.content import canonical_json
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import T
from trails.store.terms import IRI, Quad

__all__ = ["ACCESS_LOG", "QueryReceived", "Status", "access_log_quads"]

ACCESS_LOG = "access-log"

Status = Literal["ok", "refused", "invalid", "unauthorized", "timeout", "error"]


class QueryReceived(Event):
    """One request to the endpoint. It lives in the access-log graph, not in a session.

    ``session`` is unused (the access log is not a session); ``log_graph`` is
    the graph the event is written to.
    """

    session: str = ""
    log_graph: str
    activity: str
    principal: str | None
    query: str
    query_name: str | None = None
    params: dict[str, Any] | None = None
    received: datetime
    ended: datetime
    status: Status
    http_status: int
    results: int | None = None
    message: str | None = None

    @property
    def graph(self) -> IRI:
        """The access-log graph."""
        return IRI.trusted(self.log_graph)

    def emit(self, b: QuadBuilder) -> None:
        """Describe the request as a ``trails:QueryReceived`` activity."""
        a = IRI.trusted(self.activity)
        b.activity(a, T.QueryReceived, self.received, self.ended)
        if self.principal:
            b.associate(a, b.agent(self.principal))
        who = self.principal or "an unauthenticated client"
        what = f"query {self.query_name}" if self.query_name else "SPARQL query"
        b.label(a, f"{what} by {who}: {self.status}")
        b.value(a, T.status, self.status)
        b.value(a, T.httpStatus, self.http_status)
        b.value(a, T.resultCount, self.results)
        b.value(a, T.errorMessage, self.message)
        b.value(a, T.queryName, self.query_name)
        if self.params is not None:
            b.value(a, T.queryParameters, canonical_json(self.params))
        b.entity(Minter.part(a, "query"), T.SparqlQuery, self.query, used_by=a, as_json=False)


def access_log_quads(event: QueryReceived, minter: Minter, content: str = "full") -> list[Quad]:
    """The quads of one access-log event (written by the endpoint's evaluator).

    Args:
        event: the request to describe.
        minter: the IRI minter (its base names the principals).
        content: ``full`` records the query text, ``hash`` only its sha256.

    Returns:
        The quads, all in the access-log graph.
    """
    builder = QuadBuilder(event.graph, minter, content)
    event.emit(builder)
    return builder.quads
