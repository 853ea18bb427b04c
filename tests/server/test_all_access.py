"""All-access tokens run unrestricted; the access log is a store of its own.

A ``*`` token is evaluated with no dataset restriction and the union default
graph, and must see exactly what the restricted evaluation shows (every data
graph, never the log). Audit tokens read the log at ``/access-log/sparql``,
and those reads are logged too. Where the log lives by default is checked
here, with a real ``oxigraph serve`` as the data store for the remote case.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from SPARQLWrapper import CSV, JSON, SPARQLWrapper
from tests.server.conftest import ACCESS_LOG, TOKENS, Seeded, auth, seed, serving
from tests.server.test_live import LOG_QUERY

from trails.errors import ConfigError
from trails.prov.vocab import T
from trails.server import EndpointConfig, create_app
from trails.server.auth import Grant, TokenTable
from trails.server.graphs import GraphCache, Readable, dataset
from trails.server.log import access_log_location
from trails.server.pool import ProcessPool, QueryJob, run_job
from trails.store import IRI, Literal, Quad, Store, open_store
from trails.testing import assert_conforms

GRAPHS = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g"
LOGGED = f"ASK {{ ?a a {T.QueryReceived.n3()} }}"


def graphs_of(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [b["g"]["value"] for b in response.json()["results"]["bindings"]]


def everything(seeded: Seeded) -> list[str]:
    return sorted([*seeded.alice_sessions, seeded.bob_session, seeded.memory])


def test_a_star_token_sees_every_data_graph_and_never_the_log(
    live: str, seeded: Seeded, store: Store
) -> None:
    with httpx.Client(base_url=live, timeout=30) as client:
        for _ in range(3):  # the log has entries by now
            assert graphs_of(client.get("/sparql", params={"query": GRAPHS}, headers=auth("admin")))
        assert graphs_of(
            client.get("/sparql", params={"query": GRAPHS}, headers=auth("admin"))
        ) == everything(seeded)
        checks: list[dict[str, Any]] = [
            {"query": LOGGED},  # bare pattern: the union default graph
            {"query": f"ASK {{ GRAPH <{ACCESS_LOG}> {{ ?s ?p ?o }} }}"},
            {"query": f"ASK FROM <{ACCESS_LOG}> WHERE {{ ?s ?p ?o }}"},
            {"query": f"ASK FROM NAMED <{ACCESS_LOG}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}"},
            {"query": "ASK { ?s ?p ?o }", "default-graph-uri": ACCESS_LOG},
            {"query": "ASK { GRAPH ?g { ?s ?p ?o } }", "named-graph-uri": ACCESS_LOG},
            {"query": f"ASK {{ GRAPH ?g {{ ?a a {T.QueryReceived.n3()} }} }}"},
        ]
        for who in ("admin", "auditor"):
            for params in checks:
                response = client.get("/sparql", params=params, headers=auth(who))
                assert response.status_code == 200, (who, params, response.text)
                assert response.json()["boolean"] is False, (who, params)
        # the same bare pattern does see data: the default graph is the union of the graphs
        sessions = f"SELECT ?s WHERE {{ ?s a {T.Session.n3()} }} ORDER BY ?s"
        rows = client.get("/sparql", params={"query": sessions}, headers=auth("admin"))
        assert [b["s"]["value"] for b in rows.json()["results"]["bindings"]] == sorted(
            [*seeded.alice_sessions, seeded.bob_session]
        )
    assert ACCESS_LOG not in store.graphs()


def test_an_audit_token_reads_the_log_and_its_reads_are_logged(live: str, seeded: Seeded) -> None:
    def log_rows() -> list[dict[str, Any]]:
        sparql = SPARQLWrapper(f"{live}/access-log/sparql")
        sparql.setOnlyConneg(True)
        sparql.addCustomHttpHeader("Authorization", f"Bearer {TOKENS['auditor']}")
        sparql.setReturnFormat(JSON)
        sparql.setQuery(LOG_QUERY)  # no dataset: the default graph is the whole log
        result: Any = sparql.queryAndConvert()
        rows: list[dict[str, Any]] = result["results"]["bindings"]
        return rows

    with httpx.Client(base_url=live, timeout=30) as client:
        assert client.get("/sparql", params={"query": GRAPHS}, headers=auth("bob")).is_success
        refused = client.get("/access-log/sparql", params={"query": LOGGED}, headers=auth("bob"))
        assert refused.status_code == 403
        anonymous = client.get("/access-log/sparql", params={"query": LOGGED})
        assert anonymous.status_code == 401
        first = log_rows()
        second = log_rows()
        # the same protocol: content negotiation, refusals, the service description
        csv = client.get(
            "/access-log/sparql",
            params={"query": LOG_QUERY},
            headers={**auth("auditor"), "Accept": "text/csv"},
        )
        assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
        drop = client.post(
            "/access-log/sparql", data={"query": "DROP ALL"}, headers=auth("auditor")
        )
        assert drop.status_code == 403 and "read-only" in drop.text
        service = client.post(
            "/access-log/sparql",
            data={"query": "SELECT * WHERE { SERVICE <http://127.0.0.1:1/> { ?s ?p ?o } }"},
            headers=auth("auditor"),
        )
        assert service.status_code == 403
        description = client.get("/access-log/sparql")
        assert description.status_code == 200 and "sd:Service" in description.text
        assert client.get("/sparql", params={"query": LOGGED}, headers=auth("auditor")).json()[
            "boolean"
        ] is False  # fmt: skip
    statuses = [(r.get("who", {}).get("value"), r["status"]["value"]) for r in first]
    assert statuses == [
        ("did:example:bob", "ok"),
        ("did:example:bob", "refused"),  # bob asked for the log
        (None, "unauthorized"),
    ]
    # the auditor's first read of the log is in the log by the second
    assert len(second) == len(first) + 1
    assert second[-1]["who"]["value"] == "did:example:auditor"
    assert second[-1]["text"]["value"] == LOG_QUERY
    assert int(second[-1]["n"]["value"]) == len(first)


def test_sparqlwrapper_csv_from_the_log(live: str, seeded: Seeded) -> None:
    httpx.get(f"{live}/sparql", params={"query": GRAPHS}, headers=auth("alice"), timeout=30)
    sparql = SPARQLWrapper(f"{live}/access-log/sparql")
    sparql.setOnlyConneg(True)
    sparql.addCustomHttpHeader("Authorization", f"Bearer {TOKENS['auditor']}")
    sparql.setReturnFormat(CSV)
    sparql.setQuery(f"SELECT ?a WHERE {{ ?a a {T.QueryReceived.n3()} }}")
    text = sparql.queryAndConvert()
    assert isinstance(text, bytes)
    assert len(text.decode().split("\r\n")[1:-1]) == 1  # alice's query


def test_a_pattern_token_sees_only_its_graphs(live: str, seeded: Seeded) -> None:
    with httpx.Client(base_url=live, timeout=30) as client:
        alice = client.get("/sparql", params={"query": GRAPHS}, headers=auth("alice"))
        assert graphs_of(alice) == sorted([*seeded.alice_sessions, seeded.memory])
        bare = client.get(
            "/sparql",
            params={"query": f"SELECT ?s WHERE {{ ?s a {T.Session.n3()} }} ORDER BY ?s"},
            headers=auth("alice"),
        )
        assert [b["s"]["value"] for b in bare.json()["results"]["bindings"]] == sorted(
            seeded.alice_sessions
        )


EQUIVALENCE = [
    GRAPHS,
    "SELECT ?s ?p ?o WHERE { ?s ?p ?o } ORDER BY ?s ?p ?o",
    "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g ORDER BY ?g",
    "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
    "SELECT ?s WHERE { ?s ?p ?o FILTER NOT EXISTS { GRAPH ?g { ?s ?p ?o } } }",
    f"SELECT ?s ?g WHERE {{ ?s a {T.Session.n3()} OPTIONAL {{ GRAPH ?g {{ ?s ?x ?y }} }} }}"
    " ORDER BY ?s ?g",
    "ASK { ?s ?p ?o }",
    "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",
    "CONSTRUCT { ?g ?p ?o } WHERE { GRAPH ?g { ?g ?p ?o } }",
]


def _answer(store: Store, grant: Grant, query: str, cache: GraphCache) -> Any:
    fmt = "ntriples" if query.startswith("CONSTRUCT") else "json"
    outcome = run_job(store, QueryJob(query, grant, IRI(ACCESS_LOG), format=fmt), cache)
    assert outcome.kind == "ok", outcome.message
    if fmt == "ntriples":
        return sorted(outcome.data.decode().splitlines())
    return json.loads(outcome.data)


def test_the_unrestricted_path_answers_like_the_restricted_one(any_store: Store) -> None:
    seed(any_store)
    any_store.write(
        [Quad(IRI(f"urn:x:{n}"), IRI("urn:x:p"), Literal(str(n)), IRI("urn:x:g")) for n in range(5)]
    )
    star = Grant("did:example:admin", ("*",))
    every_urn = Grant("did:example:admin", ("urn:*",))  # matches every graph, yet a pattern
    cache = GraphCache(any_store)
    assert cache.readable(star, IRI(ACCESS_LOG), "urn:trails:").everything
    restricted = cache.readable(every_urn, IRI(ACCESS_LOG), "urn:trails:")
    assert not restricted.everything and list(restricted.graphs) == any_store.graphs()
    for query in EQUIVALENCE:
        assert _answer(any_store, star, query, cache) == _answer(
            any_store, every_urn, query, cache
        ), query


def test_the_dataset_choice() -> None:
    g1, g2 = IRI("urn:g:1"), IRI("urn:g:2")
    allowed = Readable((g1, g2), everything=True)
    assert dataset(allowed, None, None) == {"union_default_graph": True}
    # a request's own dataset always takes the intersecting path, and can only narrow
    narrowed = dataset(allowed, (g1, IRI("urn:g:other")), ())
    assert narrowed == {"default_graph": [g1], "named_graphs": []}
    partial = Readable((g1,), everything=False)
    assert dataset(partial, None, None) == {"default_graph": [g1], "named_graphs": [g1]}


def test_a_legacy_log_in_the_data_store_stays_invisible(store: Store, seeded: Seeded) -> None:
    """A store written by an earlier version holds the log graph: no token may read it."""
    store.write(
        [Quad(IRI("urn:trails:activity:old"), IRI("urn:x:said"), Literal("old"), IRI(ACCESS_LOG))]
    )
    star = Grant("did:example:admin", ("*",), audit=True)
    readable = GraphCache(store).readable(star, IRI(ACCESS_LOG), "urn:trails:")
    assert not readable.everything and ACCESS_LOG not in readable.graphs
    outcome = run_job(store, QueryJob("ASK { ?s ?p 'old' }", star, IRI(ACCESS_LOG)))
    assert json.loads(outcome.data)["boolean"] is False
    store.clear(IRI(ACCESS_LOG))


@pytest.mark.allow_nonconforming
def test_a_store_with_a_default_graph_is_restricted(store: Store, seeded: Seeded) -> None:
    store.load(b'<urn:x:s> <urn:x:p> "in the default graph" .\n', format="nquads")
    star = Grant("did:example:admin", ("*",))
    assert not GraphCache(store).readable(star, IRI(ACCESS_LOG), "urn:trails:").everything
    outcome = run_job(store, QueryJob("ASK { ?s ?p 'in the default graph' }", star, None))
    assert json.loads(outcome.data)["boolean"] is False  # only named graphs are granted


def test_the_graph_list_is_kept_for_its_ttl(store: Store, seeded: Seeded) -> None:
    now = [0.0]
    cache = GraphCache(store, ttl=1.0, clock=lambda: now[0])
    alice = Grant("did:example:alice", ("urn:trails:graph:*",))
    first = cache.readable(alice, None, "urn:trails:")
    new = IRI("urn:trails:graph:new")
    store.write([Quad(IRI("urn:x:s"), IRI("urn:x:p"), Literal("new"), new)])
    now[0] = 0.5
    assert cache.readable(alice, None, "urn:trails:") == first  # stale: narrower
    assert new not in first.graphs and cache.listings == 1
    now[0] = 1.0
    assert new in cache.readable(alice, None, "urn:trails:").graphs
    assert cache.listings == 2
    store.clear(new)


def test_where_the_access_log_lives(tmp_path: Path, store: Store) -> None:
    data = tmp_path / "data"
    assert access_log_location(data) == str(tmp_path / "data.access-log")
    assert access_log_location(str(data) + "/") == str(tmp_path / "data.access-log")
    assert access_log_location("memory:") == "memory:"
    assert access_log_location(store) == "memory:"
    remote = access_log_location("http://127.0.0.1:7878")
    assert remote == str(tmp_path / ".trails" / "access-log")  # tests run in tmp_path
    assert access_log_location(data, tmp_path / "elsewhere") == str(tmp_path / "elsewhere")
    assert access_log_location("http://h:1", "http://h:2/") == "http://h:2"
    for same in (data, str(data) + "/"):
        with pytest.raises(ConfigError, match="of its own"):
            access_log_location(data, same)
    with pytest.raises(ConfigError, match="of its own"):
        access_log_location("http://h:1/", "http://h:1")
    with pytest.raises(ConfigError, match="of its own"):
        create_app(store, TokenTable({}), access_log=store)


def test_a_directory_store_and_its_log_store(tmp_path: Path, token_table: TokenTable) -> None:
    folder = tmp_path / "store"
    data = open_store(folder)
    seeded = seed(data)
    data.close()
    endpoint = create_app(folder, token_table, EndpointConfig(time_limit=20))
    assert isinstance(endpoint.evaluator, ProcessPool)
    try:
        with serving(endpoint.app) as url:
            answer = httpx.get(
                f"{url}/sparql", params={"query": GRAPHS}, headers=auth("admin"), timeout=30
            )
            assert graphs_of(answer) == everything(seeded)
    finally:
        endpoint.close()
    log = open_store(tmp_path / "store.access-log")
    try:
        assert_conforms(log, ACCESS_LOG)
        assert log.query(LOGGED, union_default_graph=True) is True
    finally:
        log.close()


@pytest.mark.remote
def test_over_a_sparql_server(
    remote_store: Store, oxigraph_server: str, token_table: TokenTable, tmp_path: Path
) -> None:
    seeded = seed(remote_store)
    config = EndpointConfig(time_limit=20, processes=2, threads=2)
    endpoint = create_app(oxigraph_server, token_table, config)
    assert isinstance(endpoint.evaluator, ProcessPool)
    try:
        with serving(endpoint.app) as url, httpx.Client(base_url=url, timeout=30) as client:
            admin = client.get("/sparql", params={"query": GRAPHS}, headers=auth("admin"))
            assert graphs_of(admin) == everything(seeded)
            bare = client.get(
                "/sparql",
                params={"query": f"SELECT ?s WHERE {{ ?s a {T.Session.n3()} }} ORDER BY ?s"},
                headers=auth("admin"),
            )
            assert len(bare.json()["results"]["bindings"]) == 3
            bob = client.get("/sparql", params={"query": GRAPHS}, headers=auth("bob"))
            assert graphs_of(bob) == [seeded.bob_session]
            log = client.get(
                "/access-log/sparql", params={"query": LOG_QUERY}, headers=auth("auditor")
            )
            assert len(log.json()["results"]["bindings"]) == 3
    finally:
        endpoint.close()
    assert ACCESS_LOG not in remote_store.graphs()  # nothing was written to the server
    local = open_store(tmp_path / ".trails" / "access-log")
    try:
        assert_conforms(local, ACCESS_LOG)
    finally:
        local.close()
