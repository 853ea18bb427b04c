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

Virtuoso (Debian's ``virtuoso-opensource``) is the second real server: when
``virtuoso-t`` is installed, ``virtuoso_server`` starts one private instance
per session (its own ``virtuoso.ini`` in a temporary directory, loopback
ports, small buffers), grants SPARQL update to the ``SPARQL`` user and stops
it at the end; ``virtuoso_store`` is a ``SparqlStore`` on its single
``/sparql`` endpoint (form posts, no Graph Store protocol). The contract
suite (``tests/store/``) runs on ``BACKENDS``, all three stores; the
Virtuoso runs carry the ``virtuoso`` marker and are skipped, with the install
command as the reason, when ``virtuoso-t`` is missing. Virtuoso holds graphs of
its own (metadata, visible to queries as ordinary graphs); the private instance
drops them at start (``own_graphs`` remembers them), and the fixtures drop
every graph before and after each test, so each test starts from an empty
server and no state leaks from one test into the next.
"""

from __future__ import annotations

import os
import shutil
import signal
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
from trails.store import IRI, Store, open_store, set_default_store
from trails.store.sparql import SparqlStore

__all__ = [
    "BACKENDS",
    "VIRTUOSO_INSTALL",
    "OxigraphServer",
    "VirtuosoServer",
    "any_store",
    "backend_store",
    "free_port",
    "oxigraph_server",
    "remote_store",
    "virtuoso_server",
    "virtuoso_store",
    "wipe",
]


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
        options: more options for ``oxigraph serve`` (``--union-default-graph`` ...).
    """

    def __init__(self, location: Path, *options: str) -> None:
        self.location = location
        self.options = options
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
                     "--bind", f"127.0.0.1:{port}", *self.options],
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


VIRTUOSO_INSTALL = (
    "apt-get install virtuoso-opensource "
    "(the Virtuoso runs are skipped without virtuoso-t; CI installs it)"
)
# A private instance: loopback ports, files in its own directory, small buffers
# (it starts in a few seconds on two cores), no query time or row limits (a
# limit would truncate answers silently instead of failing).
_VIRTUOSO_INI = """\
[Database]
DatabaseFile = {dir}/virtuoso.db
ErrorLogFile = {dir}/virtuoso.log
LockFile = {dir}/virtuoso.lck
TransactionFile = {dir}/virtuoso.trx
xa_persistent_file = {dir}/virtuoso.pxa
ErrorLogLevel = 7
FileExtend = 200
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = {dir}/virtuoso-temp.db
TransactionFile = {dir}/virtuoso-temp.trx
Striping = 0

[Parameters]
ServerPort = 127.0.0.1:{sql_port}
DisableUnixSocket = 1
MaxClientConnections = 8
CheckpointInterval = 0
CaseMode = 2
DirsAllowed = {dir}
NumberOfBuffers = 2000
MaxDirtyBuffers = 1500
MaxQueryMem = 64M
ThreadsPerQuery = 2
AsyncQueueMaxThreads = 4

[HTTPServer]
ServerPort = 127.0.0.1:{http_port}
ServerRoot = {dir}
MaxClientConnections = 8
ServerThreads = 8
EnabledDavVSP = 0
Charset = UTF-8

[SPARQL]
ResultSetMaxRows = {max_rows}
MaxQueryCostEstimationTime = 0
MaxQueryExecutionTime = 0
"""
# What /sparql needs before it takes SPARQL Update from anonymous clients.
_VIRTUOSO_SETUP = 'GRANT SPARQL_UPDATE TO "SPARQL";'


def virtuoso_installed() -> bool:
    """Whether ``virtuoso-t`` (Debian's ``virtuoso-opensource``) is on the PATH."""
    return shutil.which("virtuoso-t") is not None


def _isql_command() -> str:
    found = shutil.which("isql-vt") or shutil.which("isql")
    if not found:
        raise RuntimeError(f"Virtuoso's isql is missing: {VIRTUOSO_INSTALL}")
    return found


class VirtuosoServer:
    """One private ``virtuoso-t`` process with its own ``virtuoso.ini``, on loopback ports.

    Args:
        directory: where the ini, the database and the logs go.
        max_rows: the most rows (triples, for a CONSTRUCT) it answers a query with
            (``ResultSetMaxRows``; none to speak of by default, 10,000 in a stock install).

    Attributes:
        url: the single SPARQL endpoint (``http://127.0.0.1:PORT/sparql``) once started.
        own_graphs: the graphs Virtuoso held of its own at start (then dropped).
    """

    def __init__(self, directory: Path, *, max_rows: int = 10_000_000) -> None:
        self.directory = directory
        self.max_rows = max_rows
        self.url = ""
        self.sql_port = 0
        self.own_graphs: frozenset[IRI] = frozenset()
        self.log = directory / "process.log"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, *, attempts: int = 3) -> str:
        """Start the server, wait for ``/sparql``, allow SPARQL Update; returns the endpoint."""
        command = shutil.which("virtuoso-t")
        if command is None:
            raise RuntimeError(f"virtuoso-t is missing: {VIRTUOSO_INSTALL}")
        self.directory.mkdir(parents=True, exist_ok=True)
        for _ in range(attempts):
            self.sql_port, http_port = free_port(), free_port()
            if self.sql_port == http_port:
                continue
            ini = self.directory / "virtuoso.ini"
            ini.write_text(
                _VIRTUOSO_INI.format(
                    dir=self.directory,
                    sql_port=self.sql_port,
                    http_port=http_port,
                    max_rows=self.max_rows,
                )
            )
            with self.log.open("ab") as log:
                self._process = subprocess.Popen(
                    [command, "-c", str(ini), "+foreground"],
                    cwd=self.directory, stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True,  # its own process group
                )  # fmt: skip
            self.url = f"http://127.0.0.1:{http_port}/sparql"
            if self._wait_ready() and self._setup():
                self._drop_own_graphs()
                return self.url
            self.stop()  # most likely a port was taken in between: try others
        logs = [self.log, self.directory / "virtuoso.log"]
        text = "\n".join(f.read_text(errors="replace") for f in logs if f.exists())
        raise RuntimeError(f"virtuoso-t did not start; its logs:\n{text}")

    def _wait_ready(self) -> bool:
        assert self._process is not None
        for _ in range(1200):  # about 60 s at most
            if self._process.poll() is not None:
                return False
            try:
                answer = httpx.get(self.url, params={"query": "ASK {}"}, timeout=2.0)
                if answer.status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        return False

    def _setup(self) -> bool:
        """Grant SPARQL Update through ``isql`` (the SQL port may come up after HTTP)."""
        command = [_isql_command(), f"127.0.0.1:{self.sql_port}", "dba", "dba",
                   f"exec={_VIRTUOSO_SETUP}"]  # fmt: skip
        for _ in range(100):
            done = subprocess.run(
                command, capture_output=True, stdin=subprocess.DEVNULL, check=False
            )
            output = (done.stdout + done.stderr).decode(errors="replace")
            if done.returncode == 0 and "Error" not in output:
                return True
            time.sleep(0.1)
        with self.log.open("a") as log:
            log.write(f"isql setup failed: {output}\n")
        return False

    def stop(self) -> None:
        """Stop the whole process group (politely, then not); nothing is left running."""
        process, self._process = self._process, None
        if process is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=30)
                break
            except subprocess.TimeoutExpired:
                continue
        process.wait()

    def _drop_own_graphs(self) -> None:
        """Start the tests from an empty server, as on Oxigraph.

        A fresh Virtuoso holds graphs of its own (its quad-map metadata, a
        service description, the LDP vocabulary), visible to every query as
        graphs of the store. They are remembered in ``own_graphs`` and dropped
        from this private instance: its SPARQL compiler keeps the metadata it
        loaded at start, and the instance is never restarted.
        """
        self.own_graphs = frozenset(self.wipe())

    def wipe(self) -> list[IRI]:
        """Drop every graph; returns the graphs that were there."""
        with SparqlStore(self.url, self.url, form_post=True) as store:
            graphs = store.graphs()
            for graph in graphs:
                store.clear(graph)
            left = store.graphs()
        if left:
            raise RuntimeError(f"Virtuoso kept graphs after DROP GRAPH: {left}")
        return graphs


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
    from trails.testing import assert_prov_constraints, shacl_report

    conforms, text = shacl_report(store)
    assert conforms, f"graphs recorded by this test do not conform to shapes.ttl:\n{text}"
    assert_prov_constraints(store)


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
    yield from backend_store(request, request.param)


@pytest.fixture(scope="session")
def virtuoso_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VirtuosoServer]:
    """A private Virtuoso for the whole test session (skipped when it is not installed)."""
    if not virtuoso_installed():
        pytest.skip(f"virtuoso-t is not installed: {VIRTUOSO_INSTALL}")
    server = VirtuosoServer(tmp_path_factory.mktemp("virtuoso"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def virtuoso_store(
    request: pytest.FixtureRequest, virtuoso_server: VirtuosoServer
) -> Iterator[SparqlStore]:
    """A ``SparqlStore`` on the session's Virtuoso: one ``/sparql`` endpoint, form posts,
    no Graph Store protocol; empty at the start and emptied after."""
    virtuoso_server.wipe()
    store = SparqlStore(virtuoso_server.url, virtuoso_server.url, None, form_post=True)
    try:
        yield from _use(request, store)  # type: ignore[misc]
    finally:
        store.close()
        virtuoso_server.wipe()


BACKENDS = [
    "embedded",
    pytest.param("remote", marks=pytest.mark.remote),
    pytest.param(
        "virtuoso",
        marks=[
            pytest.mark.remote,
            pytest.mark.virtuoso,
            pytest.mark.skipif(
                not virtuoso_installed(), reason=f"virtuoso-t is not installed: {VIRTUOSO_INSTALL}"
            ),
        ],
    ),
]
"""Every store backend: embedded, ``oxigraph serve`` and Virtuoso (when installed)."""


def backend_store(request: pytest.FixtureRequest, backend: str) -> Iterator[Store]:
    """The store for one of ``BACKENDS``, made the process default for the test."""
    if backend == "embedded":
        store = open_store("memory:")
        try:
            yield from _use(request, store)
        finally:
            store.close()
    elif backend == "remote":
        yield request.getfixturevalue("remote_store")
    elif backend == "virtuoso":
        yield request.getfixturevalue("virtuoso_store")
    else:
        raise ValueError(f"unknown store backend {backend!r}")
