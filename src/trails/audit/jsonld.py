"""Export's JSON-LD: expanded JSON-LD written term for term, and read back through rdflib.

Kept apart from ``export`` (which chooses graphs, redacts and streams every format)
because JSON-LD is the one format trails writes itself rather than through the
store's serialiser: see ``nquads_to_jsonld`` for why.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from trails.errors import RDFSyntaxError
from trails.store import Literal, Solutions, open_store
from trails.store.terms import XSD, BNode, Term

__all__ = [
    "graph_jsonld",
    "graph_opening",
    "jsonld_node",
    "jsonld_to_nquads",
    "node_values",
    "nquads_to_jsonld",
]


def nquads_to_jsonld(data: bytes) -> bytes:
    """Expanded JSON-LD of a dataset: every IRI in full, every literal typed, term for term.

    Written here rather than by rdflib's serialiser, which compacts IRIs with
    prefixes that can collide with an IRI's own scheme (``agent:bob``), turns
    numbers into native JSON values and rewrites lexical forms (``0.5Z`` as
    ``.500000+00:00``). Expanded form needs no context, so nothing is renamed.
    """
    scratch = open_store("memory:")
    try:
        scratch.load(data, format="nquads")
        rows = scratch.query("SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }")
    finally:
        scratch.close()
    graphs: dict[Term, list[tuple[Term, Term, Term]]] = {}
    for row in rows if isinstance(rows, Solutions) else ():
        graphs.setdefault(row["g"], []).append((row["s"], row["p"], row["o"]))
    pieces = [graph_jsonld(g, graphs[g]) for g in sorted(graphs, key=_jsonld_id)]
    return b"[\n" + b",\n".join(pieces) + b"\n]\n"


def graph_jsonld(graph: Term, triples: Iterable[tuple[Term, Term, Term]]) -> bytes:
    """One named graph as an expanded JSON-LD object (``{"@id": ..., "@graph": [...]}``),
    its nodes sorted: an export writes a dataset graph by graph, never holding it whole."""
    nodes: dict[str, dict[str, list[dict[str, str]]]] = {}
    for s, p, o in triples:
        nodes.setdefault(_jsonld_id(s), {}).setdefault(str(p), []).append(_jsonld_object(o))
    members = b",\n".join(jsonld_node(subject, props) for subject, props in sorted(nodes.items()))
    return graph_opening(graph) + members + b"]}"


def graph_opening(graph: Term) -> bytes:
    """The start of a named graph's JSON-LD object, up to its first node."""
    return (
        b'{"@id": '
        + json.dumps(_jsonld_id(graph), ensure_ascii=False).encode()
        + b', "@graph": [\n'
    )


def jsonld_node(subject: str, props: dict[str, list[dict[str, str]]]) -> bytes:
    """One node object: its properties sorted, each one's values sorted."""
    member: dict[str, Any] = {"@id": subject}
    for predicate, objects in sorted(props.items()):
        member[predicate] = sorted(objects, key=_sort_key)
    return json.dumps(member, indent=1, ensure_ascii=False).encode("utf-8")


def node_values(
    triples: Iterable[tuple[Term, Term, Term]],
) -> Iterator[tuple[str, dict[str, list[dict[str, str]]]]]:
    """Node objects' contents of triples grouped by subject as they come (a store's dump of
    a graph lists each subject's triples together): ``(subject id, predicate -> values)``."""
    subject: str | None = None
    props: dict[str, list[dict[str, str]]] = {}
    for s, p, o in triples:
        sid = _jsonld_id(s)
        if sid != subject:
            if subject is not None:
                yield subject, props
            subject, props = sid, {}
        props.setdefault(str(p), []).append(_jsonld_object(o))
    if subject is not None:
        yield subject, props


def _jsonld_id(term: Term) -> str:
    return f"_:{term}" if isinstance(term, BNode) else str(term)


def _jsonld_object(term: Term) -> dict[str, str]:
    if isinstance(term, Literal):
        if term.language:
            return {"@value": term.value, "@language": term.language}
        if term.datatype == XSD + "string":
            return {"@value": term.value}
        return {"@value": term.value, "@type": term.datatype}
    return {"@id": _jsonld_id(term)}


def _sort_key(value: dict[str, str]) -> str:
    return json.dumps(value, sort_keys=True)


def jsonld_to_nquads(data: bytes) -> bytes:
    """N-Quads of a JSON-LD document (parsed without network access).

    Raises:
        RDFSyntaxError: not JSON-LD.
    """
    import rdflib

    dataset = rdflib.Dataset()
    try:
        dataset.parse(data=data, format="json-ld")
    except Exception as exc:  # rdflib raises many kinds for bad JSON-LD
        raise RDFSyntaxError(f"cannot parse jsonld: {exc}") from exc
    text = dataset.serialize(format="nquads")
    return text.encode("utf-8") if isinstance(text, str) else text
