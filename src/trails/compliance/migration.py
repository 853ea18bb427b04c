"""Migration of a store written before content was kept apart from structure.

Such a store holds each content value (``prov:value``, goals, answers, persisted
arguments and results: ``trails.prov.content.CONTENT_PROPERTIES``) inside the
graph its seal covers, so erasing it would break the seal. It stays readable
(every reader looks for content in any graph) and verifiable as it is;
``migrate`` moves it to the current layout:

1. each graph holding content is checked against its latest seal first: a graph
   altered since it was sealed is left as it is and named (``refused``), so a
   migration never turns tampering into a fresh seal;
2. its content values move to its content graph, and the digests the old layout
   lacked (``trails:goalSha256``, ``trails:answerSha256``) are added, in one
   atomic write per graph; a memory's label that quoted its text is replaced;
3. a sealed graph is sealed again at once: a revision seal
   (``prov:wasRevisionOf`` the seal that had just verified), so the old seal
   stays in its chain, its hash still recomputes, and the receipt explains why
   the graph changed;
4. a ``trails:ContentMigration`` activity (who, when, which graphs, how many
   values) is recorded in a receipt graph of its own and sealed.

Running it again finds nothing to move and records nothing. Should the process
stop between a graph's move and its new seal, ``trails verify`` reports that
graph as altered; the moved values are in its content graph, nothing is lost.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from trails.evidence.canonical import graph_digest
from trails.evidence.ledger import latest_of, ledger_iri, seals_of_graph
from trails.prov.builder import QuadBuilder
from trails.prov.content import (
    CONTENT_DIGESTS,
    content_graph,
    is_content_graph,
    sha256_hex,
)
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, RDFS, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, Quad, Term

if TYPE_CHECKING:
    from trails.prov.recorder import Recorder

__all__ = ["ContentMigrated", "MigrationReceipt", "migrate"]

_VALUES = "VALUES ?p { " + " ".join(p.n3() for p in CONTENT_DIGESTS) + " }"

_WITH_CONTENT = f"SELECT DISTINCT ?g WHERE {{ {_VALUES} GRAPH ?g {{ ?s ?p ?o }} }}"

_CONTENT_IN = f"SELECT ?s ?p ?o $g WHERE {{ {_VALUES} GRAPH $g {{ ?s ?p ?o }} }}"

_MEMORY_LABELS = f"""
SELECT ?m ?label ?scope $g WHERE {{
  GRAPH $g {{ ?m a {T.Memory.n3()} ; {RDFS.label.n3()} ?label ; {T.scope.n3()} ?scope
              FILTER(STRSTARTS(?label, "memory: ")) }}
}}
"""

_ADDED_DIGESTS = (T.goal, T.answer)


@dataclass(frozen=True)
class MigrationReceipt:
    """What ``migrate`` did."""

    activity: str | None
    """The ``trails:ContentMigration`` activity (None: nothing needed moving)."""
    graph: str | None
    seal: str | None
    by: str
    at: str
    graphs: tuple[str, ...] = ()
    moved: int = 0
    resealed: tuple[str, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()
    """(graph, why) for graphs left as they were."""


class ContentMigrated(Event):
    """The receipt of a content migration (``session`` is the receipt graph)."""

    activity: str
    by: str
    started: datetime
    ended: datetime
    graphs: tuple[str, ...]
    moved: int

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        b.activity(a, T.ContentMigration, self.started, self.ended)
        b.label(a, "content moved apart from structure")
        b.add(a, PROV.wasAssociatedWith, b.agent(self.by))
        for g in self.graphs:
            b.add(a, T.migratedGraph, IRI.trusted(g))
        b.value(a, T.migratedCount, self.moved)


def _rows(store: Store, query: str, params: dict[str, Term]) -> Solutions:
    result = store.query(query, params)
    assert isinstance(result, Solutions)
    return result


def _move(store: Store, graph: IRI) -> tuple[list[Quad], list[Quad]]:
    """(add, remove) moving ``graph``'s content to its content graph."""
    cg = content_graph(graph)
    add: list[Quad] = []
    remove: list[Quad] = []
    for row in _rows(store, _CONTENT_IN, {"g": graph}):
        s, p, o = IRI.trusted(str(row["s"])), IRI.trusted(str(row["p"])), row["o"]
        remove.append(Quad(s, p, o, graph))
        add.append(Quad(s, p, o, cg))
        if p in _ADDED_DIGESTS and isinstance(o, Literal):
            add.append(Quad(s, CONTENT_DIGESTS[p], Literal(sha256_hex(o.value)), graph))
    for row in _rows(store, _MEMORY_LABELS, {"g": graph}):
        m, label, scope = IRI.trusted(str(row["m"])), row["label"], row["scope"]
        remove.append(Quad(m, RDFS.label, label, graph))
        name = scope.value if isinstance(scope, Literal) else "a"
        add.append(Quad(m, RDFS.label, Literal(f"{name} memory"), graph))
    return add, remove


def migrate(recorder: Recorder, *, by: str, seal: bool = True) -> MigrationReceipt:
    """Move every graph's content to its content graph, re-seal, and record a sealed receipt.

    Args:
        recorder: the store's recorder (its sealer seals again what was sealed).
        by: who migrates (a principal's DID); recorded.
        seal: re-seal sealed graphs and seal the receipt (default).

    Returns:
        The receipt (``activity`` None when there was nothing to move).

    Raises:
        StoreError: the store could not be read or written.
    """
    from trails.evidence.seal import install_sealer

    store, minter = recorder.store, recorder.minter
    ledger = ledger_iri(minter)
    started = datetime.now(UTC)
    candidates = sorted(
        IRI.trusted(str(row["g"]))
        for row in _rows(store, _WITH_CONTENT, {})
        if not is_content_graph(str(row["g"])) and str(row["g"]) != ledger
    )
    sealer = install_sealer(recorder) if seal else None
    moved, done, resealed = 0, [], []
    refused: list[tuple[str, str]] = []
    for graph in candidates:
        latest = latest_of(seals_of_graph(store, ledger, graph))
        if latest is not None:
            digest, count = graph_digest(store, graph, version=latest.version)
            if digest != latest.graph_hash or count != latest.quad_count:
                refused.append(
                    (
                        str(graph),
                        "altered since it was sealed (trails verify names it); left as it is",
                    )
                )
                continue
        add, remove = _move(store, graph)
        with recorder.locked():
            store.write(add, remove=remove)
        moved += sum(1 for q in remove if q.predicate in CONTENT_DIGESTS)
        done.append(str(graph))
        if latest is not None and sealer is not None:
            sealer.seal(recorder, graph)
            resealed.append(str(graph))
    at = started.isoformat()
    if not done:
        return MigrationReceipt(None, None, None, by, at, refused=tuple(refused))
    receipt_graph = minter.graph(f"migration/{uuid.uuid4()}")
    activity = Minter.part(receipt_graph, "migration")
    recorder.record(
        ContentMigrated(
            session=receipt_graph,
            activity=activity,
            by=by,
            started=started,
            ended=datetime.now(UTC),
            graphs=tuple(done),
            moved=moved,
        )
    )
    seal_iri = str(sealer.seal(recorder, receipt_graph)) if sealer is not None else None
    return MigrationReceipt(
        str(activity),
        str(receipt_graph),
        seal_iri,
        by,
        at,
        tuple(done),
        moved,
        tuple(resealed),
        tuple(refused),
    )
