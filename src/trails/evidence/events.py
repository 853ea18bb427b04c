"""The events the evidence room records: seals, key rotations, checkpoints, log heads, cosignatures.

Each is a ``trails.prov.events.Event`` (a pydantic model) that the writers build and the
recorder writes: the sealer (``Sealed``, ``KeyRotated``), a verification that records
its checkpoint (``VerificationCheckpointed``, with the ``LogExtended`` of the
transparency log in the same write) and the witnesses' cosignatures (``HeadWitnessed``).
They live apart from the modules that read the ledger and the log back, so a command that
only reads evidence (``trails verify --no-checkpoint``, ``trails export``, ``trails
report``) never builds the event models: only the writers import this module (the
sealer as it loads; a checkpoint, the log and the witnesses' client as they write). The
older names (``trails.evidence.ledger.Sealed`` and the like) still resolve,
to these classes, on first lookup.

What each event emits is a file format (seal, checkpoint and tree-head hashes cover
those values): the formats are in ``trails.evidence.ledger``,
``trails.evidence.checkpoint``, ``trails.evidence.transparency`` and
``trails.evidence.witnessing``.
"""

from __future__ import annotations

from datetime import datetime

from trails.evidence.ledger import GENESIS, node_iri
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.vocab import PROV, T
from trails.store.terms import IRI

__all__ = ["HeadWitnessed", "KeyRotated", "LogExtended", "Sealed", "VerificationCheckpointed"]


class Sealed(Event):
    """A seal appended to a writer's chain in the ledger (``session`` is the sealed graph)."""

    ledger: str
    seal: str
    chain: str
    writer: str
    sequence: int
    graph_hash: str
    quad_count: int
    at: datetime
    previous: str | None = None
    previous_hash: str = GENESIS
    anchors: tuple[tuple[str, str], ...] = ()
    seal_hash: str
    revision_of: str | None = None
    signature: str | None = None
    signing_key: str | None = None

    @property
    def graph(self) -> IRI:
        """Seals are written to the ledger graph, not to the graph they seal."""
        return IRI.trusted(self.ledger)

    def emit(self, b: QuadBuilder) -> None:
        s = IRI.trusted(self.seal)
        chain = IRI.trusted(self.chain)
        b.types(s, T.Seal, PROV.Entity)
        b.label(s, f"seal {self.sequence} of writer {self.writer}")
        b.add(s, T.sealedGraph, IRI.trusted(self.session))
        b.add(s, T.sealChain, chain)
        b.value(s, T.sealSequence, self.sequence)
        b.value(s, T.graphHash, self.graph_hash)
        b.value(s, T.quadCount, self.quad_count)
        b.value(s, PROV.generatedAtTime, self.at)
        b.value(s, T.previousSealHash, self.previous_hash)
        b.value(s, T.sealHash, self.seal_hash)
        if self.previous is not None:
            b.add(s, T.previousSeal, IRI.trusted(self.previous))
        for anchor, anchor_hash in self.anchors:
            b.add(s, T.anchor, IRI.trusted(anchor))
            b.value(s, T.anchorHash, anchor_hash)
        if self.revision_of is not None:
            b.add(s, PROV.wasRevisionOf, IRI.trusted(self.revision_of))
        b.value(s, T.signature, self.signature)
        b.value(s, T.signingKey, self.signing_key)
        if self.sequence == 1:
            b.types(chain, T.SealChain, PROV.Entity)
            b.label(chain, f"seal chain of writer {self.writer}")
            b.value(chain, T.writerId, self.writer)


class KeyRotated(Event):
    """A new signing key, announced in the ledger and signed by the key it succeeds."""

    ledger: str
    rotation: str
    from_key: str
    to_key: str
    at: datetime
    rotation_hash: str
    signature: str

    @property
    def graph(self) -> IRI:
        return IRI.trusted(self.ledger)

    def emit(self, b: QuadBuilder) -> None:
        r = IRI.trusted(self.rotation)
        b.types(r, T.KeyRotation, PROV.Entity)
        b.label(r, "signing key rotation")
        b.value(r, T.fromKey, self.from_key)
        b.value(r, T.toKey, self.to_key)
        b.value(r, PROV.generatedAtTime, self.at)
        b.value(r, T.rotationHash, self.rotation_hash)
        b.value(r, T.signature, self.signature)


class VerificationCheckpointed(Event):
    """A verification checkpoint, written to the ledger graph (``session`` is the ledger)."""

    checkpoint: str
    ledger: str
    at: datetime
    mode: str
    seals: int
    graphs: int
    verified: tuple[tuple[str, str], ...]
    previous: str | None = None
    checkpoint_hash: str
    signature: str | None = None
    last_full: str = ""
    log_size: int | None = None
    log_root: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        c = IRI.trusted(self.checkpoint)
        b.add(IRI.trusted(self.ledger), T.latestCheckpoint, c)
        b.types(c, T.VerificationCheckpoint, PROV.Entity)
        b.label(c, f"{self.mode} verification of {self.graphs} graph(s)")
        b.value(c, PROV.generatedAtTime, self.at)
        b.value(c, T.verificationMode, self.mode)
        b.value(c, T.sealsVerified, self.seals)
        b.value(c, T.graphsVerified, self.graphs)
        for seal, seal_hash in self.verified:
            b.add(c, T.verifiedSeal, IRI.trusted(seal))
            b.value(c, T.verifiedSealHash, seal_hash)
        if self.previous is not None:
            b.add(c, T.previousCheckpoint, IRI.trusted(self.previous))
        b.value(c, T.checkpointHash, self.checkpoint_hash)
        b.value(c, T.signature, self.signature)
        if self.last_full:
            full = datetime.fromisoformat(self.last_full.replace("Z", "+00:00"))
            b.value(c, T.lastFullVerification, full)
        b.value(c, T.logSize, self.log_size)
        b.value(c, T.logRoot, self.log_root)


class LogExtended(Event):
    """Seals appended to the transparency log and its new signed tree head
    (``session`` is the log graph); written with the checkpoint that appends them."""

    log: str
    nodes: tuple[tuple[int, int, str], ...]
    leaves: tuple[tuple[int, str], ...]
    tips: tuple[str, ...] = ()
    """Each writer's newest seal in the log, where this append moved it."""
    head: str
    size: int
    root: str
    at: datetime
    head_hash: str
    signature: str | None = None
    signing_key: str | None = None
    timestamp: str | None = None
    note: str | None = None
    """The head as a signed C2SP checkpoint (``trails.evidence.note``), when signed."""

    def emit(self, b: QuadBuilder) -> None:
        log, h = IRI.trusted(self.log), IRI.trusted(self.head)
        for level, index, hex_hash in self.nodes:
            b.value(node_iri(log, level, index), T.nodeHash, hex_hash)
        for index, seal in self.leaves:
            leaf = node_iri(log, 0, index)
            b.add(leaf, T.leafSeal, IRI.trusted(seal))
            b.value(leaf, T.leafIndex, index)
        for seal in self.tips:
            b.add(log, T.loggedSeal, IRI.trusted(seal))
        b.add(log, T.latestTreeHead, h)
        b.types(h, T.TreeHead, PROV.Entity)
        b.label(h, f"tree head of {self.size} leaves")
        b.value(h, T.treeSize, self.size)
        b.value(h, T.rootHash, self.root)
        b.value(h, PROV.generatedAtTime, self.at)
        b.value(h, T.headHash, self.head_hash)
        b.value(h, T.signature, self.signature)
        b.value(h, T.signingKey, self.signing_key)
        b.value(h, T.timestampToken, self.timestamp)
        b.value(h, T.checkpointNote, self.note)


class HeadWitnessed(Event):
    """Witnesses' verified cosignatures of a tree head (``session`` is the log graph)."""

    head: str
    lines: tuple[str, ...]

    def emit(self, b: QuadBuilder) -> None:
        for line in self.lines:
            b.value(IRI.trusted(self.head), T.cosignature, line)
