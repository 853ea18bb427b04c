"""The memory operations against a ``Context``: validate, write one event, update the index.

These functions do the work behind the ``memory.*`` capabilities. Each one
checks every argument first (``MemoryInputError`` names the bad one, and
nothing is written), then records exactly one event, then updates the
process's index. The capability layer (``trails.memory.api``) runs them
inside a recorded invocation, so the operation's activity is
``prov:wasInformedBy`` that invocation.

Graphs: shared memories live in ``<base>graph:memory/shared``, an agent's
private ones in ``<base>graph:memory/private/<did>``, a session's in
``<base>graph:memory/session/<session id>``.

Configuration (``[memory]`` in trails.toml): ``max_content_chars``, the
ranking ``weights`` (``relevance``, ``confidence``, ``recency``,
``half_life_days``, ``semantic``, ``depth``) and ``ranker`` (``module:attr``
naming an ``EmbeddingRanker`` or a factory of one; none by default).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trails.config import load_settings
from trails.errors import ConfigError, MemoryInputError
from trails.kernel.context import Context, now
from trails.kernel.riders import ride
from trails.memory.events import (
    MemoriesLearned,
    MemoryForgotten,
    MemoryLearned,
    MemoryRecalled,
)
from trails.memory.index import EmbeddingRanker, MemoryIndex, Query, Weights, index_for
from trails.memory.model import (
    MAX_CONTENT_CHARS,
    SCOPES,
    Memory,
    Recalled,
    check_agent,
    check_confidence,
    check_content,
    check_id,
    check_k,
    check_recall_scope,
    check_scope,
    check_tags,
    check_time,
    check_topic,
    check_validity,
)
from trails.prov.vocab import NAMESPACES
from trails.store.base import Store
from trails.store.terms import IRI

__all__ = [
    "MAX_BATCH",
    "MemoryConfig",
    "config",
    "forget",
    "history",
    "index",
    "learn",
    "learn_many",
    "list_memories",
    "memory_graph",
    "recall",
    "set_config",
    "set_ranker",
]

_PREFIXES = "".join(f"PREFIX {k}: <{v}>\n" for k, v in NAMESPACES.items())
_ENTITY_EXISTS = _PREFIXES + "ASK { GRAPH ?g { ?e a prov:Entity } }"


@dataclass(frozen=True)
class MemoryConfig:
    """The ``[memory]`` settings: content limit, ranking weights, optional ranker."""

    max_content_chars: int = MAX_CONTENT_CHARS
    weights: Weights = field(default_factory=Weights)
    ranker: EmbeddingRanker | None = None


_config: MemoryConfig | None = None
_config_lock = threading.Lock()


def _load_ranker(spec: str) -> EmbeddingRanker:
    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = getattr(importlib.import_module(module_name), attr or "ranker")
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"[memory] ranker = {spec!r} cannot be loaded: {exc}") from exc
    if not isinstance(obj, EmbeddingRanker) and callable(obj):
        obj = obj()
    if not isinstance(obj, EmbeddingRanker):
        raise ConfigError(f"[memory] ranker = {spec!r} is not an EmbeddingRanker")
    return obj


def _from_settings() -> MemoryConfig:
    section = load_settings().section("memory")
    try:
        weights = Weights(**section.get("weights", {}))
        limit = int(section.get("max_content_chars", MAX_CONTENT_CHARS))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid [memory] settings: {exc}") from exc
    spec = section.get("ranker")
    return MemoryConfig(limit, weights, _load_ranker(str(spec)) if spec else None)


def config() -> MemoryConfig:
    """The memory settings, read from trails.toml on first use."""
    global _config
    with _config_lock:
        if _config is None:
            _config = _from_settings()
        return _config


def set_config(value: MemoryConfig | None) -> None:
    """Replace the memory settings (None: read them again from trails.toml on next use)."""
    global _config
    with _config_lock:
        _config = value


def set_ranker(ranker: EmbeddingRanker | None) -> None:
    """Turn the embedding re-ranker on (a ranker) or off (None)."""
    current = config()
    set_config(MemoryConfig(current.max_content_chars, current.weights, ranker))


def index(ctx: Context) -> MemoryIndex:
    """The context store's memory index, brought up to date with the store."""
    idx = index_for(ctx.store, ctx.recorder.minter)
    idx.refresh()
    return idx


def memory_graph(ctx: Context, scope: str, agent_did: str) -> IRI:
    """The named graph memories of ``scope`` learned by ``agent_did`` in ``ctx`` go to."""
    minter = ctx.recorder.minter
    if scope == "shared":
        return minter.graph("memory/shared")
    if scope == "private":
        return minter.graph(f"memory/private/{agent_did}")
    return minter.graph(f"memory/session/{ctx.session_id}")


def _entity_exists(store: Store, iri: IRI) -> bool:
    return bool(store.query(_ENTITY_EXISTS, {"e": iri}))


def _check_owner(memory: Memory, agent: str, action: str) -> None:
    if memory.scope == "private" and memory.agent_did != agent:
        raise MemoryInputError(
            f"memory {memory.id} is private to another agent; {agent} cannot {action} it"
        )


def _live(idx: MemoryIndex, mid: IRI, agent: str, action: str) -> Memory:
    if mid not in idx:
        raise MemoryInputError(f"no memory with id {mid}")
    memory = idx.get(mid)
    _check_owner(memory, agent, action)
    if memory.invalidated_at is not None:
        how = (
            f"superseded by {memory.superseded_by}"
            if memory.superseded_by
            else f"forgotten at {memory.invalidated_at.isoformat()}"
        )
        raise MemoryInputError(f"memory {mid} was already {how}; {action} the current version")
    # A loaded store could hold a revision cycle; refuse to extend one.
    seen = {memory.id}
    current = memory
    while current.revision_of and current.revision_of in idx:
        if current.revision_of in seen:
            raise MemoryInputError(f"memory {mid} is part of a revision loop; not extending it")
        seen.add(current.revision_of)
        current = idx.get(current.revision_of)
    return memory


@dataclass(frozen=True)
class _Item:
    """One memory to learn, its arguments checked (``supersedes`` still an unchecked id)."""

    content: str
    confidence: float
    topic: str | None
    tags: tuple[str, ...]
    scope: str
    start: datetime | None
    end: datetime | None
    supersedes: IRI | None
    source: str | None


def _item(
    ctx: Context,
    content: str,
    *,
    confidence: float = 1.0,
    topic: str | None = None,
    tags: Iterable[str] | None = None,
    scope: str = "private",
    valid_from: datetime | str | None = None,
    valid_until: datetime | str | None = None,
    supersedes: str | None = None,
    derived_from: str | None = None,
    invocation: str | None = None,
) -> _Item:
    settings = config()
    content = check_content(content, settings.max_content_chars)
    conf = check_confidence(confidence)
    topic = check_topic(topic)
    tag_list = check_tags(tags)
    scope = check_scope(scope)
    start, end = check_validity(valid_from, valid_until)
    base = ctx.recorder.minter.base
    source: str | None = None
    if derived_from is not None:
        source = check_id(derived_from, base)
        if not _entity_exists(ctx.store, source):
            raise MemoryInputError(f"derived_from names no recorded entity: {source}")
    elif invocation is not None:
        source = f"{invocation}:input"
    old = check_id(supersedes, base) if supersedes is not None else None
    return _Item(content, conf, topic, tuple(tag_list), scope, start, end, old, source)


def _plan(ctx: Context, idx: MemoryIndex, item: _Item, agent: str) -> tuple[MemoryLearned, Memory]:
    """The learn event of ``item`` and the memory it records (under the index lock)."""
    old = _live(idx, item.supersedes, agent, "supersede") if item.supersedes else None
    started = now()
    activity = ctx.recorder.minter.activity()
    memory_iri = ctx.recorder.minter.entity()
    ended = now()
    event = MemoryLearned(
        session=ctx.session,
        activity=activity,
        parent=ctx.parent,
        agent_did=agent,
        memory=memory_iri,
        memory_graph=memory_graph(ctx, item.scope, agent),
        content=item.content,
        confidence=item.confidence,
        topic=item.topic,
        tags=item.tags,
        scope=item.scope,
        started=started,
        ended=ended,
        valid_from=item.start,
        valid_until=item.end,
        derived_from=item.source,
        supersedes=old.id if old else None,
        supersedes_graph=memory_graph_of(ctx, old) if old else None,
    )
    memory = Memory(
        id=memory_iri,
        content=item.content,
        confidence=item.confidence,
        topic=item.topic,
        tags=tuple(sorted(item.tags)),
        scope=item.scope,
        agent_did=agent,
        recorded_at=ended,
        activity=activity,
        session=ctx.session,
        valid_from=item.start,
        valid_until=item.end,
        derived_from=item.source,
        revision_of=old.id if old else None,
    )
    return event, memory


def learn(
    ctx: Context,
    content: str,
    *,
    confidence: float = 1.0,
    topic: str | None = None,
    tags: Iterable[str] | None = None,
    scope: str = "private",
    agent_did: str | None = None,
    valid_from: datetime | str | None = None,
    valid_until: datetime | str | None = None,
    supersedes: str | None = None,
    derived_from: str | None = None,
    invocation: str | None = None,
) -> Memory:
    """Record a new memory (one atomic write) and return it.

    Args:
        ctx: the calling context (its session records the learn).
        content: the fact, as text.
        confidence: 0..1.
        topic: an optional topic.
        tags: optional tags.
        scope: ``private`` (only its agent recalls it), ``shared`` or ``session``.
        agent_did: the learning agent; the context's principal by default.
        valid_from: when the fact became true, if known.
        valid_until: when it stopped being true, if known.
        supersedes: id of the memory this one replaces (it is retired).
        derived_from: IRI of the entity the memory came from (a completion, an
            invocation output); it must exist in the store.
        invocation: the invocation running this learn; without ``derived_from``
            the memory is derived from that invocation's input.

    Returns:
        The recorded memory.

    Raises:
        MemoryInputError: a bad argument, an unknown or retired ``supersedes``.
        StoreError: the write failed; nothing was recorded.
    """
    item = _item(
        ctx,
        content,
        confidence=confidence,
        topic=topic,
        tags=tags,
        scope=scope,
        valid_from=valid_from,
        valid_until=valid_until,
        supersedes=supersedes,
        derived_from=derived_from,
        invocation=invocation,
    )
    return _learn_items(ctx, [item], check_agent(agent_did, ctx.principal))[0]


def learn_many(
    ctx: Context,
    memories: Sequence[str | Mapping[str, Any]],
    *,
    scope: str = "private",
    agent_did: str | None = None,
    invocation: str | None = None,
) -> list[Memory]:
    """Record several memories in one atomic write; each is its own entity and learn activity.

    Args:
        ctx: the calling context.
        memories: each a text (the content) or a mapping with the arguments of
            ``learn``: ``content`` and optionally ``confidence``, ``topic``,
            ``tags``, ``scope``, ``valid_from``, ``valid_until``,
            ``supersedes``, ``derived_from`` (at most ``MAX_BATCH``).
        scope: the scope of the memories that do not name one.
        agent_did: the learning agent; the context's principal by default.
        invocation: the invocation running this call (see ``learn``).

    Returns:
        The recorded memories, in order.

    Raises:
        MemoryInputError: a bad item (named by its position): nothing is recorded.
        StoreError: the write failed; nothing was recorded.
    """
    if isinstance(memories, str | bytes) or not isinstance(memories, Sequence):
        raise MemoryInputError("memories must be a list of texts or of learn arguments")
    if not 1 <= len(memories) <= MAX_BATCH:
        raise MemoryInputError(f"memories must hold 1..{MAX_BATCH} items, not {len(memories)}")
    agent = check_agent(agent_did, ctx.principal)
    items: list[_Item] = []
    for i, raw in enumerate(memories):
        args: dict[str, Any] = {"content": raw} if isinstance(raw, str) else _args(raw, i)
        args.setdefault("scope", scope)
        try:
            items.append(_item(ctx, invocation=invocation, **args))
        except MemoryInputError as exc:
            raise MemoryInputError(f"memories[{i}]: {exc}") from None
    retiring = [it.supersedes for it in items if it.supersedes]
    if len(set(retiring)) != len(retiring):
        raise MemoryInputError("two memories of one call supersede the same memory")
    return _learn_items(ctx, items, agent)


MAX_BATCH = 10_000
_ITEM_KEYS = frozenset(
    {
        "content",
        "confidence",
        "topic",
        "tags",
        "scope",
        "valid_from",
        "valid_until",
        "supersedes",
        "derived_from",
    }
)


def _args(raw: object, i: int) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise MemoryInputError(
            f"memories[{i}] must be a text or a mapping, not {type(raw).__name__}"
        )
    unknown = sorted(str(k) for k in raw if k not in _ITEM_KEYS)
    if unknown:
        raise MemoryInputError(f"memories[{i}] has unknown fields: {', '.join(unknown)}")
    if "content" not in raw:
        raise MemoryInputError(f"memories[{i}] has no content")
    return dict(raw)


def _learn_items(ctx: Context, items: list[_Item], agent: str) -> list[Memory]:
    """Plan every learn, write them and a fresh revision token at once, then index them."""
    idx = index(ctx)
    with idx.lock:
        planned = []
        for i, item in enumerate(items):
            try:
                planned.append(_plan(ctx, idx, item, agent))
            except MemoryInputError as exc:
                raise (
                    MemoryInputError(f"memories[{i}]: {exc}") if len(items) > 1 else exc
                ) from None
        token, stale = idx.begin_write()
        events = [event for event, _ in planned]
        ctx.recorder.record(
            MemoriesLearned(
                session=ctx.session,
                learns=tuple(events),
                head_graph=idx.head_graph,
                revision=token,
            )
            if len(events) > 1
            else events[0].model_copy(update={"head_graph": idx.head_graph, "revision": token}),
            remove=stale,
        )
        for _, memory in planned:
            idx.learned(memory)
        idx.wrote(token)
    return [memory for _, memory in planned]


def memory_graph_of(ctx: Context, memory: Memory) -> IRI:
    """The graph a recorded memory lives in."""
    minter = ctx.recorder.minter
    if memory.scope == "session" and memory.session:
        return minter.graph(f"memory/session/{minter.session_id(memory.session)}")
    return memory_graph(ctx, memory.scope, memory.agent_did)


def forget(
    ctx: Context,
    memory_id: str,
    *,
    reason: str | None = None,
    agent_did: str | None = None,
) -> Memory:
    """Retire a memory: ``prov:invalidatedAtTime`` and ``prov:wasInvalidatedBy``, never erased.

    Args:
        ctx: the calling context.
        memory_id: the memory's id (its IRI, or the UUID at its end).
        reason: why, recorded on the forget activity.
        agent_did: the agent forgetting; the context's principal by default.

    Returns:
        The memory as it now stands (retired).

    Raises:
        MemoryInputError: unknown id, already retired, or another agent's private memory.
    """
    agent = check_agent(agent_did, ctx.principal)
    if reason is not None and not isinstance(reason, str):
        raise MemoryInputError(f"reason must be text, not {type(reason).__name__}")
    mid = check_id(memory_id, ctx.recorder.minter.base)
    idx = index(ctx)
    with idx.lock:
        memory = _live(idx, mid, agent, "forget")
        activity = ctx.recorder.minter.activity()
        token, stale = idx.begin_write()
        at = now()
        ctx.recorder.record(
            MemoryForgotten(
                session=ctx.session,
                activity=activity,
                parent=ctx.parent,
                agent_did=agent,
                memory=mid,
                memory_graph=memory_graph_of(ctx, memory),
                reason=reason or None,
                at=at,
                head_graph=idx.head_graph,
                revision=token,
            ),
            remove=stale,
        )
        idx.forgot(mid, at, activity, reason or None)
        idx.wrote(token)
        return idx.get(mid)


def _query(
    ctx: Context,
    text: str,
    scope: str,
    agent: str,
    **filters: Any,
) -> Query:
    scopes = frozenset(SCOPES) if scope == "all" else frozenset({scope})
    return Query(text=text, scopes=scopes, agent_did=agent, session=ctx.session, **filters)


def recall(
    ctx: Context,
    context: str,
    *,
    scope: str,
    topic: str | None = None,
    tags: Iterable[str] | None = None,
    k: int = 5,
    min_confidence: float = 0.0,
    agent_did: str | None = None,
    as_of: datetime | str | None = None,
    valid_at: datetime | str | None = None,
) -> list[Recalled]:
    """The ``k`` memories that best fit ``context``, recorded as ``prov:used`` by the recall.

    Args:
        ctx: the calling context (its session records the recall).
        context: what the agent is thinking about; blank ranks by confidence and recency.
        scope: ``private``, ``shared``, ``session`` or ``all`` (every scope visible).
        topic: only memories with this topic (case-insensitive).
        tags: only memories carrying all these tags.
        k: how many to return (1..1000).
        min_confidence: only memories at least this confident.
        agent_did: the agent asking (private memories are visible only to their
            agent); the context's principal by default.
        as_of: answer as memory stood at this time (recorded, not yet retired).
        valid_at: only facts whose validity interval contains this time.

    Returns:
        Ranked memories with scores; each memory carries its lineage.

    Raises:
        MemoryInputError: a bad argument.
    """
    if not isinstance(context, str):
        raise MemoryInputError(f"context must be text, not {type(context).__name__}")
    scope = check_recall_scope(scope)
    k = check_k(k)
    agent = check_agent(agent_did, ctx.principal)
    q = _query(
        ctx,
        context,
        scope,
        agent,
        topic=check_topic(topic),
        tags=check_tags(tags),
        min_confidence=check_confidence(min_confidence),
        as_of=check_time("as_of", as_of),
        valid_at=check_time("valid_at", valid_at),
    )
    settings = config()
    started = now()
    idx = index(ctx)
    when = q.as_of or started
    found = idx.search(q, k, when, settings.weights, settings.ranker)
    results = [
        Recalled(memory=m, score=round(score, 6), relevance=round(rel, 6), rank=i)
        for i, (m, score, rel) in enumerate(found, start=1)
    ]
    event = MemoryRecalled(
        session=ctx.session,
        activity=ctx.recorder.minter.activity(),
        parent=ctx.parent,
        agent_did=agent,
        query=context,
        scope=scope,
        started=started,
        ended=now(),
        hits=tuple((r.memory.id, r.score) for r in results),
    )
    # Through ``memory.recall`` the recall is written with its invocation: one write.
    if not ride(ctx.riders, ctx.parent, event):
        ctx.recorder.record(event)
    return results


def list_memories(
    ctx: Context,
    *,
    scope: str = "all",
    agent_did: str | None = None,
    topic: str | None = None,
    tags: Iterable[str] | None = None,
    include_retired: bool = False,
    as_of: datetime | str | None = None,
    limit: int = 100,
) -> list[Memory]:
    """The memories visible to an agent, newest first.

    Args:
        ctx: the calling context.
        scope: ``private``, ``shared``, ``session`` or ``all``.
        agent_did: the agent asking; the context's principal by default.
        topic: only this topic.
        tags: only memories carrying all these tags.
        include_retired: also superseded and forgotten versions.
        as_of: memory as it stood at this time.
        limit: at most this many (1..1000).

    Returns:
        Memories, newest first.

    Raises:
        MemoryInputError: a bad argument.
    """
    scope = check_recall_scope(scope)
    limit = check_k(limit)
    agent = check_agent(agent_did, ctx.principal)
    q = _query(
        ctx,
        "",
        scope,
        agent,
        topic=check_topic(topic),
        tags=check_tags(tags),
        as_of=check_time("as_of", as_of),
        include_retired=bool(include_retired),
    )
    return index(ctx).memories(q)[:limit]


def history(ctx: Context, memory_id: str, *, agent_did: str | None = None) -> list[Memory]:
    """Every version of a memory's fact, oldest first, with how each was retired.

    Args:
        ctx: the calling context.
        memory_id: any version's id.
        agent_did: the agent asking; the context's principal by default.

    Returns:
        The revision chain (``prov:wasRevisionOf``), oldest first.

    Raises:
        MemoryInputError: unknown id, or another agent's private memory.
    """
    agent = check_agent(agent_did, ctx.principal)
    mid = check_id(memory_id, ctx.recorder.minter.base)
    idx = index(ctx)
    if mid not in idx:
        raise MemoryInputError(f"no memory with id {mid}")
    _check_owner(idx.get(mid), agent, "read")
    return idx.chain(mid)
