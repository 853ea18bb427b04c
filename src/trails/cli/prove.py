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
import base64
import json
from pathlib import Path
from typing import Any

from trails.audit.access import reading
from trails.audit.files import write_bytes
from trails.cli.common import session_arg
from trails.config import load_settings
from trails.errors import UserError
from trails.evidence.checkpoint import configured_origin
from trails.evidence.findings import Finding
from trails.evidence.note import NoteError, parse_checkpoint, parse_note, vkey
from trails.evidence.proofs import (
    ProofError,
    ProofReport,
    TimestampCheck,
    TreeHead,
    check_checkpoint,
    check_head,
    read_json,
    verify_proof,
)
from trails.evidence.timestamp import load_certificates, timestamp_checker
from trails.evidence.transparency import (
    NotInLog,
    consistency_from,
    log_iri,
    prove_session,
    read_head,
    since_head,
)
from trails.prov.iri import Minter
from trails.store.base import Store
from trails.store.terms import IRI

__all__ = [
    "expect_head_check",
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
        description="Write the newest tree head as a C2SP checkpoint (origin, size, base64 "
        "root hash in a signed note with the log's Ed25519 note signature; it needs "
        "[audit] signing_key), or as trails' JSON form (size, root hash, time, signature, "
        "RFC 3161 time-stamp, and the checkpoint). Keep it apart from the store: `trails "
        "verify --since-head FILE` proves the log still extends it.",
    )
    h.add_argument("--out", required=True, help="the file to write")
    h.add_argument(
        "--from",
        dest="old_size",
        type=int,
        metavar="N",
        help="write the C2SP tlog-witness add-checkpoint body instead: the old size N, the "
        "consistency proof from the tree of N leaves (base64, one hash a line), a blank line "
        "and the checkpoint",
    )
    h.add_argument(
        "--format",
        choices=("checkpoint", "json"),
        help="checkpoint (C2SP signed note) or json (default: json for a FILE ending in "
        ".json, else checkpoint)",
    )
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
    minter = Minter(settings.base_iri)
    if args.old_size is not None:
        return _write_consistency(args, minter)
    with reading(args.store) as store:
        head = read_head(store, log_iri(minter))
    if head is None:
        raise UserError(
            "the store has no transparency log yet: `trails verify` records the first tree "
            "head with its checkpoint"
        )
    form = args.format or ("json" if str(args.out).endswith(".json") else "checkpoint")
    if form == "json":
        write_bytes(args.out, _dump(head.to_json()), what="the tree head")
        print(
            f"wrote {args.out}: tree head of {head.size} leaves, root {head.root[:16]}…, "
            f"{'signed' if head.signature else 'unsigned'}"
            f"{', time-stamped' if head.timestamp else ''}, at {head.at}"
        )
        return 0
    if not head.note:
        raise UserError(
            "the newest tree head has no signed checkpoint: configure [audit] signing_key "
            "(the next `trails verify` signs one), or write the JSON form (--format json)"
        )
    write_bytes(args.out, head.cosigned_note().encode("utf-8"), what="the checkpoint")
    checkpoint = parse_checkpoint(parse_note(head.note).text)
    key = vkey(checkpoint.origin, base64.b64decode(head.key))
    cosigned = f", {len(head.cosignatures)} witness cosignature(s)" if head.cosignatures else ""
    print(
        f"wrote {args.out}: checkpoint of {head.size} leaves (C2SP signed note{cosigned}), "
        f"origin {checkpoint.origin}; verifier key {key}"
    )
    return 0


def _write_consistency(args: argparse.Namespace, minter: Minter) -> int:
    """``trails head --from N --out FILE``: the add-checkpoint body of c2sp.org/tlog-witness."""
    if args.old_size < 0 or args.format == "json":
        raise UserError("--from N takes a tree size of 0 or more and writes a checkpoint body")
    with reading(args.store) as store:
        try:
            head, proof = consistency_from(store, minter, args.old_size)
        except NotInLog as exc:
            raise UserError(str(exc)) from None
    if not head.note:
        raise UserError("the newest tree head has no signed checkpoint: set [audit] signing_key")
    lines = [f"old {args.old_size}", *(base64.b64encode(h).decode("ascii") for h in proof)]
    write_bytes(args.out, ("\n".join(lines) + "\n\n" + head.note).encode("utf-8"), what="it")
    print(
        f"wrote {args.out}: consistency proof of {len(proof)} hash(es) from {args.old_size} to "
        f"{head.size} leaves, and the checkpoint"
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
    _witnessed(report, args)
    if args.json:
        print(json.dumps(report_json(report), indent=2))
    else:
        print_report(report, f"the proof {args.proof}")
    return 0 if report.ok else 1


def _witnessed(report: ProofReport, args: argparse.Namespace) -> None:
    """``--proof FILE --witness KEY... [--quorum N]``: the proof's head's checkpoint must
    carry the cosignatures (a finding names the witnesses missing or invalid)."""
    from trails.cli.witness import note_quorum, required_witnesses

    keys, quorum = required_witnesses(args)
    if not keys or report.head is None:
        return
    if not report.head.note:
        report.findings.append(
            Finding("witness", str(args.proof), "its tree head carries no signed checkpoint")
        )
        return
    ok, line = note_quorum(report.head.note, keys, quorum, "the proof's tree head")
    if ok:
        report.proves.append(line.removeprefix("WITNESSED "))
    else:
        report.findings.append(Finding("witness", str(args.proof), line.split(": ", 1)[1]))


def since_head_check(
    store: Store, args: argparse.Namespace, public_key: Any, path: str | None = None
) -> ProofReport:
    """``trails verify --since-head FILE``: the kept head's own checks (a C2SP checkpoint
    or trails' JSON head), then a consistency proof that the store's log extends it."""
    path = path or args.since_head
    minter = Minter(load_settings().base_iri)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ProofError(f"cannot read the tree head {path}: {exc}") from None
    if data.lstrip().startswith(b"{"):
        old = TreeHead.from_json(read_json(path, "tree head"), path)
        report = ProofReport(head=old)
        check, trusted = _timestamp_check(args)
        check_head(old, report, public_key=public_key, timestamp=check, tsa_trusted=trusted)
        since_head(store, minter, old, report)
        return report
    try:
        note = parse_note(data)
        checkpoint = parse_checkpoint(note.text)
    except NoteError as exc:
        raise NoteError(
            f"{path} is neither a C2SP checkpoint nor a trails tree head: {exc}"
        ) from None
    current = read_head(store, log_iri(minter))
    origin = configured_origin(minter)
    if current is not None and current.note:
        origin = parse_checkpoint(parse_note(current.note).text).origin
    report = ProofReport()
    check_checkpoint(
        note,
        checkpoint,
        report,
        origin=origin,
        public_key=public_key,
        log_key=current.key if current is not None else "",
    )
    if report.ok:
        old = TreeHead(log=str(log_iri(minter)), size=checkpoint.size,
                       root=checkpoint.root.hex(), at="", hash="")  # fmt: skip
        since_head(store, minter, old, report, subject=f"checkpoint {checkpoint.size}")
    return report


def expect_head_check(
    store: Store, args: argparse.Namespace, public_key: Any, path: str
) -> ProofReport:
    """``trails verify --expect-head FILE``: the kept checkpoint (or JSON head) is the log's
    newest head exactly (nothing appended since, nothing rewritten)."""
    report = since_head_check(store, args, public_key, path)
    head = read_head(store, log_iri(Minter(load_settings().base_iri)))
    kept = _kept_size_root(path)
    if report.ok and head is not None and (head.size, head.root) != kept:
        report.findings.append(
            Finding(
                "head",
                f"checkpoint {kept[0]}",
                f"the log's newest tree head is {head.size} leaves, root {head.root[:16]}…, "
                f"not the {kept[0]} leaves, root {kept[1][:16]}… expected",
            )
        )
    return report


def _kept_size_root(path: str) -> tuple[int, str]:
    data = Path(path).read_bytes()
    if data.lstrip().startswith(b"{"):
        head = TreeHead.from_json(read_json(path, "tree head"), path)
        return head.size, head.root
    checkpoint = parse_checkpoint(parse_note(data).text)
    return checkpoint.size, checkpoint.root.hex()
