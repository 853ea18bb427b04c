"""``trails memory learn|recall|forget|list|history``: agent memory from the shell.

Each command opens the store (``--store`` or the settings), opens a session
for the acting agent (``--agent``, default the configured principal) so the
operation is recorded like any other, runs one library call, and closes both.
``--json`` prints machine-readable output.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from trails.kernel.context import Context
from trails.prov.content import canonical_json
from trails.prov.recorder import Recorder
from trails.store import open_store

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
    learn.add_argument("content")
    learn.add_argument("--confidence", type=float, default=1.0)
    learn.add_argument("--topic")
    learn.add_argument("--tag", action="append", dest="tags", default=None)
    learn.add_argument("--scope", default="private", help="private (default), shared or session")
    learn.add_argument("--supersedes", metavar="ID")
    learn.add_argument("--valid-from", metavar="TIME")
    learn.add_argument("--valid-until", metavar="TIME")
    common(learn)

    recall = sub.add_parser("recall", help="the memories that best fit a context")
    recall.add_argument("context")
    recall.add_argument("--scope", default="all", help="private, shared, session or all (default)")
    recall.add_argument("--topic")
    recall.add_argument("--tag", action="append", dest="tags", default=None)
    recall.add_argument("-k", type=int, default=5)
    recall.add_argument("--min-confidence", type=float, default=0.0)
    recall.add_argument("--as-of", metavar="TIME")
    common(recall)

    forget = sub.add_parser("forget", help="retire a memory (its record is kept)")
    forget.add_argument("id")
    forget.add_argument("--reason")
    common(forget)

    listing = sub.add_parser("list", help="memories visible to the agent, newest first")
    listing.add_argument("--scope", default="all")
    listing.add_argument("--topic")
    listing.add_argument("--tag", action="append", dest="tags", default=None)
    listing.add_argument("--all", action="store_true", dest="retired", help="include retired")
    listing.add_argument("--as-of", metavar="TIME")
    listing.add_argument("--limit", type=int, default=100)
    common(listing)

    history = sub.add_parser("history", help="every version of a memory, oldest first")
    history.add_argument("id")
    common(history)
    p.set_defaults(func=run)


@contextmanager
def _session(location: str | None, agent: str | None) -> Iterator[Context]:
    store = open_store(location)
    try:
        ctx = Context.open(
            agent, recorder=Recorder.from_settings(store=store), label="trails memory"
        )
        try:
            yield ctx
        finally:
            ctx.close()
    finally:
        store.close()


def _line(m: Any, score: float | None = None) -> str:
    head = f"{score:.3f}  " if score is not None else ""
    topic = f" [{m.topic}]" if m.topic else ""
    status = "" if m.status == "current" else f" ({m.status})"
    return (
        f"{head}{m.id}{status}\n    {m.content}{topic}\n"
        f"    {m.scope}, confidence {m.confidence:g}, by {m.agent_did} "
        f"at {m.recorded_at.isoformat()} in {m.session}"
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
    with _session(args.store, args.agent) as ctx:
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
