"""A control whose query needs a triple the session does not hold passes without being run,
and its outcome is always the one running the query gives."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tests.controls.conftest import World

from trails.controls import Control, builtin_controls, evaluate_session
from trails.controls.needs import needs
from trails.prov.content import content_graph
from trails.store import Quad
from trails.store.oxigraph import OxigraphStore
from trails.store.terms import IRI, Literal, Term

TRAILS = "https://w3id.org/trails/ns#"
EX = "urn:ex:"
XSD = "http://www.w3.org/2001/XMLSchema#"
PREFIXES = f"PREFIX trails: <{TRAILS}>\nPREFIX ex: <{EX}>\n"


def _needs(where: str) -> list[list[tuple[str, Any]]]:
    return [
        [(p.removeprefix(EX), o if o is None or not isinstance(o, str) else o.removeprefix(EX))
         for p, o in clause]
        for clause in needs(PREFIXES + "SELECT * WHERE { " + where + " }")
    ]  # fmt: skip


def _s(value: str) -> Literal:
    return Literal(value, XSD + "string")


def test_what_every_row_needs() -> None:
    assert _needs("?s ex:p ex:o ; ex:q ?x , 'v' . ?x a ex:C") == [
        [("p", "o")],
        [("q", _s("v"))],
        [("http://www.w3.org/1999/02/22-rdf-syntax-ns#type", "C")],
        [("q", None)],
    ]
    # OPTIONAL, MINUS, NOT EXISTS, BIND, VALUES and expressions need nothing
    assert _needs(
        "?s ex:p ?o OPTIONAL { ?s ex:q ?x } MINUS { ?s ex:r ?y } "
        "FILTER NOT EXISTS { ?s ex:t ?z } FILTER(?o != 'a') BIND(1 AS ?b) VALUES ?v { 1 }"
    ) == [[("p", None)]]
    # a positive EXISTS, a nested group and a GRAPH group are needed
    assert _needs(
        "{ ?s ex:p ?o } GRAPH ?g { ?s ex:q true } FILTER EXISTS { ?s ex:r ?x } "
        "FILTER(EXISTS { ?s ex:t ?x })"
    ) == [
        [("q", Literal("true", XSD + "boolean"))],
        [("p", None)],
        [("r", None)],
        [("t", None)],
    ]
    # a UNION needs one pattern of each branch
    assert _needs("{ ?s ex:p 'e' } UNION { ?s ex:q 'e' . ?s ex:r ?x }") == [
        [("p", _s("e")), ("q", _s("e"))],
        [("p", _s("e")), ("r", None)],
    ]
    assert _needs("{ ?s ex:p ?o } UNION { }") == []
    # a prefixed name that ends the triple keeps its full stop out of the name
    assert _needs("?s ex:p ex:o. ?s ex:q ?x") == [[("p", "o")], [("q", None)]]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT (COUNT(*) AS ?n) WHERE { ?s ex:p ?o }",  # an aggregate of no row is a row
        "SELECT ?s WHERE { ?s ex:p ?o } GROUP BY ?s",
        "SELECT ?s FROM <urn:ex:g> WHERE { ?s ex:p ?o }",
        "SELECT * WHERE { SERVICE <urn:ex:s> { ?s ex:p ?o } }",
        "SELECT * WHERE { ?s ex:p/ex:q ?o }",  # a property path
        "SELECT * WHERE { ?s ex:p* ?o }",
        "SELECT * WHERE { ?s ^ex:p ?o }",
        "SELECT * WHERE { ?s ex:p [ ex:q ?o ] }",
        "SELECT * WHERE { ?s ex:p ( 1 2 ) }",
        "SELECT * WHERE { ?s ex:p 1 }",
        "SELECT * WHERE { ?s ex:p 'x'@en }",
        "SELECT * WHERE { ?s ex:p 'x'^^ex:t }",
        "SELECT * WHERE { ?s ex:p 'a\\'b' }",
        "SELECT * WHERE { ?s ex:p '''x''' }",
        "SELECT * WHERE { ?s undeclared:p ?o }",
        "SELECT * WHERE { ?s <relative> ?o }",
        "SELECT * WHERE { ?s ?p ex:o }",  # no constant predicate
        "SELECT * WHERE { FILTER(EXISTS { ?s ex:p ?o } || true) }",
        "SELECT * WHERE { { SELECT ?s WHERE { ?s ex:p ?o } } }",  # a sub-SELECT
        "SELECT * WHERE { ?s ex:p ?o } }",  # not a query
        "ASK { ?s ex:p ?o }",
    ],
)
def test_a_query_it_is_not_sure_of_needs_nothing(query: str) -> None:
    assert needs(PREFIXES + query) == ()


class CountingStore(OxigraphStore):
    """An in-memory store that counts the queries run on it."""

    def __init__(self) -> None:
        super().__init__()
        self.queries = 0

    def query(self, sparql: str, params: Mapping[str, Term] | None = None, **kw: Any) -> Any:
        self.queries += 1
        return super().query(sparql, params, **kw)


@pytest.fixture(scope="module")
def counted(world: World) -> Iterator[CountingStore]:
    store = CountingStore()
    store.write(q for q in _quads(world.store))
    yield store
    store.close()


def _quads(store: Any) -> Iterator[Quad]:
    for row in store.query("SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }"):
        yield Quad(row["s"], row["p"], row["o"], row["g"])


def test_a_session_runs_only_the_queries_that_can_have_a_row(
    world: World, counted: CountingStore
) -> None:
    controls = [c for c in builtin_controls() if c.scope == "session"]
    # a call that failed without saying why, and nothing else
    unexplained, call = IRI("urn:trails:session:unexplained"), IRI("urn:ex:call")
    counted.write(
        [
            Quad(call, IRI(TRAILS + "status"), _s("error"), unexplained),
            Quad(call, IRI(TRAILS + "inSession"), unexplained, unexplained),
        ]
    )
    for session in (world.clean, world.failing, unexplained):
        counted.queries = 0
        looked = evaluate_session(counted, session, controls)
        run = counted.queries
        ran = evaluate_session(counted, session, controls, prefilter=False)
        assert counted.queries == run + len(controls)  # prefilter=False runs each
        assert [(o.control.id, o.status, o.violations) for o in looked.outcomes] == [
            (o.control.id, o.status, o.violations) for o in ran.outcomes
        ]
        # a session that starts and ends holds no call, no completion: only the
        # session's own control can have a row; the failed call, only failure-explained
        if session in (world.clean, unexplained):
            assert run == 1
    [found] = [o for o in looked.outcomes if o.status != "passed"]
    assert (found.control.id, found.status) == ("failure-explained", "violated")
    assert [v.subject for v in found.violations] == [call]


# -- any query, any session: the look-up never answers what the query would not ----------

SESSION = IRI("urn:trails:session:needs")
GRAPHS = [SESSION, content_graph(SESSION), IRI("urn:ex:elsewhere")]
PREDICATES = ["ex:p", "ex:q", "ex:r"]
OBJECTS = ["?o", "?x", "ex:a", "'x'", "true"]
STORED = [IRI(EX + "a"), _s("x"), Literal("true", XSD + "boolean")]


def _triple(draw: st.DrawFn) -> str:
    return f"?s {draw(st.sampled_from(PREDICATES))} {draw(st.sampled_from(OBJECTS))} ."


@st.composite
def groups(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["triple"] * 3 + ([] if depth >= 2 else list(WRAPS))))
        if kind == "triple":
            parts.append(_triple(draw))
        elif kind == "bind":  # a variable of its own: a query binding one twice is refused
            parts.append(
                WRAPS[kind][0].format(draw(st.integers(0, 10**6)), draw(groups(depth + 1)))
            )
        else:
            inner = [draw(groups(depth + 1)) for _ in range(WRAPS[kind][1])]
            parts.append(WRAPS[kind][0].format(*inner))
    return " ".join(parts)


WRAPS = {
    "optional": ("OPTIONAL {{ {} }}", 1),
    "minus": ("MINUS {{ {} }}", 1),
    "exists": ("FILTER EXISTS {{ {} }}", 1),
    "exists()": ("FILTER(EXISTS {{ {} }})", 1),
    "not exists": ("FILTER NOT EXISTS {{ {} }}", 1),
    "or exists": ("FILTER(EXISTS {{ {} }} || BOUND(?x))", 1),
    "union": ("{{ {} }} UNION {{ {} }}", 2),
    "group": ("{{ {} }}", 1),
    "graph": ("GRAPH ?g {{ {} }}", 1),
    "elsewhere": ("GRAPH <urn:ex:elsewhere> {{ {} }}", 1),
    "bind": ("BIND('b' AS ?b{}) {}", 1),
    "values": ("VALUES ?x {{ ex:a 'x' }} {}", 1),
}

DATA = st.lists(
    st.tuples(
        st.sampled_from(["s1", "s2"]),
        st.sampled_from(PREDICATES),
        st.sampled_from(STORED),
        st.sampled_from(GRAPHS),
    ),
    max_size=8,
)


def _control(where: str) -> Control:
    [model] = [c for c in builtin_controls() if c.id == "failure-explained"]
    query = PREFIXES + "SELECT ?subject WHERE { " + where + " BIND(?s AS ?subject) }"
    return dataclasses.replace(model, check=query, params={})


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=groups(), data=DATA)
def test_the_look_up_answers_what_the_query_answers(
    where: str, data: Sequence[tuple[str, str, Term, IRI]]
) -> None:
    store = OxigraphStore()
    store.write(Quad(IRI(EX + s), IRI(EX + p.removeprefix("ex:")), o, g) for s, p, o, g in data)
    control = _control(where)
    looked = evaluate_session(store, SESSION, [control], timeout=None).outcomes
    ran = evaluate_session(store, SESSION, [control], timeout=None, prefilter=False).outcomes
    assume(ran[0].status != "error")  # a query the store refuses is refused when loaded
    assert [(o.status, o.violations) for o in looked] == [(o.status, o.violations) for o in ran]
    store.close()


def test_a_store_that_cannot_look_up_runs_every_query() -> None:
    store = OxigraphStore()
    store.close()  # a look-up fails as the queries do: each control says so in its outcome
    controls = [c for c in builtin_controls() if c.scope == "session"]
    outcomes = evaluate_session(store, SESSION, controls, timeout=None).outcomes
    assert {o.status for o in outcomes} == {"error"}
    assert all("closed" in (o.error or "") for o in outcomes)
