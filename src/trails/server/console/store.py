"""The console's view of the store: every read goes through the endpoint's evaluator.

The web console (``console``) reuses the audit room's readers (the report's
data, the exports, the bundle, ``verify``), which take a ``Store``. Behind
``trails serve`` the store is held by the evaluator (a worker process opens a
directory store, and a directory store has one opener), so the console never
opens it itself: ``EvaluatorView`` is a read-only ``Store`` whose queries are
``QueryJob``s on that evaluator, under a grant, with the endpoint's time limit.

A view under a reader's grant sees only the graphs that grant may read (the
evaluator's dataset restriction, as for ``/sparql``): a graph outside it is
invisible, not filtered. The console's own system view (a grant on ``*``)
reads the catalogue and the ledger, and the console checks, before it uses
that view for one session, that the reader's grant holds the session's graph.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, BinaryIO

from trails.errors import QueryError, QueryParameterError, QueryTimeout, StoreError
from trails.server.auth import Grant
from trails.server.pool import Evaluator, QueryJob
from trails.store import Solutions, Store
from trails.store.base import QueryResult
from trails.store.oxigraph import convert_rdf
from trails.store.terms import IRI, BNode, Literal, Quad, Term, Triple

__all__ = ["EvaluatorView", "ntriples_term", "parse_json_results"]

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_RDF_LANG = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
_GRAPH_ROWS = "SELECT ?s ?p ?o $graph WHERE { GRAPH $graph { ?s ?p ?o } }"
_ALL_ROWS = "SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }"
_GRAPHS = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"
_CONSTRUCT_ROWS = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"


def _term(binding: Mapping[str, Any]) -> Term:
    kind, value = binding.get("type"), str(binding.get("value", ""))
    if kind == "uri":
        return IRI.trusted(value)
    if kind == "bnode":
        return BNode(value)
    language = binding.get("xml:lang") or binding.get("lang")
    if language:
        return Literal(value, _RDF_LANG, str(language))
    return Literal(value, str(binding.get("datatype", _XSD_STRING)))


def parse_json_results(data: bytes) -> Solutions | bool:
    """SPARQL JSON results (SELECT or ASK) as trails terms."""
    doc = json.loads(data)
    if "boolean" in doc:
        return bool(doc["boolean"])
    names: list[str] = list(doc.get("head", {}).get("vars", []))
    rows = [
        tuple(_term(b[n]) if n in b else None for n in names)
        for b in doc.get("results", {}).get("bindings", [])
    ]
    return Solutions(names, rows)


def _escape(text: str) -> str:
    return (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )


def ntriples_term(term: Term) -> str:
    """One term in N-Triples syntax."""
    if isinstance(term, Literal):
        text = f'"{_escape(term.value)}"'
        if term.language:
            return f"{text}@{term.language}"
        return text if term.datatype == _XSD_STRING else f"{text}^^<{term.datatype}>"
    if isinstance(term, BNode):
        return f"_:{term}"
    return f"<{term}>"


class EvaluatorView(Store):
    """A read-only ``Store`` whose queries run on an evaluator under one grant.

    Args:
        evaluator: the endpoint's evaluator.
        grant: whose view this is (a reader's grant, or the console's system grant).
        reserved: the graph no grant reads in the data store (the access log's IRI).
        base_iri: the base IRI relative IRIs resolve against.
        time_limit: seconds one query may take.
        max_results: most solutions one query may return.
        max_bytes: largest serialised answer.
    """

    def __init__(
        self,
        evaluator: Evaluator,
        grant: Grant,
        reserved: IRI | None,
        *,
        base_iri: str = "urn:trails:",
        time_limit: float = 30.0,
        max_results: int = 10_000_000,
        max_bytes: int = 1 << 31,
    ) -> None:
        self.evaluator = evaluator
        self.grant = grant
        self.reserved = reserved
        self.base_iri = base_iri
        self.time_limit = time_limit
        self.max_results = max_results
        self.max_bytes = max_bytes

    # -- reads ------------------------------------------------------------------

    def _run(
        self,
        sparql: str,
        params: Mapping[str, Term] | None,
        format: str,
        default_graph: Sequence[IRI] | None = None,
        named_graphs: Sequence[IRI] | None = None,
    ) -> bytes:
        job = QueryJob(
            sparql=sparql,
            grant=self.grant,
            reserved=self.reserved,
            format=format,
            params=dict(params or {}),
            default_graphs=None if default_graph is None else tuple(default_graph),
            named_graphs=None if named_graphs is None else tuple(named_graphs),
            base_iri=self.base_iri,
            max_results=self.max_results,
            max_bytes=self.max_bytes,
        )
        future = self.evaluator.submit(job, self.time_limit)
        try:
            outcome = future.result(self.time_limit + 30.0)
        except FutureTimeout:
            raise QueryTimeout(
                f"the query passed its time limit of {self.time_limit:g} s",
                limit=self.time_limit,
            ) from None
        if outcome.kind == "syntax":
            raise QueryError(outcome.message)
        if outcome.kind == "parameter":
            raise QueryParameterError(outcome.message)
        if outcome.kind != "ok":
            raise StoreError(outcome.message)
        return outcome.data

    def query(
        self,
        sparql: str,
        params: Mapping[str, Term] | None = None,
        *,
        default_graph: Sequence[IRI] | None = None,
        named_graphs: Sequence[IRI] | None = None,
        union_default_graph: bool = False,
    ) -> QueryResult:
        """Evaluate on the evaluator (the union default graph unless graphs are named)."""
        head = sparql.upper()
        if "CONSTRUCT" in head or "DESCRIBE" in head:
            from trails.server.sparql import analyse

            if analyse(sparql, self.base_iri).form in ("CONSTRUCT", "DESCRIBE"):
                data = self._run(sparql, params, "ntriples", default_graph, named_graphs)
                return _triples(data, self.base_iri)
        data = self._run(sparql, params, "json", default_graph, named_graphs)
        return parse_json_results(data)

    def query_to(
        self,
        sparql: str,
        params: Mapping[str, Term] | None = None,
        *,
        format: str = "json",
        default_graph: Sequence[IRI] | None = None,
        named_graphs: Sequence[IRI] | None = None,
        union_default_graph: bool = False,
        max_bytes: int | None = None,
    ) -> bytes:
        """Evaluate and return the answer serialised in ``format``."""
        return self._run(sparql, params, format, default_graph, named_graphs)

    def graphs(self) -> list[IRI]:
        """The named graphs this view may read that hold at least one quad."""
        result = self.query(_GRAPHS)
        assert isinstance(result, Solutions)
        return sorted(IRI.trusted(str(g)) for g in result.column("g") if g is not None)

    def dump(
        self,
        output: BinaryIO | Path | None = None,
        *,
        format: str = "trig",
        graph: IRI | None = None,
    ) -> bytes | None:
        """One graph (or every readable one) serialised in ``format``."""
        if graph is not None:
            result = self.query(_GRAPH_ROWS, {"graph": graph})
            width, source = 3, "ntriples"  # the graph column is the parameter
        else:
            result = self.query(_ALL_ROWS)
            width, source = 4, "nquads"
        assert isinstance(result, Solutions)
        data = "".join(
            " ".join(ntriples_term(t) for t in row[:width] if t is not None) + " .\n"
            for row in result.rows
        ).encode("utf-8")
        if format != source:
            data = convert_rdf(data, source, format, self.base_iri)
        if output is None:
            return data
        if isinstance(output, Path):
            output.write_bytes(data)
        else:
            output.write(data)
        return None

    # -- writes: none -----------------------------------------------------------

    def write(self, quads: Iterable[Quad], *, remove: Iterable[Quad] = ()) -> None:
        """Refused: the console reads."""
        raise StoreError("the console reads the store; it never writes to it")

    def clear(self, graph: IRI) -> None:
        """Refused: the console reads."""
        raise StoreError("the console reads the store; it never writes to it")

    def load(
        self, data: bytes | BinaryIO | Path, *, format: str = "trig", graph: IRI | None = None
    ) -> None:
        """Refused: the console reads."""
        raise StoreError("the console reads the store; it never writes to it")

    def close(self) -> None:
        """Nothing to release: the evaluator belongs to the endpoint."""


def _triples(data: bytes, base_iri: str) -> list[Triple]:
    """N-Triples as trails triples (through the store's own parser, via N-Quads rows)."""
    from trails.store import open_store

    scratch = open_store("memory:", base_iri=base_iri)
    try:
        scratch.load(data, format="ntriples", graph=IRI.trusted(base_iri + "graph:scratch"))
        rows = scratch.query(_CONSTRUCT_ROWS.replace("?s ?p ?o }", "GRAPH ?g { ?s ?p ?o } }"))
    finally:
        scratch.close()
    assert isinstance(rows, Solutions)
    out: list[Triple] = []
    for s, p, o in rows.rows:
        if s is not None and p is not None and o is not None:
            out.append(Triple(s, IRI.trusted(str(p)), o))  # type: ignore[arg-type]
    return out
