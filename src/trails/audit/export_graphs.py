"""How an export writes graphs: each graph's lines passed on as the store serialises them.

``trails.audit.export`` chooses the graphs and the redactions; this module writes
them, one graph at a time, as N-Quads, TriG or JSON-LD (``_stream``), so no output
and no graph is held whole, and names the prefixes TriG and the PROV formats
declare: the vocabularies and the kinds of trails IRIs once, and a prefix of its
own only for a namespace none of them covers (``with_prefixes`` gives the same to
any dump). ``trails.audit.export_prov`` writes the PROV formats with it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import BinaryIO

from trails.audit.jsonld import graph_jsonld, graph_opening, jsonld_node, node_values
from trails.evidence.canonical import canonical_term
from trails.evidence.sweep import ntriples_rows
from trails.prov.iri import Minter
from trails.prov.vocab import NAMESPACES, PROV, T
from trails.store import Literal, Solutions, Store
from trails.store.terms import IRI, Term

__all__ = ["ExportStats", "Progress", "with_prefixes"]

Progress = Callable[[int, int, int], None]
"""``progress(graphs_done, graphs_total, quads_written)``."""


@dataclass
class ExportStats:
    """What an export wrote."""

    graphs: int = 0
    quads: int = 0
    redacted: int = 0
    format: str = ""
    refused: list[str] = field(default_factory=list)


_GRAPH_ROWS = "SELECT ?s ?p ?o $graph WHERE { GRAPH $graph { ?s ?p ?o } }"


def _graph_rows(
    store: Store, graph: IRI, hide: dict[IRI, str] | None
) -> tuple[list[tuple[Term, Term, Term]], int]:
    """The triples of one graph, redacted as ``hide`` says, and how many values were."""
    result = store.query(_GRAPH_ROWS, {"graph": graph})
    assert isinstance(result, Solutions)
    if not hide:
        return [(s, p, o) for s, p, o, _ in result.rows], 0  # type: ignore[misc]
    value, marker = str(PROV.value), IRI.trusted(str(T.redaction))
    rows: list[tuple[Term, Term, Term]] = []
    redacted = 0
    seen: set[IRI] = set()
    for s, p, o, _ in result.rows:
        action = hide.get(s) if p == value else None  # type: ignore[arg-type]
        if action is not None and isinstance(o, Literal):
            seen.add(s)  # type: ignore[arg-type]
            redacted += 1
            if action == "drop":
                continue
            o = Literal("sha256:" + hashlib.sha256(o.value.encode("utf-8")).hexdigest())
        rows.append((s, p, o))  # type: ignore[arg-type]
    rows.extend((s, marker, Literal(hide[s])) for s in seen)
    return rows, redacted


def _redacted_lines(store: Store, graph: IRI, hide: dict[IRI, str]) -> tuple[list[str], int]:
    rows, redacted = _graph_rows(store, graph, hide)
    lines = [f"{canonical_term(s)} {canonical_term(p)} {canonical_term(o)}" for s, p, o in rows]  # type: ignore[arg-type]
    lines.sort()
    return lines, redacted


def _graph_ntriples(
    store: Store, graph: IRI, hide: dict[IRI, str] | None
) -> tuple[bytes, int, int]:
    """One graph as N-Triples bytes, its quad count and how many values were redacted."""
    if hide:
        lines, redacted = _redacted_lines(store, graph, hide)
        data = "".join(line + " .\n" for line in lines).encode("utf-8")
        return data, len(lines), redacted
    data = store.dump(format="ntriples", graph=graph) or b""
    return data, data.count(b"\n"), 0


def _prefixes(minter: Minter, avoid: frozenset[str] = frozenset()) -> dict[str, str]:
    names = dict(NAMESPACES)
    for kind in ("session", "activity", "entity", "agent", "capability", "model", "policy"):
        names[kind] = f"{minter.base}{kind}:"
    names["graph"] = f"{minter.base}graph:"
    if not avoid:
        return names
    return {_free(name, avoid, names): iri for name, iri in names.items()}


def _free(name: str, avoid: frozenset[str], taken: Container[str] = ()) -> str:
    """``name``, or ``name1``, ``name2`` ...: a prefix no IRI of the data has as its scheme
    and no other prefix has (``taken``, looked into, never copied: an export declares
    prefixes as it goes, and copying them for each was quadratic).

    The ``prov`` package reads ``agent:bob`` as the qualified name ``agent:bob``
    when a prefix ``agent`` is declared, so a prefix must never equal a scheme.
    """
    candidate, n = name, 0
    while candidate.lower() in avoid or (candidate != name and candidate in taken):
        n += 1
        candidate = f"{name}{n}"
    return candidate


_SCHEME = re.compile(rb"<([A-Za-z][A-Za-z0-9+.\-]*):")
_RESERVED = frozenset({"prov", "xsd"})  # the prov package's own prefixes, never renamed


def _schemes(nquads: bytes) -> frozenset[str]:
    """The IRI schemes of an N-Quads text, lower-cased."""
    return frozenset(m.decode("ascii").lower() for m in set(_SCHEME.findall(nquads)))


def _new_prefixes(
    data: bytes, names: dict[str, str], known: set[str], avoid: frozenset[str] = frozenset()
) -> bytes:
    """``@prefix`` lines for namespaces in ``data`` that no declared namespace covers (PROV
    tools need a prefix for every IRI; TriG allows directives between graph blocks).

    A namespace is covered when a declared one is it or starts it at a ``#``, ``/`` or
    ``:`` (``urn:trails:activity:`` covers ``urn:trails:activity:<uuid>:``): the ``prov``
    package names an IRI by the longest declared namespace it starts with, so the
    vocabularies and the kinds of trails IRIs, declared once at the top, cover every
    session's IRIs, and a session adds no prefix of its own."""
    lines = []
    for iri in sorted(set(_IRI_IN_NT.findall(data.decode("utf-8")))):
        cut = max(iri.rfind("#"), iri.rfind("/"), iri.rfind(":"))
        namespace = iri[: cut + 1]
        if cut > 0 and cut + 1 < len(iri) and not _covered(namespace, known):
            known.add(namespace)
            prefix = _free(f"ns{len(names) + 1}", avoid, names)
            names[prefix] = namespace
            lines.append(f"@prefix {prefix}: <{namespace}> .\n")
    return "".join(lines).encode()


def _covered(namespace: str, known: set[str]) -> bool:
    """Whether a namespace of ``known`` is ``namespace`` or starts it at a separator."""
    if namespace in known:
        return True
    return any(namespace[: m.end()] in known for m in _SEPARATOR.finditer(namespace))


_SEPARATOR = re.compile(r"[#/:]")
_IRI_IN_NT = re.compile(r"<([^<>\s]+)>")


def with_prefixes(data: bytes, minter: Minter | None = None) -> bytes:
    """TriG (or Turtle) ``data`` with an ``@prefix`` for every namespace it uses.

    The ``prov`` package needs a namespace for every IRI it turns into a qualified
    name; without declarations, whether it finds one can depend on the order it
    reads the triples in. Exports always carry them; this gives the same to any dump.
    """
    names = _prefixes(minter or Minter())
    known = set(names.values())
    head = "".join(f"@prefix {p}: <{iri}> .\n" for p, iri in names.items()).encode()
    return head + _new_prefixes(data, names, known) + data


class _LineSink:
    """A file the store serialises into: it hands each run of whole lines to ``_lines``
    and keeps a cut-off line's start (``rest``) for the next chunk."""

    rest: bytes

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        """Nothing is buffered but a cut-off line, which ``close`` writes."""

    def write(self, chunk: bytes) -> int:
        data = self.rest + bytes(chunk)
        cut = data.rfind(b"\n") + 1
        self.rest = data[cut:]
        if cut:
            self._lines(data[:cut])
        return len(chunk)

    def _lines(self, lines: bytes) -> None:
        """Take a run of whole lines (each sink says where they go)."""


class _Lines(_LineSink):
    """Where the store writes one graph's N-Triples, in chunks as it serialises them: each
    whole line goes on to ``out`` as N-Quads (the graph's name added) or inside the graph's
    TriG block (opened at its first line), so no graph is ever held whole, however large
    (the ledger and the catalogue grow with the store). In TriG, the prefixes of namespaces
    no declared one covers follow the block (a directive may stand between blocks, and
    readers declare a prefix for the whole document)."""

    def __init__(
        self,
        out: BinaryIO,
        graph: IRI,
        fmt: str,
        names: dict[str, str],
        known: set[str],
        avoid: frozenset[str],
    ) -> None:
        self.out, self.fmt = out, fmt
        self.names, self.known, self.avoid = names, known, avoid
        self.suffix = f" <{graph}> .\n".encode()
        self.head = f"<{graph}> {{\n".encode()
        self.rest = b""
        self.count = 0
        self.prefixes: list[bytes] = []

    def _lines(self, lines: bytes) -> None:
        if self.fmt == "nquads":
            self.out.write(lines.replace(b" .\n", self.suffix))
        else:
            if not self.count:
                self.out.write(self.head)
            self.prefixes.append(_new_prefixes(lines, self.names, self.known, self.avoid))
            self.out.write(lines)
        self.count += lines.count(b"\n")

    def close(self) -> None:
        """The last line, and the end of the TriG block (nothing for an empty graph)."""
        if self.rest:
            self._lines(self.rest + (b"" if self.rest.endswith(b"\n") else b"\n"))
            self.rest = b""
        if self.fmt == "trig" and self.count:
            self.out.write(b"}\n")
            self.out.write(b"".join(self.prefixes))


class _Nodes(_LineSink):
    """Where the store writes one graph's N-Triples for JSON-LD: each subject's node object
    is written once its triples have come (a store's dump lists them together; a subject
    met again makes a second node object of the same ``@id``, which JSON-LD merges), so no
    graph is held whole."""

    def __init__(self, out: BinaryIO, graph: IRI, separator: bytes) -> None:
        self.out, self.graph, self.separator = out, graph, separator
        self.rest = b""
        self.count = 0
        self.pending: tuple[str, dict[str, list[dict[str, str]]]] | None = None

    def _lines(self, lines: bytes) -> None:
        rows = ntriples_rows(lines)
        if self.pending is not None:  # the last node of the chunk before may go on here
            subject, props = self.pending
            nodes = list(node_values(rows))
            if nodes and nodes[0][0] == subject:
                for p, values in nodes[0][1].items():
                    props.setdefault(p, []).extend(values)
                nodes = nodes[1:]
            groups = [(subject, props), *nodes]
        else:
            groups = list(node_values(rows))
        self.count += len(rows)
        for subject, props in groups[:-1]:
            self._emit(subject, props)
        self.pending = groups[-1] if groups else self.pending

    def _emit(self, subject: str, props: dict[str, list[dict[str, str]]]) -> None:
        if self.separator:
            self.out.write(self.separator + graph_opening(self.graph))
            self.separator = b""
        else:
            self.out.write(b",\n")
        self.out.write(jsonld_node(subject, props))

    def close(self) -> None:
        """The last node, and the end of the graph's object (nothing for an empty graph)."""
        if self.rest:
            self._lines(self.rest + (b"" if self.rest.endswith(b"\n") else b"\n"))
            self.rest = b""
        if self.pending is not None:
            self._emit(*self.pending)
            self.pending = None
        if self.count:
            self.out.write(b"]}")


def _stream(
    store: Store,
    graphs: list[IRI],
    out: BinaryIO,
    fmt: str,
    *,
    targets: dict[IRI, dict[IRI, str]],
    stats: ExportStats,
    progress: Progress | None,
    minter: Minter | None = None,
    avoid: frozenset[str] = frozenset(),
) -> None:
    """Write graphs as N-Quads, TriG or JSON-LD, one graph at a time, so the output is never
    held whole (no prefix named like ``avoid``)."""
    names = _prefixes(minter or Minter(), avoid)
    known = set(names.values())
    if fmt == "trig":
        out.write("".join(f"@prefix {k}: <{v}> .\n" for k, v in names.items()).encode())
    if fmt == "jsonld":
        out.write(b"[")
    written = 0
    for i, g in enumerate(graphs, start=1):  # an empty graph is left out
        if fmt == "jsonld" and targets.get(g):
            rows, redacted = _graph_rows(store, g, targets.get(g))
            count = len(rows)
            if count:
                out.write(b",\n" if written else b"\n")
                out.write(graph_jsonld(g, rows))
        elif fmt == "jsonld":  # node by node, as the store lists each subject's triples
            nodes = _Nodes(out, g, b",\n" if written else b"\n")
            store.dump(nodes, format="ntriples", graph=g)  # type: ignore[arg-type]
            nodes.close()
            count, redacted = nodes.count, 0
        elif targets.get(g):  # redacted: the graph's lines, rewritten
            data, count, redacted = _graph_ntriples(store, g, targets.get(g))
            piece = _Lines(out, g, fmt, names, known, avoid)
            piece.write(data)
            piece.close()
        else:  # the store's own N-Triples, passed on as they come
            piece = _Lines(out, g, fmt, names, known, avoid)
            store.dump(piece, format="ntriples", graph=g)  # type: ignore[arg-type]
            piece.close()
            count, redacted = piece.count, 0
        written += 1 if count else 0
        stats.graphs += 1 if count else 0
        stats.quads += count
        stats.redacted += redacted
        if progress is not None:
            progress(i, len(graphs), stats.quads)
    if fmt == "jsonld":
        out.write(b"\n]\n" if written else b"]\n")
