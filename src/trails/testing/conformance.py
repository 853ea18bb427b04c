"""Conformance checks: every graph trails records must satisfy ``shapes.ttl``
and be readable by standard PROV tooling.

These are the two assertions every test that records something ends with::

    from trails.testing import assert_conforms, assert_prov_readable

    def test_refund(ctx):
        invoke("refund", {"order": "A1"}, ctx=ctx)
        assert_conforms(ctx.store)            # SHACL: shapes.ttl, no inference
        assert_prov_readable(ctx.store, activities=2, agents={ctx.principal})

- ``shacl_report(store, graph=None)`` validates each named graph (or only
  ``graph``) on its own against ``ontologies/shapes.ttl`` with pyshacl and
  returns ``(conforms, text)``; the text lists one line per violation
  (graph, focus node, property, message, value).
- ``assert_conforms(store, graph=None)`` raises ``AssertionError`` with that
  text when a graph does not conform, or when there is nothing to check.
- ``prov_document(store, graph=None)`` reads the TriG dump with the ``prov``
  package (``ProvDocument.deserialize(format="rdf", rdf_format="trig")``);
  each named graph becomes a bundle.
- ``assert_prov_readable(store, *, activities=None, entities=None,
  agents=None, graph=None)`` checks the ``prov`` package reads exactly the
  activities, entities and agents the store types with ``prov:Activity``,
  ``prov:Entity`` and ``prov:Agent``, then the expectations given: an ``int``
  is a minimum count, a collection of IRIs must all be present. It returns a
  ``ProvSummary`` (the three IRI sets and the document) for further checks.

Validation runs without inference on purpose: SPARQL engines infer nothing,
so each resource must carry its PROV-O class next to its trails class. The
shapes are parsed once per process; each call reads one graph's triples into
rdflib and runs over it only the cached shapes whose targets match something in
it (the others could validate nothing there), with each SPARQL constraint's text
parsed once per process.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rdflib
from prov.model import ProvActivity, ProvAgent, ProvDocument, ProvEntity, ProvRecord
from rdflib.collection import Collection as RDFList
from rdflib.plugins.sparql import prepareQuery
from rdflib.plugins.sparql.sparql import Query

from trails.errors import RDFSyntaxError
from trails.prov.events import (
    CapabilityInvoked,
    EntityRecorded,
    LLMCompleted,
    PlanRunEnded,
    PlanRunStarted,
    PolicyDecided,
    SessionEnded,
    SessionStarted,
    Terminated,
)
from trails.prov.recorder import Recorder
from trails.prov.vocab import PROV, RDF
from trails.store.base import Solutions, Store
from trails.store.terms import IRI, to_rdflib

if TYPE_CHECKING:  # pyshacl is a test dependency, imported when a check runs
    from pyshacl.shapes_graph import ShapesGraph

__all__ = [
    "ProvSummary",
    "assert_conforms",
    "assert_prov_readable",
    "ontology_dir",
    "prov_document",
    "record_sample_session",
    "shacl_report",
    "shapes_graph",
]

_SH = rdflib.Namespace("http://www.w3.org/ns/shacl#")
_lock = threading.Lock()
_shapes: ShapesGraph | None = None


def ontology_dir() -> Path:
    """The folder of ``trails.ttl`` and ``shapes.ttl`` (installed package, else source tree).

    Raises:
        FileNotFoundError: neither location holds the ontologies.
    """
    here = Path(__file__).resolve()
    for candidate in (here.parent.parent / "_data" / "ontologies", here.parents[3] / "ontologies"):
        if (candidate / "shapes.ttl").is_file():
            return candidate
    raise FileNotFoundError("the ontologies folder (shapes.ttl) is missing from this installation")


def shapes_graph() -> rdflib.Graph:
    """The parsed ``shapes.ttl`` (parsed once per process, shared: do not modify it)."""
    return _cached_shapes().graph  # type: ignore[no-any-return]


def _cached_shapes() -> ShapesGraph:
    global _shapes
    with _lock:
        if _shapes is None:
            try:
                from pyshacl.shapes_graph import ShapesGraph
            except ImportError as exc:  # pragma: no cover - depends on the installation
                raise ImportError("SHACL checks need pyshacl: pip install 'trails[test]'") from exc
            graph = rdflib.Graph()
            graph.parse(ontology_dir() / "shapes.ttl", format="turtle")
            shapes = ShapesGraph(graph)
            _ = shapes.shapes  # harvest the shapes once; validations reuse them
            _shapes = shapes
        return _shapes


@dataclass(frozen=True)
class _Targets:
    """What selects the focus nodes of one top-level shape (its SHACL targets)."""

    shape: rdflib.URIRef
    classes: frozenset[rdflib.term.Node]
    subjects_of: frozenset[rdflib.term.Node]
    objects_of: frozenset[rdflib.term.Node]
    nodes: frozenset[rdflib.term.Node]


_targets: list[_Targets] | None = None


def _shape_targets() -> list[_Targets] | None:
    """The targets of every shape that has one, or ``None`` when a shape selects its focus
    nodes some other way (then every shape runs on every graph)."""
    global _targets
    shapes = _cached_shapes()
    with _lock:
        if _targets is None:
            found = []
            for shape in shapes.shapes:
                nodes, classes, implicit, objects_of, subjects_of = (
                    frozenset(t) for t in shape.target()
                )
                if not (nodes or classes or implicit or objects_of or subjects_of):
                    continue  # reached only through another shape (sh:property, sh:node, ...)
                if not isinstance(shape.node, rdflib.URIRef):
                    return None
                found.append(
                    _Targets(shape.node, classes | implicit, subjects_of, objects_of, nodes)
                )
            _targets = found
        return _targets


def _shapes_for(data: rdflib.Graph) -> list[rdflib.URIRef] | None:
    """The shapes that have a focus node in ``data``; ``None``: run them all.

    A shape whose targets match nothing in the graph validates nothing there, so leaving
    it out changes no result; it saves pyshacl looking for its focus nodes in every graph.
    Class targets follow ``rdfs:subClassOf`` in the data graph: a graph that declares
    subclasses runs every shape.
    """
    targets = _shape_targets()
    if targets is None or (None, rdflib.RDFS.subClassOf, None) in data:
        return None
    types = set(data.objects(None, rdflib.RDF.type))
    predicates = set(data.predicates())
    return [
        t.shape
        for t in targets
        if not t.classes.isdisjoint(types)
        or not t.subjects_of.isdisjoint(predicates)
        or not t.objects_of.isdisjoint(predicates)
        or any((n, None, None) in data or (None, None, n) in data for n in t.nodes)
    ]


@functools.lru_cache(maxsize=512)
def _prepared(text: str) -> Query:
    return prepareQuery(text)


@functools.cache
def _data_graph_class() -> type[Any]:
    from pyshacl.graph_abstraction import RdfLibDataGraph

    class PreparedQueries(RdfLibDataGraph):  # type: ignore[misc]
        """A data graph that parses each SPARQL text once per process: the shapes' SPARQL
        constraints send the same text for every focus node of every graph."""

        def query(self, query_object: str | Query, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            if isinstance(query_object, str):
                query_object = _prepared(query_object)
            return super().query(query_object, *args, **kwargs)

    return PreparedQueries


def _data_graph(data: rdflib.Graph) -> Any:
    return _data_graph_class().from_rdflib(data)


def _validate(data: rdflib.Graph) -> tuple[bool, rdflib.Graph]:
    shapes = _cached_shapes()
    from pyshacl import Validator

    options: dict[str, Any] = {"inference": "none", "advanced": False, "inplace": True}
    relevant = _shapes_for(data)
    if relevant is not None:
        if not relevant:
            return True, rdflib.Graph()
        options["use_shapes"] = [str(shape) for shape in relevant]
    validator = Validator(_data_graph(data), shacl_graph=shapes.graph, options=options)
    validator.shacl_graph = shapes  # reuse the harvested shapes instead of re-reading them
    with _lock:  # pyshacl caches per-shape state: one validation at a time
        conforms, report, _text = validator.run()  # type: ignore[no-untyped-call]
    return bool(conforms), report


_ALL_OF = "SELECT ?graph ?s ?p ?o WHERE { GRAPH ?graph { ?s ?p ?o } }"


def _graph_of(store: Store, graph: IRI) -> rdflib.Graph:
    """One named graph as an rdflib graph, its terms converted one by one (reading its
    N-Triples text back through rdflib's parser is quadratic in a literal's length)."""
    answer = store.query(_ALL_OF, {"graph": graph})
    assert isinstance(answer, Solutions)
    g = rdflib.Graph()
    add = g.add
    for _, s, p, o in answer.rows:
        assert s is not None and p is not None and o is not None
        add((to_rdflib(s), to_rdflib(p), to_rdflib(o)))
    return g


def _short(node: Any, graph: rdflib.Graph) -> str:
    if isinstance(node, rdflib.URIRef):
        try:
            return str(graph.namespace_manager.normalizeUri(node))
        except Exception:  # rdflib refuses some IRIs as prefixed names
            return f"<{node}>"
    if isinstance(node, rdflib.Literal):
        return node.n3(graph.namespace_manager)
    if isinstance(node, rdflib.BNode):
        path = graph.value(node, _SH.inversePath)
        if path is not None:
            return f"^{_short(path, graph)}"
        if (node, rdflib.RDF.first, None) in graph:
            return "/".join(_short(i, graph) for i in RDFList(graph, node))
        return "[]"
    return str(node)


def _describe(report: rdflib.Graph, shapes: rdflib.Graph) -> list[str]:
    lines = []
    merged = report + shapes  # to shorten shape paths and names
    for ns_prefix, ns in shapes.namespaces():
        merged.bind(ns_prefix, ns, override=True)
    for result in report.subjects(rdflib.RDF.type, _SH.ValidationResult):
        focus = report.value(result, _SH.focusNode)
        path = report.value(result, _SH.resultPath)
        message = report.value(result, _SH.resultMessage)
        value = report.value(result, _SH.value)
        shape = report.value(result, _SH.sourceShape)
        parts = [f"- {_short(focus, merged)}"]
        if path is not None:
            parts.append(f"{_short(path, merged)}:")
        else:
            parts[0] += ":"
        parts.append(str(message) if message is not None else "violates a shape")
        if value is not None and value != focus:
            parts.append(f"(value {_short(value, merged)})")
        if isinstance(shape, rdflib.URIRef):
            parts.append(f"[{_short(shape, merged)}]")
        lines.append(" ".join(parts))
    return sorted(lines)


def shacl_report(store: Store, graph: IRI | str | None = None) -> tuple[bool, str]:
    """Validate recorded graphs against ``shapes.ttl`` (pyshacl, no inference).

    Args:
        store: the store to read.
        graph: one named graph to validate; by default each named graph of the
            store, each on its own.

    Returns:
        ``(conforms, text)``: whether every graph conforms, and a readable
        report (one line per violation, grouped by graph).
    """
    graphs = [IRI(str(graph))] if graph is not None else store.graphs()
    if not graphs:
        return True, "no named graph to validate"
    shapes = shapes_graph()
    conforms_all = True
    sections = []
    for name in graphs:
        data = _graph_of(store, name)
        conforms, report = _validate(data)
        if conforms:
            sections.append(f"graph <{name}>: conforms ({len(data)} triples)")
            continue
        conforms_all = False
        lines = _describe(report, shapes)
        sections.append(
            f"graph <{name}>: {len(lines)} violation(s) in {len(data)} triples\n" + "\n".join(lines)
        )
    return conforms_all, "\n".join(sections)


def assert_conforms(store: Store, graph: IRI | str | None = None) -> None:
    """Assert every recorded graph (or ``graph``) conforms to ``shapes.ttl``.

    Args:
        store: the store to check.
        graph: one named graph; by default every named graph of the store.

    Raises:
        AssertionError: a graph does not conform (the message lists each
            violation), or the store holds no named graph to check.
    """
    if graph is None and not store.graphs():
        raise AssertionError("the store holds no named graph: nothing was recorded to check")
    conforms, text = shacl_report(store, graph)
    if not conforms:
        raise AssertionError("recorded provenance does not conform to shapes.ttl\n" + text)


def prov_document(store: Store, graph: IRI | str | None = None) -> ProvDocument:
    """Read the store (or one graph) with the ``prov`` package.

    Args:
        store: the store to read.
        graph: one named graph (read as top-level records); by default the
            whole dataset, each named graph becoming a bundle.

    Returns:
        The ``prov.model.ProvDocument``.

    Raises:
        RDFSyntaxError: the ``prov`` package could not read the dump.
    """
    if graph is None:
        data = store.dump(format="trig")
    else:
        data = store.dump(format="trig", graph=IRI(str(graph)))
    assert data is not None
    from trails.audit.export import with_prefixes  # what an exported graph declares

    try:
        return ProvDocument.deserialize(
            content=with_prefixes(data), format="rdf", rdf_format="trig"
        )
    except Exception as exc:  # the prov package raises many kinds of errors
        raise RDFSyntaxError(f"the prov package cannot read the recorded graph: {exc}") from exc


@dataclass(frozen=True)
class ProvSummary:
    """What the ``prov`` package read: IRIs of activities, entities and agents."""

    activities: frozenset[str]
    entities: frozenset[str]
    agents: frozenset[str]
    document: ProvDocument = field(repr=False, compare=False)


def _records(doc: ProvDocument) -> list[ProvRecord]:
    records = list(doc.get_records())
    for bundle in doc.bundles:
        records.extend(bundle.get_records())
    return records


def _summary(doc: ProvDocument) -> ProvSummary:
    found: dict[type, set[str]] = {ProvActivity: set(), ProvEntity: set(), ProvAgent: set()}
    for record in _records(doc):
        for cls, iris in found.items():
            if isinstance(record, cls) and record.identifier is not None:
                iris.add(str(record.identifier.uri))
    return ProvSummary(
        activities=frozenset(found[ProvActivity]),
        entities=frozenset(found[ProvEntity]),
        agents=frozenset(found[ProvAgent]),
        document=doc,
    )


def _typed(store: Store, cls: IRI, graph: IRI | None) -> set[str]:
    pattern = f"GRAPH ?g {{ ?x {RDF.type.n3()} {cls.n3()} }}"
    if graph is None:
        result = store.query(f"SELECT DISTINCT ?x WHERE {{ {pattern} }}")
    else:  # a bound variable must be projected
        result = store.query(f"SELECT DISTINCT ?x ?g WHERE {{ {pattern} }}", {"g": graph})
    assert isinstance(result, Solutions)
    return {str(x) for x in result.column("x") if x is not None}


def _check(kind: str, found: frozenset[str], expected: int | Collection[str] | None) -> list[str]:
    if expected is None:
        return []
    if isinstance(expected, int):
        if len(found) < expected:
            return [f"expected at least {expected} {kind}, the prov package read {len(found)}"]
        return []
    missing = sorted(set(map(str, expected)) - found)
    return [f"{kind} not read by the prov package: {', '.join(missing)}"] if missing else []


def assert_prov_readable(
    store: Store,
    *,
    activities: int | Collection[str] | None = None,
    entities: int | Collection[str] | None = None,
    agents: int | Collection[str] | None = None,
    graph: IRI | str | None = None,
) -> ProvSummary:
    """Assert the ``prov`` package reads the recorded provenance completely.

    The activities, entities and agents it reads must be exactly the resources
    the store types ``prov:Activity``, ``prov:Entity`` and ``prov:Agent``;
    then each expectation given must hold.

    Args:
        store: the store to read.
        activities: a minimum count, or IRIs that must be read as activities.
        entities: a minimum count, or IRIs that must be read as entities.
        agents: a minimum count, or IRIs that must be read as agents.
        graph: one named graph; by default the whole dataset.

    Returns:
        What was read, for further assertions.

    Raises:
        AssertionError: the dump does not parse, the reader disagrees with the
            store, or an expectation fails.
    """
    name = IRI(str(graph)) if graph is not None else None
    try:
        summary = _summary(prov_document(store, name))
    except RDFSyntaxError as exc:
        raise AssertionError(str(exc)) from exc
    problems: list[str] = []
    for kind, cls, read in (
        ("activities", PROV.Activity, summary.activities),
        ("entities", PROV.Entity, summary.entities),
        ("agents", PROV.Agent, summary.agents),
    ):
        typed = _typed(store, cls, name)
        if typed - read:
            problems.append(f"{kind} typed in the store but not read: {sorted(typed - read)}")
        if read - typed:
            problems.append(f"{kind} read but not typed in the store: {sorted(read - typed)}")
    problems += _check("activities", summary.activities, activities)
    problems += _check("entities", summary.entities, entities)
    problems += _check("agents", summary.agents, agents)
    if problems:
        text = "\n".join(problems)
        raise AssertionError(f"the prov package reads the provenance wrongly:\n{text}")
    return summary


def record_sample_session(
    recorder: Recorder, principal: str = "did:example:alice", *, session_id: str | None = None
) -> dict[str, IRI]:
    """Record one complete session holding every kind of event ``trails.prov.events`` defines.

    A ReAct run whose completion produced a plan and a critique, a successful
    and a failed capability call, a denied call, a failed completion, then a
    budget breach that terminates the run and the end of the session. Times
    are fixed (2026-01-01, one second per event), so the graph is the same
    every time but for its random activity IRIs. Useful to test anything that
    reads recorded provenance (queries, exports, reports).

    Args:
        recorder: where to record.
        principal: the session's principal.
        session_id: the session id; random by default.

    Returns:
        The IRIs recorded, by role: ``session``, ``run``, ``completion``,
        ``failed_completion``, ``plan``, ``critique``, ``invocation``,
        ``failed_invocation``, ``decision``, ``principal``.
    """
    minter = recorder.minter
    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def at(seconds: int) -> datetime:
        return t0 + timedelta(seconds=seconds)

    session = minter.session(session_id)
    iris = {
        "session": session,
        "run": minter.activity(),
        "completion": minter.activity(),
        "failed_completion": minter.activity(),
        "plan": minter.entity(),
        "critique": minter.entity(),
        "invocation": minter.activity(),
        "failed_invocation": minter.activity(),
        "decision": minter.activity(),
        "principal": minter.agent(principal),
    }
    run = iris["run"]
    events = [
        SessionStarted(
            session=session,
            principal=principal,
            started=at(0),
            label="sample session",
            assurance_level="high",
            domain="testing",
        ),
        PlanRunStarted(
            session=session,
            activity=run,
            parent=None,
            principal=principal,
            strategy="react",
            goal="add 2 and 3",
            started=at(1),
        ),
        LLMCompleted(
            session=session,
            principal=principal,
            provider="mock",
            model="scripted",
            activity=iris["completion"],
            parent=run,
            started=at(2),
            ended=at(3),
            messages=[{"role": "user", "content": "add 2 and 3"}],
            params={"temperature": 0.0},
            request_hash="0" * 64,
            text='{"action": "add", "action_input": {"a": 2, "b": 3}}',
            input_tokens=12,
            output_tokens=9,
            cache_read_tokens=3,
            usd=0.00042,
            latency_ms=812.5,
            request_id="req-1",
            step=0,
        ),
        EntityRecorded(
            session=session,
            entity=iris["plan"],
            kind="PlanDocument",
            content=[{"action": "add", "action_input": {"a": 2, "b": 3}}],
            generated_by=iris["completion"],
            at=at(3),
            index=0,
        ),
        EntityRecorded(
            session=session,
            entity=iris["critique"],
            kind="Critique",
            content={"verdict": "accept", "critique": "fine"},
            generated_by=iris["completion"],
            at=at(3),
        ),
        CapabilityInvoked(
            session=session,
            activity=iris["invocation"],
            parent=iris["completion"],
            principal=principal,
            capability_id="add",
            description="Add two integers.",
            started=at(4),
            ended=at(5),
            status="ok",
            inputs={"a": 2, "b": 3},
            output=5,
            step=0,
        ),
        CapabilityInvoked(
            session=session,
            activity=iris["failed_invocation"],
            parent=run,
            principal=principal,
            capability_id="divide",
            description="Divide two numbers.",
            started=at(6),
            ended=at(7),
            status="error",
            inputs={"a": 1, "b": 0},
            error="ZeroDivisionError: division by zero",
            step=1,
        ),
        PolicyDecided(
            session=session,
            activity=iris["decision"],
            parent=run,
            principal=principal,
            policy="no-payments",
            capability_id="pay",
            decision="deny",
            reason="payments need approval",
            arguments={"amount": 100},
            at=at(8),
        ),
        LLMCompleted(
            session=session,
            principal=principal,
            provider="mock",
            model="scripted",
            activity=iris["failed_completion"],
            parent=run,
            started=at(9),
            ended=at(10),
            messages=[{"role": "user", "content": "and now?"}],
            request_hash="1" * 64,
            status="error",
            error="ModelAPIError: overloaded",
            retries=2,
            step=2,
        ),
        Terminated(
            session=session,
            activity=run,
            kind="budget",
            reason="cost 0.0012 USD would exceed the budget of 0.001 USD",
            limit=0.001,
            observed=0.0012,
            at=at(11),
        ),
        PlanRunEnded(session=session, activity=run, ended=at(11), stop_reason="max_cost"),
        SessionEnded(session=session, ended=at(12), status="ok"),
    ]
    for event in events:
        recorder.record(event)
    return iris
