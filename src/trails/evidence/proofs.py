"""Tree heads and inclusion proofs as files, checked without the store.

The transparency log (``trails.evidence.transparency``) hands out two documents:

- a **tree head** (``trails head --out head.json``): the log's size, its RFC 9162
  root hash, the time, an Ed25519 signature when a key is configured and an RFC 3161
  time-stamp token when a time-stamping authority is; its hash (``hash``) is SHA-256
  of ``head_message()``:

      trails-tree-head/1
      log=<log graph IRI>
      size=<leaves>
      root=<root hash, hex>
      time=<time, canonical xsd:dateTime lexical form>
      key=<base64 Ed25519 public key that signs, or empty>

  the signature covers the 64 hex characters of that hash (as a seal's does) and the
  time-stamp token's message imprint is that hash;
- an **inclusion proof** (``trails prove SESSION --out proof.json``): a session's
  seals (every field their hash covers), for each its leaf index and audit path, and
  the head they are proved against.

``verify_proof`` checks such a file with nothing else: each seal's hash from its
fields, each leaf's path up to the head's root, the head's own hash, signature and
time-stamp, and, given the session's exported TriG, the graph's canonical hash and
every content value's digest. Changing either format changes every hash: treat them
as file formats.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trails.errors import UserError
from trails.evidence.canonical import graph_digest, normal_lexical
from trails.evidence.content import ContentChecker, ContentTally, read_accounts
from trails.evidence.findings import Finding
from trails.evidence.ledger import SealRecord, latest_of, sha256_hex
from trails.evidence.merkle import leaf_hash, verify_inclusion
from trails.evidence.note import Checkpoint, NoteError, SignedNote, parse_checkpoint, parse_note
from trails.evidence.note import signature_status as note_signed
from trails.prov.content import content_graph
from trails.prov.vocab import XSD
from trails.store import open_store
from trails.store.base import Store
from trails.store.terms import IRI

__all__ = [
    "HEAD_FORMAT",
    "LOG_PROOFS_FORMAT",
    "PROOF_FORMAT",
    "ProofError",
    "ProofReport",
    "TimestampCheck",
    "TreeHead",
    "check_checkpoint",
    "check_head",
    "check_log_proofs",
    "checkpoint_problem",
    "head_message",
    "leaf_data",
    "read_json",
    "seal_from_json",
    "seal_to_json",
    "unlike_its_seal",
    "verify_proof",
]

HEAD_FORMAT = "trails-tree-head/1"
PROOF_FORMAT = "trails-inclusion-proof/1"
LOG_PROOFS_FORMAT = "trails-log-proofs/1"
"""An evidence bundle's ``log/proofs.json``: a head and proofs of seals bundled apart."""


def unlike_its_seal(store: Store, graph: IRI, seal: SealRecord, held: str) -> Finding | None:
    """The ``altered`` finding when ``graph`` as ``store`` holds it is not what ``seal``
    sealed (its canonical hash or quad count), else None; ``held`` says where it was read
    ("the session file holds")."""
    digest, count = graph_digest(store, graph, version=seal.version)
    if digest == seal.graph_hash and count == seal.quad_count:
        return None
    return Finding(
        "altered",
        str(graph),
        f"sealed with {seal.quad_count} quads, hash {seal.graph_hash[:16]}…; "
        f"{held} {count} quads, hash {digest[:16]}…",
    )


class ProofError(UserError):
    """A proof or tree head file that cannot be read as one."""


def leaf_data(seal: str, seal_hash: str) -> bytes:
    """The bytes a seal's leaf holds (its leaf hash is ``SHA-256(0x00 || these)``)."""
    return f"trails-log-leaf/1\nseal={seal}\nseal-hash={seal_hash}\n".encode()


def head_message(log: str, size: int, root: str, at: str, key: str) -> bytes:
    """The bytes a tree head's hash covers (see the module docstring)."""
    return (
        f"{HEAD_FORMAT}\nlog={log}\nsize={size}\nroot={root}\n"
        f"time={normal_lexical(at, str(XSD.dateTime))}\nkey={key}\n"
    ).encode()


@dataclass(frozen=True)
class TreeHead:
    """A signed tree head: the log's size and root hash at a time."""

    log: str
    size: int
    root: str
    at: str
    hash: str
    key: str = ""
    signature: str = ""
    timestamp: str = ""
    """Base64 DER of the RFC 3161 time-stamp response over ``hash``, or empty."""
    iri: str = ""
    """Where the head is kept in the store (not part of its hash)."""
    note: str = ""
    """The head as a signed C2SP checkpoint (``trails.evidence.note``; not part of its hash:
    its note signature covers the checkpoint text), or empty."""
    cosignatures: tuple[str, ...] = ()
    """Witnesses' ``cosignature/v1`` lines of the checkpoint (``trails.evidence.cosign``),
    each with its final newline; verified before they were kept."""

    def cosigned_note(self) -> str:
        """The checkpoint with the witnesses' cosignature lines after the log's signature."""
        return self.note + "".join(self.cosignatures) if self.note else ""

    def message(self) -> bytes:
        return head_message(self.log, self.size, self.root, self.at, self.key)

    def intact(self) -> bool:
        """Its fields hash to its recorded hash."""
        return sha256_hex(self.message()) == self.hash

    def to_json(self) -> dict[str, Any]:
        return {
            "format": HEAD_FORMAT,
            "log": self.log,
            "size": self.size,
            "root": self.root,
            "time": self.at,
            "hash": self.hash,
            "key": self.key or None,
            "signature": self.signature or None,
            "timestamp": self.timestamp or None,
            "checkpoint": self.cosigned_note() or None,
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> TreeHead:
        """A head from its JSON object.

        Raises:
            ProofError: not a tree head of this format.
        """
        if not isinstance(data, dict) or data.get("format") != HEAD_FORMAT:
            raise ProofError(f"{where} is not a trails tree head ({HEAD_FORMAT})")
        text = {k: data.get(k) for k in ("log", "root", "time", "hash")}
        optional = {k: data.get(k) or "" for k in ("key", "signature", "timestamp", "checkpoint")}
        size = data.get("size")
        if not all(isinstance(v, str) for v in [*text.values(), *optional.values()]) or not (
            isinstance(size, int) and not isinstance(size, bool) and size >= 0
        ):
            raise ProofError(f"{where}: a tree head needs log, size, root, time and hash")
        return cls(
            log=str(text["log"]),
            size=size,
            root=str(text["root"]),
            at=str(text["time"]),
            hash=str(text["hash"]),
            key=str(optional["key"]),
            signature=str(optional["signature"]),
            timestamp=str(optional["timestamp"]),
            note=str(optional["checkpoint"]),
        )


def read_json(path: str | Path, what: str) -> Any:
    """A JSON file's content.

    Raises:
        ProofError: missing, unreadable or not JSON.
    """
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProofError(f"cannot read the {what} {path}: {exc}") from None


def seal_to_json(seal: SealRecord) -> dict[str, Any]:
    """Every field of a seal its hash covers, and its signature."""
    return {
        "seal": str(seal.iri),
        "chain": str(seal.chain) if seal.chain is not None else None,
        "sequence": seal.sequence,
        "graph": str(seal.graph),
        "graph_hash": seal.graph_hash,
        "quads": seal.quad_count,
        "time": seal.at,
        "previous_hash": seal.previous_hash,
        "anchor_hashes": sorted(seal.anchor_hashes),
        "revision_of": str(seal.revision_of) if seal.revision_of is not None else None,
        "key": seal.signing_key,
        "hash": seal.seal_hash,
        "signature": seal.signature,
    }


def seal_from_json(data: Any) -> SealRecord:
    """A seal from ``seal_to_json``'s object.

    Raises:
        ProofError: fields missing or of the wrong type.
    """
    try:
        anchors = data["anchor_hashes"]
        if not isinstance(anchors, list) or not all(isinstance(a, str) for a in anchors):
            raise TypeError("anchor_hashes")
        for k in ("seal", "graph", "graph_hash", "time", "previous_hash", "hash"):
            if not isinstance(data[k], str):
                raise TypeError(k)
        for k in ("sequence", "quads"):
            if not isinstance(data[k], int) or isinstance(data[k], bool):
                raise TypeError(k)
        for k in ("chain", "revision_of", "key", "signature"):
            if data.get(k) is not None and not isinstance(data[k], str):
                raise TypeError(k)
        return SealRecord(
            iri=IRI.trusted(data["seal"]),
            sequence=data["sequence"],
            graph=IRI.trusted(data["graph"]),
            graph_hash=data["graph_hash"],
            quad_count=data["quads"],
            at=data["time"],
            previous_hash=data["previous_hash"],
            seal_hash=data["hash"],
            revision_of=IRI.trusted(data["revision_of"]) if data.get("revision_of") else None,
            signature=data.get("signature"),
            signing_key=data.get("key"),
            chain=IRI.trusted(data["chain"]) if data.get("chain") else None,
            anchor_hashes=list(anchors),
        )
    except (KeyError, TypeError) as exc:
        raise ProofError(f"a seal in the proof lacks a valid {exc}") from None


def _signed(key_b64: str, signature_b64: str, hex_hash: str) -> bool:
    """Whether ``signature_b64`` is ``key_b64``'s Ed25519 signature over ``hex_hash``."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(key_b64, validate=True))
        key.verify(base64.b64decode(signature_b64, validate=True), hex_hash.encode("ascii"))
    except (InvalidSignature, ValueError, binascii.Error, UnicodeError):
        return False
    return True


def checkpoint_problem(head: TreeHead) -> str | None:
    """What is wrong with a head's checkpoint note (None when it is the head's size and
    root, signed by the head's key under the note's origin)."""
    try:
        note = parse_note(head.note)
        checkpoint = parse_checkpoint(note.text)
        key = base64.b64decode(head.key, validate=True)
    except (NoteError, ValueError, binascii.Error) as exc:
        return f"it does not parse: {exc}"
    if checkpoint.size != head.size or checkpoint.root.hex() != head.root:
        return "its size or root is not the head's"
    if note_signed(note, checkpoint.origin, key) is not True:
        return "its note signature by the head's key does not verify"
    return None


def check_checkpoint(
    note: SignedNote,
    checkpoint: Checkpoint,
    report: ProofReport,
    *,
    origin: str,
    public_key: Any = None,
    log_key: str = "",
) -> None:
    """A kept C2SP checkpoint's origin and note signature: by ``public_key`` (the trusted
    key, ``--key``) when given, else by ``log_key`` (base64, the key the log signs with)."""
    findings, subject = report.findings, f"checkpoint {checkpoint.origin} {checkpoint.size}"
    if checkpoint.origin != origin:
        findings.append(
            Finding("head", subject, f"it is a checkpoint of {checkpoint.origin}, not of {origin}")
        )
        return
    trusted = _raw_key(public_key) if public_key is not None else None
    known = trusted or (base64.b64decode(log_key) if log_key else None)
    status = note_signed(note, checkpoint.origin, known) if known else None
    if status is False:
        findings.append(Finding("signature", subject, "its note signature does not verify"))
    elif trusted is not None and status is None:
        findings.append(
            Finding("signature", subject, "it is not signed by the trusted key (--key)")
        )
    elif trusted is not None:
        report.proves.append("the checkpoint is signed by the trusted key (Ed25519 note)")
    elif status:
        report.does_not_prove.append(
            "who signed the checkpoint: its signature was checked against the key the log "
            "signs with now; pass the publisher's public key, obtained apart (--key)"
        )
    else:
        report.does_not_prove.append(
            "who signed the checkpoint: no signature by a known key; pass the publisher's "
            "public key (--key)"
        )


def _raw_key(public_key: Any) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    raw: bytes = public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return raw


def _key_b64(public_key: Any) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    raw = public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


@dataclass
class ProofReport:
    """What ``verify_proof`` (or a head check) found, and what the result means."""

    findings: list[Finding] = field(default_factory=list)
    seals: int = 0
    head: TreeHead | None = None
    content: ContentTally = field(default_factory=ContentTally)
    proves: list[str] = field(default_factory=list)
    does_not_prove: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


TimestampCheck = Callable[[TreeHead], str | None]
"""Checks a head's time-stamp token: None when it holds, else what is wrong."""


def check_head(
    head: TreeHead,
    report: ProofReport,
    *,
    public_key: Any = None,
    timestamp: TimestampCheck | None = None,
    tsa_trusted: bool = False,
) -> None:
    """A head's hash, signature (against ``public_key`` when given) and time-stamp token
    (``tsa_trusted``: ``timestamp`` checks its signature against the TSA's certificate)."""
    findings, subject = report.findings, f"tree head {head.size}@{head.at}"
    if not head.intact():
        findings.append(Finding("head", subject, "its fields do not hash to its recorded hash"))
    if head.note and (problem := checkpoint_problem(head)) is not None:
        findings.append(Finding("head", subject, f"its checkpoint: {problem}"))
    trusted = _key_b64(public_key) if public_key is not None else None
    if head.signature and not _signed(head.key, head.signature, head.hash):
        findings.append(Finding("signature", subject, "its signature does not verify"))
    elif head.key and not head.signature:
        findings.append(
            Finding("signature", subject, "it names its signing key but carries no signature")
        )
    elif trusted is not None and (not head.signature or head.key != trusted):
        findings.append(
            Finding("signature", subject, "it is not signed by the trusted key (--key)")
        )
    elif trusted is not None:
        report.proves.append("the tree head is signed by the trusted key")
    elif head.signature:
        report.does_not_prove.append(
            "who signed the tree head: its signature was checked against the key it names; "
            "pass the publisher's public key, obtained apart from the file (--key)"
        )
    else:
        report.does_not_prove.append("who made the tree head: it is not signed")
    if head.timestamp:
        problem = timestamp(head) if timestamp is not None else None
        if problem is not None:
            findings.append(Finding("timestamp", subject, problem))
        elif tsa_trusted:
            report.proves.append(
                "the trusted time-stamping authority stamped the tree head's hash (RFC 3161): "
                "the log held these leaves no later than the token's time"
            )
        else:
            report.proves.append("the tree head carries an RFC 3161 token over its hash")
            report.does_not_prove.append(
                "which authority made the time-stamp: pass its certificate (--tsa-cert) to "
                "check the token's signature"
            )
    else:
        report.does_not_prove.append(
            "when the tree head was made: it carries no RFC 3161 time-stamp (its time is "
            "the log's own statement)"
        )


def _check_session_file(
    path: str | Path, graph: IRI, latest: SealRecord, report: ProofReport
) -> None:
    """The session's exported TriG against its newest seal, and its content."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ProofError(f"cannot read the session file {path}: {exc}") from None
    scratch = open_store("memory:")
    try:
        scratch.load(data, format="trig")
        unexpected = sorted(
            str(g) for g in scratch.graphs() if g not in (graph, content_graph(graph))
        )
        for other in unexpected:
            report.findings.append(
                Finding("foreign", other, "in the session file, but not the proved session")
            )
        altered = unlike_its_seal(scratch, graph, latest, "the session file holds")
        if altered is not None:
            report.findings.append(altered)
        accounts = read_accounts(scratch, lambda g: g == graph)
        ContentChecker(accounts, report.findings, report.content).check(scratch, graph, sealed=True)
    finally:
        scratch.close()
    if report.ok:
        report.proves.append(
            f"the session file holds the graph its newest seal fixed, quad for quad, and "
            f"{report.content.values} content value(s) hash to the digests it keeps"
        )


def verify_proof(
    path: str | Path,
    *,
    public_key: Any = None,
    session_file: str | Path | None = None,
    timestamp: TimestampCheck | None = None,
    tsa_trusted: bool = False,
) -> ProofReport:
    """Check an inclusion proof file (``trails prove``) offline.

    Args:
        path: the proof file.
        public_key: the log publisher's Ed25519 public key, obtained apart from the file:
            the tree head must be signed by it.
        session_file: the session's exported TriG (with its content graph): its graph and
            content are checked against the newest proved seal.
        timestamp: checks the head's RFC 3161 token (``trails.evidence.timestamp``).
        tsa_trusted: ``timestamp`` checks the token against the TSA's certificate.

    Returns:
        The report.

    Raises:
        ProofError: the file is not a proof of this format.
    """
    doc = read_json(path, "proof")
    if not isinstance(doc, dict) or doc.get("format") != PROOF_FORMAT:
        raise ProofError(f"{path} is not a trails inclusion proof ({PROOF_FORMAT})")
    head = TreeHead.from_json(doc.get("head"), f"{path}: head")
    entries, session = doc.get("seals"), doc.get("session")
    if not isinstance(entries, list) or not entries or not isinstance(session, str):
        raise ProofError(f"{path}: an inclusion proof names a session and lists its seals")
    report = ProofReport(head=head)
    check_head(head, report, public_key=public_key, timestamp=timestamp, tsa_trusted=tsa_trusted)
    root = _unhex(head.root)
    seals: list[SealRecord] = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise ProofError(f"{path}: each proved seal is an object")
        seal = seal_from_json(entry.get("seal"))
        index, hops = entry.get("index"), entry.get("path")
        seals.append(seal)
        report.seals += 1
        subject = str(seal.iri)
        if seal.graph != session:
            report.findings.append(
                Finding("proof", subject, f"it seals {seal.graph}, not {session}")
            )
        if seal.recomputed_hash() != seal.seal_hash:
            report.findings.append(
                Finding("altered", subject, "its fields do not hash to its recorded hash")
            )
        if seal.signature and not _signed(seal.signing_key or "", seal.signature, seal.seal_hash):
            report.findings.append(Finding("signature", subject, "its signature does not verify"))
        leaf = leaf_hash(leaf_data(subject, seal.seal_hash))
        if not _included(leaf, index, hops, head.size, root):
            report.findings.append(
                Finding(
                    "proof",
                    subject,
                    f"its inclusion proof (leaf {index}) does not lead to the root of the "
                    f"tree head of {head.size} leaves",
                )
            )
    if report.ok:
        report.proves.append(
            f"{report.seals} seal(s) of {session} are leaves of the log whose tree head "
            f"({head.size} leaves, root {head.root[:16]}…) was made at {head.at}"
        )
    latest = latest_of(seals)
    if session_file is not None and latest is not None:
        _check_session_file(session_file, IRI.trusted(session), latest, report)
    elif session_file is None:
        report.does_not_prove.append(
            "what the session holds: pass its exported TriG (--session-file) to check its "
            "graph and content against the seal"
        )
    report.does_not_prove.append(
        "that the log has not forked: compare the tree head with one obtained elsewhere "
        "(trails verify --since-head on the publisher's store)"
    )
    return report


def _unhex(text: str) -> bytes | None:
    try:
        return bytes.fromhex(text)
    except ValueError:
        return None


def check_log_proofs(
    doc: Any,
    seals: dict[str, SealRecord],
    report: ProofReport,
    *,
    public_key: Any = None,
    timestamp: TimestampCheck | None = None,
    tsa_trusted: bool = False,
) -> set[str]:
    """A bundle's ``log/proofs.json`` against its bundled seals (each checked against its
    own hash elsewhere); returns the seals proved to be leaves of the head's log.

    Raises:
        ProofError: the document is not of this format.
    """
    if not isinstance(doc, dict) or doc.get("format") != LOG_PROOFS_FORMAT:
        raise ProofError(f"not a trails log proofs document ({LOG_PROOFS_FORMAT})")
    head = TreeHead.from_json(doc.get("head"), "the bundled tree head")
    report.head = head
    check_head(head, report, public_key=public_key, timestamp=timestamp, tsa_trusted=tsa_trusted)
    entries = doc.get("proofs")
    if not isinstance(entries, list):
        raise ProofError("the bundled log proofs are not a list")
    root, proved = _unhex(head.root), set()
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("seal"), str):
            raise ProofError("each bundled log proof names a seal")
        iri, index, hops = entry["seal"], entry.get("index"), entry.get("path")
        seal = seals.get(iri)
        if seal is None:
            report.findings.append(Finding("proof", iri, "a proof of a seal not in the bundle"))
            continue
        leaf = leaf_hash(leaf_data(iri, seal.seal_hash))
        if not _included(leaf, index, hops, head.size, root):
            report.findings.append(
                Finding(
                    "proof",
                    iri,
                    f"its inclusion proof does not lead to the root of the bundled tree head "
                    f"of {head.size} leaves",
                )
            )
            continue
        proved.add(iri)
        report.seals += 1
    return proved


def _included(leaf: bytes, index: Any, hops: Any, size: int, root: bytes | None) -> bool:
    """Whether ``hops`` (hex strings) prove ``leaf`` is leaf ``index`` under ``root``."""
    if root is None or not isinstance(index, int) or not isinstance(hops, list):
        return False
    path = [_unhex(h) if isinstance(h, str) else None for h in hops]
    if any(p is None or len(p) != 32 for p in path):
        return False
    return verify_inclusion(leaf, index, size, [p for p in path if p is not None], root)
