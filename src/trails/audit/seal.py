"""Seals: a hash chain over session graphs, so an auditor can tell the record was not altered.

When a session ends, the ``Sealer`` (a recorder listener) computes the
canonical hash of the session's graph (``trails.audit.canonical``) and
appends a ``trails:Seal`` to the ledger graph (``<base>graph:ledger``):

- ``trails:sealedGraph`` the session graph, ``trails:graphHash`` its hash,
  ``trails:quadCount`` its size, ``prov:generatedAtTime`` when (whole seconds);
- ``trails:sealSequence`` its position in the chain, ``trails:previousSeal`` /
  ``trails:previousSealHash`` the seal before it (64 zeros for the first);
- ``trails:sealHash``: SHA-256 of ``seal_message(...)``, the seal's own fields;
- optionally ``trails:signature``, an Ed25519 signature of the seal hash, and
  ``trails:signingKey``, the public key (``[audit] signing_key`` names a PEM
  private key).

A write to a graph that is already sealed (``persist`` after close, a late
event) is sealed again: the new seal is a ``prov:wasRevisionOf`` the old one,
so a late write is a visible revision, never a silent mismatch.

Changing ``seal_message`` or the canonical form changes every hash: existing
ledgers would stop verifying. ``trails.audit.verify`` checks all of it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
import weakref
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trails.audit.canonical import graph_digest
from trails.config import Settings, load_settings
from trails.errors import ConfigError
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event, SessionEnded
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, literal, to_python

if TYPE_CHECKING:
    from trails.prov.recorder import Recorder

__all__ = [
    "GENESIS",
    "SealRecord",
    "Sealed",
    "Sealer",
    "install_sealer",
    "ledger_iri",
    "load_signing_key",
    "read_seals",
    "seal_message",
]

GENESIS = "0" * 64
"""The previous-seal hash of the first seal in a ledger."""


def ledger_iri(minter: Minter) -> IRI:
    """The ledger graph's IRI under the minter's base (``<base>graph:ledger``)."""
    return minter.graph("ledger")


def seal_message(
    sequence: int, graph: str, graph_hash: str, quad_count: int, at: str, previous: str
) -> bytes:
    """The bytes whose SHA-256 is a seal's ``trails:sealHash`` (and that a signature covers).

    Args:
        sequence: position in the chain (from 1).
        graph: the sealed graph's IRI.
        graph_hash: its canonical hash.
        quad_count: its number of quads.
        at: the seal time, as its ``xsd:dateTime`` lexical form.
        previous: the previous seal's hash (``GENESIS`` for the first).

    Returns:
        UTF-8 text, one ``key=value`` per line, after a version line.
    """
    return (
        "trails-seal/1\n"
        f"sequence={sequence}\n"
        f"graph={graph}\n"
        f"graph-hash={graph_hash}\n"
        f"quads={quad_count}\n"
        f"time={at}\n"
        f"previous={previous}\n"
    ).encode()


class Sealed(Event):
    """A seal appended to the ledger (``session`` is the sealed graph)."""

    ledger: str
    seal: str
    sequence: int
    graph_hash: str
    quad_count: int
    at: datetime
    previous: str | None = None
    previous_hash: str = GENESIS
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
        b.types(s, T.Seal, PROV.Entity)
        b.label(s, f"seal {self.sequence} of {self.session}")
        b.add(s, T.sealedGraph, IRI.trusted(self.session))
        b.value(s, T.sealSequence, self.sequence)
        b.value(s, T.graphHash, self.graph_hash)
        b.value(s, T.quadCount, self.quad_count)
        b.value(s, PROV.generatedAtTime, self.at)
        b.value(s, T.previousSealHash, self.previous_hash)
        b.value(s, T.sealHash, self.seal_hash)
        if self.previous is not None:
            b.add(s, T.previousSeal, IRI.trusted(self.previous))
        if self.revision_of is not None:
            b.add(s, PROV.wasRevisionOf, IRI.trusted(self.revision_of))
        b.value(s, T.signature, self.signature)
        b.value(s, T.signingKey, self.signing_key)


@dataclass(frozen=True)
class SealRecord:
    """A seal as read back from the ledger."""

    iri: IRI
    sequence: int
    graph: IRI
    graph_hash: str
    quad_count: int
    at: str
    previous_hash: str
    seal_hash: str
    previous: IRI | None = None
    revision_of: IRI | None = None
    signature: str | None = None
    signing_key: str | None = None

    def message(self) -> bytes:
        """The bytes this seal's hash and signature cover."""
        return seal_message(
            self.sequence, self.graph, self.graph_hash, self.quad_count, self.at, self.previous_hash
        )


_SEALS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?seal ?sequence ?graph ?hash ?count ?at ?prevHash ?sealHash ?prev ?rev ?sig ?key $ledger
WHERE {
  GRAPH $ledger {
    ?seal a trails:Seal .
    OPTIONAL { ?seal trails:sealSequence ?sequence }
    OPTIONAL { ?seal trails:sealedGraph ?graph }
    OPTIONAL { ?seal trails:graphHash ?hash }
    OPTIONAL { ?seal trails:quadCount ?count }
    OPTIONAL { ?seal prov:generatedAtTime ?at }
    OPTIONAL { ?seal trails:previousSealHash ?prevHash }
    OPTIONAL { ?seal trails:sealHash ?sealHash }
    OPTIONAL { ?seal trails:previousSeal ?prev }
    OPTIONAL { ?seal prov:wasRevisionOf ?rev }
    OPTIONAL { ?seal trails:signature ?sig }
    OPTIONAL { ?seal trails:signingKey ?key }
  }
}
"""

_NEXT_EXISTS = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH $ledger { ?seal trails:sealSequence $sequence } }
"""

_GRAPH_SEALED = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH $ledger { ?seal trails:sealedGraph $graph } }
"""


def read_seals(store: Store, ledger: IRI) -> list[SealRecord]:
    """Every seal in ``ledger``, in sequence order.

    Args:
        store: the store.
        ledger: the ledger graph.

    Returns:
        The seals. A seal missing a required field is returned with empty
        values there, so verification reports it instead of failing.
    """
    result = store.query(_SEALS, {"ledger": ledger})
    assert isinstance(result, Solutions)
    seals: list[SealRecord] = []
    for row in result:
        seq = to_python(row.get("sequence"))
        count = to_python(row.get("count"))
        seals.append(
            SealRecord(
                iri=IRI.trusted(str(row["seal"])),
                sequence=seq if isinstance(seq, int) else 0,
                graph=IRI.trusted(str(row.get("graph", ""))),
                graph_hash=_text(row.get("hash")),
                quad_count=count if isinstance(count, int) else -1,
                at=_text(row.get("at")),
                previous_hash=_text(row.get("prevHash")),
                seal_hash=_text(row.get("sealHash")),
                previous=_iri(row.get("prev")),
                revision_of=_iri(row.get("rev")),
                signature=_text(row.get("sig")) or None,
                signing_key=_text(row.get("key")) or None,
            )
        )
    seals.sort(key=lambda s: (s.sequence, s.iri))
    return seals


def _text(term: Any) -> str:
    return term.value if term is not None and hasattr(term, "value") else ""


def _iri(term: Any) -> IRI | None:
    return IRI.trusted(term) if isinstance(term, str) and term else None


def load_signing_key(path: str | Path) -> Any:
    """Read an Ed25519 private key (PEM, PKCS#8, unencrypted).

    Args:
        path: the PEM file.

    Returns:
        A ``cryptography`` ``Ed25519PrivateKey``.

    Raises:
        ConfigError: the file is missing, unreadable, or not an Ed25519 private key.
    """
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(Path(path).read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise ConfigError(f"cannot read the Ed25519 signing key {path}: {exc}") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError(f"{path} holds a {type(key).__name__}, not an Ed25519 private key")
    return key


def _public_b64(key: Any) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


# The chain head (sequence, seal IRI, seal hash) per store, shared by all sealers of a process.
_heads: weakref.WeakKeyDictionary[Any, tuple[int, IRI | None, str]] = weakref.WeakKeyDictionary()
_heads_lock = threading.RLock()


class Sealer:
    """A recorder listener that seals session graphs when they end, and reseals late writes.

    Args:
        signing_key: an Ed25519 private key to sign seals with, or None.

    The sealer knows which graphs it has sealed; for a graph it has not seen
    it asks the ledger once, so a late write from a later process (``persist``
    after close) is resealed too.
    """

    def __init__(self, signing_key: Any = None) -> None:
        self.signing_key = signing_key
        self._public = _public_b64(signing_key) if signing_key is not None else None
        self._sealed: dict[IRI, IRI] = {}
        self._known: set[IRI] = set()
        self._lock = threading.Lock()

    def __call__(self, recorder: Recorder, event: Event) -> None:
        if isinstance(event, Sealed):
            return
        if isinstance(event, SessionEnded):
            self.seal(recorder, event.graph)
            return
        for graph in _graphs_written(recorder, event):
            if self._is_sealed(recorder, graph):
                self.seal(recorder, graph)

    def _is_sealed(self, recorder: Recorder, graph: IRI) -> bool:
        if graph in self._sealed:
            return True
        if graph in self._known:
            return False
        self._known.add(graph)
        ledger = ledger_iri(recorder.minter)
        if graph == ledger:
            return False
        return bool(recorder.store.query(_GRAPH_SEALED, {"ledger": ledger, "graph": graph}))

    def seal(self, recorder: Recorder, graph: IRI) -> Sealed:
        """Seal ``graph`` now: hash it and append a seal to the ledger.

        Args:
            recorder: the recorder (its store, minter and listeners).
            graph: the graph to seal.

        Returns:
            The recorded seal event.

        Raises:
            StoreError: the graph could not be read or the seal not written.
        """
        store = recorder.store
        ledger = ledger_iri(recorder.minter)
        with _heads_lock:
            sequence, previous, previous_hash = self._head(store, ledger)
            graph_hash, count = graph_digest(store, graph)
            at = datetime.now(UTC).replace(microsecond=0)
            at_text = literal(at).value
            n = sequence + 1
            message = seal_message(n, graph, graph_hash, count, at_text, previous_hash)
            seal_hash = _sha256(message)
            signature = None
            if self.signing_key is not None:
                raw = self.signing_key.sign(seal_hash.encode("ascii"))
                signature = base64.b64encode(raw).decode("ascii")
            seal = Minter.part(ledger, f"seal:{n}")
            revision_of = self._sealed.get(graph) or self._last_seal_of(store, ledger, graph)
            event = Sealed(
                session=graph,
                ledger=ledger,
                seal=seal,
                sequence=n,
                graph_hash=graph_hash,
                quad_count=count,
                at=at,
                previous=previous,
                previous_hash=previous_hash,
                seal_hash=seal_hash,
                revision_of=revision_of,
                signature=signature,
                signing_key=self._public,
            )
            recorder.record(event)
            _heads[store] = (n, seal, seal_hash)
            self._sealed[graph] = seal
            self._known.add(graph)
        return event

    @staticmethod
    def _head(store: Store, ledger: IRI) -> tuple[int, IRI | None, str]:
        cached = _heads.get(store)
        if cached is not None:
            nxt = literal(cached[0] + 1)
            if not store.query(_NEXT_EXISTS, {"ledger": ledger, "sequence": nxt}):
                return cached
        seals = read_seals(store, ledger)
        if not seals:
            return 0, None, GENESIS
        last = seals[-1]
        return last.sequence, last.iri, last.seal_hash

    @staticmethod
    def _last_seal_of(store: Store, ledger: IRI, graph: IRI) -> IRI | None:
        if not store.query(_GRAPH_SEALED, {"ledger": ledger, "graph": graph}):
            return None
        mine = [s for s in read_seals(store, ledger) if s.graph == graph]
        return mine[-1].iri if mine else None


def _graphs_written(recorder: Recorder, event: Event) -> list[IRI]:
    """The graphs an event wrote to: its own, plus any other for events from outside
    ``trails.prov.events`` (memory operations write to a memory graph and the session's)."""
    if type(event).__module__ == SessionEnded.__module__:
        return [event.graph]
    return sorted({q.graph for q in recorder.quads(event)} | {event.graph})


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_installed: weakref.WeakKeyDictionary[Any, Sealer] = weakref.WeakKeyDictionary()


def install_sealer(recorder: Recorder, settings: Settings | None = None) -> Sealer:
    """Make ``recorder`` seal session graphs when they end (once per recorder).

    ``[audit] signing_key`` in trails.toml (or ``TRAILS_AUDIT_SIGNING_KEY``)
    names an Ed25519 PEM private key to sign seals with.

    Args:
        recorder: the recorder to subscribe to.
        settings: where to read ``[audit]`` from (default: ``load_settings()``).

    Returns:
        The sealer (the same one when called again for the same recorder).

    Raises:
        ConfigError: the signing key is configured but unusable.
    """
    existing = _installed.get(recorder)
    if existing is not None:
        return existing
    sealer = Sealer(signing_key=_configured_key(settings))
    recorder.subscribe(sealer)
    _installed[recorder] = sealer
    return sealer


def _configured_key(settings: Settings | None) -> Any:
    settings = settings or load_settings()
    path = os.environ.get("TRAILS_AUDIT_SIGNING_KEY") or settings.section("audit").get(
        "signing_key"
    )
    if not path:
        return None
    if not isinstance(path, str):
        raise ConfigError("[audit] signing_key must be a path to a PEM file")
    return load_signing_key(settings.resolve_path(path))
