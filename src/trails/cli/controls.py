"""``trails controls list|check|explain``: rules over the evidence, checked and recorded.

``check`` loads every control first (a bad file: one line, exit 2, before the store is
opened), evaluates the session-scoped ones per session and the store-scoped ones once,
records each evaluation as sealed evidence (it needs the writer: a store another process
holds is refused, unless ``--no-record`` reads a snapshot and records nothing), prints a
table, JSON or JUnit XML, and exits 1 when an outcome fails at ``--fail-on`` or above.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from trails.audit.access import changing, reading
from trails.cli.common import session_arg
from trails.config import load_settings
from trails.controls import (
    DEFAULT_TIMEOUT_S,
    SEVERITIES,
    Control,
    Evaluation,
    evaluate_session,
    evaluate_store,
    load_controls,
)
from trails.controls.session_end import configured_controls
from trails.errors import StoreLockedError, UserError
from trails.evidence.ledger import ledger_iri
from trails.prov.iri import Minter
from trails.store import IRI, Solutions, Store

__all__ = ["junit_xml", "register", "run_check", "run_explain", "run_list"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``controls`` command and its ``list``, ``check`` and ``explain`` subcommands."""
    p = subparsers.add_parser(
        "controls",
        help="check controls (rules over the evidence) and record their findings",
        description="List, check and explain controls: named rules over the recorded "
        "evidence. Each check is recorded as sealed evidence, passed or not.",
    )
    sub = p.add_subparsers(dest="controls_command", metavar="list|check|explain", required=True)

    def source(q: argparse.ArgumentParser) -> None:
        q.add_argument("--dir", help="a directory of controls (besides the built-in set)")
        q.add_argument("--no-builtin", action="store_true", help="leave the built-in set out")

    ls = sub.add_parser("list", help="list the controls")
    source(ls)
    ls.add_argument(
        "--format", "-f", choices=("table", "json"), default="table", help="table or json"
    )
    ls.set_defaults(func=run_list)
    ck = sub.add_parser("check", help="evaluate controls, record the findings, gate on them")
    source(ck)
    which = ck.add_mutually_exclusive_group()
    which.add_argument("--session", help="one session (IRI or UUID)")
    which.add_argument("--since", help="sessions started at or after this ISO date/time")
    ck.add_argument("--control", action="append", metavar="ID", help="only this control")
    ck.add_argument(
        "--fail-on",
        choices=SEVERITIES,
        default="info",
        help="exit 1 when a violation at or above this severity (default: info, any)",
    )
    ck.add_argument(
        "--format",
        "-f",
        choices=("table", "json", "junit"),
        default="table",
        help="table (default), json, or junit (JUnit XML for CI systems)",
    )
    ck.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per control")
    ck.add_argument(
        "--no-record",
        action="store_true",
        help="record nothing (reads a snapshot of a store another process holds)",
    )
    ck.add_argument("--by", help="the evaluating agent (default: [agent] principal)")
    ck.set_defaults(func=run_check)
    ex = sub.add_parser("explain", help="a control's rule, references and recorded results")
    source(ex)
    ex.add_argument("id", help="the control's id")
    ex.add_argument("--last", type=int, default=10, help="how many recorded results (10)")
    ex.set_defaults(func=run_explain)


def _controls(args: argparse.Namespace) -> list[Control]:
    """The configured set (``[controls]``: the built-in set and ``directory``), then
    ``--dir``'s controls, a later one replacing an earlier one of the same id."""
    found = {
        c.id: c
        for c in configured_controls(load_settings(), builtin=False if args.no_builtin else None)
    }
    if args.dir:
        found.update((c.id, c) for c in load_controls(args.dir))
    return [found[k] for k in sorted(found)]


def run_list(args: argparse.Namespace) -> int:
    """Run ``trails controls list``."""
    controls = _controls(args)
    if args.format == "json":
        print(json.dumps([_describe(c) for c in controls], indent=2))
        return 0
    for c in controls:
        print(f"{c.id:<40} {c.severity:<8} {c.scope:<7} {c.title}")
    print(f"({len(controls)} control{'s' if len(controls) != 1 else ''})")
    return 0


def _describe(c: Control) -> dict[str, Any]:
    return {
        "id": c.id,
        "title": c.title,
        "severity": c.severity,
        "scope": c.scope,
        "kind": c.kind,
        "references": list(c.references),
        "digest": c.digest,
        "path": str(c.path) if c.path else None,
    }


_SESSIONS = """
PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?g ?started WHERE { GRAPH ?g { ?g a trails:Session ; prov:startedAtTime ?started } }
ORDER BY ?started ?g
"""


_IS_SESSION = """
PREFIX trails: <https://w3id.org/trails/ns#>
ASK { GRAPH $g { $g a trails:Session } }
"""


def _is_session(store: Store, session: str) -> bool:
    try:
        iri = IRI(session)
    except (ValueError, UnicodeError):
        raise UserError(f"--session {session!r} is not an IRI") from None
    return bool(store.query(_IS_SESSION, {"g": iri}))


def _since(text: str) -> datetime:
    try:
        at = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UserError(f"--since {text!r} is not an ISO date or date-time") from None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _sessions(store: Store, since: datetime | None) -> list[str]:
    result = store.query(_SESSIONS)
    assert isinstance(result, Solutions)
    found = []
    for row in result:
        started = row["started"].to_python() if hasattr(row["started"], "to_python") else None
        if since is None or (isinstance(started, datetime) and started >= since):
            found.append(str(row["g"]))
    return found


def check(
    store: Store,
    controls: Sequence[Control],
    *,
    session: str | None = None,
    since: datetime | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> list[Evaluation]:
    """The evaluations ``trails controls check`` makes: the session controls of each
    session chosen (one, those since a time, or all) and the store controls once (not
    for one session)."""
    evaluations = []
    sessions = [session] if session is not None else _sessions(store, since)
    if any(c.scope == "session" for c in controls):
        evaluations += [evaluate_session(store, s, controls, timeout=timeout) for s in sessions]
    if session is None and any(c.scope == "store" for c in controls):
        evaluations.append(evaluate_store(store, controls, timeout=timeout))
    return [e for e in evaluations if e.outcomes]


def run_check(args: argparse.Namespace) -> int:
    """Run ``trails controls check``."""
    controls = _controls(args)  # refused before the store is opened
    if args.control:
        known = {c.id for c in controls}
        missing = [cid for cid in args.control if cid not in known]
        if missing:
            raise UserError(f"no control {missing[0]!r} (trails controls list names them)")
        controls = [c for c in controls if c.id in args.control]
        if args.session:
            store_scoped = [c.id for c in controls if c.scope == "store"]
            if store_scoped:
                raise UserError(
                    f"control {store_scoped[0]} is store-scoped: it runs over the whole store, "
                    "never for one --session (drop --session)"
                )
    since = _since(args.since) if args.since else None
    session = session_arg(args.session) if args.session else None
    if args.timeout <= 0:
        raise UserError("--timeout must be a positive number of seconds")
    settings = load_settings()
    opener = reading if args.no_record else changing
    try:
        with opener(args.store) as store:
            if session is not None and not _is_session(store, session):
                raise UserError(f"no session {session} in this store (trails sessions lists them)")
            evaluations = check(store, controls, session=session, since=since, timeout=args.timeout)
            if not args.no_record:
                from trails.controls import record_evaluation  # the writer, when it writes
                from trails.prov.recorder import Recorder

                recorder = Recorder.from_settings(settings, store=store)
                for evaluation in evaluations:
                    record_evaluation(recorder, evaluation, by=args.by or settings.principal)
    except StoreLockedError as exc:
        raise StoreLockedError(
            f"{exc}; recording findings needs the writer: run it there, or add --no-record"
        ) from exc
    outcomes = [o for e in evaluations for o in e.outcomes]
    if args.format == "json":
        print(json.dumps([_outcome_json(o) for o in outcomes], indent=2))
    elif args.format == "junit":
        sys.stdout.write(junit_xml(evaluations))
    else:
        _table(outcomes)
    failing = [o for e in evaluations for o in e.failing(args.fail_on)]
    return 1 if failing else 0


def _outcome_json(o: Any) -> dict[str, Any]:
    return {
        "control": o.control.id,
        "severity": o.control.severity,
        "status": o.status,
        "session": o.session,
        "detail": o.error,
        "findings": [
            {"subject": v.subject, "session": v.session, "message": v.message} for v in o.violations
        ],
    }


def _shown(text: str) -> str:
    """``text`` with every character that is not printable (a NUL, an escape sequence, a
    newline, a bidi override) written as its Python escape: a finding's subject and message
    are data from the store, which must neither drive a terminal nor break JUnit XML."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def _finding_line(v: Any) -> str:
    return _shown(v.subject or "-") + (f": {_shown(v.message)}" if v.message else "")


def _table(outcomes: list[Any]) -> None:
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
        if o.status == "passed":
            continue
        where = _shown(o.session or "the store")
        print(f"{o.status.upper():<10} {o.control.id} ({o.control.severity}) in {where}")
        if o.error:
            print(f"    {_shown(o.error)}")
        for v in o.violations:
            print(f"    {_finding_line(v)}")
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "nothing evaluated"
    print(f"({summary})")


def junit_xml(evaluations: Sequence[Evaluation]) -> str:
    """JUnit XML: one ``testsuite`` per control, one ``testcase`` per evaluation (per
    session, or the store), a ``failure`` per violated one, an ``error`` per time-out."""
    suites = ET.Element("testsuites", name="trails controls")
    by_control: dict[str, list[Any]] = {}
    for e in evaluations:
        for o in e.outcomes:
            by_control.setdefault(o.control.id, []).append(o)
    for cid, outcomes in sorted(by_control.items()):
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=cid,
            tests=str(len(outcomes)),
            failures=str(sum(o.status == "violated" for o in outcomes)),
            errors=str(sum(o.status in ("timed out", "error") for o in outcomes)),
        )
        for o in outcomes:
            seconds = (o.ended - o.started).total_seconds()
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"controls.{cid}",
                name=_shown(o.session or "store"),
                time=f"{seconds:.3f}",
            )
            if o.status == "violated":
                failure = ET.SubElement(
                    case,
                    "failure",
                    type=o.control.severity,
                    message=f"{len(o.violations)} finding(s): {o.control.title}",
                )
                failure.text = "\n".join(_finding_line(v) for v in o.violations)
            elif o.status != "passed":
                ET.SubElement(case, "error", type=o.status, message=_shown(o.error or o.status))
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def run_explain(args: argparse.Namespace) -> int:
    """Run ``trails controls explain``."""
    controls = {c.id: c for c in _controls(args)}
    control = controls.get(args.id)
    if control is None:
        raise UserError(f"no control {args.id!r} (trails controls list names them)")
    print(f"{control.id}: {control.title}")
    print(f"severity {control.severity}, scope {control.scope}, {control.kind} check")
    print(f"file {control.path}, sha256 {control.digest}")
    for ref in control.references:
        print(f"reference: {ref}")
    if control.description:
        print()
        print(control.description.strip())
    if control.params:
        print()
        for name, value in control.params.items():
            print(f"param {name} = {value!r}")
    print()
    print(control.check.rstrip())
    print()
    from trails.controls import definition_changes, recorded_results

    ledger = ledger_iri(Minter(load_settings().base_iri))  # only sealed runs count
    with reading(args.store) as store:
        results = recorded_results(store, control.id, limit=max(args.last, 0), ledger=ledger)
        changed = definition_changes(store, [control], ledger=ledger)
    if changed:
        print(f"the definition changed since its last recorded run (sha256 {changed[0][1]})")
    if not results:
        print("no recorded results")
    for r in results:
        where = r.session or "the store"
        print(f"{r.ended}  {r.outcome:<9} {r.findings} finding(s)  {where}  [{r.graph}]")
    return 0
