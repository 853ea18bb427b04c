"""``AgentResult`` and ``AgentTrace``: a run's answer, and its timeline read from the graph.

selectools keeps a trace object beside the run; trails records the run, so
``result.trace`` is a reading of the recorded session graph (one SPARQL query, values
bound): each model call, tool call, policy decision, session save or load and history
eviction of the run, in time order, typed with the seed's step names. What the trace
shows is what an auditor finds, because it is what the auditor finds.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trails.prov.vocab import NAMESPACES
from trails.store import IRI, Solutions, to_python

if TYPE_CHECKING:
    from trails.agent.result import PlanResult
    from trails.store.base import Store

__all__ = ["AgentResult", "AgentTrace", "StreamChunk", "TraceStep", "read_trace", "session_of"]

_PREFIXES = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in NAMESPACES.items())

_STEPS = (
    _PREFIXES
    + """SELECT ?session ?a ?type ?started ?ended ?label ?status ?cacheHit ?tool ?model
       ?input ?output ?usd ?informant WHERE {
  GRAPH ?session {
    ?a a ?type ; prov:startedAtTime ?started .
    VALUES ?type { trails:LLMCompletion trails:CapabilityInvocation trails:PolicyDecision
                   trails:SessionSave trails:SessionLoad trails:HistoryEviction }
    OPTIONAL { ?a prov:endedAtTime ?ended }
    OPTIONAL { ?a rdfs:label ?label }
    OPTIONAL { ?a trails:status ?status }
    OPTIONAL { ?a trails:cacheHit ?cacheHit }
    OPTIONAL { ?a trails:capability ?cap . ?cap trails:capabilityId ?tool }
    OPTIONAL { ?a prov:qualifiedAssociation ?q . ?q prov:agent ?m . ?m trails:modelId ?model }
    OPTIONAL { ?a trails:inputTokens ?input }
    OPTIONAL { ?a trails:outputTokens ?output }
    OPTIONAL { ?a trails:costUSD ?usd }
    OPTIONAL { ?a prov:wasInformedBy ?informant . ?informant a trails:LLMCompletion }
  }
} ORDER BY ?started ?a"""
)

_RUN = (
    _PREFIXES
    + """SELECT ?session ?run ?started ?ended WHERE { GRAPH ?session {
    ?run prov:startedAtTime ?started . OPTIONAL { ?run prov:endedAtTime ?ended } } }"""
)

_METADATA = (
    _PREFIXES
    + """SELECT ?session ?value WHERE {
  GRAPH ?session { ?m a trails:TraceMetadata ; prov:wasGeneratedBy ?session }
  GRAPH ?content { ?m prov:value ?value } }"""
)


@dataclass(frozen=True)
class TraceStep:
    """One step of a run's timeline (selectools' ``TraceStep``).

    ``type`` is one of ``llm_call``, ``cache_hit``, ``tool_selection``, ``tool_execution``,
    ``error``, ``structured_retry``, ``guardrail``, ``session_save``, ``session_load``,
    ``memory_trim``; ``activity`` is the recorded activity it was read from, ``recorded``
    its class (``LLMCompletion``, ``CapabilityInvocation`` ...).
    """

    type: str
    activity: str
    started: datetime
    ended: datetime | None
    summary: str
    tool_name: str | None = None
    model: str | None = None
    status: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    recorded: str = ""

    @property
    def duration_ms(self) -> float:
        if self.ended is None:
            return 0.0
        return (self.ended - self.started).total_seconds() * 1000.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["started"] = self.started.isoformat()
        data["ended"] = None if self.ended is None else self.ended.isoformat()
        data["duration_ms"] = self.duration_ms
        return data


@dataclass
class AgentTrace:
    """A run's steps, as recorded (selectools' ``AgentTrace``); iterate it for the steps."""

    run_id: str | None
    session: str | None
    steps: list[TraceStep] = field(default_factory=list)
    parent_run_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[TraceStep]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def total_duration_ms(self) -> float:
        if not self.steps:
            return 0.0
        ends = [s.ended or s.started for s in self.steps]
        return (max(ends) - min(s.started for s in self.steps)).total_seconds() * 1000.0

    def filter(self, type: str) -> list[TraceStep]:
        """The steps of one ``type``."""
        return [s for s in self.steps if s.type == type]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "session": self.session,
            "parent_run_id": self.parent_run_id,
            "metadata": dict(self.metadata),
            "total_duration_ms": self.total_duration_ms,
            "steps": [s.to_dict() for s in self.steps],
        }

    def to_json(self, filepath: str | Path | None = None) -> str:
        """The trace as JSON; written to ``filepath`` too when given."""
        text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False)
        if filepath is not None:
            Path(filepath).write_text(text, encoding="utf-8")
        return text

    def timeline(self) -> str:
        """One line per step: offset, type, duration, summary."""
        if not self.steps:
            return "(no steps)"
        start = self.steps[0].started
        return "\n".join(
            f"+{(s.started - start).total_seconds() * 1000.0:8.1f}ms  {s.type:<16} "
            f"{s.duration_ms:7.1f}ms  {s.summary}"
            for s in self.steps
        )

    def to_otel_spans(self) -> list[dict[str, Any]]:
        """The steps as OpenTelemetry spans (OTLP/JSON shape): one trace, a root span for
        the run and a child per step, times in Unix nanoseconds."""
        trace_id = uuid.uuid5(uuid.NAMESPACE_URL, self.run_id or self.session or "run").hex
        root = trace_id[:16]
        spans: list[dict[str, Any]] = []
        for step in self.steps:
            ended = step.ended or step.started
            attributes = {
                k: v
                for k, v in (
                    ("trails.activity", step.activity),
                    ("trails.step.type", step.type),
                    ("gen_ai.request.model", step.model),
                    ("gen_ai.usage.input_tokens", step.input_tokens),
                    ("gen_ai.usage.output_tokens", step.output_tokens),
                    ("trails.tool", step.tool_name),
                    ("trails.status", step.status),
                )
                if v is not None
            }
            spans.append(
                {
                    "traceId": trace_id,
                    "spanId": uuid.uuid5(uuid.NAMESPACE_URL, step.activity + step.type).hex[:16],
                    "parentSpanId": root,
                    "name": f"{step.type} {step.tool_name or step.model or ''}".strip(),
                    "startTimeUnixNano": int(step.started.timestamp() * 1e9),
                    "endTimeUnixNano": int(ended.timestamp() * 1e9),
                    "attributes": attributes,
                    "status": {"code": 2 if step.type == "error" else 1},
                }
            )
        if self.steps:
            first = min(s.started for s in self.steps)
            last = max((s.ended or s.started) for s in self.steps)
            attributes = {
                "trails.run": self.run_id or "",
                **{f"trails.metadata.{k}": str(v) for k, v in self.metadata.items()},
            }
            if self.parent_run_id:
                attributes["trails.parent_run_id"] = self.parent_run_id
            spans.insert(
                0,
                {
                    "traceId": trace_id,
                    "spanId": root,
                    "name": "agent.run",
                    "startTimeUnixNano": int(first.timestamp() * 1e9),
                    "endTimeUnixNano": int(last.timestamp() * 1e9),
                    "attributes": attributes,
                    "status": {"code": 1},
                },
            )
        return spans


def _kind(row: dict[str, Any]) -> list[str]:
    """The seed's step type(s) of one recorded activity."""
    cls = str(row["type"]).rsplit("#", 1)[-1]
    status = row.get("status")
    if cls == "LLMCompletion":
        if row.get("cacheHit"):
            return ["cache_hit"]
        return {"error": ["error"], "invalid": ["structured_retry"]}.get(str(status), ["llm_call"])
    if cls == "CapabilityInvocation":
        chosen = ["tool_selection"] if row.get("informant") else []
        return chosen + (["tool_execution"] if status == "ok" else ["error"])
    return {
        "PolicyDecision": ["guardrail"],
        "SessionSave": ["session_save"],
        "SessionLoad": ["session_load"],
        "HistoryEviction": ["memory_trim"],
    }.get(cls, [cls])


def read_trace(
    store: Store,
    session: str,
    run_id: str | None,
    *,
    parent_run_id: str | None = None,
    since: datetime | None = None,
) -> AgentTrace:
    """The trace of run ``run_id`` of ``session``, read from ``store`` (from ``since``)."""
    bound = {"session": IRI(session)}
    found = store.query(_STEPS, bound)
    assert isinstance(found, Solutions)
    rows = [{k: to_python(v) for k, v in r.items()} for r in found]
    until = None
    if run_id is not None:
        window = store.query(_RUN, {**bound, "run": IRI(run_id)})
        assert isinstance(window, Solutions)
        for r in window:
            since = since or to_python(r["started"])
            until = to_python(r["ended"]) if r.get("ended") is not None else None
    steps: list[TraceStep] = []
    seen: set[tuple[str, str]] = set()
    for row in rows:
        started = row["started"]
        if since is not None and started < since:
            continue
        if until is not None and started > until and "Session" not in str(row["type"]):
            continue
        for kind in _kind(row):
            if (str(row["a"]), kind) in seen:
                continue
            seen.add((str(row["a"]), kind))
            steps.append(
                TraceStep(
                    type=kind,
                    activity=str(row["a"]),
                    started=started,
                    ended=row.get("ended"),
                    summary=str(row.get("label") or kind),
                    tool_name=row.get("tool"),
                    model=row.get("model"),
                    status=row.get("status"),
                    input_tokens=row.get("input"),
                    output_tokens=row.get("output"),
                    cost_usd=row.get("usd"),
                    recorded=str(row["type"]).rsplit("#", 1)[-1],
                )
            )
    metadata: dict[str, Any] = {}
    meta = store.query(_METADATA, bound)
    assert isinstance(meta, Solutions)
    for r in meta:
        value = json.loads(str(to_python(r["value"])))
        if isinstance(value, dict):
            metadata.update(value)
    parent = parent_run_id or metadata.pop("parent_run_id", None)
    metadata.pop("parent_run_id", None)
    return AgentTrace(run_id, session, steps, parent, metadata)


def session_of(store: Store, run_id: str) -> str | None:
    """The session a recorded run belongs to."""
    found = store.query(
        _PREFIXES
        + "SELECT ?run ?session WHERE { GRAPH ?session { ?run trails:inSession ?session } }",
        {"run": IRI(run_id)},
    )
    assert isinstance(found, Solutions)
    return next((str(to_python(r["session"])) for r in found), None)


@dataclass(frozen=True)
class StreamChunk:
    """A piece of the model's text, as ``astream`` yields it."""

    content: str


@dataclass
class AgentResult:
    """What ``Agent.run`` returns (selectools' ``AgentResult``).

    Attributes:
        content: the final answer as text (the timeout message when the iterations ran
            out; ``"Provider error: ..."`` when the provider failed for good).
        parsed: the validated object when a ``response_format`` was given.
        iterations: how many model turns the run took.
        tool_calls: ``(tool_name, tool_args)`` of each call the model made, in order.
        reasoning: the model's reasoning of the last turn; ``reasoning_history`` all of it.
        run_id: the run's activity IRI; ``session`` the session IRI.
        plan: trails' ``PlanResult`` of the run.
    """

    content: str
    parsed: Any
    iterations: int
    tool_calls: list[tuple[str, dict[str, Any]]]
    reasoning: str | None
    reasoning_history: list[str]
    run_id: str | None
    session: str | None
    plan: PlanResult
    store: Store | None = field(default=None, repr=False)
    parent_run_id: str | None = None
    error: BaseException | None = None
    _trace: AgentTrace | None = field(default=None, repr=False)

    @property
    def message(self) -> Any:
        """The answer as an assistant ``Message``."""
        from trails.llm.types import Message

        return Message("assistant", self.content)

    @property
    def tool_name(self) -> str | None:
        """The first tool the model chose (``routing_only``'s answer), or None."""
        return self.tool_calls[0][0] if self.tool_calls else None

    @property
    def tool_args(self) -> dict[str, Any]:
        return self.tool_calls[0][1] if self.tool_calls else {}

    @property
    def trace(self) -> AgentTrace:
        """The run's ``AgentTrace``, read from the recorded graph (once)."""
        if self._trace is None:
            if self.session is None and self.store is not None and self.run_id is not None:
                self.session = session_of(self.store, self.run_id)
            if self.store is None or self.session is None:
                self._trace = AgentTrace(self.run_id, self.session, [], self.parent_run_id)
            else:
                self._trace = read_trace(
                    self.store, self.session, self.run_id, parent_run_id=self.parent_run_id
                )
        return self._trace

    def __str__(self) -> str:
        return self.content
