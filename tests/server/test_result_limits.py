"""Result limits that bound memory, and the service description's formats, over real HTTP.

An answer past ``max_result_bytes`` is stopped while the store produces it
(embedded) or while the worker downloads it (a SPARQL server store, evaluated
in a worker process) and the client gets the documented 400; an answer within
it is counted against ``max_results``. The service description negotiates its
RDF format like a CONSTRUCT answer.
"""

from __future__ import annotations

import httpx
import pyoxigraph
import pytest
from tests.server.conftest import auth, seed, serving

from trails.server import EndpointConfig, create_app
from trails.server.auth import TokenTable
from trails.store import IRI, Literal, Quad, Store
from trails.store.sparql import SparqlStore

BIG = IRI("urn:trails:graph:big")
EVERYTHING = "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
SD = "http://www.w3.org/ns/sparql-service-description#"


def fill(store: Store, n: int = 500) -> None:
    store.write(
        [Quad(IRI(f"urn:big:s{i}"), IRI("urn:big:p"), Literal("v" * 300), BIG) for i in range(n)]
    )


def ask(url: str, query: str) -> httpx.Response:
    return httpx.post(f"{url}/sparql", data={"query": query}, headers=auth("admin"), timeout=60)


def test_an_answer_over_max_result_bytes_is_a_400(store: Store, token_table: TokenTable) -> None:
    seed(store)
    fill(store)
    config = EndpointConfig(max_result_bytes=20_000, max_results=10_000)
    endpoint = create_app(store, token_table, config)
    with serving(endpoint.app) as url:
        response = ask(url, EVERYTHING)
        assert response.status_code == 400
        assert "over the limit of 20000 bytes" in response.text
        small = ask(url, "SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o } } LIMIT 5")
        assert small.status_code == 200 and len(small.json()["results"]["bindings"]) == 5
    endpoint.close()


@pytest.mark.remote
def test_a_worker_over_a_sparql_server_stops_at_the_limit_and_hides_its_address(
    remote_store: SparqlStore, oxigraph_server: str, token_table: TokenTable
) -> None:
    seed(remote_store)
    fill(remote_store, 2000)
    whole = remote_store.query_to(EVERYTHING)
    config = EndpointConfig(max_result_bytes=50_000, max_results=100_000, processes=1)
    endpoint = create_app(oxigraph_server, token_table, config)
    with serving(endpoint.app) as url:
        response = ask(url, EVERYTHING)
        assert response.status_code == 400, response.text
        assert "over the limit of 50000 bytes" in response.text
        assert len(whole) > 500_000
        # the SPARQL server behind the endpoint is internal: its address stays out of answers
        bad = ask(url, "SELECT * WHERE {\n  ?s ?p ?o .\n  FILTER( ?s = ) }")
        assert bad.status_code == 400 and "line 3" in bad.text
        relative = ask(url, "SELECT (<s> AS ?x) WHERE {}")
        assert relative.json()["results"]["bindings"][0]["x"]["value"] == "urn:s"
        server = oxigraph_server.split("://", 1)[1]
        for answer in (response, bad, relative):
            assert server not in answer.text
    endpoint.close()


@pytest.mark.parametrize(
    ("accept", "fmt", "media"),
    [
        ("application/n-triples", pyoxigraph.RdfFormat.N_TRIPLES, "application/n-triples"),
        ("application/ld+json", pyoxigraph.RdfFormat.JSON_LD, "application/ld+json"),
        (
            "application/rdf+xml;q=0.9, text/html",
            pyoxigraph.RdfFormat.RDF_XML,
            "application/rdf+xml",
        ),
        ("text/turtle", pyoxigraph.RdfFormat.TURTLE, "text/turtle"),
        (None, pyoxigraph.RdfFormat.TURTLE, "text/turtle"),
    ],
)
def test_the_service_description_negotiates_its_format(
    live: str, accept: str | None, fmt: pyoxigraph.RdfFormat, media: str
) -> None:
    headers = {"Accept": accept} if accept else {}
    response = httpx.get(f"{live}/sparql", headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(media)
    endpoint = f"{live}/sparql"
    triples = {
        (str(t.subject.value), str(t.predicate.value), getattr(t.object, "value", ""))
        for t in pyoxigraph.parse(response.content, format=fmt, base_iri=endpoint)
    }
    assert (endpoint, SD + "endpoint", endpoint) in triples
    assert (endpoint, SD + "supportedLanguage", SD + "SPARQL11Query") in triples


def test_the_service_description_refuses_what_it_cannot_write(live: str) -> None:
    response = httpx.get(f"{live}/sparql", headers={"Accept": "image/png"})
    assert response.status_code == 406
    assert "text/turtle" in response.text
