"""The quick verification: only what was sealed since the latest checkpoint, in time
proportional to that.

A full verification reads the whole store. Between full ones, a scheduled run can ask
only about what is new: ``verify(store, quick=True)`` (``trails verify --quick``)
starts from the ledger's latest verification checkpoint (``trails.evidence.checkpoint``:
it names the newest seal of each chain it verified, with its hash, and the totals).
Seal IRIs are ``<ledger>:seal:<writer>:<n>``, so whether a seal is newer than the
checkpoint is read from its name. The newest seals are the ledger's ``trails:latestSeal``
pointers, and every seal either is one or is linked to (as previous seal or anchor) by a
newer one: walking back from the pointers, seal by seal, and stopping at seals the
checkpoint covers reads each new seal once and nothing older.

Each new seal is checked as in a full verification (its hash, signature, its link to its
previous seal, which for the first new seal of a chain must be the seal the checkpoint
verified, with that hash, and its anchors); each graph it seals is rehashed, its content
checked against its digests and its catalogue entry against the graph, and each memory a
new session learned against the digest it sealed (``trails.evidence.learned``).

What it does not recheck, and says so: the graphs, content and catalogue entries verified
by earlier verifications (an edit made there since is found only by a full
verification), seals removed from before the checkpoint, sessions that ended without a
seal, and graphs that are not sessions. ``trails verify`` without ``--quick`` is the full
check.
"""

from __future__ import annotations

from typing import Any

from trails.evidence.checkpoint import INCREMENTAL, QUICK, CheckpointRecord, read_checkpoint
from trails.evidence.checks import (
    VerifyReport,
    check_anchors,
    check_graph,
    check_link,
    check_seal,
    removals,
    signed_by,
    trusted_keys,
)
from trails.evidence.content import check_session_content
from trails.evidence.findings import Finding
from trails.evidence.learned import check_learned_by
from trails.evidence.ledger import SealRecord, latest_of, read_rotations, read_seal, seals_of_graph
from trails.evidence.sweep import RECEIPT_KINDS, check_entry, graph_kind
from trails.prov.iri import Minter
from trails.prov.vocab import T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal

__all__ = ["QUICK", "seal_position", "verify_quick"]

_POINTERS = f"""
SELECT ?s ?h $ledger WHERE {{ GRAPH $ledger {{
  $ledger {T.latestSeal.n3()} ?s . OPTIONAL {{ ?s {T.sealHash.n3()} ?h }}
}} }}
"""


def seal_position(seal: IRI, ledger: IRI) -> tuple[str, int] | None:
    """``(writer, sequence)`` read from a seal's IRI (``<ledger>:seal:<writer>:<n>``), or
    None for a seal named otherwise (an older ledger)."""
    prefix = f"{ledger}:seal:"
    if not seal.startswith(prefix):
        return None
    writer, _, n = seal[len(prefix) :].rpartition(":")
    return (writer, int(n)) if writer and n.isdigit() else None


def _usable(
    checkpoint: CheckpointRecord, ledger: IRI, trusted: set[str] | None
) -> dict[str, int] | None:
    """The newest verified sequence of each writer, or None when the checkpoint cannot be
    used (edited, not signed by a trusted key, or naming seals by another scheme)."""
    if not checkpoint.intact():
        return None
    if trusted is not None and not (
        checkpoint.signature is not None
        and any(signed_by(k, checkpoint.signature, checkpoint.checkpoint_hash) for k in trusted)
    ):
        return None
    upto: dict[str, int] = {}
    for seal in checkpoint.verified:
        position = seal_position(seal, ledger)
        if position is None:
            return None
        upto[position[0]] = max(upto.get(position[0], 0), position[1])
    return upto


def verify_quick(
    store: Store,
    ledger: IRI,
    minter: Minter,
    public_key: Any,
    expect_heads: list[str] | None,
) -> VerifyReport | None:
    """The quick verification (see the module docstring); None when there is no usable
    checkpoint (the caller then runs the full check).

    Raises:
        StoreError: the store could not be read.
    """
    checkpoint = read_checkpoint(store, ledger)
    if checkpoint is None:
        return None
    trusted = None
    if public_key is not None:
        trusted = trusted_keys(public_key, read_rotations(store, ledger))
    upto = _usable(checkpoint, ledger, trusted)
    if upto is None:
        return None

    def covered(seal: IRI) -> bool:
        position = seal_position(seal, ledger)
        return position is not None and position[1] <= upto.get(position[0], 0)

    result = store.query(_POINTERS, {"ledger": ledger})
    assert isinstance(result, Solutions)
    pointers = {IRI.trusted(str(r["s"])): r.get("h") for r in result}
    report = VerifyReport(mode=QUICK, checkpoint=checkpoint, last_full=_last_full(checkpoint))
    read: dict[IRI, SealRecord | None] = {}

    def seal(iri: IRI) -> SealRecord | None:
        if iri not in read:
            read[iri] = read_seal(store, ledger, iri)
        return read[iri]

    new: list[SealRecord] = []
    todo, seen = sorted(pointers), set(pointers)
    while todo:
        iri = todo.pop()
        if covered(iri):
            continue
        record = seal(iri)
        if record is None:
            report.findings.append(
                Finding("chain", str(iri), "a newer seal links to it, and it is not in the ledger")
            )
            continue
        new.append(record)
        for nxt in (record.previous, *record.anchors):
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    _check_new(new, checkpoint, seal, trusted, report)
    report.heads = sorted(h.value for h in pointers.values() if isinstance(h, Literal) and h.value)
    present = {s.seal_hash for s in new}
    for head in expect_heads or []:
        if head not in present and head not in report.heads:
            found = store.query(
                f"ASK {{ GRAPH $ledger {{ ?s {T.sealHash.n3()} $h }} }}",
                {"ledger": ledger, "h": Literal(head)},
            )
            if not found:
                report.findings.append(
                    Finding("chain", head, "the expected head is not in the ledger")
                )
    _check_graphs(store, ledger, minter.base, new, report)
    report.seals = checkpoint.seals + len(new)
    report.not_rechecked = checkpoint.graphs
    return report


def _last_full(checkpoint: CheckpointRecord) -> str:
    return checkpoint.at if checkpoint.mode != INCREMENTAL else checkpoint.last_full


def _check_new(
    new: list[SealRecord],
    checkpoint: CheckpointRecord,
    seal: Any,
    trusted: set[str] | None,
    report: VerifyReport,
) -> None:
    """Each new seal's integrity, link and anchors; the chain tips a new checkpoint records."""
    tips: dict[IRI | None, SealRecord] = {}
    for record in sorted(new, key=lambda s: (str(s.chain), s.sequence)):
        check_seal(record, trusted, report)
        previous = seal(record.previous) if record.previous is not None else None
        if record.previous is not None and previous is None:
            report.findings.append(
                Finding("chain", str(record.iri), "the seal before it is not in the ledger")
            )
        else:
            if (
                previous is not None
                and previous.iri in checkpoint.verified
                and checkpoint.verified[previous.iri] != previous.seal_hash
            ):
                report.findings.append(
                    Finding(
                        "chain",
                        str(previous.iri),
                        f"verified at checkpoint {checkpoint.iri} with another hash",
                    )
                )
            expected = previous.sequence + 1 if previous is not None else 1
            check_link(record, previous, expected, report)
        if record.anchors or record.anchor_hashes:
            check_anchors(record, {a: seal(a) for a in record.anchors}, report)
        tip = tips.get(record.chain)
        if tip is None or record.sequence > tip.sequence:
            tips[record.chain] = record
    chains = {str(s).rpartition(":")[0]: (s, h) for s, h in checkpoint.verified.items()}
    for record in tips.values():
        chains[str(record.iri).rpartition(":")[0]] = (record.iri, record.seal_hash)
    report.chain_tips = sorted(chains.values())
    report.chains = len(chains)


def _check_graphs(
    store: Store, ledger: IRI, base: str, new: list[SealRecord], report: VerifyReport
) -> None:
    """Each graph sealed since the checkpoint: against its newest seal, its content and its
    catalogue entry."""
    graphs = sorted({s.graph for s in new})
    intact: list[IRI] = []
    for graph in graphs:
        seals = seals_of_graph(store, ledger, graph)
        latest = latest_of(seals)
        if latest is None:
            continue
        before = len(report.findings)
        check_graph(store, graph, latest, report, removals(store, graph))
        broken = len(report.findings) > before  # that finding; its entry is not another
        if graph_kind(graph, base) in RECEIPT_KINDS.values():
            continue  # a receipt holds the digests of what it removed, not their content
        check_session_content(
            store,
            graph,
            sealed=True,
            is_sealed=lambda g: bool(seals_of_graph(store, ledger, IRI.trusted(g))),
            findings=report.findings,
            tally=report.content,
        )
        if not broken:
            intact.append(graph)
            check_entry(store, ledger, graph, report)
    # the memories those sessions learned, against the digests they sealed
    check_learned_by(
        store,
        intact,
        lambda g: bool(seals_of_graph(store, ledger, IRI.trusted(g))),
        report.findings,
        report.content,
    )
