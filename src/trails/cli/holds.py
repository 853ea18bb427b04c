"""``trails hold add|remove|list``: legal holds on sessions and principals, recorded and sealed."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from trails.audit.access import changing, reading
from trails.cli.common import session_arg
from trails.compliance.holds import Hold, list_holds, place_hold, release_holds
from trails.config import load_settings
from trails.prov.iri import Minter
from trails.prov.recorder import Recorder

__all__ = ["register", "run_add", "run_list", "run_remove"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``hold`` command and its ``add``, ``remove`` and ``list`` subcommands."""
    p = subparsers.add_parser(
        "hold",
        help="legal holds: evidence retention and erasure must not remove until released",
        description="Place, release and list legal holds on sessions (by IRI) or principals "
        "(by DID). Holds and releases are recorded in the holds graph and sealed.",
    )
    sub = p.add_subparsers(dest="hold_command", metavar="add|remove|list", required=True)
    add = sub.add_parser("add", help="place a hold on a session or a principal")
    add.add_argument(
        "target", metavar="SESSION|PRINCIPAL", help="a session (IRI or UUID) or a principal (DID)"
    )
    add.add_argument("--reason", required=True, help="why (a case, a request)")
    add.add_argument("--by", help="who places it (default: [agent] principal)")
    add.set_defaults(func=run_add)
    rm = sub.add_parser("remove", help="release the holds on a session, a principal, or one hold")
    rm.add_argument(
        "target",
        metavar="SESSION|PRINCIPAL|HOLD",
        help="what the holds to release are on, or a hold",
    )
    rm.add_argument("--reason", required=True, help="why it is released")
    rm.add_argument("--by", help="who releases it (default: [agent] principal)")
    rm.set_defaults(func=run_remove)
    ls = sub.add_parser("list", help="list active holds (and released ones with --all)")
    ls.add_argument("--all", action="store_true", help="include released holds")
    ls.add_argument(
        "--format", "-f", choices=("table", "json"), default="table", help="table (default) or json"
    )
    ls.set_defaults(func=run_list)


def _print(holds: list[Hold]) -> None:
    header = ("hold", "on", "target", "reason", "by", "placed", "released")
    rows = [
        (h.iri, h.kind, h.target, h.reason, h.placed_by, h.placed_at, h.released_at or "")
        for h in holds
    ]
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(header)]
    print("  ".join(c.ljust(w) for c, w in zip(header, widths, strict=True)).rstrip())
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    print(f"({len(rows)} hold{'s' if len(rows) != 1 else ''})")


def run_add(args: argparse.Namespace) -> int:
    """Run ``trails hold add``."""
    settings = load_settings()
    with changing(args.store) as store:
        recorder = Recorder.from_settings(settings, store=store)
        hold = place_hold(
            recorder, session_arg(args.target), reason=args.reason, by=args.by or settings.principal
        )
    print(f"hold {hold.iri} placed on {hold.kind} {hold.target}: {hold.reason}")
    return 0


def run_remove(args: argparse.Namespace) -> int:
    """Run ``trails hold remove``."""
    settings = load_settings()
    with changing(args.store) as store:
        recorder = Recorder.from_settings(settings, store=store)
        released = release_holds(
            recorder, session_arg(args.target), reason=args.reason, by=args.by or settings.principal
        )
    for hold in released:
        print(f"hold {hold.iri} on {hold.kind} {hold.target} released: {args.reason}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    """Run ``trails hold list``."""
    settings = load_settings()
    with reading(args.store) as store:
        holds = list_holds(store, Minter(settings.base_iri), include_released=args.all)
    if args.format == "json":
        print(json.dumps([asdict(h) for h in holds], indent=2))
    else:
        _print(holds)
    return 0
