"""The memory operations as provenance events, and how each one reads in PROV-O.

Each operation is one event, so one atomic write, yet it touches more than one
named graph: the memory itself lives in its scope's memory graph, and the
operation is also told in the calling session's graph so the session timeline
shows it. ``emit`` therefore fills one builder per graph and hands all the
quads back together:

- ``MemoryLearned``: in the memory graph, the ``trails:Memory`` entity
  (``prov:value``, ``trails:sha256``, confidence, topic, tags, scope, validity,
  ``prov:wasGeneratedBy`` / ``prov:wasAttributedTo`` / ``prov:wasDerivedFrom``
  / ``prov:wasRevisionOf``) and a compact ``prov:Activity`` for the learn, with
  its session; when it supersedes, the old version's ``prov:invalidatedAtTime``
  and ``prov:wasInvalidatedBy`` in *its* graph; in the session graph, the learn
  as a ``trails:MemoryLearn`` (a ``trails:MemoryOperation``) that
  ``prov:generated`` the memory, and on the memory its text's digest as learned
  (``trails:learnedSha256``: the text only, not topic or tags), so the session's
  seal keeps what the unsealed memory graph's ``trails:sha256`` must stay.
- ``MemoriesLearned``: several ``MemoryLearned`` of one call, told exactly as
  each alone, in one write.
- ``MemoryForgotten``: the invalidation in the memory graph, the
  ``trails:MemoryForget`` in the session graph. Nothing is erased.
- ``MemoryRecalled``: only in the session graph: a ``trails:MemoryRecall`` that
  ``prov:used`` each memory it returned, with a ``prov:qualifiedUsage`` giving
  rank and score (the usage's time is the recall's ``prov:endedAtTime``).

Events that change memory also add a fresh ``trails:memoryRevision`` token to
the memory-state graph, in the same write: that is how another process's index
notices that memory changed (see ``trails.memory.index``).
"""

from __future__ import annotations

from datetime import datetime

from trails.prov.builder import QuadBuilder
from trails.prov.content import canonical_json
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.terms import IRI

__all__ = ["MemoriesLearned", "MemoryForgotten", "MemoryLearned", "MemoryRecalled"]


def _iri(value: str) -> IRI:
    return IRI.trusted(value)


def _other(b: QuadBuilder, graph: str) -> QuadBuilder:
    return b.sibling(_iri(graph))


def _operation(
    b: QuadBuilder,
    activity: IRI,
    cls: IRI,
    *,
    session: IRI,
    parent: str | None,
    agent_did: str,
    started: datetime,
    ended: datetime,
    label: str,
) -> None:
    """The full description of a memory operation, for the session graph."""
    b.activity(activity, cls, started, ended)
    b.types(activity, T.MemoryOperation)
    b.child_of(activity, _iri(parent) if parent else None, session)
    b.add(activity, PROV.wasAssociatedWith, b.agent(agent_did))
    b.label(activity, label)


def _stub(b: QuadBuilder, activity: IRI, session: IRI, at: datetime) -> None:
    """The operation as seen from a memory graph: an activity, its time and session."""
    b.types(activity, PROV.Activity)
    b.value(activity, PROV.startedAtTime, at)
    b.value(activity, PROV.endedAtTime, at)
    b.add(activity, T.inSession, session)


def _revision(b: QuadBuilder, head_graph: str | None, token: str | None) -> None:
    if head_graph and token:
        head = _other(b, head_graph)
        head.value(head.graph, T.memoryRevision, token)
        b.quads.extend(head.quads)


class MemoryLearned(Event):
    """A memory was learned (``memory.learn``), possibly superseding an older version."""

    activity: str
    parent: str | None
    agent_did: str
    memory: str
    memory_graph: str
    content: str
    confidence: float
    topic: str | None = None
    tags: tuple[str, ...] = ()
    scope: str
    started: datetime
    ended: datetime
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    derived_from: str | None = None
    supersedes: str | None = None
    supersedes_graph: str | None = None
    head_graph: str | None = None
    revision: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        session = self.graph
        a, m = _iri(self.activity), _iri(self.memory)
        _operation(
            b,
            a,
            T.MemoryLearn,
            session=session,
            parent=self.parent,
            agent_did=self.agent_did,
            started=self.started,
            ended=self.ended,
            label=f"learn {self.scope} memory",
        )
        b.add(a, PROV.generated, m)
        b.types(m, PROV.Entity)  # referenced from the session graph: typed there too
        mg = _other(b, self.memory_graph)
        mg.types(m, T.Memory, PROV.Entity)
        # Memory content is the data itself: it is kept whatever the content policy.
        digest = mg.content_value(m, self.content)
        # the digest of the text learned, kept where the session's seal covers it
        b.value(m, T.learnedSha256, digest)
        mg.value(m, T.confidence, float(self.confidence))
        mg.value(m, T.scope, self.scope)
        # topic and tags may name a person: content, erased with the memory's value
        mg.content_text(m, T.topic, self.topic)
        if self.tags:
            mg.content_text(m, T.tags, canonical_json(list(self.tags)))
        mg.value(m, T.validFrom, self.valid_from)
        mg.value(m, T.validUntil, self.valid_until)
        mg.add(m, PROV.wasGeneratedBy, a)
        mg.value(m, PROV.generatedAtTime, self.ended)
        mg.add(m, PROV.wasAttributedTo, mg.agent(self.agent_did))
        mg.label(m, f"{self.scope} memory")  # never the content: labels are structure
        if self.derived_from:
            mg.add(m, PROV.wasDerivedFrom, _iri(self.derived_from))
        _stub(mg, a, session, self.ended)
        if self.supersedes:
            old = _iri(self.supersedes)
            mg.add(m, PROV.wasRevisionOf, old)
            mg.add(m, PROV.wasDerivedFrom, old)
            og = _other(b, self.supersedes_graph or self.memory_graph)
            og.value(old, PROV.invalidatedAtTime, self.ended)
            og.add(old, PROV.wasInvalidatedBy, a)
            if og.graph != mg.graph:
                _stub(og, a, session, self.ended)
            mg.quads.extend(og.quads)
            b.add(a, PROV.invalidated, old)
            b.types(old, PROV.Entity)
        b.quads.extend(mg.quads)
        _revision(b, self.head_graph, self.revision)


class MemoriesLearned(Event):
    """Several memories learned by one call (``memory.learn_many``), written at once.

    Each learn is told exactly as a ``MemoryLearned`` (its own activity and
    entity); the batch adds one revision token for all of them.
    """

    learns: tuple[MemoryLearned, ...]
    head_graph: str | None = None
    revision: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        for learn in self.learns:
            if learn.graph != b.graph:
                raise ValueError("every learn of a batch belongs to the batch's session")
            learn.emit(b)
        # the agent and session statements every learn repeats are written once
        b.quads[:] = dict.fromkeys(b.quads)
        _revision(b, self.head_graph, self.revision)


class MemoryForgotten(Event):
    """A memory was forgotten: invalidated, never erased."""

    activity: str
    parent: str | None
    agent_did: str
    memory: str
    memory_graph: str
    reason: str | None = None
    at: datetime
    head_graph: str | None = None
    revision: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        session = self.graph
        a, m = _iri(self.activity), _iri(self.memory)
        _operation(
            b,
            a,
            T.MemoryForget,
            session=session,
            parent=self.parent,
            agent_did=self.agent_did,
            started=self.at,
            ended=self.at,
            label="forget memory",
        )
        b.add(a, PROV.invalidated, m)
        b.types(m, PROV.Entity)
        b.value(a, T.reason, self.reason)
        mg = _other(b, self.memory_graph)
        mg.value(m, PROV.invalidatedAtTime, self.at)
        mg.add(m, PROV.wasInvalidatedBy, a)
        _stub(mg, a, session, self.at)
        mg.value(a, T.reason, self.reason)
        b.quads.extend(mg.quads)
        _revision(b, self.head_graph, self.revision)


class MemoryRecalled(Event):
    """A recall: the query and every memory it returned, each ``prov:used``.

    ``hits`` are ``(memory IRI, score)`` pairs in rank order.
    """

    activity: str
    parent: str | None
    agent_did: str
    query: str
    scope: str
    started: datetime
    ended: datetime
    hits: tuple[tuple[str, float], ...] = ()

    def emit(self, b: QuadBuilder) -> None:
        a = _iri(self.activity)
        _operation(
            b,
            a,
            T.MemoryRecall,
            session=self.graph,
            parent=self.parent,
            agent_did=self.agent_did,
            started=self.started,
            ended=self.ended,
            label=f"recall {self.scope} memory",
        )
        b.content_text(a, T.recallQuery, self.query)
        b.value(a, T.scope, self.scope)
        for rank, (memory, score) in enumerate(self.hits, start=1):
            m = _iri(memory)
            b.types(m, PROV.Entity)
            b.add(a, PROV.used, m)
            usage = Minter.part(a, f"usage-{rank}")
            b.types(usage, PROV.Usage)
            b.add(a, PROV.qualifiedUsage, usage)
            b.add(usage, PROV.entity, m)  # its time is the recall's end: not repeated per hit
            b.value(usage, T.rank, rank)
            b.value(usage, T.score, float(score))
