"""On a SPARQL server a recorded session costs one HTTP request per event, its seal included.

The requests are counted where they arrive: a loopback proxy in front of the
real ``oxigraph serve`` forwards each one and notes its method and path.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

from trails.evidence.ledger import ledger_iri, read_seals
from trails.evidence.verify import verify
from trails.kernel import Context, capability, invoke
from trails.prov import Minter, Recorder
from trails.store import Store, open_store
from trails.store.sparql import SparqlStore

pytestmark = pytest.mark.remote


class _Proxy(BaseHTTPRequestHandler):
    upstream = ""
    seen: ClassVar[list[str]] = []

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append(f"{self.command} {self.path.split('?')[0]}")
        headers = {
            k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")
        }
        reply = httpx.request(
            self.command, self.upstream + self.path, content=body, headers=headers, timeout=30
        )
        self.send_response(reply.status_code)
        for k, v in reply.headers.items():
            if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(reply.content)))
        self.end_headers()
        self.wfile.write(reply.content)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def counted(remote_store: Store, oxigraph_server: str) -> Iterator[tuple[SparqlStore, list[str]]]:
    """A store that talks to the test server through the counting proxy."""
    seen: ClassVar[list[str]] = []
    handler = type("Proxy", (_Proxy,), {"upstream": oxigraph_server.rstrip("/"), "seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    store = open_store(f"http://127.0.0.1:{server.server_address[1]}")
    assert isinstance(store, SparqlStore)
    try:
        yield store, seen
    finally:
        store.close()
        server.shutdown()
        server.server_close()


@capability(id="remote.echo")
def echo(text: str) -> str:
    return text


def _session(recorder: Recorder) -> None:
    with Context.open("did:local:alice", recorder=recorder) as ctx:
        for n in range(3):
            invoke("remote.echo", {"text": f"call {n}"}, ctx=ctx)


def test_a_sealed_session_is_one_request_per_event(
    counted: tuple[SparqlStore, list[str]], remote_store: Store
) -> None:
    store, seen = counted
    recorder = Recorder.from_settings(store=store)  # the default wiring: sealed
    events: list[str] = []
    recorder.subscribe(lambda _r, e: events.append(type(e).__name__))
    # the first seal of a process reads the ledger's pointer once, and its first session end
    # looks once for catalogue days that are over and not yet totalled
    _session(recorder)
    first = len(seen)
    assert first == len(events) + 2
    seen.clear()
    events.clear()
    _session(recorder)
    _session(recorder)
    assert events.count("SessionEnded") == 2 and len(events) == 10
    assert len(seen) == len(events)  # one request per event: no read, the seal in the end's write
    assert all(r.startswith("POST") for r in seen)
    seals = read_seals(remote_store, ledger_iri(Minter()))
    assert len(seals) == 3 and len({s.chain for s in seals}) == 1
    report = verify(remote_store)
    assert report.ok and report.graphs_checked == 3, report.findings
