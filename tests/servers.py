"""Real SPARQL servers for the test suite, and fixtures that run a test on every store backend.

A pytest plugin (loaded by ``pytest_plugins`` in ``tests/conftest.py``). The
remote store is tested against a real ``oxigraph serve`` process (the
``oxigraph`` package from PyPI), started once per test session on a free
loopback port and stopped at the end; each test that uses it starts from an
empty server, because the fixtures drop everything a test wrote.

Fixtures:

- ``oxigraph_server``: session-scoped; the server's base URL
  (``http://127.0.0.1:PORT``, with ``/query``, ``/update`` and ``/store``).
- ``remote_store``: a ``SparqlStore`` on that server, made the process default
  store like ``store``; emptied and closed after the test.
- ``any_store``: parametrised over ``["embedded", "remote"]``: a fresh
  in-memory ``OxigraphStore`` or the ``remote_store``. A test that takes it
  runs twice, with the same expectations on both backends; the remote run
  carries the ``remote`` marker (``-m "not remote"`` deselects it). As with
  ``store``, it is the process default while the test runs, and graphs the
  test recorded are checked against ``ontologies/shapes.ttl`` afterwards
  (``@pytest.mark.allow_nonconforming`` to opt out).

Use in any room's tests::

    def test_sessions_are_listed(any_store: Store) -> None:
        recorder = Recorder(any_store)
        ctx = Context.open("did:local:alice", recorder=recorder)
        ...
        assert get_query("sessions").run(any_store)

``OxigraphServer`` starts more servers when a test needs its own (restarts,
failure injection).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from trails.errors import StoreError
from trails.kernel import reset_default_context
from trails.prov import reset_default_recorder
from trails.store import Store, open_store, set_default_store
from trails.store.sparql import SparqlStore

__all__ = ["OxigraphServer", "any_store", "free_port", "oxigraph_server", "remote_store", "wipe"]


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _oxigraph_command() -> str:
    beside = Path(sys.executable).with_name("oxigraph")
    found = str(beside) if beside.exists() else shutil.which("oxigraph")
    if not found:
        raise RuntimeError("the oxigraph server is missing: pip install -e '.[test]' installs it")
    return found


class OxigraphServer:
    """One ``oxigraph serve`` process on a free loopback port.

    Args:
        location: the directory it persists into.
    """

    def __init__(self, location: Path) -> None:
        self.location = location
        self.url = ""
        self.log = location.with_suffix(".log")
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, *, attempts: int = 3) -> str:
        """Start the server and wait until it answers; returns its base URL."""
        for _ in range(attempts):
            port = free_port()
            with self.log.open("ab") as log:
                self._process = subprocess.Popen(
                    [_oxigraph_command(), "serve", "--location", str(self.location),
                     "--bind", f"127.0.0.1:{port}"],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                )  # fmt: skip
            self.url = f"http://127.0.0.1:{port}"
            if self._wait_ready():
                return self.url
            self.stop()  # most likely the port was taken in between: try another
        raise RuntimeError(f"oxigraph serve did not start; its log:\n{self.log.read_text()}")

    def _wait_ready(self) -> bool:
        assert self._process is not None
        for _ in range(300):  # about 15 s at most
            if self._process.poll() is not None:
                return False
            try:
                answer = httpx.get(f"{self.url}/query", params={"query": "ASK {}"}, timeout=1.0)
                if answer.status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        """Stop the process (politely, then not)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def wipe(url: str) -> None:
    """Drop every graph (and the default graph's triples) of the server at ``url``."""
    answer = httpx.post(
        f"{url}/update",
        content=b"DROP SILENT ALL",
        headers={"Content-Type": "application/sparql-update"},
        timeout=30.0,
    )
    answer.raise_for_status()


@pytest.fixture(scope="session")
def oxigraph_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a real ``oxigraph serve`` for the whole test session."""
    server = OxigraphServer(tmp_path_factory.mktemp("oxigraph") / "db")
    url = server.start()
    try:
        yield url
    finally:
        server.stop()


def _check_shapes(request: pytest.FixtureRequest, store: Store) -> None:
    if request.node.get_closest_marker("allow_nonconforming"):
        return
    try:
        recorded = [g for g in store.graphs() if g.startswith("urn:trails:")]
    except StoreError:  # closed by the test
        return
    if not recorded:
        return
    from trails.testing import shacl_report

    conforms, text = shacl_report(store)
    assert conforms, f"graphs recorded by this test do not conform to shapes.ttl:\n{text}"


def _use(request: pytest.FixtureRequest, store: Store) -> Iterator[Store]:
    """Make ``store`` the process default for one test, then check and release it."""
    set_default_store(store)
    reset_default_recorder()
    try:
        yield store
        reset_default_context()
        _check_shapes(request, store)
    finally:
        set_default_store(None)


@pytest.fixture
def remote_store(request: pytest.FixtureRequest, oxigraph_server: str) -> Iterator[SparqlStore]:
    """A ``SparqlStore`` on the session's server, empty at the start and emptied after."""
    wipe(oxigraph_server)
    store = open_store(oxigraph_server)
    assert isinstance(store, SparqlStore)
    try:
        yield from _use(request, store)  # type: ignore[misc]
    finally:
        store.close()
        wipe(oxigraph_server)


@pytest.fixture(params=["embedded", pytest.param("remote", marks=pytest.mark.remote)])
def any_store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """The same test on the embedded store and on the remote one (see the module docstring)."""
    if request.param == "embedded":
        store = open_store("memory:")
        try:
            yield from _use(request, store)
        finally:
            store.close()
    else:
        yield request.getfixturevalue("remote_store")
