"""The checks every verification runs: a seal's own integrity and signature, its place in its
chain, the anchors between chains, a graph against its seal, sessions sorted into sealed, open
and interrupted; and the report they fill.

They live apart from ``verify`` (which decides what to read and in which mode) so that the full
pass over the store (``trails.evidence.sweep``) and the quick mode (``trails.evidence.quick``)
run the very same checks on what they read.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from trails.errors import ConfigError
from trails.evidence.canonical import graph_digest_read
from trails.evidence.checkpoint import (
    FULL,
    INCREMENTAL,
    QUICK,
    CheckpointRecord,
    read_checkpoint,
    record_checkpoint,
)
from trails.evidence.content import ContentTally
from trails.evidence.findings import Finding
from trails.evidence.ledger import (
    GENESIS,
    LedgerContents,
    RotationRecord,
    SealRecord,
    ledger_iri,
    sha256_hex,
)
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal

__all__ = [
    "INTERRUPTED",
    "Removed",
    "VerifyReport",
    "check_anchors",
    "check_chains",
    "check_graph",
    "check_link",
    "check_seal",
    "checkpoint_report",
    "load_public_key",
    "removals",
    "seal_name",
    "signed_by",
    "sort_sessions",
    "trusted_keys",
]

_REMOVALS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT $graph ?part ?rule ?sealHash ?run ?by ?at ?why WHERE { GRAPH ?rg {
  ?e a trails:RetentionRemoval ; trails:removedGraph $graph ; trails:removedPart ?part ;
     prov:wasInvalidatedBy ?run ; prov:invalidatedAtTime ?at .
  OPTIONAL { ?e trails:retentionRule ?rule }
  OPTIONAL { ?e trails:removedSealHash ?sealHash }
  ?run a trails:RetentionRun ; trails:retentionReason ?why ;
       prov:wasAssociatedWith/trails:principalId ?by .
} }
"""

INTERRUPTED = "interrupted"
"""The ``trails:status`` of a session ended by recovery after its process died."""


@dataclass(frozen=True)
class Removed:
    """A graph (``part`` = ``structure``) or its content that a retention run removed."""

    graph: str
    part: str
    run: str
    by: str
    at: str
    why: str
    rule: str = ""
    seal_hash: str = ""

    def __str__(self) -> str:
        what = "removed" if self.part == "structure" else "content removed"
        return (
            f"REMOVED   {self.graph}: {what} by retention run {self.run} "
            f"(by {self.by} at {self.at}: {self.why}; {self.rule})"
        )


@dataclass
class VerifyReport:
    """What ``verify`` found."""

    findings: list[Finding] = field(default_factory=list)
    graphs_checked: int = 0
    seals: int = 0
    signed: int = 0
    chains: int = 0
    heads: list[str] = field(default_factory=list)
    open_sessions: list[str] = field(default_factory=list)
    interrupted_sessions: list[str] = field(default_factory=list)
    """Sessions ended as interrupted (their process died); listed, not findings."""
    projections: list[str] = field(default_factory=list)
    """Graphs of the user's own holding a persisted session projection (``Session.persist``
    with ``graph=``): a copy for replay, not sealed evidence; listed, not findings."""
    mode: str = FULL
    """``full`` (every sealed graph and all content read) or ``quick`` (from ``checkpoint``)."""
    graphs_counted: int = 0
    """Always 0 (the quick mode reads no graph verified before: ``not_rechecked`` counts them)."""
    checkpoint: CheckpointRecord | None = None
    """The checkpoint a quick verification started from."""
    note: str = ""
    """Why a quick verification ran the full check instead, when it did."""
    chain_tips: list[tuple[IRI, str]] = field(default_factory=list)
    """The newest seal of each chain with its hash (what a new checkpoint records)."""
    removed: list[Removed] = field(default_factory=list)
    """Graphs and content removed by a recorded retention run; listed, not findings."""
    erasures: list[str] = field(default_factory=list)
    """Content erased on record (``trails.compliance.erasure``: by whom, when, why); listed, not
    findings: erasure removes content from content graphs, never from a sealed graph."""
    content: ContentTally = field(default_factory=ContentTally)
    quads_read: int = 0
    """Quads the full pass read (every quad of the store)."""
    sessions_checked: int = 0
    """Session graphs the full pass read (sealed, open and interrupted)."""
    seconds: float = 0.0
    """How long the verification took."""
    last_full: str = ""
    """When the last full verification ran (a quick verification says)."""
    not_rechecked: int = 0
    """Graphs verified by an earlier verification that the quick mode did not read again."""
    """What the content check read: values recomputed against their digests, graphs counted,
    entities recorded as a digest alone, values removed on record (``trails.evidence.content``)."""

    @property
    def ok(self) -> bool:
        """True when there is no finding (open and interrupted sessions are not findings)."""
        return not self.findings

    @property
    def head(self) -> str:
        """The heads as one token (comma-separated hashes; 64 zeros for an empty ledger)."""
        return ",".join(self.heads) if self.heads else GENESIS


def checkpoint_report(recorder: Any, report: VerifyReport, *, signing_key: Any = None) -> IRI:
    """Record what ``report`` verified as the ledger's next checkpoint, as ``trails verify`` does.

    A full verification records a ``full`` checkpoint, a quick one an ``incremental``
    checkpoint that keeps when the last full one ran; either follows the checkpoint the
    verification started from (or the ledger's newest).

    Raises:
        StoreError: the write failed.
    """
    quick = report.mode == QUICK
    return record_checkpoint(
        recorder,
        mode=INCREMENTAL if quick else FULL,
        seals=report.seals,
        graphs=report.graphs_checked + report.not_rechecked,
        verified=report.chain_tips,
        previous=report.checkpoint or read_checkpoint(recorder.store, ledger_iri(recorder.minter)),
        signing_key=signing_key,
        last_full=report.last_full if quick else "",
    )


def load_public_key(path: str) -> Any:
    """Read an Ed25519 public key (PEM) or derive it from a private key (PEM).

    Args:
        path: the PEM file.

    Returns:
        A ``cryptography`` ``Ed25519PublicKey``.

    Raises:
        ConfigError: not readable, or not an Ed25519 key.
    """
    from pathlib import Path

    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )
    from cryptography.hazmat.primitives.serialization import (
        load_pem_private_key,
        load_pem_public_key,
    )

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the verification key {path}: {exc}") from exc
    key: Any
    try:
        key = load_pem_public_key(data)
    except ValueError:
        try:
            key = load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{path} is not a PEM Ed25519 key: {exc}") from exc
    if isinstance(key, Ed25519PrivateKey):
        key = key.public_key()
    if not isinstance(key, Ed25519PublicKey):
        raise ConfigError(f"{path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def _b64(public_key: Any) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return base64.b64encode(public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


def signed_by(key_b64: str, signature: str, message_hash: str) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(key_b64, validate=True))
        key.verify(base64.b64decode(signature, validate=True), message_hash.encode("ascii"))
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def trusted_keys(public_key: Any, rotations: list[RotationRecord]) -> set[str]:
    """The trusted key and every key a recorded rotation from a trusted key introduced.

    A rotation counts only when its hash recomputes and the key it rotates from
    signed it.
    """
    trusted = {_b64(public_key)}
    grew = True
    while grew:
        grew = False
        for r in rotations:
            if r.from_key not in trusted or r.to_key in trusted:
                continue
            if sha256_hex(r.message()) != r.rotation_hash:
                continue
            if signed_by(r.from_key, r.signature, r.rotation_hash):
                trusted.add(r.to_key)
                grew = True
    return trusted


def seal_name(seal: SealRecord) -> str:
    return f"seal {seal.sequence or '?'} ({seal.iri})"


def check_seal(seal: SealRecord, trusted: set[str] | None, report: VerifyReport) -> None:
    """The seal's own integrity: fields hash to its hash, single values, signature."""
    name = seal_name(seal)
    if seal.repeated:
        report.findings.append(
            Finding("chain", name, f"several values for {', '.join(seal.repeated)}")
        )
    if seal.recomputed_hash() != seal.seal_hash:
        report.findings.append(
            Finding("chain", name, "its fields do not hash to its recorded seal hash")
        )
    if seal.signature is not None:
        report.signed += 1
    elif seal.signing_key is not None:  # the key is under the hash: its signature was removed
        report.findings.append(
            Finding(
                "signature",
                name,
                "it names the key that signed it but carries no signature (stripped?)",
            )
        )
        return
    if trusted is not None:
        if seal.signature is None or seal.signing_key is None:
            report.findings.append(
                Finding("signature", name, "unsigned, but a trusted key was given")
            )
            return
        if seal.signing_key not in trusted:
            report.findings.append(
                Finding("signature", name, "signed by a key that is not trusted")
            )
            return
    if seal.signature is not None and not signed_by(
        seal.signing_key or "", seal.signature, seal.seal_hash
    ):
        report.findings.append(Finding("signature", name, "the Ed25519 signature does not verify"))


def check_link(
    seal: SealRecord,
    previous: SealRecord | None,
    expected_sequence: int,
    report: VerifyReport,
) -> None:
    """The seal's place in its chain: sequence and previous-seal link."""
    name = seal_name(seal)
    if seal.sequence != expected_sequence:
        report.findings.append(
            Finding(
                "chain",
                name,
                f"sequence {seal.sequence} where {expected_sequence} was expected "
                "(a seal was removed, inserted or renumbered)",
            )
        )
    want_hash = previous.seal_hash if previous is not None else GENESIS
    want_iri = previous.iri if previous is not None else None
    if seal.previous_hash != want_hash or seal.previous != want_iri:
        report.findings.append(Finding("chain", name, "it does not link to the seal before it"))


def check_anchors(
    seal: SealRecord, anchored: dict[IRI, SealRecord | None], report: VerifyReport
) -> None:
    found = sorted(a.seal_hash for a in anchored.values() if a is not None)
    if len(found) != len(seal.anchors) or found != sorted(seal.anchor_hashes):
        report.findings.append(
            Finding("chain", seal_name(seal), "an anchored seal is missing or has another hash")
        )


def check_chains(contents: LedgerContents, trusted: set[str] | None, report: VerifyReport) -> None:
    by_iri = {s.iri: s for s in contents.seals}
    chains: dict[IRI | None, list[SealRecord]] = defaultdict(list)
    for seal in contents.seals:
        chains[seal.chain].append(seal)
        check_seal(seal, trusted, report)
        if seal.anchors or seal.anchor_hashes:
            check_anchors(seal, {a: by_iri.get(a) for a in seal.anchors}, report)
    report.chains = len(chains)
    for seals in chains.values():
        seals.sort(key=lambda s: (s.sequence, s.iri))
        previous: SealRecord | None = None
        for index, seal in enumerate(seals, start=1):
            check_link(seal, previous, index, report)
            previous = seal
        if previous is not None:
            report.chain_tips.append((previous.iri, previous.seal_hash))
    report.chain_tips.sort()
    linked = {s.previous for s in contents.seals} | {a for s in contents.seals for a in s.anchors}
    report.heads = sorted(s.seal_hash for s in contents.seals if s.iri not in linked)
    for pointer in contents.latest:
        if pointer not in by_iri:
            report.findings.append(
                Finding(
                    "chain",
                    str(pointer),
                    "the ledger's newest-seal pointer names a seal that is not in the "
                    "ledger (the newest seals were removed?)",
                )
            )


def removals(store: Store, graph: IRI | None = None) -> dict[IRI, list[Removed]]:
    """What recorded retention runs removed, by graph (one graph when ``graph`` is given)."""
    result = store.query(_REMOVALS, {"graph": graph} if graph is not None else None)
    assert isinstance(result, Solutions)
    found: dict[IRI, list[Removed]] = defaultdict(list)
    for row in result:
        g = IRI.trusted(str(row.get("graph", graph)))
        text = {k: v.value if isinstance(v, Literal) else str(v) for k, v in row.items()}
        found[g].append(
            Removed(
                graph=g,
                part=text.get("part", ""),
                run=text.get("run", ""),
                by=text.get("by", ""),
                at=text.get("at", ""),
                why=text.get("why", ""),
                rule=text.get("rule", ""),
                seal_hash=text.get("sealHash", ""),
            )
        )
    return found


def check_graph(
    store: Store,
    graph: IRI,
    seal: SealRecord,
    report: VerifyReport,
    removals: dict[IRI, list[Removed]] | None = None,
) -> bytes | None:
    """The graph against its seal; returns what the embedded store dumped of it (for the
    content check), None on other stores."""
    report.graphs_checked += 1
    digest, count, data = graph_digest_read(store, graph, version=seal.version)
    done = (removals or {}).get(graph, [])
    report.removed.extend(r for r in done if r.part == "content")
    structure = [r for r in done if r.part == "structure"]
    if count == 0 and structure:
        if any(r.seal_hash in ("", seal.seal_hash) for r in structure):
            report.removed.extend(structure)
        else:
            report.findings.append(
                Finding(
                    "missing",
                    graph,
                    "removed by retention, but the run names another seal than its latest "
                    f"({seal_name(seal)})",
                )
            )
    elif count == 0:
        report.findings.append(
            Finding("missing", graph, f"sealed with {seal.quad_count} quads, now absent")
        )
    elif digest != seal.graph_hash or count != seal.quad_count:
        report.findings.append(
            Finding(
                "altered",
                graph,
                f"sealed ({seal_name(seal)}) with {seal.quad_count} quads, hash "
                f"{seal.graph_hash[:16]}…; now {count} quads, hash {digest[:16]}…",
            )
        )
    return data


def sort_sessions(
    rows: Solutions, latest: dict[IRI, SealRecord], report: VerifyReport
) -> dict[IRI, bool]:
    sessions: dict[IRI, bool] = {}
    for row in rows:
        graph = IRI.trusted(str(row["g"]))
        ended = "ended" in row
        sessions[graph] = sessions.get(graph, False) or ended
        status = row.get("status")
        interrupted = isinstance(status, Literal) and status.value == INTERRUPTED
        if interrupted and graph not in report.interrupted_sessions:
            report.interrupted_sessions.append(graph)
    for graph, ended in sorted(sessions.items()):
        if graph in latest:
            continue
        if ended:
            report.findings.append(
                Finding("unsealed", graph, "the session ended but its graph has no seal")
            )
        else:
            report.open_sessions.append(graph)
    return sessions
