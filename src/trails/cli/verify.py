"""``trails verify``: recompute sealed graphs, walk the seal chain, exit non-zero on any finding."""

from __future__ import annotations

import argparse
import json

from trails.audit.access import reading
from trails.audit.verify import load_public_key, verify
from trails.cli.common import session_arg
from trails.config import load_settings
from trails.errors import UserError
from trails.prov.iri import Minter
from trails.store.terms import IRI

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``verify`` command."""
    p = subparsers.add_parser(
        "verify",
        help="check that recorded sessions still match their seals",
        description="Recompute the canonical hash of every sealed graph, check the seal "
        "chain and signatures, and list altered, missing and unsealed graphs. "
        "Exits 1 when anything does not match.",
    )
    p.add_argument(
        "--session", help="check only this session (IRI or UUID; the chain is always checked)"
    )
    p.add_argument("--key", help="Ed25519 public key (PEM) to check signatures with")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the command; see ``register``."""
    settings = load_settings()
    key_path = args.key or settings.section("audit").get("verify_key")
    public_key = load_public_key(str(settings.resolve_path(key_path))) if key_path else None
    session = None
    if args.session:
        try:
            session = IRI(session_arg(args.session))
        except ValueError:
            raise UserError(f"--session {args.session!r} is not an IRI") from None
    with reading(args.store) as store:
        report = verify(
            store, session=session, minter=Minter(settings.base_iri), public_key=public_key
        )
    if args.json:
        print(
            json.dumps(
                {
                    "ok": report.ok,
                    "graphs_checked": report.graphs_checked,
                    "seals": report.seals,
                    "signed": report.signed,
                    "head": report.head,
                    "open_sessions": report.open_sessions,
                    "findings": [
                        {"kind": f.kind, "subject": f.subject, "detail": f.detail}
                        for f in report.findings
                    ],
                },
                indent=2,
            )
        )
        return 0 if report.ok else 1
    for finding in report.findings:
        print(finding)
    for graph in report.open_sessions:
        print(f"OPEN      {graph}: not ended yet, so not sealed yet")
    verdict = "OK" if report.ok else f"FAILED: {len(report.findings)} finding(s)"
    print(
        f"{verdict}. {report.graphs_checked} sealed graph(s) recomputed; chain of "
        f"{report.seals} seal(s), {report.signed} signed; head {report.head}"
    )
    return 0 if report.ok else 1
