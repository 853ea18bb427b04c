"""``trails verify``: recompute sealed graphs and content, walk the seal chains; the exit code
is the verdict.

Every content value (prompts, completions, tool inputs and outputs, goals, answers,
history, memory text) is checked against the digest its sealed graph keeps
(``trails.evidence.content``): ``CONTENT-ALTERED``, ``CONTENT-MISSING`` and
``CONTENT-FOREIGN`` findings name the entity and its session; content removed under a
sealed erasure or retention receipt is listed with the receipt, not a finding.

A plain ``trails verify`` is the full check: every sealed graph rehashed, all content
recomputed, every graph of the store accounted for, in one pass (a progress bar on a
terminal's stderr, sessions and quads per second in its last line), its per-graph work
on every core (``--jobs N``; ``trails.evidence.graphwork``). ``--quick`` (for
scheduled runs between full ones) checks only what was sealed since the latest
verification checkpoint, and says what it did not recheck and when the last full
verification ran (``trails.evidence.quick``). ``--full`` is the default, kept as a name.
A verification that finds nothing records a new checkpoint (``--no-checkpoint`` leaves the
store untouched).

Exit 0: nothing was altered (open and interrupted sessions are listed, not
failures, unless ``--strict``, which also names each capability call that
started and did not finish: ``trails.evidence.interruptions``, and fails on a tree
head that ``[audit] timestamp_url`` is set for and no authority stamped). Exit 1: at least
one integrity finding (or, with ``--strict``, anything unfinished). Exit 2:
bad usage (an empty or malformed ``--session``, a malformed ``--expect-head``,
an unreadable key, a session that does not exist).

``--proof FILE`` checks an inclusion proof of ``trails prove`` with no store (with
``--session-file``, the session's exported TriG too); ``--since-head FILE`` proves that
the transparency log extends a tree head kept elsewhere (``trails.cli.prove``).

After recording its checkpoint, it asks the ``[[audit.witnesses]]`` to cosign the new
signed checkpoint (one ``WITNESS`` line each; ``trails.evidence.witnessing``).
``--witness KEY... --quorum N`` fails unless N of those witnesses validly cosigned the
checkpoint (the kept one of ``--since-head``/``--expect-head``, the ``--proof`` file's,
else the log's newest),
naming the witnesses missing or invalid; ``--strict`` requires every configured witness.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from trails.audit.access import reading
from trails.cli.common import session_arg
from trails.cli.prove import (
    expect_head_check,
    print_report,
    report_json,
    run_proof,
    since_head_check,
)
from trails.cli.witness import ask_configured, quorum_lines, required_witnesses
from trails.config import load_settings
from trails.errors import StoreError, UserError
from trails.evidence.checks import checkpoint_report
from trails.evidence.findings import Finding
from trails.evidence.interruptions import calls_cut_short
from trails.evidence.ledger import ledger_iri
from trails.evidence.proofs import ProofReport
from trails.evidence.quick import QUICK
from trails.evidence.timestamp import configured_tsas
from trails.evidence.transparency import log_iri, read_head
from trails.evidence.verify import VerifyReport, load_public_key, verify
from trails.evidence.witnessing import configured_witnesses
from trails.prov.iri import Minter
from trails.store.base import Store
from trails.store.terms import IRI

__all__ = ["register", "run"]

_HASH = re.compile(r"[0-9a-f]{64}")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``verify`` command."""
    p = subparsers.add_parser(
        "verify",
        help="check that recorded sessions still match their seals",
        description="Recompute the canonical hash of sealed graphs and the digest of every "
        "content value (prompts, completions, tool inputs and outputs, goals, answers, memory "
        "text), check each seal chain, its anchors and signatures, and list altered, missing "
        "and unsealed graphs and altered, missing and foreign content. "
        "Every graph and all content are read, in one pass; --quick checks only what was "
        "sealed since the latest verification checkpoint. A verification that finds nothing "
        "records a checkpoint. "
        "Exits 0 when nothing was altered, 1 on any finding, 2 on bad usage.",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="the full check (the default): every sealed graph and all content",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="only the graphs sealed since the latest checkpoint, their links and the memories "
        "they learned (for scheduled runs between full ones); says what it did not recheck",
    )
    p.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="worker processes for the full check (default: every core, for a store of "
        "200 graphs or more; 1: all in this process)",
    )
    p.add_argument(
        "--no-checkpoint",
        action="store_true",
        help="do not record a verification checkpoint (leave the store unchanged)",
    )
    p.add_argument(
        "--session",
        help="check only this session (IRI or UUID), its seals' links and the memories it learned",
    )
    p.add_argument("--key", help="trusted Ed25519 public key (PEM): every seal must be signed")
    p.add_argument(
        "--expect-head",
        metavar="HASH[,HASH]|FILE",
        help="head hash(es) printed by an earlier verify and kept elsewhere; each must "
        "still be in the ledger (catches the newest seals being removed); or a checkpoint "
        "file (trails head): the log's newest tree head must be exactly it",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="also fail on open and interrupted sessions, name each capability call "
        "that started and did not finish, and fail on a tree head no configured "
        "time-stamping authority stamped or a configured witness did not cosign",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--proof",
        metavar="FILE",
        help="check an inclusion proof (trails prove) offline instead of a store; "
        "no store is opened",
    )
    p.add_argument(
        "--session-file",
        metavar="FILE",
        help="with --proof: the session's exported TriG, its graph and content checked "
        "against the proved seal",
    )
    p.add_argument(
        "--since-head",
        metavar="FILE",
        help="a tree head kept elsewhere (trails head): prove with a consistency proof "
        "that the transparency log still extends it",
    )
    p.add_argument(
        "--tsa-cert",
        metavar="PEM",
        help="the time-stamping authority's certificate: check tree heads' RFC 3161 "
        "tokens against it (default: [audit] timestamp_cert)",
    )
    p.add_argument(
        "--witness",
        action="extend",
        nargs="+",
        metavar="KEY",
        help="a witness's verifier key (name+id+base64, or a file holding it): the checkpoint "
        "(the kept one of --since-head/--expect-head, the --proof file's, else the log's "
        "newest) must carry its valid cosignature (C2SP tlog-cosignature); repeatable",
    )
    p.add_argument(
        "--quorum",
        type=int,
        metavar="N",
        help="with --witness: how many of those witnesses must have cosigned (default: all)",
    )
    p.add_argument(
        "--controls",
        metavar="DIR",
        help="also check that each control of DIR is the definition its newest recorded "
        "evaluation used (a control edited after it ran is a finding)",
    )
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
            "separated by commas, or a checkpoint file"
        )
    return heads


def _expected(text: str | None) -> tuple[list[str] | None, str | None]:
    """``--expect-head``: seal hashes, or the path of a kept checkpoint (or JSON head)."""
    first = text.split(",")[0].strip().lower() if text is not None else ""
    if text is not None and not _HASH.fullmatch(first) and Path(text).is_file():
        return None, text
    return _heads(text), None


def _controls(directory: str | None) -> list[Any] | None:
    """``--controls DIR``'s controls, read (and refused) before the store is opened."""
    if directory is None:
        return None
    from trails.controls import load_controls

    return load_controls(directory)


def _changed_controls(store: Any, controls: list[Any], ledger: IRI) -> list[Finding]:
    """A ``control`` finding per control edited after its newest sealed evaluation."""
    from trails.controls import definition_changes

    return [
        Finding(
            "control",
            cid,
            f"the definition changed after it ran: its newest recorded evaluation used "
            f"sha256 {before}, the file now has {after}",
        )
        for cid, before, after in definition_changes(store, controls, ledger=ledger)
    ]


def run(args: argparse.Namespace) -> int:
    """Run the command; see ``register``."""
    settings = load_settings()
    session = None
    if args.session is not None:
        try:
            session = IRI(session_arg(args.session))
        except (ValueError, UnicodeError):
            raise UserError(f"--session {args.session!r} is not an IRI") from None
    heads, expected_file = _expected(args.expect_head)
    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs {args.jobs} must be 1 or more (1: no worker processes)")
    key_path = args.key or settings.section("audit").get("verify_key")
    public_key = load_public_key(str(settings.resolve_path(key_path))) if key_path else None
    required, quorum = required_witnesses(args)
    if required and args.bundle:
        raise UserError("--witness checks a store's checkpoint, a kept one or a proof's")
    asked, timeout = configured_witnesses(settings)
    if args.bundle:
        if session is not None:
            raise UserError("--session checks a store; a bundle is checked whole")
        return _run_bundle(args, public_key, heads)
    if args.proof or args.session_file:
        if not args.proof or session is not None or args.since_head:
            raise UserError("--session-file goes with --proof, which checks a proof file alone")
        return run_proof(args, public_key)
    controls = _controls(args.controls)
    with reading(args.store) as store:
        report = verify(
            store,
            session=session,
            minter=Minter(settings.base_iri),
            public_key=public_key,
            expect_heads=heads,
            quick=args.quick,
            progress=_progress_bar() if session is None and not args.quick else None,
            jobs=args.jobs,
        )
        if controls is not None:
            report.findings += _changed_controls(
                store, controls, ledger_iri(Minter(settings.base_iri))
            )
        cut = calls_cut_short(store, session) if args.strict else []
        since = since_head_check(store, args, public_key) if args.since_head else None
        if expected_file is not None:
            exact = expect_head_check(store, args, public_key, expected_file)
            since = _merged(since, exact)
        recorded, witnessed = None, []
        if report.ok and session is None and not args.no_checkpoint and (not since or since.ok):
            recorded = _checkpoint(store, report)
            if recorded is not None and asked:
                from trails.prov.recorder import Recorder  # a writer's (see _checkpoint)

                witnessed = ask_configured(Recorder(store, base_iri=settings.base_iri), asked,
                                           timeout)  # fmt: skip
        unstamped = _unstamped(store, settings) if args.strict and session is None else []
        kept = expected_file or args.since_head
        if not required and args.strict and asked and session is None:
            required, quorum = [w.cosigner for w in asked], len(asked)  # all configured
        quorum_seen = quorum_lines(store, required, quorum, kept) if required else []
    unwitnessed = [line for line in quorum_seen if line.startswith("WITNESSES")]
    unfinished = report.open_sessions + report.interrupted_sessions
    failed = not report.ok or (args.strict and bool(unfinished or cut or unstamped))
    failed = failed or (since is not None and not since.ok) or bool(unwitnessed)
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
                    "mode": report.mode,
                    "graphs_counted": report.graphs_counted,
                    "not_rechecked": report.not_rechecked,
                    "last_full": report.last_full or None,
                    "sessions_checked": report.sessions_checked,
                    "quads_read": report.quads_read,
                    "seconds": round(report.seconds, 3),
                    "checkpoint": recorded,
                    "open_sessions": report.open_sessions,
                    "interrupted_sessions": report.interrupted_sessions,
                    "projections": report.projections,
                    "interrupted_calls": [asdict(c) for c in cut],
                    "unstamped": unstamped,
                    "removed_by_retention": [asdict(r) for r in report.removed],
                    "erasures": report.erasures,
                    "content": {
                        "graphs": report.content.graphs,
                        "values": report.content.values,
                        "hash_only": report.content.hash_only,
                        "removed_on_record": report.content.lines(),
                    },
                    "findings": [_finding(f) for f in report.findings],
                    "since_head": report_json(since) if since is not None else None,
                    "witnesses": witnessed,
                    "quorum": quorum_seen,
                },
                indent=2,
            )
        )
        return 1 if failed else 0
    if since is not None:
        print_report(since, f"the log against the tree head {args.since_head or expected_file}")
    for finding in report.findings:
        print(finding)
    for removed in report.removed:
        print(removed)
    for graph in report.interrupted_sessions:
        print(f"INTERRUPTED {graph}: ended as interrupted (stopped or interrupted while running)")
    for call in cut:
        print(call)
    for line in [*unstamped, *witnessed, *quorum_seen]:
        print(line)
    for graph in report.open_sessions:
        print(f"OPEN      {graph}: not ended yet, so not sealed yet")
    for graph in report.projections:
        print(f"PROJECTION {graph}: a session persisted for replay (not sealed evidence)")
    for erasure in report.erasures:
        print(f"ERASED    {erasure}")
    for line in report.content.lines():
        print(f"ACCOUNTED {line}")
    if not report.ok:
        verdict = f"FAILED: {len(report.findings)} finding(s)"
    elif since is not None and not since.ok:
        verdict = f"FAILED: {_since_verdict(since, str(args.since_head or expected_file))}"
    elif unwitnessed:
        verdict = "FAILED: the checkpoint lacks the cosignatures required (--witness, --quorum)"
    elif failed:
        verdict = (
            f"FAILED (--strict): {len(unfinished)} open or interrupted session(s), "
            f"{len(cut)} call(s) cut short, {len(unstamped)} tree head(s) not time-stamped"
        )
    else:
        verdict = "OK"
    scope = ""
    if report.mode == QUICK and report.checkpoint is not None:
        print(_not_rechecked(report))
        scope = f" (quick, since the checkpoint of {report.checkpoint.at})"
    elif report.note and session is None:
        scope = f" (full: {report.note})"
    if recorded is not None:
        print(f"checkpoint recorded: {recorded}")
    if session is None and report.mode != QUICK:
        print(_throughput(report))
    print(
        f"{verdict}. {report.graphs_checked} sealed graph(s) recomputed{scope}; "
        f"{_content_line(report)}; {report.seals} "
        f"seal(s) in {report.chains} chain(s), {report.signed} signed; head {report.head}"
    )
    return 1 if failed else 0


def _unstamped(store: Store, settings: Any) -> list[str]:
    """With a TSA configured, the newest tree head (the one this verification's checkpoint
    wrote, if it wrote one) when no TSA stamped it: a ``--strict`` failure."""
    if not configured_tsas(settings):
        return []
    head = read_head(store, log_iri(Minter(settings.base_iri)))
    if head is None or head.timestamp:
        return []
    return [
        f"UNSTAMPED tree head {head.size}@{head.at}: [audit] timestamp_url is set but no "
        "time-stamping authority stamped it (see the warning above)"
    ]


def _merged(a: ProofReport | None, b: ProofReport) -> ProofReport:
    if a is None:
        return b
    a.findings.extend(b.findings)
    a.proves.extend(p for p in b.proves if p not in a.proves)
    a.does_not_prove.extend(p for p in b.does_not_prove if p not in a.does_not_prove)
    return a


def _since_verdict(since: ProofReport, path: str) -> str:
    """What failed against a kept head, named by its first finding's kind."""
    kinds = [f.kind for f in since.findings]
    if kinds and kinds[0] == "timestamp":
        return f"the time-stamp of the tree head {path} does not verify"
    if kinds and kinds[0] == "signature":
        return f"the tree head {path} is not signed as required"
    return f"the transparency log does not extend {path}"


def _not_rechecked(report: VerifyReport) -> str:
    """The quick mode's one line on what it did not look at."""
    full = report.last_full or "never (run trails verify without --quick)"
    return (
        f"NOT RECHECKED: {report.not_rechecked} graph(s), their content and catalogue "
        "entries verified before, seals before the checkpoint, sessions ended without a seal "
        f"and graphs that are not sessions; last full verification: {full}"
    )


def _throughput(report: VerifyReport) -> str:
    """The full pass's figures: what it read and how fast."""
    seconds = max(report.seconds, 1e-9)
    return (
        f"read {report.sessions_checked} session(s) and {report.quads_read} quad(s) in "
        f"{report.seconds:.2f} s: {report.sessions_checked / seconds:.0f} sessions/s, "
        f"{report.quads_read / seconds:.0f} quads/s"
    )


def _progress_bar() -> Callable[[int, int], None] | None:
    """A progress bar on stderr when stderr is a terminal (None otherwise)."""
    if not sys.stderr.isatty():
        return None
    shown = [-1]

    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        if filled == shown[0] and done < total:
            return
        shown[0] = filled
        bar = "#" * filled + "." * (width - filled)
        end = "\n" if done >= total else ""
        print(f"\rverifying [{bar}] {done}/{total} graphs", end=end, file=sys.stderr, flush=True)

    return show


def _content_line(report: VerifyReport) -> str:
    """What the content check did, in a few words."""
    tally = report.content
    line = (
        f"{tally.values} content value(s) of {tally.graphs} graph(s) checked against their digests"
    )
    if tally.hash_only:
        line += f", {tally.hash_only} recorded as a digest alone"
    return line


def _finding(f: Finding) -> dict[str, str]:
    """A finding as JSON."""
    out = {"kind": f.kind, "subject": f.subject, "detail": f.detail}
    if f.session:
        out["session"] = f.session
    return out


def _checkpoint(store: Store, report: VerifyReport) -> str | None:
    """Record what this verification checked; a store that refuses the write is reported.

    The recorder, the sealer's signing key and the event models load here, when a
    checkpoint is written: a verification that records nothing never imports them."""
    from trails.evidence.seal import configured_signing_key
    from trails.prov.recorder import Recorder

    settings = load_settings()
    recorder = Recorder(store, base_iri=settings.base_iri)
    try:
        signing_key = configured_signing_key(settings)
        iri = checkpoint_report(recorder, report, signing_key=signing_key)
    except StoreError as exc:
        print(f"note: no checkpoint recorded ({exc})", file=sys.stderr)
        return None
    return str(iri)


def _run_bundle(args: argparse.Namespace, public_key: Any, heads: list[str] | None) -> int:
    from trails.audit.bundle import verify_bundle  # only --bundle reads a bundle

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
                    "findings": [_finding(f) for f in report.findings],
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
