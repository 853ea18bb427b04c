"""``trails catalogue rebuild``: write the catalogue entries of sessions recorded without them.

The sealer keeps the catalogue (``trails.audit.catalogue``) current as sessions
start and end. Stores recorded before the catalogue existed, or with ``[audit]
seal = false``, need their entries written once: ``rebuild`` rewrites every
session's entry from its graph (one write per session), ``--missing`` only
those that have none.
"""

from __future__ import annotations

import argparse
import json

from trails.audit.access import reading
from trails.audit.catalogue import rebuild
from trails.config import load_settings
from trails.prov.iri import Minter

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``catalogue`` command."""
    p = subparsers.add_parser(
        "catalogue", help="rebuild the session catalogue (one summary per session)"
    )
    actions = p.add_subparsers(dest="action", required=True)
    r = actions.add_parser("rebuild", help="write every session's catalogue entry from its graph")
    r.add_argument("--missing", action="store_true", help="only sessions that have no entry")
    r.add_argument("--json", action="store_true", help="print the sessions written as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the command; see ``register``."""
    minter = Minter(load_settings().base_iri)
    with reading(args.store) as store:
        written = rebuild(store, minter, missing_only=args.missing)
    if args.json:
        print(json.dumps([str(s) for s in written]))
    else:
        print(f"{len(written)} catalogue entr{'y' if len(written) == 1 else 'ies'} written")
    return 0
