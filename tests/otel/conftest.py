"""A real ``trails otlp`` receiver on loopback, and OpenTelemetry SDK tracers exporting to it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from tests.server.conftest import serving

from trails.otel.ingest import Ingestor
from trails.prov import Recorder
from trails.server.logs import mount_logs
from trails.server.traces import receiver_app
from trails.server.write_tokens import WriteTokens
from trails.store import Store


@dataclass
class Receiver:
    url: str
    ingestor: Ingestor
    store: Store

    @property
    def traces(self) -> str:
        return f"{self.url}/v1/traces"


@pytest.fixture
def make_receiver(store: Store) -> Iterator[Callable[..., Receiver]]:
    """Start receivers over the test's store (sealing as configured); stopped at teardown."""
    stack: list[Any] = []

    def start(
        *,
        tokens: WriteTokens | None = None,
        target: Store | None = None,
        idle: float = 300.0,
        log_wait: float = 0.0,
        group_window: float | None = None,
    ) -> Receiver:
        where = target if target is not None else store
        recorder = Recorder.from_settings(store=where)
        ingestor = Ingestor(
            recorder, idle_timeout=idle, log_wait=log_wait, group_window=group_window
        )
        app = receiver_app(ingestor, tokens=tokens, sweep_every=3600)
        mount_logs(app, ingestor, tokens=tokens)  # as `trails otlp` mounts it
        ctx = serving(app)
        url = ctx.__enter__()
        stack.append(ctx)
        return Receiver(url, ingestor, where)

    yield start
    for ctx in reversed(stack):
        ctx.__exit__(None, None, None)


def tracer_provider(
    exporter: SpanExporter, *, batch: bool = False, service: str = "shop-agent"
) -> TracerProvider:
    """A tracer provider of its own (never the global one) sending to ``exporter``."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    return provider
