"""The canonical form of a named graph, and its hash: what a seal fixes.

A seal must be recomputable by anyone, with any RDF tool, from the data
alone. trails never writes blank nodes, so the canonical form needs no
blank-node labelling: it is the graph's quads in canonical N-Quads, one per
line, sorted. For a graph without blank nodes this is exactly the RDFC-1.0
canonical form (W3C RDF Dataset Canonicalization) of a dataset that holds
only that graph.

The algorithm, precisely:

1. Take every quad ``s p o g`` of the named graph ``g`` as the store returns
   it (the store normalises some lexical forms on the way in, e.g. it
   lower-cases language tags and shortens ``10:00:00.100Z`` to
   ``10:00:00.1Z``; the hash is of what the store holds).
2. Write each quad in canonical N-Quads (RDF 1.2 N-Quads, section
   "Canonical form"): IRIs as ``<iri>`` with no escapes; a literal as
   ``"lexical"`` followed by ``@lang``, by nothing for ``xsd:string``, or by
   ``^^<datatype>``; inside the quotes ``\\b \\t \\n \\f \\r \\" \\\\`` for those
   seven characters, ``\\uXXXX`` (upper-case hex) for every other character
   U+0000-U+001F and U+007F, every other character as itself (UTF-8); one
   space between terms, `` .`` and a line feed at the end.
3. Sort the lines by Unicode code point (the same as UTF-8 byte order).
4. SHA-256 of the concatenated UTF-8 lines, as lower-case hex.

Changing anything here changes every seal hash ever recorded: every existing
ledger would then fail verification. Treat it as a file format.

Imported data may hold blank nodes; they are written ``_:label`` with the
store's label, which is not canonical (a re-import may relabel them). trails'
own graphs have none.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from trails.store.base import Solutions, Store
from trails.store.terms import IRI, BNode, Literal, Term

__all__ = ["EMPTY_HASH", "canonical_lines", "canonical_term", "graph_digest", "hash_lines"]

_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"

_ESCAPE = {
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0C: "\\f",
    0x0D: "\\r",
    0x22: '\\"',
    0x5C: "\\\\",
}
_TABLE = {c: _ESCAPE.get(c, f"\\u{c:04X}") for c in (*range(0x20), 0x7F)} | {
    0x22: '\\"',
    0x5C: "\\\\",
}

EMPTY_HASH = hashlib.sha256(b"").hexdigest()
"""The hash of a graph with no quads (a graph that was dropped)."""

_GRAPH_QUERY = "SELECT ?s ?p ?o $graph WHERE { GRAPH $graph { ?s ?p ?o } }"


def canonical_term(term: Term) -> str:
    """One term in canonical N-Quads form.

    Args:
        term: an IRI, literal or blank node.

    Returns:
        Its canonical N-Quads text.
    """
    if isinstance(term, Literal):
        text = '"' + term.value.translate(_TABLE) + '"'
        if term.language:
            return f"{text}@{term.language}"
        if term.datatype == _XSD_STRING:
            return text
        return f"{text}^^<{term.datatype}>"
    if isinstance(term, BNode):
        return f"_:{term}"
    return f"<{term}>"


def canonical_lines(rows: Iterable[tuple[Term | None, ...]], graph: IRI) -> list[str]:
    """Sorted canonical N-Quads lines of ``(s, p, o)`` rows in ``graph``.

    Args:
        rows: subject, predicate, object of each quad (extra columns ignored).
        graph: the graph name written as the fourth term.

    Returns:
        The lines, each ending in a line feed, sorted.
    """
    g = f"<{graph}> .\n"
    lines = [
        f"{canonical_term(s)} {canonical_term(p)} {canonical_term(o)} {g}"  # type: ignore[arg-type]
        for s, p, o, *_ in rows
    ]
    lines.sort()
    return lines


def hash_lines(lines: Iterable[str]) -> str:
    """SHA-256 (lower-case hex) of canonical lines, in the order given."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8"))
    return digest.hexdigest()


def graph_digest(store: Store, graph: IRI) -> tuple[str, int]:
    """The canonical hash and quad count of one named graph of ``store``.

    Args:
        store: the store to read.
        graph: the named graph.

    Returns:
        ``(sha256 hex, number of quads)``; ``(EMPTY_HASH, 0)`` for a graph that is absent.

    Raises:
        StoreError: the store could not be read.
    """
    result = store.query(_GRAPH_QUERY, {"graph": graph})
    assert isinstance(result, Solutions)
    lines = canonical_lines(result.rows, graph)
    return hash_lines(lines), len(lines)
