"""The ``Store`` contract, run on the embedded store and on a real SPARQL server alike.

Every test takes ``any_store`` (tests/store/conftest.py), so it runs on an
in-memory ``OxigraphStore``, on a ``SparqlStore`` talking to a real
``oxigraph serve`` process and on one talking to a real Virtuoso (when
installed), with the same expectations. Where Virtuoso differs in a way the
contract allows, the expectation says so (``on_virtuoso``); where a Virtuoso
run fails for a known reason, that case is a strict xfail
(``xfail_on_virtuoso``); docs/remote-store.md lists both.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pyoxigraph
import pytest

from trails.errors import (
    QueryParameterError,
    QuerySyntaxError,
    RDFSyntaxError,
    StoreError,
)
from trails.store import IRI, BNode, Literal, Quad, Solutions, Store, Triple, literal, open_store
from trails.store.base import DATASET_FORMATS

G1, G2, G3 = IRI("urn:test:g1"), IRI("urn:test:g2"), IRI("urn:test:g3")
S, P, Q = IRI("urn:test:s"), IRI("urn:test:p"), IRI("urn:test:q")
LANG = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
ALL = "SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }"


def on_virtuoso(request: pytest.FixtureRequest) -> bool:
    """Whether this run of the test is the Virtuoso one."""
    callspec = getattr(request.node, "callspec", None)
    return callspec is not None and callspec.params.get("any_store") == "virtuoso"


def xfail_on_virtuoso(request: pytest.FixtureRequest, reason: str) -> None:
    """Mark the Virtuoso run of this test as a known failure (strict: a pass is reported)."""
    if on_virtuoso(request):
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


def rows(store: Store, sparql: str = ALL, params: dict | None = None, **kw: object) -> set[tuple]:
    result = store.query(sparql, params, **kw)  # type: ignore[arg-type]
    assert isinstance(result, Solutions)
    return {tuple(r) for r in result.rows}


def test_the_store_satisfies_the_protocol(any_store: Store) -> None:
    assert isinstance(any_store, Store)


# -- writing -------------------------------------------------------------------


def test_write_then_select(any_store: Store) -> None:
    any_store.write([Quad(S, P, Literal("x"), G1), Quad(S, Q, literal(3), G2)])
    assert rows(any_store) == {(G1, S, P, Literal("x")), (G2, S, Q, literal(3))}


@pytest.mark.parametrize(
    "bad",
    [
        Quad(IRI.trusted("not an iri"), P, Literal("x"), G1),
        Quad(S, IRI.trusted("urn:has space"), Literal("x"), G1),
        Quad(S, P, Literal("x", "bad datatype"), G1),
        Quad(S, P, Literal("x", language="not a tag!"), G1),
        Quad(S, P, Literal("x"), IRI.trusted("urn:g> } ; DROP ALL ; INSERT DATA { <urn:a")),
    ],
    ids=["subject", "predicate", "datatype", "language", "graph"],
)
def test_a_batch_with_one_invalid_quad_writes_nothing(any_store: Store, bad: Quad) -> None:
    any_store.write([Quad(S, P, Literal("kept"), G3)])
    good = [Quad(S, P, Literal(f"v{i}"), G1) for i in range(50)]
    with pytest.raises(StoreError, match="nothing written"):
        any_store.write([*good, bad, *good])
    assert rows(any_store) == {(G3, S, P, Literal("kept"))}


def test_write_and_remove_are_one_transaction(any_store: Store) -> None:
    a, b, c = (Quad(S, P, Literal(v), G1) for v in "abc")
    any_store.write([a, b, Quad(S, P, Literal("other"), G2)])
    any_store.write([c], remove=[a])
    assert rows(any_store) == {
        (G1, S, P, Literal("b")), (G1, S, P, Literal("c")), (G2, S, P, Literal("other")),
    }  # fmt: skip
    any_store.write([], remove=[b, c])
    assert rows(any_store) == {(G2, S, P, Literal("other"))}


def test_a_failed_write_with_removals_changes_nothing(any_store: Store) -> None:
    a = Quad(S, P, Literal("a"), G1)
    any_store.write([a])
    with pytest.raises(StoreError):
        any_store.write([Quad(IRI.trusted("bad iri"), P, Literal("x"), G1)], remove=[a])
    assert rows(any_store) == {(G1, S, P, Literal("a"))}


def test_unicode_control_characters_and_long_literals_round_trip(any_store: Store) -> None:
    values = [
        "héllo wörld ✓ 🧭 日本語 עברית",
        "quotes \" and ' and \"\"\" and '''",
        "back\\slash \\u0022 \\n not escapes",
        "line\nbreaks\r\nand\ttabs and \x01 \x7f",
        "x" * 1_000_000,
    ]
    quads = [Quad(IRI(f"urn:test:v{i}"), P, Literal(v), G1) for i, v in enumerate(values)]
    quads.append(Quad(S, P, Literal("chat", LANG, "fr-ca"), G1))
    quads.append(Quad(S, P, literal(datetime(2025, 3, 1, 12, 30, tzinfo=UTC)), G1))
    any_store.write(quads)
    got = rows(any_store, "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }")
    assert got == {(q.subject, q.object) for q in quads}
    for i, v in enumerate(values):  # and each one matches itself as a bound parameter
        found = rows(any_store, "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"o": Literal(v)})
        assert found == {(IRI(f"urn:test:v{i}"), Literal(v))}


def test_a_write_with_removals_round_trips_every_kind_of_term(any_store: Store) -> None:
    """The one-transaction path (removals with additions) writes the same terms as a plain
    write: escapes, long and typed and language literals, several graphs at once."""
    gone = Quad(S, Q, Literal("old pointer"), G3)
    any_store.write([gone])
    values = ["quotes \" and ' \\ back\\slash", "line\nbreak\tand \x01", "y" * 100_000]
    quads = [Quad(IRI(f"urn:test:r{i}"), P, Literal(v), G1) for i, v in enumerate(values)]
    quads += [Quad(S, P, Literal("chat", LANG, "fr-ca"), G2), Quad(S, P, literal(7), G2)]
    quads += [Quad(S, Q, Literal("new pointer"), G3)] * 2  # twice in one write: once stored
    any_store.write(quads, remove=[gone])
    got = rows(any_store, "SELECT ?s ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
    assert got == {(q.subject, q.object, q.graph) for q in quads}


# -- querying ------------------------------------------------------------------


def test_query_forms(any_store: Store) -> None:
    any_store.write([Quad(S, P, Literal("x"), G1), Quad(S, Q, IRI("urn:test:o"), G1)])
    assert any_store.query("ASK { GRAPH ?g { ?s ?p 'x' } }") is True
    assert any_store.query("ASK { GRAPH ?g { ?s ?p 'nope' } }") is False
    triples = any_store.query("CONSTRUCT { ?s ?p ?o } WHERE { GRAPH <urn:test:g1> { ?s ?p ?o } }")
    assert isinstance(triples, list)
    assert set(triples) == {Triple(S, P, Literal("x")), Triple(S, Q, IRI("urn:test:o"))}
    result = any_store.query(
        "SELECT ?p ?o ?missing WHERE { GRAPH ?g { ?s ?p ?o OPTIONAL { ?s <urn:none> ?missing } } }"
        " ORDER BY ?p"
    )
    assert isinstance(result, Solutions)
    assert result.variables == ["p", "o", "missing"]
    assert result.rows == [(P, Literal("x"), None), (Q, IRI("urn:test:o"), None)]
    assert next(iter(result)) == {"p": P, "o": Literal("x")}


def test_parameters_are_pre_bound_variables(any_store: Store) -> None:
    any_store.write([Quad(S, P, Literal("x"), G1), Quad(IRI("urn:test:s2"), P, Literal("y"), G1)])
    query = "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
    assert rows(any_store, query, {"s": S}) == {(S, Literal("x"))}
    assert rows(any_store, query, {"o": Literal("y")}) == {(IRI("urn:test:s2"), Literal("y"))}
    # a projected parameter the pattern does not use is returned on every row
    assert rows(any_store, "SELECT ?who ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"who": S}) == {
        (S, Literal("x")), (S, Literal("y")),
    }  # fmt: skip
    # FILTERs in nested groups see the value
    nested = (
        "SELECT ?v ?o ?o2 WHERE { GRAPH ?g { ?x ?p ?o OPTIONAL { ?x ?p ?o2 FILTER(?o2 = $v) } } }"
    )
    assert rows(any_store, nested, {"v": Literal("x")}) == {
        (Literal("x"), Literal("x"), Literal("x")), (Literal("x"), Literal("y"), None),
    }  # fmt: skip
    # grouping on a parameter, as the query pack does
    grouped = "SELECT ?v (COUNT(?o) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?v"
    assert rows(any_store, grouped, {"v": Literal("k")}) == {(Literal("k"), literal(2))}
    assert any_store.query("ASK { GRAPH ?g { ?s ?p $o } }", {"o": Literal("y")}) is True
    assert any_store.query("ASK { GRAPH ?g { ?s ?p $o } }", {"o": Literal("z")}) is False
    constructed = any_store.query(
        "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }", {"s": S}
    )
    assert constructed == [Triple(S, P, Literal("x"))]


def test_typed_and_language_parameters_match_exactly(
    any_store: Store, request: pytest.FixtureRequest
) -> None:
    xfail_on_virtuoso(
        request,
        "Virtuoso 7.2 orders a language-tagged string against an xsd:dateTime "
        '(FILTER(?o >= $since) keeps "x"@en); SPARQL makes that comparison an error',
    )
    when = literal(datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC))
    any_store.write(
        [Quad(S, P, when, G1), Quad(S, P, Literal("x", LANG, "en"), G1), Quad(S, P, literal(7), G1)]
    )
    query = "SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
    for term in (when, Literal("x", LANG, "en"), literal(7)):
        assert rows(any_store, "SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"o": term}) == {
            (term,)
        }
    assert rows(any_store, query.replace("?o WHERE", "?o ?since WHERE").replace(
        "} }", "} FILTER(?o >= $since) }"), {"since": when}) == {(when, when)}  # fmt: skip


def test_a_query_asked_again_is_answered_from_the_store_with_its_own_values(
    any_store: Store,
) -> None:
    any_store.write([Quad(S, P, Literal("x"), G1)])
    query = "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }"  # pre-bound on the embedded store
    grouped = "SELECT ?v (COUNT(?o) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?v"  # rewritten
    assert rows(any_store, query, {"o": Literal("x")}) == {(S, Literal("x"))}
    assert rows(any_store, grouped, {"v": Literal("k")}) == {(Literal("k"), literal(1))}
    any_store.write([Quad(IRI("urn:test:s2"), P, Literal("x"), G2), Quad(S, Q, Literal("y"), G2)])
    assert rows(any_store, query, {"o": Literal("x")}) == {
        (S, Literal("x")), (IRI("urn:test:s2"), Literal("x")),
    }  # fmt: skip
    assert rows(any_store, query, {"o": Literal("y")}) == {(S, Literal("y"))}
    assert rows(any_store, grouped, {"v": Literal("k")}) == {(Literal("k"), literal(3))}
    assert rows(any_store, grouped, {"v": Literal("j")}) == {(Literal("j"), literal(3))}
    for _ in range(2):  # a value refused is refused every time, after values that were not
        with pytest.raises(QueryParameterError):
            any_store.query(query, {"s": IRI.trusted("urn:a b")})
        with pytest.raises(QueryParameterError):
            any_store.query("SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"s": S})


@pytest.mark.parametrize(
    ("sparql", "params"),
    [
        ("SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"s": S}),
        ("ASK { GRAPH ?g { ?s ?p ?o } }", {"nowhere": S}),
    ],
    ids=["not-projected", "not-used"],
)
def test_parameter_misuse_is_a_clear_error(any_store: Store, sparql: str, params: dict) -> None:
    with pytest.raises(QueryParameterError):
        any_store.query(sparql, params)


HOSTILE = [
    '" } ; DROP ALL ; INSERT DATA { <urn:x> <urn:y> "z" } #',
    "' } . ?s ?p ?o . { '",
    '\\" } DROP ALL #',
    "\\u0022 } ; DROP ALL #",
    '"""',
    "> } ; CLEAR ALL #",
    "x\n} ; DROP ALL\n#",
    "$o ?s <urn:test:s> { } ( )",
]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_injection_through_parameters_is_bound_as_a_value(any_store: Store, hostile: str) -> None:
    any_store.write([Quad(S, P, Literal("safe"), G1), Quad(S, Q, Literal(hostile), G2)])
    query = "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
    assert rows(any_store, query, {"o": Literal("safe" + hostile)}) == set()
    assert rows(any_store, query, {"o": Literal(hostile)}) == {(S, Literal(hostile))}
    assert rows(any_store, query, {"o": Literal(hostile, LANG, "en")}) == set()
    assert len(rows(any_store)) == 2  # nothing was dropped or added


@pytest.mark.parametrize(
    "iri",
    ["urn:a b", "urn:a> } ; DROP ALL ; <urn:b", 'urn:a"', "urn:{x}", "no-scheme", "urn:a\nb"],
)
def test_bad_iris_in_parameters_are_rejected(any_store: Store, iri: str) -> None:
    any_store.write([Quad(S, P, Literal("safe"), G1)])
    with pytest.raises(ValueError):
        IRI(iri)
    with pytest.raises(QueryParameterError):
        any_store.query("SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o } }", {"s": IRI.trusted(iri)})
    assert len(rows(any_store)) == 1


def test_dataset_restriction(any_store: Store, request: pytest.FixtureRequest) -> None:
    xfail_on_virtuoso(
        request,
        "Virtuoso 7.2 answers ASK { GRAPH <g> {...} } over a graph left out of "
        "named-graph-uri (SELECT with the same pattern is restricted correctly)",
    )
    any_store.write([Quad(S, P, Literal(g[-2:]), g) for g in (G1, G2, G3)])
    named = "SELECT ?g ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
    assert rows(any_store, named, named_graphs=[G1, G2]) == {
        (G1, Literal("g1")), (G2, Literal("g2")),
    }  # fmt: skip
    assert rows(any_store, named, named_graphs=[]) == set()
    default = "SELECT ?o WHERE { ?s ?p ?o }"
    assert rows(any_store, default, default_graph=[G1, G3]) == {(Literal("g1"),), (Literal("g3"),)}
    assert rows(any_store, default, default_graph=[]) == set()
    # a chosen default graph leaves every named graph visible; with both, exactly those
    assert len(rows(any_store, named, default_graph=[G1])) == 3
    assert rows(any_store, named, default_graph=[G1], named_graphs=[G3]) == {(G3, Literal("g3"))}
    assert rows(any_store, default, default_graph=[G1], named_graphs=[G3]) == {(Literal("g1"),)}
    # a GRAPH clause naming a graph outside the dataset sees nothing
    assert rows(any_store, "SELECT ?o WHERE { GRAPH <urn:test:g2> { ?s ?p ?o } }",
                named_graphs=[G1]) == set()  # fmt: skip
    ask = "ASK { GRAPH <urn:test:g3> { ?s ?p ?o } }"
    assert any_store.query(ask, named_graphs=[G1]) is False
    triples = any_store.query("CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }",
                              named_graphs=[G2])  # fmt: skip
    assert triples == [Triple(S, P, Literal("g2"))]


def test_union_default_graph(any_store: Store, request: pytest.FixtureRequest) -> None:
    any_store.write([Quad(S, P, Literal(g[-2:]), g) for g in (G1, G2, G3)])
    default = "SELECT ?o WHERE { ?s ?p ?o }"
    everything = {(Literal("g1"),), (Literal("g2"),), (Literal("g3"),)}
    # the store's own default graph: empty, except on Virtuoso, whose default graph
    # is the union of all graphs (the contract leaves the default graph to the store)
    assert rows(any_store, default) == (everything if on_virtuoso(request) else set())
    assert rows(any_store, default, union_default_graph=True) == everything
    # named graphs stay visible, every one of them
    named = "SELECT ?g ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
    assert rows(any_store, named, union_default_graph=True) == {
        (G1, Literal("g1")), (G2, Literal("g2")), (G3, Literal("g3")),
    }  # fmt: skip
    assert any_store.query("ASK { ?s ?p 'g2' }", union_default_graph=True) is True
    assert any_store.query("ASK { ?s ?p 'g2' }") is on_virtuoso(request)
    triples = any_store.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", union_default_graph=True)
    assert isinstance(triples, list) and len(triples) == 3
    data = json.loads(any_store.query_to(default, format="json", union_default_graph=True))
    assert {b["o"]["value"] for b in data["results"]["bindings"]} == {"g1", "g2", "g3"}
    counted = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
    assert rows(any_store, counted, union_default_graph=True) == {(literal(3),)}
    for dataset in ({"default_graph": [G1]}, {"named_graphs": [G1]}):
        with pytest.raises(StoreError, match="cannot be combined"):
            any_store.query(default, union_default_graph=True, **dataset)  # type: ignore[arg-type]


def test_union_default_graph_on_an_empty_store(
    any_store: Store, request: pytest.FixtureRequest
) -> None:
    assert rows(any_store, "SELECT ?o WHERE { ?s ?p ?o }", union_default_graph=True) == set()
    assert any_store.query("ASK { ?s ?p ?o }", union_default_graph=True) is False


@pytest.mark.remote
@pytest.mark.parametrize("mode", ["param", "list", "auto"])
def test_remote_union_modes_agree(remote_store: Store, oxigraph_server: str, mode: str) -> None:
    from trails.store.sparql import SparqlStore

    remote_store.write([Quad(S, P, Literal(f"v{n}"), IRI(f"urn:test:many:{n}")) for n in range(80)])
    store = SparqlStore(f"{oxigraph_server}/query", union_default_graph=mode)
    try:
        assert store.union_mode() == ("param" if mode != "list" else "list")  # it is Oxigraph
        found = rows(store, "SELECT ?o WHERE { ?s ?p ?o }", union_default_graph=True)
        assert found == {(Literal(f"v{n}"),) for n in range(80)}
    finally:
        store.close()


def test_an_unknown_union_mode_is_a_config_error() -> None:
    from trails.errors import ConfigError
    from trails.store.sparql import SparqlStore

    with pytest.raises(ConfigError, match="union_default_graph"):
        SparqlStore("http://127.0.0.1:1/query", union_default_graph="sometimes")


def test_query_to_serialises_in_the_asked_format(any_store: Store) -> None:
    any_store.write([Quad(S, P, Literal("x"), G1)])
    select = "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
    data = json.loads(any_store.query_to(select, format="json"))
    assert data["head"]["vars"] == ["s", "o"]
    assert data["results"]["bindings"][0]["o"]["value"] == "x"
    # RFC 4180 lets a server quote any field (Virtuoso quotes the header): read it as CSV
    header = next(csv.reader(io.StringIO(any_store.query_to(select, format="csv").decode())))
    assert header == ["s", "o"]
    assert b"<sparql" in any_store.query_to(select, format="xml")
    assert json.loads(any_store.query_to("ASK { GRAPH ?g { ?s ?p ?o } }"))["boolean"] is True
    construct = "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }"
    nt = any_store.query_to(construct, format="ntriples")
    # N-Triples lets a server separate terms with spaces or tabs (Virtuoso uses tabs)
    parsed = [str(t) for t in pyoxigraph.parse(nt, format=pyoxigraph.RdfFormat.N_TRIPLES)]
    assert parsed == ['<urn:test:s> <urn:test:p> "x"']
    turtle = any_store.query_to(construct, format="turtle")  # prefixes are the server's choice
    parsed = [str(t) for t in pyoxigraph.parse(turtle, format=pyoxigraph.RdfFormat.TURTLE)]
    assert parsed == ['<urn:test:s> <urn:test:p> "x"']
    filtered = any_store.query_to(select, {"o": Literal("nope")}, format="json")
    assert json.loads(filtered)["results"]["bindings"] == []
    with pytest.raises(StoreError):
        any_store.query_to(select, format="yaml")


def test_query_to_tsv_writes_variables_with_question_marks(
    any_store: Store, request: pytest.FixtureRequest
) -> None:
    xfail_on_virtuoso(
        request,
        'Virtuoso 7.2 writes the TSV header as "s"<TAB>"o": SPARQL 1.1 TSV wants ?s<TAB>?o, '
        "and query_to passes the server's bytes through",
    )
    any_store.write([Quad(S, P, Literal("x"), G1)])
    select = "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
    assert any_store.query_to(select, format="tsv").splitlines() == [
        b"?s\t?o", b'<urn:test:s>\t"x"',
    ]  # fmt: skip


def test_syntax_errors_carry_the_parser_message(any_store: Store) -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        any_store.query("SELECT ?s WHERE {\n  ?s ?p \n")
    assert caught.value.line is not None
    assert "syntax error" in str(caught.value).lower()


# -- graphs, clear, dump and load ---------------------------------------------


def test_graphs_and_clear(any_store: Store) -> None:
    assert any_store.graphs() == []
    any_store.write([Quad(S, P, Literal(str(i)), g) for i, g in enumerate((G2, G1, G3))])
    assert any_store.graphs() == [G1, G2, G3]
    any_store.clear(G2)
    assert any_store.graphs() == [G1, G3]
    any_store.clear(IRI("urn:test:never-written"))
    assert rows(any_store) == {(G1, S, P, Literal("1")), (G3, S, P, Literal("2"))}


def _sample(store: Store) -> set[tuple]:
    store.write(
        [
            Quad(S, P, Literal("x"), G1),
            Quad(S, P, Literal('é\n"q"', LANG, "fr"), G1),
            Quad(S, Q, literal(4.5), G1),
            Quad(IRI("urn:test:t"), P, S, G2),
        ]
    )
    return rows(store)


@pytest.mark.parametrize("fmt", sorted(DATASET_FORMATS))
def test_dataset_dump_load_round_trip(any_store: Store, fmt: str, tmp_path: Path) -> None:
    before = _sample(any_store)
    data = any_store.dump(format=fmt)
    assert isinstance(data, bytes)
    path = tmp_path / f"dump.{fmt}"
    assert any_store.dump(path, format=fmt) is None
    assert path.read_bytes() == data
    for g in any_store.graphs():
        any_store.clear(g)
    assert rows(any_store) == set()
    any_store.load(io.BytesIO(data), format=fmt)
    assert rows(any_store) == before


def test_load_from_a_path(any_store: Store, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    path = tmp_path / "data.nq"
    path.write_bytes(b'<urn:test:s> <urn:test:p> "x" <urn:test:g1> .\n')
    any_store.load(path, format="nquads")
    assert rows(any_store) == {(G1, S, P, Literal("x"))}


@pytest.mark.parametrize("fmt", ["turtle", "ntriples", "rdfxml", "jsonld"])
def test_graph_dump_load_round_trip(any_store: Store, fmt: str) -> None:
    _sample(any_store)
    g1 = rows(any_store, "SELECT ?s ?p ?o WHERE { GRAPH <urn:test:g1> { ?s ?p ?o } }")
    out = io.BytesIO()
    assert any_store.dump(out, format=fmt, graph=G1) is None
    any_store.load(out.getvalue(), format=fmt, graph=G3)
    assert rows(any_store, "SELECT ?s ?p ?o WHERE { GRAPH <urn:test:g3> { ?s ?p ?o } }") == g1


def test_malformed_load_leaves_nothing(any_store: Store) -> None:
    good = "".join(f'<urn:test:s{i}> <urn:test:p> "v{i}" <urn:test:g1> .\n' for i in range(5000))
    for fmt, bad in [("nquads", good + '<urn:test:s> <urn:test:p> "unclosed .\n'),
                     ("trig", "<urn:test:g1> { <urn:a> <urn:b> <urn:c> } <urn:g2> { <urn:a> ")]:  # fmt: skip
        with pytest.raises(RDFSyntaxError):
            any_store.load(bad.encode(), format=fmt)
    with pytest.raises(RDFSyntaxError):
        any_store.load(b"<urn:a> <urn:b> <urn:c> .\n<urn:a> <urn:b> .", format="ntriples", graph=G1)
    assert rows(any_store) == set()


def test_dump_and_load_refuse_a_graph_format_without_a_graph(any_store: Store) -> None:
    with pytest.raises(StoreError):
        any_store.dump(format="turtle")
    with pytest.raises(StoreError):
        any_store.load(b"<urn:a> <urn:b> <urn:c> .", format="ntriples")
    with pytest.raises(StoreError):
        any_store.dump(format="nope")


# -- closing -------------------------------------------------------------------


def _operations(store: Store) -> list[Callable[[], object]]:
    return [
        lambda: store.write([Quad(S, P, Literal("x"), G1)]),
        lambda: store.query("ASK {}"),
        lambda: store.query_to("ASK {}"),
        lambda: store.graphs(),
        lambda: store.clear(G1),
        lambda: store.dump(format="nquads"),
        lambda: store.load(b"", format="nquads"),
    ]


def test_a_closed_store_raises_store_error(any_store: Store) -> None:
    any_store.close()
    any_store.close()  # closing twice is harmless
    for operation in _operations(any_store):
        with pytest.raises(StoreError, match="closed"):
            operation()


def test_context_manager_closes(any_store: Store) -> None:
    with any_store as entered:
        assert entered is any_store
        entered.write([Quad(S, P, Literal("x"), G1)])
    with pytest.raises(StoreError):
        any_store.graphs()


def test_blank_nodes_can_be_written_and_read_back(
    any_store: Store, request: pytest.FixtureRequest
) -> None:
    any_store.write([Quad(BNode("b1"), P, Literal("x"), G1), Quad(S, Q, BNode("b1"), G1)])
    result = any_store.query(
        "SELECT ?o WHERE { GRAPH ?g { ?b <urn:test:p> ?o . <urn:test:s> <urn:test:q> ?b } }"
    )
    assert isinstance(result, Solutions) and result.rows == [(Literal("x"),)]


PARITY = [
    # a subquery that projects the parameter, and one that groups on it
    "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } { SELECT ?s WHERE { GRAPH ?h { ?s ?q ?r } } } }",
    "SELECT ?s ?n WHERE { { SELECT ?s (COUNT(?o) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } "
    "GROUP BY ?s } }",
    # EXISTS and NOT EXISTS see the value
    "SELECT ?s ?o WHERE { GRAPH ?g { ?x ?p ?o } FILTER EXISTS { GRAPH ?g { ?s ?p ?o } } }",
    "SELECT ?s ?o WHERE { GRAPH ?g { ?x ?p ?o } FILTER NOT EXISTS { GRAPH ?g { ?s ?p ?o } } }",
    # look-alikes in strings, IRIs and comments are not the parameter
    "SELECT ?s ?o # ?s in a comment\nWHERE { GRAPH ?g { ?x ?p ?o } FILTER(?o != '?s' && "
    '?o != "$s") FILTER(?x != <urn:test:?s>) }',
    "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }",
    "SELECT DISTINCT ?s WHERE { GRAPH ?g { ?x ?p ?o } } ORDER BY ?s LIMIT 5",
    "SELECT ?s ?o WHERE { GRAPH ?g { ?x ?p ?o } OPTIONAL { GRAPH ?g { ?s ?p ?o } } }",
    "SELECT ?s ?o WHERE { { GRAPH ?g { ?s ?p ?o } } UNION { GRAPH ?g { ?x ?p ?o } } }",
    # a VALUES clause listing the parameter is joined with it
    "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } VALUES ?s { <urn:test:s> <urn:test:s2> } }",
]


@pytest.mark.parametrize("sparql", PARITY)
def test_binding_semantics_match_the_embedded_store(any_store: Store, sparql: str) -> None:
    """The expected rows are computed by the embedded store: the remote run must agree."""
    data = [Quad(S, P, Literal("x"), G1), Quad(IRI("urn:test:s2"), P, Literal("y"), G1),
            Quad(S, Q, Literal("z"), G2)]  # fmt: skip
    any_store.write(data)
    reference = open_store("memory:")
    reference.write(data)
    try:
        for params in ({"s": S}, {"s": IRI("urn:test:s2")}, {"s": IRI("urn:test:none")}):
            expected = reference.query(sparql, params)
            got = any_store.query(sparql, params)
            assert isinstance(expected, Solutions) and isinstance(got, Solutions)
            if sparql.startswith("SELECT *"):  # SPARQL leaves the order of * to the server
                assert sorted(got.variables) == sorted(expected.variables)
                by_name = [sorted(row.items()) for row in got]
                assert sorted(map(repr, by_name)) == sorted(
                    repr(sorted(row.items())) for row in expected
                ), params
                continue
            assert got.variables == expected.variables
            assert sorted(map(repr, got.rows)) == sorted(map(repr, expected.rows)), params
    finally:
        reference.close()


@pytest.mark.parametrize(
    "sparql",
    [
        "SELECT ?s WHERE { GRAPH ?g { ?x ?p ?o } BIND(?x AS ?s) }",
        "SELECT ?s WHERE { { SELECT (COUNT(*) AS ?s) WHERE { ?a ?b ?c } } }",
    ],
    ids=["bind", "projection"],
)
def test_a_parameter_the_query_assigns_is_refused_remotely(
    remote_store: Store, sparql: str
) -> None:
    with pytest.raises(QueryParameterError):
        remote_store.query(sparql, {"s": S})
