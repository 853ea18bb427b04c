"""The ledger's format: seals, seal chains and key rotations, as written and as read back.

The ledger graph (``<base>graph:ledger``) holds one ``trails:Seal`` per sealed
state of a session graph. Seals form **one chain per writer**: every recorder
that seals (each process, each machine) mints a random writer id, numbers its
own seals 1, 2, 3 ... and links each to its own previous seal by IRI and hash.
No writer ever reads or extends another writer's chain, so several writers on
one SPARQL server never contend and never share a sequence number or an IRI
(seal IRIs are ``<ledger>:seal:<writer>:<n>``). Chains are tied together by
**anchors**: each seal also names, with their hashes, the seals the ledger's
``trails:latestSeal`` pointer named when it was made (the newest seals of
other writers), so the chains form one hash-linked graph whose newest seals
commit to everything before them.

A seal's hash (``trails:sealHash``) is SHA-256 of ``SealRecord.message()``:

    trails-seal/2
    chain=<chain IRI>
    sequence=<n>
    graph=<sealed graph IRI>
    graph-hash=<canonical hash, version 2>
    quads=<quad count>
    time=<prov:generatedAtTime, canonical lexical form>
    previous=<previous seal's hash in this chain, 64 zeros for the first>
    anchors=<anchored seal hashes, sorted, comma-separated>
    revision-of=<the seal this one revises, or empty>
    key=<base64 Ed25519 public key that signs, or empty>

A signature (``trails:signature``) is Ed25519 over the 64 ASCII hex characters
of that hash. A ``trails:KeyRotation`` records a new signing key, signed by
the key it succeeds (``rotation_message``). Seals written before chains
existed (``trails-seal/1``: one global sequence, no chain) still verify.

Changing a message format changes every hash: treat it as a file format.
"""

from __future__ import annotations

import hashlib
import io
import re
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field

from trails._lazy import lazy_names
from trails.evidence.canonical import normal_lexical
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, RDF, XSD, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, BNode, Literal, Term, instant

__all__ = [
    "GENESIS",
    "KeyRotated",  # noqa: F822 - resolved on first lookup (below), from trails.evidence.events
    "LedgerContents",
    "RotationRecord",
    "SealRecord",
    "Sealed",  # noqa: F822 - as KeyRotated
    "chain_iri",
    "latest_of",
    "ledger_iri",
    "node_iri",
    "read_ledger",
    "read_rotations",
    "read_seal",
    "read_seals",
    "rotation_message",
    "seal_iri",
    "seal_message",
    "seals_of_graph",
    "sha256_hex",
]

GENESIS = "0" * 64
"""The previous-seal hash of the first seal of a chain."""

# the events that write seals and rotations are the sealer's (``trails.evidence.events``):
# their old names here load that module on first lookup, so a reader of the ledger does not
# build the event models
__getattr__, __dir__ = lazy_names(
    __name__, dict.fromkeys(("KeyRotated", "Sealed"), "trails.evidence.events")
)


def ledger_iri(minter: Minter) -> IRI:
    """The ledger graph's IRI under the minter's base (``<base>graph:ledger``)."""
    return minter.graph("ledger")


def chain_iri(ledger: IRI, writer: str) -> IRI:
    """The IRI of a writer's seal chain."""
    return Minter.part(ledger, f"chain:{writer}")


def seal_iri(ledger: IRI, writer: str, sequence: int) -> IRI:
    """The IRI of a writer's ``sequence``-th seal."""
    return Minter.part(ledger, f"seal:{writer}:{sequence}")


def node_iri(log: IRI, level: int, index: int) -> IRI:
    """The IRI of the perfect subtree of ``2**level`` leaves starting at ``index * 2**level``
    in the transparency log graph ``log`` (``trails.evidence.transparency``, which exports it;
    named here, beside the ledger's IRIs, for the log's events to name nodes by)."""
    return Minter.part(log, f"node:{level}:{index}")


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256."""
    return hashlib.sha256(data).hexdigest()


def _time(lexical: str) -> str:
    return normal_lexical(lexical, str(XSD.dateTime))


def seal_message(
    sequence: int, graph: str, *, graph_hash: str, quad_count: int, at: str, previous: str
) -> bytes:
    """The bytes a ``trails-seal/1`` seal hashes (seals written before chains existed)."""
    return (
        "trails-seal/1\n"
        f"sequence={sequence}\n"
        f"graph={graph}\n"
        f"graph-hash={graph_hash}\n"
        f"quads={quad_count}\n"
        f"time={at}\n"
        f"previous={previous}\n"
    ).encode()


def rotation_message(from_key: str, to_key: str, at: str) -> bytes:
    """The bytes a key rotation hashes; the old key signs that hash."""
    return f"trails-key-rotation/1\nfrom={from_key}\nto={to_key}\ntime={_time(at)}\n".encode()


@dataclass
class SealRecord:
    """A seal as read back from the ledger; fields a tamperer removed are empty."""

    iri: IRI
    sequence: int
    graph: IRI
    graph_hash: str
    quad_count: int
    at: str
    previous_hash: str
    seal_hash: str
    previous: IRI | None = None
    revision_of: IRI | None = None
    signature: str | None = None
    signing_key: str | None = None
    chain: IRI | None = None
    anchors: list[IRI] = field(default_factory=list)
    anchor_hashes: list[str] = field(default_factory=list)
    repeated: list[str] = field(default_factory=list)
    """Single-valued fields that hold several values (two seals minted one IRI, or an edit)."""

    @property
    def version(self) -> int:
        """1 for seals written before chains existed, else 2."""
        return 1 if self.chain is None else 2

    def message(self) -> bytes:
        """The bytes this seal's hash and signature cover."""
        if self.version == 1:
            return seal_message(
                self.sequence,
                self.graph,
                graph_hash=self.graph_hash,
                quad_count=self.quad_count,
                at=self.at,
                previous=self.previous_hash,
            )
        return (
            "trails-seal/2\n"
            f"chain={self.chain}\n"
            f"sequence={self.sequence}\n"
            f"graph={self.graph}\n"
            f"graph-hash={self.graph_hash}\n"
            f"quads={self.quad_count}\n"
            f"time={_time(self.at)}\n"
            f"previous={self.previous_hash}\n"
            f"anchors={','.join(sorted(self.anchor_hashes))}\n"
            f"revision-of={self.revision_of or ''}\n"
            f"key={self.signing_key or ''}\n"
        ).encode()

    def recomputed_hash(self) -> str:
        """SHA-256 of ``message()``: equals ``seal_hash`` unless a field was changed."""
        return sha256_hex(self.message())


@dataclass(frozen=True)
class RotationRecord:
    """A key rotation as read back from the ledger."""

    iri: IRI
    from_key: str
    to_key: str
    at: str
    rotation_hash: str
    signature: str

    def message(self) -> bytes:
        return rotation_message(self.from_key, self.to_key, self.at)


@dataclass
class LedgerContents:
    """Everything in the ledger graph, grouped."""

    seals: list[SealRecord] = field(default_factory=list)
    rotations: list[RotationRecord] = field(default_factory=list)
    latest: list[IRI] = field(default_factory=list)
    """What the ledger's ``trails:latestSeal`` pointer names (a hint for writers)."""


_SINGLE = {
    T.sealSequence: "sequence",
    T.sealedGraph: "graph",
    T.graphHash: "graph_hash",
    T.quadCount: "quad_count",
    PROV.generatedAtTime: "at",
    T.previousSealHash: "previous_hash",
    T.sealHash: "seal_hash",
    T.previousSeal: "previous",
    PROV.wasRevisionOf: "revision_of",
    T.signature: "signature",
    T.signingKey: "signing_key",
    T.sealChain: "chain",
}


def _text(term: Term | None) -> str:
    return term.value if isinstance(term, Literal) else ""


def _int(term: Term | None, default: int) -> int:
    try:
        return int(term.value) if isinstance(term, Literal) else default
    except ValueError:
        return default


def _seal(iri: IRI, props: dict[IRI, list[Term]]) -> SealRecord:
    def one(p: IRI) -> Term | None:
        values = props.get(p, [])
        return values[0] if values else None

    def ref(p: IRI) -> IRI | None:
        v = one(p)
        return IRI.trusted(str(v)) if isinstance(v, str) and not isinstance(v, Literal) else None

    graph = one(T.sealedGraph)
    return SealRecord(
        iri=iri,
        sequence=_int(one(T.sealSequence), 0),
        graph=IRI.trusted(str(graph)) if graph is not None else IRI.trusted(""),
        graph_hash=_text(one(T.graphHash)),
        quad_count=_int(one(T.quadCount), -1),
        at=_text(one(PROV.generatedAtTime)),
        previous_hash=_text(one(T.previousSealHash)),
        seal_hash=_text(one(T.sealHash)),
        previous=ref(T.previousSeal),
        revision_of=ref(PROV.wasRevisionOf),
        signature=_text(one(T.signature)) or None,
        signing_key=_text(one(T.signingKey)) or None,
        chain=ref(T.sealChain),
        anchors=sorted(IRI.trusted(str(a)) for a in props.get(T.anchor, [])),
        anchor_hashes=sorted(_text(h) for h in props.get(T.anchorHash, [])),
        repeated=sorted(name for p, name in _SINGLE.items() if len(props.get(p, [])) > 1),
    )


def _rotation(iri: IRI, props: dict[IRI, list[Term]]) -> RotationRecord:
    def one(p: IRI) -> str:
        values = props.get(p, [])
        return _text(values[0]) if values else ""

    return RotationRecord(
        iri=iri,
        from_key=one(T.fromKey),
        to_key=one(T.toKey),
        at=one(PROV.generatedAtTime),
        rotation_hash=one(T.rotationHash),
        signature=one(T.signature),
    )


def _group(rows: list[tuple[Term | None, ...]]) -> dict[IRI, dict[IRI, list[Term]]]:
    subjects: dict[IRI, dict[IRI, list[Term]]] = defaultdict(lambda: defaultdict(list))
    for s, p, o, *_ in rows:
        if s is None or p is None or o is None:
            continue
        subjects[IRI.trusted(str(s))][IRI.trusted(str(p))].append(o)
    return subjects


def _parse(subjects: dict[IRI, dict[IRI, list[Term]]], ledger: IRI) -> LedgerContents:
    contents = LedgerContents()
    for subject, props in subjects.items():
        _take(contents, subject, props, ledger)
    contents.seals.sort(key=lambda s: (str(s.chain or ""), s.sequence, s.iri))
    return contents


def _take(
    contents: LedgerContents, subject: IRI, props: dict[IRI, list[Term]], ledger: IRI
) -> None:
    """Add one subject of the ledger graph to ``contents`` (a seal, a rotation, the pointer)."""
    types = set(props.get(RDF.type, []))
    if T.Seal in types:
        contents.seals.append(_seal(subject, props))
    elif T.KeyRotation in types:
        contents.rotations.append(_rotation(subject, props))
    elif subject == ledger:
        contents.latest = sorted(IRI.trusted(str(v)) for v in props.get(T.latestSeal, []))


def _rows(store: Store, sparql: str, params: dict[str, Term]) -> list[tuple[Term | None, ...]]:
    result = store.query(sparql, params)
    assert isinstance(result, Solutions)
    return result.rows


_ALL = "SELECT ?s ?p ?o $ledger WHERE { GRAPH $ledger { ?s ?p ?o } }"
_ONE = "SELECT $s ?p ?o $ledger WHERE { GRAPH $ledger { $s ?p ?o } }"
_OF_GRAPH = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?s ?p ?o $graph $ledger WHERE { GRAPH $ledger { ?s trails:sealedGraph $graph ; ?p ?o } }
"""
_ROTATIONS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?s ?p ?o $ledger WHERE { GRAPH $ledger { ?s a trails:KeyRotation ; ?p ?o } }
"""


def read_ledger(store: Store, ledger: IRI) -> LedgerContents:
    """Every seal, rotation and pointer in the ledger (one read of the ledger graph).

    On the embedded store the graph is read as its N-Triples dump and parsed
    here (``_ntriples_rows``), several times faster than converting query rows; on
    disk, where the dump lists each subject's triples together, a subject at a time
    from a temporary file (``_read_by_subject``): the records, not the graph, in memory.
    """
    from trails.store.oxigraph import OxigraphStore  # loaded when such a store is open

    if isinstance(store, OxigraphStore):
        if store.groups_subjects:
            read = _read_by_subject(store, ledger)
            if read is not None:
                return read
        rows = _ntriples_rows(store.dump(format="ntriples", graph=ledger) or b"")
    else:
        rows = _rows(store, _ALL, {"ledger": ledger})
    return _parse(_group(rows), ledger)


def _read_by_subject(store: Store, ledger: IRI) -> LedgerContents | None:
    """The ledger from its N-Triples dump, each subject made a record as its last triple
    is read; None should a subject come back after another (then it is read whole)."""
    contents = LedgerContents()
    done: set[str] = set()
    subject, props = "", defaultdict[IRI, list[Term]](list)
    with tempfile.TemporaryFile() as fh:
        store.dump(fh, format="ntriples", graph=ledger)  # type: ignore[arg-type]
        fh.seek(0)
        for line in io.TextIOWrapper(fh, encoding="utf-8", newline="\n"):
            if line == "\n":
                continue
            s, p, o = _parts(line[:-1])
            if s != subject:
                if subject:
                    _take(contents, IRI.trusted(str(_term(subject))), props, ledger)
                    done.add(subject)
                if s in done:
                    return None
                subject, props = s, defaultdict[IRI, list[Term]](list)
            props[IRI.trusted(str(_term(p)))].append(_term(o))
    if subject:
        _take(contents, IRI.trusted(str(_term(subject))), props, ledger)
    contents.seals.sort(key=lambda s: (str(s.chain or ""), s.sequence, s.iri))
    return contents


_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
_ESCAPES = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))")
_SIMPLE = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "\\": "\\", "'": "'"}


def _unescape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) or m.group(2):
            return chr(int(m.group(1) or m.group(2), 16))
        return _SIMPLE.get(m.group(3), m.group(3))

    return _ESCAPES.sub(one, text) if "\\" in text else text


def _term(text: str) -> Term:
    if text.startswith("<"):
        return IRI.trusted(text[1:-1])
    if text.startswith("_:"):
        return BNode(text[2:])
    end = text.rindex('"')
    lexical, rest = _unescape(text[1:end]), text[end + 1 :]
    if rest.startswith("@"):
        return Literal(lexical, _LANG_STRING, rest[1:])
    if rest.startswith("^^<"):
        return Literal(lexical, rest[3:-1])
    return Literal(lexical)


def _parts(line: str) -> list[str]:
    """The subject, predicate and object of one line of canonical N-Triples (as the
    embedded store writes them, without its line end): subject and predicate are the
    first two space-separated terms (IRIs and blank nodes hold no space), the object is
    the rest of the line before `` .``."""
    return line[:-2].split(" ", 2)


def _ntriples_rows(data: bytes) -> list[tuple[Term | None, ...]]:
    """``(s, p, o)`` rows of canonical N-Triples (``_parts`` of each line)."""
    rows: list[tuple[Term | None, ...]] = []
    for line in data.decode("utf-8").split("\n"):
        if not line:
            continue
        s, p, o = _parts(line)
        rows.append((_term(s), _term(p), _term(o)))
    return rows


def read_seals(store: Store, ledger: IRI) -> list[SealRecord]:
    """Every seal in the ledger, grouped by chain and in sequence order."""
    return read_ledger(store, ledger).seals


def read_seal(store: Store, ledger: IRI, seal: IRI) -> SealRecord | None:
    """One seal by IRI (None when the ledger has no such seal)."""
    subjects = _group(_rows(store, _ONE, {"ledger": ledger, "s": seal}))
    seals = _parse(subjects, ledger).seals
    return seals[0] if seals else None


def seals_of_graph(store: Store, ledger: IRI, graph: IRI) -> list[SealRecord]:
    """The seals of one graph (its first seal and each revision), read by index."""
    rows = _rows(store, _OF_GRAPH, {"ledger": ledger, "graph": graph})
    return _parse(_group(rows), ledger).seals


def read_rotations(store: Store, ledger: IRI) -> list[RotationRecord]:
    """Every recorded key rotation."""
    return _parse(_group(_rows(store, _ROTATIONS, {"ledger": ledger})), ledger).rotations


def latest_of(seals: list[SealRecord]) -> SealRecord | None:
    """The newest seal of one graph: the one no other seal of the list revises
    (the latest in time, should two writers have revised the same seal)."""
    revised = {s.revision_of for s in seals if s.revision_of is not None}
    current = [s for s in seals if s.iri not in revised] or seals
    return max(current, key=lambda s: (instant(s.at), s.iri)) if current else None
