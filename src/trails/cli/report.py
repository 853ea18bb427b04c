"""``trails report SESSION --out report.html``: the printable HTML audit report of one session."""

from __future__ import annotations

import argparse
import sys

from trails.audit.access import reading
from trails.audit.export import Redaction
from trails.audit.report import render_report, write_report
from trails.cli.common import session_arg
from trails.config import load_settings
from trails.prov.iri import Minter

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``report`` command."""
    p = subparsers.add_parser(
        "report",
        help="write the HTML audit report of a session",
        description="Write the printable HTML audit report of one session: its outcome, "
        "timeline, calls and their inputs and outputs, failures, costs and seal.",
    )
    p.add_argument("session", help="the session's IRI or UUID (trails sessions lists them)")
    p.add_argument("--out", "-o", help="HTML file to write (default: standard output)")
    p.add_argument(
        "--no-redaction",
        action="store_true",
        help="show every recorded value (default: apply the [[audit.redact]] rules)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the command; see ``register``."""
    settings = load_settings()
    minter = Minter(settings.base_iri)
    redaction = None if args.no_redaction else Redaction.from_settings(settings)
    session = session_arg(args.session)
    with reading(args.store) as store:
        if args.out:
            path = write_report(store, session, args.out, minter=minter, redaction=redaction)
            print(f"wrote {path}", file=sys.stderr)
        else:
            sys.stdout.write(render_report(store, session, minter=minter, redaction=redaction))
    return 0
