"""``trails sessions``: the sessions in the store, newest first, a page at a time.

Answered from the catalogue graph (the ``sessions`` pack query, see
``trails.catalogue.entries``), a page read second by second from the newest
(``trails.audit.sessions_page``): by default the newest 20, ``--limit N`` for
another page size, ``--all`` for every one; filters by principal, start-time
range and outcome (one of ``STATUSES``: ok, failed, stopped, interrupted,
open; ``error`` is failed). The table shows each session's outcome and why
(a session whose run failed is failed, though it ended ``ok``); the other
formats also carry its end status (``endStatus``). The table fits the terminal's
width (long cells cut with an ellipsis, the last columns left out when even
that is too wide, and named); a session without a label of its own shows an
empty label rather than its id again. A store recorded without the catalogue (before it
existed, or with ``[audit] seal = false``) lists nothing until
``trails catalogue rebuild`` has written its entries: the command says so.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from trails.audit.access import reading
from trails.audit.querypack import get_query
from trails.audit.render import table
from trails.audit.sessions_page import PAGE_MARKER, paged, sessions_page, sessions_page_to
from trails.catalogue.entries import OUTCOMES, has_entries
from trails.errors import UserError
from trails.store import QueryResult, Solutions
from trails.store.terms import Literal, Term

__all__ = ["DEFAULT_LIMIT", "PAGE_MARKER", "STATUSES", "paged", "register", "run"]

STATUSES = (*OUTCOMES, "error")
"""The outcomes ``--status`` filters by (``error``: the same as ``failed``)."""

DEFAULT_LIMIT = 20


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("the limit is at least 1")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``sessions`` command."""
    p = subparsers.add_parser(
        "sessions",
        help="list sessions (by principal, status, time range)",
        description="List the recorded sessions, newest first: IRI, principal, start, end, "
        "status, activities and cost, filtered by principal, status and time range, a page "
        "at a time.",
    )
    p.add_argument("--principal", help="only this principal (an IRI or DID)")
    p.add_argument("--since", help="started at or after (ISO 8601)")
    p.add_argument("--until", help="started before (ISO 8601)")
    p.add_argument(
        "--status",
        help="with this outcome (ok, failed, stopped, interrupted, open; error is failed)",
    )
    pages = p.add_mutually_exclusive_group()
    pages.add_argument(
        "--limit",
        type=_limit,
        default=DEFAULT_LIMIT,
        help=f"the newest N sessions (default {DEFAULT_LIMIT})",
    )
    pages.add_argument("--all", action="store_true", help="every session, not only the newest page")
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
    if args.status is not None and args.status not in STATUSES:
        raise UserError(
            f"--status {args.status!r} is not a session outcome: use one of {', '.join(STATUSES)}"
        )
    query = get_query("sessions")
    values = {
        k: getattr(args, k) for k in ("principal", "since", "until", "status") if getattr(args, k)
    }
    bound = query.bind(values)
    limit = None if args.all else args.limit
    with reading(args.store) as store:
        catalogued, recorded = has_entries(store)
        if recorded and not catalogued:
            print(
                "this store's sessions have no catalogue entries yet: "
                "run `trails catalogue rebuild` to list them",
                file=sys.stderr,
            )
        if args.format == "table":
            result = _outcome_first(_without_default_labels(sessions_page(store, bound, limit)))
            print(table(result, hide=set(query.params) - set(bound), fit=_terminal_width()))
            return 0
        data = sessions_page_to(store, bound, limit, format=args.format)
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return 0


def _outcome_first(result: QueryResult) -> QueryResult:
    """The rows with the outcome beside the session (a narrow terminal keeps it in view) and
    without the end status: the outcome says more (``ok`` is how a session whose run
    failed ended; the other formats keep the column)."""
    if not isinstance(result, Solutions) or "outcome" not in result.variables:
        return result
    names = [n for n in result.variables if n != "endStatus"]
    names.insert(1, names.pop(names.index("outcome")))
    at = [result.variables.index(n) for n in names]
    return Solutions(names, [tuple(row[i] for i in at) for row in result.rows])


def _terminal_width() -> int | None:
    """The terminal's width when printing to one (or ``COLUMNS`` is set), else None."""
    if not sys.stdout.isatty() and not os.environ.get("COLUMNS"):
        return None
    return max(40, shutil.get_terminal_size().columns)


def _without_default_labels(result: QueryResult) -> QueryResult:
    """The rows with an empty label where the label only repeats the session's id.

    A session started without a label is labelled ``session <uuid>`` (or its IRI
    when the catalogue found no label): in a table that is the first column again.
    """
    if not isinstance(result, Solutions) or "label" not in result.variables:
        return result
    at, of = result.variables.index("label"), result.variables.index("session")
    rows: list[tuple[Term | None, ...]] = []
    for row in result.rows:
        session, label = _text(row[of]), _text(row[at])
        uuid = session.rsplit(":", 1)[-1]
        if label in (session, f"session {uuid}", uuid):
            row = (*row[:at], None, *row[at + 1 :])
        rows.append(row)
    return Solutions(result.variables, rows)


def _text(term: Term | None) -> str:
    return "" if term is None else term.value if isinstance(term, Literal) else str(term)
