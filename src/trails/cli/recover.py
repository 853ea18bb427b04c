"""``trails recover``: end the sessions of processes that stopped, as interrupted, and seal them.

On an embedded store the directory's lock proves every open session was left by
a process that is gone (and the next program that records there recovers it by
itself); on a SPARQL server live writers share the store, so a session is
presumed dead only when nothing was recorded in it for ``--older-than``.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import asdict
from datetime import timedelta

from trails.audit.access import changing
from trails.cli.erase import forget_in_search_index
from trails.compliance.erasure import finish_erasures
from trails.config import load_settings
from trails.errors import UserError
from trails.evidence.recovery import recover
from trails.prov.recorder import Recorder

__all__ = ["parse_age", "register", "run"]

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_age(text: str) -> timedelta:
    """``90``, ``90s``, ``15m``, ``2h``, ``1d`` as a ``timedelta``.

    Raises:
        UserError: anything else.
    """
    match = _AGE.match(text)
    if match is None:
        raise UserError(f"--older-than {text!r} is not an age like 90s, 15m, 2h or 1d")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``recover`` command."""
    p = subparsers.add_parser(
        "recover",
        help="end sessions left open by a process that stopped (as interrupted) and seal them",
        description="End, as interrupted, the sessions a stopped process left open, with "
        "the activities they had started; seal sessions that ended unsealed; finish "
        "erasures a stopped `trails erase` left (a receipt without its seal is sealed, "
        "one cut short between its batches is closed as interrupted and sealed). On an "
        "embedded store every open session is a dead process's (the store's lock says "
        "so); on a SPARQL server give --older-than: only sessions with nothing recorded "
        "for that long are ended, so live writers keep theirs.",
    )
    p.add_argument(
        "--older-than",
        help="presume a session dead when nothing was recorded in it for this long "
        "(90s, 15m, 2h, 1d); required on a SPARQL server",
    )
    p.add_argument("--json", action="store_true", help="print what was done as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the command; see ``register``."""
    older_than = parse_age(args.older_than) if args.older_than is not None else None
    settings = load_settings()
    with changing(args.store) as store:
        recorder = Recorder(store, base_iri=settings.base_iri, content=settings.record_content)
        report = recover(recorder, older_than=older_than, settings=settings)
        erasures = []
        if settings.section("audit").get("seal", True):
            erasures = finish_erasures(recorder, older_than=older_than)
            if erasures:
                forget_in_search_index(store)
    if args.json:
        print(
            json.dumps(
                {
                    "interrupted": report.interrupted,
                    "activities": report.activities,
                    "sealed": report.sealed,
                    "skipped": report.skipped,
                    "erasures": [asdict(e) for e in erasures],
                },
                indent=2,
            )
        )
        return 0
    for erasure in erasures:
        print(f"ERASURE     {erasure.describe()}")
    for session in report.interrupted:
        print(f"INTERRUPTED {session}")
    for session in report.sealed:
        print(f"SEALED      {session}: it had ended without a seal")
    for session in report.skipped:
        print(f"LEFT OPEN   {session}: recorded in too recently to presume its writer dead")
    sealing = "and sealed " if settings.section("audit").get("seal", True) else ""
    print(
        f"{len(report.interrupted)} session(s) ended as interrupted {sealing}"
        f"({len(report.activities)} activit{'y' if len(report.activities) == 1 else 'ies'} "
        f"cut short), {len(report.sealed)} that had ended unsealed now sealed, "
        f"{len(report.skipped)} left open, {len(erasures)} erasure(s) finished"
    )
    return 0
