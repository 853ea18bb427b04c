"""The full verification's pass over a SPARQL server: every graph read, in batches.

On the embedded store the full verification reads the whole dataset as one N-Quads stream
(``trails.evidence.sweep.Sweep``). A SPARQL server (``trails.store.sparql``) has no such
stream, so ``Batches`` reads it with bound-parameter queries instead, and hands each graph
on in the very form the stream does: the graph's IRI, its quads as canonical N-Triples
(one ``canonical_term`` per term, typed literals in their canonical lexical form, as the
embedded store holds them), and how many. The same per-graph checks then run on both
stores (``trails.evidence.verify``): the seal's digest, the session's state and catalogue
entry, the content against its digests, and what kind of graph it is
(``trails.evidence.sweep.graph_kind``), so that nothing on a server goes unaccounted either.

How the server is read:

- its named graphs are listed once, with their sizes (one ``GROUP BY ?g`` query; in ordered
  pages when the server holds more graphs than it answers rows: their count says so);
- the default graph is read whole when it is a graph of its own (Oxigraph, as it starts by
  default: a triple of a named graph is found missing from it); when it is the union of
  the named graphs (Virtuoso, Oxigraph started with ``--union-default-graph``), a plain
  ``?s ?p ?o`` would list everything, so it is asked for the triples that are in no named
  graph instead (Virtuoso keeps none: every triple it holds is in a named graph);
- the graphs are fetched in batches of at most ``BATCH_GRAPHS`` graphs and ``BATCH_QUADS``
  quads (one ``CONSTRUCT``: a ``UNION`` of ``GRAPH $gN`` patterns, each graph a bound
  parameter, each quad answered as a blank node naming its parts and its graph),
  a graph's content graph in the batch of its graph, so memory holds one batch, never the
  store; an answer shorter than the listing said (a server's row limit: a stock Virtuoso
  answers 10,000 rows, here triples, four a quad) is read again graph by graph, and a
  graph still cut short in pages no longer than what came, in a fixed order;
- the ledger is not fetched (verification has read it already), nor the graphs the server
  keeps of its own (``SparqlStore.own_graphs``: a fixed list per server kind and the
  ``server_graphs`` setting): they are the server's, not foreign.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterator
from functools import lru_cache

from trails.evidence.canonical import canonical_term
from trails.evidence.findings import Finding
from trails.evidence.sweep import FOREIGN, graph_kind
from trails.prov.content import content_graph, is_content_graph, structure_graph
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, BNode, Literal, Term

__all__ = [
    "BATCH_GRAPHS",
    "BATCH_QUADS",
    "Batches",
    "default_graph_finding",
    "own_graphs",
]

BATCH_GRAPHS = 64
"""At most this many graphs are fetched by one query."""
BATCH_QUADS = 8_000
"""A batch is closed before it would hold more quads than this (a larger graph is read alone)."""

_LISTING = "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"
_GRAPH_COUNT = "SELECT (COUNT(DISTINCT ?g) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"
_SEPARATE = "ASK { GRAPH ?g { ?s ?p ?o } FILTER NOT EXISTS { ?s ?p ?o } }"
_DEFAULT = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"
_LOOSE = "SELECT ?s ?p ?o WHERE { ?s ?p ?o FILTER NOT EXISTS { GRAPH ?g { ?s ?p ?o } } }"

OnGraph = Callable[[str, bytes, int], None]


# each quad of a batch as a fresh blank node naming its parts and its graph's place in the
# batch: a CONSTRUCT binds the graphs as parameters without sending them back on every row
_PART = "urn:trails:verify:"
_S, _P, _O, _I = (IRI.trusted(_PART + n) for n in ("s", "p", "o", "i"))


@lru_cache(maxsize=8)
def _batch_query(size: int) -> str:
    """The query that reads ``size`` graphs, bound as ``$g0`` ... (``?i``: whose a quad is)."""
    branches = " UNION ".join(
        f"{{ GRAPH $g{i} {{ ?s ?p ?o }} BIND({i} AS ?i) }}" for i in range(size)
    )
    return (
        f"CONSTRUCT {{ _:q {_S.n3()} ?s ; {_P.n3()} ?p ; {_O.n3()} ?o ; {_I.n3()} ?i }} "
        f"WHERE {{ {branches} }}"
    )


def _listing_query(size: int, offset: int) -> str:
    """One page of the named graphs with their sizes, in the order of their names."""
    return (
        "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g ORDER BY ?g "
        f"LIMIT {int(size)} OFFSET {int(offset)}"
    )


def _page_query(size: int, offset: int) -> str:
    """One page of a graph bound as ``$g``, in an order every page agrees on."""
    return (
        "SELECT ?s ?p ?o $g WHERE { GRAPH $g { ?s ?p ?o } } ORDER BY ?s ?p ?o "
        f"LIMIT {int(size)} OFFSET {int(offset)}"
    )


def own_graphs(store: Store) -> frozenset[str]:
    """The graphs the server behind ``store`` keeps of its own (none for other stores)."""
    from trails.store.sparql import SparqlStore  # loaded already when such a store is open

    return store.own_graphs() if isinstance(store, SparqlStore) else frozenset()


def default_graph_finding(loose: list[str]) -> Finding | None:
    """The finding for triples in the default graph (given as canonical lines), if any."""
    if not loose:
        return None
    return Finding(
        FOREIGN,
        "the default graph",
        f"{len(loose)} triple(s) where trails writes nothing (the first: {loose[0]})",
    )


class Batches:
    """A SPARQL store's graphs, listed once, read in batches and handed on one by one.

    Args:
        store: the store (any ``Store``; meant for a SPARQL server).
        base: the minter's base (what names the ledger).
        skip: graphs not to read (the server's own: ``own_graphs``).
    """

    def __init__(self, store: Store, base: str, *, skip: Collection[str] = frozenset()) -> None:
        self.store = store
        listed = self._listing()
        self.listed = {
            g: n for g, n in listed.items() if g not in skip and graph_kind(g, base) != "ledger"
        }
        sessions = [
            g for g in self.listed if g.startswith(f"{base}session:") and not is_content_graph(g)
        ]
        for graph in sessions:
            # a session listed before its first content was written: its content graph is
            # read with it all the same (an absent graph reads as nothing)
            self.listed.setdefault(str(content_graph(graph)), 0)
        self.total = len(self.listed)
        """Graphs to be handed on."""
        self.quads = sum(n for g, n in listed.items() if g not in skip)
        """Quads the listing counted in the graphs read (and the ledger, read before)."""

    def _listing(self) -> dict[str, int]:
        """Every named graph and its size: one query, or, when the server holds more graphs
        than it answers rows, pages no longer than its answer, in the order of their names."""
        counted = self.store.query(_GRAPH_COUNT)
        assert isinstance(counted, Solutions)
        total = counted.rows[0][0] if counted.rows else None
        expected = int(total.value) if isinstance(total, Literal) else 0
        listed: dict[str, int] = {}
        size = self._list(_LISTING, listed)
        offset = 0
        while len(listed) < expected and size:  # cut short: pages as long as what came
            got = self._list(_listing_query(size, offset), listed)
            offset += got
            if got < size:
                break
        return listed

    def _list(self, query: str, listed: dict[str, int]) -> int:
        """Add what ``query`` lists to ``listed``; how many rows came."""
        result = self.store.query(query)
        assert isinstance(result, Solutions)
        for row in result:
            graph, count = row.get("g"), row.get("n")
            if isinstance(graph, IRI) and isinstance(count, Literal):
                listed[str(graph)] = int(count.value)
        return len(result.rows)

    def default_graph(self) -> list[str]:
        """The triples of the default graph (of those in no named graph when the default
        graph is their union), as canonical lines."""
        separate = bool(self.store.query(_SEPARATE))
        result = self.store.query(_DEFAULT if separate else _LOOSE)
        assert isinstance(result, Solutions)
        return [" ".join(canonical_term(t) for t in row if t is not None) for row in result.rows]

    def read(self, on_graph: OnGraph) -> None:
        """Fetch every listed graph, a batch at a time, and call ``on_graph(graph,
        ntriples, quads)`` for each (a graph's content graph right after it)."""
        for batch in self._batches():
            for graph, lines in self._fetch(batch):
                if lines:  # a graph emptied since the listing is no graph any more
                    on_graph(graph, b"".join(lines), len(lines))

    def _batches(self) -> Iterator[list[str]]:
        order = sorted(self.listed, key=lambda g: (structure_graph(g), is_content_graph(g)))
        batch: list[str] = []
        quads = 0
        for graph in order:
            size = self.listed[graph]
            if batch and (len(batch) >= BATCH_GRAPHS or quads + size > BATCH_QUADS):
                yield batch
                batch, quads = [], 0
            batch.append(graph)
            quads += size
        if batch:
            yield batch

    def _fetch(self, batch: list[str]) -> list[tuple[str, list[bytes]]]:
        params: dict[str, Term] = {f"g{i}": IRI.trusted(g) for i, g in enumerate(batch)}
        result = self.store.query(_batch_query(len(batch)), params)
        assert isinstance(result, list)
        parts: dict[Term, dict[Term, Term]] = defaultdict(dict)
        for triple in result:
            parts[triple.subject][triple.predicate] = triple.object
        lines: list[list[bytes]] = [[] for _ in batch]
        seen: dict[Term, str] = {}  # subjects and predicates repeat: write each term once

        def term(t: Term) -> str:
            if isinstance(t, BNode):  # never shares a cache entry with an equal-text IRI
                return canonical_term(t)
            text = seen.get(t)
            if text is None:
                text = seen[t] = canonical_term(t, normalise=True)
            return text

        for quad in parts.values():
            index, s, p, o = quad.get(_I), quad.get(_S), quad.get(_P), quad.get(_O)
            if not isinstance(index, Literal) or s is None or p is None or o is None:
                continue
            line = f"{term(s)} {term(p)} {term(o)} .\n"
            lines[int(index.value)].append(line.encode("utf-8"))
        got = sum(len(found) for found in lines)
        if got < sum(self.listed[g] for g in batch):  # a server's row limit cut the answer?
            if len(batch) > 1:  # one graph a query
                return [pair for graph in batch for pair in self._fetch([graph])]
            if got:  # pages no longer than what came (the limit counts triples, 4 a quad)
                return [(batch[0], self._pages(batch[0], got, term))]
        return list(zip(batch, lines, strict=True))

    def _pages(self, graph: str, size: int, term: Callable[[Term], str]) -> list[bytes]:
        """One graph read in pages of ``size`` quads, in a fixed order, until one is short."""
        lines: list[bytes] = []
        while True:
            result = self.store.query(_page_query(size, len(lines)), {"g": IRI.trusted(graph)})
            assert isinstance(result, Solutions)
            rows = [row[:3] for row in result.rows]
            lines.extend(
                f"{term(s)} {term(p)} {term(o)} .\n".encode()
                for s, p, o in rows
                if s is not None and p is not None and o is not None
            )
            if len(rows) < size:
                return lines
