"""``trails prove`` and ``trails head``: files that prove a session is in the transparency log.

``trails prove SESSION --out proof.json`` writes the session's seals, their RFC 9162
inclusion proofs and the newest signed tree head; ``trails verify --proof proof.json``
checks it with no store. ``trails head --out head.json`` writes the newest tree head,
to keep elsewhere; ``trails verify --since-head head.json`` later proves that the log
still extends it. Both only read the store (the log grows at each ``trails verify``
checkpoint). Exit 0 on success, 2 on bad usage or a session not in the log yet.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from trails.audit.access import reading
from trails.audit.files import write_bytes
from trails.cli.common import session_arg
from trails.config import load_settings
from trails.errors import UserError
from trails.evidence.proofs import (
    ProofReport,
    TimestampCheck,
    TreeHead,
    check_head,
    read_json,
    verify_proof,
)
from trails.evidence.timestamp import load_certificates, timestamp_checker
from trails.evidence.transparency import NotInLog, log_iri, prove_session, read_head, since_head
from trails.prov.iri import Minter
from trails.store.base import Store
from trails.store.terms import IRI

__all__ = [
    "print_report",
    "register",
    "report_json",
    "run_head",
    "run_proof",
    "run_prove",
    "since_head_check",
]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``prove`` and ``head`` commands."""
    p = subparsers.add_parser(
        "prove",
        help="write a session's inclusion proofs in the transparency log",
        description="Write the session's seals, their inclusion proofs (RFC 9162, O(log n) "
        "hashes) and the newest signed tree head to a JSON file that `trails verify --proof` "
        "checks without the store. Seals enter the log when `trails verify` records a "
        "checkpoint.",
    )
    p.add_argument("session", help="the session (IRI or UUID)")
    p.add_argument("--out", required=True, help="the proof file to write (JSON)")
    p.set_defaults(func=run_prove)
    h = subparsers.add_parser(
        "head",
        help="write the transparency log's newest signed tree head",
        description="Write the newest tree head (size, root hash, time, signature, "
        "time-stamp) to a JSON file. Keep it apart from the store: `trails verify "
        "--since-head FILE` proves the log still extends it.",
    )
    h.add_argument("--out", required=True, help="the head file to write (JSON)")
    h.set_defaults(func=run_head)


def _dump(data: object) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8")


def run_prove(args: argparse.Namespace) -> int:
    """Run ``trails prove``; see ``register``."""
    settings = load_settings()
    try:
        session = IRI(session_arg(args.session))
    except (ValueError, UnicodeError):
        raise UserError(f"{args.session!r} is not a session IRI or UUID") from None
    with reading(args.store) as store:
        try:
            proof = prove_session(store, Minter(settings.base_iri), session)
        except NotInLog as exc:
            raise UserError(str(exc)) from None
    write_bytes(args.out, _dump(proof), what="the proof")
    head = proof["head"]
    hops = max((len(s["path"]) for s in proof["seals"]), default=0)
    print(
        f"wrote {args.out}: {len(proof['seals'])} seal(s) of {session}, proved against the "
        f"tree head of {head['size']} leaves (root {head['root'][:16]}…, {hops} hash(es) a proof)"
    )
    return 0


def run_head(args: argparse.Namespace) -> int:
    """Run ``trails head``; see ``register``."""
    settings = load_settings()
    with reading(args.store) as store:
        head = read_head(store, log_iri(Minter(settings.base_iri)))
    if head is None:
        raise UserError(
            "the store has no transparency log yet: `trails verify` records the first tree "
            "head with its checkpoint"
        )
    write_bytes(args.out, _dump(head.to_json()), what="the tree head")
    print(
        f"wrote {args.out}: tree head of {head.size} leaves, root {head.root[:16]}…, "
        f"{'signed' if head.signature else 'unsigned'}"
        f"{', time-stamped' if head.timestamp else ''}, at {head.at}"
    )
    return 0


# -- the checks ``trails verify`` runs with --proof and --since-head --------------------


def _timestamp_check(args: argparse.Namespace) -> tuple[TimestampCheck, bool]:
    """The time-stamp check, and whether it verifies tokens against a TSA certificate
    (``--tsa-cert``, else ``[audit] timestamp_cert``)."""
    settings = load_settings()
    path = getattr(args, "tsa_cert", None) or settings.section("audit").get("timestamp_cert")
    roots = load_certificates(settings.resolve_path(str(path))) if path else None
    return timestamp_checker(roots), bool(roots)


def report_json(report: ProofReport) -> dict[str, Any]:
    """A proof or head check as JSON."""
    return {
        "ok": report.ok,
        "seals": report.seals,
        "head": report.head.to_json() if report.head is not None else None,
        "findings": [
            {"kind": f.kind, "subject": f.subject, "detail": f.detail} for f in report.findings
        ],
        "proves": report.proves,
        "does_not_prove": report.does_not_prove,
    }


def print_report(report: ProofReport, what: str) -> None:
    """A proof or head check for people: findings, then what it proves and does not."""
    for finding in report.findings:
        print(finding)
    if report.ok:
        print(f"OK. {what} proves:")
        for line in report.proves:
            print(f"  - {line}")
    else:
        print(f"FAILED: {len(report.findings)} finding(s) in {what}")
    if report.does_not_prove:
        print("It does not prove:")
        for line in report.does_not_prove:
            print(f"  - {line}")


def run_proof(args: argparse.Namespace, public_key: Any) -> int:
    """``trails verify --proof FILE [--key PEM] [--session-file TRIG]``: no store opened."""
    check, trusted = _timestamp_check(args)
    report = verify_proof(
        args.proof,
        public_key=public_key,
        session_file=args.session_file,
        timestamp=check,
        tsa_trusted=trusted,
    )
    if args.json:
        print(json.dumps(report_json(report), indent=2))
    else:
        print_report(report, f"the proof {args.proof}")
    return 0 if report.ok else 1


def since_head_check(store: Store, args: argparse.Namespace, public_key: Any) -> ProofReport:
    """``trails verify --since-head FILE``: the kept head's own checks, then a consistency
    proof that the store's log extends it."""
    old = TreeHead.from_json(read_json(args.since_head, "tree head"), args.since_head)
    report = ProofReport(head=old)
    check, trusted = _timestamp_check(args)
    check_head(old, report, public_key=public_key, timestamp=check, tsa_trusted=trusted)
    since_head(store, Minter(load_settings().base_iri), old, report)
    return report
