"""``trails retention plan|apply``: what is past its retention period, and its removal."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from datetime import UTC, datetime, timedelta

from trails.audit.access import changing, reading
from trails.cli.erase import access_log_location
from trails.compliance.access_log import erase_from_access_log
from trails.compliance.retention import RetentionPlan, RetentionPolicy, apply, plan
from trails.config import Settings, load_settings
from trails.errors import UserError
from trails.prov.iri import Minter
from trails.prov.recorder import Recorder

__all__ = ["register", "run_apply", "run_plan"]

_OVERRIDE = "--i-know-this-breaks-article-19"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``retention`` command and its ``plan`` and ``apply`` subcommands."""
    p = subparsers.add_parser(
        "retention",
        help="remove content and sessions past their retention period (plan, then apply)",
        description="Periods come from [retention] in trails.toml (content_days, "
        "structure_days, per-principal and per-planner overrides), counted from each "
        "session's end. Held sessions are skipped and their holds named.",
    )
    sub = p.add_subparsers(dest="retention_command", metavar="plan|apply", required=True)
    pl = sub.add_parser("plan", help="list what apply would remove, and what holds keep")
    pl.add_argument(
        "--format", "-f", choices=("table", "json"), default="table", help="table (default) or json"
    )
    ap = sub.add_parser("apply", help="remove it, recorded and sealed first")
    ap.add_argument("--reason", default="retention period passed", help="why (recorded)")
    ap.add_argument("--by", help="who applies it (default: [agent] principal)")
    for child in (pl, ap):
        child.add_argument(
            "--now", help="plan as of this ISO 8601 time instead of now (UTC if no offset)"
        )
        child.add_argument(
            _OVERRIDE,
            dest="short_structure",
            action="store_true",
            help="accept a structure period under 183 days (logs kept less than six months)",
        )
    pl.set_defaults(func=run_plan)
    ap.set_defaults(func=run_apply)


def _now(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError as exc:
        raise UserError(f"--now {text!r} is not an ISO 8601 time") from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> None:
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(header)]
    print("  ".join(c.ljust(w) for c, w in zip(header, widths, strict=True)).rstrip())
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def _print(the_plan: RetentionPlan, configured: bool) -> None:
    if not configured:
        print("no retention period is set ([retention] in trails.toml): nothing is removed")
        return
    header = ("session", "started", "principal", "what", "why")
    rows: list[tuple[str, ...]] = [
        (r.session, r.started, r.principal, r.what, r.why) for r in the_plan.removals
    ]
    rows += [
        (
            s.removal.session,
            s.removal.started,
            s.removal.principal,
            "kept",
            f"held ({s.removal.what} due): {s.describe()}",
        )
        for s in the_plan.skipped
    ]
    _table(rows, header)
    print(f"({len(the_plan.removals)} to remove, {len(the_plan.skipped)} held)")


def run_plan(args: argparse.Namespace) -> int:
    """Run ``trails retention plan``."""
    settings = load_settings()
    policy = RetentionPolicy.from_settings(settings, allow_short_structure=args.short_structure)
    with reading(args.store) as store:
        the_plan = plan(store, Minter(settings.base_iri), policy, now=_now(args.now))
    if args.format == "json":
        print(
            json.dumps(
                {
                    "now": the_plan.now.isoformat(),
                    "remove": [asdict(r) for r in the_plan.removals],
                    "held": [
                        {**asdict(s.removal), "holds": [asdict(h) for h in s.holds]}
                        for s in the_plan.skipped
                    ],
                },
                indent=2,
            )
        )
    else:
        _print(the_plan, policy.configured)
    return 0


def _access_log(args: argparse.Namespace, settings: Settings, now: datetime | None) -> None:
    """``[retention] access_log_days``: the query texts the endpoint logged before then go."""
    days = settings.section("retention").get("access_log_days")
    location = access_log_location(args, settings)
    if days is None or location is None:
        return
    if isinstance(days, bool) or not isinstance(days, int) or days < 0:
        raise UserError(f"[retention] access_log_days must be a whole number >= 0, not {days!r}")
    before = (now or datetime.now(UTC)) - timedelta(days=days)
    with changing(location) as log:
        done = erase_from_access_log(
            log,
            before=before,
            reason=f"access_log_days = {days}: {args.reason}",
            by=args.by or settings.principal,
            minter=Minter(settings.base_iri),
        )
    print(
        f"access log: removed the text of {done.entries} query(ies) logged before "
        f"{before.isoformat()} (access_log_days = {days})"
    )


def run_apply(args: argparse.Namespace) -> int:
    """Run ``trails retention apply``."""
    settings = load_settings()
    policy = RetentionPolicy.from_settings(settings, allow_short_structure=args.short_structure)
    with changing(args.store) as store:
        recorder = Recorder.from_settings(settings, store=store)
        result = apply(
            recorder,
            policy,
            by=args.by or settings.principal,
            reason=args.reason,
            now=_now(args.now),
        )
    _access_log(args, settings, _now(args.now))
    for skipped in result.plan.skipped:
        print(f"skipped {skipped.removal.session} ({skipped.removal.what}): {skipped.describe()}")
    for kept in result.recovered:
        print(
            f"kept {kept.session} ({kept.what}): recovery ended it as interrupted in this run, "
            f"after the plan was read; a later run applies the plan to it"
        )
    if result.run is None:
        print("nothing is past its retention period")
        return 0
    for r in result.removed:
        print(f"removed {r.what} of {r.session}: {r.why}")
    print(
        f"retention run {result.run} recorded and sealed in {result.graph}: "
        f"{len(result.removed)} removed, {len(result.plan.skipped)} held"
        + (", store compacted" if result.compacted else "")
    )
    return 0
