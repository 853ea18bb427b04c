"""The trails ontology and its SHACL shapes agree with the code that records.

- ``trails.ttl`` parses, declares every term of ``trails.prov.vocab.T`` and
  every ``TRAILS`` term the source spells, with a label and a comment, and
  declares nothing the code does not know;
- its class and property axioms place trails inside PROV-O;
- the datatypes and domains it states are the ones the recorder writes;
- ``shapes.ttl`` parses, is itself valid SHACL, only names declared terms and
  targets every class the recorder writes.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
import rdflib
from pyshacl import validate
from rdflib import OWL, RDF, RDFS, SH, Namespace, URIRef

# XSD is not a global here: pytest probes the globals, and rdflib warns for each name its
# closed XSD namespace does not define
from rdflib import namespace as rdf_namespaces

from trails.prov import Recorder
from trails.prov.content import structure_graph
from trails.prov.vocab import PROV, TRAILS, T
from trails.store import Store
from trails.testing import ontology_dir, shapes_graph
from trails.testing.conformance import record_sample_session

TR = Namespace(str(TRAILS))
P = Namespace(str(PROV))
SRC = Path(__file__).resolve().parents[1] / "src" / "trails"
ONTOLOGY_IRI = URIRef(str(TRAILS).rstrip("#"))


@pytest.fixture(scope="module")
def onto() -> rdflib.Graph:
    g = rdflib.Graph()
    g.parse(ontology_dir() / "trails.ttl", format="turtle")
    return g


@pytest.fixture(scope="module")
def shapes() -> rdflib.Graph:
    g = rdflib.Graph()
    g.parse(ontology_dir() / "shapes.ttl", format="turtle")
    return g


@pytest.fixture
def recorded(store: Store, recorder: Recorder) -> list[rdflib.Graph]:
    """Everything the recorder writes, one rdflib graph per session (full and hash-only content)."""
    record_sample_session(recorder)
    record_sample_session(Recorder(store, content="hash"))
    graphs: dict[str, rdflib.Graph] = {}
    for name in store.graphs():  # a session's structure and its content graph, as one graph
        data = store.dump(format="ntriples", graph=name)
        assert data is not None
        key = str(structure_graph(name))
        graphs.setdefault(key, rdflib.Graph(identifier=URIRef(key))).parse(data=data, format="nt")
    assert len(graphs) == 2
    return list(graphs.values())


def t_terms() -> dict[str, str]:
    return {
        name: str(value)
        for name, value in vars(T).items()
        if not name.startswith("_") and isinstance(value, str)
    }


def declared(onto: rdflib.Graph) -> dict[URIRef, set[URIRef]]:
    kinds: dict[URIRef, set[URIRef]] = defaultdict(set)
    for kind in (OWL.Class, OWL.ObjectProperty, OWL.DatatypeProperty):
        for s in onto.subjects(RDF.type, kind):
            if isinstance(s, URIRef) and str(s).startswith(str(TRAILS)):
                kinds[s].add(kind)
    return kinds


def source_terms() -> dict[str, set[str]]:
    """Every trails term spelled in the source: ``T.x`` (where T is the vocab's) and ``TRAILS.x``."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        names = set(re.findall(r"\bTRAILS\.([A-Za-z_]\w*)", text))
        names |= set(re.findall(r"\bTRAILS\[\s*[\"']([A-Za-z_]\w*)[\"']\s*\]", text))
        if re.search(r"from trails\.prov\.vocab import [^\n]*\bT\b", text):
            names |= set(re.findall(r"(?<![\w.])T\.([A-Za-z_]\w*)", text))
        for name in names:
            found[name].add(str(path.relative_to(SRC)))
    return found


def test_ontology_header(onto: rdflib.Graph) -> None:
    assert (ONTOLOGY_IRI, RDF.type, OWL.Ontology) in onto
    assert (ONTOLOGY_IRI, OWL.imports, URIRef("http://www.w3.org/ns/prov-o#")) in onto
    assert onto.value(ONTOLOGY_IRI, OWL.versionInfo) is not None
    assert onto.value(ONTOLOGY_IRI, RDFS.comment) is not None


def test_every_vocab_term_is_declared_with_label_and_comment(onto: rdflib.Graph) -> None:
    kinds = declared(onto)
    problems = []
    for name, iri in sorted(t_terms().items()):
        term = URIRef(iri)
        if term not in kinds:
            problems.append(f"T.{name}: not declared in trails.ttl")
            continue
        if len(kinds[term]) != 1:
            problems.append(f"T.{name}: declared as {sorted(kinds[term])}")
        for prop in (RDFS.label, RDFS.comment):
            values = [v for v in onto.objects(term, prop) if str(v).strip()]
            if len(values) != 1:
                problems.append(f"T.{name}: needs exactly one {prop.n3(onto.namespace_manager)}")
    assert not problems, "\n".join(problems)


def test_every_trails_term_in_the_source_is_declared(onto: rdflib.Graph) -> None:
    kinds = declared(onto)
    used = source_terms()
    assert "CapabilityInvocation" in used and "wasTerminatedBy" in used  # the scan works
    missing = {name: sorted(files) for name, files in used.items() if URIRef(TR[name]) not in kinds}
    assert not missing, f"trails terms used in src/trails but not declared in trails.ttl: {missing}"


def test_every_declared_term_is_in_the_vocab(onto: rdflib.Graph) -> None:
    known = set(t_terms().values())
    extra = sorted(str(term) for term in declared(onto) if str(term) not in known)
    assert not extra, f"declared in trails.ttl but missing from trails.prov.vocab.T: {extra}"
    for s in set(onto.subjects()):
        if isinstance(s, URIRef) and str(s).startswith(str(TRAILS)):
            assert s in declared(onto), f"{s} is described in trails.ttl but not declared"


SUBCLASSES: dict[str, str] = {
    T.Session: PROV.Activity,
    T.PlanRun: PROV.Activity,
    T.ReActPlan: T.PlanRun,
    T.PlanAndExecutePlan: T.PlanRun,
    T.ReflexionPlan: T.PlanRun,
    T.PlanExecuteReflectPlan: T.PlanRun,
    T.BehaviourTreePlan: T.PlanRun,
    T.LLMCompletion: PROV.Activity,
    T.CapabilityInvocation: PROV.Activity,
    T.PolicyDecision: PROV.Activity,
    T.MemoryOperation: PROV.Activity,
    T.Prompt: PROV.Entity,
    T.Completion: PROV.Entity,
    T.CapabilityInput: PROV.Entity,
    T.CapabilityOutput: PROV.Entity,
    T.PlanDocument: PROV.Entity,
    T.Critique: PROV.Entity,
    T.Memory: PROV.Entity,
    T.Termination: PROV.Entity,
    T.BudgetBreach: T.Termination,
    T.StepLimit: T.Termination,
    T.Error: T.Termination,
    T.Principal: PROV.Agent,
    T.Model: PROV.SoftwareAgent,
    T.Policy: PROV.Agent,
    T.Capability: PROV.Plan,
}


@pytest.mark.parametrize("cls", sorted(SUBCLASSES), ids=lambda c: c.rsplit("#", 1)[-1])
def test_class_axioms(onto: rdflib.Graph, cls: str) -> None:
    assert (URIRef(cls), RDFS.subClassOf, URIRef(SUBCLASSES[cls])) in onto


def test_every_trails_class_reaches_prov(onto: rdflib.Graph) -> None:
    prov_roots = {URIRef(PROV.Activity), URIRef(PROV.Entity), URIRef(PROV.Agent)}
    for cls in onto.subjects(RDF.type, OWL.Class):
        if not str(cls).startswith(str(TRAILS)):
            continue
        ancestors = set(onto.transitive_objects(cls, RDFS.subClassOf))
        # prov:SoftwareAgent and prov:Plan are declared in PROV-O, not here
        if URIRef(PROV.SoftwareAgent) in ancestors:
            ancestors.add(URIRef(PROV.Agent))
        if URIRef(PROV.Plan) in ancestors:
            ancestors.add(URIRef(PROV.Entity))
        assert ancestors & prov_roots, f"{cls} is not below a PROV-O class"


def test_property_axioms(onto: rdflib.Graph) -> None:
    assert (TR.wasTerminatedBy, RDFS.subPropertyOf, P.wasEndedBy) in onto
    assert (TR.wasTerminatedBy, RDFS.range, TR.Termination) in onto
    assert (TR.inSession, RDFS.range, TR.Session) in onto
    for prop, rng in ((TR.capability, TR.Capability), (TR.decidedOn, TR.Capability)):
        assert (prop, RDF.type, OWL.ObjectProperty) in onto
        assert (prop, RDFS.range, rng) in onto
    xsd = rdf_namespaces.XSD
    expected = {
        TR.inputTokens: xsd.integer,
        TR.outputTokens: xsd.integer,
        TR.cacheReadTokens: xsd.integer,
        TR.cacheWriteTokens: xsd.integer,
        TR.retries: xsd.integer,
        TR.stepIndex: xsd.integer,
        TR.costUSD: xsd.double,
        TR.latencyMs: xsd.double,
        TR.limit: xsd.double,
        TR.observed: xsd.double,
        TR.cacheHit: xsd.boolean,
        TR.sideEffects: xsd.boolean,
        TR.terminal: xsd.boolean,
        TR.sha256: xsd.string,
        TR.status: xsd.string,
    }
    for prop, dt in expected.items():
        assert (prop, RDF.type, OWL.DatatypeProperty) in onto
        assert onto.value(prop, RDFS.range) == dt, prop


def _datatype(o: rdflib.Literal) -> URIRef:
    return o.datatype or (RDF.langString if o.language else rdf_namespaces.XSD.string)


def test_recorded_literals_have_the_declared_range(
    onto: rdflib.Graph, recorded: list[rdflib.Graph]
) -> None:
    problems = set()
    seen = set()
    for _s, p, o in (t for g in recorded for t in g):
        if not str(p).startswith(str(TRAILS)):
            continue
        seen.add(p)
        kind = onto.value(p, RDF.type)
        if kind == OWL.DatatypeProperty:
            if not isinstance(o, rdflib.Literal):
                problems.add(f"{p} has a non-literal value {o}")
            elif _datatype(o) != onto.value(p, RDFS.range):
                problems.add(
                    f"{p} is recorded as {_datatype(o)}, declared {onto.value(p, RDFS.range)}"
                )
        elif kind == OWL.ObjectProperty:
            if not isinstance(o, URIRef):
                problems.add(f"{p} has a literal value {o!r}")
        else:
            problems.add(f"{p} is recorded but not declared as a property")
    assert not problems, "\n".join(sorted(problems))
    assert TR.costUSD in seen and TR.wasTerminatedBy in seen  # the sample covers the vocabulary


def test_recorded_subjects_are_in_the_declared_domain(
    onto: rdflib.Graph, recorded: list[rdflib.Graph]
) -> None:
    """Domains and ranges hold on explicit types, in the same session graph."""
    problems = set()
    for g in recorded:
        for s, p, o in g:
            domain = onto.value(p, RDFS.domain) if str(p).startswith(str(TRAILS)) else None
            if domain is not None and (s, RDF.type, domain) not in g:
                problems.add(f"{s} has {p} but is not typed {domain}")
            is_object_property = onto.value(p, RDF.type) == OWL.ObjectProperty
            rng = onto.value(p, RDFS.range) if is_object_property else None
            if rng is not None and (o, RDF.type, rng) not in g:
                problems.add(f"{o} is the object of {p} but is not typed {rng}")
    assert not problems, "\n".join(sorted(problems))


def test_recorded_resources_carry_their_prov_class(
    onto: rdflib.Graph, recorded: list[rdflib.Graph]
) -> None:
    """SPARQL does no inference: each resource states its PROV-O class itself."""
    prov_of = {
        URIRef(T.Model): URIRef(PROV.Agent),
        URIRef(T.Capability): URIRef(PROV.Entity),
    }
    for g in recorded:
        for s, cls in g.subject_objects(RDF.type):
            if not str(cls).startswith(str(TRAILS)):
                continue
            for parent in onto.transitive_objects(cls, RDFS.subClassOf):
                assert (s, RDF.type, parent) in g, f"{s} is {cls} but not typed {parent}"
            if isinstance(cls, URIRef) and cls in prov_of:
                assert (s, RDF.type, prov_of[cls]) in g


def test_shapes_parse_and_are_valid_shacl(shapes: rdflib.Graph) -> None:
    # meta_shacl first checks the shapes against the SHACL-for-SHACL shapes and raises if invalid
    conforms, _report, text = validate(rdflib.Graph(), shacl_graph=shapes, meta_shacl=True)
    assert conforms, text
    assert len(shapes_graph()) == len(shapes)


def test_shapes_only_name_declared_terms(onto: rdflib.Graph, shapes: rdflib.Graph) -> None:
    kinds = declared(onto)
    unknown = {
        str(term)
        for triple in shapes
        for term in triple
        if isinstance(term, URIRef) and str(term).startswith(str(TRAILS)) and term not in kinds
    }
    assert not unknown, f"shapes.ttl names trails terms that trails.ttl does not declare: {unknown}"


def test_every_trails_class_has_a_shape(onto: rdflib.Graph, shapes: rdflib.Graph) -> None:
    targets = set(shapes.objects(None, SH.targetClass))
    classes = {c for c in onto.subjects(RDF.type, OWL.Class) if str(c).startswith(str(TRAILS))}
    missing = sorted(str(c) for c in classes - targets)
    assert not missing, f"trails classes without a shape (sh:targetClass) in shapes.ttl: {missing}"


def test_shapes_target_every_class_the_recorder_writes(
    shapes: rdflib.Graph, recorded: list[rdflib.Graph]
) -> None:
    written = {o for g in recorded for o in g.objects(None, RDF.type)}
    targets = set(shapes.objects(None, SH.targetClass))
    assert URIRef(T.CapabilityInvocation) in written and URIRef(PROV.Association) in written
    missing = sorted(str(c) for c in written - targets)
    assert not missing, (
        f"classes recorded without a shape (sh:targetClass) in shapes.ttl: {missing}"
    )


def test_each_graph_validates_alone_under_the_ontologys_inference(
    onto: rdflib.Graph, shapes: rdflib.Graph, store: Store, recorder: Recorder
) -> None:
    """A session graph and its content graph, each alone, conform with ``trails.ttl`` as the
    ontology and RDFS inference (``pyshacl -s shapes.ttl -e trails.ttl -i rdfs``): a content
    property's domain must not type the resource it is said of in the content graph (which
    holds no structure), and the literals RDFS types are not taken for resources."""
    record_sample_session(recorder)
    graphs = store.graphs()
    assert any(str(g).endswith(":content") for g in graphs)
    for name in graphs:
        data = rdflib.Graph().parse(data=store.dump(format="ntriples", graph=name), format="nt")
        conforms, _, text = validate(data, shacl_graph=shapes, ont_graph=onto, inference="rdfs")
        assert conforms, f"{name}:\n{text[:3000]}"


def test_content_properties_have_no_domain(onto: rdflib.Graph) -> None:
    """Each content property (``trails.prov.content.CONTENT_PROPERTIES``, kept in content
    graphs apart from the resource's types) says what it is said of in words, not with
    ``rdfs:domain``: inferred in a content graph alone, a domain would type an erasable
    value's subject there."""
    from trails.prov.content import CONTENT_PROPERTIES

    with_domain = sorted(
        str(p) for p in CONTENT_PROPERTIES if onto.value(URIRef(p), RDFS.domain) is not None
    )
    assert not with_domain
