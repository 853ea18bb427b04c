"""Tokens, graphs a token may not see, refusals and limits (httpx in process)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests.server.conftest import ACCESS_LOG, BOB, TOKENS, Seeded, auth

from trails.errors import ConfigError, QueryRefused
from trails.server.auth import Grant, hash_token, load_tokens, token_entry
from trails.server.sparql import analyse
from trails.store import IRI, Literal, Quad, Store

pytestmark = pytest.mark.anyio

GRAPHS = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g"


def bindings(response: httpx.Response) -> list[dict[str, dict[str, str]]]:
    assert response.status_code == 200, response.text
    rows: list[dict[str, dict[str, str]]] = response.json()["results"]["bindings"]
    return rows


async def test_no_token_or_a_wrong_one_is_401(client: httpx.AsyncClient) -> None:
    for headers, says in (
        ({}, "a bearer token is required"),
        ({"Authorization": "Bearer not-a-token"}, "unknown token"),
        ({"Authorization": f"Basic {TOKENS['alice']}"}, "a bearer token is required"),
    ):
        response = await client.get("/sparql", params={"query": GRAPHS}, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.text.startswith(says)
    assert (await client.get("/queries/sessions")).status_code == 401


async def test_each_token_sees_only_its_graphs(client: httpx.AsyncClient, seeded: Seeded) -> None:
    alice = [
        b["g"]["value"]
        for b in bindings(
            await client.get("/sparql", params={"query": GRAPHS}, headers=auth("alice"))
        )
    ]
    bob = [
        b["g"]["value"]
        for b in bindings(
            await client.get("/sparql", params={"query": GRAPHS}, headers=auth("bob"))
        )
    ]
    assert alice == sorted([*seeded.alice_sessions, seeded.memory])
    assert bob == [seeded.bob_session]


async def test_a_graph_the_token_may_not_read_is_invisible(
    client: httpx.AsyncClient, seeded: Seeded
) -> None:
    hidden = seeded.bob_session
    checks = [
        ({"query": f"ASK {{ GRAPH <{hidden}> {{ ?s ?p ?o }} }}"}, "ask"),
        ({"query": f"SELECT * FROM <{hidden}> WHERE {{ ?s ?p ?o }}"}, "rows"),
        ({"query": f"SELECT * FROM NAMED <{hidden}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}"}, "rows"),
        ({"query": "SELECT * WHERE { ?s ?p ?o }", "default-graph-uri": hidden}, "rows"),
        ({"query": GRAPHS, "named-graph-uri": hidden}, "rows"),
        ({"query": f"SELECT ?s WHERE {{ ?s ?p <{BOB}> }}"}, "rows"),
    ]
    for params, kind in checks:
        response = await client.get("/sparql", params=params, headers=auth("alice"))
        assert response.status_code == 200, (params, response.text)
        if kind == "ask":
            assert response.json()["boolean"] is False, params
        else:
            assert response.json()["results"]["bindings"] == [], params
    # and the same queries do see it with a token that may
    response = await client.get(
        "/sparql",
        params={"query": f"ASK {{ GRAPH <{hidden}> {{ ?s ?p ?o }} }}"},
        headers=auth("bob"),
    )
    assert response.json()["boolean"] is True


async def test_access_log_is_hidden_from_ordinary_tokens(
    client: httpx.AsyncClient, seeded: Seeded
) -> None:
    await client.get("/sparql", params={"query": GRAPHS}, headers=auth("alice"))
    ask = f"ASK {{ GRAPH <{ACCESS_LOG}> {{ ?s ?p ?o }} }}"
    # the log is a store of its own: not in the dataset of /sparql, whoever asks
    for who in ("alice", "admin", "auditor"):
        response = await client.get("/sparql", params={"query": ask}, headers=auth(who))
        assert response.json()["boolean"] is False, who
    for who in ("alice", "admin"):  # admin reads "*", which does not reach the log
        response = await client.get("/access-log/sparql", params={"query": ask}, headers=auth(who))
        assert response.status_code == 403, who
        assert "audit = true" in response.text
    response = await client.get(
        "/access-log/sparql", params={"query": ask}, headers=auth("auditor")
    )
    assert response.json()["boolean"] is True


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ("INSERT DATA { <urn:a> <urn:b> <urn:c> }", "Update (INSERT)"),
        ("PREFIX x: <urn:x#>\nDELETE WHERE { ?s ?p ?o }", "Update (DELETE)"),
        ("LOAD <http://127.0.0.1:1/data.ttl>", "Update (LOAD)"),
        ("DROP ALL", "Update (DROP)"),
        ("SELECT * WHERE { SERVICE <http://127.0.0.1:1/sparql> { ?s ?p ?o } }", "SERVICE"),
        ("select * where { service silent <urn:x> { ?s ?p ?o } }", "SERVICE"),
        ("SELECT * WHERE { \\u0053ERVICE <urn:x> { ?s ?p ?o } }", "SERVICE"),
        ("SELECT * WHERE { SERVICE ?x { ?s ?p ?o } }", "SERVICE"),
    ],
)
async def test_updates_load_and_service_are_refused(
    client: httpx.AsyncClient, query: str, needle: str
) -> None:
    response = await client.post("/sparql", data={"query": query}, headers=auth("admin"))
    assert response.status_code == 403
    assert needle in response.text


async def test_update_operation_of_the_protocol_is_refused(client: httpx.AsyncClient) -> None:
    by_form = await client.post(
        "/sparql", data={"update": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"}, headers=auth("admin")
    )
    by_body = await client.post(
        "/sparql",
        content=b"CLEAR ALL",
        headers={**auth("admin"), "Content-Type": "application/sparql-update"},
    )
    assert by_form.status_code == by_body.status_code == 403
    assert "read-only" in by_form.text and "read-only" in by_body.text
    count = await client.get(
        "/sparql", params={"query": "ASK { <urn:a> <urn:b> <urn:c> }"}, headers=auth("admin")
    )
    assert count.json()["boolean"] is False


def test_service_in_strings_iris_and_names_is_not_a_service_call() -> None:
    ok = [
        'SELECT * WHERE { ?s ?p "SERVICE <urn:x> {}" }',
        "SELECT * WHERE { ?s <http://example.org/SERVICE> ?o }  # SERVICE in a comment",
        "PREFIX ex: <urn:ex:>\nSELECT ?service WHERE { ?service ex:SERVICE ?o }",
    ]
    for query in ok:
        assert analyse(query).form == "SELECT"
    with pytest.raises(QueryRefused):
        analyse('SELECT * WHERE { ?s ?p "x" . SERVICE <urn:x> { ?a ?b ?c } }')


def test_analyse_finds_form_and_dataset() -> None:
    info = analyse(
        "BASE <http://example.org/>\nPREFIX g: <http://example.org/graph/>\n"
        "CONSTRUCT { ?s ?p ?o } FROM <a> FROM NAMED g:b WHERE { ?s ?p ?o }"
    )
    assert info.form == "CONSTRUCT"
    assert info.default_graphs == ("http://example.org/a",)
    assert info.named_graphs == ("http://example.org/graph/b",)
    assert analyse("ASK {}").default_graphs is None
    with pytest.raises(QueryRefused) as err:
        analyse("SELECT * FROM nope:x WHERE { }")
    assert err.value.status == 400


async def test_malformed_query_says_where(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/sparql",
        data={"query": "SELECT * WHERE {\n  ?s ?p ?o .\n  FILTER( }"},
        headers=auth("alice"),
    )
    assert response.status_code == 400
    assert "line 3, column" in response.text


async def test_oversized_query_and_body_are_413(client: httpx.AsyncClient) -> None:
    big = "SELECT * WHERE { ?s ?p ?o } #" + "x" * 5000  # the fixture's limit is 4096 bytes
    response = await client.post("/sparql", data={"query": big}, headers=auth("alice"))
    assert response.status_code == 413
    assert "over the limit of 4096" in response.text
    huge = await client.post(
        "/sparql",
        content=b"x" * 100_000,
        headers={**auth("alice"), "Content-Type": "application/sparql-query"},
    )
    assert huge.status_code == 413


async def test_result_size_limit(client: httpx.AsyncClient, store: Store, seeded: Seeded) -> None:
    # the fixture allows 50 results
    store.write(
        [Quad(IRI(f"urn:x:{n}"), IRI("urn:x:p"), Literal(str(n)), seeded.memory) for n in range(60)]
    )
    response = await client.get(
        "/sparql",
        params={"query": "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }"},
        headers=auth("admin"),
    )
    assert response.status_code == 400
    assert "over the limit of 50" in response.text and "LIMIT" in response.text
    limited = await client.get(
        "/sparql",
        params={"query": "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } } LIMIT 10"},
        headers=auth("admin"),
    )
    assert len(bindings(limited)) == 10


async def test_bad_requests(client: httpx.AsyncClient) -> None:
    wrong_type = await client.post(
        "/sparql", content=b"query=ASK{}", headers={**auth("alice"), "Content-Type": "text/plain"}
    )
    assert wrong_type.status_code == 415
    two = await client.get(
        "/sparql", params=[("query", "ASK {}"), ("query", "ASK {}")], headers=auth("alice")
    )
    assert two.status_code == 400
    bad_graph = await client.get(
        "/sparql",
        params={"query": "ASK {}", "named-graph-uri": "not an iri"},
        headers=auth("alice"),
    )
    assert bad_graph.status_code == 400
    assert "named-graph-uri" in bad_graph.text


def test_tokens_file_round_trip_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(token_entry("s3cret", "did:example:x", ["urn:trails:session:*"], audit=True))
    assert "s3cret" not in path.read_text()  # only the digest is stored
    table = load_tokens(path)
    grant = table.authenticate("Bearer s3cret")
    assert grant == Grant("did:example:x", ("urn:trails:session:*",), True)
    assert grant.matches("urn:trails:session:abc") and not grant.matches("urn:trails:graph:memory")
    assert table.authenticate("Bearer S3CRET") is None
    assert hash_token("s3cret") in path.read_text()
    for bad in (
        '[[token]]\nprincipal = "x"\nsha256 = "plain-token"\n',
        f'[[token]]\nsha256 = "{hash_token("a")}"\n',
        f'[[token]]\nprincipal = "x"\nsha256 = "{hash_token("a")}"\ngraphs = ["memory"]\n',
        "not toml [",
    ):
        path.write_text(bad)
        with pytest.raises(ConfigError):
            load_tokens(path)
    with pytest.raises(ConfigError):
        load_tokens(tmp_path / "missing.toml")
