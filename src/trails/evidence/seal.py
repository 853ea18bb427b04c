"""Sealing: each session graph's canonical hash fixed in the ledger, in the write that ends it.

The ``Sealer`` is a recorder pre-write hook (installed by configuration, see
``trails.config.SEALER``). When the recorder is about to write a
``SessionEnded`` (or another event that completes its graph, such as the last
part of an erasure receipt: ``Event.completes_graph``), the sealer reads the graph *and* the ledger's
``trails:latestSeal`` pointer in one query, adds the end event's quads to what
it read, computes the canonical hash (``trails.evidence.canonical``, version 2)
and returns the seal's quads; the recorder writes the end and the seal in one
atomic write (one request on a SPARQL server). There is no moment where a
session has ended and is not sealed, and a sealed session costs no extra write.

A session this recorder started is not read back at all: the sealer watches
every write of the recorder (a write observer) and keeps the quads of the
session graphs it saw start, so the seal fixes exactly what the recorder wrote
(a write into that graph from elsewhere makes ``verify`` report it altered).
The ledger's pointer is then the only read: on the embedded store only when
something this sealer did not see was written since it last knew the pointer
(the store counts its changes; only this process writes there), on a server at
most once per ``HINT_TTL_S`` seconds (the sealer knows its own newest seal), so
a session costs one request per event.

The ledger format (one chain per writer, anchors between chains, message and
signature) is in ``trails.evidence.ledger``. A write to a graph that is already
sealed (``persist`` after close, a late event) gets a revision seal in the
same write (``prov:wasRevisionOf`` the previous one), so a late write is a
visible revision, never a silent mismatch.

Stores written before sealing was on (or with ``[audit] seal = false``) may
hold ended sessions without a seal: ``seal_ended_unsealed`` seals them
(recovery calls it). ``rotate_signing_key`` records a new signing key, signed
by the old one.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trails.catalogue.entries import catalogue_iri, entry_quads, start_quads
from trails.catalogue.totals import keep_up
from trails.config import Settings, load_settings
from trails.errors import ConfigError
from trails.evidence.canonical import canonical_lines, canonical_term, digest_lines
from trails.evidence.events import KeyRotated, Sealed
from trails.evidence.ledger import (
    GENESIS,
    SealRecord,
    chain_iri,
    latest_of,
    ledger_iri,
    rotation_message,
    seal_iri,
    sha256_hex,
)
from trails.prov.content import is_content_graph
from trails.prov.events import Event, SessionEnded, SessionStarted
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.base import Solutions
from trails.store.terms import IRI, BNode, Literal, Quad, Term, literal

if TYPE_CHECKING:
    from trails.prov.recorder import Recorder

__all__ = [
    "Sealer",
    "configured_signing_key",
    "install_sealer",
    "ledger_iri",
    "load_signing_key",
    "public_key_b64",
    "rotate_signing_key",
    "seal_ended_unsealed",
    "sealer_of",
]

log = logging.getLogger(__name__)

# One query, one request: the graph to seal, the ledger's pointer to its newest seals
# (with their hashes, to anchor on) and the graph's earlier seals (to revise the newest).
_READ = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?s ?p ?o ?hint ?hintHash ?prior ?priorOf ?priorAt $graph $ledger WHERE {
  { GRAPH $graph { ?s ?p ?o } }
  UNION
  { GRAPH $ledger { $ledger trails:latestSeal ?hint . OPTIONAL { ?hint trails:sealHash ?hintHash } } }
  UNION
  { GRAPH $ledger { ?prior trails:sealedGraph $graph ; prov:generatedAtTime ?priorAt .
                    OPTIONAL { ?prior prov:wasRevisionOf ?priorOf } } }
}
"""

_HINTS = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?hint ?hintHash $ledger WHERE {
  GRAPH $ledger { $ledger trails:latestSeal ?hint . OPTIONAL { ?hint trails:sealHash ?hintHash } }
}
"""

HINT_TTL_S = 30.0
"""How long a sealer over a server trusts the ledger pointer it last read."""

_SEALED = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH $ledger { ?seal trails:sealedGraph $graph } }
"""

_ENDED_UNSEALED = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g $ledger WHERE {
  GRAPH ?g { ?g a trails:Session ; prov:endedAtTime ?ended }
  FILTER NOT EXISTS { GRAPH $ledger { ?seal trails:sealedGraph ?g } }
}
"""


@dataclass
class _Pending:
    sequence: int
    seal: IRI
    seal_hash: str
    graphs: dict[IRI, IRI]


class Sealer:
    """A recorder pre-write hook that seals session graphs in the write that ends them.

    Args:
        signing_key: an Ed25519 private key to sign seals with, or None.
        writer: this writer's id (default: a random one; one chain per sealer).

    The chain's state (its newest seal) lives in memory, so sealing never reads
    the ledger beyond the one ``trails:latestSeal`` pointer; it advances only
    after the recorder's write succeeded.
    """

    def __init__(self, signing_key: Any = None, writer: str | None = None) -> None:
        self.signing_key = signing_key
        self.public_key = public_key_b64(signing_key) if signing_key is not None else None
        self.writer = writer or uuid.uuid4().hex
        self.sequence = 0
        self.head: IRI | None = None
        self.head_hash = GENESIS
        self._sealed: dict[IRI, IRI] = {}
        self._unsealed: set[IRI] = set()
        self._pending: _Pending | None = None
        self._lock = threading.RLock()
        # the graphs of sessions started here: (subject, predicate, object) of each quad
        self._graphs: dict[IRI, set[tuple[Any, Any, Any]]] = {}
        # the catalogue entries written with those sessions' starts (not written again)
        self._starts: dict[IRI, frozenset[Quad]] = {}
        self._terms: dict[Term, str] = {}  # canonical text of the terms that repeat
        self.tracking = False
        """Keeping the graphs of sessions started here (``attach`` wires the observer)."""
        self._hints: dict[IRI, str] = {}
        self._hints_read = -1.0
        # an embedded store, and how many changes it had made when the hints were current
        self._hints_at: tuple[object, int] | None = None
        self._ledgers: tuple[Minter, IRI] | None = None

    # -- the hook ---------------------------------------------------------------

    def __call__(
        self, recorder: Recorder, event: Event, quads: list[Quad]
    ) -> tuple[list[Quad], list[Quad]]:
        with self._lock:
            self._pending = None
            ledger = self._ledger(recorder)
            if isinstance(event, Sealed | KeyRotated) or event.graph == ledger:
                return [], []
            if isinstance(event, SessionStarted):
                self._unsealed.add(event.graph)  # a new graph: nothing to revise
                start = self.start_summary_quads(recorder, event)
                if self.tracking:
                    self._graphs.setdefault(event.graph, set())  # filled by observe()
                    self._starts[event.graph] = frozenset(start)
                return start, []
            if isinstance(event, SessionEnded) or event.completes_graph:
                targets = [event.graph]
            else:
                written = {q[3] for q in quads}
                written.add(event.graph)
                targets = sorted(
                    g
                    for g in written
                    if g not in self._unsealed
                    and not is_content_graph(g)
                    and self._is_sealed(recorder, ledger, g)
                )
                if not targets:  # the common case: an event of a session still open
                    return [], []
            add: list[Quad] = []
            remove: list[Quad] = []
            pending = _Pending(self.sequence, self.head or IRI.trusted(""), self.head_hash, {})
            for graph in targets:
                more, less = self._seal_quads(recorder, ledger, graph, quads, pending=pending)
                add.extend(more)
                remove.extend(less)
            self._pending = pending if pending.graphs else None
            return add, remove

    def _ledger(self, recorder: Recorder) -> IRI:
        """The ledger's IRI under ``recorder``'s minter (made once per minter)."""
        minter = recorder.minter
        cached = self._ledgers
        if cached is None or cached[0] is not minter:
            cached = self._ledgers = (minter, ledger_iri(minter))
        return cached[1]

    def written(self, recorder: Recorder, event: Event) -> None:
        """Advance the chain after the recorder's write succeeded (a recorder listener)."""
        with self._lock:
            pending, self._pending = self._pending, None
            if pending is None:
                return
            self.sequence, self.head, self.head_hash = (
                pending.sequence,
                pending.seal,
                pending.seal_hash,
            )
            self._sealed.update(pending.graphs)
            self._unsealed.difference_update(pending.graphs)
            for graph in pending.graphs:
                self._graphs.pop(graph, None)
                self._starts.pop(graph, None)
            self._hints = {pending.seal: pending.seal_hash}
            self._hints_at = _changes(recorder.store)
        # a session ended: the days that are over get their cost totals (once a day, bounded)
        keep_up(recorder.store, recorder.minter)

    def attach(self, recorder: Recorder) -> None:
        """Install on ``recorder``: the pre-write hook, its after-write step, and the
        write observer that lets it seal the sessions it saw start without reading them."""
        recorder.add_prewrite(self, on_written=self.written)
        recorder.add_write_observer(self.observe)
        self.tracking = True

    def track(self, graph: IRI) -> None:
        """Seal ``graph`` from what this recorder writes to it from now on, without reading
        it back: for a writer that starts session graphs in writes of its own (the OTLP
        receiver writes a batch's new sessions with their spans, through ``write_quads``).

        Call it just before the write that starts ``graph`` (a graph that does not exist
        yet), and ``forget`` it when that write failed: a write that raised may still
        have been committed, so the seal then reads the graph as stored.
        """
        with self._lock:
            if self.tracking:
                self._unsealed.add(graph)  # a new graph: nothing to revise
                self._graphs.setdefault(graph, set())

    def forget(self, graphs: Sequence[IRI]) -> None:
        """Stop keeping ``graphs`` (their seal reads them from the store)."""
        with self._lock:
            for graph in graphs:
                self._graphs.pop(graph, None)
                self._starts.pop(graph, None)

    def observe(self, recorder: Recorder, added: Sequence[Quad], removed: Sequence[Quad]) -> None:
        """Keep the quads of the session graphs this recorder started (a write observer),
        and the ledger pointer known current across a write that did not touch it."""
        if self._hints_at is not None:
            # Only a seal moves the pointer, and this recorder's seals are this sealer's
            # (``written`` has already noted them): so a write of this recorder that
            # came right after the one the pointer was known at leaves it current.
            with self._lock:
                at = self._hints_at
                if at is not None and at == _changes(recorder.store, -1):
                    self._hints_at = (at[0], at[1] + 1)
        if not self._graphs:
            return
        with self._lock:
            graphs = self._graphs
            for s, p, o, g in removed:
                kept = graphs.get(g)
                if kept is not None:
                    kept.discard((s, p, o))
            for s, p, o, g in added:
                kept = graphs.get(g)
                if kept is not None:
                    kept.add((s, p, o))

    def sealed_by(self, graph: IRI) -> IRI | None:
        """The newest seal this sealer wrote of ``graph`` (None: it sealed none)."""
        with self._lock:
            return self._sealed.get(graph)

    def _is_sealed(self, recorder: Recorder, ledger: IRI, graph: IRI) -> bool:
        if graph in self._sealed:
            return True
        if graph in self._unsealed or graph == ledger:
            return False
        sealed = bool(recorder.store.query(_SEALED, {"ledger": ledger, "graph": graph}))
        if not sealed:
            self._unsealed.add(graph)
        return sealed

    def _seal_quads(
        self,
        recorder: Recorder,
        ledger: IRI,
        graph: IRI,
        new: list[Quad],
        *,
        pending: _Pending,
        gone: frozenset[tuple[Any, ...]] = frozenset(),
    ) -> tuple[list[Quad], list[Quad]]:
        kept = self._graphs.get(graph)
        priors: list[SealRecord] = []
        mine = [(q[0], q[1], q[2]) for q in new if q.graph == graph]  # this write's, in graph
        if kept is not None and not gone:  # started here: what it holds is what this recorder wrote
            stored: list[tuple[Any, ...]] = list(kept)
            hints = self._pointer(recorder, ledger)
            unique = _lines(self._terms, [kept, mine], f"<{graph}> .\n")
        else:
            stored, hints, priors = _read(recorder, ledger, graph)
            if gone:
                stored = [t for t in stored if t not in gone]
            self._hints, self._hints_read = dict(hints), time.monotonic()
            self._hints_at = _changes(recorder.store)
            unique = set(canonical_lines(stored, graph, version=2))
            unique.update(canonical_lines(mine, graph, version=2))
        graph_hash, count = digest_lines(unique)

        n = pending.sequence + 1
        previous = pending.seal if pending.sequence else None
        previous_hash = pending.seal_hash if pending.sequence else GENESIS
        anchors = tuple(sorted((str(h), hh) for h, hh in hints.items() if h != previous and hh))
        revision_of = self._sealed.get(graph) or _newest(priors)
        seal = seal_iri(ledger, self.writer, n)
        chain = chain_iri(ledger, self.writer)
        at = datetime.now(UTC)
        record = SealRecord(
            iri=seal,
            sequence=n,
            graph=graph,
            graph_hash=graph_hash,
            quad_count=count,
            at=literal(at).value,
            previous_hash=previous_hash,
            seal_hash="",
            previous=previous,
            revision_of=revision_of,
            signing_key=self.public_key,
            chain=chain,
            anchor_hashes=[hh for _, hh in anchors],
        )
        seal_hash = record.recomputed_hash()
        signature = None
        if self.signing_key is not None:
            raw = self.signing_key.sign(seal_hash.encode("ascii"))
            signature = base64.b64encode(raw).decode("ascii")
        event = Sealed(
            session=graph,
            ledger=ledger,
            seal=seal,
            chain=chain,
            writer=self.writer,
            sequence=n,
            graph_hash=graph_hash,
            quad_count=count,
            at=at,
            previous=previous,
            previous_hash=previous_hash,
            anchors=anchors,
            seal_hash=seal_hash,
            revision_of=revision_of,
            signature=signature,
            signing_key=self.public_key,
        )
        add = recorder.quads(event)
        add.append(Quad(ledger, T.latestSeal, seal, ledger))
        remove = [Quad(ledger, T.latestSeal, h, ledger) for h in hints]
        pending.sequence, pending.seal, pending.seal_hash = n, seal, seal_hash
        pending.graphs[graph] = seal
        more, less = self.summary_quads(recorder, graph, stored, mine)
        add.extend(more)
        remove.extend(less)
        return add, remove

    def _pointer(self, recorder: Recorder, ledger: IRI) -> dict[IRI, str]:
        """The ledger's newest-seal pointer: on an embedded store read again only when
        something this sealer did not see was written since; on a server, unless read lately."""
        now = time.monotonic()
        at = _changes(recorder.store)
        if at is not None:
            if at == self._hints_at:
                return dict(self._hints)
        elif self._hints_read >= 0 and now - self._hints_read < HINT_TTL_S:
            return dict(self._hints)
        result = recorder.store.query(_HINTS, {"ledger": ledger})
        assert isinstance(result, Solutions)
        hints: dict[IRI, str] = {}
        for row in result:
            h = row.get("hintHash")
            hints[IRI.trusted(str(row["hint"]))] = h.value if isinstance(h, Literal) else ""
        self._hints, self._hints_read, self._hints_at = dict(hints), now, at
        return hints

    def summary_quads(
        self,
        recorder: Recorder,
        graph: IRI,
        stored: list[tuple[Any, ...]],
        mine: list[tuple[Any, ...]],
    ) -> tuple[list[Quad], list[Quad]]:
        """``(add, remove)`` to write with the seal, atomically with the session's end: the
        session's catalogue entry (``trails.catalogue.entries``), built from the graph as
        read (``stored``: subject, predicate, object rows) and what this write adds to it
        (``mine``: the same rows). When the graph had already ended (a late write, a
        recovery seal), the stored entry is read and replaced; at a first end it only
        grows from its start (what this sealer wrote with the start is not written again)."""
        ended = PROV.endedAtTime
        ended_before = any(s == graph for s, p, _ in stored if p == ended)
        try:
            add, remove = entry_quads(
                recorder.store,
                graph,
                [*stored, *mine],
                catalogue_iri(recorder.minter),
                is_sealed=True,
                replace=ended_before,
            )
        except Exception:  # the catalogue must never cost the seal (rebuild repairs it)
            log.exception("the catalogue entry of %s was not written", graph)
            return [], []
        started = None if ended_before else self._starts.get(graph)
        if started:  # a first end of a session started here: its start wrote these
            add = [q for q in add if q not in started]
        return add, remove

    def start_summary_quads(self, recorder: Recorder, event: SessionStarted) -> list[Quad]:
        """The catalogue entry of a session that starts, written with its start."""
        minter = recorder.minter
        # the identifier, never the caller's label: that is content (erasure removes it)
        label = f"session {minter.session_id(event.graph)}"
        principal = minter.agent(event.principal)
        catalogue = catalogue_iri(minter)
        return start_quads(
            event.graph,
            principal,
            event.started,
            label=label,
            catalogue=catalogue,
            principal_id=literal(event.principal),
        )

    # -- sealing outside an event -------------------------------------------------

    def seal(self, recorder: Recorder, graph: IRI) -> IRI:
        """Seal ``graph`` now, in a write of its own (for graphs ended without a seal).

        Args:
            recorder: the recorder (its store and minter).
            graph: the graph to seal.

        Returns:
            The new seal's IRI.

        Raises:
            StoreError: the graph could not be read or the seal not written.
        """
        ledger = ledger_iri(recorder.minter)
        with recorder.locked(), self._lock:
            pending = _Pending(self.sequence, self.head or IRI.trusted(""), self.head_hash, {})
            add, remove = self._seal_quads(recorder, ledger, graph, [], pending=pending)
            recorder.store.write(add, remove=remove)
            self._pending = pending
            self.written(recorder, SessionEnded(session=graph, ended=datetime.now(UTC)))
            return pending.seal

    def reseal(self, recorder: Recorder, graph: IRI, remove: list[Quad]) -> IRI:
        """Remove ``remove`` from the sealed ``graph`` and write its revision seal, in one
        atomic write (the seal covers the graph as it is without them).

        Args:
            recorder: the recorder (its store and minter).
            graph: a sealed graph.
            remove: quads of ``graph`` to remove.

        Returns:
            The revision seal's IRI.

        Raises:
            StoreError: nothing was removed or sealed.
        """
        ledger = ledger_iri(recorder.minter)
        gone = frozenset((q.subject, q.predicate, q.object) for q in remove if q.graph == graph)
        with recorder.locked(), self._lock:
            pending = _Pending(self.sequence, self.head or IRI.trusted(""), self.head_hash, {})
            add, less = self._seal_quads(recorder, ledger, graph, [], pending=pending, gone=gone)
            recorder.store.write(add, remove=[*remove, *less])
            self._pending = pending
            self.written(recorder, SessionEnded(session=graph, ended=datetime.now(UTC)))
            return pending.seal


def _changes(store: object, offset: int = 0) -> tuple[object, int] | None:
    """``(store, changes made through it + offset)`` for an embedded store (its
    ``changes`` counts them: only this process writes there), None for a server."""
    changes = getattr(store, "changes", None)
    return (store, changes + offset) if isinstance(changes, int) else None


def _lines(terms: dict[Term, str], parts: list[Any], tail: str) -> set[str]:
    """The canonical N-Quads lines (version 2) of ``(s, p, o)`` rows, each ended by ``tail``
    (the graph): the text ``canonical_lines`` writes, with the IRIs and short literals
    that repeat (classes, predicates, labels) written once per sealer, not once per seal.

    A blank node is never looked up: no IRI has its text (an IRI has a scheme, a
    blank node label no colon), so it cannot hit an IRI's entry, and it is never stored.
    """
    if len(terms) > 1 << 16:
        terms.clear()

    def text(t: Term) -> str:
        if isinstance(t, BNode):
            return canonical_term(t)
        if isinstance(t, Literal):
            out = canonical_term(t, normalise=True)
            if len(t.value) <= 64:
                terms[t] = out
            return out
        out = terms[t] = f"<{t}>"
        return out

    known = terms.get  # a canonical text is never empty
    return {
        f"{known(s) or text(s)} {known(p) or text(p)} {known(o) or text(o)} {tail}"
        for rows in parts
        for s, p, o in rows
    }


def _read(
    recorder: Recorder, ledger: IRI, graph: IRI
) -> tuple[list[tuple[Any, ...]], dict[IRI, str], list[SealRecord]]:
    """The graph (a session not started by this recorder), the ledger's pointer and the
    graph's earlier seals, in one query."""
    result = recorder.store.query(_READ, {"graph": graph, "ledger": ledger})
    assert isinstance(result, Solutions)
    names = result.variables
    i = {n: names.index(n) for n in ("s", "p", "o", "hint", "hintHash", "prior", "priorOf")}
    i["priorAt"] = names.index("priorAt")
    stored: list[tuple[Any, ...]] = []
    hints: dict[IRI, str] = {}
    priors: list[SealRecord] = []
    for row in result.rows:
        if row[i["s"]] is not None:
            stored.append((row[i["s"]], row[i["p"]], row[i["o"]]))
        elif row[i["hint"]] is not None:
            h = row[i["hintHash"]]
            hints[IRI.trusted(str(row[i["hint"]]))] = h.value if isinstance(h, Literal) else ""
        elif row[i["prior"]] is not None:
            priors.append(_prior(row[i["prior"]], row[i["priorOf"]], row[i["priorAt"]], graph))
    return stored, hints, priors


def _prior(seal: Any, revision_of: Any, at: Any, graph: IRI) -> SealRecord:
    return SealRecord(
        iri=IRI.trusted(str(seal)),
        sequence=0,
        graph=graph,
        graph_hash="",
        quad_count=0,
        at=at.value if isinstance(at, Literal) else "",
        previous_hash="",
        seal_hash="",
        revision_of=IRI.trusted(str(revision_of)) if revision_of is not None else None,
    )


def _newest(priors: list[SealRecord]) -> IRI | None:
    unique = {p.iri: p for p in priors}
    newest = latest_of(list(unique.values()))
    return newest.iri if newest is not None else None


def sealer_of(recorder: Recorder) -> Sealer | None:
    """The sealer installed on ``recorder`` (``install_sealer``), or None."""
    return _installed.get(recorder)


def seal_ended_unsealed(recorder: Recorder, settings: Settings | None = None) -> list[IRI]:
    """Seal every session graph that has ended but has no seal; returns those graphs.

    For stores recorded before sealing was on, with ``[audit] seal = false``, or
    by a version of trails that sealed in a second write. Recovery calls it
    after ending interrupted sessions. Uses the recorder's sealer (installing
    one, with the configured signing key, when it has none).

    Raises:
        StoreError: the store could not be read or written.
        ConfigError: the configured signing key is unusable.
    """
    sealer = install_sealer(recorder, settings)
    ledger = ledger_iri(recorder.minter)
    result = recorder.store.query(_ENDED_UNSEALED, {"ledger": ledger})
    assert isinstance(result, Solutions)
    graphs = sorted(IRI.trusted(str(row["g"])) for row in result)
    for graph in graphs:
        sealer.seal(recorder, graph)
    return graphs


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


def public_key_b64(key: Any) -> str:
    """Base64 of the raw Ed25519 public key of a private or public key (as the ledger records it)."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    public = key.public_key() if hasattr(key, "public_key") else key
    raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def rotate_signing_key(recorder: Recorder, old_key: Any, new_key: Any) -> IRI:
    """Record in the ledger that ``new_key`` succeeds ``old_key``, signed by ``old_key``.

    A verifier that trusts the old key then trusts seals signed by the new one.
    Configure the new private key as ``[audit] signing_key`` afterwards.

    Args:
        recorder: writes the rotation to its store's ledger.
        old_key: the current Ed25519 private key.
        new_key: the next key (private or public).

    Returns:
        The rotation record's IRI.
    """
    ledger = ledger_iri(recorder.minter)
    at = datetime.now(UTC)
    from_key, to_key = public_key_b64(old_key), public_key_b64(new_key)
    rotation_hash = sha256_hex(rotation_message(from_key, to_key, literal(at).value))
    signature = base64.b64encode(old_key.sign(rotation_hash.encode("ascii"))).decode("ascii")
    rotation = Minter.part(ledger, f"rotation:{uuid.uuid4()}")
    recorder.record(
        KeyRotated(
            session=ledger,
            ledger=ledger,
            rotation=rotation,
            from_key=from_key,
            to_key=to_key,
            at=at,
            rotation_hash=rotation_hash,
            signature=signature,
        )
    )
    return rotation


_installed: weakref.WeakKeyDictionary[Any, Sealer] = weakref.WeakKeyDictionary()
_install_lock = threading.Lock()


def install_sealer(recorder: Recorder, settings: Settings | None = None) -> Sealer:
    """Make ``recorder`` seal each session in the write that ends it (once per recorder).

    The default recorder plugin (``trails.config.SEALER``). ``[audit]
    signing_key`` in trails.toml (or ``TRAILS_AUDIT_SIGNING_KEY``) names an
    Ed25519 PEM private key to sign seals with.

    Args:
        recorder: the recorder to hook into.
        settings: where to read ``[audit]`` from (default: ``load_settings()``).

    Returns:
        The sealer (the same one when called again for the same recorder).

    Raises:
        ConfigError: the signing key is configured but unusable.
    """
    with _install_lock:
        existing = _installed.get(recorder)
        if existing is not None:
            return existing
        sealer = Sealer(signing_key=configured_signing_key(settings))
        sealer.attach(recorder)
        _installed[recorder] = sealer
        return sealer


def configured_signing_key(settings: Settings | None = None) -> Any:
    """The Ed25519 private key ``[audit] signing_key`` (or ``TRAILS_AUDIT_SIGNING_KEY``)
    names, or None when none is configured.

    Raises:
        ConfigError: the key is configured but unusable.
    """
    settings = settings or load_settings()
    path = os.environ.get("TRAILS_AUDIT_SIGNING_KEY") or settings.section("audit").get(
        "signing_key"
    )
    if not path:
        return None
    if not isinstance(path, str):
        raise ConfigError("[audit] signing_key must be a path to a PEM file")
    return load_signing_key(settings.resolve_path(path))
