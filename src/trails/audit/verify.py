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
  rotated to from it by a recorded, signed ``trails:KeyRotation``.

Sessions that have not ended (``open``) and sessions ended as interrupted
(``interrupted``, by recovery) are listed, not findings: an accident is not
tampering. Nor is an erasure: seals cover structure graphs, erased content was in
content graphs, and each erasure's sealed receipt is listed (``erasures``). ``VerifyReport.heads`` are the ledger's heads: the seals no other
seal links to (by previous seal or anchor). Each head's hash commits to every
seal it reaches; keep them elsewhere and pass them back as ``expect_heads`` to
catch the newest seals being removed.

``verify(store, session=IRI)`` checks one session in time independent of the
ledger's size: its seals, the previous seal and the anchors of its newest
seal (their hashes must recompute and match), signatures, and the graph.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from trails.audit.canonical import graph_digest
from trails.audit.erasure import list_erasures
from trails.audit.ledger import (
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
from trails.errors import ConfigError, SessionError
from trails.prov.iri import Minter
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal

__all__ = ["Finding", "VerifyReport", "load_public_key", "trusted_keys", "verify"]

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

INTERRUPTED = "interrupted"
"""The ``trails:status`` of a session ended by recovery after its process died."""


@dataclass(frozen=True)
class Finding:
    """One thing that does not match."""

    kind: str
    subject: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind.upper():<9} {self.subject}: {self.detail}"


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
    erasures: list[str] = field(default_factory=list)
    """Content erased on record (``trails.audit.erasure``: by whom, when, why); listed, not
    findings: erasure removes content from content graphs, never from a sealed graph."""

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


def _check_graph(store: Store, graph: IRI, seal: SealRecord, report: VerifyReport) -> None:
    report.graphs_checked += 1
    digest, count = graph_digest(store, graph, version=seal.version)
    if count == 0:
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
    for graph, seal in sorted(latest.items()):
        _check_graph(store, graph, seal, report)
    result = store.query(_SESSIONS)
    assert isinstance(result, Solutions)
    _sort_sessions(result, latest, report)
    report.erasures = [e.describe() for e in list_erasures(store)]
    return report


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
        _check_graph(store, session, latest, report)
    for head in expect_heads or []:
        if not store.query(_HASH_PRESENT, {"ledger": ledger, "hash": Literal(head)}):
            report.findings.append(
                Finding("chain", head, "the expected head is not in the ledger (seals removed?)")
            )
    _sort_sessions(result, {session: latest} if latest is not None else {}, report)
    report.erasures = [e.describe() for e in list_erasures(store, session=str(session))]
    return report
