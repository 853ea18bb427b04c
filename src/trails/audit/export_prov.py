"""PROV-N and PROV-JSON exports, written session by session so a whole store streams.

``trails.audit.export`` chooses the graphs and redacts them; this module writes the
PROV formats from each session's quads (``trails.audit.provn``: one bundle per
session, its content graph in it) into a spill file, copied to the output once
whole, so memory stays that of one session whatever the store's size; a graph
larger than ``_PART`` (the ledger, the catalogue: they grow with the store) is
decoded in parts cut between subjects (``_Parts``), the same bytes. A graph
``trails.audit.provn`` cannot map exactly as the ``prov`` package would sends the
whole export through the ``prov`` package instead (which builds the document in
memory); a prefix found named like the scheme of an IRI met later is renamed by
writing the export again.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import tempfile
from typing import IO, Any

from trails.audit.export_graphs import (
    _RESERVED,
    ExportStats,
    Progress,
    _graph_ntriples,
    _LineSink,
    _prefixes,
    _schemes,
    _stream,
)
from trails.audit.provn import ProvWriter, Unsupported, Whole, bundle_triples
from trails.errors import ExportError
from trails.prov.content import content_graph, is_content_graph, structure_graph
from trails.prov.iri import Minter
from trails.prov.vocab import PROV
from trails.store import Store, open_store
from trails.store.terms import IRI

__all__ = ["export_prov"]


def _bundles_of(graphs: list[IRI]) -> list[IRI]:
    """One bundle per session graph, in order (a content graph's bundle is its session's)."""
    return list(dict.fromkeys(structure_graph(g) if is_content_graph(g) else g for g in graphs))


def export_prov(
    store: Store,
    graphs: list[IRI],
    out: IO[bytes],
    format: str,
    *,
    targets: dict[IRI, dict[IRI, str]],
    stats: ExportStats,
    progress: Progress | None,
    minter: Minter,
) -> None:
    """PROV-N or PROV-JSON, written bundle by bundle from each session's (redacted) quads
    (``trails.audit.provn``), into a spill file that is copied to ``out`` once whole: a
    graph that writer cannot map exactly sends the whole export through the ``prov``
    package instead, and a prefix found to be named like a scheme met later is renamed by
    writing again. Memory stays that of one session."""
    selected = set(graphs)
    bundles = _bundles_of(graphs)
    avoid: frozenset[str] = frozenset()
    while True:
        with tempfile.SpooledTemporaryFile(max_size=_SPILL) as spill:
            counted = ExportStats(format=format)
            try:
                schemes = _write_prov(
                    store, bundles, selected, spill, format, targets=targets, stats=counted,
                    progress=progress, prefixes=_prefixes(minter, avoid), avoid=avoid,
                )  # fmt: skip
            except Unsupported:
                break
            if schemes & _RESERVED:
                raise ExportError(
                    f"{format} cannot keep IRIs whose scheme is "
                    f"{', '.join(sorted(schemes & _RESERVED))}: the prov package reads them as "
                    f"its own prefix (prov:erin would become {PROV}erin); export as trig, "
                    "nquads or jsonld"
                )
            if schemes <= avoid or not _named_like(schemes - avoid, minter):
                spill.seek(0)
                shutil.copyfileobj(spill, out)
                stats.graphs, stats.quads = counted.graphs, counted.quads
                stats.redacted = counted.redacted
                return
            avoid = avoid | schemes  # a prefix was named like a scheme: write again
    _export_prov_package(store, graphs, out, format, targets=targets, stats=stats,
                         progress=progress, minter=minter)  # fmt: skip


_SPILL = 16 << 20
"""Bytes of a PROV export held in memory before it spills to a temporary file."""

_PART = 4 << 20
"""Bytes of a graph's N-Triples decoded at once: a larger graph is written in parts."""


class _Parts(_LineSink):
    """Where the store writes a bundle's only graph: kept whole (``data``) while it is small,
    else handed to the writer in parts of about ``_PART`` bytes, each cut between two
    subjects (the store lists a subject's triples together), so the ledger's and the
    catalogue's bundles, which grow with the store, are never decoded whole. A part the
    writer cannot write apart (``Whole``) sends the bundle back to ``data``: read whole."""

    def __init__(self, writer: ProvWriter, bundle: str, schemes: set[str]) -> None:
        self.writer, self.bundle, self.schemes = writer, bundle, schemes
        self.rest = b""
        self.buffer: list[bytes] = []
        self.size = 0
        self.count = 0
        self.parted = False  # parts written to the writer
        self.whole = False  # the writer refused a part: read the graph whole
        self.reserved = False  # an IRI scheme the prov package reserves: stop
        self.error: Unsupported | None = None
        self.data = b""
        self.done = False  # the bundle was written in parts

    def _lines(self, lines: bytes) -> None:
        self.count += lines.count(b"\n")
        if self.reserved or self.whole or self.error is not None:
            return
        self.schemes |= _schemes(lines)
        if self.schemes & _RESERVED:
            self.reserved = True
            return
        self.buffer.append(lines)
        self.size += len(lines)
        if self.size >= _PART:
            data = b"".join(self.buffer)
            last = data.rfind(b"\n", 0, len(data) - 1) + 1  # the last line's start
            subject = data[last : data.index(b" ", last) + 1]
            cut = last
            while cut and data.startswith(subject, data.rfind(b"\n", 0, cut - 1) + 1):
                cut = data.rfind(b"\n", 0, cut - 1) + 1  # back to the subject's first line
            if cut:
                self.buffer, self.size = [data[cut:]], len(data) - cut
                self._part(data[:cut])
            else:
                self.buffer = [data]

    def _part(self, data: bytes) -> None:
        try:
            if not self.parted:
                self.writer.begin(self.bundle)
                self.parted = True
            self.writer.part(bundle_triples(_named(data, self.bundle), self.bundle))
        except Whole:
            self.writer.rollback()
            self.whole = True
        except Unsupported as exc:
            self.error = exc

    def close(self) -> None:
        if self.rest:
            self._lines(self.rest + (b"" if self.rest.endswith(b"\n") else b"\n"))
            self.rest = b""
        if self.error is None and not self.reserved:
            self._finish()
        if self.error is not None:
            if self.parted and not self.whole:
                self.writer.rollback()
            raise self.error

    def _finish(self) -> None:
        data = b"".join(self.buffer)
        self.buffer = []
        if self.whole:  # a part refused: the graph read again, whole
            self.data = b""
            return
        if not self.parted:
            self.data = data
            return
        if data:
            self._part(data)
        if self.error is not None or self.whole:
            return
        self.writer.end()
        self.done = True


def _named(data: bytes, graph: str) -> bytes:
    return data.replace(b" .\n", f" <{graph}> .\n".encode())


def _named_like(schemes: frozenset[str], minter: Minter) -> bool:
    """Whether any prefix an export may declare is named like one of ``schemes``."""
    named = any(name.lower() in schemes for name in _prefixes(minter))
    return named or any(re.fullmatch(r"ns\d+", s) for s in schemes)


def _write_prov(
    store: Store,
    bundles: list[IRI],
    selected: set[IRI],
    out: IO[bytes],
    format: str,
    *,
    targets: dict[IRI, dict[IRI, str]],
    stats: ExportStats,
    progress: Progress | None,
    prefixes: dict[str, str],
    avoid: frozenset[str],
) -> frozenset[str]:
    """Write each bundle's records; returns the IRI schemes met."""
    writer = ProvWriter(
        out, format=format, bundles=[str(b) for b in bundles], prefixes=prefixes, avoid=avoid
    )
    schemes: set[str] = set()
    grouped = bool(getattr(store, "groups_subjects", False))  # a graph's dump cut by subject
    for done, bundle in enumerate(bundles, 1):
        pieces, taken = [], False  # taken: the graph's data came through ``_Parts``
        alone = content_graph(bundle) not in selected and not targets.get(bundle) and grouped
        if alone and bundle in selected:  # one graph: written in parts when it is large
            parts = _Parts(writer, str(bundle), schemes)
            store.dump(parts, format="ntriples", graph=bundle)  # type: ignore[arg-type]
            parts.close()
            if not parts.whole:  # else counted below, when read whole
                stats.graphs += 1 if parts.count else 0
                stats.quads += parts.count
            if parts.reserved or parts.done:
                if parts.reserved:
                    break
                if progress is not None:
                    progress(done, len(bundles), stats.quads)
                continue
            if not parts.whole:
                pieces.append(_named(parts.data, str(bundle)))
                taken = True
        for g in (bundle, content_graph(bundle)):
            if g not in selected or taken:
                continue
            data, count, redacted = _graph_ntriples(store, g, targets.get(g))
            pieces.append(data.replace(b" .\n", f" <{g}> .\n".encode()))
            stats.graphs += 1 if count else 0
            stats.quads += count
            stats.redacted += redacted
        nquads = b"".join(pieces)
        schemes |= _schemes(nquads)
        if schemes & _RESERVED:
            break
        if nquads:  # an empty graph is left out
            writer.add(str(bundle), bundle_triples(nquads, str(bundle)))
        if progress is not None:
            progress(done, len(bundles), stats.quads)
    writer.close()
    return frozenset(schemes)


def _export_prov_package(
    store: Store,
    graphs: list[IRI],
    out: IO[bytes],
    format: str,
    *,
    targets: dict[IRI, dict[IRI, str]],
    stats: ExportStats,
    progress: Progress | None,
    minter: Minter,
) -> None:
    """PROV-N or PROV-JSON through the ``prov`` package: for graphs ``trails.audit.provn``
    cannot map exactly (the package builds the whole document in memory)."""
    from prov.model import ProvDocument

    buffer = io.BytesIO()
    _stream(store, graphs, buffer, "nquads", targets=targets, stats=stats, progress=None)
    schemes = _schemes(buffer.getvalue())
    structure = [g for g in graphs if not is_content_graph(g)]
    # Each session is converted on its own (the prov package's RDF reading slows down with
    # every graph it holds at once: converting them together was superlinear), then the
    # bundles are gathered in one document, and progress counts the sessions converted.
    document = ProvDocument()
    merged = None if len(structure) == len(graphs) else open_store("memory:")
    try:
        if merged is not None:  # one bundle per session: its content merged back into it
            merged.load(buffer.getvalue(), format="nquads")  # already redacted
            for g in graphs:
                if is_content_graph(g):
                    data = merged.dump(format="ntriples", graph=g) or b""
                    merged.load(data, format="ntriples", graph=structure_graph(g))
                    merged.clear(g)
        source, names = (store, graphs) if merged is None else (merged, structure)
        for done, g in enumerate(names, 1):
            trig = io.BytesIO()
            _stream(
                source,
                [g],
                trig,
                "trig",
                targets=targets if merged is None else {},
                stats=ExportStats(),
                progress=None,
                minter=minter,
                avoid=schemes,
            )
            piece = ProvDocument.deserialize(
                content=trig.getvalue().decode("utf-8"), format="rdf", rdf_format="trig"
            )
            for record in piece.get_records():
                document.add_record(record)
            for bundle in piece.bundles:
                # prefixes travel with their bundle (another session may give a generated
                # prefix such as ns15 another IRI); the document declares the bundle's name
                for namespace in piece.namespaces:
                    bundle.add_namespace(namespace)
                if bundle.identifier is not None:
                    document.add_namespace(bundle.identifier.namespace)
                document.add_bundle(bundle)
            if progress is not None:
                progress(done, len(names), stats.quads)
    finally:
        if merged is not None:
            merged.close()
    text = document.serialize(format="provn" if format == "provn" else "json")
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    text = _drop_unused_prefixes(text or "", provn=format == "provn")
    out.write(text.encode("utf-8"))


def _drop_unused_prefixes(text: str, *, provn: bool) -> str:
    """Leave out prefix declarations nothing uses (rdflib binds dozens by default)."""
    if provn:
        lines = text.splitlines(keepends=True)
        body = "".join(line for line in lines if not _PROVN_PREFIX.match(line))
        used = set(_PROVN_USE.findall(body))  # one pass: linear in the document's size
        kept = [
            line for line in lines if not (m := _PROVN_PREFIX.match(line)) or m.group(1) in used
        ]
        return "".join(kept)
    document = json.loads(text)
    rest = json.dumps({k: v for k, v in document.items() if k != "prefix"})
    used = set(_PROVN_USE.findall(rest))  # one pass, as for PROV-N

    def prune(node: Any) -> None:
        if isinstance(node, dict):
            prefixes = node.get("prefix")
            if isinstance(prefixes, dict):
                node["prefix"] = {p: iri for p, iri in prefixes.items() if p in used}
            for value in node.values():
                prune(value)

    prune(document)
    return json.dumps(document, indent=2, ensure_ascii=False)


_PROVN_PREFIX = re.compile(r"^\s*prefix\s+([A-Za-z_][\w.-]*)\s+<")
_PROVN_USE = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]*):")  # a prefix where it is used
