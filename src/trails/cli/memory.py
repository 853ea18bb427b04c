"""``trails memory learn|recall|forget|list|history``: agent memory from the shell.

Each command opens the store (``--store`` or the settings), opens a session
for the acting agent (``--agent``, default the configured principal) so the
operation is recorded like any other, runs one library call, and closes both.
``--json`` prints machine-readable output.

Arguments are checked before the session opens, so a rejected command (a bad
scope, an unknown or retired memory id ...) records nothing. Only ``learn``
creates the store; ``recall``, ``list``, ``history`` and ``forget`` need an
existing one (a memory to forget is in a store already).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from trails.audit.access import existing_store
from trails.audit.render import timestamp
from trails.config import load_settings
from trails.errors import MemoryInputError
from trails.kernel.context import Context
from trails.memory.index import index_for
from trails.memory.model import (
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
from trails.prov.content import canonical_json
from trails.prov.iri import Minter
from trails.prov.recorder import Recorder
from trails.store import Store

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``memory`` command group."""
    p = subparsers.add_parser(
        "memory",
        help="learn, recall, forget and list agent memory",
        description="Agent memory on the provenance store. Every operation is recorded "
        "in a session of the acting agent.",
    )
    sub = p.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--agent", help="the acting agent's DID (default: the configured principal)")
        q.add_argument("--json", action="store_true", help="print JSON")

    learn = sub.add_parser("learn", help="remember a fact")
    learn.add_argument("content", help="the fact, as text")
    learn.add_argument(
        "--confidence", type=float, default=1.0, help="how sure, from 0 to 1 (default 1)"
    )
    learn.add_argument("--topic", help="a topic to file it under")
    learn.add_argument("--tag", action="append", dest="tags", default=None, help="a tag (repeat)")
    learn.add_argument("--scope", default="private", help="private (default), shared or session")
    learn.add_argument("--supersedes", metavar="ID", help="the memory this one corrects")
    learn.add_argument("--valid-from", metavar="TIME", help="true from this time (ISO 8601)")
    learn.add_argument("--valid-until", metavar="TIME", help="true until this time (ISO 8601)")
    common(learn)

    recall = sub.add_parser("recall", help="the memories that best fit a context")
    recall.add_argument("context", help="the text to find fitting memories for")
    recall.add_argument("--scope", default="all", help="private, shared, session or all (default)")
    recall.add_argument("--topic", help="only memories of this topic")
    recall.add_argument(
        "--tag", action="append", dest="tags", default=None, help="only with this tag (repeat)"
    )
    recall.add_argument("-k", type=int, default=5, help="how many to return (default 5)")
    recall.add_argument(
        "--min-confidence", type=float, default=0.0, help="leave out less sure memories"
    )
    recall.add_argument("--as-of", metavar="TIME", help="as the memory stood at this time")
    common(recall)

    forget = sub.add_parser("forget", help="retire a memory (its record is kept)")
    forget.add_argument("id", help="the memory's id (an IRI or its UUID)")
    forget.add_argument("--reason", help="why it is retired")
    common(forget)

    listing = sub.add_parser("list", help="memories visible to the agent, newest first")
    listing.add_argument("--scope", default="all", help="private, shared, session or all (default)")
    listing.add_argument("--topic", help="only memories of this topic")
    listing.add_argument(
        "--tag", action="append", dest="tags", default=None, help="only with this tag (repeat)"
    )
    listing.add_argument("--all", action="store_true", dest="retired", help="include retired")
    listing.add_argument("--as-of", metavar="TIME", help="as the memory stood at this time")
    listing.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")
    common(listing)

    history = sub.add_parser("history", help="every version of a memory, oldest first")
    history.add_argument("id", help="the id of any version (an IRI or its UUID)")
    common(history)
    p.set_defaults(func=run)


#: the one action that may create the store: the others need a memory recorded there
_CREATING = ("learn",)


@contextmanager
def _session(store: Store, agent: str | None) -> Iterator[Context]:
    ctx = Context.open(agent, recorder=Recorder.from_settings(store=store), label="trails memory")
    try:
        yield ctx
    finally:
        ctx.close()


def _live(store: Store, minter: Minter, memory_id: str, agent: str, action: str) -> None:
    """Refuse an id that names no memory, another agent's private one, or a retired one."""
    mid = check_id(memory_id, minter.base)
    idx = index_for(store, minter)
    idx.refresh()
    if mid not in idx:
        raise MemoryInputError(f"no memory with id {mid}")
    memory = idx.get(mid)
    if memory.scope == "private" and memory.agent_did != agent:
        raise MemoryInputError(
            f"memory {mid} is private to another agent; {agent} cannot {action} it"
        )
    if action != "read" and memory.invalidated_at is not None:
        raise MemoryInputError(f"memory {mid} was already retired; {action} the current version")


def _precheck(args: argparse.Namespace, store: Store) -> None:
    """The checks the library makes, made before a session is opened (and recorded)."""
    settings = load_settings()
    agent = check_agent(args.agent, settings.principal)
    minter = Minter(settings.base_iri)
    action = args.memory_command
    if action == "learn":
        check_content(args.content)
        check_confidence(args.confidence)
        check_scope(args.scope)
        check_topic(args.topic)
        check_tags(args.tags)
        check_validity(args.valid_from, args.valid_until)
        if args.supersedes:
            _live(store, minter, args.supersedes, agent, "supersede")
    elif action == "recall":
        check_recall_scope(args.scope)
        check_topic(args.topic)
        check_tags(args.tags)
        check_k(args.k)
        check_confidence(args.min_confidence)
        check_time("as_of", args.as_of)
    elif action == "list":
        check_recall_scope(args.scope)
        check_topic(args.topic)
        check_tags(args.tags)
        check_time("as_of", args.as_of)
        if args.limit < 1:
            raise MemoryInputError(f"--limit must be at least 1, not {args.limit}")
    elif action == "forget":
        _live(store, minter, args.id, agent, "forget")
    else:
        _live(store, minter, args.id, agent, "read")


def _line(m: Any, score: float | None = None) -> str:
    head = f"{score:.3f}  " if score is not None else ""
    topic = f" [{m.topic}]" if m.topic else ""
    status = "" if m.status == "current" else f" ({m.status})"
    return (
        f"{head}{m.id}{status}\n    {m.content}{topic}\n"
        f"    {m.scope}, confidence {m.confidence:g}, by {m.agent_did} "
        f"at {timestamp(m.recorded_at)} in {m.session}"
    )


def _print(items: Sequence[Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(json.loads(canonical_json(list(items))), indent=2, ensure_ascii=False))
        return
    if not items:
        print("(no memories)")
    for item in items:
        if hasattr(item, "memory"):
            print(_line(item.memory, item.score))
        else:
            print(_line(item))


def run(args: argparse.Namespace) -> int:
    """Run one ``memory`` action; see ``register``."""
    import trails.memory as memory

    action = args.memory_command
    store, owned = existing_store(args.store, create=action in _CREATING)
    try:
        _precheck(args, store)
        return _run(args, store, memory)
    finally:
        if owned:
            store.close()


def _run(args: argparse.Namespace, store: Store, memory: Any) -> int:
    action = args.memory_command
    with _session(store, args.agent) as ctx:
        agent = args.agent
        if action == "learn":
            m = memory.learn(
                args.content,
                confidence=args.confidence,
                topic=args.topic,
                tags=args.tags,
                scope=args.scope,
                agent_did=agent,
                supersedes=args.supersedes,
                valid_from=args.valid_from,
                valid_until=args.valid_until,
                ctx=ctx,
            )
            _print([m], args.json)
        elif action == "recall":
            hits = memory.recall(
                args.context,
                scope=args.scope,
                topic=args.topic,
                tags=args.tags,
                k=args.k,
                min_confidence=args.min_confidence,
                agent_did=agent,
                as_of=args.as_of,
                ctx=ctx,
            )
            _print(hits, args.json)
        elif action == "forget":
            _print(
                [memory.forget(args.id, reason=args.reason, agent_did=agent, ctx=ctx)], args.json
            )
        elif action == "list":
            items = memory.list_memories(
                scope=args.scope,
                agent_did=agent,
                topic=args.topic,
                tags=args.tags,
                include_retired=args.retired,
                as_of=args.as_of,
                limit=args.limit,
                ctx=ctx,
            )
            _print(items, args.json)
        else:
            _print(memory.history(args.id, agent_did=agent, ctx=ctx), args.json)
    return 0
