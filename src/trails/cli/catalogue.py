"""``trails catalogue rebuild|rollup|search-index``: write the catalogue's entries, total its days.

The sealer keeps the catalogue (``trails.catalogue.entries``) current as sessions
start and end. Stores recorded before the catalogue existed, or with ``[audit]
seal = false``, need their entries written once: ``rebuild`` rewrites every
session's entry from its graph (one write per session), ``--missing`` only
those that have none.

``rollup`` sums the cost of each day that is over into daily totals
(``trails.catalogue.totals``), so ``cost-by-model`` and ``cost-by-principal`` read a
few rows per day instead of every session's summary. Run it daily (as the
retention job does); ``rebuild`` runs it after rewriting the entries.

``search-index`` builds the console's full-text index beside the store again
(``trails.audit.search``): every ended session read once. The console keeps it
up to date by itself; this is for an index that should start afresh.
"""

from __future__ import annotations

import argparse
import json

from trails.audit.access import changing, reading
from trails.audit.search import SearchIndex
from trails.catalogue.entries import rebuild
from trails.catalogue.totals import RollupResult, rollup
from trails.config import load_settings
from trails.prov.iri import Minter

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``catalogue`` command."""
    p = subparsers.add_parser(
        "catalogue", help="rebuild the session catalogue or total its days' cost"
    )
    actions = p.add_subparsers(dest="action", required=True)
    r = actions.add_parser("rebuild", help="write every session's catalogue entry from its graph")
    r.add_argument("--missing", action="store_true", help="only sessions that have no entry")
    r.add_argument("--json", action="store_true", help="print the sessions written as JSON")
    t = actions.add_parser("rollup", help="sum the cost of each day that is over into daily totals")
    t.add_argument("--json", action="store_true", help="print what was dated and totalled as JSON")
    i = actions.add_parser(
        "search-index", help="build the console's search index beside the store again"
    )
    i.add_argument("--json", action="store_true", help="print what was indexed as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the command; see ``register``."""
    if args.action == "search-index":
        return _search_index(args)
    minter = Minter(load_settings().base_iri)
    with changing(args.store) as store:
        if args.action == "rollup":
            _say(rollup(store, minter), args.json)
            return 0
        written = rebuild(store, minter, missing_only=args.missing)
        totals = rollup(store, minter)
    if args.json:
        print(json.dumps([str(s) for s in written]))
    else:
        print(f"{len(written)} catalogue entr{'y' if len(written) == 1 else 'ies'} written")
        _say(totals, False)
    return 0


def _search_index(args: argparse.Namespace) -> int:
    with reading(args.store) as store:
        index = SearchIndex.beside(getattr(store, "path", None))
        try:
            sessions = index.rebuild(store)
        finally:
            index.close()
    where = str(index.path) if index.path is not None else None
    if args.json:
        print(json.dumps({"sessions": sessions, "file": where}))
    elif where is None:
        print(f"{sessions} session(s) indexed in memory: this store keeps no index file")
    else:
        print(f"{sessions} session(s) indexed in {where}")
    return 0


def _say(result: RollupResult, as_json: bool) -> None:
    if as_json:
        print(
            json.dumps(
                {
                    "dated": result.dated,
                    "typed_open": result.typed,
                    "totalled": [d.isoformat() for d in result.totalled],
                    "open": [d.isoformat() for d in result.open_days],
                }
            )
        )
        return
    days = len(result.totalled)
    print(
        f"{days} day{'' if days == 1 else 's'} totalled"
        + (f", {result.dated} entries dated" if result.dated else "")
        + (f", {result.typed} entries without an end typed open" if result.typed else "")
        + (
            f", {result.counted} totalled before given their session count"
            if result.counted
            else ""
        )
        + (
            f"; {len(result.open_days)} not over yet (read from their entries)"
            if result.open_days
            else ""
        )
    )
