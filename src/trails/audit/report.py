"""The HTML audit report of one session: what an auditor prints and files.

``render_report(store, session)`` asks the store the pack's questions about
one session (overview, timeline, what each activity used and generated,
completions and cost, terminations, policy decisions, failed and interrupted
invocations, memories used, seals) and renders them with jinja2 into one
self-contained HTML page: inline CSS, no scripts, no network, laid out to print
on A4. A call cut short (interrupted, or started and never ended) is listed
with the failures, never hidden behind "No invocation failed".

Each activity in the timeline carries its inputs and output (capability
arguments and results, prompts and completions) in a collapsed ``<details>``,
with the export's redaction rules (``[[audit.redact]]``) applied: a value a
rule hides is dropped or shown as its SHA-256, as in an export. Times read to
the millisecond, durations and costs with their units.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import jinja2

from trails.audit.export import Redaction
from trails.audit.files import write_bytes
from trails.audit.querypack import get_query
from trails.audit.render import cell, duration, usd
from trails.catalogue.entries import FAILED_STATUSES, session_outcome
from trails.errors import SessionError, VerificationError
from trails.evidence.ledger import ledger_iri, seals_of_graph
from trails.evidence.verify import VerifyReport, verify
from trails.prov.iri import Minter
from trails.prov.vocab import XSD
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, Literal, Term, instant, to_python

__all__ = ["TimelineNode", "render_report", "report_data", "seal_of", "write_report"]

_TEMPLATES = Path(__file__).with_name("templates")


@dataclass
class TimelineNode:
    """One activity in the timeline tree, with the activities it informed."""

    iri: str
    kind: str
    label: str
    started: str
    ended: str
    status: str
    cost: str = ""
    took: str = ""
    side_effects: bool = False
    io: list[dict[str, str]] = field(default_factory=list)
    children: list[TimelineNode] = field(default_factory=list)


_IO_LABELS = {
    "CapabilityInput": "Input",
    "CapabilityOutput": "Output",
    "Prompt": "Prompt",
    "Completion": "Completion",
}
_COLLAPSED_IN_PRINT = {"Prompt"}  # a prompt repeats the conversation: on paper, only its size


def _rows(store: Store, name: str, **values: Any) -> list[dict[str, Any]]:
    result = get_query(name).run(store, **values)
    assert isinstance(result, Solutions)
    names = result.variables
    return [{n: _py(v) for n, v in zip(names, row, strict=True)} for row in result.rows]


def _seals(store: Store, graph: IRI, minter: Minter) -> list[dict[str, Any]]:
    """The seals of ``graph``, oldest first, as the pack's ``seals`` rows: read by index from
    the ledger graph (the pack query with ``graph`` given passes over every named graph)."""
    records = seals_of_graph(store, ledger_iri(minter), graph)
    records.sort(key=lambda r: (instant(r.at), str(r.chain), r.sequence))
    return [
        {
            "sequence": r.sequence,
            "graph": r.graph,
            "seal": r.iri,
            "chain": r.chain,
            "graphHash": r.graph_hash,
            "quadCount": r.quad_count,
            "sealedAt": to_python(Literal(r.at, str(XSD.dateTime))),
            "previousSealHash": r.previous_hash,
            "sealHash": r.seal_hash,
            "signed": r.signature is not None,
            "revisionOf": r.revision_of,
        }
        for r in records
    ]


#: the pack's ``batches`` for one session, read from the session outward (the pack query with
#: ``session`` given passes over every batch of every graph): the same columns and order
_BATCHES_OF = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?started ?ended ?batch ?batchId ?strategy ?agent ?goals ?failed ?informed $session
WHERE {
  GRAPH ?graph {
    $session prov:wasInformedBy ?batch .
    ?batch a trails:Batch ;
           trails:batchId ?batchId ;
           trails:strategy ?strategy ;
           trails:goalCount ?goals ;
           prov:startedAtTime ?started ;
           prov:wasAssociatedWith ?agent .
    OPTIONAL { ?batch prov:endedAtTime ?ended }
    OPTIONAL { ?batch trails:failedCount ?failed }
  }
  BIND($session AS ?informed)
}
ORDER BY ?started ?batch ?informed"""


def _batches(store: Store, session: IRI) -> list[dict[str, Any]]:
    result = store.query(_BATCHES_OF, {"session": session})
    assert isinstance(result, Solutions)
    return [{n: _py(v) for n, v in zip(result.variables, row, strict=True)} for row in result.rows]


def _py(term: Term | None) -> Any:
    value = to_python(term)
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    if isinstance(value, str) and not isinstance(term, str):
        return value
    if isinstance(term, str):
        return str(term)
    return value


_KIND_LABELS = {
    "ReActPlan": "ReAct run",
    "PlanAndExecutePlan": "Plan-and-Execute run",
    "ReflexionPlan": "Reflexion run",
    "PlanExecuteReflectPlan": "Plan-Execute-Reflect run",
    "BehaviourTreePlan": "Behaviour-tree run",
    "PlanRun": "Plan run",
    "LLMCompletion": "LLM completion",
    "CapabilityInvocation": "Capability",
    "PolicyDecision": "Policy",
    "MemoryOperation": "Memory",
}


def _kind(kind: str) -> str:
    short = _short(kind)
    return _KIND_LABELS.get(short, short)


def _short(kind: str) -> str:
    return cell(IRI.trusted(kind), width=None).split(":", 1)[-1] if kind else ""


def _took(started: str, ended: str) -> str:
    if not started or not ended:
        return ""
    seconds = (datetime.fromisoformat(ended) - datetime.fromisoformat(started)).total_seconds()
    return duration(max(seconds, 0.0))


def _shown(value: Any) -> str:
    """A recorded value as a person reads it: JSON indented, other text as it is."""
    text = "" if value is None else str(value)
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


def _io(store: Store, session: IRI, redaction: Redaction | None) -> dict[str, list[dict[str, str]]]:
    """activity -> what it used and generated, values redacted by the export's rules."""
    hidden = redaction.hidden(store, session) if redaction is not None else {}
    found: dict[str, list[dict[str, str]]] = defaultdict(list)
    seen: set[tuple[str, str]] = set()
    for r in _rows(store, "session-io", session=session):
        kind = _short(r["type"] or "")
        label = _IO_LABELS.get(kind)
        if label is None or (r["activity"], r["entity"]) in seen:
            continue
        seen.add((r["activity"], r["entity"]))
        action = hidden.get(IRI.trusted(r["entity"]))
        value = r.get("value")
        if action == "drop":
            shown, note = "", "redacted: the value is not shown"
        elif action == "hash":
            digest = hashlib.sha256(str(value or "").encode("utf-8")).hexdigest()
            shown, note = f"sha256:{digest}", "redacted: shown as its SHA-256"
        elif value is None:
            shown, note = "", "no value recorded (content recorded as a hash only)"
        else:
            shown, note = _shown(value), ""
        found[r["activity"]].append(
            {
                "label": label,
                "value": shown,
                "note": note,
                "size": f"{len(str(value or '')):,} characters",
                "print": "closed" if label in _COLLAPSED_IN_PRINT else "open",
            }
        )
    return found


def _timeline(
    store: Store,
    session: IRI,
    costs: dict[str, str],
    io: dict[str, list[dict[str, str]]] | None = None,
    effects: set[str] | None = None,
) -> list[TimelineNode]:
    rows = _rows(store, "session-timeline", session=session)
    nodes: dict[str, TimelineNode] = {}
    parents: dict[str, str] = {}
    for r in rows:
        iri = r["activity"]
        if iri not in nodes:
            nodes[iri] = TimelineNode(
                iri=iri,
                kind=_kind(r["type"] or ""),
                label=r["label"] or "",
                started=r["started"] or "",
                ended=r["ended"] or "",
                status=r["status"] or "",
                cost=costs.get(iri, ""),
                took=_took(r["started"] or "", r["ended"] or ""),
                side_effects=iri in (effects or set()),
                io=(io or {}).get(iri, []),
            )
        if r["informedBy"]:
            parents.setdefault(iri, r["informedBy"])
    roots: list[TimelineNode] = []
    for iri, node in nodes.items():
        parent = parents.get(iri)
        if parent in nodes and parent != iri:
            nodes[parent].children.append(node)
        else:
            roots.append(node)
    return roots


def _money(value: Any) -> str:
    return usd(value)


def _outcome(store: Store, session: IRI) -> dict[str, str]:
    """What the report's top says of the session: its outcome and why, as its catalogue
    entry says (``trails.catalogue.entries.session_outcome``: the same in every listing).

    A session that ended ``ok`` while its run failed is ``failed``.
    """
    state, detail = session_outcome(store, session)
    return {"state": state, "detail": detail}


def _distinct_terminations(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per termination: a stopped process ends the session, its run and its call
    with the same interruption, which the query answers once per activity it ended."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for r in rows:
        key = (r.get("at"), r.get("kind"), r.get("reason"), r.get("limit"), r.get("observed"))
        if key in seen:
            continue
        seen.add(key)
        out.append(r)
    return out


def _failures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The failed and interrupted calls, each with a readable error (never ``None``)."""
    for r in rows:
        if r.get("error") in (None, ""):
            r["error"] = (
                "cut short before it ended: no error recorded"
                if r.get("status") in ("interrupted", "unfinished")
                else "no error recorded"
            )
    return rows


def seal_of(store: Store, session: IRI, minter: Minter | None = None) -> dict[str, Any]:
    """What the report says of a session's seal: ``state`` (verified, open, unsealed, or
    the kind of the first finding), ``detail``, and the seals and chain findings.

    Args:
        store: the store.
        session: the session IRI.
        minter: names the ledger (default ``urn:trails:``).
    """
    iri = session
    seal: dict[str, Any] = {"state": "unsealed", "detail": "no seal in this store"}
    try:
        report = verify(store, session=iri, minter=minter)
        chain = [f for f in report.findings if f.kind in ("chain", "signature")]
        # the session's graph, its content, the receipts of its erased content: "verified"
        # only when all of them check out
        mine = [f for f in report.findings if f not in chain]
        seals = _seals(store, iri, minter or Minter())
        if iri in report.open_sessions:
            seal = {"state": "open", "detail": "the session has not ended, so it is not sealed yet"}
        elif mine:
            first = mine[0]
            about = "" if first.subject == iri else f"{first.subject}: "
            more = f" ({len(mine) - 1} more finding(s))" if len(mine) > 1 else ""
            seal = {"state": first.kind, "detail": f"{about}{first.detail}{more}"}
        elif seals:
            last = seals[-1]
            seal = {
                "state": "verified",
                "detail": f"matches seal {last['sequence']} of {last['sealedAt']} "
                f"({last['quadCount']} quads, sha256 {last['graphHash']}); "
                f"{_content_checked(report)}",
            }
        if chain:
            seal["chain"] = [str(f) for f in chain]
        seal["seals"] = seals
    except VerificationError as exc:
        seal = {"state": "unsealed", "detail": str(exc)}
    return seal


def report_data(
    store: Store,
    session: str,
    *,
    minter: Minter | None = None,
    redaction: Redaction | None = None,
) -> dict[str, Any]:
    """Everything the report shows, as plain values (the template's context).

    Args:
        store: the store.
        session: the session IRI.
        minter: names the ledger (default ``urn:trails:``).
        redaction: the rules that hide recorded values (None: values are shown).

    Returns:
        The template context.

    Raises:
        SessionError: no such session in the store.
    """
    try:
        iri = IRI(session)
    except ValueError:
        raise SessionError(f"{session!r} is not a session IRI") from None
    overview = _rows(store, "session-overview", session=iri)
    if not overview:
        raise SessionError(f"no session {session} in this store (trails sessions lists them)")
    head = overview[0]
    runs = [r for r in overview if r.get("run")]

    completions = _rows(store, "llm-completions", session=iri)
    completions.sort(key=lambda r: instant(r["started"]))
    costs = {r["completion"]: _money(r.get("costUSD")) for r in completions}
    by_model: dict[str, dict[str, Any]] = defaultdict(
        lambda: {
            "calls": 0,
            "input": 0,
            "output": 0,
            "usd": Decimal(0),
            "unpriced": 0,
            "failed": 0,
        }
    )
    for r in completions:
        m = by_model[f"{r.get('provider', '')}:{r.get('model', '')}"]
        m["calls"] += 1
        m["input"] += int(r.get("inputTokens") or 0)
        m["output"] += int(r.get("outputTokens") or 0)
        if r.get("status") in FAILED_STATUSES:
            m["failed"] += 1  # never answered: failed, not unpriced
        if r.get("costUSD") is None:
            m["unpriced"] += 0 if r.get("status") in FAILED_STATUSES else 1
        else:
            m["usd"] += Decimal(str(r["costUSD"]))
    cost_rows = [{"model": k, **v, "usd": _money(v["usd"])} for k, v in sorted(by_model.items())]
    total = sum(
        (Decimal(str(r["costUSD"])) for r in completions if r.get("costUSD") is not None),
        Decimal(0),
    )

    seal = seal_of(store, iri, minter)

    effects = _rows(store, "side-effects", session=iri)
    return {
        "session": iri,
        "head": head,
        "outcome": _outcome(store, iri),
        "runs": runs,
        "effects": effects,
        "timeline": _timeline(
            store, iri, costs, _io(store, iri, redaction), {r["invocation"] for r in effects}
        ),
        "completions": completions,
        "cost_rows": cost_rows,
        "total_usd": _money(total),
        "failovers": _rows(store, "provider-fallbacks", session=iri),
        "terminations": _distinct_terminations(_rows(store, "terminations", session=iri)),
        "evictions": _rows(store, "history-evictions", session=iri),
        "batches": _batches(store, iri),
        "tree_nodes": _rows(store, "tree-nodes", session=iri),
        "decisions": _rows(store, "policy-decisions", session=iri),
        "failures": _failures(_rows(store, "failed-invocations", session=iri)),
        "memories": _rows(store, "memories-used", session=iri),
        "controls": _rows(store, "control-findings", session=iri),
        "seal": seal,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "redacting": bool(redaction and redaction.rules),
        "short": _short,
    }


def _content_checked(report: VerifyReport) -> str:
    """What the seal badge says of the session's content."""
    tally = report.content
    said = f"its {tally.values} content value(s) match their sealed digests"
    removed = sum(tally.accounted.values())
    if removed:
        said += f", {removed} removed on record (sealed receipt)"
    if tally.hash_only:
        said += f", {tally.hash_only} recorded as a digest alone"
    return said


def render_report(
    store: Store,
    session: str,
    *,
    minter: Minter | None = None,
    redaction: Redaction | None = None,
) -> str:
    """The HTML report of ``session``.

    Args:
        store: the store.
        session: the session IRI.
        minter: names the ledger (default ``urn:trails:``).
        redaction: the rules that hide recorded values (None: values are shown).

    Returns:
        A complete, self-contained HTML document.

    Raises:
        SessionError: no such session.
    """
    context = report_data(store, session, minter=minter, redaction=redaction)
    return _template().render(**context)


@functools.cache
def _template() -> jinja2.Template:
    """The report template, compiled once per process (compiling costs more than the queries)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=lambda value: "" if value is None else value,  # no literal "None" on paper
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2")


def write_report(
    store: Store,
    session: str,
    out: str | Path,
    *,
    minter: Minter | None = None,
    redaction: Redaction | None = None,
) -> Path:
    """Render the report and write it to ``out``.

    Args:
        store: the store.
        session: the session IRI.
        out: the HTML file to write.
        minter: names the ledger.
        redaction: the rules that hide recorded values (None: values are shown).

    Returns:
        The path written.

    Raises:
        SessionError: no such session.
        ExportError: ``out`` cannot be written.
    """
    html = render_report(store, session, minter=minter, redaction=redaction)
    path = Path(out)
    write_bytes(path, html.encode("utf-8"), what="the report")  # a link at ``out`` is replaced
    return path
