"""What an auditor's MCP client reads: the query pack, sessions, reports and ``verify``.

``trails mcp serve`` offers these next to the capabilities. Each read is bounded by
the caller's ``Access``: the graphs its token's grant reads on HTTP (the same
grants as the SPARQL endpoint), every graph on stdio, where the operator who
started the server is the caller. Pack parameters are bound as RDF terms
(``trails.audit.querypack``), never written into the query text, and a pack query
runs over the readable graphs only. Nothing here writes to the store.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trails.audit.export import export
from trails.audit.querypack import Query, load_pack
from trails.audit.report import render_report
from trails.errors import UserError
from trails.evidence.verify import verify
from trails.prov.content import content_graph
from trails.prov.iri import Minter
from trails.store.base import Store
from trails.store.terms import IRI

__all__ = [
    "QUERY_PREFIX",
    "Access",
    "ReadRefused",
    "pack_tools",
    "read_report",
    "read_session",
    "run_pack_query",
    "run_verify",
]

QUERY_PREFIX = "query_"
"""The pack query ``NAME`` is the MCP tool ``query_NAME``."""

# JSON Schema of each declared parameter type (values arrive as JSON and are bound as terms)
_JSON_TYPES = {
    "iri": {"type": "string", "format": "iri"},
    "string": {"type": "string"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "integer": {"type": "integer"},
    "decimal": {"type": "number"},
    "boolean": {"type": "boolean"},
}


class ReadRefused(UserError):
    """The caller's grant does not reach what it asked to read (or it does not exist)."""


@dataclass(frozen=True)
class Access:
    """Who an MCP client is and what it may read.

    Args:
        principal: whose session its capability calls are recorded in.
        readable: the graphs it may read, asked at each read (a grant's graphs change
            as sessions are recorded); None reads every graph.
    """

    principal: str
    readable: Callable[[], Sequence[IRI]] | None = None

    def graphs(self) -> list[IRI] | None:
        """The readable graphs now, or None for every graph."""
        return None if self.readable is None else list(self.readable())

    def may_read(self, graph: IRI) -> bool:
        graphs = self.graphs()
        return graphs is None or graph in graphs


def pack_tools(folder: str | None = None) -> dict[str, tuple[Query, dict[str, Any]]]:
    """The pack as tools: ``query_NAME`` -> (the query, the JSON schema of its parameters)."""
    tools: dict[str, tuple[Query, dict[str, Any]]] = {}
    for name, query in load_pack(folder).items():
        properties = {
            p.name: {**_JSON_TYPES.get(p.type, {"type": "string"}), "description": p.description}
            for p in query.params.values()
        }
        required = [p.name for p in query.params.values() if not p.optional]
        schema: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "additionalProperties": False,
        }
        if required:
            schema["required"] = required
        tools[QUERY_PREFIX + name] = (query, schema)
    return tools


def _as_text(value: Any) -> str:
    """A JSON argument as the text the pack binds (booleans spelled as SPARQL spells them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def run_pack_query(
    store: Store, access: Access, query: Query, arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """Run a pack query over what ``access`` reads, its parameters bound.

    Returns:
        The SPARQL 1.1 JSON results (a SELECT's bindings, an ASK's boolean).

    Raises:
        QueryParameterError: an unknown parameter, a missing one, or a value of the wrong type.
    """
    values = {k: _as_text(v) for k, v in arguments.items() if v is not None}
    bound = query.bind(values)
    graphs = access.graphs()
    dataset: dict[str, Any] = {} if graphs is None else {"default_graph": graphs}
    if graphs is not None:
        dataset["named_graphs"] = graphs
    data = store.query_to(query.text_for(bound), bound, format="json", **dataset)
    result: dict[str, Any] = json.loads(data)
    return result


def _session_graph(minter: Minter, access: Access, session_id: str) -> IRI:
    try:
        graph = minter.session(session_id) if ":" not in session_id else IRI(session_id)
    except ValueError:
        raise ReadRefused(f"no readable session {session_id!r}") from None
    if not access.may_read(graph):
        raise ReadRefused(f"no readable session {session_id}")
    return graph


def read_session(
    store: Store, minter: Minter, access: Access, session_id: str, *, format: str = "trig"
) -> str:
    """A session's graph (and its content, when readable) as TriG or JSON-LD.

    Raises:
        ReadRefused: the grant does not reach the session, or there is none.
    """
    graph = _session_graph(minter, access, session_id)
    graphs = [graph]
    if access.may_read(content_graph(graph)):
        graphs.append(content_graph(graph))
    out = io.BytesIO()
    export(store, out, graphs, format=format, minter=minter)
    return out.getvalue().decode("utf-8")


def read_report(store: Store, minter: Minter, access: Access, session_id: str) -> str:
    """The HTML audit report of a readable session.

    Raises:
        ReadRefused: the grant does not reach the session.
        SessionError: no such session.
    """
    graph = _session_graph(minter, access, session_id)
    return render_report(store, str(graph), minter=minter)


def run_verify(
    store: Store, minter: Minter, access: Access, session_id: str | None
) -> dict[str, Any]:
    """``verify`` of one readable session, or of the whole store for a caller that reads all.

    Returns:
        ``ok``, the counts, the findings as text and the ledger's heads.

    Raises:
        ReadRefused: the whole store asked by a caller that does not read it all, or a
            session it does not read.
    """
    session: IRI | None = None
    if session_id:
        session = _session_graph(minter, access, session_id)
    elif access.readable is not None:
        raise ReadRefused("verify needs a session: this token does not read the whole store")
    report = verify(store, session=session, minter=minter)
    return {
        "ok": report.ok,
        "graphs_checked": report.graphs_checked,
        "seals": report.seals,
        "findings": [str(f) for f in report.findings],
        "open_sessions": list(report.open_sessions),
        "head": report.head,
    }
