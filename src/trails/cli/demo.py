"""``trails demo``: run a ReAct agent session and print its audit."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from trails.audit.access import writing
from trails.audit.render import timestamp, usd
from trails.cli.common import store_place
from trails.config import load_settings
from trails.demo import run_demo
from trails.errors import ModelAPIError
from trails.llm import LLMClient

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "demo",
        help="run a short agent session and audit it by SPARQL",
        description="Run a short ReAct session over three note-keeping capabilities (a "
        "scripted model by default, so it runs offline), record it into the store, then "
        "answer audit questions about it by SPARQL alone: what happened in order, why each "
        "capability ran, and what the models cost.",
    )
    parser.add_argument(
        "--principal",
        help="the DID the agent acts for (default: [agent] principal of trails.toml, "
        "else did:local:alice)",
    )
    parser.add_argument(
        "--llm",
        default="mock",
        help="the model: mock (scripted, offline; default), anthropic:MODEL, "
        "ollama:MODEL[@URL], openai:MODEL@URL",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    llm = None if args.llm == "mock" else LLMClient.from_spec(args.llm)
    principal = args.principal
    if principal is None:
        settings = load_settings()
        configured = settings.sources.get("principal", "default") != "default"
        principal = settings.principal if configured else "did:local:alice"
    with writing(args.store) as store:
        try:
            result = run_demo(store, principal=principal, llm=llm)
        except ModelAPIError as exc:  # the model was never reached: the run is recorded
            print(f"trails: error: the run failed: {exc}", file=sys.stderr)
            return 1
        print(f"session  {result.session}")
        print(f"stopped  {result.stopped} after {result.steps} steps")
        print(f"answer   {result.answer}\n")
        print("Audit, answered by SPARQL from the recorded provenance:\n")
        print("What happened, in order:")
        for label, started in result.timeline:
            print(f"  {timestamp(started)}  {label}")
        print("\nWhy each capability ran (the completion that chose it), and for whom:")
        for row in result.decisions:
            effect = "  [changed the world]" if row["sideEffects"] else ""
            print(
                f"  {row['capability']} {row['input']}  chosen by {row['model']}"
                f"  on behalf of {row['principal']}{effect}"
            )
        print("\nModel use (summed over completions; cost is booked on the completion only):")
        for row in result.cost:
            print(
                f"  {row['model']}: {row['calls']} calls, {row['inputTokens']} in / "
                f"{row['outputTokens']} out tokens, {usd(row.get('usdKnown'))}"
            )
        print(f"\nNext:  trails query session-timeline --param session={result.session}")
        print(f"       trails replay {result.session} --rerun --import trails.demo")
        print(f"Store: {store_place(store)}")
    if result.stopped == "error":
        print(f"trails: error: the run failed: {result.error}", file=sys.stderr)
        return 1
    return 0
