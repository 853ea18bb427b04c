"""Test-wide fixtures: every test gets its own store, registry and tracker.

- The environment points trails at an in-memory store and forbids real model
  calls (only loopback hosts may be reached by LLM adapters).
- ``store`` / ``recorder`` / ``ctx`` give a fresh in-memory store, a recorder
  over it and an open session context; the process defaults point at them.
- The capability registry and the cost tracker are restored after each test,
  so tests can register capabilities freely.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ["TRAILS_FORBID_REAL_MODELS"] = "1"
os.environ["TRAILS_STORE"] = "memory:"
os.environ.pop("TRAILS_CONFIG", None)

from trails.kernel import Context, default_tracker, reset_default_context
from trails.kernel import registry as _registry
from trails.prov import Recorder, reset_default_recorder
from trails.store import Store, open_store, set_default_store


@pytest.fixture(autouse=True)
def _isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAILS_STORE", "memory:")
    monkeypatch.setenv("TRAILS_FORBID_REAL_MODELS", "1")
    saved = dict(_registry._handlers)
    default_tracker().reset()
    yield
    reset_default_context()
    reset_default_recorder()
    set_default_store(None)
    _registry._handlers.clear()
    _registry._handlers.update(saved)
    default_tracker().reset()


@pytest.fixture
def store() -> Iterator[Store]:
    """A fresh in-memory store, also made the process default."""
    s = open_store("memory:")
    set_default_store(s)
    reset_default_recorder()
    yield s
    set_default_store(None)
    s.close()


@pytest.fixture
def recorder(store: Store) -> Recorder:
    return Recorder(store)


@pytest.fixture
def ctx(recorder: Recorder) -> Context:
    """An open session for did:local:alice on the fresh store."""
    return Context.open("did:local:alice", recorder=recorder)
