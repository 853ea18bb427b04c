"""The events a received span becomes: trails' own events, plus the span's identity.

Each is a subclass of the event the native runtime records for the same kind
of work (``LLMCompleted``, ``CapabilityInvoked``, the plan run's start and end,
a memory operation), so an ingested session has the same PROV-O shape as a
native one and conforms to the same shapes. What they add is what OTel knows
and trails did not: the trace and span ids (``trails:traceId``,
``trails:spanId``), the GenAI operation name, tool call ids and the link from
a tool execution to the completion that requested it (``trails:requestedBy``,
also ``prov:wasInfluencedBy``), reasoning tokens, ``error.type``.

Every IRI and value is a function of the span alone, so writing the same span
twice writes the same quads: nothing is duplicated.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from trails.prov.builder import QuadBuilder
from trails.prov.events import (
    CapabilityInvoked,
    Event,
    LLMCompleted,
    PlanRunEnded,
    PlanRunStarted,
    SessionStarted,
)
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.terms import IRI, Quad
from trails.store.terms import Literal as RDFLiteral

__all__ = [
    "SpanActivity",
    "SpanAgentRun",
    "SpanCompletion",
    "SpanIdentity",
    "SpanInvocation",
    "SpanMemoryOperation",
    "SpanOfSession",
    "SpanSessionStarted",
    "span_activity",
]

_COUNTS = {
    "input": T.inputTokens,
    "output": T.outputTokens,
    "cache_read": T.cacheReadTokens,
    "cache_write": T.cacheWriteTokens,
}
_NOT_CARRIED = frozenset({T.retries, T.cacheHit})
_MEMORY_CLASSES: dict[str, IRI] = {
    "create_memory": T.MemoryLearn,
    "update_memory": T.MemoryLearn,
    "search_memory": T.MemoryRecall,
    "retrieval": T.MemoryRecall,
    "delete_memory": T.MemoryForget,
}


class SpanIdentity(Event):
    """What every received span carries: its ids, operation name and error type."""

    trace_id: str
    span_id: str
    operation: str
    error_type: str | None = None
    record: dict[str, Any] | None = None

    def identify(self, b: QuadBuilder, a: IRI) -> None:
        """Write the span's identity on activity ``a`` (plain strings: no literal dispatch).

        ``record``, the span as it was sent, becomes a ``trails:SpanRecord``
        entity of the activity (its JSON is content, like a prompt's).
        """
        g = b.graph
        b.quads.append(Quad(a, T.traceId, RDFLiteral(self.trace_id), g))
        b.quads.append(Quad(a, T.spanId, RDFLiteral(self.span_id), g))
        b.quads.append(Quad(a, T.operationName, RDFLiteral(self.operation), g))
        if self.error_type is not None:
            b.quads.append(Quad(a, T.errorType, RDFLiteral(self.error_type), g))
        if self.record is not None:
            record = Minter.part(a, "span")
            b.entity(record, T.SpanRecord, self.record)
            b.add(a, T.spanRecord, record)


class SpanOfSession(SpanIdentity):
    """The span a trails exporter sent for a session itself: its ids go on the session."""

    def emit(self, b: QuadBuilder) -> None:
        self.identify(b, self.graph)


class SpanSessionStarted(SessionStarted):
    """A session opened by the first span received for it.

    ``principal`` is its writer (a write token's principal); ``end_user`` the
    span's ``enduser.id`` when it names someone else: the writer acted on
    their behalf (``prov:actedOnBehalfOf``, in the session's graph).
    """

    conversation_id: str | None = None
    end_user: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        super().emit(b)
        b.value(self.graph, T.conversationId, self.conversation_id)
        if self.end_user:
            b.add(b.agent(self.principal), PROV.actedOnBehalfOf, b.agent(self.end_user))


class SpanCompletion(LLMCompleted, SpanIdentity):
    """An inference span (chat, text_completion, generate_content, embeddings)."""

    reasoning_tokens: int | None = None
    tool_call_ids: tuple[str, ...] = ()
    finish_reasons: tuple[str, ...] = ()
    agent_name: str | None = None
    request_model: str | None = None
    unknown: tuple[str, ...] = ()

    def emit(self, b: QuadBuilder) -> None:
        super().emit(b)
        a = IRI.trusted(self.activity)
        # a count the span did not give is unrecorded, never 0; nor does a span say whether
        # the call was retried or answered from a cache (absent, never 0 and false)
        unknown = {_COUNTS[name] for name in self.unknown} | _NOT_CARRIED
        b.quads[:] = [q for q in b.quads if not (q.subject == a and q.predicate in unknown)]
        self.identify(b, a)
        b.value(a, T.requestModel, self.request_model)
        b.value(a, T.reasoningTokens, self.reasoning_tokens)
        b.value(a, T.agentName, self.agent_name)
        for call in self.tool_call_ids:
            b.value(a, T.toolCallId, call)
        for reason in self.finish_reasons:
            b.value(a, T.finishReason, reason)


class SpanInvocation(CapabilityInvoked, SpanIdentity):
    """A tool span (execute_tool): the tool is the capability."""

    tool_call_id: str | None = None
    requested_by: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        super().emit(b)
        a = IRI.trusted(self.activity)
        self.identify(b, a)  # (the call id is written by the invocation itself)
        if self.requested_by:
            requester = IRI.trusted(self.requested_by)
            b.add(a, T.requestedBy, requester)
            b.add(a, PROV.wasInfluencedBy, requester)


class SpanAgentRun(SpanIdentity):
    """An agent span (invoke_agent, create_agent, invoke_workflow): a whole plan run.

    The span arrives finished, so its start and end are one event and one write. A
    failed span's run stopped on an ``error``; an OK span's run has no stop reason (a
    span does not say whether its agent reached its goal or ran out of steps).
    """

    activity: str
    parent: str | None
    principal: str
    goal: str
    started: datetime
    ended: datetime
    failed: bool = False
    answer: str | None = None
    error: str | None = None
    agent_name: str | None = None
    agent_id: str | None = None
    strategy: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        PlanRunStarted(
            session=self.session,
            activity=self.activity,
            parent=self.parent,
            principal=self.principal,
            strategy=self.strategy or self.operation,
            goal=self.goal,
            started=self.started,
        ).emit(b)
        a = IRI.trusted(self.activity)
        if self.failed:
            PlanRunEnded(
                session=self.session,
                activity=self.activity,
                ended=self.ended,
                stop_reason="error",
                answer=self.answer,
                error=self.error,
            ).emit(b)
        else:  # an OK span says the run ended, not why it stopped: no trails:stopReason
            b.value(a, PROV.endedAtTime, self.ended)
            b.content_text(a, T.answer, self.answer)
        self.identify(b, a)
        b.value(a, T.agentName, self.agent_name)
        b.value(a, T.agentId, self.agent_id)


class SpanMemoryOperation(SpanIdentity):
    """A memory span (create/update/search/delete_memory, retrieval)."""

    activity: str
    parent: str | None
    principal: str
    started: datetime
    ended: datetime
    query: str | None = None
    memory: str | None = None
    content: str | None = None
    status: Literal["ok", "error"] = "ok"
    error: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        cls = _MEMORY_CLASSES.get(self.operation, T.MemoryOperation)
        memory = IRI.trusted(self.memory) if self.memory else Minter.part(a, "memory")
        if cls == T.MemoryLearn:
            b.entity(
                memory,
                PROV.Entity,
                self.content,
                has_content=self.content is not None,
                as_json=False,
            )
            b.add(a, PROV.generated, memory)
        elif cls == T.MemoryForget:
            b.types(memory, PROV.Entity)
            b.add(a, PROV.invalidated, memory)
        elif cls == T.MemoryRecall:
            b.content_text(a, T.recallQuery, self.query or "")
        b.activity(a, cls, self.started, self.ended)
        b.types(a, T.MemoryOperation)
        b.child_of(a, IRI.trusted(self.parent) if self.parent else None, self.graph)
        b.add(a, PROV.wasAssociatedWith, b.agent(self.principal))
        b.label(a, self.operation.replace("_", " "))
        b.value(a, T.status, self.status)
        b.content_text(a, T.errorMessage, self.error)
        self.identify(b, a)


class SpanActivity(SpanIdentity):
    """Any other span (HTTP, database ...), kept so the span tree stays whole."""

    activity: str
    parent: str | None
    principal: str
    name: str
    started: datetime
    ended: datetime
    status: Literal["ok", "error"] = "ok"
    error: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        a = IRI.trusted(self.activity)
        b.activity(a, T.TraceSpan, self.started, self.ended)
        b.child_of(a, IRI.trusted(self.parent) if self.parent else None, self.graph)
        b.add(a, PROV.wasAssociatedWith, b.agent(self.principal))
        b.label(a, self.name or "span")
        b.value(a, T.status, self.status)
        b.content_text(a, T.errorMessage, self.error)
        self.identify(b, a)


def span_activity(base: str, trace_id: str, span_id: str) -> IRI:
    """The activity IRI of a span: a function of its ids alone."""
    return IRI.trusted(f"{base}activity:otel:{trace_id}:{span_id}")
