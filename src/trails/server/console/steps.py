"""A session's steps as an auditor reads them: figures on every step, conversations as turns,
and one step opened on its own with its evidence and lineage.

The session page shows the report's activity tree (``trails.audit.report``). This
module dresses it for the console:

- ``dressed``: each step with its own tokens, cost and latency (a completion's
  ``trails:latencyMs``; any other step's duration) and, on a step with children, the
  totals of everything under it; a completion's prompt as chat turns by role
  (``said.turns``) beside its completion; a call's input beside its output;
- ``step``: one step of a session for the side panel (``/console/step``): what it
  is, its figures, what it used and generated with each value's evidence (the
  digest recorded with it, and whether the value shown still matches it, or was
  erased), the session's seal, and its lineage: the step that informed it, the steps
  it informed, who generated what it used and who used what it generated.

Every query is bound to one session graph (``$session``) and, for ``step``, one
activity of it; the page has confirmed the login may read that session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from trails.audit.render import duration, usd
from trails.audit.report import TimelineNode
from trails.prov.content import sha256_hex
from trails.server.console.said import Turn, readable, turns
from trails.store import Solutions, Store
from trails.store.terms import IRI, Term, to_python

__all__ = ["Step", "dressed", "step", "step_figures"]

_PREFIXES = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""
#: every step's own figures (the completions' tokens, cost and latency)
_FIGURES = (
    _PREFIXES
    + """SELECT ?activity ?in ?out ?cost ?latency $session WHERE {
  GRAPH $session {
    ?activity trails:inSession $session .
    OPTIONAL { ?activity trails:inputTokens ?in }
    OPTIONAL { ?activity trails:outputTokens ?out }
    OPTIONAL { ?activity trails:costUSD ?cost }
    OPTIONAL { ?activity trails:latencyMs ?latency }
    FILTER(BOUND(?in) || BOUND(?out) || BOUND(?cost) || BOUND(?latency))
  }
}"""
)
#: one step: what it is and when
_STEP = (
    _PREFIXES
    + """SELECT ?type ?label ?started ?ended ?status $session $activity WHERE {
  GRAPH $session {
    $activity trails:inSession $session ; prov:startedAtTime ?started .
    OPTIONAL { $activity a ?type FILTER(?type != prov:Activity) }
    OPTIONAL { $activity rdfs:label ?label }
    OPTIONAL { $activity prov:endedAtTime ?ended }
    OPTIONAL { $activity trails:status ?status }
  }
}"""
)
#: what the step used and generated, each value with its recorded digest
_ENTITIES = (
    _PREFIXES
    + """SELECT ?role ?entity ?type ?value ?digest ?policy ?other ?otherLabel $session $activity
WHERE {
  GRAPH $session {
    { $activity prov:used ?entity BIND("used" AS ?role)
      OPTIONAL { ?entity prov:wasGeneratedBy ?other OPTIONAL { ?other rdfs:label ?otherLabel } } }
    UNION
    { ?entity prov:wasGeneratedBy $activity BIND("generated" AS ?role)
      OPTIONAL { ?other prov:used ?entity OPTIONAL { ?other rdfs:label ?otherLabel } } }
    ?entity a ?type FILTER(?type != prov:Entity)
    OPTIONAL { ?entity trails:sha256 ?digest }
    OPTIONAL { ?entity trails:contentPolicy ?policy }
    OPTIONAL { GRAPH ?content { ?entity prov:value ?value } }
  }
}"""
)
#: the steps it informed and the one that informed it
_LINKS = (
    _PREFIXES
    + """SELECT ?direction ?other ?otherLabel $session $activity WHERE {
  GRAPH $session {
    { $activity prov:wasInformedBy ?other BIND("informed by" AS ?direction) }
    UNION { ?other prov:wasInformedBy $activity BIND("informed" AS ?direction) }
    ?other trails:inSession $session .
    OPTIONAL { ?other rdfs:label ?otherLabel }
  }
}"""
)
_IO_KINDS = {
    "Prompt": "prompt",
    "Completion": "completion",
    "CapabilityInput": "input",
    "CapabilityOutput": "output",
    "ToolCallRequest": "tool call",
}


def _rows(result: object) -> list[dict[str, Any]]:
    if not isinstance(result, Solutions):
        return []
    return [
        {k: None if v is None else to_python(v) for k, v in zip(result.variables, row, strict=True)}
        for row in result.rows
    ]


def _decimal(value: Any) -> Decimal | None:
    if value is None:
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def step_figures(store: Store, session: IRI) -> dict[str, dict[str, Any]]:
    """Each step's own tokens, cost and latency (ms), by activity IRI (one query)."""
    out: dict[str, dict[str, Any]] = {}
    for r in _rows(store.query(_FIGURES, {"session": session})):
        out[str(r["activity"])] = {
            "in": int(r["in"] or 0),
            "out": int(r["out"] or 0),
            "cost": _decimal(r.get("cost")),
            "latency": None if r.get("latency") is None else float(r["latency"]),
        }
    return out


@dataclass
class Shown:
    """A node of the console's step tree: the report's node with figures and readable I/O."""

    iri: str
    kind: str
    label: str
    status: str
    took: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost: str = ""
    latency: str = ""
    side_effects: bool = False
    subtree: bool = False
    """Whether the figures add up the steps under it (it has children)."""
    turns: list[Turn] | None = None
    completion: str = ""
    inputs: list[dict[str, str]] = field(default_factory=list)
    outputs: list[dict[str, str]] = field(default_factory=list)
    others: list[dict[str, str]] = field(default_factory=list)
    children: list[Shown] = field(default_factory=list)


def dressed(nodes: list[TimelineNode], figures: Mapping[str, Mapping[str, Any]]) -> list[Shown]:
    """The report's step tree with each step's figures (a parent's: its own and those of
    everything under it) and its values made readable: a prompt as chat turns, a call's
    inputs and outputs apart, to be shown side by side."""
    return [_dress(n, figures)[0] for n in nodes]


def _dress(
    node: TimelineNode, figures: Mapping[str, Mapping[str, Any]]
) -> tuple[Shown, int, int, Decimal | None]:
    own = figures.get(node.iri, {})
    children = [_dress(c, figures) for c in node.children]
    tokens_in = int(own.get("in") or 0) + sum(c[1] for c in children)
    tokens_out = int(own.get("out") or 0) + sum(c[2] for c in children)
    costs = [c for c in [own.get("cost"), *(c[3] for c in children)] if c is not None]
    cost = sum(costs, Decimal(0)) if costs else None
    latency = own.get("latency")
    shown = Shown(
        iri=node.iri,
        kind=node.kind,
        label=node.label,
        status=node.status,
        took=node.took,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost="" if cost is None else usd(cost),
        latency="" if latency is None else duration(float(latency) / 1000),
        side_effects=node.side_effects,
        subtree=bool(children),
        children=[c[0] for c in children],
    )
    for value in node.io:
        label = value.get("label", "")
        if label == "Prompt" and value.get("value"):
            shown.turns = turns(value["value"])
            if shown.turns is None:
                shown.others.append({**value, "value": readable(value["value"])})
        elif label == "Completion":
            shown.completion = readable(value.get("value")) or value.get("note", "")
        elif label == "Input":
            shown.inputs.append({**value, "value": readable(value.get("value"))})
        elif label == "Output":
            shown.outputs.append({**value, "value": readable(value.get("value"))})
        else:
            shown.others.append(value)
    return shown, tokens_in, tokens_out, cost


@dataclass
class Step:
    """One step for the side panel: what it is, its figures, values, evidence and lineage."""

    session: str
    activity: str
    kind: str
    label: str
    status: str
    started: str
    ended: str
    took: str
    figures: dict[str, str]
    entities: list[dict[str, Any]]
    lineage: list[dict[str, str]]


def _evidence(value: Any, digest: Any, policy: Any) -> tuple[str, str]:
    """Whether a value shown still matches the digest recorded (and sealed) with it."""
    if digest is None:
        return "no digest", "no digest was recorded with this value"
    if value is None:
        if policy is not None:
            return "hash only", f"recorded as its digest only (content policy {policy})"
        return "erased", "the value is no longer held (erased); its digest stays sealed"
    if sha256_hex(str(value)) == str(digest):
        return "matches", "the value matches the digest sealed with it"
    return "differs", "the value does not match the digest sealed with it"


def _when(value: Any) -> str:
    """A moment on one line, to the millisecond, in UTC."""
    if not isinstance(value, datetime):
        return "" if value is None else str(value)
    moment = value.astimezone(UTC) if value.tzinfo is not None else value
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def step(store: Store, session: IRI, activity: IRI) -> Step | None:
    """One step of ``session`` for the side panel, or None when it is not a step of it."""
    bound: dict[str, Term] = {"session": session, "activity": activity}
    found = _rows(store.query(_STEP, bound))
    if not found:
        return None
    types = sorted(str(r["type"]).rsplit("#", 1)[-1] for r in found if r.get("type"))
    head = found[0]
    started, ended = head.get("started"), head.get("ended")
    took = ""
    if started is not None and ended is not None:
        took = duration(max((ended - started).total_seconds(), 0.0))
    own = step_figures(store, session).get(str(activity), {})
    figures = {}
    if own.get("in") or own.get("out"):
        figures["tokens in/out"] = f"{own.get('in', 0)}/{own.get('out', 0)}"
    if own.get("cost") is not None:
        figures["cost (USD)"] = usd(own["cost"])
    if own.get("latency") is not None:
        figures["latency"] = duration(float(own["latency"]) / 1000)
    if took:
        figures["duration"] = took
    entities: dict[str, dict[str, Any]] = {}
    for r in _rows(store.query(_ENTITIES, bound)):
        kind = str(r["type"]).rsplit("#", 1)[-1]
        key = f"{r['role']} {r['entity']}"
        entry = entities.setdefault(
            key,
            {
                "role": r["role"],
                "entity": str(r["entity"]),
                "kind": _IO_KINDS.get(kind, kind),
                "value": readable(None if r.get("value") is None else str(r["value"])),
                "turns": turns(str(r["value"])) if kind == "Prompt" and r.get("value") else None,
                "digest": "" if r.get("digest") is None else str(r["digest"]),
                "others": {},
            },
        )
        entry["check"], entry["why"] = _evidence(r.get("value"), r.get("digest"), r.get("policy"))
        if r.get("other") is not None and str(r["other"]) != str(activity):
            entry["others"][str(r["other"])] = str(r.get("otherLabel") or r["other"])
    lineage = [
        {
            "direction": str(r["direction"]),
            "activity": str(r["other"]),
            "label": str(r.get("otherLabel") or r["other"]),
        }
        for r in _rows(store.query(_LINKS, bound))
    ]
    lineage.sort(key=lambda r: (r["direction"] != "informed by", r["label"]))
    return Step(
        session=str(session),
        activity=str(activity),
        kind=", ".join(types),
        label=str(head.get("label") or activity),
        status=str(head.get("status") or ""),
        started=_when(started),
        ended=_when(ended),
        took=took,
        figures=figures,
        entities=sorted(entities.values(), key=lambda e: (e["role"] != "used", e["kind"])),
        lineage=lineage,
    )
