"""Verification: recompute every sealed graph and walk the seal chain.

``verify(store)`` answers the auditor's question "was anything changed after
it was recorded?". It returns every finding rather than stopping at the
first, each naming the graph or seal and what no longer matches:

- ``altered``: the graph's canonical hash or quad count differs from its
  latest seal (a literal changed, a quad deleted or added);
- ``missing``: a sealed graph no longer exists;
- ``unsealed``: a session graph that has ended but has no seal;
- ``chain``: a seal's own hash does not recompute, its previous-hash or
  previous-seal link does not match the seal before it, or a sequence number
  is missing or repeated (a seal was edited, removed or inserted);
- ``signature``: a signature does not verify with the public key.

Sessions that have not ended yet are listed as ``open`` but are not findings:
they are sealed when they end. Removing the newest seals (truncating the
chain) leaves a valid shorter chain; publish or sign the head hash
(``VerifyReport.head``) to detect that.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any

from trails.audit.canonical import graph_digest
from trails.audit.seal import GENESIS, SealRecord, ledger_iri, read_seals
from trails.errors import ConfigError, VerificationError
from trails.prov.iri import Minter
from trails.store.base import Solutions, Store
from trails.store.terms import IRI

__all__ = ["Finding", "VerifyReport", "load_public_key", "verify"]

_SESSIONS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g ?ended WHERE {
  GRAPH ?g { ?g a trails:Session . OPTIONAL { ?g prov:endedAtTime ?ended } }
}
"""


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
    open_sessions: list[str] = field(default_factory=list)
    head: str = GENESIS

    @property
    def ok(self) -> bool:
        """True when there is no finding."""
        return not self.findings


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


def _public_from_b64(text: str) -> Any:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    return Ed25519PublicKey.from_public_bytes(base64.b64decode(text))


def _signature_ok(seal: SealRecord, public_key: Any) -> bool:
    from cryptography.exceptions import InvalidSignature

    try:
        key = public_key if public_key is not None else _public_from_b64(seal.signing_key or "")
        key.verify(base64.b64decode(seal.signature or ""), seal.seal_hash.encode("ascii"))
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


def _check_chain(seals: list[SealRecord], public_key: Any, report: VerifyReport) -> None:
    expected_prev, expected_prev_iri = GENESIS, None
    for index, seal in enumerate(seals, start=1):
        name = f"seal {seal.sequence or '?'} ({seal.iri})"
        if seal.sequence != index:
            report.findings.append(
                Finding(
                    "chain",
                    name,
                    f"sequence {seal.sequence} where {index} was expected "
                    "(a seal was removed, inserted or renumbered)",
                )
            )
        recomputed = hashlib.sha256(seal.message()).hexdigest()
        if recomputed != seal.seal_hash:
            report.findings.append(
                Finding("chain", name, "its fields do not hash to its recorded seal hash")
            )
        if seal.previous_hash != expected_prev or seal.previous != expected_prev_iri:
            report.findings.append(Finding("chain", name, "it does not link to the seal before it"))
        if seal.signature is not None:
            report.signed += 1
            if not _signature_ok(seal, public_key):
                report.findings.append(
                    Finding("signature", name, "the Ed25519 signature does not verify")
                )
        expected_prev, expected_prev_iri = seal.seal_hash, seal.iri
    report.head = expected_prev


def verify(
    store: Store,
    *,
    session: IRI | None = None,
    minter: Minter | None = None,
    public_key: Any = None,
) -> VerifyReport:
    """Recompute sealed graphs and check the seal chain.

    Args:
        store: the store to check.
        session: check only this session graph (the chain is always checked).
        minter: the minter whose base names the ledger (default ``urn:trails:``).
        public_key: an Ed25519 public key to check signatures with; without it
            each signature is checked against the key recorded in its seal.

    Returns:
        The report; ``report.ok`` is False when anything does not match.

    Raises:
        VerificationError: the store has no ledger (nothing was ever sealed), or
            ``session`` is neither a session graph nor sealed.
    """
    minter = minter or Minter()
    ledger = ledger_iri(minter)
    seals = read_seals(store, ledger)
    if not seals:
        raise VerificationError(
            f"no ledger in this store: the graph {ledger} holds no seals. Seals are written "
            "when sessions end on a recorder with a sealer installed "
            "(trails.audit.install_sealer)"
        )
    report = VerifyReport(seals=len(seals))
    _check_chain(seals, public_key, report)

    latest: dict[IRI, SealRecord] = {}
    for seal in seals:
        latest[seal.graph] = seal
    result = store.query(_SESSIONS)
    assert isinstance(result, Solutions)
    sessions = {IRI.trusted(str(row["g"])): "ended" in row for row in result}
    if session is not None:
        if session not in sessions and session not in latest:
            raise VerificationError(f"{session} is neither a session graph nor sealed")
        sessions = {session: sessions.get(session, True)}
        latest = {session: latest[session]} if session in latest else {}

    for graph, seal in sorted(latest.items()):
        report.graphs_checked += 1
        digest, count = graph_digest(store, graph)
        if count == 0:
            report.findings.append(
                Finding("missing", graph, f"sealed with {seal.quad_count} quads, now absent")
            )
        elif digest != seal.graph_hash or count != seal.quad_count:
            report.findings.append(
                Finding(
                    "altered",
                    graph,
                    f"sealed (seal {seal.sequence}) with {seal.quad_count} quads, hash "
                    f"{seal.graph_hash[:16]}…; now {count} quads, hash {digest[:16]}…",
                )
            )
    for graph, ended in sorted(sessions.items()):
        if graph in latest:
            continue
        if ended:
            report.findings.append(
                Finding("unsealed", graph, "the session ended but its graph has no seal")
            )
        else:
            report.open_sessions.append(graph)
    return report
