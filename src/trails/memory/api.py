"""The ``memory.*`` capabilities and the Python functions that call them.

``memory.learn``, ``memory.recall``, ``memory.forget`` and ``memory.list``
are ordinary capabilities, so a planner can offer them to a model and every
call is a recorded ``trails:CapabilityInvocation``. The Python functions
``learn``, ``learn_many``, ``recall``, ``forget`` and ``list_memories`` go
through ``invoke``
too, so calling memory from code leaves the same evidence as a model doing
it. ``history`` only reads, and is not a capability.

The capabilities are registered when ``trails.memory`` is imported;
``register()`` registers them again (an application that reset its registry).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from trails.errors import MemoryInputError, UnknownCapability
from trails.kernel.context import Context, default_context
from trails.kernel.invoke import invoke
from trails.kernel.registry import capability, get_capability
from trails.memory import service
from trails.memory.model import Memory, Recalled
from trails.text import check_text

__all__ = [
    "CAPABILITIES",
    "forget",
    "history",
    "learn",
    "learn_many",
    "list_memories",
    "recall",
    "register",
]

CAPABILITIES = (
    "memory.learn",
    "memory.learn_many",
    "memory.recall",
    "memory.forget",
    "memory.list",
)


def _learn(
    ctx: Context,
    *,
    content: str,
    confidence: float = 1.0,
    topic: str | None = None,
    tags: list[str] | None = None,
    scope: str = "private",
    agent_did: str | None = None,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    supersedes: str | None = None,
    derived_from: str | None = None,
) -> Memory:
    """Remember a fact (content, confidence 0..1, topic, tags, scope) for later recall."""
    return service.learn(
        ctx,
        content,
        confidence=confidence,
        topic=topic,
        tags=tags,
        scope=scope,
        agent_did=agent_did,
        valid_from=valid_from,
        valid_until=valid_until,
        supersedes=supersedes,
        derived_from=derived_from,
        invocation=ctx.parent,
    )


def _learn_many(
    ctx: Context,
    *,
    memories: list[str | dict[str, Any]],
    scope: str = "private",
    agent_did: str | None = None,
) -> list[Memory]:
    """Remember several facts at once: each a text, or an object with learn's fields."""
    return service.learn_many(
        ctx, memories, scope=scope, agent_did=agent_did, invocation=ctx.parent
    )


def _recall(
    ctx: Context,
    *,
    context: str,
    scope: str,
    topic: str | None = None,
    tags: list[str] | None = None,
    k: int = 5,
    min_confidence: float = 0.0,
    agent_did: str | None = None,
    as_of: datetime | None = None,
    valid_at: datetime | None = None,
) -> list[Recalled]:
    """Recall the memories that best fit a context, ranked, with their lineage."""
    return service.recall(
        ctx,
        context,
        scope=scope,
        topic=topic,
        tags=tags,
        k=k,
        min_confidence=min_confidence,
        agent_did=agent_did,
        as_of=as_of,
        valid_at=valid_at,
    )


def _forget(
    ctx: Context, *, memory_id: str, reason: str | None = None, agent_did: str | None = None
) -> Memory:
    """Forget a memory: it is retired (invalidated) but its record is kept."""
    return service.forget(ctx, memory_id, reason=reason, agent_did=agent_did)


def _list(
    ctx: Context,
    *,
    scope: str = "all",
    agent_did: str | None = None,
    topic: str | None = None,
    tags: list[str] | None = None,
    include_retired: bool = False,
    as_of: datetime | None = None,
    limit: int = 100,
) -> list[Memory]:
    """List the memories visible to an agent, newest first."""
    return service.list_memories(
        ctx,
        scope=scope,
        agent_did=agent_did,
        topic=topic,
        tags=tags,
        include_retired=include_retired,
        as_of=as_of,
        limit=limit,
    )


def register() -> None:
    """Register the ``memory.*`` capabilities (again).

    Their handlers above take everything but ``ctx`` by keyword, as ``invoke`` calls them.
    """
    capability(id="memory.learn", side_effects=True)(_learn)
    capability(id="memory.learn_many", side_effects=True)(_learn_many)
    capability(id="memory.recall")(_recall)
    capability(id="memory.forget", side_effects=True)(_forget)
    capability(id="memory.list")(_list)


def _check_text(args: dict[str, Any]) -> None:
    """Refuse text that cannot be recorded (unpaired surrogates) before the call is recorded."""
    for name, value in args.items():
        for item in _texts(value):
            check_text(item, name, MemoryInputError)


def _texts(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    return [value]


def _call(capability_id: str, args: dict[str, Any], ctx: Context | None) -> Any:
    _check_text(args)
    try:
        get_capability(capability_id)
    except UnknownCapability:
        register()
    return invoke(capability_id, args, ctx=ctx if ctx is not None else default_context())


def _tags(tags: Iterable[str] | None) -> Any:
    # a bare string is passed through so validation can name the mistake
    return tags if tags is None or isinstance(tags, str) else list(tags)


def learn(
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
    ctx: Context | None = None,
) -> Memory:
    """Learn a memory through the ``memory.learn`` capability.

    Args:
        content: the fact, as text.
        confidence: 0..1.
        topic: an optional topic.
        tags: optional tags.
        scope: ``private`` (default), ``shared`` or ``session``.
        agent_did: the learning agent (default: the context's principal).
        valid_from: when the fact became true.
        valid_until: when it stopped being true.
        supersedes: id of the memory this replaces.
        derived_from: IRI of the entity it came from (completion, invocation output).
        ctx: the calling context (default: the process session).

    Returns:
        The recorded memory.

    Raises:
        MemoryInputError: bad input; nothing is recorded but the refused invocation.
        ValidationError: arguments of the wrong type.
    """
    args = {
        "content": content,
        "confidence": confidence,
        "topic": topic,
        "tags": _tags(tags),
        "scope": scope,
        "agent_did": agent_did,
        "valid_from": valid_from,
        "valid_until": valid_until,
        "supersedes": supersedes,
        "derived_from": derived_from,
    }
    result: Memory = _call("memory.learn", args, ctx)
    return result


def _item(item: str | Mapping[str, Any]) -> Any:
    if isinstance(item, Mapping):
        out = dict(item)
        if "tags" in out:
            out["tags"] = _tags(out["tags"])
        return out
    return item


def learn_many(
    memories: Iterable[str | Mapping[str, Any]],
    *,
    scope: str = "private",
    agent_did: str | None = None,
    ctx: Context | None = None,
) -> list[Memory]:
    """Learn several memories through one ``memory.learn_many`` call (one invocation, one write).

    Each memory is still its own recorded entity, generated by its own learn
    activity, exactly as if learned alone.

    Args:
        memories: each a text, or a mapping with ``content`` and any of
            ``confidence``, ``topic``, ``tags``, ``scope``, ``valid_from``,
            ``valid_until``, ``supersedes``, ``derived_from``.
        scope: the scope of items that do not name one (default ``private``).
        agent_did: the learning agent (default: the context's principal).
        ctx: the calling context (default: the process session).

    Returns:
        The recorded memories, in order.

    Raises:
        MemoryInputError: a bad item (named by position); none is recorded.
    """
    items = [_item(m) for m in memories] if not isinstance(memories, str) else memories
    args = {"memories": items, "scope": scope, "agent_did": agent_did}
    result: list[Memory] = _call("memory.learn_many", args, ctx)
    return result


def recall(
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
    ctx: Context | None = None,
) -> list[Recalled]:
    """Recall memories through the ``memory.recall`` capability.

    Args:
        context: what to recall about.
        scope: ``private``, ``shared``, ``session`` or ``all``.
        topic: only this topic.
        tags: only memories with all these tags.
        k: how many.
        min_confidence: confidence floor.
        agent_did: the agent asking (default: the context's principal).
        as_of: memory as it stood then.
        valid_at: only facts valid at this time.
        ctx: the calling context.

    Returns:
        Ranked memories with scores and lineage.

    Raises:
        MemoryInputError: bad input.
    """
    args = {
        "context": context,
        "scope": scope,
        "topic": topic,
        "tags": _tags(tags),
        "k": k,
        "min_confidence": min_confidence,
        "agent_did": agent_did,
        "as_of": as_of,
        "valid_at": valid_at,
    }
    result: list[Recalled] = _call("memory.recall", args, ctx)
    return result


def forget(
    memory_id: str,
    *,
    reason: str | None = None,
    agent_did: str | None = None,
    ctx: Context | None = None,
) -> Memory:
    """Forget a memory through the ``memory.forget`` capability (retired, not erased).

    Args:
        memory_id: the memory's id.
        reason: why.
        agent_did: the agent forgetting.
        ctx: the calling context.

    Returns:
        The retired memory.

    Raises:
        MemoryInputError: unknown or already retired id, or not the owner.
    """
    args = {"memory_id": memory_id, "reason": reason, "agent_did": agent_did}
    result: Memory = _call("memory.forget", args, ctx)
    return result


def list_memories(
    *,
    scope: str = "all",
    agent_did: str | None = None,
    topic: str | None = None,
    tags: Iterable[str] | None = None,
    include_retired: bool = False,
    as_of: datetime | str | None = None,
    limit: int = 100,
    ctx: Context | None = None,
) -> list[Memory]:
    """List memories through the ``memory.list`` capability, newest first.

    Args:
        scope: ``private``, ``shared``, ``session`` or ``all``.
        agent_did: the agent asking.
        topic: only this topic.
        tags: only memories with all these tags.
        include_retired: also superseded and forgotten versions.
        as_of: memory as it stood then.
        limit: at most this many.
        ctx: the calling context.

    Returns:
        Memories, newest first.

    Raises:
        MemoryInputError: bad input.
    """
    args = {
        "scope": scope,
        "agent_did": agent_did,
        "topic": topic,
        "tags": _tags(tags),
        "include_retired": include_retired,
        "as_of": as_of,
        "limit": limit,
    }
    result: list[Memory] = _call("memory.list", args, ctx)
    return result


def history(
    memory_id: str, *, agent_did: str | None = None, ctx: Context | None = None
) -> list[Memory]:
    """Every version of a memory's fact, oldest first (a read; not recorded).

    Args:
        memory_id: any version's id.
        agent_did: the agent asking.
        ctx: the calling context.

    Returns:
        The revision chain, oldest first.

    Raises:
        MemoryInputError: unknown id, or another agent's private memory.
    """
    _check_text({"memory_id": memory_id, "agent_did": agent_did})
    return service.history(
        ctx if ctx is not None else default_context(), memory_id, agent_did=agent_did
    )


register()
