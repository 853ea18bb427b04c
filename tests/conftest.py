"""Test-wide fixtures: every test gets its own store, registry and tracker.

- The environment points trails at an in-memory store and forbids real model
  calls (only loopback hosts may be reached by LLM adapters).
- ``store`` / ``recorder`` / ``ctx`` give a fresh in-memory store, a recorder
  over it and an open session context; the process defaults point at them.
- The capability registry and the cost tracker are restored after each test,
  so tests can register capabilities freely.
- Every graph a test leaves in the process default store (the ``store``
  fixture, or the store trails opened by default) must conform to
  ``ontologies/shapes.ttl`` and be read by the ``prov`` package with every
  activity, entity and agent in it, and satisfy the PROV-CONSTRAINTS checks
  of ``trails.testing.prov_constraints``: checked after the test. A test that builds
  non-conforming graphs on purpose says so with
  ``@pytest.mark.allow_nonconforming``.
"""

from __future__ import annotations

import compileall
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.module_times import load as load_module_times
from tests.rewrite_cache import rewrite_once

os.environ["TRAILS_FORBID_REAL_MODELS"] = "1"
os.environ["TRAILS_STORE"] = "memory:"
os.environ.pop("TRAILS_CONFIG", None)
if os.environ.get("PYTEST_XDIST_WORKER"):
    # a pytest-xdist worker is given COLUMNS=80 and LINES=24; a user's piped command is
    # not, and the CLI fits tables to COLUMNS when it is set
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

import trails
import trails.store as _store_module
from trails.errors import StoreError
from trails.kernel import Context, default_tracker, reset_default_context
from trails.kernel import registry as _registry
from trails.prov import Recorder, reset_default_recorder
from trails.store import Store, open_store, set_default_store

pytest_plugins = ["servers"]  # oxigraph_server, remote_store, any_store


def _check_recorded_graphs(request: pytest.FixtureRequest, store: Store | None) -> None:
    if store is None or request.node.get_closest_marker("allow_nonconforming"):
        return
    try:
        recorded = [g for g in store.graphs() if g.startswith("urn:trails:")]
    except StoreError:  # closed by the test
        return
    if recorded:
        from trails.testing import assert_prov_constraints, assert_prov_readable, shacl_report

        conforms, text = shacl_report(store)
        assert conforms, f"graphs recorded by this test do not conform to shapes.ttl:\n{text}"
        assert_prov_readable(store)  # the prov package reads every activity, entity and agent
        assert_prov_constraints(store)  # PROV-CONSTRAINTS: times, unique generation, typing


def _sigint_ignored() -> bool:
    """Whether SIGINT is ignored at the OS level (a child process inherits that)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    return False


@pytest.fixture(autouse=True)
def _ctrl_c_reaches_children() -> None:
    """Tests send Ctrl-C (SIGINT) to the processes they start: a child started while
    SIGINT is ignored in this process would ignore it too, so a long-lived test worker
    that was left ignoring it (by code outside Python's ``signal`` module) is reset."""
    if threading.current_thread() is threading.main_thread() and _sigint_ignored():
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _isolate(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAILS_STORE", "memory:")
    monkeypatch.setenv("TRAILS_FORBID_REAL_MODELS", "1")
    saved = dict(_registry._handlers)
    default_tracker().reset()
    yield
    reset_default_context()
    _check_recorded_graphs(request, _store_module._default)
    reset_default_recorder()
    set_default_store(None)
    _registry._handlers.clear()
    _registry._handlers.update(saved)
    default_tracker().reset()


@pytest.fixture
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """A fresh in-memory store, also made the process default; checked against the shapes."""
    s = open_store("memory:")
    set_default_store(s)
    reset_default_recorder()
    yield s
    try:
        reset_default_context()
        _check_recorded_graphs(request, s)
    finally:
        set_default_store(None)
        s.close()


@pytest.fixture
def recorder(store: Store) -> Recorder:
    return Recorder(store)


@pytest.fixture
def ctx(recorder: Recorder) -> Context:
    """An open session for did:local:alice on the fresh store."""
    return Context.open("did:local:alice", recorder=recorder)


def pytest_configure(config: pytest.Config) -> None:
    """Compile trails' modules, and rewrite the test modules' asserts, once, here.

    The suite starts the ``trails`` command and Python programs as processes hundreds of
    times; with ``PYTHONDONTWRITEBYTECODE`` set (as many CI images do) each of them would
    compile every module it imports again. Reading bytecode is allowed, so it is written
    here, once, beside the sources.
    """
    if hasattr(config, "workerinput"):
        return
    if sys.flags.dont_write_bytecode:
        compileall.compile_dir(Path(trails.__file__).parent, quiet=1)
    rewrite_once(config, Path(__file__).parent)  # before the workers collect (rewrite_cache.py)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers per core the process may use (at most 16).

    Much of the suite waits rather than computes (servers and browsers starting,
    subprocesses, sockets), so one worker per core leaves the cores idle about a third of
    the time; two per core keep them busy.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(2, min(2 * (cores or 1), 16))


#: folders whose tests drive real servers or a real browser end to end
_END_TO_END = {"console", "mcp_bridge", "mcp_serve"}
_SERVER_FIXTURES = {"oxigraph_server", "virtuoso_server", "remote_store", "virtuoso_store"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the end-to-end tests (real servers, browsers, slow subprocess runs) ``e2e``.

    They stay in the suite; ``-m "not e2e"`` leaves them out of a quick inner loop.
    A test grading a row of the seeds' table (``@pytest.mark.seed_row``) carries the row in its
    report, so ``tests/seed_rows/table.py`` reads it from any worker.
    """
    for item in items:
        for mark in item.iter_markers("seed_row"):
            item.user_properties.append(
                ("seed_row", [mark.args[0], mark.kwargs.get("differs"), mark.kwargs.get("missing")])
            )
        names = set(getattr(item, "fixturenames", ()))
        if (
            _END_TO_END & set(item.path.parts)
            or names & _SERVER_FIXTURES
            or item.get_closest_marker("remote")
            or item.get_closest_marker("slow")
        ):
            item.add_marker(pytest.mark.e2e)
    _longest_modules_first(config, items)


def _longest_modules_first(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Hand out the modules that took longest first (``tests/module_times.py``), each
    module's tests together and in their order, so no worker starts a long one last."""
    times = load_module_times()
    root = config.rootpath

    def seconds(item: pytest.Item) -> float:
        try:
            return times.get(item.path.relative_to(root).as_posix(), 0.0)
        except ValueError:
            return 0.0

    items.sort(key=lambda item: -seconds(item))  # stable: collection order within a module
