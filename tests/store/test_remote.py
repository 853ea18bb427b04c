"""What only the remote store has: configuration, auth, retries, HTTP errors, fallbacks.

The server is the session's real ``oxigraph serve``. Auth and transient
failures are produced by a small real HTTP proxy on loopback in front of it,
which answers with a chosen status or checks the Authorization header, and
forwards everything else unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from trails.config import load_settings
from trails.errors import ConfigError, RDFSyntaxError, RemoteStoreError, StoreError
from trails.store import IRI, Literal, Quad, Solutions, open_store
from trails.store.sparql import SparqlStore

G = IRI("urn:test:g")
S, P = IRI("urn:test:s"), IRI("urn:test:p")

pytestmark = pytest.mark.remote


class Proxy:
    """A loopback HTTP proxy to ``upstream`` that can fail requests or demand credentials."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.failures: list[int] = []  # statuses to answer with, first to last
        self.required_auth: str | None = None
        self.seen: list[tuple[str, str]] = []  # (method, path) of every request
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                proxy.seen.append((self.command, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if proxy.failures:
                    self._answer(proxy.failures.pop(0), b"the upstream is having a moment")
                    return
                if proxy.required_auth and self.headers.get("Authorization") != proxy.required_auth:
                    self._answer(401, b"who are you?")
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                answer = httpx.request(
                    self.command, proxy.upstream + self.path, content=body, headers=headers
                )
                self._answer(answer.status_code, answer.content, answer.headers.get("content-type"))

            def _answer(self, status: int, body: bytes, kind: str | None = "text/plain") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind or "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _handle

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Proxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy(remote_store: SparqlStore, oxigraph_server: str) -> Iterator[Proxy]:
    with Proxy(oxigraph_server) as running:
        yield running


def _store(url: str, **kw: object) -> SparqlStore:
    return SparqlStore(f"{url}/query", f"{url}/update", f"{url}/store", backoff=0.01, **kw)  # type: ignore[arg-type]


# -- configuration -------------------------------------------------------------


def test_open_store_picks_the_remote_backend_and_the_oxigraph_layout(tmp_path: Path) -> None:
    settings = load_settings(environ={}, cwd=tmp_path)
    store = open_store("http://127.0.0.1:1/", settings=settings)
    assert isinstance(store, SparqlStore)
    assert (store.query_url, store.update_url, store.gsp_url) == (
        "http://127.0.0.1:1/query", "http://127.0.0.1:1/update", "http://127.0.0.1:1/store",
    )  # fmt: skip
    store.close()
    beside = SparqlStore.from_settings("https://h/ds/query", settings, environ={})
    assert (beside.update_url, beside.gsp_url) == ("https://h/ds/update", "https://h/ds/store")
    one = SparqlStore.from_settings("https://h/sparql", settings, environ={})
    assert (one.query_url, one.update_url, one.gsp_url) == ("https://h/sparql",) * 2 + (None,)
    for s in (beside, one):
        s.close()


def test_settings_from_the_file_and_the_environment(tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text(
        '[store]\nlocation = "http://db:7878"\nupdate_url = "none"\ngsp_url = "http://db:7878/gsp"\n'
        'token = "file-token"\ntimeout = 5\nretries = 1\nform_post = true\n'
    )
    settings = load_settings(environ={}, cwd=tmp_path)
    store = SparqlStore.from_settings(settings.store, settings, environ={})
    assert store.update_url is None and store.gsp_url == "http://db:7878/gsp"
    assert store.client.headers["Authorization"] == "Bearer file-token"
    assert (store.retries, store.form_post, store.client.timeout.read) == (1, True, 5.0)
    store.close()
    env = {"TRAILS_STORE_TOKEN": "env-token", "TRAILS_STORE_QUERY_URL": "http://other/q"}
    store = SparqlStore.from_settings(settings.store, settings, environ=env)
    assert store.query_url == "http://other/q"
    assert store.client.headers["Authorization"] == "Bearer env-token"
    store.close()
    with pytest.raises(ConfigError, match="not both"):
        SparqlStore.from_settings("http://db", settings, environ={"TRAILS_STORE_USER": "u"})
    with pytest.raises(ConfigError):
        SparqlStore.from_settings("http://db", settings, environ={"TRAILS_STORE_RETRIES": "x"})
    with pytest.raises(ConfigError):
        SparqlStore("ftp://db/query")


def test_credentials_never_appear_in_messages() -> None:
    store = SparqlStore("http://user:secret@127.0.0.1:1/query", retries=0)
    with pytest.raises(RemoteStoreError) as caught:
        store.graphs()
    assert "secret" not in str(caught.value) and "secret" not in repr(store)
    store.close()


# -- auth, retries and HTTP errors --------------------------------------------


def test_bearer_and_basic_auth_reach_the_server(proxy: Proxy) -> None:
    proxy.required_auth = "Bearer s3cret"
    with _store(proxy.url, token="s3cret") as store:
        store.write([Quad(S, P, Literal("x"), G)])
        assert store.graphs() == [G]
    with _store(proxy.url, token="wrong") as store, pytest.raises(RemoteStoreError) as caught:
        store.graphs()
    assert caught.value.status == 401 and "who are you?" in str(caught.value)
    proxy.required_auth = "Basic YWxpY2U6cHc="  # alice:pw
    with _store(proxy.url, auth=("alice", "pw")) as store:
        assert store.graphs() == [G]


@pytest.mark.parametrize("status", [502, 503, 504])
def test_transient_errors_are_retried(proxy: Proxy, status: int) -> None:
    proxy.failures = [status, status]
    with _store(proxy.url, retries=3) as store:
        store.write([Quad(S, P, Literal("x"), G)])
        assert len(proxy.seen) == 3
        proxy.failures = [status] * 4
        with pytest.raises(RemoteStoreError) as caught:
            store.graphs()
    assert caught.value.status == status and "having a moment" in caught.value.server_message
    assert len(proxy.seen) == 3 + 4


def test_client_errors_are_not_retried(proxy: Proxy) -> None:
    proxy.failures = [403]
    with _store(proxy.url, retries=3) as store, pytest.raises(RemoteStoreError) as caught:
        store.write([Quad(S, P, Literal("x"), G)])
    assert caught.value.status == 403 and len(proxy.seen) == 1


def test_an_unreachable_server_is_a_store_error_after_retries() -> None:
    with _store("http://127.0.0.1:1", retries=2) as store, pytest.raises(RemoteStoreError) as c:
        store.query("ASK {}")
    assert c.value.status is None and "3 attempt" in str(c.value)
    assert isinstance(c.value.__cause__, httpx.ConnectError)


def test_server_errors_carry_status_and_message(oxigraph_server: str) -> None:
    with SparqlStore(f"{oxigraph_server}/nowhere", retries=0) as store:
        with pytest.raises(RemoteStoreError) as caught:
            store.query("ASK {}")
    assert caught.value.status == 404 and caught.value.url.endswith("/nowhere")
    assert "HTTP 404" in str(caught.value)


def test_a_read_only_store_refuses_writes(remote_store: SparqlStore, oxigraph_server: str) -> None:
    remote_store.write([Quad(S, P, Literal("x"), G)])
    with SparqlStore(f"{oxigraph_server}/query") as reader:
        assert reader.graphs() == [G]
        for write in (
            lambda: reader.write([Quad(S, P, Literal("y"), G)]),
            lambda: reader.clear(G),
            lambda: reader.load(b"", format="nquads"),
        ):
            with pytest.raises(StoreError, match="read-only"):
                write()


def test_form_posts_work_too(remote_store: SparqlStore, oxigraph_server: str) -> None:
    with _store(oxigraph_server, form_post=True) as store:
        store.write([Quad(S, P, Literal("x"), G), Quad(S, P, Literal("y"), IRI("urn:test:h"))])
        result = store.query(
            "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"s": S}, named_graphs=[G]
        )
        assert isinstance(result, Solutions) and result.rows == [(S, Literal("x"))]


def test_one_update_request_is_one_transaction_on_oxigraph(
    remote_store: SparqlStore, oxigraph_server: str
) -> None:
    """What ``write`` relies on: a request whose second operation fails leaves nothing."""
    update = (
        "INSERT DATA { GRAPH <urn:test:g> { <urn:a> <urn:b> <urn:c> } } ; CLEAR GRAPH <urn:nope>"
    )
    answer = httpx.post(f"{oxigraph_server}/update", data={"update": update})
    assert answer.status_code >= 400
    assert remote_store.graphs() == []


# -- without the Graph Store protocol -----------------------------------------


def test_dump_and_load_without_the_graph_store_protocol(
    remote_store: SparqlStore, oxigraph_server: str
) -> None:
    quads = [Quad(S, P, Literal(f'v{i}\n"ok"'), G) for i in range(20)]
    quads.append(Quad(S, P, IRI("urn:test:o"), IRI("urn:test:h")))
    with SparqlStore(f"{oxigraph_server}/query", f"{oxigraph_server}/update") as store:
        store.write(quads)
        before = store.query("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }")
        dumps = {f: store.dump(format=f) for f in ("trig", "nquads")}
        turtle = store.dump(format="turtle", graph=G)
        for fmt, data in dumps.items():
            for g in store.graphs():
                store.clear(g)
            assert isinstance(data, bytes)
            store.load(data, format=fmt)
            assert store.query("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }") == before
        assert isinstance(turtle, bytes)
        store.load(turtle, format="turtle", graph=IRI("urn:test:copy"))
        copied = store.query("SELECT ?s ?p ?o WHERE { GRAPH <urn:test:copy> { ?s ?p ?o } }")
        assert isinstance(copied, Solutions) and len(copied) == 20
        with pytest.raises(RDFSyntaxError):
            store.load(b'<urn:a> <urn:b> "c" <urn:test:bad> .\n<urn:a> <urn:b', format="nquads")
        assert IRI("urn:test:bad") not in store.graphs()
