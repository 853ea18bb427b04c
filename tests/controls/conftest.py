"""One store per module: a sampled session that fails a call, and a clean one."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from trails.config import load_settings
from trails.prov.events import SessionEnded, SessionStarted
from trails.prov.recorder import Recorder
from trails.store import Store, open_store
from trails.testing.conformance import record_sample_session

EXAMPLE = Path(__file__).parent / "example"


def record_clean_session(recorder: Recorder) -> str:
    """A session that starts and ends, with nothing in it."""
    session = recorder.minter.session()
    at = datetime(2026, 1, 2, tzinfo=UTC)
    recorder.record(SessionStarted(session=session, principal="did:example:bob", started=at))
    recorder.record(SessionEnded(session=session, ended=at, status="ok"))
    return str(session)


class World:
    def __init__(self, store: Store, recorder: Recorder) -> None:
        self.store = store
        self.recorder = recorder
        self.failing = str(record_sample_session(recorder)["session"])
        self.clean = record_clean_session(recorder)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    store = open_store("memory:")
    settings = load_settings(environ={}, cwd=tmp_path_factory.mktemp("cwd"))
    yield World(store, Recorder.from_settings(settings, store=store))
    store.close()
