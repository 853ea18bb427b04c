"""One received span -> the trails event that records it (the table in ``docs/otel.md``).

``span_event`` decides from the span's ``Reading`` (``trails.otel.conventions``):

- inference spans (chat, text_completion, generate_content, embeddings) ->
  ``SpanCompletion``, a ``trails:LLMCompletion`` with its prompt and, when the
  span carried content, its completion; cost from trails' model catalogue
  when the model is listed (unknown stays unknown);
- tool spans (execute_tool) -> ``SpanInvocation``, a
  ``trails:CapabilityInvocation`` of the tool as capability;
- agent spans (invoke_agent, create_agent, invoke_workflow) -> ``SpanAgentRun``,
  a plan run;
- memory spans (create/update/search/delete_memory, retrieval) ->
  ``SpanMemoryOperation``;
- anything else -> ``SpanActivity`` (``trails:TraceSpan``).

The session, the principal, the parent activity and the requesting completion
are decided by the ingester, which sees the whole batch and the store.

Instrumentations put the end user (``enduser.id``) on the span that starts the
work, the agent or request span, not on each completion and tool call under
it. ``EndUsers`` remembers, per trace, each span's parent and the end user it
names, so a span without one acts for its nearest ancestor's, within a batch
and across the batches of a trace. Spans can arrive before their parent: the
ones recorded without an end user are kept until their trace's session ends,
and when an ancestor naming one arrives their principal is rewritten
(``EndUsers.adopted``) in the same write as the ancestor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from trails.llm.cache import request_hash, request_params
from trails.llm.catalogue import Catalogue
from trails.otel.conventions import Reading
from trails.otel.events import (
    SpanActivity,
    SpanAgentRun,
    SpanCompletion,
    SpanIdentity,
    SpanInvocation,
    SpanMemoryOperation,
    span_activity,
)
from trails.otel.logs import LOG_MARK
from trails.otel.otlp import Span

__all__ = ["EndUsers", "span_event", "span_record"]


@dataclass
class _Trace:
    session: str
    parents: dict[str, str | None] = field(default_factory=dict)
    named: dict[str, str] = field(default_factory=dict)
    waiting: dict[str, SpanIdentity] = field(default_factory=dict)


class EndUsers:
    """Who each span of a trace acts for: the end user it names, else its nearest ancestor's.

    The ingester calls ``note`` for every span of a batch before mapping any,
    asks ``of`` for each span's end user, ``wait`` with the events recorded
    without one, and ``adopted`` for the events to rewrite now that an
    ancestor named one; ``forget`` drops a session's traces when it ends.
    """

    def __init__(self) -> None:
        self._traces: dict[str, _Trace] = {}

    def note(
        self, session: str, trace_id: str, span_id: str, parent_id: str | None, user: str | None
    ) -> None:
        """Remember a span's parent and the end user it names (None: it names none)."""
        trace = self._traces.setdefault(trace_id, _Trace(session))
        trace.parents[span_id] = parent_id
        if user:
            trace.named[span_id] = user

    def of(self, trace_id: str, span_id: str) -> str | None:
        """The end user of the span or of its nearest ancestor naming one (None: nobody yet)."""
        trace = self._traces.get(trace_id)
        seen: set[str] = set()
        current: str | None = span_id
        while trace is not None and current is not None and current not in seen:
            if current in trace.named:
                return trace.named[current]
            seen.add(current)
            current = trace.parents.get(current)
        return None

    def wait(self, event: SpanIdentity) -> None:
        """Keep an event recorded without an end user, in case an ancestor names one later."""
        self._traces[event.trace_id].waiting[event.span_id] = event

    def adopted(self, trace_id: str) -> list[tuple[SpanIdentity, SpanIdentity]]:
        """The waiting events of a trace that now have an end user: (as recorded, as it is now).

        They stop waiting; the caller rewrites them.
        """
        trace = self._traces.get(trace_id)
        if trace is None:
            return []
        out = []
        for span_id, event in list(trace.waiting.items()):
            user = self.of(trace_id, span_id)
            if user is not None:
                del trace.waiting[span_id]
                out.append((event, event.model_copy(update={"principal": user})))
        return out

    def replace(self, event: SpanIdentity) -> None:
        """Keep ``event`` instead of the one waiting for the same span, if one waits."""
        trace = self._traces.get(event.trace_id)
        if trace is not None and event.span_id in trace.waiting:
            trace.waiting[event.span_id] = event

    def forget(self, session: str) -> None:
        """Drop what is kept of the traces of an ended session."""
        for trace_id in [t for t, trace in self._traces.items() if trace.session == session]:
            del self._traces[trace_id]


def _hash(reading: Reading, model: str, messages: list[dict[str, Any]]) -> str:
    """The replay key: trails' request defaults stand in for absent params here, and only here.

    ``ReplayLLM`` hashes a request with its max_tokens and temperature, so the key
    needs them; the prompt's recorded ``params`` keep what the span said, nothing more.
    """
    params = request_params(
        reading.max_tokens if reading.max_tokens is not None else 1024,
        reading.temperature if reading.temperature is not None else 0.0,
        reading.stop,
    )
    return request_hash(model, messages, params)


def _plain(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def span_record(span: Span) -> dict[str, Any]:
    """The span as it was sent, for its ``trails:SpanRecord`` (events from log records left out)."""
    return {
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "parent_id": span.parent_id,
        "name": span.name,
        "kind": span.kind,
        "start": span.start.isoformat(),
        "end": span.end.isoformat(),
        "status": span.status,
        "status_message": span.status_message,
        "attributes": _plain(span.attributes),
        "events": [
            {"name": e.name, "time": e.time.isoformat(), "attributes": _plain(e.attributes)}
            for e in span.events
            if LOG_MARK not in e.attributes
        ],
        "resource": _plain(span.resource),
        "scope": span.scope,
    }


def span_event(
    span: Span,
    reading: Reading,
    *,
    session: str,
    base: str,
    principal: str,
    parent: str | None,
    requested_by: str | None = None,
    catalogue: Catalogue | None = None,
) -> SpanIdentity:
    """The event recording ``span`` in ``session``.

    Args:
        span: the span.
        reading: the span read through the conventions.
        session: the session IRI (its graph).
        base: the IRI base.
        principal: on whose behalf the span's work was done.
        parent: the parent activity's IRI (None at the top of the session).
        requested_by: for a tool span, the completion that requested the call.
        catalogue: the model catalogue pricing completions (None: cost unknown).

    Returns:
        The event; writing it twice writes the same quads.
    """
    activity = str(span_activity(base, span.trace_id, span.span_id))
    common: dict[str, Any] = {
        "session": session,
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "operation": reading.operation,
        "error_type": reading.error_type,
        "record": span_record(span),
    }
    error = (reading.error_message or "the span ended with an error") if reading.failed else None
    if reading.category == "inference":
        provider = str(reading.provider or "unknown")
        model = str(reading.response_model or reading.request_model or "unknown")
        messages = reading.messages if reading.messages is not None else []
        params = dict(reading.request)  # what the span asked for; absent stays absent
        total_in = reading.input_tokens or 0
        cache_read = reading.cache_read_tokens or 0
        cache_write = reading.cache_write_tokens or 0
        uncached = max(0, total_in - cache_read - cache_write)
        out = reading.output_tokens or 0
        usd = None
        if catalogue is not None:
            spec = catalogue.find(provider, model)
            if spec is None and reading.request_model:
                spec = catalogue.find(provider, str(reading.request_model))
            if spec is None:  # a local provider costs 0; anything else stays unknown (None)
                spec = catalogue.spec_for(provider, model)
            if reading.input_tokens is not None:
                usd = spec.cost(uncached, out, cache_read, cache_write)
        hashed = span.attributes.get("trails.request_hash")
        return SpanCompletion(
            **common,
            activity=activity,
            parent=parent,
            principal=principal,
            provider=provider,
            model=model,
            started=span.start,
            ended=span.end,
            messages=messages,
            params=params,
            request_hash=str(hashed) if hashed else _hash(reading, model, messages),
            text=None if reading.failed else reading.output_text,
            input_tokens=uncached,
            output_tokens=out,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            usd=usd,
            latency_ms=(span.end - span.start).total_seconds() * 1000.0,
            request_id=reading.response_id,
            status="error" if reading.failed else "ok",
            error=error,
            reasoning_tokens=reading.reasoning_tokens,
            tool_call_ids=reading.requested_tool_calls,
            finish_reasons=reading.finish_reasons,
            agent_name=reading.agent_name,
            request_model=str(reading.request_model) if reading.request_model else None,
            unknown=tuple(
                name
                for name, value in (
                    ("input", reading.input_tokens),
                    ("output", reading.output_tokens),
                    ("cache_read", reading.cache_read_tokens),
                    ("cache_write", reading.cache_write_tokens),
                )
                if value is None
            ),
        )
    if reading.category == "tool":
        return SpanInvocation(
            **common,
            activity=activity,
            parent=parent,
            principal=principal,
            capability_id=str(reading.tool_name or span.name or "tool"),
            description=str(reading.tool_description or ""),
            started=span.start,
            ended=span.end,
            status="error" if reading.failed else "ok",
            inputs=reading.tool_arguments,
            output=None if reading.failed else reading.tool_result,
            error=error,
            tool_call_id=reading.tool_call_id,
            requested_by=requested_by,
        )
    if reading.category == "agent":
        return SpanAgentRun(
            **common,
            activity=activity,
            parent=parent or session,
            principal=principal,
            goal=str(
                reading.agent_description or reading.agent_name or span.name or reading.operation
            ),
            started=span.start,
            ended=span.end,
            failed=reading.failed,
            error=error,
            agent_name=reading.agent_name,
            agent_id=reading.agent_id,
            strategy=str(span.attributes["trails.strategy"])
            if span.attributes.get("trails.strategy")
            else None,
        )
    if reading.category == "memory":
        memory_id = span.attributes.get("gen_ai.memory.id")
        content = span.attributes.get("gen_ai.memory.content")
        return SpanMemoryOperation(
            **common,
            activity=activity,
            parent=parent,
            principal=principal,
            started=span.start,
            ended=span.end,
            query=str(reading.query) if reading.query is not None else None,
            memory=f"{base}entity:otel-memory:{quote(str(memory_id), safe='')}"
            if memory_id
            else None,
            content=str(content) if content is not None else None,
            status="error" if reading.failed else "ok",
            error=error,
        )
    return SpanActivity(
        **common,
        activity=activity,
        parent=parent,
        principal=principal,
        name=span.name,
        started=span.start,
        ended=span.end,
        status="error" if reading.failed else "ok",
        error=error,
    )
