"""Offline evidence bundles: a regulator's copy that verifies without the store.

``write_bundle`` puts the selected session graphs in one zip archive with
everything needed to check them on another machine:

- ``sessions/NNNN.trig``: each graph, in TriG, as the store holds it, with its content
  graph; the sealed erasure and retention receipts that name a bundled session's
  removed content, and the sealed findings graphs of the controls evaluated on a
  bundled session (with the graphs of the control definitions they used), are bundled
  as graphs of their own;
- ``ledger/segment.nq``: the seals of those graphs and, for each writer's
  chain, every seal between the first and the last of them (the **chain
  segment**), plus recorded key rotations, in canonical N-Quads;
- ``keys/NNNN.pem``: the public keys recorded in those seals and rotations;
- ``answers/*.csv``: the pack queries' answers over the bundled graphs (a
  query that needs a session is answered once per session);
- ``log/proofs.json``: the transparency log's newest signed tree head and the
  inclusion proof of each bundled seal in it (``trails.evidence.transparency``),
  when the store has a log;
- ``manifest.json``: what is where, with each file's SHA-256 and size.

The archive is written in one canonical layout (entries stored uncompressed,
in sorted order, with fixed times and modes), so ``verify_bundle`` can rebuild
it from its content and compare byte for byte: a single changed byte anywhere,
content or zip structure, is found. Before reading any entry it checks the central
directory (only bundle names, each once, stored, unencrypted, sizes that fit in the
file), so nothing is ever inflated, and reads one entry at a time into a spill file;
every archive the zip reader cannot read is an ``archive`` finding. Then it checks
every file against the manifest, each seal's own hash and signature, the links inside
each chain segment, each bundled graph against its newest seal, every graph of the session
files against the manifest's list (a graph smuggled in is ``foreign``), each bundled content value
against the digest its sealed graph keeps (``trails.evidence.content``: content
altered, missing without a bundled sealed receipt, or foreign), and recomputes
the answers from the graphs (over a scratch store of the bundle's graphs, on disk for a
large bundle: ``trails.store.scratch``; every pack query orders its rows totally, so the
answers are the same bytes in any store). ``BundleReport.proves`` and ``.does_not_prove`` say
in words what the result means, since a bundle is a part of a ledger, not all
of it.

Export redaction rules are not applied to bundles: a redacted graph no longer
matches its seal, and a bundle is evidence. Mask personal data at the source
(``trails.redact``) instead.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import functools
import hashlib
import io
import itertools
import json
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trails.audit.archive import MANIFEST, NotABundle, Spill, read_archive, zip_info
from trails.audit.export import ExportStats, export
from trails.audit.files import write_file
from trails.audit.querypack import Query, load_pack
from trails.audit.segment import segment_bytes
from trails.catalogue.entries import catalogue_iri, rebuild
from trails.errors import ExportError, UserError
from trails.evidence.content import ContentChecker, ContentTally, read_accounts, receipt_graphs
from trails.evidence.ledger import (
    GENESIS,
    LedgerContents,
    SealRecord,
    latest_of,
    ledger_iri,
    read_ledger,
)
from trails.evidence.proofs import ProofError, ProofReport, check_log_proofs, unlike_its_seal
from trails.evidence.timestamp import timestamp_checker
from trails.evidence.transparency import log_iri, log_proofs
from trails.evidence.verify import Finding, VerifyReport, _check_seal, trusted_keys
from trails.prov.content import content_graph, is_content_graph, structure_graph
from trails.prov.iri import Minter
from trails.store import Solutions, Store
from trails.store.scratch import Document, scratch_store
from trails.store.terms import IRI

__all__ = ["BUNDLE_FORMAT", "BundleReport", "BundleStats", "verify_bundle", "write_bundle"]

BUNDLE_FORMAT = "trails-bundle/1"
"""The manifest's ``format``: change it when the layout changes."""

_SEGMENT = "ledger/segment.nq"
_PROOFS = "log/proofs.json"
_SESSION_TYPE = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH $g { $g a trails:Session } }
"""


@dataclass
class BundleStats:
    """What ``write_bundle`` wrote."""

    graphs: int = 0
    quads: int = 0
    seals: int = 0
    answers: int = 0
    bytes: int = 0


@dataclass
class BundleReport:
    """What ``verify_bundle`` found, and what the result means."""

    findings: list[Finding] = field(default_factory=list)
    graphs_checked: int = 0
    seals: int = 0
    signed: int = 0
    answers_checked: int = 0
    unsealed: list[str] = field(default_factory=list)
    unchecked_answers: list[str] = field(default_factory=list)
    """Answer files of queries this installation's pack does not have (not recomputed)."""
    content: ContentTally = field(default_factory=ContentTally)
    """The bundled content checked against the bundled seals' digests."""
    proves: list[str] = field(default_factory=list)
    does_not_prove: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing in the bundle fails its check."""
        return not self.findings


# -- writing ------------------------------------------------------------------------


def _zip_bytes(entries: dict[str, bytes]) -> bytes:
    """The canonical archive of ``entries``: manifest first, then sorted, stored, fixed times."""
    buffer = io.BytesIO()
    names = sorted(entries, key=lambda n: (n != MANIFEST, n))
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name in names:
            archive.writestr(zip_info(name), entries[name])
    return buffer.getvalue()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _pem(key_b64: str) -> bytes:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    key = Ed25519PublicKey.from_public_bytes(base64.b64decode(key_b64))
    return key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)


def _segment(contents: LedgerContents, graphs: set[IRI]) -> list[SealRecord]:
    """Every seal of ``graphs`` and, per chain, every seal between the first and last of them."""
    ranges: dict[IRI | None, tuple[int, int]] = {}
    for seal in contents.seals:
        if seal.graph in graphs:
            low, high = ranges.get(seal.chain, (seal.sequence, seal.sequence))
            ranges[seal.chain] = (min(low, seal.sequence), max(high, seal.sequence))
    return [
        s
        for s in contents.seals
        if s.chain in ranges and ranges[s.chain][0] <= s.sequence <= ranges[s.chain][1]
    ]


def _answerable(pack: dict[str, Query]) -> list[tuple[Query, bool]]:
    """SELECT queries that need no parameter (False) or only a session (True)."""
    chosen = []
    for query in pack.values():
        if query.form != "SELECT":
            continue
        required = {n for n, p in query.params.items() if not p.optional}
        if not required:
            chosen.append((query, False))
        elif required == {"session"}:
            chosen.append((query, True))
    return chosen


def _answers(
    scratch: Store,
    sessions: dict[str, IRI],
    add: Callable[[str, bytes], None] | None = None,
) -> dict[str, bytes]:
    """Pack answers over the bundled graphs, as CSV, by archive path (each given to ``add``
    as it is made instead, when given: never all in memory)."""
    out: dict[str, bytes] = {}
    put = out.__setitem__ if add is None else add
    for query, per_session in _answerable(load_pack()):
        if per_session:
            for stem, graph in sessions.items():
                data = query.run_to(scratch, {"session": graph}, format="csv")
                put(f"answers/{query.name}/{stem}.csv", data)
        else:
            put(f"answers/{query.name}.csv", query.run_to(scratch, {}, format="csv"))
    return out


def _format(name: str) -> str | None:
    """The RDF format of a bundle file the scratch store loads (None: not loaded)."""
    if name == _SEGMENT:
        return "nquads"
    return "trig" if name.startswith("sessions/") and name.endswith(".trig") else None


IN_MEMORY = 32 << 20
"""Bytes of graphs and segment up to which a bundle's scratch store is kept in memory:
creating a store on disk costs more than a few sessions; beyond, memory would grow with
the bundle."""


_WHOLE = 1 << 20
"""A bundled file up to this size is read whole into the scratch store; a larger one (the
catalogue's, a whole store's ledger segment) is parsed from the spill as a stream."""


def _document(spill: Spill, name: str) -> Document:
    return spill.read(name) if spill.size(name) <= _WHOLE else functools.partial(spill.open, name)


@contextlib.contextmanager
def _scratch(
    documents: Iterable[tuple[str, Document]],
    findings: list[Finding] | None = None,
    *,
    size: int = 0,
) -> Iterator[Store]:
    """A scratch store with the bundle's graphs and ledger segment (the files of
    ``documents`` that are either), and the catalogue rebuilt from them, as a regulator
    re-running the pack over the bundle would have it: on disk when the files hold more
    than ``IN_MEMORY`` bytes (``size``), in memory otherwise. Every pack query orders its
    rows totally, so the answers are the same bytes either way.

    With ``findings`` (verifying), a file that does not parse is a finding, not an error.
    """

    def refused(name: str, why: str) -> None:
        assert findings is not None
        findings.append(Finding("altered", name, f"does not parse as {_format(name)}: {why}"))

    loaded = ((n, d, f) for n, d in documents if (f := _format(n)))
    on_error = None if findings is None else refused
    with scratch_store(loaded, refused=on_error, in_memory=size <= IN_MEMORY) as scratch:
        rebuild(scratch)  # the catalogue the store-wide pack queries read, from the bundle
        yield scratch


_FINDINGS = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT DISTINCT ?g ?session ?defined WHERE {
  GRAPH ?g { ?e trails:evaluatedSession ?session ; prov:used ?c }
  OPTIONAL { GRAPH ?defined { ?c a trails:Control } }
}"""


def _findings_graphs(store: Store, graphs: list[IRI]) -> set[IRI]:
    """The sealed findings graphs of control evaluations of ``graphs``, and the graphs of
    the control definitions they used (they travel too)."""
    wanted = {str(g) for g in graphs}
    result = store.query(_FINDINGS)
    assert isinstance(result, Solutions)
    out: set[IRI] = set()
    for r in result:
        if str(r["session"]) in wanted:
            out.add(IRI.trusted(str(r["g"])))
            if r.get("defined") is not None:
                out.add(IRI.trusted(str(r["defined"])))
    return out


def write_bundle(
    store: Store,
    path: str | Path,
    graphs: list[IRI],
    *,
    minter: Minter | None = None,
    selection: str = "",
) -> BundleStats:
    """Write an evidence bundle of ``graphs`` (from ``select_graphs``) to ``path``.

    Check ``check_assurance`` first. The ledger graph, when selected (``--all``),
    is not bundled whole: its segment covering the bundled graphs is.

    Args:
        store: the store.
        path: the zip file to write (``trails.audit.files``: a link there is replaced, not
            followed, and a failure leaves no half bundle).
        graphs: the graphs to bundle.
        minter: names the ledger (default ``urn:trails:``).
        selection: how the graphs were chosen, recorded in the manifest.

    Returns:
        What was written.

    Raises:
        ExportError: nothing to bundle, or the file cannot be written.
        StoreError: the store could not be read.
    """
    minter = minter or Minter()
    ledger = ledger_iri(minter)
    present = set(store.graphs())
    # a session's content graph goes in its session's file (not sealed, not a session)
    # the ledger and the transparency log travel as the segment and the proofs, not whole
    apart = {ledger, log_iri(minter)}
    graphs = sorted(g for g in set(graphs) if g not in apart and not is_content_graph(g))
    if not graphs:
        raise ExportError("the selection is empty: no session graph to bundle")
    # the sealed receipts of content erased or retained away go with the sessions they name
    graphs = sorted(set(graphs) | receipt_graphs(store, graphs) | _findings_graphs(store, graphs))
    stats = BundleStats()
    spill = Spill()  # every file but the manifest, as it is made: never all in memory
    try:
        manifest = _bundle_files(store, graphs, present, ledger, minter, spill, stats)
        manifest["selection"] = selection
        manifest["files"] = spill.listing()
        head = (MANIFEST, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode())
        stats.bytes = write_file(path, lambda out: spill.write_zip(out, head), what="the bundle")
    finally:
        spill.close()
    return stats


def _bundle_files(
    store: Store,
    graphs: list[IRI],
    present: set[IRI],
    ledger: IRI,
    minter: Minter,
    spill: Spill,
    stats: BundleStats,
) -> dict[str, Any]:
    """Put the bundle's files in ``spill``; returns the manifest but its files and selection."""
    sessions: dict[str, IRI] = {}
    for i, graph in enumerate(graphs, start=1):
        stem = f"{i:04d}"
        content = content_graph(graph)
        selected = [graph, content] if content in present else [graph]
        with spill.writer(f"sessions/{stem}.trig") as out:  # on disk as it is written
            part: ExportStats = export(store, out, selected, format="trig", minter=minter)
        sessions[stem] = graph
        stats.quads += part.quads
    stats.graphs = len(graphs)

    contents = read_ledger(store, ledger)
    segment = _segment(contents, set(graphs))
    keep = {s.iri for s in segment} | {r.iri for r in contents.rotations}
    spill.add_parts(_SEGMENT, segment_bytes(store, ledger, keep))  # sorted outside memory
    stats.seals = len(segment)
    keys = sorted(
        {s.signing_key for s in segment if s.signing_key}
        | {k for r in contents.rotations for k in (r.from_key, r.to_key) if k}
    )
    for i, key in enumerate(keys, start=1):
        spill.add(f"keys/{i:04d}.pem", _pem(key))
    proofs = log_proofs(store, minter, [s.iri for s in segment])
    if proofs is not None:
        spill.add(_PROOFS, (json.dumps(proofs, indent=2, sort_keys=True) + "\n").encode())

    # the pack's answers over the bundled graphs alone, as ``verify_bundle`` recomputes them
    loaded = [f"sessions/{stem}.trig" for stem in sessions] + [_SEGMENT]
    size = sum(spill.size(name) for name in loaded)
    with _scratch(((name, _document(spill, name)) for name in loaded), size=size) as scratch:
        before = len(spill)
        _answers(scratch, sessions, spill.add)
        described = _describe_sessions(scratch, sessions, segment)
        stats.answers = len(spill) - before

    chains: dict[str, list[SealRecord]] = defaultdict(list)
    for seal in segment:
        chains[str(seal.chain or "")].append(seal)
    return {
        "format": BUNDLE_FORMAT,
        "created": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "ledger": str(ledger),
        "sessions": described,
        "chains": [
            {
                "chain": chain,
                "first": seals[0].sequence,
                "last": seals[-1].sequence,
                "head": seals[-1].seal_hash,
            }
            for chain, seals in sorted(chains.items())
        ],
        "keys": {
            name: base64_key
            for name, base64_key in zip(
                [f"keys/{i:04d}.pem" for i in range(1, len(keys) + 1)], keys, strict=True
            )
        },
    }


def _describe_sessions(
    scratch: Store, sessions: dict[str, IRI], segment: list[SealRecord]
) -> list[dict[str, Any]]:
    by_graph: dict[IRI, list[SealRecord]] = defaultdict(list)
    for seal in segment:
        by_graph[seal.graph].append(seal)
    described = []
    for stem, graph in sessions.items():
        latest = latest_of(by_graph.get(graph, []))
        described.append(
            {
                "graph": str(graph),
                "file": f"sessions/{stem}.trig",
                "session": bool(scratch.query(_SESSION_TYPE, {"g": graph})),
                "seal": str(latest.iri) if latest else None,
                "graph_hash": latest.graph_hash if latest else None,
                "quads": latest.quad_count if latest else None,
            }
        )
    return described


# -- verifying ----------------------------------------------------------------------


def _read_archive(path: Path, report: BundleReport) -> tuple[bytes, Spill] | None:
    """The manifest's bytes and every other file, or None (an ``archive`` finding) when
    the archive is not a bundle's (``trails.audit.archive.read_archive``)."""
    try:
        source = path.open("rb")
    except OSError as exc:
        raise UserError(f"cannot read the bundle {path}: {exc}") from exc
    with source:
        try:
            manifest, spill, canonical = read_archive(source)
        except NotABundle as exc:
            report.findings.append(Finding("archive", str(path), str(exc)))
            return None
    if not canonical:
        report.findings.append(
            Finding(
                "archive",
                str(path),
                "its bytes differ from the canonical archive of its content "
                "(the zip structure was changed after it was written)",
            )
        )
    return manifest, spill


def _check_files(spill: Spill, manifest: dict[str, Any], report: BundleReport) -> None:
    files = manifest.get("files", {})
    held = spill.listing()
    for name, got in held.items():
        listed = files.get(name)
        if listed is None:
            report.findings.append(Finding("manifest", name, "in the archive, not in the manifest"))
        elif listed.get("sha256") != got["sha256"] or listed.get("bytes") != got["bytes"]:
            report.findings.append(
                Finding("altered", name, "its SHA-256 or size differs from the manifest")
            )
    for name in sorted(set(files) - set(held) - {MANIFEST}):
        report.findings.append(Finding("missing", name, "in the manifest, not in the archive"))


def _check_segment(
    contents: LedgerContents, trusted: set[str] | None, report: BundleReport
) -> dict[str, tuple[int, int]]:
    """Each seal's hash and signature, and the links inside each chain's segment."""
    inner = VerifyReport()
    chains: dict[IRI | None, list[SealRecord]] = defaultdict(list)
    for seal in contents.seals:
        _check_seal(seal, trusted, inner)
        chains[seal.chain].append(seal)
    report.findings.extend(inner.findings)
    report.signed = inner.signed
    report.seals = len(contents.seals)
    spans: dict[str, tuple[int, int]] = {}
    for chain, seals in chains.items():
        seals.sort(key=lambda s: (s.sequence, s.iri))
        spans[str(chain or "")] = (seals[0].sequence, seals[-1].sequence)
        if seals[0].sequence == 1 and seals[0].previous_hash != GENESIS:
            report.findings.append(
                Finding("chain", str(seals[0].iri), "the first seal does not start from genesis")
            )
        for before, seal in itertools.pairwise(seals):
            if seal.sequence != before.sequence + 1:
                report.findings.append(
                    Finding(
                        "chain",
                        str(seal.iri),
                        f"sequence {seal.sequence} follows {before.sequence} in the segment "
                        "(a seal is missing from the bundle)",
                    )
                )
            elif seal.previous != before.iri or seal.previous_hash != before.seal_hash:
                report.findings.append(
                    Finding("chain", str(seal.iri), "it does not link to the seal before it")
                )
    return spans


def _rows_of(data: bytes) -> Counter[tuple[str, ...]] | None:
    """The rows of a CSV answer, or None when it is not UTF-8 CSV."""
    try:
        return Counter(tuple(row) for row in csv.reader(io.StringIO(data.decode("utf-8"))))
    except (UnicodeDecodeError, csv.Error):
        return None


def _read_manifest(data: bytes) -> tuple[dict[str, Any], IRI, list[dict[str, Any]]]:
    """The manifest, its ledger and its sessions, checked for the shape ``write_bundle`` gives.

    Raises:
        ValueError: not JSON (``UnicodeDecodeError`` is one), another format or shape.
        RecursionError: JSON nested deeper than the parser goes.
    """
    manifest = json.loads(data)
    if not isinstance(manifest, dict):
        raise ValueError("not a JSON object")
    if manifest.get("format") != BUNDLE_FORMAT:
        raise ValueError(f"format {manifest.get('format')!r}, expected {BUNDLE_FORMAT}")
    files, described = manifest.get("files"), manifest.get("sessions")
    if not isinstance(files, dict) or not all(isinstance(v, dict) for v in files.values()):
        raise ValueError("its files are not an object of objects")
    if not isinstance(described, list) or not all(
        isinstance(d, dict) and isinstance(d.get("graph"), str) and isinstance(d.get("file"), str)
        for d in described
    ):
        raise ValueError("its sessions are not a list of objects naming a graph and a file")
    if not isinstance(manifest.get("ledger"), str):
        raise ValueError("its ledger is not an IRI")
    return manifest, IRI(manifest["ledger"]), described


def verify_bundle(
    path: str | Path, *, public_key: Any = None, expect_heads: list[str] | None = None
) -> BundleReport:
    """Check an evidence bundle without the store it came from.

    Args:
        path: the zip file.
        public_key: a trusted Ed25519 public key (obtained apart from the bundle): every
            bundled seal must be signed by it or by a key a recorded rotation from it
            introduced.
        expect_heads: seal hashes kept elsewhere; each must be a seal in the bundle.

    Returns:
        The report, with what the result proves and does not.

    Raises:
        UserError: the file cannot be read.
    """
    path = Path(path)
    report = BundleReport()
    read = _read_archive(path, report)
    if read is None:
        return report
    head, spill = read
    try:
        try:
            manifest, ledger, described = _read_manifest(head)
        except (KeyError, ValueError, TypeError, RecursionError) as exc:
            report.findings.append(Finding("manifest", MANIFEST, f"unreadable: {exc}"))
            return report
        _check_files(spill, manifest, report)
        files = spill.names()
        size = sum(spill.size(n) for n in files if _format(n))
        documents = ((n, _document(spill, n)) for n in files if _format(n))
        with _scratch(documents, report.findings, size=size) as scratch:
            contents, bundled, spans = _check_graphs(scratch, ledger, described, public_key, report)
            _check_listed(scratch, set(bundled.values()), ledger, report)
            _check_content(
                scratch, set(bundled.values()), {s.graph for s in contents.seals}, report
            )
            _check_answers(scratch, bundled, spill, report)
        hashes = {s.seal_hash for s in contents.seals}
        for expected in expect_heads or []:
            if expected not in hashes:
                report.findings.append(
                    Finding("chain", expected, "the expected head is not in the bundle")
                )
        _explain(
            report,
            contents,
            bundled=set(bundled.values()),
            spans=spans,
            trusted=public_key is not None,
            heads=expect_heads,
        )
        _check_log(spill.read(_PROOFS) if _PROOFS in files else None, contents, public_key, report)
    finally:
        spill.close()
    return report


def _check_graphs(
    scratch: Store,
    ledger: IRI,
    described: list[dict[str, Any]],
    public_key: Any,
    report: BundleReport,
) -> tuple[LedgerContents, dict[str, IRI], dict[str, tuple[int, int]]]:
    """The segment's seals, and each bundled graph against its newest seal; returns the
    ledger's contents, the bundled graphs by file stem and each chain's span."""
    contents = read_ledger(scratch, ledger)
    trusted = trusted_keys(public_key, contents.rotations) if public_key is not None else None
    spans = _check_segment(contents, trusted, report)
    by_graph: dict[IRI, list[SealRecord]] = defaultdict(list)
    for seal in contents.seals:
        by_graph[seal.graph].append(seal)
    bundled: dict[str, IRI] = {}
    for item in described:
        graph = IRI.trusted(str(item["graph"]))
        bundled[Path(str(item["file"])).stem] = graph
        latest = latest_of(by_graph.get(graph, []))
        if latest is None:
            report.unsealed.append(str(graph))
            continue
        report.graphs_checked += 1
        altered = unlike_its_seal(scratch, graph, latest, "bundled")
        if altered is not None:
            report.findings.append(altered)
    return contents, bundled, spans


def _check_answers(
    scratch: Store, bundled: dict[str, IRI], spill: Spill, report: BundleReport
) -> None:
    """Each answer file against the answer recomputed from the bundled graphs, one at a time."""
    held = set(spill.names())
    recomputed: set[str] = set()
    differ: list[str] = []

    def compare(name: str, data: bytes) -> None:
        recomputed.add(name)
        if name not in held:
            return  # a query this trails has and the exporter's had not
        report.answers_checked += 1
        held_data = spill.read(name)
        # the same bytes are the same rows; rows are parsed (and counted, in any order) only
        # when the bytes differ: parsed every time, a whole store's answers held their rows
        # twice over as Python tuples
        if held_data != data and _rows_of(held_data) != _rows_of(data):
            differ.append(name)

    _answers(scratch, bundled, compare)
    report.unchecked_answers.extend(
        sorted(n for n in held if n.startswith("answers/") and n not in recomputed)
    )
    for name in sorted(differ):
        report.findings.append(
            Finding("answers", name, "differs from the answer recomputed from the graphs")
        )


def _check_log(
    data: bytes | None, contents: LedgerContents, public_key: Any, report: BundleReport
) -> None:
    """The bundled tree head and the bundled seals' inclusion proofs in the log (``data``,
    the bundle's proofs file, if it has one)."""
    if data is None:
        report.does_not_prove.append(
            "that the bundled seals are in a transparency log: the bundle carries no log "
            "proofs (its store had no tree head yet)"
        )
        return
    seals = {str(s.iri): s for s in contents.seals}
    inner = ProofReport()
    try:
        proved = check_log_proofs(
            json.loads(data), seals, inner, public_key=public_key, timestamp=timestamp_checker()
        )
    except (ValueError, ProofError, RecursionError) as exc:
        report.findings.append(Finding("proof", _PROOFS, f"unreadable: {exc}"))
        return
    report.findings.extend(inner.findings)
    head = inner.head
    if head is not None and not inner.findings:
        report.proves.append(
            f"{len(proved)} bundled seal(s) are leaves of the transparency log whose tree head "
            f"({head.size} leaves, root {head.root[:16]}…) is bundled (RFC 9162 inclusion proofs)"
        )
    report.proves.extend(inner.proves)
    report.does_not_prove.extend(inner.does_not_prove)
    outside = sorted(set(seals) - proved)
    if outside:
        report.does_not_prove.append(
            f"that {len(outside)} bundled seal(s) are in the log (sealed after its newest tree "
            f"head, e.g. {outside[0]})"
        )


def _check_listed(scratch: Store, listed: set[IRI], ledger: IRI, report: BundleReport) -> None:
    """Every graph the session files hold is one the manifest lists (or the ledger segment,
    the catalogue rebuilt from them; content graphs are ``_check_content``'s): a graph
    smuggled into a session file is sealed by nothing, yet the recomputed answers read it."""
    allowed = listed | {ledger, catalogue_iri(Minter())}
    graphs = {g for g in scratch.graphs() if not is_content_graph(g)}
    for graph in sorted(graphs - allowed):
        report.findings.append(
            Finding(
                "foreign",
                str(graph),
                "in a session file, but not a graph the manifest lists: sealed by nothing, "
                "yet read by the answers",
            )
        )


def _check_content(
    scratch: Store, bundled: set[IRI], sealed: set[IRI], report: BundleReport
) -> None:
    """Every bundled content value against the digest its bundled, sealed graph keeps
    (``trails.evidence.content``); content whose graph is not in the bundle is foreign."""
    accounts = read_accounts(scratch, lambda g: g in sealed)
    receipts = accounts.receipt_graphs | accounts.unsealed
    graphs = {g for g in bundled if g not in receipts}
    graphs |= {structure_graph(g) for g in scratch.graphs() if is_content_graph(g)}
    checker = ContentChecker(accounts, report.findings, report.content)
    for graph in sorted(graphs):
        checker.check(scratch, graph, sealed=graph in sealed)


def _explain(
    report: BundleReport,
    contents: LedgerContents,
    *,
    bundled: set[IRI],
    spans: dict[str, tuple[int, int]],
    trusted: bool,
    heads: list[str] | None,
) -> None:
    """Say in words what a passing check means and where it stops."""
    proves, not_proven = report.proves, report.does_not_prove
    proves.append(
        f"{report.graphs_checked} bundled graph(s) are, quad for quad, the graphs their "
        "seals fixed (canonical hash and quad count recomputed)"
    )
    tally = report.content
    removed, hash_only = sum(tally.accounted.values()), tally.hash_only
    proves.append(
        f"{tally.values} bundled content value(s) (prompts, completions, tool inputs and "
        "outputs, goals, answers) hash to the digests their sealed graphs keep"
        + (
            f"; {removed} more were removed on record by a bundled, sealed receipt"
            if removed
            else ""
        )
        + (f"; {hash_only} were recorded as a digest alone" if hash_only else "")
    )
    proves.append(
        f"{report.seals} seal(s) hash to their recorded hashes and, within each of "
        f"{len(spans)} chain segment(s), link one to the next without a gap"
    )
    if trusted:
        proves.append("every bundled seal is signed by the trusted key or a key rotated to from it")
    else:
        not_proven.append(
            "who made the seals: no trusted key was given, so signatures were checked against "
            "the keys the bundle itself carries; anyone can build a self-consistent bundle. "
            "Pass the publisher's public key, obtained apart from the bundle (--key)"
        )
    if heads:
        proves.append("the expected head(s) kept elsewhere are seals of this bundle")
    proves.append(f"{report.answers_checked} query answer file(s) match the bundled graphs")
    outside = sorted({str(s.graph) for s in contents.seals if s.graph not in bundled})
    if outside:
        not_proven.append(
            f"anything about {len(outside)} session(s) whose seals sit in the chain segment "
            f"but whose graphs are not in the bundle (e.g. {outside[0]})"
        )
    not_proven.append(
        "anything about sessions outside the bundle, or that the bundle holds every session "
        "of the store (a selection is a selection)"
    )
    starts = [f"{c.rsplit(':', 1)[-1]}@{lo}" for c, (lo, _hi) in sorted(spans.items()) if lo > 1]
    if starts:
        not_proven.append(
            "the chains before the segment (it starts after seal 1: "
            + ", ".join(starts)
            + "); anchors to seals outside the bundle are recorded but not checked"
        )
    not_proven.append(
        "that no seals were written after the segment's last seal; the manifest's time and "
        "selection are the exporter's statements, not sealed evidence"
    )
    if report.unchecked_answers:
        not_proven.append(
            f"{len(report.unchecked_answers)} answer file(s) of queries this installation "
            "does not have (not recomputed)"
        )
    if report.unsealed:
        not_proven.append(
            f"the integrity of {len(report.unsealed)} bundled graph(s) without a seal "
            "(open sessions, memory graphs)"
        )
