"""Verification: recompute sealed graphs, walk every seal chain, check signatures and anchors.

``verify(store)`` answers the auditor's question "was anything changed after
it was recorded?". It returns every finding rather than stopping at the
first, each naming the graph or seal and what no longer matches:

- ``altered``: the graph's canonical hash or quad count differs from its
  latest seal (a literal changed, a quad deleted or added);
- ``missing``: a sealed graph no longer exists;
- ``unsealed``: a session graph that has ended but has no seal;
- ``chain``: a seal's own hash does not recompute, its link to the previous
  seal of its chain or to an anchored seal does not match, a sequence number
  is missing or repeated, a seal holds two values for one field, the ledger's
  newest-seal pointer names a removed seal, or an expected head is absent;
- ``signature``: a signature does not verify, or (with a trusted key) a seal
  is unsigned or signed by a key that neither is the trusted key nor was
  rotated to from it by a recorded, signed ``trails:KeyRotation``;
- ``content-altered``, ``content-missing``, ``content-foreign``: a content value
  against the digest its sealed graph keeps (``trails.evidence.content``; each
  names the entity and its session). Sessions, memory graphs and every graph
  with a content graph are read; the content of a graph rehashed here is read
  with the dump that hashed it.

Sessions that have not ended (``open``) and sessions ended as interrupted
(``interrupted``, by recovery) are listed, not findings: an accident is not
tampering. Neither is retention (``trails.compliance.retention``): a sealed graph
that a recorded, sealed ``trails:RetentionRun`` names as removed (with the
seal hash it had) is listed in ``removed`` with who, when and why; content a
run removed is listed too (the graph itself verifies against the revision
seal written with the removal). Nor is an erasure: seals cover structure graphs,
erased content was in content graphs, and each erasure's sealed receipt is listed
(``erasures``). ``VerifyReport.heads`` are the ledger's heads: the seals no other
seal links to (by previous seal or anchor). Each head's hash commits to every
seal it reaches; keep them elsewhere and pass them back as ``expect_heads`` to
catch the newest seals being removed.

``verify(store, incremental=True)`` starts from the ledger's latest
verification checkpoint (``trails.evidence.checkpoint``): it still recomputes
every seal's hash and walks every chain link (cheap: a few hundred bytes per
seal), checks that the seals the checkpoint verified are still there with the
same hashes, rehashes only the graphs whose newest seal is newer than the
checkpoint, and checks every earlier graph by its quad count (one aggregate
query). It does not catch a quad of an earlier graph replaced by another (the
count stays the same): ``incremental=False`` (``trails verify --full``)
rehashes everything. Content is read whole in every mode: it is not sealed, so
no checkpoint vouches for it. Without a usable checkpoint (none, edited, or unsigned
while a trusted key is given) it rehashes everything.

``verify(store, session=IRI)`` checks one session in time independent of the
ledger's size: its seals, the previous seal and the anchors of its newest
seal (their hashes must recompute and match), signatures, and the graph.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from trails.errors import ConfigError, SessionError
from trails.evidence.canonical import graph_digest_read
from trails.evidence.checkpoint import FULL, INCREMENTAL, CheckpointRecord, read_checkpoint
from trails.evidence.content import (
    ContentChecker,
    ContentTally,
    check_session_content,
    check_store_content,
    read_accounts,
)
from trails.evidence.erasures import list_erasures
from trails.evidence.findings import Finding
from trails.evidence.ledger import (
    GENESIS,
    LedgerContents,
    RotationRecord,
    SealRecord,
    latest_of,
    ledger_iri,
    read_ledger,
    read_rotations,
    read_seal,
    seals_of_graph,
    sha256_hex,
)
from trails.prov.iri import Minter
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal

__all__ = ["Finding", "Removed", "VerifyReport", "load_public_key", "trusted_keys", "verify"]

_SESSIONS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g ?ended ?status WHERE {
  GRAPH ?g { ?g a trails:Session .
             OPTIONAL { ?g prov:endedAtTime ?ended }
             OPTIONAL { ?g trails:status ?status } }
}
"""

_SESSION = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT $g ?ended ?status WHERE {
  GRAPH $g { $g a trails:Session .
             OPTIONAL { $g prov:endedAtTime ?ended }
             OPTIONAL { $g trails:status ?status } }
}
"""

_HASH_PRESENT = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH $ledger { ?seal a trails:Seal ; trails:sealHash $hash } }
"""

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
    mode: str = FULL
    """``full`` (every sealed graph rehashed) or ``incremental`` (from ``checkpoint``)."""
    graphs_counted: int = 0
    """Graphs verified at the checkpoint, checked this time by quad count only."""
    checkpoint: CheckpointRecord | None = None
    """The checkpoint an incremental verification started from."""
    note: str = ""
    """Why an incremental verification rehashed everything, when it did."""
    chain_tips: list[tuple[IRI, str]] = field(default_factory=list)
    """The newest seal of each chain with its hash (what a new checkpoint records)."""
    removed: list[Removed] = field(default_factory=list)
    """Graphs and content removed by a recorded retention run; listed, not findings."""
    erasures: list[str] = field(default_factory=list)
    """Content erased on record (``trails.compliance.erasure``: by whom, when, why); listed, not
    findings: erasure removes content from content graphs, never from a sealed graph."""
    content: ContentTally = field(default_factory=ContentTally)
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


def _signed_by(key_b64: str, signature: str, message_hash: str) -> bool:
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
            if _signed_by(r.from_key, r.signature, r.rotation_hash):
                trusted.add(r.to_key)
                grew = True
    return trusted


def _name(seal: SealRecord) -> str:
    return f"seal {seal.sequence or '?'} ({seal.iri})"


def _check_seal(seal: SealRecord, trusted: set[str] | None, report: VerifyReport) -> None:
    """The seal's own integrity: fields hash to its hash, single values, signature."""
    name = _name(seal)
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
    if seal.signature is not None and not _signed_by(
        seal.signing_key or "", seal.signature, seal.seal_hash
    ):
        report.findings.append(Finding("signature", name, "the Ed25519 signature does not verify"))


def _check_link(
    seal: SealRecord,
    previous: SealRecord | None,
    expected_sequence: int,
    report: VerifyReport,
) -> None:
    """The seal's place in its chain: sequence and previous-seal link."""
    name = _name(seal)
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


def _check_anchors(
    seal: SealRecord, anchored: dict[IRI, SealRecord | None], report: VerifyReport
) -> None:
    found = sorted(a.seal_hash for a in anchored.values() if a is not None)
    if len(found) != len(seal.anchors) or found != sorted(seal.anchor_hashes):
        report.findings.append(
            Finding("chain", _name(seal), "an anchored seal is missing or has another hash")
        )


def _check_chains(contents: LedgerContents, trusted: set[str] | None, report: VerifyReport) -> None:
    by_iri = {s.iri: s for s in contents.seals}
    chains: dict[IRI | None, list[SealRecord]] = defaultdict(list)
    for seal in contents.seals:
        chains[seal.chain].append(seal)
        _check_seal(seal, trusted, report)
        if seal.anchors or seal.anchor_hashes:
            _check_anchors(seal, {a: by_iri.get(a) for a in seal.anchors}, report)
    report.chains = len(chains)
    for seals in chains.values():
        seals.sort(key=lambda s: (s.sequence, s.iri))
        previous: SealRecord | None = None
        for index, seal in enumerate(seals, start=1):
            _check_link(seal, previous, index, report)
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


def _removals(store: Store, graph: IRI | None = None) -> dict[IRI, list[Removed]]:
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


def _check_graph(
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
                    f"({_name(seal)})",
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
                f"sealed ({_name(seal)}) with {seal.quad_count} quads, hash "
                f"{seal.graph_hash[:16]}…; now {count} quads, hash {digest[:16]}…",
            )
        )
    return data


def _sort_sessions(
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


def verify(
    store: Store,
    *,
    session: IRI | None = None,
    minter: Minter | None = None,
    public_key: Any = None,
    expect_heads: list[str] | None = None,
    incremental: bool = False,
) -> VerifyReport:
    """Recompute sealed graphs and check the seal chains.

    Args:
        store: the store to check.
        session: check only this session graph, its seals and their links.
        minter: the minter whose base names the ledger (default ``urn:trails:``).
        public_key: a trusted Ed25519 public key. With it, every seal checked must
            be signed by it or by a key rotated to from it; without it each
            signature is checked against the key recorded in its seal.
        expect_heads: seal hashes kept elsewhere (an earlier report's ``heads``);
            each must still be in the ledger.
        incremental: start from the ledger's latest verification checkpoint:
            rehash only graphs sealed since, count the others (see the module
            docstring for what that does not catch).

    Returns:
        The report; ``report.ok`` is False when anything does not match.

    Raises:
        SessionError: ``session`` is neither a session graph nor sealed.
        StoreError: the store could not be read.
    """
    minter = minter or Minter()
    ledger = ledger_iri(minter)
    if session is not None:
        return _verify_session(store, ledger, session, public_key, expect_heads)
    contents = read_ledger(store, ledger)
    trusted = trusted_keys(public_key, contents.rotations) if public_key is not None else None
    report = VerifyReport(seals=len(contents.seals))
    _check_chains(contents, trusted, report)
    present = {s.seal_hash for s in contents.seals}
    for head in expect_heads or []:
        if head not in present:
            report.findings.append(
                Finding("chain", head, "the expected head is not in the ledger (seals removed?)")
            )
    per_graph: dict[IRI, list[SealRecord]] = defaultdict(list)
    for seal in contents.seals:
        per_graph[seal.graph].append(seal)
    latest = {g: s for g, seals in per_graph.items() if (s := latest_of(seals)) is not None}
    covered: set[IRI] = set()
    if incremental:
        covered = _since_checkpoint(store, ledger, contents, trusted, report)
    removals = _removals(store)
    # a graph a retention run removed is checked against its removal record, in full
    covered -= {latest[g].iri for g in removals if g in latest}

    def sealed_now(graph: str) -> bool:  # an erasure seals its receipt right after removing
        return bool(seals_of_graph(store, ledger, IRI.trusted(graph)))

    accounts = read_accounts(store, latest.__contains__, recheck=sealed_now)
    checker = ContentChecker(accounts, report.findings, report.content)
    skip = checker.accounts.receipt_graphs | checker.accounts.unsealed
    read: set[IRI] = set()  # graphs whose content was checked with the dump that hashed them
    for graph, seal in sorted(latest.items()):
        if seal.iri not in covered:
            data = _check_graph(store, graph, seal, report, removals)
            if data and graph not in skip:
                checker.check(store, graph, sealed=True, ntriples=data)
                read.add(graph)
    _count_graphs(store, {g: s for g, s in latest.items() if s.iri in covered}, report)
    result = store.query(_SESSIONS)
    assert isinstance(result, Solutions)
    sessions = _sort_sessions(result, latest, report)
    check_store_content(
        store,
        sealed=set(latest),
        sessions=set(sessions),
        memory=minter.graph("memory/"),
        checker=checker,
        done=read,
    )
    report.erasures = [e.describe() for e in list_erasures(store)]
    return report


def _checkpoint_findings(
    checkpoint: CheckpointRecord,
    by_iri: dict[IRI, SealRecord],
    trusted: set[str] | None,
    report: VerifyReport,
) -> bool:
    """Is the checkpoint usable? Findings for a checkpoint that was edited or whose
    verified seals are gone or changed; a note when it is merely not trusted."""
    name = f"checkpoint {checkpoint.iri}"
    if not checkpoint.intact():
        report.findings.append(
            Finding("chain", name, "its fields do not hash to its recorded checkpoint hash")
        )
        return False
    if trusted is not None and not (
        checkpoint.signature is not None
        and any(_signed_by(k, checkpoint.signature, checkpoint.checkpoint_hash) for k in trusted)
    ):
        report.note = "the latest checkpoint is not signed by a trusted key"
        return False
    usable = True
    for seal_iri, seal_hash in sorted(checkpoint.verified.items()):
        seal = by_iri.get(seal_iri)
        if seal is None or seal.seal_hash != seal_hash:
            report.findings.append(
                Finding(
                    "chain",
                    str(seal_iri),
                    f"verified at {name}, now missing from the ledger or with another hash",
                )
            )
            usable = False
    return usable


def _since_checkpoint(
    store: Store,
    ledger: IRI,
    contents: LedgerContents,
    trusted: set[str] | None,
    report: VerifyReport,
) -> set[IRI]:
    """The seals the latest checkpoint covers (each verified seal and every earlier
    seal of its chain); empty, with a note or findings, when it cannot be used."""
    checkpoint = read_checkpoint(store, ledger)
    if checkpoint is None:
        report.note = "no verification checkpoint recorded yet"
        return set()
    by_iri = {s.iri: s for s in contents.seals}
    if not _checkpoint_findings(checkpoint, by_iri, trusted, report):
        return set()
    upto = {by_iri[s].chain: by_iri[s].sequence for s in checkpoint.verified}
    covered = {s.iri for s in contents.seals if s.chain in upto and s.sequence <= upto[s.chain]}
    if len(covered) != checkpoint.seals:
        report.findings.append(
            Finding(
                "chain",
                f"checkpoint {checkpoint.iri}",
                f"it verified {checkpoint.seals} seal(s); the ledger now holds "
                f"{len(covered)} up to the same seals (seals removed or inserted)",
            )
        )
        return set()
    report.mode = INCREMENTAL
    report.checkpoint = checkpoint
    return covered


_COUNTS = "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"


def _count_graphs(store: Store, graphs: dict[IRI, SealRecord], report: VerifyReport) -> None:
    """The cheap check of graphs verified at the checkpoint: each still holds as many
    quads as its seal says (one aggregate query, counted inside the store)."""
    if not graphs:
        return
    result = store.query(_COUNTS)
    assert isinstance(result, Solutions)
    counts: dict[str, int] = {}
    for row in result:
        n = row.get("n")
        counts[str(row["g"])] = int(n.value) if isinstance(n, Literal) else 0
    for graph, seal in sorted(graphs.items()):
        report.graphs_counted += 1
        count = counts.get(str(graph), 0)
        if count == 0:
            report.findings.append(
                Finding("missing", graph, f"sealed with {seal.quad_count} quads, now absent")
            )
        elif count != seal.quad_count:
            report.findings.append(
                Finding(
                    "altered",
                    graph,
                    f"sealed ({_name(seal)}) with {seal.quad_count} quads; now {count} "
                    "(found by the incremental count check)",
                )
            )


def _verify_session(
    store: Store,
    ledger: IRI,
    session: IRI,
    public_key: Any,
    expect_heads: list[str] | None,
) -> VerifyReport:
    """One session: its seals and what proves their place, read by index."""
    seals = seals_of_graph(store, ledger, session)
    result = store.query(_SESSION, {"g": session})
    assert isinstance(result, Solutions)
    if not seals and not len(result):
        raise SessionError(f"{session} is neither a session graph nor sealed")
    trusted = None
    if public_key is not None:
        trusted = trusted_keys(public_key, read_rotations(store, ledger))
    report = VerifyReport(seals=len(seals))
    latest = latest_of(seals)
    for seal in seals:
        _check_seal(seal, trusted, report)
    if latest is not None:
        previous = read_seal(store, ledger, latest.previous) if latest.previous else None
        if latest.previous is not None and previous is None:
            report.findings.append(
                Finding("chain", _name(latest), "the seal before it is not in the ledger")
            )
        elif previous is not None:
            _check_seal(previous, trusted, report)
            if previous.chain != latest.chain:
                report.findings.append(
                    Finding("chain", _name(latest), "its previous seal is in another chain")
                )
        _check_link(latest, previous, (previous.sequence + 1) if previous else 1, report)
        if latest.anchors or latest.anchor_hashes:
            anchored = {a: read_seal(store, ledger, a) for a in latest.anchors}
            _check_anchors(latest, anchored, report)
        report.heads = [latest.seal_hash]
        _check_graph(store, session, latest, report, _removals(store, session))
    _session_content(store, ledger, session, latest is not None, report)
    for head in expect_heads or []:
        if not store.query(_HASH_PRESENT, {"ledger": ledger, "hash": Literal(head)}):
            report.findings.append(
                Finding("chain", head, "the expected head is not in the ledger (seals removed?)")
            )
    _sort_sessions(result, {session: latest} if latest is not None else {}, report)
    report.erasures = [e.describe() for e in list_erasures(store, session=str(session))]
    return report


def _session_content(
    store: Store, ledger: IRI, session: IRI, sealed: bool, report: VerifyReport
) -> None:
    """One session's content against its digests; the sealed receipts that account for
    removed content are rehashed against their own seals too."""
    accounts = check_session_content(
        store,
        session,
        sealed=sealed,
        is_sealed=lambda g: bool(seals_of_graph(store, ledger, IRI.trusted(g))),
        findings=report.findings,
        tally=report.content,
    )
    for graph in sorted(accounts.receipt_graphs):
        receipt_seal = latest_of(seals_of_graph(store, ledger, IRI.trusted(graph)))
        if receipt_seal is not None:
            _check_graph(store, IRI.trusted(graph), receipt_seal, report)
