"""The transparency log: every seal a leaf of one append-only RFC 9162 Merkle tree.

The hash chains of the ledger prove a seal is there to whoever holds the ledger.
The log proves it to whoever holds one small file: a seal's inclusion proof against a
signed tree head is O(log n) hashes, and a consistency proof shows that today's log
extends an older head (nothing rewritten, nothing cut) in O(log n) too, the way
Certificate Transparency logs do.

The log is the graph ``<base>graph:transparency`` (``log_iri``), beside the ledger.
Its leaves are seals, in the order they entered it: each verification checkpoint
appends the seals not yet in it (``extend_log``, in the checkpoint's own write), so
sealing writers never touch the log and never wait for each other. The graph holds

- ``<log>:node:<level>:<index>`` with ``trails:nodeHash``: the hash of every perfect
  subtree once complete (level 0: leaf hashes ``SHA-256(0x00 || leaf_data)``), so a
  proof reads O(log n) nodes; level-0 nodes also name their seal
  (``trails:leafSeal``) and position (``trails:leafIndex``);
- ``<log>:head:<uuid>``, a ``trails:TreeHead``: size, root, time, its hash, the
  Ed25519 signature when ``[audit] signing_key`` is set, the RFC 3161 token when
  ``[audit] timestamp_url`` is; ``<log> trails:latestTreeHead`` names the newest.
- ``<log> trails:loggedSeal``: each writer's newest seal in the log, so a checkpoint
  reads only the seals after it (up to the chain tips it verified): O(new seals).

Two checkpoints appending at the same moment to one store through a SPARQL server
could both claim a leaf index; ``check_log`` reports such a fork (as any other
edit of the log). Head and proof files are ``trails.evidence.proofs``.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from trails._lazy import lazy_names
from trails.errors import UserError
from trails.evidence.findings import Finding
from trails.evidence.ledger import ledger_iri, node_iri, seals_of_graph, sha256_hex
from trails.evidence.merkle import (
    consistency_proof,
    from_leaves,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root,
    verify_consistency,
)
from trails.evidence.note import Checkpoint, SignedNote, sign_line
from trails.evidence.proofs import (
    LOG_PROOFS_FORMAT,
    PROOF_FORMAT,
    ProofReport,
    TreeHead,
    checkpoint_problem,
    head_message,
    leaf_data,
    seal_to_json,
)
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, Quad, instant, literal

__all__ = [
    "LogExtended",
    "NotInLog",
    "check_log",
    "consistency_from",
    "extend_log",
    "extends",
    "log_iri",
    "log_origin",
    "log_proofs",
    "node_iri",
    "prove_session",
    "read_head",
    "since_head",
]

if TYPE_CHECKING:
    from trails.evidence.events import LogExtended

# the log's event is loaded by the checkpoint that writes it (``trails.evidence.events``), so
# reading the log does not build the event models; the old name resolves on first use
__getattr__, __dir__ = lazy_names(__name__, {"LogExtended": "trails.evidence.events"})

Stamp = Callable[[bytes], str | None]
"""Asks a time-stamping authority to stamp a head's message (its imprint is the head's
hash); the base64 DER token, or None (``trails.evidence.timestamp``)."""


class NotInLog(UserError):
    """A session (or a log) that the transparency log does not hold yet."""


def log_iri(minter: Minter) -> IRI:
    """The log graph's IRI under the minter's base (``<base>graph:transparency``)."""
    return minter.graph("transparency")


def log_origin(log: IRI) -> str:
    """The checkpoint origin (and key name) of a log when ``[audit] log_origin`` is not set:
    its graph IRI, any ``+`` percent-encoded (a key name holds none)."""
    return str(log).replace("+", "%2B")


_NODE = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?h $log $node WHERE { GRAPH $log { $node trails:nodeHash ?h } }
"""

_HEAD = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?h ?p ?o $log WHERE { GRAPH $log { $log trails:latestTreeHead ?h . ?h ?p ?o } }
"""

_UNLOGGED = """
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT ?seal ?hash ?at $ledger $log WHERE {
  GRAPH $ledger { ?seal a trails:Seal ; trails:sealHash ?hash ; prov:generatedAtTime ?at }
  FILTER NOT EXISTS { GRAPH $log { ?leaf trails:leafSeal ?seal } }
} ORDER BY ?at ?seal
"""

_TIPS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?tip $log WHERE { GRAPH $log { $log trails:loggedSeal ?tip } }
"""

_SEAL_ROW = """
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX prov: <http://www.w3.org/ns/prov#>
SELECT ?hash ?at $ledger $seal WHERE {
  GRAPH $ledger { $seal trails:sealHash ?hash ; prov:generatedAtTime ?at }
}
"""

_LEAF_OF = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?i $log $seal WHERE { GRAPH $log { ?leaf trails:leafSeal $seal ; trails:leafIndex ?i } }
"""

_LEAVES = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?i ?seal ?h ?sealHash $log $ledger WHERE {
  GRAPH $log { ?leaf trails:leafIndex ?i ; trails:leafSeal ?seal ; trails:nodeHash ?h }
  OPTIONAL { GRAPH $ledger { ?seal trails:sealHash ?sealHash } }
}
"""

_NODES = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?n ?h $log WHERE { GRAPH $log { ?n trails:nodeHash ?h } }
"""


class _Nodes:
    """The stored perfect subtrees of a log, read one by one and kept (a ``Subtrees``)."""

    def __init__(self, store: Store, log: IRI) -> None:
        self.store, self.log = store, log
        self.known: dict[tuple[int, int], bytes] = {}

    def __call__(self, level: int, index: int) -> bytes:
        found = self.known.get((level, index))
        if found is None:
            result = self.store.query(
                _NODE, {"log": self.log, "node": node_iri(self.log, level, index)}
            )
            assert isinstance(result, Solutions)
            values = {r["h"].value for r in result if isinstance(r["h"], Literal)}
            if len(values) != 1:
                raise NotInLog(
                    f"the transparency log {self.log} lacks node {level}:{index} "
                    f"({'absent' if not values else 'several hashes'}): it was edited"
                )
            found = self.known[(level, index)] = bytes.fromhex(values.pop())
        return found


def read_head(store: Store, log: IRI) -> TreeHead | None:
    """The newest tree head (``trails:latestTreeHead``), or None before the first.

    Raises:
        StoreError: the store could not be read.
    """
    result = store.query(_HEAD, {"log": log})
    assert isinstance(result, Solutions)
    props: dict[str, dict[IRI, str]] = {}
    cosigned: dict[str, list[str]] = {}
    for row in result:
        o, pred = row["o"], IRI.trusted(str(row["p"]))
        value = o.value if isinstance(o, Literal) else str(o)
        if pred == T.cosignature:
            cosigned.setdefault(str(row["h"]), []).append(value)
            continue
        props.setdefault(str(row["h"]), {})[pred] = value
    heads = []
    for iri, p in props.items():
        try:
            size = int(p.get(T.treeSize, ""))
        except ValueError:
            continue
        heads.append(
            TreeHead(
                log=str(log),
                size=size,
                root=p.get(T.rootHash, ""),
                at=p.get(PROV.generatedAtTime, ""),
                hash=p.get(T.headHash, ""),
                key=p.get(T.signingKey, ""),
                signature=p.get(T.signature, ""),
                timestamp=p.get(T.timestampToken, ""),
                note=p.get(T.checkpointNote, ""),
                cosignatures=tuple(sorted(cosigned.get(iri, []))),
                iri=iri,
            )
        )
    return max(heads, key=lambda h: (h.size, instant(h.at))) if heads else None


def _frontier(size: int) -> list[tuple[int, int]]:
    """The perfect subtrees that make up the first ``size`` leaves, largest first."""
    out, start = [], 0
    for level in range(size.bit_length() - 1, -1, -1):
        if size >> level & 1:
            out.append((level, start >> level))
            start += 1 << level
    return out


def extend_log(
    store: Store,
    minter: Minter,
    *,
    signing_key: Any = None,
    stamp: Stamp | None = None,
    tips: list[tuple[IRI, str]] | None = None,
    origin: str | None = None,
) -> tuple[LogExtended, list[Quad]]:
    """The event that appends the seals not yet in the log and records a new signed tree
    head, and the quads it replaces (the previous head pointer, moved writers' pointers):
    write both in one write.

    With ``tips`` (the newest seal of each writer's chain a verification checked, as a
    checkpoint records them), the seals after each writer's newest logged seal up to its
    tip are appended, read one by one: O(new seals + writers). Without (or for the first
    append), every seal of the ledger not yet in the log: O(seals). Then O(log n) nodes
    are read and the new ones computed (amortised O(1) a leaf), and the root.

    Raises:
        NotInLog: the stored log lacks a node its head needs (it was edited).
        StoreError: the store could not be read.
    """
    from trails.evidence.events import LogExtended  # a writer's (trails.evidence.events)

    log, ledger = log_iri(minter), ledger_iri(minter)
    head = read_head(store, log)
    size = head.size if head is not None else 0
    nodes = _Nodes(store, log)
    stack = [(level, nodes(level, index)) for level, index in _frontier(size)]
    logged = _logged_tips(store, log, ledger)
    if head is None or tips is None:
        found = _unlogged_by_scan(store, ledger, log)
    else:
        found = _unlogged_by_chain(store, ledger, logged, tips)
    new_nodes: list[tuple[int, int, str]] = []
    leaves: list[tuple[int, str]] = []
    for seal, seal_hash in found:
        n = size + len(leaves)
        leaves.append((n, seal))
        h = leaf_hash(leaf_data(seal, seal_hash))
        new_nodes.append((0, n, h.hex()))
        level, index = 0, n
        while stack and stack[-1][0] == level:  # complete every subtree this leaf closes
            h = node_hash(stack.pop()[1], h)
            level, index = level + 1, index >> 1
            new_nodes.append((level, index, h.hex()))
        stack.append((level, h))
    size += len(leaves)
    top = stack[-1][1] if stack else root(nodes, 0)
    for _, h in reversed(stack[:-1]):
        top = node_hash(h, top)
    at = datetime.now(UTC)
    key = _public_b64(signing_key) if signing_key is not None else ""
    message = head_message(str(log), size, top.hex(), literal(at).value, key)
    hash_ = sha256_hex(message)
    signature = note = None
    if signing_key is not None:
        signature = base64.b64encode(signing_key.sign(hash_.encode("ascii"))).decode("ascii")
        body = Checkpoint(origin or log_origin(log), size, top).text()
        note = str(SignedNote(body, (sign_line(body, origin or log_origin(log), signing_key),)))
    iri = Minter.part(log, f"head:{uuid.uuid4()}")
    moved = _tips_after(ledger, logged, [seal for _, seal in leaves])
    event = LogExtended(
        session=log,
        log=log,
        nodes=tuple(new_nodes),
        leaves=tuple(leaves),
        tips=tuple(seal for seal, _ in moved.values()),
        head=iri,
        size=size,
        root=top.hex(),
        at=at,
        head_hash=hash_,
        signature=signature,
        signing_key=key or None,
        timestamp=stamp(message) if stamp is not None else None,
        note=note,
    )
    old = [Quad(log, T.latestTreeHead, IRI.trusted(head.iri), log)] if head is not None else []
    for writer, (seal, _) in moved.items():
        if writer in logged and logged[writer][0] != seal:
            old.append(Quad(log, T.loggedSeal, IRI.trusted(logged[writer][0]), log))
    return event, old


_SEAL_IRI = re.compile(r":seal:([^:]+):(\d+)$")


def _chain_position(ledger: IRI, seal: str) -> tuple[str, int] | None:
    """``(writer, sequence)`` of a seal IRI minted by ``seal_iri``, else None (a seal
    written before chains existed)."""
    if not seal.startswith(f"{ledger}:seal:"):
        return None
    match = _SEAL_IRI.search(seal)
    return (match.group(1), int(match.group(2))) if match else None


def _logged_tips(store: Store, log: IRI, ledger: IRI) -> dict[str, tuple[str, int]]:
    """Per writer, the newest of its seals in the log (``trails:loggedSeal`` pointers)."""
    result = store.query(_TIPS, {"log": log})
    assert isinstance(result, Solutions)
    tips: dict[str, tuple[str, int]] = {}
    for row in result:
        place = _chain_position(ledger, str(row["tip"]))
        if place is not None and place[1] > tips.get(place[0], ("", 0))[1]:
            tips[place[0]] = (str(row["tip"]), place[1])
    return tips


def _tips_after(
    ledger: IRI, logged: dict[str, tuple[str, int]], appended: list[str]
) -> dict[str, tuple[str, int]]:
    """The writers whose newest logged seal moves with ``appended``, and to which seal."""
    moved: dict[str, tuple[str, int]] = {}
    for seal in appended:
        place = _chain_position(ledger, seal)
        if place is None:
            continue
        best = moved.get(place[0]) or logged.get(place[0]) or ("", 0)
        if place[1] > best[1]:
            moved[place[0]] = (seal, place[1])
    return moved


def _unlogged_by_scan(store: Store, ledger: IRI, log: IRI) -> list[tuple[str, str]]:
    """Every seal of the ledger not in the log, oldest first (O(seals): the first append)."""
    result = store.query(_UNLOGGED, {"ledger": ledger, "log": log})
    assert isinstance(result, Solutions)
    found: dict[str, str] = {}
    for row in result:
        seal_hash = row["hash"]
        if isinstance(seal_hash, Literal):
            found.setdefault(str(row["seal"]), seal_hash.value)
    return list(found.items())


def _unlogged_by_chain(
    store: Store, ledger: IRI, logged: dict[str, tuple[str, int]], tips: list[tuple[IRI, str]]
) -> list[tuple[str, str]]:
    """The seals after each writer's newest logged seal, up to the tip the checkpoint
    verified, read one by one (O(new seals)), oldest first."""
    found: list[tuple[str, str, str]] = []
    for tip, _ in tips:
        place = _chain_position(ledger, str(tip))
        if place is None:
            continue
        writer, last = place
        for n in range(logged.get(writer, ("", 0))[1] + 1, last + 1):
            seal = str(tip)[: -len(str(last))] + str(n)
            result = store.query(_SEAL_ROW, {"ledger": ledger, "seal": IRI.trusted(seal)})
            assert isinstance(result, Solutions)
            rows = [(r["hash"], r["at"]) for r in result]
            seal_hash, at = rows[0] if rows else (None, None)
            if not isinstance(seal_hash, Literal):  # a gap in the chain: verification says so
                break
            found.append((at.value if isinstance(at, Literal) else "", seal, seal_hash.value))
    found.sort(key=lambda f: (instant(f[0]), f[1]))
    return [(seal, seal_hash) for _, seal, seal_hash in found]


def _public_b64(key: Any) -> str:
    from trails.evidence.seal import public_key_b64

    return public_key_b64(key)


def prove_session(store: Store, minter: Minter, session: IRI) -> dict[str, Any]:
    """The inclusion proof document of a session's seals against the newest tree head.

    Raises:
        NotInLog: the session has no seal, or a seal is not in the log yet.
        StoreError: the store could not be read.
    """
    log, ledger = log_iri(minter), ledger_iri(minter)
    seals = seals_of_graph(store, ledger, session)
    if not seals:
        raise NotInLog(f"{session} has no seal (is it a session of this store, and ended?)")
    head = read_head(store, log)
    nodes = _Nodes(store, log)
    entries = []
    for seal in sorted(seals, key=lambda s: (instant(s.at), str(s.iri))):
        proved = _prove(store, log, nodes, head, seal.iri)
        if head is None or proved is None:
            raise NotInLog(
                f"the seal {seal.iri} of {session} is not in the transparency log yet: "
                "`trails verify` appends new seals when it records its checkpoint"
            )
        entries.append({"seal": seal_to_json(seal), **proved})
    assert head is not None
    return {
        "format": PROOF_FORMAT,
        "session": str(session),
        "head": head.to_json(),
        "seals": entries,
    }


def _prove(
    store: Store, log: IRI, nodes: _Nodes, head: TreeHead | None, seal: IRI
) -> dict[str, Any] | None:
    """``{"index", "path"}`` of a seal's leaf against ``head``, or None when not in it."""
    result = store.query(_LEAF_OF, {"log": log, "seal": seal})
    assert isinstance(result, Solutions)
    indexes = [int(r["i"].value) for r in result if isinstance(r["i"], Literal)]
    if head is None or not indexes or indexes[0] >= head.size:
        return None
    path = inclusion_proof(nodes, indexes[0], head.size)
    return {"index": indexes[0], "path": [p.hex() for p in path]}


def log_proofs(store: Store, minter: Minter, seals: list[IRI]) -> dict[str, Any] | None:
    """The newest tree head and the inclusion proofs of those of ``seals`` in the log (what an
    evidence bundle carries), or None when the store has no log yet.

    Raises:
        StoreError: the store could not be read.
    """
    log = log_iri(minter)
    head = read_head(store, log)
    if head is None:
        return None
    nodes = _Nodes(store, log)
    proofs = []
    for seal in sorted(seals):
        proved = _prove(store, log, nodes, head, seal)
        if proved is not None:
            proofs.append({"seal": str(seal), **proved})
    return {"format": LOG_PROOFS_FORMAT, "head": head.to_json(), "proofs": proofs}


def since_head(
    store: Store, minter: Minter, old: TreeHead, report: ProofReport, *, subject: str = ""
) -> None:
    """Whether the store's log extends ``old`` (an earlier head kept elsewhere): a consistency
    proof from ``old`` to the newest head, built from the stored nodes and checked against
    both roots. Adds findings (and what it proves) to ``report``.

    Raises:
        StoreError: the store could not be read.
    """
    log = log_iri(minter)
    subject = subject or f"tree head {old.size}@{old.at}"
    if old.log != str(log):
        report.findings.append(Finding("head", subject, f"it is a head of {old.log}, not of {log}"))
        return
    current = read_head(store, log)
    if current is None:
        report.findings.append(Finding("head", subject, "the store has no transparency log"))
        return
    if current.size < old.size:
        report.findings.append(
            Finding(
                "head",
                subject,
                f"the log holds {current.size} leaves, fewer than the {old.size} of the "
                "older head (it was cut)",
            )
        )
        return
    nodes = _Nodes(store, log)
    try:
        proof = consistency_proof(nodes, old.size, current.size)
        ok = verify_consistency(
            old.size,
            current.size,
            bytes.fromhex(old.root),
            bytes.fromhex(current.root),
            proof,
        ) and root(nodes, current.size) == bytes.fromhex(current.root)
    except (NotInLog, ValueError) as exc:
        report.findings.append(Finding("head", subject, f"no consistency proof: {exc}"))
        return
    if not ok:
        report.findings.append(
            Finding(
                "head",
                subject,
                f"the log of {current.size} leaves does not extend it: a leaf among the "
                f"first {old.size} was rewritten or removed",
            )
        )
        return
    made = f" made at {old.at}" if old.at else ""
    report.proves.append(
        f"the log ({current.size} leaves) extends the head of {old.size} leaves{made}: "
        f"consistency proof of {len(proof)} hash(es) checked"
    )


def consistency_from(store: Store, minter: Minter, old: int) -> tuple[TreeHead, list[bytes]]:
    """The newest head and the RFC 9162 consistency proof from the tree of its first ``old``
    leaves to it (O(log n) stored subtrees read).

    Raises:
        NotInLog: no log yet, ``old`` larger than the log, or a subtree it needs is gone.
        StoreError: the store could not be read.
    """
    log = log_iri(minter)
    head = read_head(store, log)
    if head is None:
        raise NotInLog("the store has no transparency log yet")
    if not 0 <= old <= head.size:
        raise NotInLog(f"the log holds {head.size} leaves: no consistency proof from {old}")
    return head, consistency_proof(_Nodes(store, log), old, head.size)


def extends(store: Store, minter: Minter, size: int, root_hex: str, what: str) -> list[Finding]:
    """Whether the store's log still holds the tree of ``size`` leaves and root ``root_hex``
    that ``what`` (a checkpoint of the ledger) recorded: the log's graph is there, not
    shorter, and a consistency proof leads from that tree to its newest head. O(log n).

    Raises:
        StoreError: the store could not be read.
    """
    log = log_iri(minter)
    current = read_head(store, log)
    if current is None:
        return [
            Finding(
                "log",
                str(log),
                f"absent, but {what} was written with its tree head of {size} leaves "
                "(the log's graph was removed)",
            )
        ]
    if current.size < size:
        return [
            Finding(
                "log",
                str(log),
                f"{current.size} leaves, fewer than the {size} {what} was written with "
                "(it was cut)",
            )
        ]
    try:
        nodes = _Nodes(store, log)
        proof = consistency_proof(nodes, size, current.size)
        ok = verify_consistency(
            size, current.size, bytes.fromhex(root_hex), bytes.fromhex(current.root), proof
        ) and root(nodes, current.size) == bytes.fromhex(current.root)
    except (NotInLog, ValueError) as exc:
        return [Finding("log", str(log), f"no consistency proof from {what}: {exc}")]
    if not ok:
        return [
            Finding(
                "log",
                str(log),
                f"it does not extend the tree of {size} leaves {what} was written with "
                "(a leaf was rewritten or removed)",
            )
        ]
    return []


def check_log(store: Store, minter: Minter) -> list[Finding]:
    """Every stored node against its leaves and every leaf against its seal's hash, and the
    newest head against the root (O(n): what a full verification does with the log).

    Raises:
        StoreError: the store could not be read.
    """
    log, ledger = log_iri(minter), ledger_iri(minter)
    findings: list[Finding] = []
    head = read_head(store, log)
    result = store.query(_LEAVES, {"log": log, "ledger": ledger})
    assert isinstance(result, Solutions)
    leaves: dict[int, set[tuple[str, str, str]]] = {}
    for found in result:
        i, h, sh = found["i"], found["h"], found.get("sealHash")
        if isinstance(i, Literal) and isinstance(h, Literal):
            seal_hash = sh.value if isinstance(sh, Literal) else ""
            leaves.setdefault(int(i.value), set()).add((str(found["seal"]), h.value, seal_hash))
    size = head.size if head is not None else 0
    if set(leaves) != set(range(len(leaves))) or len(leaves) != size:
        findings.append(
            Finding("log", str(log), f"{len(leaves)} leaves, numbered not 0..{size - 1}")
        )
    hashes: list[bytes] = []
    for index in sorted(leaves):
        claims = leaves[index]
        if len(claims) != 1:
            findings.append(Finding("log", str(node_iri(log, 0, index)), "several seals claim it"))
        seal, stored, seal_hash = min(claims)
        expected = leaf_hash(leaf_data(seal, seal_hash))
        if expected.hex() != stored:
            findings.append(
                Finding(
                    "log",
                    str(node_iri(log, 0, index)),
                    f"its hash is not the leaf of {seal} as the ledger holds it",
                )
            )
        hashes.append(expected)
    nodes = store.query(_NODES, {"log": log})
    assert isinstance(nodes, Solutions)
    stored_nodes = {str(r["n"]): r["h"].value for r in nodes if isinstance(r["h"], Literal)}
    level, row = 0, hashes
    while row:  # each level's perfect subtrees, recomputed from the one below
        for index, node in enumerate(row):
            if stored_nodes.get(str(node_iri(log, level, index))) != node.hex():
                findings.append(Finding("log", str(node_iri(log, level, index)), "altered"))
        row = [node_hash(row[j], row[j + 1]) for j in range(0, len(row) - 1, 2)]
        level += 1
    if head is not None:
        if not head.intact():
            findings.append(Finding("head", head.iri, "its fields do not hash to its hash"))
        if head.key and not head.signature:
            findings.append(
                Finding("head", head.iri, "it names its signing key but carries no signature")
            )
        if head.note and (problem := checkpoint_problem(head)) is not None:
            findings.append(Finding("head", head.iri, f"its checkpoint: {problem}"))
        top = root(from_leaves(hashes), min(head.size, len(hashes)))
        if head.size > len(hashes) or top.hex() != head.root:
            findings.append(Finding("head", head.iri, "its root is not the log's root"))
    return findings
