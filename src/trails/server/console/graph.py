"""A session's provenance graph as data a layout engine draws: folded, labelled, its path marked.

The console draws the graph in the browser with dagre (``static/dagre.min.js``,
vendored, served by trails), a layered layout engine, from the JSON this module
makes. What it makes readable:

- list members folded: the entities a session's projection lists (its history,
  completions and invocations, minted ``…:projection:history:0``, ``…:1`` …)
  are members of one collection, not things an auditor reads one by one; each
  entity whose IRI ends in a bare number is folded into the collection that
  ``prov:hadMember`` it (else into the node its IRI extends), and that node says
  how many of each kind it holds;
- labels short and whole: each node's label cut to ``LABEL_WIDTH`` characters
  for the drawing, the full label and the IRI kept for its tooltip;
- the PROV relations named: ``used``, ``wasGeneratedBy``, ``wasInformedBy``,
  ``wasAssociatedWith``, ``actedOnBehalfOf``, ``wasDerivedFrom``,
  ``wasAttributedTo`` and ``hadPlan`` (through a qualified association), each
  edge carrying its relation (the page draws a legend);
- the path from the goal to the answer: the plan run that held the goal (its
  goal in its tooltip) to the entity its last completion generated (the
  answer), the shortest chain of recorded relations between them, marked.

Without JavaScript the page shows the same nodes and edges as a table.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any

from trails.prov.content import content_graph
from trails.store import Solutions, Store
from trails.store.terms import IRI, instant, to_python

__all__ = ["LABEL_WIDTH", "MAX_NODES", "RELATIONS", "fold", "script_json", "session_graph"]

LABEL_WIDTH = 28
MAX_NODES = 400
"""The most nodes drawn (a layout in the browser stays quick); the downloads hold them all."""
_PROV = "http://www.w3.org/ns/prov#"
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
#: the relations drawn, in the legend's order
RELATIONS = (
    "used",
    "wasGeneratedBy",
    "wasInformedBy",
    "wasAssociatedWith",
    "actedOnBehalfOf",
    "wasDerivedFrom",
    "wasAttributedTo",
    "hadPlan",
)
_DRAWN = {_PROV + name: name for name in RELATIONS if name != "hadPlan"}
_KINDS = {_PROV + "Activity": "activity", _PROV + "Entity": "entity", _PROV + "Agent": "agent"}
_RANK = {"entity": 0, "activity": 1, "agent": 2}
_INDEX = re.compile(r"^(.*?)[:/#]([A-Za-z_][\w.-]*)?[:/#]?(\d+)$")
_TRIPLES = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT ?s ?p ?o $session WHERE {
  GRAPH $session { ?s ?p ?o .
    FILTER(STRSTARTS(STR(?p), STR(prov:)) || ?p = rdfs:label
           || (?p = rdf:type && STRSTARTS(STR(?o), STR(prov:)))) }
}"""
#: the session's top plan runs (informed by the session), their goals and answers (content)
_RUNS = """PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX trails: <https://w3id.org/trails/ns#>
SELECT ?run ?started ?goal ?answer $session $content WHERE {
  GRAPH $session { ?run a trails:PlanRun ; prov:wasInformedBy $session ;
                        prov:startedAtTime ?started }
  OPTIONAL { GRAPH $content { ?run trails:goal ?goal } }
  OPTIONAL { GRAPH $content { ?run trails:answer ?answer } }
} ORDER BY ?started ?run"""


def _tail(node: str) -> str:
    return node.rsplit("/", 1)[-1].rsplit("#", 1)[-1].rsplit(":", 1)[-1]


def _cut(text: str, width: int = LABEL_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _plural(word: str, n: int) -> str:
    return f"{n} × {word}"


def fold(
    triples: Iterable[Sequence[Any]],
    runs: Sequence[dict[str, Any]] = (),
    *,
    max_nodes: int = MAX_NODES,
) -> dict[str, Any]:
    """The graph to draw from a session's PROV-O triples: nodes, edges, the marked path.

    Args:
        triples: ``(s, p, o)`` of the session's graph (PROV terms, labels, types).
        runs: the session's top plan runs in start order (``run``, ``goal``, ``answer``).
        max_nodes: draw at most this many nodes (the path first, then the most connected;
            ``left_out`` says how many are not drawn).

    Returns:
        ``{"nodes": [...], "edges": [...], "path": bool, "folded": int, "left_out": int}``:
        each node
        ``id``, ``kind``, ``label`` (cut), ``full`` (the tooltip), ``members`` (what was
        folded into it) and ``path``; each edge ``source``, ``target``, ``relation`` and
        ``path``; whether a goal-to-answer path was found; how many nodes were folded.
    """
    kinds: dict[str, str] = {}
    labels: dict[str, str] = {}
    started: dict[str, str] = {}
    raw: list[tuple[str, str, str]] = []
    members: dict[str, str] = {}  # member -> its collection
    association: dict[str, str] = {}  # qualified association -> activity
    plans: list[tuple[str, str]] = []  # association, plan
    for s, p, o in triples:
        s, p, text = str(s), str(p), str(getattr(o, "value", o))
        if p == _RDF_TYPE and text in _KINDS:
            kind = _KINDS[text]  # an agent typed an entity too is drawn as the agent
            if _RANK[kind] > _RANK.get(kinds.get(s, ""), -1):
                kinds[s] = kind
        elif p == _LABEL:
            labels.setdefault(s, text)
        elif p == _PROV + "startedAtTime":
            started[s] = text
        elif p == _PROV + "hadMember":
            members[text] = s
        elif p == _PROV + "qualifiedAssociation":
            association[text] = s
        elif p == _PROV + "hadPlan":
            plans.append((s, text))
        elif p in _DRAWN:
            raw.append((s, _DRAWN[p], text))
    raw += [(association[a], "hadPlan", plan) for a, plan in plans if a in association]
    for s, relation, o in raw:  # an untyped end takes the kind its relation gives it
        if relation in ("used", "wasInformedBy", "wasAssociatedWith", "hadPlan"):
            kinds.setdefault(s, "activity")
        if relation in ("wasAssociatedWith", "actedOnBehalfOf", "wasAttributedTo"):
            kinds.setdefault(o, "agent")
        if relation == "wasInformedBy" or relation == "wasGeneratedBy":
            kinds.setdefault(o, "activity")
        kinds.setdefault(s, "entity")
        kinds.setdefault(o, "entity")
    # fold every list member (an IRI ending in a bare number) into what holds it
    into: dict[str, str] = {}
    held: dict[str, dict[str, int]] = {}
    for node in sorted(kinds):
        found = _INDEX.match(node)
        if kinds[node] != "entity" or not found or _tail(node) != found.group(3):
            continue
        owner = members.get(node)
        if owner is None:
            prefix = found.group(1)
            while prefix and prefix not in kinds:
                cut = re.match(r"^(.*)[:/#][^:/#]*$", prefix)
                prefix = cut.group(1) if cut else ""
            owner = prefix or None
        if owner is None or owner == node:
            continue
        into[node] = owner
        word = found.group(2) or "item"
        held.setdefault(owner, {}).setdefault(word, 0)
        held[owner][word] += 1
    for node, owner in list(into.items()):  # a member of a member: the outermost holder
        seen = {node}
        while owner in into and owner not in seen:
            seen.add(owner)
            owner = into[owner]
        into[node] = owner
    nodes = [n for n in sorted(kinds) if n not in into]
    edges: list[tuple[str, str, str]] = []
    drawn: set[tuple[str, str, str]] = set()
    for s, relation, o in raw:
        a, b = into.get(s, s), into.get(o, o)
        if a != b and (a, relation, b) not in drawn:
            drawn.add((a, relation, b))
            edges.append((a, relation, b))
    goal, answer, goal_text, answer_text = _ends(runs, edges, started, kinds)
    path_nodes, path_edges = _path(goal, answer, edges)
    left_out = max(len(nodes) - max_nodes, 0)
    if left_out:  # the path, then the most connected nodes; the downloads hold them all
        degree = dict.fromkeys(nodes, 0)
        for s, _, o in edges:
            degree[s] += 1
            degree[o] += 1
        ranked = sorted(nodes, key=lambda n: (n not in path_nodes, -degree[n], n))
        kept = set(ranked[:max_nodes])
        nodes = [n for n in nodes if n in kept]
        edges = [(s, r, o) for s, r, o in edges if s in kept and o in kept]
    # activities numbered in start order; an entity minted from one names it ("prompt of #2")
    order = {
        a: f"#{i}" for i, (_, a) in enumerate(sorted((instant(t), a) for a, t in started.items()))
    }
    out_nodes = []
    for node in nodes:
        label = labels.get(node) or _tail(node) or node
        maker = node.rsplit(":", 1)[0]
        if node not in labels and kinds[node] == "entity" and maker in order:
            label = f"{label} of {order[maker]}"
        elif node in order and node not in (goal, answer):
            label = f"{order[node]} {label}"
        full = f"{kinds[node]}: {node}\n{label}"
        suffix = ""
        folded = held.get(node, {})
        if folded:
            listed = ", ".join(_plural(word, n) for word, n in sorted(folded.items()))
            full += f"\nholds {listed}"
            suffix = f" ({sum(folded.values())})"
        if node == goal and goal_text:
            full += f"\ngoal: {goal_text}"
            label = f"goal: {goal_text}"
        if node == answer and answer_text:
            full += f"\nanswer: {answer_text}"
            label = f"answer: {answer_text}"
        out_nodes.append(
            {
                "id": node,
                "kind": kinds[node],
                "label": _cut(label, LABEL_WIDTH - len(suffix)) + suffix,
                "full": full,
                "members": sum(folded.values()),
                "path": node in path_nodes,
                "end": "goal" if node == goal else "answer" if node == answer else "",
            }
        )
    out_edges = [
        {"source": s, "target": o, "relation": r, "path": (s, o) in path_edges} for s, r, o in edges
    ]
    return {
        "nodes": out_nodes,
        "edges": out_edges,
        "path": bool(path_nodes),
        "folded": len(into),
        "left_out": left_out,
        "relations": list(RELATIONS),
    }


def _ends(
    runs: Sequence[dict[str, Any]],
    edges: Sequence[tuple[str, str, str]],
    started: dict[str, str],
    kinds: dict[str, str],
) -> tuple[str | None, str | None, str, str]:
    """The goal's node (the last top run with an answer, else the last run) and the answer's
    (the entity its last completion, in start order, generated), and their texts."""
    chosen = next((r for r in reversed(runs) if r.get("answer")), runs[-1] if runs else None)
    if chosen is None:
        return None, None, "", ""
    run = str(chosen["run"])
    if run not in kinds:
        return None, None, "", ""
    informed = [s for s, r, o in edges if r == "wasInformedBy" and o == run]
    generated = {s: o for s, r, o in edges if r == "wasGeneratedBy"}
    steps = sorted(
        (started.get(a, ""), a) for a in informed if any(v == a for v in generated.values())
    )
    answer = None
    if steps:
        last = steps[-1][1]
        answer = next((e for e, a in generated.items() if a == last), None)
    return run, answer, str(chosen.get("goal") or ""), str(chosen.get("answer") or "")


def _path(
    goal: str | None, answer: str | None, edges: Sequence[tuple[str, str, str]]
) -> tuple[set[str], set[tuple[str, str]]]:
    """The shortest chain of relations (either direction) from the goal's node to the
    answer's: its nodes and its edges (as drawn, source to target)."""
    if goal is None or answer is None:
        return set(), set()
    near: dict[str, list[str]] = {}
    for s, _, o in edges:
        near.setdefault(s, []).append(o)
        near.setdefault(o, []).append(s)
    came: dict[str, str | None] = {goal: None}
    queue = deque([goal])
    while queue:
        node = queue.popleft()
        if node == answer:
            break
        for other in near.get(node, []):
            if other not in came:
                came[other] = node
                queue.append(other)
    if answer not in came:
        return set(), set()
    chain = [answer]
    while came[chain[-1]] is not None:
        chain.append(came[chain[-1]])  # type: ignore[arg-type]
    pairs = set(pairwise(chain))
    drawn = {(s, o) for s, _, o in edges if (s, o) in pairs or (o, s) in pairs}
    return set(chain), drawn


def _rows(result: object) -> list[dict[str, Any]]:
    if not isinstance(result, Solutions):
        return []
    return [
        {k: (None if v is None else to_python(v)) for k, v in zip(result.variables, r, strict=True)}
        for r in result.rows
    ]


def session_graph(store: Store, session: IRI) -> dict[str, Any]:
    """The drawable graph of ``session`` (``fold`` of its PROV-O), read from ``store``.

    Args:
        store: the store (the console's system view, once the reader's grant is checked).
        session: the session's IRI (its graph).

    Returns:
        What ``fold`` returns.
    """
    result = store.query(_TRIPLES, {"session": session})
    assert isinstance(result, Solutions)
    runs = _rows(store.query(_RUNS, {"session": session, "content": content_graph(session)}))
    return fold((row[:3] for row in result.rows), runs)


def script_json(data: Any) -> str:
    """``data`` as JSON safe inside a ``<script type="application/json">`` element: no ``<``,
    ``>`` or ``&`` (escaped as ``\\u003c`` …), so recorded text cannot close the element."""
    text = json.dumps(data, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
