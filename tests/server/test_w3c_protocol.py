"""The W3C SPARQL 1.1 Protocol test suite against ``trails serve``, on both store backends.

The manifest (``tests/data/w3c/sparql11/protocol/``, vendored from
w3c/rdf-tests under the W3C test suite licence, ``tests/data/w3c/LICENSE.md``)
describes each test as HTTP requests and the responses they must get. Each is
sent over real HTTP to a ``trails serve`` process (the CLI, its own process)
over a directory store (embedded pyoxigraph, evaluated in a worker process)
and over a real ``oxigraph serve`` (``--store http://...``), with a bearer
token that may read every graph; the manifest's graph data is loaded into the
store first, one named graph per file, named by its label.

The endpoint is read-only (docs/endpoint.md): an update test whose request
the W3C expects to succeed must instead be refused cleanly, with a 403 that
says so (its follow-up requests check the update's effect and are not sent);
an update test that expects a 4xx must get one. Every query test must pass as
written. Known engine failures would be strict xfails in ``KNOWN_FAILURES``
(there are none); docs/conformance.md reports the counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pyoxigraph
import pytest
import rdflib
from rdflib.namespace import RDF, RDFS
from tests.server.conftest import free_port, wait_for

from servers import OxigraphServer
from trails.server.auth import token_entry
from trails.store import IRI, open_store

SUITE = Path(__file__).resolve().parents[1] / "data" / "w3c" / "sparql11" / "protocol"
BASE = "http://www.w3.org/2009/sparql/docs/tests/data-sparql11/protocol/manifest#"
MF = rdflib.Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
HT = rdflib.Namespace("http://www.w3.org/2011/http#")
CNT = rdflib.Namespace("http://www.w3.org/2011/content#")
UT = rdflib.Namespace("http://www.w3.org/2009/sparql/tests/test-update#")
HTS = "http://www.w3.org/2011/http-statusCodes#StatusCode"
TOKEN = "w3c-protocol-token-0123456789abcdef"

# test id -> reason: engine failures, run as strict xfails (none known)
KNOWN_FAILURES: dict[str, str] = {}

_FORMATS = {
    "boolean": ("application/sparql-results+json", "application/sparql-results+xml"),
    "tabular": (
        "application/sparql-results+json",
        "application/sparql-results+xml",
        "text/csv",
        "text/tab-separated-values",
    ),
    "RDF": ("application/rdf+xml", "text/turtle", "application/n-triples", "text/html"),
}


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: bytes | None
    headers: dict[str, str]
    statuses: frozenset[str]  # "2xx", "3xx", "4xx" ...
    boolean: bool | None
    format: str | None


@dataclass(frozen=True)
class ProtocolTest:
    id: str
    name: str
    graphs: tuple[tuple[str, str], ...]  # (file, graph IRI)
    requests: tuple[Request, ...]

    @property
    def is_update(self) -> bool:
        """An update test: its first request is an update operation (the rest are queries)."""
        return self.id.startswith(("update_", "bad_update_", "bad_multiple_updates"))


def _items(graph: rdflib.Graph, head: rdflib.term.Node) -> list[rdflib.term.Node]:
    return list(rdflib.collection.Collection(graph, head))


def load_manifest() -> list[ProtocolTest]:
    graph = rdflib.Graph().parse(SUITE / "manifest.ttl", format="turtle", publicID=BASE)
    manifest = next(graph.subjects(RDF.type, MF.Manifest))
    tests = []
    for entry in _items(graph, graph.value(manifest, MF.entries)):
        data = []
        for item in graph.objects(entry, UT.graphData):
            file = Path(str(graph.value(item, UT.graph))).name
            data.append((file, str(graph.value(item, RDFS.label))))
        action = graph.value(entry, MF.action)
        requests = []
        for node in _items(graph, graph.value(action, HT.requests)):
            headers = {
                str(graph.value(h, HT.fieldName)).lower(): str(graph.value(h, HT.fieldValue))
                for h in (
                    _items(graph, graph.value(node, HT.headers))
                    if graph.value(node, HT.headers)
                    else []
                )
            }
            body = None
            content = graph.value(node, HT.body)
            if content is not None:
                encoding = str(graph.value(content, CNT.characterEncoding) or "UTF-8")
                body = str(graph.value(content, CNT.chars)).encode(encoding.lower())
            response = graph.value(node, HT.resp)
            boolean = graph.value(response, MF.expectedBoolean)
            fmt = graph.value(response, MF.expectedFormat)
            requests.append(
                Request(
                    method=str(graph.value(node, HT.methodName)),
                    path=str(graph.value(node, HT.absolutePath)),
                    body=body,
                    headers=headers,
                    statuses=frozenset(
                        str(s).removeprefix(HTS) for s in graph.objects(response, MF.expectedStatus)
                    ),
                    boolean=None if boolean is None else bool(boolean.toPython()),
                    format=None if fmt is None else str(fmt),
                )
            )
        tests.append(
            ProtocolTest(
                id=str(entry).removeprefix(BASE),
                name=str(graph.value(entry, MF.name)),
                graphs=tuple(sorted(data)),
                requests=tuple(requests),
            )
        )
    return tests


TESTS = load_manifest()


def _data_graphs() -> list[tuple[str, str]]:
    return sorted({pair for test in TESTS for pair in test.graphs})


def _serve(store: str, folder: Path) -> Iterator[str]:
    """Run ``trails serve`` over ``store`` as its own process; yields its /sparql URL."""
    tokens = folder / "tokens.toml"
    tokens.write_text(token_entry(TOKEN, "did:example:w3c", ["*"]))
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "trails.cli", "--store", store, "serve",
         "--port", str(port), "--tokens", str(tokens), "--time-limit", "30"],
        cwd=folder, env={**os.environ, "TRAILS_STORE": "memory:"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/sparql"

    def up() -> bool:
        assert process.poll() is None, process.communicate()[1].decode()[-3000:]
        try:
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(up)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def _load(location: str) -> None:
    store = open_store(location)
    try:
        for file, graph in _data_graphs():
            store.load(SUITE / file, format="ntriples", graph=IRI(graph))
    finally:
        store.close()


@pytest.fixture(
    scope="module", params=["embedded", pytest.param("remote", marks=pytest.mark.remote)]
)
def protocol_endpoint(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """``trails serve`` over the suite's data: a directory store, or ``oxigraph serve``."""
    folder = tmp_path_factory.mktemp(f"w3c-protocol-{request.param}")
    if request.param == "embedded":
        location = str(folder / "store")
        _load(location)
        yield from _serve(location, folder)
        return
    server = OxigraphServer(folder / "oxigraph")
    location = server.start()
    try:
        _load(location)
        yield from _serve(location, folder)
    finally:
        server.stop()


def send(client: httpx.Client, endpoint: str, request: Request) -> httpx.Response:
    path = request.path.removeprefix("/sparql/").removeprefix("/sparql")
    url = endpoint + (path if path.startswith("?") or not path else "/" + path)
    headers = {**request.headers, "Authorization": f"Bearer {TOKEN}"}
    return client.request(request.method, url, content=request.body, headers=headers)


def boolean_of(response: httpx.Response) -> bool:
    kind = response.headers["content-type"].split(";")[0].strip()
    if kind == "application/sparql-results+json":
        value = json.loads(response.content)["boolean"]
        assert isinstance(value, bool)
        return value
    parsed = pyoxigraph.parse_query_results(
        response.content, format=pyoxigraph.QueryResultsFormat.XML
    )
    assert isinstance(parsed, pyoxigraph.QueryBoolean)
    return bool(parsed)


def check(request: Request, response: httpx.Response) -> None:
    status = f"{response.status_code // 100}xx"
    assert status in request.statuses, (response.status_code, response.text[:500])
    if request.format is not None:
        kind = response.headers["content-type"].split(";")[0].strip()
        assert kind in _FORMATS[request.format], kind
        if request.format == "RDF" and kind != "text/html":
            fmt = pyoxigraph.RdfFormat.from_media_type(kind)
            assert fmt is not None
            list(pyoxigraph.parse(response.content, format=fmt, base_iri="urn:x:"))
    if request.boolean is not None:
        assert boolean_of(response) is request.boolean


@pytest.mark.parametrize("test", TESTS, ids=[t.id for t in TESTS])
def test_w3c_protocol(
    protocol_endpoint: str, test: ProtocolTest, request: pytest.FixtureRequest
) -> None:
    if test.id in KNOWN_FAILURES:
        request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[test.id]))
    with httpx.Client(timeout=60) as client:
        for index, step in enumerate(test.requests):
            response = send(client, protocol_endpoint, step)
            if test.is_update and index == 0:
                if step.statuses & {"2xx", "3xx"}:
                    # read-only: refused cleanly, not applied (the rest checks its effect)
                    assert response.status_code == 403, (response.status_code, response.text)
                    assert "read-only" in response.text
                    return
                assert 400 <= response.status_code < 500, (response.status_code, response.text)
                continue
            check(step, response)


def test_the_manifest_is_read_whole() -> None:
    assert len(TESTS) == 34
    assert sum(1 for t in TESTS if t.is_update) == 14
    assert {t.id for t in TESTS if not t.is_update} >= {
        "query_post_form",
        "query_content_type_construct",
        "bad_query_non_utf8",
    }
