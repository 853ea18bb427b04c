"""``trails logs [SESSION] [-n N] [--json]``: sessions as conversations, newest first.

Each session's goal, what each completion was asked (the prompt's last lines) and
answered, and what each call was given and returned, in order, fitted to the
terminal's width (``trails.audit.logs``). Without SESSION, the newest N sessions
(default 1). Recorded values are shown as the ``[[audit.redact]]`` rules say, as in
the report; ``--no-redaction`` shows every value.
"""

from __future__ import annotations

import argparse
import shutil
import sys

from trails.audit.access import reading
from trails.audit.export import Redaction
from trails.audit.logs import conversation, render_json, render_text
from trails.audit.sessions_page import sessions_page
from trails.cli.common import session_arg
from trails.config import load_settings
from trails.errors import UserError
from trails.store.terms import IRI

__all__ = ["register", "run"]


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("show at least 1 session")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``logs`` command."""
    p = subparsers.add_parser(
        "logs",
        help="show sessions as conversations (prompts, answers, calls)",
        description="Show sessions as conversations, newest first: the goal, what each "
        "completion was asked and answered, what each call was given and returned, and the "
        "error of each that failed.",
    )
    p.add_argument("session", nargs="?", help="the session's IRI or UUID (default: the newest)")
    p.add_argument("-n", type=_count, default=1, help="the newest N sessions (default 1)")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.add_argument(
        "--no-redaction",
        action="store_true",
        help="show every recorded value (default: apply the [[audit.redact]] rules)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the command; see ``register``."""
    redaction = None if args.no_redaction else Redaction.from_settings(load_settings())
    with reading(args.store) as store:
        if args.session:
            try:
                sessions = [IRI(session_arg(args.session))]
            except ValueError:
                raise UserError(
                    f"{args.session!r} is neither a session IRI nor a session UUID "
                    "(trails sessions lists them)"
                ) from None
        else:
            page = sessions_page(store, {}, args.n)
            at = page.variables.index("session")
            sessions = [IRI.trusted(str(row[at])) for row in page.rows if row[at] is not None]
        logs = [conversation(store, s, redaction=redaction) for s in sessions]
    if args.json:
        print(render_json(logs))
    elif not logs:
        print("no sessions in this store", file=sys.stderr)
    else:
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else 100
        sys.stdout.write(render_text(logs, width=max(40, width)))
    return 0
