"""Over a real uvicorn server: SPARQLWrapper as the client, many clients at once, the access log."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from SPARQLWrapper import CSV, JSON, TURTLE, XML, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import QueryBadFormed
from tests.server.conftest import ACCESS_LOG, ALICE, EX, TOKENS, Seeded, auth

from trails.catalogue.entries import rebuild
from trails.prov.vocab import PROV, T
from trails.server import Endpoint
from trails.store import Store
from trails.testing import assert_conforms

GRAPHS = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g"


def wrapper(url: str, who: str, fmt: str = JSON, method: str = "GET") -> SPARQLWrapper:
    sparql = SPARQLWrapper(f"{url}/sparql")
    sparql.setOnlyConneg(True)
    sparql.addCustomHttpHeader("Authorization", f"Bearer {TOKENS[who]}")
    sparql.setReturnFormat(fmt)
    sparql.setMethod(method)
    return sparql


def test_sparqlwrapper_select_in_json_xml_csv(live: str, seeded: Seeded) -> None:
    expected = sorted([*seeded.alice_sessions, seeded.memory])
    sparql = wrapper(live, "alice")
    sparql.setQuery(GRAPHS)
    result: Any = sparql.queryAndConvert()
    assert [b["g"]["value"] for b in result["results"]["bindings"]] == expected
    sparql = wrapper(live, "alice", XML, method="POST")
    sparql.setQuery(GRAPHS)
    document: Any = sparql.queryAndConvert()
    assert [n.firstChild.data for n in document.getElementsByTagName("uri")] == expected
    sparql = wrapper(live, "alice", CSV)
    sparql.setQuery(GRAPHS)
    text = sparql.queryAndConvert()
    assert isinstance(text, bytes)
    assert text.decode().split("\r\n")[1:-1] == expected


def test_sparqlwrapper_construct_as_turtle(live: str, seeded: Seeded) -> None:
    sparql = wrapper(live, "alice", TURTLE)
    sparql.setQuery(f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH <{seeded.memory}> {{ ?s ?p ?o }} }}")
    data = sparql.queryAndConvert()
    assert isinstance(data, bytes) and EX.encode() in data and b"shared" in data


def test_sparqlwrapper_sees_a_malformed_query(live: str) -> None:
    sparql = wrapper(live, "alice")
    sparql.setQuery("SELECT * WHERE { ?s ?p }")
    try:
        sparql.queryAndConvert()
    except QueryBadFormed as exc:
        assert "line 1, column" in str(exc)
    else:
        raise AssertionError("a malformed query was answered")


def test_many_clients_at_once(live: str, seeded: Seeded) -> None:
    mine = sorted([*seeded.alice_sessions, seeded.memory])
    theirs = [seeded.bob_session]

    def ask(n: int) -> tuple[str, list[str]]:
        who = "alice" if n % 2 else "bob"
        sparql = wrapper(live, who, method="POST" if n % 3 else "GET")
        sparql.setQuery(GRAPHS)
        result: Any = sparql.queryAndConvert()
        return who, [b["g"]["value"] for b in result["results"]["bindings"]]

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(ask, range(64)))
    assert len(answers) == 64
    for who, graphs in answers:
        assert graphs == (mine if who == "alice" else theirs), who


LOG_QUERY = f"""PREFIX prov: <{PROV}>
PREFIX trails: <{T.status[: -len("status")]}>
SELECT ?who ?status ?code ?n ?name ?text WHERE {{
  ?a a trails:QueryReceived ; trails:status ?status ; trails:httpStatus ?code ;
     prov:used ?q ; prov:startedAtTime ?at .
  ?q a trails:SparqlQuery ; prov:value ?text .
  OPTIONAL {{ ?a prov:wasAssociatedWith ?agent . ?agent trails:principalId ?who }}
  OPTIONAL {{ ?a trails:resultCount ?n }}
  OPTIONAL {{ ?a trails:queryName ?name }}
}} ORDER BY ?at"""


def test_every_request_is_in_the_access_log(
    live: str, endpoint: Endpoint, store: Store, seeded: Seeded
) -> None:
    rebuild(store)  # seeded without the sealer: the catalogue the sessions query reads
    with httpx.Client(base_url=live, timeout=30) as client:
        ok = client.get("/sparql", params={"query": GRAPHS}, headers=auth("alice"))
        assert ok.status_code == 200
        assert client.get("/sparql", params={"query": GRAPHS}).status_code == 401
        refused = client.post("/sparql", data={"query": "DROP ALL"}, headers=auth("bob"))
        assert refused.status_code == 403
        pack = client.get("/queries/sessions", params={"principal": ALICE}, headers=auth("admin"))
        assert pack.status_code == 200
        log = client.get(
            "/access-log/sparql",
            params={"query": LOG_QUERY, "default-graph-uri": ACCESS_LOG},
            headers=auth("auditor"),
        )
        assert log.status_code == 200, log.text
    rows = [
        (
            b.get("who", {}).get("value"),
            b["status"]["value"],
            int(b["code"]["value"]),
            int(b["n"]["value"]) if "n" in b else None,
            b.get("name", {}).get("value"),
            b["text"]["value"],
        )
        for b in log.json()["results"]["bindings"]
    ]
    assert rows[:4] == [
        ("did:example:alice", "ok", 200, 3, None, GRAPHS),
        (None, "unauthorized", 401, None, None, GRAPHS),
        ("did:example:bob", "refused", 403, None, None, "DROP ALL"),
        ("did:example:admin", "ok", 200, 2, "sessions", rows[3][5]),
    ]
    assert "trails:Session" in rows[3][5]  # the pack query's text is what was run
    assert ACCESS_LOG not in store.graphs()  # the log is a store of its own
    assert_conforms(endpoint.access_log.store, ACCESS_LOG)
