"""Fixtures for the persistence and replay tests: capabilities and recorded sessions."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from replay_support import BUILDERS, Tools

from trails.agent import Session
from trails.store import Store


@pytest.fixture
def tools() -> Tools:
    t = Tools()
    t.register()
    return t


@pytest.fixture(params=sorted(BUILDERS))
def recorded(request: pytest.FixtureRequest, store: Store, tools: Tools) -> Iterator[Session]:
    """A session of each kind, recorded and persisted into the test store."""
    session = BUILDERS[request.param](store)
    session.persist()
    yield session
