"""The evidence machinery: what makes a recorded graph trustworthy, and the checks that say so.

- ``canonical``: the canonical form of a named graph and its hash.
- ``ledger``: the ledger graph's format (seals, seal chains, key rotations).
- ``events``: the events the writers record (seals, rotations, checkpoints, the log's
  heads, cosignatures), apart from the readers so that reading never builds them.
- ``seal``: the ``Sealer``, the one writer here, which seals each session graph in
  the write that ends it.
- ``verify``: recompute sealed graphs, walk the chains, check signatures.
- ``content``: every content value against the digest its sealed graph keeps.
- ``findings``: what verification reports, one ``Finding`` per mismatch.
- ``checkpoint``: what a successful verification checked, for the next one.
- ``recovery``: sessions of a stopped process ended as interrupted, and sealed.
- ``interruptions``: capability calls that started and did not finish, which
  ``trails verify --strict`` names.
- ``erasures``: erasure receipts read back, so verification tells lawful removal
  apart from tampering.

This room reads and writes the store through ``trails.prov`` and
``trails.store`` and keeps the session catalogue (``trails.catalogue``) up to
date as sessions end; it never imports what auditors read (``trails.audit``),
compliance operations (``trails.compliance``) or the server above it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trails._lazy import lazy_names

if TYPE_CHECKING:
    from trails.evidence.canonical import canonical_term, graph_digest
    from trails.evidence.events import Sealed
    from trails.evidence.ledger import ledger_iri, read_seals
    from trails.evidence.seal import Sealer, install_sealer, rotate_signing_key, seal_ended_unsealed
    from trails.evidence.verify import Finding, VerifyReport, verify

# each name loads its module on first use (``trails._lazy``): a command that seals need not
# import the verifier
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "canonical_term": "trails.evidence.canonical",
        "graph_digest": "trails.evidence.canonical",
        "Sealed": "trails.evidence.events",
        "ledger_iri": "trails.evidence.ledger",
        "read_seals": "trails.evidence.ledger",
        "Sealer": "trails.evidence.seal",
        "install_sealer": "trails.evidence.seal",
        "rotate_signing_key": "trails.evidence.seal",
        "seal_ended_unsealed": "trails.evidence.seal",
        "Finding": "trails.evidence.verify",
        "VerifyReport": "trails.evidence.verify",
        "verify": "trails.evidence.verify",
    },
)

__all__ = [
    "Finding",
    "Sealed",
    "Sealer",
    "VerifyReport",
    "canonical_term",
    "graph_digest",
    "install_sealer",
    "ledger_iri",
    "read_seals",
    "rotate_signing_key",
    "seal_ended_unsealed",
    "verify",
]
