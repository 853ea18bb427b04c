"""Trails' own runs out as OpenTelemetry spans, through the OpenTelemetry SDK, as they are recorded.

``install(recorder, settings)`` subscribes a ``SpanEmitter`` to the recorder
(a recorder plugin: ``[prov] recorder_plugins = [..., "trails.otel.exporter:install"]``,
or call it yourself). Each recorded event that completes an activity becomes a
span (``trails.otel.spans``) handed to a ``BatchSpanProcessor`` in front of the
SDK's ``OTLPSpanExporter`` (http/protobuf), so dashboards (Jaeger, Phoenix,
Langfuse ...) keep working while trails keeps the evidence.

A batch processor sends on a timer from a daemon thread, so a process that ends
first would lose its last batch, which holds the session's root span (emitted
last). The emitter therefore flushes when a session's root span ends, and
``install`` shuts the export down at interpreter exit; both wait at most
``[otel] flush_timeout`` seconds (default 5), so an unreachable collector
delays a session's end or the exit by that much and never hangs them. The endpoint is
``[otel] endpoint`` (a full ``.../v1/traces`` URL), else the standard
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``,
headers and timeout variables, which the SDK reads itself.

Each recorded control finding also goes out as one OTel log record
(``trails.otel.findings``), to the logs endpoint beside the traces one.

Exporting never changes what is recorded: the emitter runs after the write,
and the recorder logs and ignores a listener that fails.
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.trace import SpanKind

from trails.config import Settings
from trails.errors import ConfigError
from trails.otel.spans import SpanData, input_messages, output_messages, readable_span
from trails.prov.events import (
    CapabilityInvoked,
    Event,
    LLMCompleted,
    PlanRunEnded,
    PlanRunStarted,
    SessionEnded,
    SessionStarted,
)
from trails.prov.recorder import Recorder

__all__ = ["FLUSH_TIMEOUT", "SpanEmitter", "install"]

FLUSH_TIMEOUT = 5.0
"""Seconds a session end or the interpreter's exit waits for spans to be sent, by default."""

_log = logging.getLogger("trails.otel.exporter")

_MEMORY_OPERATIONS = {
    "MemoryLearned": "create_memory",
    "MemoryRecalled": "search_memory",
    "MemoryForgotten": "delete_memory",
}


@dataclass
class _Open:
    started: datetime
    principal: str
    label: str = ""
    parent: str | None = None
    strategy: str = ""
    goal: str = ""


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _bounded(step: Callable[[], object], seconds: float) -> bool:
    """Run ``step`` in a daemon thread and wait at most ``seconds``: True if it finished.

    The SDK's ``force_flush`` ignores its timeout and ``shutdown`` waits up to 30 s,
    so the bound is kept here; a step still running is left to its daemon thread.
    """
    worker = threading.Thread(target=step, name="trails-otel-flush", daemon=True)
    worker.start()
    worker.join(seconds)
    return not worker.is_alive()


class SpanEmitter:
    """A recorder listener that emits each finished activity as a span.

    Args:
        processor: where spans go (a ``BatchSpanProcessor`` in front of an exporter).
        resource: the OTel resource (``service.name`` ...) of the spans.
        content: send prompts, completions, arguments and results (the GenAI
            conventions' opt-in content); default: when the recorder records them.
        flush_timeout: seconds to wait for the session's spans to be sent when its
            root span ends, and for the export to shut down (``shutdown``).
    """

    def __init__(
        self,
        processor: SpanProcessor,
        *,
        resource: Resource | None = None,
        content: bool | None = None,
        flush_timeout: float = FLUSH_TIMEOUT,
    ) -> None:
        self.processor = processor
        self.resource = resource or Resource.create({"service.name": "trails"})
        self.content = content
        self.flush_timeout = flush_timeout
        self._closed = False
        self._lock = threading.Lock()
        self._sessions: dict[str, _Open] = {}
        self._runs: dict[str, _Open] = {}

    def __call__(self, recorder: Recorder, event: Event) -> None:
        data = self.span_data(
            event, content=self.content if self.content is not None else recorder.content == "full"
        )
        if data is None or self._closed:
            return
        self.processor.on_end(readable_span(data, self.resource))
        if isinstance(event, SessionEnded):
            self.flush()

    def flush(self) -> bool:
        """Send the spans waiting in the processor, waiting at most ``flush_timeout``.

        Returns:
            True if they were handed to the exporter in time.
        """
        flushed = _bounded(self.processor.force_flush, self.flush_timeout)
        if not flushed:
            _log.warning("spans not sent within %s s; they are sent later", self.flush_timeout)
        return flushed

    def shutdown(self) -> bool:
        """Send what is waiting and stop the export, waiting at most ``flush_timeout``.

        Called at interpreter exit by ``install``; later events are not exported.

        Returns:
            True if the processor shut down in time.
        """
        if self._closed:
            return True
        self._closed = True
        atexit.unregister(self.shutdown)
        done = _bounded(self.processor.shutdown, self.flush_timeout)
        if not done:
            _log.warning("the span export did not stop within %s s", self.flush_timeout)
        return done

    def _common(self, session: str, principal: str | None) -> dict[str, Any]:
        return {
            "gen_ai.conversation.id": session.rsplit(":", 1)[-1] if ":" in session else session,
            "trails.session": session,
            "enduser.id": principal,
        }

    def _parent(self, session: str, parent: str | None, attrs: dict[str, Any]) -> str:
        if parent:
            return parent
        attrs["trails.parent"] = "session"
        return session

    def span_data(self, event: Event, *, content: bool = True) -> SpanData | None:
        """The span an event completes, or None (starts are remembered until their end)."""
        with self._lock:
            return self._span_data(event, content)

    def _span_data(self, event: Event, content: bool) -> SpanData | None:
        s = event.session
        if isinstance(event, SessionStarted):
            label = (
                event.label or f"session {s.rsplit('session:', 1)[-1]}"
            )  # as the recorder labels it
            self._sessions[s] = _Open(event.started, event.principal, label)
            return None
        if isinstance(event, PlanRunStarted):
            self._runs[event.activity] = _Open(
                event.started,
                event.principal,
                parent=event.parent,
                strategy=event.strategy,
                goal=event.goal,
            )
            return None
        if isinstance(event, SessionEnded):
            opened = self._sessions.pop(s, None)
            attrs = self._common(s, opened.principal if opened else None)
            attrs.update({"trails.kind": "session", "gen_ai.operation.name": "invoke_workflow"})
            return SpanData(
                s,
                s,
                opened.label if opened else "session",
                opened.started if opened else event.ended,
                event.ended,
                None,
                attrs,
                error="session ended with an error" if event.status == "error" else None,
            )
        if isinstance(event, PlanRunEnded):
            run = self._runs.pop(event.activity, None)
            if run is None:
                return None
            attrs = self._common(s, run.principal)
            parent = run.parent if run.parent and run.parent != s else None
            attrs.update(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": run.strategy,
                    "gen_ai.agent.description": run.goal,
                    "trails.strategy": run.strategy,
                }
            )
            return SpanData(
                s,
                event.activity,
                f"invoke_agent {run.strategy}",
                run.started,
                event.ended,
                self._parent(s, parent, attrs),
                attrs,
                error=(event.error or "the run failed") if event.stop_reason == "error" else None,
            )
        if isinstance(event, LLMCompleted):
            attrs = self._common(s, event.principal)
            attrs.update(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": event.provider,
                    "gen_ai.request.model": event.model,
                    "gen_ai.response.model": event.model,
                    "gen_ai.response.id": event.request_id,
                    "gen_ai.request.max_tokens": event.params.get("max_tokens"),
                    "gen_ai.request.temperature": event.params.get("temperature"),
                    "gen_ai.usage.input_tokens": event.input_tokens
                    + event.cache_read_tokens
                    + event.cache_write_tokens,
                    "gen_ai.usage.output_tokens": event.output_tokens,
                    "gen_ai.usage.cache_read.input_tokens": event.cache_read_tokens,
                    "gen_ai.usage.cache_creation.input_tokens": event.cache_write_tokens,
                    "trails.request_hash": event.request_hash,
                }
            )
            if content:
                attrs["gen_ai.input.messages"] = input_messages(event.messages)
                if event.text is not None:
                    attrs["gen_ai.output.messages"] = output_messages(event.text)
            return SpanData(
                s,
                event.activity,
                f"chat {event.model}",
                event.started,
                event.ended,
                self._parent(s, event.parent, attrs),
                attrs,
                error=(event.error or "the completion failed") if event.status != "ok" else None,
                kind=SpanKind.CLIENT,
            )
        if isinstance(event, CapabilityInvoked):
            attrs = self._common(s, event.principal)
            attrs.update(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": event.capability_id,
                    "gen_ai.tool.description": event.description or None,
                }
            )
            if content:
                attrs["gen_ai.tool.call.arguments"] = _json(event.inputs)
                if event.status == "ok":
                    attrs["gen_ai.tool.call.result"] = _json(event.output)
            return SpanData(
                s,
                event.activity,
                f"execute_tool {event.capability_id}",
                event.started,
                event.ended,
                self._parent(s, event.parent, attrs),
                attrs,
                error=(event.error or event.status) if event.status != "ok" else None,
            )
        operation = _MEMORY_OPERATIONS.get(type(event).__name__)
        if operation is not None:
            started = getattr(event, "started", None) or getattr(event, "at")  # noqa: B009
            ended = getattr(event, "ended", None) or started
            attrs = self._common(s, getattr(event, "agent_did", None))
            attrs["gen_ai.operation.name"] = operation
            attrs["gen_ai.memory.query"] = getattr(event, "query", None)
            activity = str(getattr(event, "activity"))  # noqa: B009
            return SpanData(
                s,
                activity,
                operation,
                started,
                ended,
                self._parent(s, getattr(event, "parent", None), attrs),
                attrs,
            )
        return None


def install(recorder: Recorder, settings: Settings) -> SpanEmitter:
    """Subscribe a span emitter exporting to the configured OTLP endpoint (a recorder plugin).

    Args:
        recorder: the recorder whose events to export.
        settings: ``[otel] endpoint`` / ``service_name`` / ``content`` /
            ``flush_timeout``; without an endpoint the ``OTEL_EXPORTER_OTLP_*``
            variables decide.

    Returns:
        The emitter, shut down at interpreter exit (or call its ``shutdown``).

    Raises:
        ConfigError: ``[otel] flush_timeout`` is not a non-negative number of seconds.
    """
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    section = settings.section("otel")
    endpoint = section.get("endpoint")
    exporter = OTLPSpanExporter(endpoint=str(endpoint) if endpoint else None)
    content = section.get("content")
    timeout = section.get("flush_timeout", FLUSH_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
        raise ConfigError(
            f"[otel] flush_timeout must be a non-negative number of seconds, not {timeout!r}"
        )
    emitter = SpanEmitter(
        BatchSpanProcessor(exporter),
        resource=Resource.create({"service.name": str(section.get("service_name", "trails"))}),
        content=bool(content) if content is not None else None,
        flush_timeout=float(timeout),
    )
    recorder.subscribe(emitter)
    atexit.register(emitter.shutdown)
    _install_finding_logs(recorder, emitter.resource, str(endpoint) if endpoint else None)
    return emitter


def _install_finding_logs(recorder: Recorder, resource: Resource, endpoint: str | None) -> None:
    """One OTel log record per control finding (``trails.otel.findings``), to the logs
    endpoint beside the traces one."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    from trails.otel.findings import FindingLogger, logs_endpoint

    logger = FindingLogger(
        BatchLogRecordProcessor(OTLPLogExporter(endpoint=logs_endpoint(endpoint))),
        resource=resource,
    )
    recorder.subscribe(logger)
    atexit.register(logger.shutdown)
