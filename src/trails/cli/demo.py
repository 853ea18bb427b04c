"""``trails demo``: run a short agent session and print its audit."""

from __future__ import annotations

import argparse
from typing import Any

from trails.demo import run_demo
from trails.store import open_store

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    parser = sub.add_parser("demo", help="run a short agent session and audit it by SPARQL")
    parser.add_argument("--principal", default="did:local:alice", help="the DID the agent acts for")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with open_store(args.store) as store:
        result = run_demo(store, principal=args.principal)
        print(f"session  {result.session}")
        print(f"answer   {result.answer}\n")
        print("Audit, answered by SPARQL from the recorded provenance:\n")
        print("What happened, in order:")
        for label, started in result.timeline:
            print(f"  {started}  {label}")
        print("\nCapability calls that changed the world, with their input and principal:")
        for cap, data, agent in result.side_effects:
            print(f"  {cap}  {data}  on behalf of {agent}")
        print(
            f"\nStore: {store!r}. Try: trails query session-timeline --param session={result.session}"
        )
    return 0
