"""Verification checkpoints: what a successful ``trails verify`` checked, recorded for the next one.

Rehashing every sealed graph costs time proportional to the whole store.
After a verification finds nothing, it records a ``trails:VerificationCheckpoint``
in the ledger graph: for each seal chain, the newest seal it verified (IRI and
hash), how many seals and graphs it checked, the mode (``full`` or
``incremental``) and the previous checkpoint's hash. The checkpoint's own hash
(``trails:checkpointHash``) is SHA-256 of ``CheckpointRecord.message()``:

    trails-verify-checkpoint/1
    time=<prov:generatedAtTime, canonical lexical form>
    mode=<full|incremental>
    seals=<seals verified>
    graphs=<graphs verified>
    verified=<seal IRI>=<seal hash>,... (sorted)
    previous=<previous checkpoint's hash, 64 zeros for the first>
    last-full=<time of the last full verification> (a quick one's only; absent otherwise)
    log=<tree size> <root hash, hex> (the tree head written with it; absent before the
        transparency log existed)

and, when ``[audit] signing_key`` is configured, an Ed25519 signature over
that hash (``trails:signature``). The ledger's ``trails:latestCheckpoint``
pointer names the newest checkpoint (read in constant time). The same write
appends the seals not yet in the transparency log and records its new signed
tree head (``trails.evidence.transparency``).

What an incremental verification does with it is in ``trails.evidence.verify``
and ``docs/audit.md``.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from trails._lazy import lazy_names
from trails.config import Settings, load_settings
from trails.errors import ConfigError
from trails.evidence.canonical import normal_lexical
from trails.evidence.ledger import GENESIS, ledger_iri, sha256_hex
from trails.evidence.timestamp import configured_stamper
from trails.evidence.transparency import extend_log, log_iri, log_origin
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, RDF, XSD, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, Quad, Term, instant, literal

if TYPE_CHECKING:
    from trails.evidence.events import VerificationCheckpointed

__all__ = [
    "CheckpointRecord",
    "VerificationCheckpointed",
    "checkpoint_message",
    "configured_origin",
    "read_checkpoint",
    "record_checkpoint",
]

FULL = "full"
INCREMENTAL = "incremental"
QUICK = "quick"
"""``VerifyReport.mode`` of a quick verification (its checkpoint records ``incremental``)."""

# the checkpoint's event is loaded by the writer that records it (``trails.evidence.events``),
# so reading a checkpoint does not build the event models; the old name resolves on first use
__getattr__, __dir__ = lazy_names(__name__, {"VerificationCheckpointed": "trails.evidence.events"})


def checkpoint_message(
    at: str,
    mode: str,
    *,
    seals: int,
    graphs: int,
    verified: list[tuple[str, str]],
    previous: str,
    last_full: str = "",
    log: tuple[int, str] | None = None,
) -> bytes:
    """The bytes a checkpoint's hash covers (see the module docstring)."""
    pairs = ",".join(f"{s}={h}" for s, h in sorted(verified))
    full = f"last-full={normal_lexical(last_full, str(XSD.dateTime))}\n" if last_full else ""
    if log is not None:
        full += f"log={log[0]} {log[1]}\n"
    return (
        "trails-verify-checkpoint/1\n"
        f"time={normal_lexical(at, str(XSD.dateTime))}\n"
        f"mode={mode}\n"
        f"seals={seals}\n"
        f"graphs={graphs}\n"
        f"verified={pairs}\n"
        f"previous={previous}\n"
        f"{full}"
    ).encode()


@dataclass
class CheckpointRecord:
    """A checkpoint as read back; ``verified`` maps each verified seal to its hash then."""

    iri: IRI
    at: str
    mode: str
    seals: int
    graphs: int
    checkpoint_hash: str
    verified: dict[IRI, str] = field(default_factory=dict)
    previous: IRI | None = None
    previous_hash: str = GENESIS
    signature: str | None = None
    last_full: str = ""
    """When the last full verification ran (recorded by a quick one)."""
    log: tuple[int, str] | None = None
    """The transparency log's size and root written with it (None before the log existed)."""
    malformed: bool = False
    """Some field is missing, repeated or unpaired (the checkpoint cannot be trusted)."""

    def message(self) -> bytes:
        return checkpoint_message(
            self.at,
            self.mode,
            seals=self.seals,
            graphs=self.graphs,
            verified=[(str(s), h) for s, h in self.verified.items()],
            previous=self.previous_hash,
            last_full=self.last_full,
            log=self.log,
        )

    def intact(self) -> bool:
        """Its fields hash to its recorded hash (it was not edited)."""
        return not self.malformed and sha256_hex(self.message()) == self.checkpoint_hash


_LATEST = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?c ?p ?o ?prevHash ?seal ?sealHash $ledger WHERE {
  GRAPH $ledger {
    $ledger trails:latestCheckpoint ?c .
    { ?c ?p ?o }
    UNION { ?c trails:previousCheckpoint ?prev . ?prev trails:checkpointHash ?prevHash }
    UNION { ?c trails:verifiedSeal ?seal . OPTIONAL { ?seal trails:sealHash ?sealHash } }
  }
}
"""


def _one(props: dict[IRI, list[Term]], p: IRI) -> str | None:
    values = props.get(p, [])
    if len(values) != 1 or not isinstance(values[0], Literal):
        return None
    return values[0].value


def _int(text: str | None) -> int:
    try:
        return int(text) if text is not None else -1
    except ValueError:
        return -1


@dataclass
class _Read:
    props: dict[IRI, list[Term]] = field(default_factory=dict)
    previous_hashes: list[str] = field(default_factory=list)
    seal_hashes: dict[IRI, str] = field(default_factory=dict)


def _parse(iri: IRI, read: _Read) -> CheckpointRecord:
    """A checkpoint from its quads.

    The checkpoint lists its verified seals and their hashes as two sets; each
    seal is paired with the hash it holds now when that hash is among the
    recorded ones (else with nothing, and the checkpoint fails its own hash).
    """
    props = read.props
    at, mode = _one(props, PROV.generatedAtTime), _one(props, T.verificationMode)
    seals, graphs = _one(props, T.sealsVerified), _one(props, T.graphsVerified)
    hash_ = _one(props, T.checkpointHash)
    previous = props.get(T.previousCheckpoint, [])
    recorded = {h.value for h in props.get(T.verifiedSealHash, []) if isinstance(h, Literal)}
    log_size, log_root = _one(props, T.logSize), _one(props, T.logRoot)
    record = CheckpointRecord(
        iri=iri,
        at=at or "",
        mode=mode or "",
        seals=_int(seals),
        graphs=_int(graphs),
        checkpoint_hash=hash_ or "",
        previous=IRI.trusted(str(previous[0])) if len(previous) == 1 else None,
        signature=_one(props, T.signature),
        last_full=_one(props, T.lastFullVerification) or "",
        verified={s: (h if h in recorded else "") for s, h in read.seal_hashes.items()},
        log=(_int(log_size), log_root) if log_size is not None and log_root is not None else None,
    )
    record.malformed = (
        any(v is None for v in (at, mode, seals, graphs, hash_))
        or (log_size is None) != (log_root is None)
        or len(props.get(T.logSize, [])) > 1
        or len(props.get(T.logRoot, [])) > 1
        or len(previous) > 1
        or len(recorded) != len(props.get(T.verifiedSeal, []))
        or (record.previous is not None and len(read.previous_hashes) != 1)
    )
    if record.previous is not None and len(read.previous_hashes) == 1:
        record.previous_hash = read.previous_hashes[0]
    return record


def read_checkpoint(store: Store, ledger: IRI) -> CheckpointRecord | None:
    """The checkpoint the ledger's ``trails:latestCheckpoint`` names, or None.

    One query reading that one checkpoint (a few quads), in time independent of
    the ledger's size. Several pointers (two verifications recorded at once)
    pick the newest.

    Raises:
        StoreError: the store could not be read.
    """
    result = store.query(_LATEST, {"ledger": ledger})
    assert isinstance(result, Solutions)
    found: dict[IRI, _Read] = {}
    for row in result:
        read = found.setdefault(IRI.trusted(str(row["c"])), _Read())
        if "prevHash" in row:
            previous = row["prevHash"]
            read.previous_hashes.append(previous.value if isinstance(previous, Literal) else "")
        elif "seal" in row:
            current = row.get("sealHash")
            read.seal_hashes[IRI.trusted(str(row["seal"]))] = (
                current.value if isinstance(current, Literal) else ""
            )
        elif "p" in row:
            read.props.setdefault(IRI.trusted(str(row["p"])), []).append(row["o"])
    records = [
        _parse(c, read)
        for c, read in found.items()
        if T.VerificationCheckpoint in read.props.get(RDF.type, [])
    ]
    if not records:
        return None
    return max(records, key=lambda r: (instant(r.at), r.iri))


def record_checkpoint(
    recorder: Any,
    *,
    mode: str,
    seals: int,
    graphs: int,
    verified: list[tuple[IRI, str]],
    previous: CheckpointRecord | None,
    signing_key: Any = None,
    last_full: str = "",
) -> IRI:
    """Write a checkpoint and move the ledger's pointer to it, in one atomic write.

    Args:
        recorder: a ``trails.prov.Recorder`` over the verified store.
        mode: ``"full"`` or ``"incremental"``.
        seals: how many seals were verified.
        graphs: how many sealed graphs were verified.
        verified: the newest seal of each chain, with its hash.
        previous: the checkpoint this verification started from (None for the first).
        signing_key: an Ed25519 private key to sign the checkpoint's hash with, or None.
        last_full: for a quick verification, when the last full one ran (kept, signed).

    Returns:
        The checkpoint's IRI.

    Raises:
        StoreError: the write failed.
    """
    from trails.evidence.events import VerificationCheckpointed  # a writer's (module docstring)

    if mode not in (FULL, INCREMENTAL):
        raise ValueError(f"mode must be {FULL!r} or {INCREMENTAL!r}, not {mode!r}")
    minter: Minter = recorder.minter
    ledger = ledger_iri(minter)
    at = datetime.now(UTC)
    previous_hash = previous.checkpoint_hash if previous is not None else GENESIS
    pairs = [(str(s), h) for s, h in verified]
    remove = []
    if previous is not None:
        remove.append(Quad(ledger, T.latestCheckpoint, previous.iri, ledger))
    stamp = configured_stamper()
    origin = configured_origin(minter) if signing_key is not None else None
    with recorder.locked():  # the seals not yet in the transparency log, and its new head
        logged, replaced = extend_log(
            recorder.store,
            minter,
            signing_key=signing_key,
            stamp=stamp,
            tips=verified or None,
            origin=origin,
        )
        checkpoint_hash = sha256_hex(
            checkpoint_message(
                literal(at).value,
                mode,
                seals=seals,
                graphs=graphs,
                verified=pairs,
                previous=previous_hash,
                last_full=last_full,
                log=(logged.size, logged.root),
            )
        )
        signature = None
        if signing_key is not None:
            raw = signing_key.sign(checkpoint_hash.encode("ascii"))
            signature = base64.b64encode(raw).decode("ascii")
        iri = Minter.part(ledger, f"checkpoint:{uuid.uuid4()}")
        event = VerificationCheckpointed(
            session=ledger,
            ledger=ledger,
            checkpoint=iri,
            at=at,
            mode=mode,
            seals=seals,
            graphs=graphs,
            verified=tuple(sorted(pairs)),
            previous=previous.iri if previous is not None else None,
            checkpoint_hash=checkpoint_hash,
            signature=signature,
            last_full=last_full,
            log_size=logged.size,
            log_root=logged.root,
        )
        recorder.record(event, remove=[*remove, *replaced], also=[logged])
    return iri


def configured_origin(minter: Minter, settings: Settings | None = None) -> str:
    """The origin line (and note key name) of the log's checkpoints: ``[audit] log_origin``,
    else the log graph's IRI (``trails.evidence.transparency.log_origin``).

    Raises:
        ConfigError: ``log_origin`` is empty or holds a space or a ``+``.
    """
    settings = settings or load_settings()
    origin = settings.section("audit").get("log_origin")
    if origin is None:
        return log_origin(log_iri(minter))
    if not isinstance(origin, str) or not origin or any(c.isspace() or c == "+" for c in origin):
        raise ConfigError("[audit] log_origin must be a non-empty name without spaces or '+'")
    return origin
