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

**Version 2** (the form ``trails-seal/2`` seals fix, ``version=2`` below)
adds one step before step 2: literals of ``xsd:dateTime``, ``xsd:boolean``,
``xsd:integer``, ``xsd:decimal`` and ``xsd:double`` are written in their
canonical lexical form (``normal_lexical``): the fraction of a time without
trailing zeros and ``Z`` for UTC, ``true``/``false``, integers and decimals
without leading or trailing zeros, doubles as their shortest round-trip
digits without an exponent (``INF``, ``-INF``, ``NaN``); and language tags are
lower-cased (they are case-insensitive). That is what Oxigraph
holds anyway; it makes the hash depend on the values and not on how a backend
spells them (Virtuoso answers ``1`` for ``true`` and ``.100Z`` for ``.1Z``), so
a seal can be computed from the quads about to be written, before the store
has normalised them, and a graph moved between backends keeps its hash.
Version 1 (``trails-seal/1`` seals, older ledgers) skips that step.

Imported data may hold blank nodes; they are written ``_:label`` with the
store's label, which is not canonical (a re-import may relabel them). trails'
own graphs have none.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from trails.store.base import Solutions, Store
from trails.store.terms import IRI, BNode, Literal, Term

__all__ = [
    "EMPTY_HASH",
    "canonical_lines",
    "canonical_term",
    "digest_lines",
    "digest_nquads",
    "digest_ntriples",
    "graph_digest",
    "graph_digest_by_query",
    "graph_digest_read",
    "hash_lines",
    "normal_lexical",
]

_XSD = "http://www.w3.org/2001/XMLSchema#"
_XSD_STRING = _XSD + "string"
_DATETIME = re.compile(r"(-?\d{4,}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)?")
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
_DOUBLE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")

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

_RARE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _escape(value: str) -> str:
    """``value.translate(_TABLE)``, faster: the common escapes by ``str.replace``."""
    if _RARE.search(value) is not None:
        return value.translate(_TABLE)
    if "\\" in value:
        value = value.replace("\\", "\\\\")
    if '"' in value:
        value = value.replace('"', '\\"')
    if "\n" in value:
        value = value.replace("\n", "\\n")
    if "\r" in value:
        value = value.replace("\r", "\\r")
    if "\t" in value:
        value = value.replace("\t", "\\t")
    return value


EMPTY_HASH = hashlib.sha256(b"").hexdigest()
"""The hash of a graph with no quads (a graph that was dropped)."""

_GRAPH_QUERY = "SELECT ?s ?p ?o $graph WHERE { GRAPH $graph { ?s ?p ?o } }"


def _plain_decimal(value: Decimal) -> str:
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def normal_lexical(value: str, datatype: str) -> str:
    """The canonical lexical form of a literal, for the datatypes version 2 normalises.

    Args:
        value: the lexical form as stored.
        datatype: its datatype IRI.

    Returns:
        The canonical form; ``value`` unchanged for other datatypes or invalid lexical forms.
    """
    if not datatype.startswith(_XSD):
        return value
    local = datatype[len(_XSD) :]
    if local == "dateTime":
        m = _DATETIME.fullmatch(value)
        if m is None:
            return value
        head, fraction, zone = m.groups()
        fraction = (fraction or "").rstrip("0")
        if zone in ("+00:00", "-00:00"):
            zone = "Z"
        return head + (f".{fraction}" if fraction else "") + (zone or "")
    if local == "boolean":
        return {"1": "true", "0": "false"}.get(value, value)
    if local == "integer":
        return str(int(value)) if _INTEGER.fullmatch(value) else value
    if local == "decimal":
        if not _DECIMAL.fullmatch(value):
            return value
        return _plain_decimal(Decimal(value))
    if local == "double":
        if value in ("INF", "-INF", "NaN"):
            return value
        if not _DOUBLE.fullmatch(value):
            return value
        number = float(value)
        if number != number or number in (float("inf"), float("-inf")):
            return "NaN" if number != number else ("INF" if number > 0 else "-INF")
        try:
            text = _plain_decimal(Decimal(repr(number)))
        except InvalidOperation:  # pragma: no cover - repr of a finite float always parses
            return value
        return "-0" if text == "0" and repr(number).startswith("-") else text
    return value


def canonical_term(term: Term, *, normalise: bool = False) -> str:
    """One term in canonical N-Quads form.

    Args:
        term: an IRI, literal or blank node.
        normalise: write typed literals in their canonical lexical form (version 2).

    Returns:
        Its canonical N-Quads text.
    """
    if isinstance(term, Literal):
        lexical = normal_lexical(term.value, term.datatype) if normalise else term.value
        text = '"' + _escape(lexical) + '"'
        if term.language:  # BCP 47 tags are case-insensitive; stores hold them lower-cased
            return f"{text}@{term.language.lower() if normalise else term.language}"
        if term.datatype == _XSD_STRING:
            return text
        return f"{text}^^<{term.datatype}>"
    if isinstance(term, BNode):
        return f"_:{term}"
    return f"<{term}>"


def canonical_lines(
    rows: Iterable[tuple[Term | None, ...]], graph: IRI, *, version: int = 1
) -> list[str]:
    """Sorted canonical N-Quads lines of ``(s, p, o)`` rows in ``graph``.

    Args:
        rows: subject, predicate, object of each quad (extra columns ignored).
        graph: the graph name written as the fourth term.
        version: 1 (lexical forms as given) or 2 (typed literals normalised).

    Returns:
        The lines, each ending in a line feed, sorted, without duplicates.
    """
    g = f"<{graph}> .\n"
    norm = version >= 2
    seen: dict[Term, str] = {}  # subjects and predicates repeat: write each term once

    def term(t: Term) -> str:
        if isinstance(t, BNode):  # never shares a cache entry with an equal-text IRI
            return canonical_term(t)
        text = seen.get(t)
        if text is None:
            text = seen[t] = canonical_term(t, normalise=norm)
        return text

    lines = {f"{term(s)} {term(p)} {term(o)} {g}" for s, p, o, *_ in rows}  # type: ignore[arg-type]
    return sorted(lines)


def digest_lines(lines: Iterable[str]) -> tuple[str, int]:
    """``(hash, count)`` of a set of canonical lines (sorted and de-duplicated here;
    a ``set`` is taken as it is)."""
    unique = sorted(lines if isinstance(lines, set | frozenset) else set(lines))
    return hash_lines(unique), len(unique)


def hash_lines(lines: Iterable[str]) -> str:
    """SHA-256 (lower-case hex) of canonical lines, in the order given (hashed as one
    buffer: the same digest as line by line, in one call)."""
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def graph_digest(store: Store, graph: IRI, *, version: int = 2) -> tuple[str, int]:
    """The canonical hash and quad count of one named graph of ``store``.

    On the embedded store the graph is read as the store's own N-Triples dump
    (which writes every term exactly as canonical N-Quads does) and hashed as
    bytes (``digest_ntriples``); other stores are read through SPARQL, term by
    term. Both give the same hash.

    Args:
        store: the store to read.
        graph: the named graph.
        version: the canonical form (2 for current seals, 1 for ``trails-seal/1`` seals).

    Returns:
        ``(sha256 hex, number of quads)``; ``(EMPTY_HASH, 0)`` for a graph that is absent.

    Raises:
        StoreError: the store could not be read.
    """
    digest, count, _ = graph_digest_read(store, graph, version=version)
    return digest, count


def graph_digest_read(
    store: Store, graph: IRI, *, version: int = 2
) -> tuple[str, int, bytes | None]:
    """``graph_digest``, with the N-Triples it read on the embedded store (None elsewhere),
    for a check that needs more of the graph than its hash (``trails.evidence.content``)."""
    from trails.store.oxigraph import OxigraphStore  # loaded already when such a store is open

    if isinstance(store, OxigraphStore):
        data = store.dump(format="ntriples", graph=graph) or b""
        return (*digest_ntriples(data, graph, version=version), data)
    return (*graph_digest_by_query(store, graph, version=version), None)


def graph_digest_by_query(store: Store, graph: IRI, *, version: int = 2) -> tuple[str, int]:
    """``graph_digest`` through a SPARQL query, for any store (the reference path)."""
    result = store.query(_GRAPH_QUERY, {"graph": graph})
    assert isinstance(result, Solutions)
    lines = canonical_lines(result.rows, graph, version=version)
    return hash_lines(lines), len(lines)


_XSD_MARK = b"^^<" + _XSD.encode()
_NORMALISED = {b"dateTime", b"boolean", b"integer", b"decimal", b"double"}


def digest_ntriples(data: bytes, graph: IRI, *, version: int = 2) -> tuple[str, int]:
    """``(hash, count)`` of a graph given as canonical N-Triples (as Oxigraph writes them).

    Each line becomes its canonical N-Quads line by naming ``graph`` before the
    final ``.``; for version 2, the objects of the five normalised datatypes
    are rewritten in their canonical lexical form (a typed literal is the only
    object that ends in ``"^^<datatype> .``, and subjects and predicates never
    hold a ``"``, so the lexical form runs from the line's first ``"`` to that
    suffix). Lines are sorted as bytes (UTF-8 byte order is code point order).

    Args:
        data: the graph's N-Triples, one triple per line, terms in canonical form.
        graph: the graph name to write as the fourth term.
        version: 1 (lexical forms as given) or 2 (typed literals normalised).

    Returns:
        ``(sha256 hex, number of distinct quads)``.
    """
    tail = f" <{graph}> .\n".encode()
    normalise = version >= 2
    lines: set[bytes] = set()
    for line in data.split(b"\n"):
        if not line:
            continue
        if normalise and line.endswith(b"> ."):
            mark = line.rfind(_XSD_MARK)
            if mark > 0 and line[mark - 1 : mark] == b'"':
                datatype = line[mark + len(_XSD_MARK) : -3]
                if datatype in _NORMALISED:
                    start = line.index(b'"') + 1
                    lexical = line[start : mark - 1].decode("utf-8")
                    fixed = normal_lexical(lexical, _XSD + datatype.decode("ascii"))
                    line = line[:start] + fixed.encode("utf-8") + line[mark - 1 :]
        lines.add(line[:-2] + tail)
    ordered = sorted(lines)
    return hashlib.sha256(b"".join(ordered)).hexdigest(), len(ordered)


# the lexical forms of the datatypes version 2 normalises that are surely canonical
# already (each a fixed point of ``normal_lexical``); a double's form is recomputed
_CANONICAL_LEXICAL = {
    b"dateTime": rb"-?\d{4,}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d*[1-9])?(?:Z|[+-](?!00:00)\d\d:\d\d)?",
    b"boolean": rb"true|false",
    b"integer": rb"-?[1-9]\d*|0",
    b"decimal": rb"-?[1-9]\d*(?:\.\d*[1-9])?|-?0\.\d*[1-9]|0",
}
_TYPED_END = rb'"\^\^<' + re.escape(_XSD.encode())
# the end of a line whose object is a typed literal of a datatype version 2 normalises:
# found by its fixed start (a fast search), its lexical form then read back to its quote
_TYPED = re.compile(_TYPED_END + rb"(dateTime|boolean|integer|decimal|double)> \.$", re.MULTILINE)
_SURE = {name: re.compile(lexical) for name, lexical in _CANONICAL_LEXICAL.items()}
_DOUBLE_TYPE = _XSD + "double"


def _canonical_already(ntriples: bytes) -> bool:
    """Whether every typed literal of a normalised datatype in ``ntriples`` is in its
    canonical lexical form (so ``digest_ntriples`` would rewrite no line): each one's form
    is a fixed point of ``normal_lexical`` (``_CANONICAL_LEXICAL``; doubles recomputed)."""
    for match in _TYPED.finditer(ntriples):
        end = match.start()
        lexical = ntriples[ntriples.rfind(b'"', 0, end) + 1 : end]
        if b"\n" in lexical:
            return False  # not a line of a literal: leave it to the reference
        kind = match.group(1)
        if kind == b"double":
            text = lexical.decode("utf-8")
            if normal_lexical(text, _DOUBLE_TYPE) != text:
                return False
        elif _SURE[kind].fullmatch(lexical) is None:
            return False
    return True


def digest_nquads(nquads: bytes, ntriples: bytes, graph: IRI) -> tuple[str, int]:
    """``digest_ntriples(ntriples, graph)`` (version 2), from the graph's own N-Quads lines
    as the embedded store writes them (``nquads``: every line naming ``graph``, in
    canonical form) when no typed literal needs its lexical form normalised: those lines
    are the canonical lines, sorted and hashed as they are.

    Args:
        nquads: the graph's lines (N-Quads, each naming ``graph``, ending in a line feed).
        ntriples: the same lines without the graph name (N-Triples).
        graph: the graph.

    Returns:
        ``(sha256 hex, number of distinct quads)``.
    """
    if not _canonical_already(ntriples):
        return digest_ntriples(ntriples, graph)
    lines = set(nquads.split(b"\n"))
    lines.discard(b"")
    ordered = sorted(lines)
    ordered.append(b"")
    return hashlib.sha256(b"\n".join(ordered)).hexdigest(), len(lines)
