"""The ``Store`` protocol: everything trails asks of a quad store, and no more.

Two implementations exist: ``OxigraphStore`` (embedded pyoxigraph, a directory
or memory) and ``SparqlStore`` (any SPARQL 1.1 server). Both pass the same
contract tests. The contract:

- ``write`` applies one event's quads (and optional removals) atomically:
  afterwards either all of them are in the store or none is.
- ``query`` evaluates SELECT / ASK / CONSTRUCT / DESCRIBE with parameters
  bound as RDF terms, never spliced into the text. ``default_graph`` /
  ``named_graphs`` restrict the dataset the query sees (the SPARQL protocol's
  ``default-graph-uri`` / ``named-graph-uri``): graphs outside it are
  invisible to the query, not filtered afterwards. Without them the default
  graph is the store's default graph and every named graph is visible.
  ``union_default_graph=True`` instead makes the default graph the union of
  every graph of the store, with no dataset restriction at all (it cannot be
  combined with ``default_graph`` / ``named_graphs``). trails never writes to
  the store's own default graph, so for trails data that union is the union of
  the named graphs. ``query_to`` does the same
  but returns the result already serialised (SPARQL JSON/XML/CSV/TSV, or an RDF
  format for graph results), which is the fast path for the CLI and endpoint.
  With ``max_bytes`` it stops as soon as the serialised answer passes that
  size (``QueryRefused``, status 400), before the rest is produced or
  downloaded: the embedded store serialises into a ``ResultBuffer``, the
  remote one reads the server's answer as a stream into one.
- ``graphs`` / ``clear`` list and drop named graphs; ``dump`` / ``load`` move
  a graph or the whole dataset in a standard RDF format; ``load`` is atomic.
- ``has_triple`` says from the store's indexes whether some of the given graphs hold a triple
  with a predicate (and object), without a query; a store that can only tell by a query
  (a SPARQL server) answers None.
- ``close`` releases the backend; a store is a context manager.

Relative IRIs in a query (``CONSTRUCT { <s> <p> 1 } WHERE {}``) resolve
against one base IRI, the same on every backend: the store's ``base_iri``
(default ``DEFAULT_BASE_IRI``; ``open_store`` passes the configured
``base_iri``), by RFC 3986, and a query's own ``BASE`` is resolved against it.
The embedded store hands it to its parser; a SPARQL server store declares it
in the text it sends, so the server never resolves against its own address.

Format names are short strings: ``trig nquads turtle ntriples jsonld rdfxml``
for RDF, ``json xml csv tsv`` for query results.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Protocol, runtime_checkable

from trails.store.terms import IRI, Quad, Term, Triple

__all__ = [
    "DATASET_FORMATS",
    "DEFAULT_BASE_IRI",
    "GRAPH_FORMATS",
    "RESULT_FORMATS",
    "QueryResult",
    "ResultBuffer",
    "Solutions",
    "Store",
    "ask",
    "construct",
    "select",
]

DATASET_FORMATS = frozenset({"trig", "nquads"})
DEFAULT_BASE_IRI = "urn:trails:"
GRAPH_FORMATS = frozenset({"turtle", "ntriples", "rdfxml", "jsonld"}) | DATASET_FORMATS
RESULT_FORMATS = frozenset({"json", "xml", "csv", "tsv"})


@dataclass
class Solutions:
    """SELECT results: the projected variable names and one tuple per row."""

    variables: list[str]
    rows: list[tuple[Term | None, ...]] = field(default_factory=list)

    def __iter__(self) -> Iterator[dict[str, Term]]:
        names = self.variables
        for row in self.rows:
            yield {n: v for n, v in zip(names, row, strict=True) if v is not None}

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> list[Term | None]:
        index = self.variables.index(name)
        return [row[index] for row in self.rows]


QueryResult = Solutions | bool | list[Triple]


class ResultBuffer(io.RawIOBase):
    """A writable buffer for a serialised answer that refuses to grow past ``max_bytes``.

    Serialisers write into it chunk by chunk; the write that would pass the
    limit raises ``QueryRefused`` (status 400), which stops the serialiser (and
    with it the evaluation that feeds it), so memory stays bounded by the limit.

    Args:
        max_bytes: the largest answer accepted (None: no limit).
    """

    def __init__(self, max_bytes: int | None = None) -> None:
        super().__init__()
        self.max_bytes = max_bytes
        self._data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        chunk = memoryview(data).cast("B")
        size = len(chunk)
        if self.max_bytes is not None and len(self._data) + size > self.max_bytes:
            from trails.errors import QueryRefused

            raise QueryRefused(
                f"the result is over the limit of {self.max_bytes} bytes; "
                f"add a LIMIT or narrow the query",
                status=400,
            )
        self._data += chunk
        return size

    def __len__(self) -> int:
        return len(self._data)

    def getvalue(self) -> bytes:
        """The answer written so far."""
        return bytes(self._data)


@runtime_checkable
class Store(Protocol):
    """What trails needs from a quad store. See the module docstring for the contract."""

    def write(self, quads: Iterable[Quad], *, remove: Iterable[Quad] = ()) -> None:
        """Add ``quads`` and remove ``remove`` in one atomic transaction."""
        ...

    def query(
        self,
        sparql: str,
        params: Mapping[str, Term] | None = None,
        *,
        default_graph: Sequence[IRI] | None = None,
        named_graphs: Sequence[IRI] | None = None,
        union_default_graph: bool = False,
    ) -> QueryResult:
        """Evaluate a query with ``params`` bound to its variables (``?name``/``$name``)."""
        ...

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
        """Evaluate a query and return the serialised result in ``format``.

        ``max_bytes``: stop with ``QueryRefused`` (400) once the answer passes it.
        """
        ...

    def graphs(self) -> list[IRI]:
        """The named graphs that hold at least one quad."""
        ...

    def has_triple(self, predicate: IRI, obj: Term | None, graphs: Sequence[IRI]) -> bool | None:
        """Whether one of ``graphs`` holds a triple with ``predicate`` (and object ``obj``,
        None: any), read from the store's indexes; None when this store cannot tell without
        a query (a SPARQL server), and the caller runs its query instead."""
        return None

    def clear(self, graph: IRI) -> None:
        """Drop a named graph and everything in it."""
        ...

    def dump(
        self,
        output: BinaryIO | Path | None = None,
        *,
        format: str = "trig",
        graph: IRI | None = None,
    ) -> bytes | None:
        """Serialise one graph (``graph``) or the dataset; returns bytes when ``output`` is None."""
        ...

    def load(
        self, data: bytes | BinaryIO | Path, *, format: str = "trig", graph: IRI | None = None
    ) -> None:
        """Parse and add RDF atomically; triples formats need ``graph``."""
        ...

    def close(self) -> None:
        """Release the backend. Further calls fail with ``StoreError``."""
        ...

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def select(
    store: Store,
    sparql: str,
    params: Mapping[str, Term] | None = None,
    *,
    default_graph: Sequence[IRI] | None = None,
    named_graphs: Sequence[IRI] | None = None,
    union_default_graph: bool = False,
) -> Solutions:
    """Run a SELECT query and return its ``Solutions`` (typed shorthand for ``store.query``).

    Raises:
        QueryError: the query is not a SELECT.
    """
    result = store.query(
        sparql,
        params,
        default_graph=default_graph,
        named_graphs=named_graphs,
        union_default_graph=union_default_graph,
    )
    if not isinstance(result, Solutions):
        from trails.errors import QueryError

        raise QueryError("expected a SELECT query")
    return result


def ask(store: Store, sparql: str, params: Mapping[str, Term] | None = None) -> bool:
    """Run an ASK query (typed shorthand for ``store.query``)."""
    result = store.query(sparql, params)
    if not isinstance(result, bool):
        from trails.errors import QueryError

        raise QueryError("expected an ASK query")
    return result


def construct(store: Store, sparql: str, params: Mapping[str, Term] | None = None) -> list[Triple]:
    """Run a CONSTRUCT or DESCRIBE query (typed shorthand for ``store.query``)."""
    result = store.query(sparql, params)
    if not isinstance(result, list):
        from trails.errors import QueryError

        raise QueryError("expected a CONSTRUCT or DESCRIBE query")
    return result
