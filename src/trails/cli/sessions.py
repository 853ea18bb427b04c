"""``trails sessions``: the sessions in the store, newest first (the ``sessions`` pack query)."""

from __future__ import annotations

import argparse
import sys

from trails.audit.access import reading
from trails.audit.querypack import get_query
from trails.audit.render import table

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``sessions`` command."""
    p = subparsers.add_parser("sessions", help="list sessions (by principal, status, time range)")
    p.add_argument("--principal", help="only this principal (an IRI or DID)")
    p.add_argument("--since", help="started at or after (ISO 8601)")
    p.add_argument("--until", help="started before (ISO 8601)")
    p.add_argument("--status", help="ended with this status (ok, error, interrupted)")
    p.add_argument(
        "--format",
        "-f",
        choices=("table", "json", "csv", "tsv"),
        default="table",
        help="table (default), json, csv or tsv",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the command; see ``register``."""
    query = get_query("sessions")
    values = {
        k: getattr(args, k) for k in ("principal", "since", "until", "status") if getattr(args, k)
    }
    bound = query.bind(values)
    text = query.text_for(bound)
    with reading(args.store) as store:
        if args.format == "table":
            print(table(store.query(text, bound), hide=set(query.params) - set(bound)))
            return 0
        data = store.query_to(text, bound, format=args.format)
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return 0
