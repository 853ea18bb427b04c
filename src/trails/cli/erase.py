"""``trails erase`` and ``trails migrate``: erase recorded content with a sealed receipt, and
move a store written before content was kept apart to the layout that allows it."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from trails.audit.access import changing
from trails.audit.search import FILE_NAME, SearchIndex
from trails.cli.common import session_arg
from trails.compliance.access_log import AccessLogErasure, erase_from_access_log
from trails.compliance.erasure import ErasureBlocked, ErasureReceipt, erase
from trails.compliance.migration import migrate
from trails.config import Settings, load_settings
from trails.prov.iri import Minter
from trails.prov.recorder import Recorder
from trails.store.base import Store

__all__ = [
    "BLOCKED",
    "INTERRUPTED",
    "access_log_location",
    "forget_in_search_index",
    "register",
    "run_erase",
    "run_migrate",
]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``erase`` and ``migrate`` commands."""
    p = subparsers.add_parser(
        "erase",
        help="erase recorded content (keeping digests and seals) with a sealed receipt",
        description="Remove the content (prompts, completions, inputs, outputs, goals, "
        "memory text) of a data subject, a session, a memory or a content digest. The "
        "structure and each value's sha256 stay, every seal still verifies, and a "
        "trails:Erasure receipt (who, when, why, which digests) is recorded and sealed. "
        "Sessions under a legal hold are skipped and each hold is named; when holds cover "
        "everything selected nothing is erased, no receipt is written, and it exits 3. "
        "Nothing left to erase writes no receipt. The console's search index is brought "
        "up to the erasure before it reports. The embedded "
        "store's files are rewritten so no erased text survives in them (interrupted, "
        "`trails compact` finishes it). The endpoint's "
        "access log loses the text of every logged query that mentions a --principal or "
        "a --mention.",
    )
    p.add_argument(
        "--principal",
        action="append",
        default=[],
        metavar="DID",
        help="a data subject: their sessions and memories (repeatable)",
    )
    p.add_argument(
        "--session", action="append", default=[], metavar="IRI", help="a session (repeatable)"
    )
    p.add_argument(
        "--memory", action="append", default=[], metavar="ID", help="a memory by id (repeatable)"
    )
    p.add_argument(
        "--digest",
        action="append",
        default=[],
        metavar="SHA256",
        help="every content value with this sha256 (repeatable)",
    )
    p.add_argument("--reason", required=True, help="why (a request, a case); recorded")
    p.add_argument("--by", help="who erases (default: [agent] principal)")
    p.add_argument(
        "--no-compact",
        action="store_true",
        help="do not rewrite the store's files now (run `trails compact` later)",
    )
    p.add_argument(
        "--mention",
        action="append",
        default=[],
        metavar="TEXT",
        help="also remove from the endpoint's access log every logged query text that "
        "mentions TEXT (an e-mail, a name; each --principal is a mention too) (repeatable)",
    )
    p.add_argument(
        "--access-log",
        metavar="LOCATION",
        help="the endpoint's access-log store (default: [serve] access_log, or the one "
        "beside a directory store, when it exists)",
    )
    p.add_argument("--json", action="store_true", help="print the receipt as JSON")
    p.set_defaults(func=run_erase)
    m = subparsers.add_parser(
        "migrate",
        help="move content out of sealed graphs into content graphs, recorded and re-sealed",
        description="Move a store written before content was kept apart: each graph's "
        "content values go to its content graph, in one write per graph; each sealed "
        "graph is checked against its seal first (an altered graph is left as it is and "
        "named) and sealed again (a revision of its earlier seal). The migration is "
        "recorded as a trails:ContentMigration and sealed. Running it again does nothing.",
    )
    m.add_argument("--by", help="who migrates (default: [agent] principal)")
    m.add_argument("--json", action="store_true", help="print the receipt as JSON")
    m.set_defaults(func=run_migrate)


BLOCKED = 3
"""``trails erase``'s exit status when legal holds cover everything it selected."""

INTERRUPTED = (
    "erasure recorded; compaction interrupted: the erased text remains in the store files "
    "until `trails compact`"
)


def run_erase(args: argparse.Namespace) -> int:
    """Run ``trails erase``: the erasure (recorded and sealed in one write), the console's
    search index brought up to it, then the store's files rewritten."""
    settings = load_settings()
    with changing(args.store) as store:
        recorder = Recorder.from_settings(settings, store=store)
        try:
            receipt = erase(
                recorder,
                principal=args.principal,
                session=[session_arg(s) for s in args.session],
                memory=args.memory,
                digest=args.digest,
                reason=args.reason,
                by=args.by or settings.principal,
                compact=False,
            )
        except ErasureBlocked as blocked:
            print(f"trails: {blocked}", file=sys.stderr)
            return BLOCKED
        forget_in_search_index(store)  # also what an erasure killed before it left
        compacted = False
        if receipt.erased and not args.no_compact and callable(getattr(store, "compact", None)):
            try:
                store.compact()  # type: ignore[attr-defined]
            except KeyboardInterrupt:
                _say(receipt, args, compacted=False)
                print(f"trails: {INTERRUPTED}", file=sys.stderr)
                return 130
            compacted = True
    logged = _erase_access_log(args, settings)
    _say(receipt, args, compacted=compacted, logged=logged)
    return 0


def forget_in_search_index(store: Store) -> None:
    """Bring the console's full-text index beside a directory store up to the erasures
    just recorded (its rows of erased content deleted and its file rewritten), when
    there is one (none is created)."""
    folder = getattr(store, "path", None)
    if folder is None or not (Path(folder) / FILE_NAME).is_file():
        return
    index = SearchIndex(Path(folder) / FILE_NAME)
    try:
        index.forget_erased(store)
    finally:
        index.close()


def _say(
    receipt: ErasureReceipt,
    args: argparse.Namespace,
    *,
    compacted: bool,
    logged: AccessLogErasure | None = None,
) -> None:
    if args.json:
        data = asdict(receipt)
        data["compacted"] = compacted
        data["skipped"] = [{"target": s.target, "hold": asdict(s.hold)} for s in receipt.skipped]
        data["access_log"] = asdict(logged) if logged is not None else None
        print(json.dumps(data, indent=2))
        return
    for skipped in receipt.skipped:
        print(
            f"SKIPPED {skipped.target}: legal hold {skipped.hold.iri} "
            f"({skipped.hold.reason!r}, by {skipped.hold.placed_by})"
        )
    if not receipt.erasure:
        print("nothing left to erase: no content it selects remains; no receipt written")
    else:
        print(
            f"erased {receipt.erased} content value(s) from {len(receipt.sessions)} session(s) "
            f"and {len(receipt.memories)} memory(ies); receipt {receipt.erasure} "
            f"in {receipt.graph}, sealed by {receipt.seal or '(not sealed)'}"
            + ("; store files rewritten" if compacted else "")
            + ("; store files not rewritten: run `trails compact`" if args.no_compact else "")
        )
    if logged is not None:
        print(
            f"access log: removed the text of {logged.entries} logged query(ies) that "
            f"mention(s) them ({logged.values} value(s))"
            + ("; its files rewritten" if logged.compacted else "")
        )


def access_log_location(args: argparse.Namespace, settings: Settings) -> str | None:
    """The endpoint's access log a command also covers (erasure, retention): named,
    configured, or beside a directory store; None when there is none (an in-memory or
    remote store without one named)."""
    given = getattr(args, "access_log", None) or settings.section("serve").get("access_log")
    if given:
        text = str(given)
        return text if text.startswith(("http://", "https://")) else str(Path(text))
    where = args.store or settings.store
    if where.startswith(("http://", "https://", "memory:")):
        return None
    data = settings.resolve_path(where) if not args.store else Path(where)
    beside = data.with_name(data.name + ".access-log")
    return str(beside) if beside.is_dir() else None


def _erase_access_log(args: argparse.Namespace, settings: Settings) -> AccessLogErasure | None:
    mentions = [*args.principal, *args.mention]
    location = access_log_location(args, settings)
    if not mentions or location is None:
        return None
    with changing(location) as log:
        return erase_from_access_log(
            log,
            mentions=mentions,
            reason=args.reason,
            by=args.by or settings.principal,
            minter=Minter(settings.base_iri),
            compact=not args.no_compact,
        )


def run_migrate(args: argparse.Namespace) -> int:
    """Run ``trails migrate``."""
    settings = load_settings()
    with changing(args.store) as store:
        recorder = Recorder.from_settings(settings, store=store)
        receipt = migrate(recorder, by=args.by or settings.principal)
    if args.json:
        print(json.dumps(asdict(receipt), indent=2))
        return 0
    for graph, why in receipt.refused:
        print(f"NOT MIGRATED {graph}: {why}")
    if receipt.activity is None:
        print("nothing to migrate: content is already kept apart from structure")
    else:
        print(
            f"moved {receipt.moved} content value(s) of {len(receipt.graphs)} graph(s) to "
            f"their content graphs; {len(receipt.resealed)} re-sealed; receipt "
            f"{receipt.activity} in {receipt.graph}"
        )
    return 1 if receipt.refused else 0
