"""The SPARQL 1.1 Protocol surface, in process through httpx.ASGITransport.

Query by GET, POST form and POST application/sparql-query; dataset parameters;
content negotiation; the service description; the query pack by name.
"""

from __future__ import annotations

import json

import httpx
import pytest
import rdflib
from tests.server.conftest import ALICE, EX, Seeded, auth

from trails.catalogue.entries import rebuild
from trails.errors import QueryRefused
from trails.server import negotiate
from trails.store import Store
from trails.store.results import count_results

pytestmark = pytest.mark.anyio

GRAPHS = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g"


def graphs_of(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [b["g"]["value"] for b in response.json()["results"]["bindings"]]


async def test_get_post_form_and_post_query_give_the_same_answer(
    client: httpx.AsyncClient, seeded: Seeded
) -> None:
    by_get = await client.get("/sparql", params={"query": GRAPHS}, headers=auth("admin"))
    by_form = await client.post("/sparql", data={"query": GRAPHS}, headers=auth("admin"))
    by_body = await client.post(
        "/sparql",
        content=GRAPHS.encode(),
        headers={**auth("admin"), "Content-Type": "application/sparql-query"},
    )
    expected = sorted([*seeded.alice_sessions, seeded.bob_session, seeded.memory])
    assert graphs_of(by_get) == graphs_of(by_form) == graphs_of(by_body) == expected
    assert by_get.headers["content-type"].startswith("application/sparql-results+json")


@pytest.mark.parametrize(
    ("accept", "media", "fmt"),
    [
        ("application/sparql-results+json", "application/sparql-results+json", "json"),
        ("application/sparql-results+xml", "application/sparql-results+xml", "xml"),
        ("text/csv", "text/csv", "csv"),
        ("text/tab-separated-values", "text/tab-separated-values", "tsv"),
        ("text/html;q=0.9, text/csv;q=0.5", "text/csv", "csv"),
        ("*/*", "application/sparql-results+json", "json"),
    ],
)
async def test_select_results_in_every_format(
    client: httpx.AsyncClient, accept: str, media: str, fmt: str
) -> None:
    response = await client.get(
        "/sparql", params={"query": GRAPHS}, headers={**auth("alice"), "Accept": accept}
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(media)
    assert count_results(response.content, fmt) == 3  # two own sessions and the memory


@pytest.mark.parametrize(
    ("accept", "fmt"),
    [
        ("text/turtle", "turtle"),
        ("application/trig", "trig"),
        ("application/n-triples", "ntriples"),
        ("application/n-quads", "nquads"),
        ("application/ld+json", "jsonld"),
        ("application/rdf+xml", "rdfxml"),
    ],
)
async def test_construct_in_every_graph_format(
    client: httpx.AsyncClient, seeded: Seeded, accept: str, fmt: str
) -> None:
    query = f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH <{seeded.memory}> {{ ?s ?p ?o }} }}"
    response = await client.get(
        "/sparql", params={"query": query}, headers={**auth("alice"), "Accept": accept}
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(accept)
    assert count_results(response.content, fmt) == 1
    if fmt in ("turtle", "ntriples"):
        g = rdflib.Graph().parse(data=response.text, format=fmt if fmt == "turtle" else "nt")
        assert (rdflib.URIRef(EX + "fact"), None, rdflib.Literal("shared")) in g


async def test_ask_and_describe(client: httpx.AsyncClient, seeded: Seeded) -> None:
    ask = await client.get(
        "/sparql", params={"query": f"ASK {{ <{EX}fact> ?p ?o }}"}, headers=auth("alice")
    )
    assert ask.json()["boolean"] is True
    describe = await client.get(
        "/sparql", params={"query": f"DESCRIBE <{EX}fact>"}, headers=auth("alice")
    )
    assert describe.headers["content-type"].startswith("text/turtle")
    assert "shared" in describe.text


def test_negotiation_refuses_what_it_cannot_produce() -> None:
    assert negotiate(None, "SELECT") == "json"
    assert negotiate("", "CONSTRUCT") == "turtle"
    assert negotiate("application/n-quads;q=0.2, text/turtle;q=0.8", "CONSTRUCT") == "turtle"
    with pytest.raises(QueryRefused) as err:
        negotiate("text/turtle", "SELECT")
    assert err.value.status == 406
    with pytest.raises(QueryRefused):
        negotiate("text/csv;q=0", "SELECT")


async def test_406_over_http(client: httpx.AsyncClient) -> None:
    response = await client.get(
        "/sparql", params={"query": GRAPHS}, headers={**auth("alice"), "Accept": "image/png"}
    )
    assert response.status_code == 406
    assert "application/sparql-results+json" in response.text


async def test_service_description_without_a_query(client: httpx.AsyncClient) -> None:
    response = await client.get("/sparql")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/turtle")
    endpoint = "http://trails.test/sparql"
    g = rdflib.Graph().parse(data=response.text, format="turtle", publicID=endpoint)
    sd = rdflib.Namespace("http://www.w3.org/ns/sparql-service-description#")
    assert (rdflib.URIRef(endpoint), sd.endpoint, rdflib.URIRef(endpoint)) in g
    assert (rdflib.URIRef(endpoint), sd.supportedLanguage, sd.SPARQL11Query) in g
    formats = set(g.objects(rdflib.URIRef(endpoint), sd.resultFormat))
    assert rdflib.URIRef("http://www.w3.org/ns/formats/SPARQL_Results_JSON") in formats
    assert rdflib.URIRef("http://www.w3.org/ns/formats/N-Quads") in formats


async def test_protocol_dataset_narrows_to_the_named_graphs(
    client: httpx.AsyncClient, seeded: Seeded
) -> None:
    first = seeded.alice_sessions[0]
    response = await client.get(
        "/sparql", params={"query": GRAPHS, "named-graph-uri": first}, headers=auth("alice")
    )
    assert graphs_of(response) == [first]
    # default-graph-uri alone: no named graphs at all, the default graph is the memory
    query = "SELECT ?s (COUNT(?g) AS ?n) WHERE { ?s ?p ?o OPTIONAL { GRAPH ?g { ?x ?y ?z } } } GROUP BY ?s"
    response = await client.get(
        "/sparql",
        params={"query": query, "default-graph-uri": seeded.memory},
        headers=auth("alice"),
    )
    rows = response.json()["results"]["bindings"]
    assert [(r["s"]["value"], r["n"]["value"]) for r in rows] == [(EX + "fact", "0")]


async def test_from_clauses_narrow_the_dataset(client: httpx.AsyncClient, seeded: Seeded) -> None:
    first, second = seeded.alice_sessions
    query = f"PREFIX s: <{first[: -len('s0')]}>\nSELECT DISTINCT ?g FROM NAMED s:s1 WHERE {{ GRAPH ?g {{ ?a ?b ?c }} }}"
    response = await client.get("/sparql", params={"query": query}, headers=auth("alice"))
    assert graphs_of(response) == [second]
    query = "SELECT ?s WHERE { ?s ?p ?o }"
    everything = await client.get("/sparql", params={"query": query}, headers=auth("alice"))
    only_memory = await client.get(
        "/sparql",
        params={"query": query.replace("WHERE", f"FROM <{seeded.memory}> WHERE")},
        headers=auth("alice"),
    )
    assert len(everything.json()["results"]["bindings"]) > 1  # the union of alice's graphs
    assert [b["s"]["value"] for b in only_memory.json()["results"]["bindings"]] == [EX + "fact"]


async def test_query_pack_by_name_binds_parameters(
    client: httpx.AsyncClient, seeded: Seeded, store: Store
) -> None:
    rebuild(store)  # seeded without the sealer: the catalogue the sessions query reads
    anonymous = await client.get("/queries")
    assert anonymous.status_code == 401  # only the service description is open
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    assert "sessions" not in anonymous.text
    listing = await client.get("/queries", headers=auth("admin"))
    assert listing.status_code == 200
    names = {q["name"] for q in listing.json()}
    assert "sessions" in names
    response = await client.get("/queries/sessions", headers=auth("admin"))
    assert response.status_code == 200, response.text
    assert len(response.json()["results"]["bindings"]) == 3
    only_alice = await client.get(
        "/queries/sessions", params={"principal": ALICE}, headers=auth("admin")
    )
    rows = only_alice.json()["results"]["bindings"]
    assert {r["session"]["value"] for r in rows} == set(seeded.alice_sessions)
    # a value that would break out of a formatted query stays one bound literal
    breakout = '"ok" } } UNION { ?x ?y ?z } #'
    hostile = await client.get(
        "/queries/sessions", params={"status": breakout}, headers=auth("admin")
    )
    assert hostile.status_code == 200
    assert hostile.json()["results"]["bindings"] == []  # no session has that status
    ended_ok = await client.get("/queries/sessions", params={"status": "ok"}, headers=auth("admin"))
    assert len(ended_ok.json()["results"]["bindings"]) == 3


async def test_query_pack_errors(client: httpx.AsyncClient) -> None:
    unknown = await client.get("/queries/no-such-query", headers=auth("admin"))
    assert unknown.status_code == 404
    assert "sessions" in unknown.text  # the message lists the pack
    bad = await client.get(
        "/queries/sessions", params={"since": "not a date"}, headers=auth("admin")
    )
    assert bad.status_code == 400
    assert "since" in bad.text
    undeclared = await client.get("/queries/sessions", params={"nope": "1"}, headers=auth("admin"))
    assert undeclared.status_code == 400
    assert "no parameter nope" in undeclared.text
    listed = json.loads((await client.get("/queries", headers=auth("admin"))).text)
    assert all("params" in q for q in listed)


async def test_pack_answers_leave_out_parameters_not_given(
    client: httpx.AsyncClient, seeded: Seeded
) -> None:
    plain = await client.get("/queries/sessions", headers=auth("admin"))
    variables = plain.json()["head"]["vars"]
    assert "session" in variables and "principal" in variables
    assert not {"since", "until", "status"} & set(variables)
    csv = await client.get(
        "/queries/sessions",
        params={"status": "ok"},
        headers={**auth("admin"), "Accept": "text/csv"},
    )
    assert csv.status_code == 200
    header = csv.text.splitlines()[0].split(",")
    assert "status" in header and "since" not in header
