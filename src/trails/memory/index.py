"""The in-process memory index, kept in step with the store.

The store is the truth; this index is a cache of it that makes recall fast.
It holds every memory version (current and retired, for ``as_of``) and a BM25
inverted index over their text. One index exists per store object.

Keeping it in step:

- On first use it loads every memory from the memory graphs of the store, or,
  beside an on-disk store, from the snapshot a previous process left when the
  snapshot was taken at the store's current memory revision
  (``trails.memory.snapshot``).
- This process's own learns and forgets update it directly after their write.
- Every write that changes memory also adds a fresh ``trails:memoryRevision``
  token to the memory-state graph, in the same atomic write as the change, so
  the set of tokens names the memory revision of the store: it changes with
  every memory change, and never returns to an earlier set. On a shared store
  the write also removes the tokens its writer had seen; on an exclusive one
  they are folded into one fresh token now and then (``begin_write``).
- An embedded store (``exclusive``: RocksDB locks the directory, an in-memory
  store lives in this process) cannot be changed by another process while it
  is open, so after the first load nothing is checked: a learn or recall costs
  the same at any number of memories. Writes that bypass ``trails.memory``
  within the process are not seen until ``reload()``.
- A shared store (a SPARQL server) can be changed by other processes: a learn
  or recall first reads the token set (one small indexed lookup); when it
  differs from what this index last saw, another process changed memory, and
  the index reads the memories and invalidations recorded since its watermark
  (less a margin for clock skew between machines). Writers that race each
  leave a token, so a change is never hidden from a reader.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import heapq
import json
import logging
import threading
import uuid
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from trails.errors import StoreError
from trails.memory import snapshot
from trails.memory.lexical import Bm25Index, tokenize
from trails.memory.model import Memory
from trails.prov.iri import Minter
from trails.prov.vocab import NAMESPACES, T
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, Quad, Term, literal, to_python

__all__ = ["EmbeddingRanker", "MemoryIndex", "Query", "Weights", "index_for"]

SKEW_MARGIN = timedelta(minutes=5)
COMPACT_AFTER = 1000

log = logging.getLogger(__name__)

_PREFIXES = "".join(f"PREFIX {k}: <{v}>\n" for k, v in NAMESPACES.items())

_MEMORIES = (
    _PREFIXES
    + """SELECT ?m ?content ?conf ?scope ?t ?act ?agentId ?session ?topic ?vf ?vu ?rev ?src ?since
WHERE {
  GRAPH ?g {
    ?m a trails:Memory ; trails:confidence ?conf ; trails:scope ?scope ;
       prov:generatedAtTime ?t ; prov:wasGeneratedBy ?act ; prov:wasAttributedTo ?agent .
    ?agent trails:principalId ?agentId .
    OPTIONAL { ?act trails:inSession ?session }
    OPTIONAL { GRAPH ?topicGraph { ?m trails:topic ?topic } }  # content (or, older, structure)
    OPTIONAL { ?m trails:validFrom ?vf }
    OPTIONAL { ?m trails:validUntil ?vu }
    OPTIONAL { ?m prov:wasRevisionOf ?rev }
    OPTIONAL { ?m prov:wasDerivedFrom ?src FILTER NOT EXISTS { ?m prov:wasRevisionOf ?src } }
  }
  GRAPH ?cg { ?m prov:value ?content }
  %s
}"""
)
_TAGS = (
    _PREFIXES
    + """SELECT ?m ?tag ?tags ?since WHERE {
  GRAPH ?g { ?m a trails:Memory ; prov:generatedAtTime ?t . }
  { GRAPH ?g { ?m trails:tag ?tag } } UNION { GRAPH ?cg { ?m trails:tags ?tags } }
  %s
}"""
)
_INVALIDATIONS = (
    _PREFIXES
    + """SELECT ?m ?inv ?by ?reason ?since WHERE {
  GRAPH ?g {
    ?m a trails:Memory ; prov:invalidatedAtTime ?inv ; prov:wasInvalidatedBy ?by .
    OPTIONAL { ?by trails:reason ?reason }
  }
  %s
}"""
)
_HEAD = _PREFIXES + "SELECT ?token WHERE { ?head trails:memoryRevision ?token }"


def _tag_list(text: str) -> list[Any]:
    """The tags a ``trails:tags`` value lists (the text itself if masking cut its JSON)."""
    try:
        value = json.loads(text)
    except ValueError:
        return [text]
    return value if isinstance(value, list) else [text]


@runtime_checkable
class EmbeddingRanker(Protocol):
    """An optional semantic re-ranker (off by default): similarity of texts to a query.

    ``similarity`` returns one number in 0..1 per text. Recall blends it with
    the lexical relevance of its lexical candidates (see ``Weights.semantic``).
    """

    name: str

    def similarity(self, query: str, texts: Sequence[str]) -> Sequence[float]: ...


@dataclass(frozen=True)
class Weights:
    """How recall combines its signals into one score (weights sum to 1).

    ``relevance`` (lexical or blended, normalised to 0..1 within the result
    set), ``confidence`` (0..1 as learned), ``recency`` (``0.5 ** (age /
    half_life_days)``). ``semantic`` is the share of an embedding ranker's
    similarity in relevance when one is set; ``depth`` how many lexical
    candidates it re-ranks.
    """

    relevance: float = 0.75
    confidence: float = 0.15
    recency: float = 0.10
    half_life_days: float = 30.0
    semantic: float = 0.5
    depth: int = 50


@dataclass(frozen=True)
class Query:
    """What a search looks for and who is asking (built by the service layer)."""

    text: str
    scopes: frozenset[str]
    agent_did: str
    session: str | None
    topic: str | None = None
    tags: tuple[str, ...] = ()
    min_confidence: float = 0.0
    as_of: datetime | None = None
    valid_at: datetime | None = None
    include_retired: bool = False


def _solutions(result: object) -> Solutions:
    assert isinstance(result, Solutions)
    return result


def _py(term: Term | None) -> Any:
    return to_python(term) if term is not None else None


class MemoryIndex:
    """Every memory of one store, searchable; see the module docstring.

    Args:
        store: the store the memories live in.
        minter: the minter whose base names the memory graphs.
    """

    def __init__(self, store: Store, minter: Minter) -> None:
        self.store = store
        self.minter = minter
        self.lock = threading.RLock()
        self.prefix = minter.graph("memory/")
        self.head_graph = minter.graph("memory-state")
        self.lexical = Bm25Index()
        self._docs = snapshot.Rows()
        self._by_id: dict[str, int] = {}
        self._successors: dict[str, list[str]] = {}
        self._loaded = False
        self._seen: frozenset[str] = frozenset()
        self._watermark: datetime | None = None
        self.exclusive = bool(getattr(store, "exclusive", False))
        self.snapshot_path = snapshot.path_for(store)
        self._saved: frozenset[str] | None = None
        self._compacted = False

    # -- keeping in step with the store ---------------------------------------

    def head(self) -> frozenset[str]:
        """The memory revision tokens now in the store."""
        result = _solutions(self.store.query(_HEAD, default_graph=[self.head_graph]))
        return frozenset(str(_py(t)) for t in result.column("token") if t is not None)

    def refresh(self) -> None:
        """Load on first use; afterwards read what other writers changed, if anything.

        On an exclusive (embedded) store nothing can have changed behind this
        process's back, so after the first load this does nothing.
        """
        with self.lock:
            if self._loaded and self.exclusive:
                return
            tokens = self.head()
            if not self._loaded:
                if not self._restore(tokens):
                    self._load(None)
                    if self._docs:
                        self.save_snapshot(tokens)
                self._loaded = True
            elif tokens != self._seen:
                since = self._watermark - SKEW_MARGIN if self._watermark else None
                self._load(since)
            self._seen = tokens

    def reload(self, *, use_snapshot: bool = False) -> None:
        """Drop everything and load again from the store (from a valid snapshot if asked)."""
        with self.lock:
            self.lexical = Bm25Index()
            self._docs = snapshot.Rows()
            self._by_id = {}
            self._successors = {}
            self._loaded = False
            self._watermark = None
            if not use_snapshot:
                self._saved = None
                tokens = self.head()
                self._load(None)
                self._loaded = True
                self._seen = tokens
            self.refresh()

    # -- the snapshot beside an on-disk store ---------------------------------

    def _restore(self, tokens: frozenset[str]) -> bool:
        if self.snapshot_path is None:
            return False
        state = snapshot.load(self.snapshot_path, self.minter.base, tokens)
        if state is None:
            return False
        self._docs, self.lexical = state.rows, state.lexical
        self._by_id = state.by_id
        self._successors = state.successors
        self._watermark = state.watermark
        self._saved = tokens
        return True

    def save_snapshot(self, tokens: frozenset[str] | None = None) -> bool:
        """Write the snapshot beside an on-disk store, at ``tokens`` (what this index saw).

        Returns:
            True when a snapshot was written (only for on-disk embedded stores,
            and only when the index changed since the last one).
        """
        with self.lock:
            if self.snapshot_path is None or (not self._loaded and not self._docs):
                return False
            if tokens is None:
                if self._seen == self._saved:
                    return False
                if len(self._seen) > 1:
                    with contextlib.suppress(StoreError):  # closed: the tokens stay as seen
                        self.compact()
                tokens = self._seen
            if tokens == self._saved:
                return False
            state = snapshot.Snapshot(
                by_id=self._by_id,
                rows=self._docs,
                lexical=self.lexical,
                successors=self._successors,
                watermark=self._watermark,
            )
            snapshot.save(self.snapshot_path, self.minter.base, tokens, state)
            self._saved = tokens
            return True

    def _graphs(self) -> list[IRI]:
        return [g for g in self.store.graphs() if g.startswith(self.prefix)]

    def _select(self, template: str, since: datetime | None, var: str) -> Solutions:
        # ``?since`` is projected because bound parameters must be (and stays unbound otherwise)
        graphs = self._graphs()
        if not graphs:
            return Solutions([], [])
        if since is None:
            return _solutions(self.store.query(template % "", named_graphs=graphs))
        text = template % f"FILTER(?{var} >= ?since)"
        return _solutions(self.store.query(text, {"since": literal(since)}, named_graphs=graphs))

    def _load(self, since: datetime | None) -> None:
        rows = self._select(_MEMORIES, since, "t")
        tags: dict[str, list[str]] = {}
        for row in self._select(_TAGS, since, "t"):
            # one JSON list in the content graph; memories learned earlier: one triple a tag
            listed = row.get("tags")
            found = _tag_list(str(_py(listed))) if listed is not None else [_py(row["tag"])]
            tags.setdefault(str(row["m"]), []).extend(str(t) for t in found)
        fresh: list[Memory] = []
        ids: set[str] = set()
        for row in rows:
            mid = str(row["m"])
            if mid in self._by_id or mid in ids:
                continue
            ids.add(mid)
            fresh.append(
                Memory(
                    id=mid,
                    content=str(_py(row["content"])),
                    confidence=float(_py(row["conf"])),
                    topic=_py(row.get("topic")),
                    tags=tuple(sorted(tags.get(mid, ()))),
                    scope=str(_py(row["scope"])),
                    agent_did=str(_py(row["agentId"])),
                    recorded_at=_py(row["t"]),
                    activity=str(row["act"]),
                    session=_str(row.get("session")),
                    valid_from=_py(row.get("vf")),
                    valid_until=_py(row.get("vu")),
                    derived_from=_str(row.get("src")),
                    revision_of=_str(row.get("rev")),
                )
            )
        fresh.sort(key=lambda m: m.recorded_at)
        for memory in fresh:
            self._add(memory)
        for row in self._select(_INVALIDATIONS, since, "inv"):
            mid = str(row["m"])
            if mid in self._by_id and self.get(mid).invalidated_at is None:
                self._invalidate(mid, _py(row["inv"]), str(row["by"]), _py(row.get("reason")))

    def _bump(self, when: datetime) -> None:
        if self._watermark is None or when > self._watermark:
            self._watermark = when

    def _add(self, memory: Memory) -> None:
        if memory.id in self._by_id:
            return
        doc = len(self._docs)
        self._docs.append(memory)
        self._by_id[memory.id] = doc
        text = " ".join((memory.content, memory.topic or "", *memory.tags))
        self.lexical.add(doc, tokenize(text))
        self._bump(memory.recorded_at)
        if memory.revision_of:
            self._successors.setdefault(memory.revision_of, []).append(memory.id)
        if memory.revision_of and memory.revision_of in self._by_id:
            old = self._by_id[memory.revision_of]
            self._docs[old] = dataclasses.replace(self._docs[old], superseded_by=memory.id)

    def _invalidate(self, mid: str, at: datetime, by: str, reason: str | None) -> None:
        doc = self._by_id[mid]
        old = self._docs[doc]
        successor = old.superseded_by
        if successor is None:
            successor = next(
                (s for s in self._successors.get(mid, ()) if self.get(s).activity == by), None
            )
        self._docs[doc] = dataclasses.replace(
            old, invalidated_at=at, invalidated_by=by, superseded_by=successor, reason=reason
        )
        self._bump(at)

    # -- this process's own writes --------------------------------------------

    def revision_quads(self, tokens: frozenset[str] | None = None) -> list[Quad]:
        """Revision tokens (those this index has seen by default) as quads."""
        return [
            Quad(self.head_graph, T.memoryRevision, Literal(token), self.head_graph)
            for token in (self._seen if tokens is None else tokens)
        ]

    def begin_write(self) -> tuple[str, list[Quad]]:
        """A fresh revision token for the next memory write, and the quads it must remove.

        On a shared store the write removes every token this index has seen, in
        the same atomic write. On an exclusive store nobody else reads the
        tokens while it is open, so a write only adds its token (one plain
        insert); the tokens are folded into one fresh token by a small write of
        its own at the first memory write of the process, every
        ``COMPACT_AFTER`` writes, and before a snapshot is saved. Folding always
        mints a new token, so a token set never repeats one a snapshot saw.
        """
        token = uuid.uuid4().hex
        if not self.exclusive:
            return token, self.revision_quads()
        if len(self._seen) > 1 and (not self._compacted or len(self._seen) >= COMPACT_AFTER):
            self.compact()
        self._compacted = True
        return token, []

    def compact(self) -> None:
        """Replace the revision tokens by one fresh token (exclusive stores; one small write)."""
        with self.lock:
            fresh = uuid.uuid4().hex
            self.store.write(self.revision_quads(frozenset({fresh})), remove=self.revision_quads())
            self._seen = frozenset({fresh})

    def wrote(self, token: str) -> None:
        """Record that this process wrote a change carrying ``token``."""
        self._seen = self._seen | {token} if self.exclusive else frozenset({token})
        self._compacted = True

    def learned(self, memory: Memory) -> None:
        """Add a memory this process just recorded (and retire what it superseded)."""
        with self.lock:
            self._add(memory)
            if memory.revision_of and memory.revision_of in self._by_id:
                self._invalidate(memory.revision_of, memory.recorded_at, memory.activity, None)

    def forgot(self, mid: str, at: datetime, by: str, reason: str | None) -> None:
        """Retire a memory this process just recorded as forgotten."""
        with self.lock:
            self._invalidate(mid, at, by, reason)

    # -- reading ----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, mid: object) -> bool:
        return mid in self._by_id

    def get(self, mid: str) -> Memory:
        """The memory ``mid`` (``KeyError`` when unknown)."""
        return self._docs[self._by_id[mid]]

    def visible(self, memory: Memory, q: Query) -> bool:
        """Whether ``memory`` passes the scope, agent, time and filter rules of ``q``."""
        scope = memory.scope
        if scope not in q.scopes:
            return False
        if scope == "private" and memory.agent_did != q.agent_did:
            return False
        if scope == "session" and memory.session != q.session:
            return False
        if q.as_of is not None:
            if not memory.current_at(q.as_of):
                return False
        elif memory.invalidated_at is not None and not q.include_retired:
            return False
        if memory.confidence < q.min_confidence:
            return False
        if q.topic is not None and (memory.topic or "").casefold() != q.topic.casefold():
            return False
        if q.tags and not set(q.tags).issubset(memory.tags):
            return False
        return q.valid_at is None or memory.valid_at(q.valid_at)

    def memories(self, q: Query) -> list[Memory]:
        """Every memory visible to ``q``, newest first."""
        with self.lock:
            docs = [m for m in self._docs if self.visible(m, q)]
        docs.sort(key=lambda m: m.recorded_at, reverse=True)
        return docs

    def search(
        self,
        q: Query,
        k: int,
        when: datetime,
        weights: Weights,
        ranker: EmbeddingRanker | None = None,
    ) -> list[tuple[Memory, float, float]]:
        """The ``k`` best memories for ``q``: ``(memory, score, relevance)``, best first.

        Two stages: BM25 picks the best ``max(10 k, 50)`` lexical candidates the
        asker may see (exactly, with MaxScore pruning), then relevance,
        confidence and recency are combined to rank those candidates.

        Args:
            q: the query, with the asker and filters.
            k: how many to return.
            when: the reference time for recency (``as_of`` or now).
            weights: how relevance, confidence and recency combine.
            ranker: an optional embedding re-ranker.

        Returns:
            Up to ``k`` triples sorted by score, then recency.
        """
        terms = tokenize(q.text)
        pool_size = max(weights.depth if ranker is not None else 0, 10 * k, 50)
        with self.lock:
            docs = self._docs
            if terms:
                raw = self.lexical.score(terms, depth=pool_size)
                hits, cutoff = self._visible_top(raw, q, pool_size)
                if len(hits) < k and cutoff > 0.0:
                    # many matches are not visible to this asker: look at all of them
                    hits, _ = self._visible_top(self.lexical.score(terms), q, 0)
            else:
                hits = [(m, 0.0) for m in docs if self.visible(m, q)]
        if not hits:
            return []
        top = max(s for _, s in hits) or 1.0
        relevance = {m.id: s / top for m, s in hits}
        if ranker is not None and terms:
            pool = heapq.nlargest(weights.depth, hits, key=lambda h: h[1])
            sims = list(ranker.similarity(q.text, [m.content for m, _ in pool]))
            if len(sims) != len(pool):
                raise ValueError(
                    f"ranker {ranker.name!r} returned {len(sims)} scores for {len(pool)} texts"
                )
            w = weights.semantic
            for (m, _), sim in zip(pool, sims, strict=True):
                relevance[m.id] = (1.0 - w) * relevance[m.id] + w * min(max(float(sim), 0.0), 1.0)
            hits = pool
        half_life = max(weights.half_life_days, 1e-9) * 86400.0

        def combined(memory: Memory) -> float:
            age = max((when - memory.recorded_at).total_seconds(), 0.0)
            recency = float(0.5 ** (age / half_life))
            return (
                weights.relevance * relevance[memory.id]
                + weights.confidence * memory.confidence
                + weights.recency * recency
            )

        scored = [(combined(m), m.recorded_at, m) for m, _ in hits]
        best = heapq.nlargest(k, scored, key=lambda t: (t[0], t[1]))
        return [(m, score, relevance[m.id]) for score, _, m in best]

    def _visible_top(
        self, raw: dict[int, float], q: Query, size: int
    ) -> tuple[list[tuple[Memory, float]], float]:
        """The visible matches of ``raw`` among its best ``size`` (all when 0), and the cutoff.

        The cutoff is the best raw score left out (0.0 when nothing was left out).
        """
        docs = self._docs
        if size <= 0 or len(raw) <= size:
            return [(docs[d], s) for d, s in raw.items() if self.visible(docs[d], q)], 0.0
        ordered = heapq.nlargest(size + 1, raw.items(), key=lambda x: x[1])
        cutoff = ordered[-1][1]
        kept = [(docs[d], s) for d, s in ordered[:-1] if self.visible(docs[d], q)]
        return kept, cutoff

    def chain(self, mid: str) -> list[Memory]:
        """Every version of ``mid``'s fact, oldest first (follows ``prov:wasRevisionOf``)."""
        with self.lock:
            start = self.get(mid)
            seen = {start.id}
            older: list[Memory] = []
            current = start
            while current.revision_of and current.revision_of in self._by_id:
                if current.revision_of in seen:
                    break
                current = self.get(current.revision_of)
                seen.add(current.id)
                older.append(current)
            newer: list[Memory] = []
            current = start
            while current.superseded_by and current.superseded_by in self._by_id:
                if current.superseded_by in seen:
                    break
                current = self.get(current.superseded_by)
                seen.add(current.id)
                newer.append(current)
        return [*reversed(older), start, *newer]


def _str(term: Term | None) -> str | None:
    return str(term) if term is not None else None


_indexes: weakref.WeakKeyDictionary[Store, MemoryIndex] = weakref.WeakKeyDictionary()
_indexes_lock = threading.Lock()


def _save_snapshots() -> None:
    """At exit: leave a snapshot beside each on-disk store whose index changed."""
    with _indexes_lock:
        indexes = list(_indexes.values())
    for index in indexes:
        if index.snapshot_path is None or not index._loaded:
            continue
        if not index.snapshot_path.parent.is_dir():  # the store was deleted
            continue
        try:
            index.save_snapshot()
        except Exception:  # exiting: a snapshot is an optimisation, never an error
            log.exception("could not save the memory index snapshot of %r", index.store)


atexit.register(_save_snapshots)


def index_for(store: Store, minter: Minter) -> MemoryIndex:
    """The memory index of ``store`` (created, not yet loaded, on first use)."""
    with _indexes_lock:
        index = _indexes.get(store)
        if index is None or index.minter.base != minter.base:
            index = MemoryIndex(store, minter)
            _indexes[store] = index
        return index
