"""``trails verify``: recompute sealed graphs, walk the seal chains; the exit code is the verdict.

Exit 0: nothing was altered (open and interrupted sessions are listed, not
failures, unless ``--strict``). Exit 1: at least one integrity finding. Exit 2:
bad usage (an empty or malformed ``--session``, a malformed ``--expect-head``,
an unreadable key, a session that does not exist).
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from trails.audit.access import reading
from trails.audit.bundle import verify_bundle
from trails.audit.verify import load_public_key, verify
from trails.cli.common import session_arg
from trails.config import load_settings
from trails.errors import UserError
from trails.prov.iri import Minter
from trails.store.terms import IRI

__all__ = ["register", "run"]

_HASH = re.compile(r"[0-9a-f]{64}")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``verify`` command."""
    p = subparsers.add_parser(
        "verify",
        help="check that recorded sessions still match their seals",
        description="Recompute the canonical hash of every sealed graph, check each seal "
        "chain, its anchors and signatures, and list altered, missing and unsealed graphs. "
        "Exits 0 when nothing was altered, 1 on any finding, 2 on bad usage.",
    )
    p.add_argument("--session", help="check only this session (IRI or UUID) and its seals' links")
    p.add_argument("--key", help="trusted Ed25519 public key (PEM): every seal must be signed")
    p.add_argument(
        "--expect-head",
        metavar="HASH[,HASH]",
        help="head hash(es) printed by an earlier verify and kept elsewhere; each must "
        "still be in the ledger (catches the newest seals being removed)",
    )
    p.add_argument(
        "--strict", action="store_true", help="also fail on open and interrupted sessions"
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--bundle",
        metavar="FILE",
        help="check an evidence bundle (trails export --bundle) instead of a store; "
        "no store is opened",
    )
    p.set_defaults(func=run)


def _heads(text: str | None) -> list[str] | None:
    if text is None:
        return None
    heads = [h.strip().lower() for h in text.split(",")]
    if not heads or not all(_HASH.fullmatch(h) for h in heads):
        raise UserError(
            f"--expect-head {text!r} must be one or more 64-hex-digit seal hashes, "
            "separated by commas"
        )
    return heads


def run(args: argparse.Namespace) -> int:
    """Run the command; see ``register``."""
    settings = load_settings()
    session = None
    if args.session is not None:
        try:
            session = IRI(session_arg(args.session))
        except (ValueError, UnicodeError):
            raise UserError(f"--session {args.session!r} is not an IRI") from None
    heads = _heads(args.expect_head)
    key_path = args.key or settings.section("audit").get("verify_key")
    public_key = load_public_key(str(settings.resolve_path(key_path))) if key_path else None
    if args.bundle:
        if session is not None:
            raise UserError("--session checks a store; a bundle is checked whole")
        return _run_bundle(args, public_key, heads)
    with reading(args.store) as store:
        report = verify(
            store,
            session=session,
            minter=Minter(settings.base_iri),
            public_key=public_key,
            expect_heads=heads,
        )
    unfinished = report.open_sessions + report.interrupted_sessions
    failed = not report.ok or (args.strict and bool(unfinished))
    if args.json:
        print(
            json.dumps(
                {
                    "ok": not failed,
                    "graphs_checked": report.graphs_checked,
                    "seals": report.seals,
                    "chains": report.chains,
                    "signed": report.signed,
                    "head": report.head,
                    "heads": report.heads,
                    "open_sessions": report.open_sessions,
                    "interrupted_sessions": report.interrupted_sessions,
                    "erasures": report.erasures,
                    "findings": [
                        {"kind": f.kind, "subject": f.subject, "detail": f.detail}
                        for f in report.findings
                    ],
                },
                indent=2,
            )
        )
        return 1 if failed else 0
    for finding in report.findings:
        print(finding)
    for graph in report.interrupted_sessions:
        print(f"INTERRUPTED {graph}: its process died; ended and sealed by recovery")
    for graph in report.open_sessions:
        print(f"OPEN      {graph}: not ended yet, so not sealed yet")
    for erasure in report.erasures:
        print(f"ERASED    {erasure}")
    if not report.ok:
        verdict = f"FAILED: {len(report.findings)} finding(s)"
    elif failed:
        verdict = f"FAILED (--strict): {len(unfinished)} open or interrupted session(s)"
    else:
        verdict = "OK"
    print(
        f"{verdict}. {report.graphs_checked} sealed graph(s) recomputed; {report.seals} "
        f"seal(s) in {report.chains} chain(s), {report.signed} signed; head {report.head}"
    )
    return 1 if failed else 0


def _run_bundle(args: argparse.Namespace, public_key: Any, heads: list[str] | None) -> int:
    report = verify_bundle(args.bundle, public_key=public_key, expect_heads=heads)
    if args.json:
        print(
            json.dumps(
                {
                    "ok": report.ok,
                    "graphs_checked": report.graphs_checked,
                    "seals": report.seals,
                    "signed": report.signed,
                    "answers_checked": report.answers_checked,
                    "unsealed": report.unsealed,
                    "findings": [
                        {"kind": f.kind, "subject": f.subject, "detail": f.detail}
                        for f in report.findings
                    ],
                    "proves": report.proves,
                    "does_not_prove": report.does_not_prove,
                },
                indent=2,
            )
        )
        return 0 if report.ok else 1
    for finding in report.findings:
        print(finding)
    if report.ok:
        print(f"OK. The bundle {args.bundle} proves:")
        for line in report.proves:
            print(f"  - {line}")
    else:
        print(f"FAILED: {len(report.findings)} finding(s) in the bundle {args.bundle}")
    print("It does not prove:")
    for line in report.does_not_prove:
        print(f"  - {line}")
    return 0 if report.ok else 1
