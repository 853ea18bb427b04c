"""The query's own dataset, found by a SPARQL parser wherever the grammar puts it.

Each query runs through real HTTP (uvicorn) and the answer is compared with the
store's own answer over the dataset the query names, narrowed by the token's
grant as docs/endpoint.md says: ``FROM`` / ``FROM NAMED`` narrow what a token
reads, never widen it.
"""

from __future__ import annotations

import httpx
import pytest
from tests.server.conftest import EX, Seeded, auth

from trails.errors import QueryRefused
from trails.server.sparql import analyse
from trails.store import IRI, Literal, Solutions, Store

COUNT_ALL = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"


def count(live: str, who: str, query: str) -> int:
    response = httpx.post(f"{live}/sparql", data={"query": query}, headers=auth(who), timeout=30)
    assert response.status_code == 200, response.text
    bindings = response.json()["results"]["bindings"]
    return int(bindings[0]["n"]["value"])


def in_graphs(store: Store, graphs: list[IRI]) -> int:
    result = store.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", default_graph=graphs)
    assert isinstance(result, Solutions)
    value = result.rows[0][0]
    assert isinstance(value, Literal)
    return int(value.value)


@pytest.mark.parametrize(
    "query",
    [
        # the query: a brace in the projection before FROM
        "SELECT (EXISTS { ?a ?b ?c } AS ?e) (COUNT(*) AS ?n) FROM <{m}> WHERE { ?s ?p ?o }",
        "SELECT (COUNT(*) AS ?n) (SUM(IF(EXISTS { ?s ?p ?o }, 1, 0)) AS ?k) FROM <{m}> "
        "WHERE { ?s ?p ?o }",
        "SELECT ?n FROM <{m}> WHERE { { SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o } } }",
        "PREFIX g: <urn:trails:graph:>\nSELECT (COUNT(*) AS ?n)\n# FROM <urn:x> in a comment\n"
        "FROM g:memory WHERE { ?s ?p ?o }",
        "BASE <http://example.org/base/>\nPREFIX g: <urn:trails:graph:>\n"
        "SELECT (COUNT(*) AS ?n) (EXISTS { <x> <y> <z> } AS ?e) FROM g:memory WHERE { ?s ?p ?o }",
        "select (count(*) as ?n) from <{m}> where { ?s ?p ?o }",
    ],
)
def test_from_after_braces_and_prologues_narrows_the_default_graph(
    live: str, store: Store, seeded: Seeded, query: str
) -> None:
    text = query.replace("{m}", str(seeded.memory))
    expected = in_graphs(store, [seeded.memory])
    assert expected == 1
    assert count(live, "admin", text) == expected
    everything = in_graphs(store, store.graphs())
    assert everything > expected  # the unrestricted answer differs, so this test can fail


def test_from_named_after_a_projection_with_braces(live: str, seeded: Seeded) -> None:
    query = (
        "SELECT (EXISTS { ?a ?b ?c } AS ?e) (COUNT(DISTINCT ?g) AS ?n) "
        f"FROM NAMED <{seeded.memory}> FROM NAMED <{seeded.bob_session}> "
        "WHERE { GRAPH ?g { ?s ?p ?o } }"
    )
    assert count(live, "admin", query) == 2
    assert count(live, "alice", query) == 1  # bob's session is not alice's to read
    assert count(live, "admin", COUNT_ALL.replace("COUNT(*)", "COUNT(DISTINCT ?g)")) == 4


def test_from_in_construct_ask_and_describe(live: str, seeded: Seeded) -> None:
    fact = f"<{EX}fact>"
    construct = f"CONSTRUCT {{ ?s ?p ?o }} FROM <{seeded.bob_session}> WHERE {{ ?s ?p ?o }}"
    response = httpx.post(
        f"{live}/sparql",
        data={"query": construct},
        headers={**auth("admin"), "Accept": "application/n-triples"},
    )
    assert response.status_code == 200
    assert "shared" not in response.text and str(seeded.bob_session) in response.text
    for who, expected in (("admin", True), ("bob", False)):
        ask = httpx.post(
            f"{live}/sparql",
            data={
                "query": f"ASK FROM <{seeded.memory}> {{ {fact} ?p ?o FILTER(EXISTS {{ ?s ?p ?o }}) }}"
            },
            headers=auth(who),
        )
        assert ask.json()["boolean"] is expected
    describe = httpx.post(
        f"{live}/sparql",
        data={"query": f"DESCRIBE {fact} FROM <{seeded.bob_session}>"},
        headers={**auth("admin"), "Accept": "application/n-triples"},
    )
    assert describe.status_code == 200 and describe.text.strip() == ""


def test_from_in_strings_is_not_a_dataset(live: str, store: Store, seeded: Seeded) -> None:
    query = 'SELECT ("FROM <urn:x>" AS ?t) (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }'
    assert count(live, "admin", query) == count(live, "admin", COUNT_ALL)


def test_protocol_graphs_replace_the_query_dataset(live: str, seeded: Seeded) -> None:
    query = f"SELECT (EXISTS {{ ?a ?b ?c }} AS ?e) (COUNT(*) AS ?n) FROM <{seeded.memory}> WHERE {{ ?s ?p ?o }}"
    response = httpx.post(
        f"{live}/sparql",
        params={"default-graph-uri": str(seeded.bob_session)},
        data={"query": query},
        headers=auth("admin"),
    )
    assert int(response.json()["results"]["bindings"][0]["n"]["value"]) > 1


def test_unparseable_query_with_from_is_refused_with_a_position(live: str) -> None:
    response = httpx.post(
        f"{live}/sparql",
        data={"query": "SELECT * FROM <urn:g>\nWHERE { ?s ?p }"},
        headers=auth("admin"),
    )
    assert response.status_code == 400
    assert "line" in response.text and "column" in response.text


def test_analysis_resolves_relative_graphs_against_the_base() -> None:
    info = analyse("SELECT * FROM <g> FROM NAMED <h/i> WHERE {}", "https://trails.example/q/")
    assert info.default_graphs == ("https://trails.example/q/g",)
    assert info.named_graphs == ("https://trails.example/q/h/i",)
    assert analyse("SELECT * FROM <g> WHERE {}").default_graphs == ("urn:g",)
    assert analyse("SELECT (<urn:FROM> AS ?x) WHERE {}").default_graphs is None
    with pytest.raises(QueryRefused):
        analyse("SELECT * FROM undeclared:g WHERE {}")


def test_relative_iris_resolve_against_the_endpoint_base(live: str) -> None:
    response = httpx.post(
        f"{live}/sparql",
        data={"query": "CONSTRUCT { <s> <p> 1 } WHERE {}"},
        headers={**auth("admin"), "Accept": "application/n-triples"},
    )
    assert response.status_code == 200
    assert response.text.startswith("<urn:s> <urn:p> ")


def test_a_repeated_text_is_analysed_alike_and_a_refusal_is_never_kept() -> None:
    text = "SELECT * FROM <g> WHERE { ?s ?p ?o }"
    first = analyse(text, "https://one.example/")
    assert analyse(text, "https://one.example/") == first
    # the same text under another base names other graphs
    assert analyse(text, "https://two.example/").default_graphs == ("https://two.example/g",)
    for _ in range(3):  # refused every time, not answered from what was kept
        with pytest.raises(QueryRefused, match="read-only"):
            analyse("INSERT DATA { <urn:a> <urn:b> <urn:c> }")
    long = "SELECT * WHERE { ?s ?p ?o } # " + "x" * 20_000  # past what is kept: analysed anew
    assert analyse(long).form == "SELECT"
