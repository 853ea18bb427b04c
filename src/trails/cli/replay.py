"""``trails replay`` and ``trails diff``: read a persisted session back, rerun it, compare runs.

``trails replay IRI`` prints the session rebuilt from its projection (writes
nothing). ``--rerun`` re-executes it with the recorded completions, records
the re-execution as a new session (``trails:rerunOf`` the recorded one; not
with ``--scratch``, nor when the store is open for reading only) and exits 1
when it diverges, naming the first differing activity; ``--import MODULE``
imports the modules that register its capabilities first. ``trails diff A B``
compares two recorded sessions' trajectories, read by SPARQL from both
graphs, and exits 1 when they differ; ``--html`` prints the console page that
shows the two side by side (the same comparison).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any
from urllib.parse import urlencode

from trails.agent import Session
from trails.audit.access import reading
from trails.cli.common import session_arg
from trails.config import load_settings
from trails.errors import UserError
from trails.store import Solutions, Store
from trails.store.terms import IRI, Literal
from trails.testing.replay import resolve_session
from trails.testing.rerun import compare, rerun, trajectory

__all__ = ["diff", "diff_url", "register", "replay"]


def register(sub: Any) -> None:
    """Add the ``replay`` and ``diff`` commands.

    Args:
        sub: the subparsers of the ``trails`` parser.
    """
    parser = sub.add_parser(
        "replay",
        help="print a persisted session; --rerun checks it still runs",
        description="Print a persisted session rebuilt from its projection (writing "
        "nothing); --rerun runs it again with its recorded completions and exits 1 when it "
        "diverges, naming the first activity that differs.",
    )
    parser.add_argument(
        "iri", help="the session: its IRI or UUID, or the graph it was persisted into"
    )
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="re-execute with the recorded completions; exit 1 on divergence",
    )
    parser.add_argument(
        "--capabilities",
        choices=("live", "recorded"),
        default="recorded",
        help="with --rerun: run capabilities live, or answer them from the recording (default)",
    )
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="with --rerun: import MODULE first (it registers the capabilities; found in the "
        "current directory too); repeatable",
    )
    parser.add_argument("--planner", help="with --rerun: run every plan with this strategy")
    parser.add_argument(
        "--scratch",
        action="store_true",
        help="with --rerun: record the re-execution in memory only, not as a new session",
    )
    parser.set_defaults(func=replay)

    parser = sub.add_parser(
        "diff",
        help="where two recorded sessions diverge",
        description="Compare the trajectories of two recorded sessions (read by SPARQL from "
        "both graphs) and print where they diverge; exit 1 when they differ.",
    )
    parser.add_argument("a", help="the reference session (IRI, UUID or persisted graph)")
    parser.add_argument("b", help="the session to compare with it (IRI, UUID or graph)")
    parser.add_argument(
        "--html",
        metavar="URL",
        nargs="?",
        const="",
        help="also print the address of the console page showing the two side by side "
        "(URL: where trails serve answers; default from [serve] host and port, else "
        "http://127.0.0.1:8080)",
    )
    parser.set_defaults(func=diff)


def _print_session(session: Session) -> None:
    origin = session.replayed_from
    assert origin is not None
    print(f"session    {origin.session}")
    print(f"graph      {origin.graph}")
    print(f"principal  {session.principal}")
    print(f"strategy   {session.strategy or '(settings)'}")
    print(f"budget     {session.budget or '(none)'}")
    print(f"card       {session.card if session.card is not None else '(none)'}")
    print(f"\nhistory ({len(session.history)} entries, {session.history.total_tokens} tokens):")
    for i, e in enumerate(session.history):
        pin = " pinned" if e.pinned else ""
        text = e.content.replace("\n", " ")
        print(f"  {i:>3} {e.role:<9} {e.tokens:>6} tok{pin}  {text[:100]}")
    print(f"\ninvocations ({len(session.invocations)}):")
    for i, r in enumerate(session.invocations):
        tail = f"  {r.error}" if r.error else ""
        print(f"  {i:>3} {r.capability} [{r.status}] args {r.args_sha256[:12]}{tail}")
    print(f"\nLLM completions ({len(origin.completions)}):")
    for i, a in enumerate(origin.completions):
        print(f"  {i:>3} {a}")
    for key, value in session.metadata.items():
        count = f"{len(value)} item(s)" if isinstance(value, list) else repr(value)[:100]
        print(f"\nmetadata {key}: {count}")


def replay(args: argparse.Namespace) -> int:
    """``trails replay IRI [--rerun]``.

    Returns:
        0; with ``--rerun``, 1 when the re-execution diverged.

    Raises:
        UserError: a module given to ``--import`` cannot be imported.
        SessionError: the IRI names no persisted session.
    """
    if args.imports and "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the user's own modules, as `python -m` would find them
    for name in args.imports:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise UserError(f"--import {name}: {exc}") from exc
    iri = session_arg(args.iri)
    with reading(args.store) as store:
        session = Session.replay(iri, store=store)
        if not args.rerun:
            _print_session(session)
            return 0
        into = None if args.scratch or getattr(store, "read_only", False) else store
        if into is None and not args.scratch:
            print(
                "trails: the store is open for reading only: the rerun is not recorded",
                file=sys.stderr,
            )
        report = rerun(
            iri, store=store, capabilities=args.capabilities, planner=args.planner, into=into
        )
        print(report.describe())
        if report.recorded_as is not None:
            print(f"recorded as {report.recorded_as}")
            print(f"compare:    trails diff {report.session} {report.recorded_as} --html")
        return 0 if report.identical else 1


def diff(args: argparse.Namespace) -> int:
    """``trails diff A B``: compare two sessions' trajectories.

    Each side says how many activities its session holds (the count ``trails
    sessions`` shows: completions, calls and the plan runs around them) and how
    many of them are compared (the completions and calls, in start order).

    Returns:
        0 when they are identical, 1 when they diverge.

    Raises:
        UserError: an argument is neither a session IRI nor a session UUID.
        SessionError: an IRI names no session.
    """
    with reading(args.store) as store:
        a = _session(args.a, store)
        b = _session(args.b, store)
        left, right = trajectory(store, a), trajectory(store, b)
        for side, iri, steps in (("A", a, left), ("B", b, right)):
            count = _activities(store, iri)
            print(
                f"{side} {iri}: {count} activities, {len(steps)} compared (completions and calls)"
            )
        found = compare(left, right)
        if found is None:
            print("identical: same actions, inputs and observations in the same order")
        else:
            print(found.describe("A", "B"))
        if args.html is not None:
            print(f"console: {diff_url(args.html or _served_at(), str(a), str(b))}")
        sys.stdout.flush()
        return 0 if found is None else 1


def _served_at() -> str:
    """Where ``trails serve`` answers by default: ``[serve] host`` and ``port``."""
    section = load_settings().section("serve")
    host = str(section.get("host", "127.0.0.1"))
    if host in ("0.0.0.0", "::", ""):  # every address: this machine's own
        host = "127.0.0.1"
    where = f"[{host}]" if ":" in host else host
    return f"http://{where}:{section.get('port', 8080)}"


def diff_url(base: str, a: str, b: str) -> str:
    """The console page comparing sessions ``a`` and ``b`` on the server at ``base``."""
    query = urlencode({"a": a, "b": b})
    return f"{base.rstrip('/')}/console/diff?{query}"


_ACTIVITIES = """
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT $session (COUNT(DISTINCT ?a) AS ?n)
WHERE { GRAPH $session { ?a trails:inSession $session } }
GROUP BY $session
"""


def _session(text: str, store: Store) -> IRI:
    """The session ``text`` names (an IRI or a UUID), with a one-line error for anything else."""
    value = session_arg(text)
    try:
        IRI(value)
    except ValueError:
        raise UserError(
            f"{text!r} is not a session: give its IRI or the UUID `trails sessions` shows"
        ) from None
    return resolve_session(value, store)


def _activities(store: Store, session: IRI) -> int:
    """The activities recorded in a session (as the catalogue counts them)."""
    rows = store.query(_ACTIVITIES, {"session": session})
    counts = rows.column("n") if isinstance(rows, Solutions) else []
    count = counts[0] if counts else None  # no row: no activity grouped
    return int(count.value) if isinstance(count, Literal) else 0
