"""Fixtures for the LLM tests: a loopback fake provider server and a fast retry policy."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from llm_fakes import FakeServer, Sleeps

from trails.llm import RetryPolicy


@pytest.fixture
def server() -> Iterator[FakeServer]:
    s = FakeServer()
    yield s
    s.close()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def fast_retry(sleeps: Sleeps) -> RetryPolicy:
    """Two retries, millisecond backoff, no real waiting (delays go to ``sleeps``)."""
    return RetryPolicy(
        max_retries=2,
        base_delay=0.001,
        max_delay=5.0,
        jitter=0.0,
        sleep=sleeps,
        rand=random.Random(0),
    )
