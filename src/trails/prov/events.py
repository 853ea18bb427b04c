"""Typed events: what happened, as data, and how each one reads in PROV-O.

An event is a frozen pydantic model. ``emit`` writes its PROV-O description
into a ``QuadBuilder``; the recorder writes the result as one atomic write, so
each event is whole or absent in the store. Activities that span time and
have children (sessions, plan runs) are written as a start event and an end
event, so a crash in between leaves a started activity, never a dangling
child. Leaf activities (invocations, completions, decisions) are written once,
complete, when they finish, except a capability with side effects: its start
is written ahead of its handler (``CapabilityStarted``) and its end
(``CapabilityInvoked`` with ``ahead``: end time, status, output) completes the
same activity, so a crash leaves a visibly started call, never an unrecorded effect.

A session ends with ``SessionEnded``; when recovery ends the session of a
process that stopped, the same event carries the ``trails:Interruption`` and
marks the activities that had started and not ended, in the same write.

Other rooms add their own events (memory operations, seals) by subclassing
``Event`` next to their code; nothing here needs to change.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from trails.prov.builder import QuadBuilder
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, RDFS, TRAILS, T
from trails.store.terms import IRI

__all__ = [
    "PLAN_CLASSES",
    "CapabilityInvoked",
    "CapabilityStarted",
    "EntityRecorded",
    "Event",
    "Interrupted",
    "LLMCompleted",
    "PlanRunEnded",
    "PlanRunStarted",
    "PolicyDecided",
    "SessionEnded",
    "SessionStarted",
    "Terminated",
    "TreeNodeEnded",
    "TreeNodeSkipped",
]

PLAN_CLASSES: dict[str, IRI] = {
    "react": T.ReActPlan,
    "plan_and_execute": T.PlanAndExecutePlan,
    "reflexion": T.ReflexionPlan,
    "plan_execute_reflect": T.PlanExecuteReflectPlan,
    "behaviour_tree": T.BehaviourTreePlan,
}

_TERMINATION_CLASSES: dict[str, IRI] = {
    "budget": T.BudgetBreach,
    "step_limit": T.StepLimit,
    "error": T.Error,
    "terminal": T.TerminalAction,
}


def _iri(value: str) -> IRI:
    return IRI.trusted(value)


class Event(BaseModel):
    """Something that happened in a session. ``session`` is the session IRI."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    session: str

    content_apart: ClassVar[bool] = True
    """Whether the event's content values go to its graph's content graph (erasable), or
    stay in the graph itself (records that are not personal data: the endpoint's log)."""

    @property
    def graph(self) -> IRI:
        """The named graph the event is written to (the session's, by default)."""
        return _iri(self.session)

    @property
    def completes_graph(self) -> bool:
        """Whether this event's write completes its graph, so the sealer seals the graph in
        that same write (a session's end; the last part of an erasure receipt)."""
        return False

    def emit(self, b: QuadBuilder) -> None:  # pragma: no cover - abstract
        raise NotImplementedError(type(self).__name__)


class SessionStarted(Event):
    principal: str
    started: datetime
    label: str | None = None
    assurance_level: str | None = None
    domain: str | None = None
    #: the session this one re-executes (``trails replay --rerun``), if any
    rerun_of: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        s = self.graph
        b.activity(s, T.Session, self.started)
        if self.rerun_of is not None:
            b.add(s, T.rerunOf, IRI(self.rerun_of))
        b.associate(s, b.agent(self.principal))
        # the label names the session by its identifier; the caller's label may be personal
        # data, so it is content (erasure removes it, its digest stays sealed)
        b.label(s, f"session {b.minter.session_id(s)}")
        b.content_text(s, T.sessionLabel, self.label)
        b.value(s, T.assuranceLevel, self.assurance_level)
        b.value(s, T.domain, self.domain)


class Interrupted(BaseModel):
    """An activity of an interrupted session that had started and not ended.

    ``kind`` says what marks it: an invocation gets ``trails:status``, a plan run
    ``trails:stopReason`` ``"interrupted"``; ``terminated`` means it already has a
    termination (a run stopped by a budget just before the crash), which is kept.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    activity: str
    kind: Literal["invocation", "run", "activity"] = "activity"
    terminated: bool = False


class SessionEnded(Event):
    """The end of a session: closed (``ok``/``error``) or, by recovery, ``interrupted``.

    An interrupted end names when recovery ``detected`` it, why (``reason``) and the
    activities it cut short (``interrupted``); all of it is one write with the end.
    """

    ended: datetime
    status: str = "ok"
    reason: str | None = None
    detected: datetime | None = None
    interrupted: tuple[Interrupted, ...] = ()
    interrupted_at: datetime | None = None
    """When an interruption reached the running session (its ``trails:Interruption`` is
    generated then, before the calls it cut short ended); recovery leaves it None."""

    def emit(self, b: QuadBuilder) -> None:
        s = self.graph
        b.value(s, PROV.endedAtTime, self.ended)
        b.value(s, T.status, self.status)
        if self.status != "interrupted":
            return
        t = Minter.part(s, "interruption")
        b.types(t, T.Interruption, T.Termination, PROV.Entity)
        b.value(t, T.reason, self.reason or "the process recording the session stopped")
        b.value(t, PROV.generatedAtTime, self.interrupted_at or self.ended)
        b.value(t, T.detectedAt, self.detected)
        b.label(t, "interrupted")
        b.add(s, T.wasTerminatedBy, t)
        b.add(s, PROV.wasEndedBy, t)
        for item in self.interrupted:
            a = _iri(item.activity)
            if item.kind == "invocation":
                b.value(a, T.status, "interrupted")
            elif item.kind == "run":
                b.value(a, T.stopReason, "interrupted")
            if not item.terminated:
                b.add(a, T.wasTerminatedBy, t)
                b.add(a, PROV.wasEndedBy, t)


class CapabilityStarted(Event):
    """A call to a capability with side effects, written before its handler runs.

    The same activity, capability, association and input as ``CapabilityInvoked``
    writes at the end, without an end time, a status or an output: a crash before
    the end leaves exactly this, and recovery marks it interrupted.
    """

    activity: str
    parent: str | None
    principal: str
    capability_id: str
    description: str = ""
    side_effects: bool = True
    terminal: bool = False
    started: datetime
    inputs: Any = None
    step: int | None = None
    tool_call_id: str | None = None
    high_risk: bool = False
    screen_output: bool = False
    granted_to: tuple[str, ...] = ()

    def emit(self, b: QuadBuilder) -> None:
        a = _iri(self.activity)
        b.activity(a, T.CapabilityInvocation, self.started)
        _invocation_body(b, a, self.graph, self)


class CapabilityInvoked(Event):
    """One ``invoke``: validated or not, succeeded or failed, written when it ends.

    ``ahead`` says its start was written first (``CapabilityStarted``, a capability
    with side effects): then only what the end adds is written (end time, status,
    error, output), completing the same activity.
    """

    activity: str
    parent: str | None
    principal: str
    capability_id: str
    description: str = ""
    side_effects: bool = False
    terminal: bool = False
    started: datetime
    ended: datetime
    status: Literal["ok", "error", "invalid", "denied", "dry_run", "refused", "interrupted"]
    inputs: Any = None
    output: Any = None
    error: str | None = None
    step: int | None = None
    ahead: bool = False
    tool_call_id: str | None = None
    high_risk: bool = False
    screen_output: bool = False
    granted_to: tuple[str, ...] = ()

    def with_texts(self, inputs: str | None, output: str | None) -> CapabilityInvoked:
        """This event, told the canonical JSON of its ``inputs`` and ``output`` (which
        ``invoke`` made to check them), so ``emit`` does not encode them again.

        The texts are kept with the very objects they encode, outside the model's
        fields (equality and dumps ignore them); a copy with other values encodes its own.
        """
        object.__setattr__(self, "_known_texts", (self.inputs, inputs, self.output, output))
        return self

    def _texts(self) -> tuple[str | None, str | None]:
        known = self.__dict__.get("_known_texts")
        if known is None:
            return None, None
        inputs, inputs_text, output, output_text = known
        return (
            inputs_text if inputs is self.inputs else None,
            output_text if output is self.output else None,
        )

    def emit(self, b: QuadBuilder) -> None:
        a = _iri(self.activity)
        inputs_text, output_text = self._texts()
        if self.ahead:  # the start is on record: complete it
            b.value(a, PROV.endedAtTime, self.ended)
        else:
            b.activity(a, T.CapabilityInvocation, self.started, self.ended)
            _invocation_body(b, a, self.graph, self, inputs_text)
        b.value(a, T.status, self.status)
        b.content_text(a, T.errorMessage, self.error)
        if self.status == "interrupted":
            _cut_short(b, a, self.graph)
        if self.status == "ok":
            b.entity(
                Minter.part(a, "output"),
                T.CapabilityOutput,
                self.output,
                generated_by=a,
                at=self.ended,
                text=output_text,
            )


def _invocation_body(
    b: QuadBuilder,
    a: IRI,
    session: IRI,
    event: CapabilityStarted | CapabilityInvoked,
    inputs_text: str | None = None,
) -> None:
    """What an invocation's start says: written by the start of a side-effecting call,
    or with the end when the call was written once."""
    b.child_of(a, _iri(event.parent) if event.parent else None, session)
    cap = b.minter.capability(event.capability_id)
    b.types(cap, T.Capability, PROV.Plan, PROV.Entity)
    b.label(cap, event.capability_id)
    b.value(cap, T.capabilityId, event.capability_id)
    b.value(cap, RDFS.comment, event.description or None)
    b.value(cap, T.sideEffects, event.side_effects)
    b.value(cap, T.terminal, event.terminal)
    # what the controls check, written only when the capability declares it
    if event.high_risk:
        b.value(cap, T.highRisk, True)
    if event.screen_output:
        b.value(cap, T.screenOutput, True)
    for principal in event.granted_to:
        b.add(cap, T.grantedTo, b.agent(principal))
    b.add(a, T.capability, cap)
    b.associate(a, b.agent(event.principal), plan=cap)
    b.value(a, T.stepIndex, event.step)
    # the model's tool call this invocation ran: joins it to the completion that asked
    b.value(a, T.toolCallId, event.tool_call_id)
    b.label(a, f"invoke {event.capability_id}")
    b.entity(Minter.part(a, "input"), T.CapabilityInput, event.inputs, used_by=a, text=inputs_text)


class LLMCompleted(Event):
    """One model call (success or failure), with its prompt, completion and cost.

    ``status`` is ``refused`` when a budget stopped the call before anything was
    sent; ``informed_by`` names what led to the call besides its parent (the
    ``trails:ProviderFallback`` that switched to this provider). A cache hit names
    the completion that paid for its answer (``cached_from``) and whether that was
    the same principal's (``cache_scope``: ``principal``) or another's (``shared``).
    """

    activity: str
    parent: str | None
    principal: str
    provider: str
    model: str
    started: datetime
    ended: datetime
    messages: list[dict[str, Any]]
    params: dict[str, Any] = {}
    request_hash: str
    text: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    usd: float | None = None
    cache_hit: bool = False
    cached_from: str | None = None
    cache_scope: Literal["principal", "shared"] | None = None
    latency_ms: float = 0.0
    retries: int = 0
    request_id: str | None = None
    status: Literal["ok", "error", "invalid", "refused"] = "ok"
    error: str | None = None
    step: int | None = None
    tool_calls: list[dict[str, Any]] = []
    informed_by: list[str] = []

    def emit(self, b: QuadBuilder) -> None:
        a = _iri(self.activity)
        b.activity(a, T.LLMCompletion, self.started, self.ended)
        b.child_of(a, _iri(self.parent) if self.parent else None, self.graph)
        for informant in self.informed_by:
            b.add(a, PROV.wasInformedBy, _iri(informant))
        principal = b.agent(self.principal)
        model = b.minter.model(self.provider, self.model)
        b.types(model, T.Model, PROV.SoftwareAgent, PROV.Agent)
        b.label(model, f"{self.provider}:{self.model}")
        b.value(model, T.provider, self.provider)
        b.value(model, T.modelId, self.model)
        b.add(model, PROV.actedOnBehalfOf, principal)
        b.associate(a, model)
        b.add(a, PROV.wasAssociatedWith, principal)
        b.label(a, f"completion by {self.provider}:{self.model}")
        b.content_text(a, T.errorMessage, self.error)
        for prop, value in (
            (T.status, self.status),
            (T.inputTokens, self.input_tokens),
            (T.outputTokens, self.output_tokens),
            (T.cacheReadTokens, self.cache_read_tokens),
            (T.cacheWriteTokens, self.cache_write_tokens),
            (T.costUSD, self.usd),
            (T.cacheHit, self.cache_hit),
            (T.cacheScope, self.cache_scope),
            (T.latencyMs, float(self.latency_ms)),
            (T.retries, self.retries),
            (T.requestId, self.request_id),
            (T.requestHash, self.request_hash),
            (T.stepIndex, self.step),
        ):
            b.value(a, prop, value)
        if self.cached_from is not None:
            b.add(a, T.cachedFrom, _iri(self.cached_from))
        prompt = Minter.part(a, "prompt")
        b.entity(prompt, T.Prompt, {"messages": self.messages, "params": self.params}, used_by=a)
        b.value(prompt, T.requestHash, self.request_hash)
        if self.text is not None:
            completion = Minter.part(a, "completion")
            b.entity(
                completion, T.Completion, self.text, generated_by=a, at=self.ended, as_json=False
            )
            b.add(completion, PROV.wasDerivedFrom, prompt)
        for i, call in enumerate(self.tool_calls):
            # the id is what a later invocation of the call links back with
            b.value(a, T.toolCallId, call["id"])
            request = Minter.part(a, f"toolcall{i}")
            b.entity(request, T.ToolCallRequest, call, generated_by=a, at=self.ended)
            b.value(request, T.toolCallId, call["id"])


class PlanRunStarted(Event):
    activity: str
    parent: str | None
    principal: str
    strategy: str
    goal: str
    started: datetime

    def emit(self, b: QuadBuilder) -> None:
        a = _iri(self.activity)
        cls = PLAN_CLASSES.get(self.strategy, T.PlanRun)
        b.activity(a, cls, self.started)
        if cls != T.PlanRun:
            b.types(a, T.PlanRun)
        b.child_of(a, _iri(self.parent) if self.parent else self.graph, self.graph)
        b.associate(a, b.agent(self.principal))
        b.value(a, T.strategy, self.strategy)
        b.content_text(a, T.goal, self.goal)
        b.label(a, f"{self.strategy} run")


class PlanRunEnded(Event):
    activity: str
    ended: datetime
    stop_reason: str
    answer: str | None = None
    error: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        a = _iri(self.activity)
        b.value(a, PROV.endedAtTime, self.ended)
        b.value(a, T.stopReason, self.stop_reason)
        b.content_text(a, T.answer, self.answer)
        b.content_text(a, T.errorMessage, self.error)
        if self.stop_reason == "interrupted":
            _cut_short(b, a, self.graph)


def _cut_short(b: QuadBuilder, a: IRI, session: IRI) -> None:
    """An activity an interruption (Ctrl-C) cut short while its process ran names the
    session's ``trails:Interruption``, which the session's end writes."""
    t = Minter.part(session, "interruption")
    b.add(a, T.wasTerminatedBy, t)
    b.add(a, PROV.wasEndedBy, t)


class Terminated(Event):
    """A run ended by something other than its own answer (``trails:wasTerminatedBy``):
    a budget breach, the step limit, an error, or a terminal action.

    A terminal action (``kind="terminal"``: a ``terminal=True`` capability ran, or
    the run's ``stop_condition`` said stop after a call) names the invocation that
    ended the run as ``caused_by``: the termination entity ``prov:wasGeneratedBy``
    it, so plain PROV reads run -> ``prov:wasEndedBy`` -> termination ->
    ``prov:wasGeneratedBy`` -> the call.
    """

    activity: str
    kind: Literal["budget", "step_limit", "error", "terminal"]
    reason: str
    limit: float | None = None
    observed: float | None = None
    at: datetime
    caused_by: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        a = _iri(self.activity)
        t = Minter.part(a, "termination")
        b.types(t, _TERMINATION_CLASSES[self.kind], T.Termination, PROV.Entity)
        b.value(t, T.reason, self.reason)
        b.value(t, T.limit, self.limit)
        b.value(t, T.observed, self.observed)
        b.value(t, PROV.generatedAtTime, self.at)
        if self.caused_by is not None:
            b.add(t, PROV.wasGeneratedBy, _iri(self.caused_by))
        b.label(t, f"{self.kind}: {self.reason}")
        b.add(a, T.wasTerminatedBy, t)
        b.add(a, PROV.wasEndedBy, t)


class PolicyDecided(Event):
    """A tool policy judged a capability call: the final verdict, the rule, any review.

    ``decision`` is the outcome (``allow`` or ``deny``; ``review`` only from a
    policy recorded before reviews were resolved). When the policy asked for
    review, ``review`` says what came of it (``approved``, ``refused``,
    ``timed_out``, ``no_approver``) and ``reviewer`` who answered: the decision
    is then associated with the reviewer as a ``prov:Agent`` whose qualified
    association has the policy's rules as ``prov:hadPlan``; otherwise the policy itself
    is that agent; the plan is the policy's rules (``trails:PolicyRules``, a
    ``prov:Plan`` attributed to the policy). ``invocation`` is the call the decision let run.
    """

    activity: str
    parent: str | None
    principal: str
    policy: str
    capability_id: str
    side_effects: bool | None = None
    decision: Literal["allow", "deny", "review"]
    reason: str = ""
    rule: str | None = None
    review: Literal["approved", "refused", "timed_out", "no_approver"] | None = None
    reviewer: str | None = None
    approval_timeout_s: float | None = None
    invocation: str | None = None
    arguments: Any = None
    at: datetime

    def emit(self, b: QuadBuilder) -> None:
        a = _iri(self.activity)
        b.activity(a, T.PolicyDecision, self.at, self.at)
        b.child_of(a, _iri(self.parent) if self.parent else None, self.graph)
        policy = b.minter.policy(self.policy)
        b.types(policy, T.Policy, PROV.Agent)
        b.label(policy, self.policy)
        b.add(policy, PROV.actedOnBehalfOf, b.agent(self.principal))
        rules = Minter.part(policy, "rules")
        b.types(rules, T.PolicyRules, PROV.Plan, PROV.Entity)
        b.label(rules, f"rules of {self.policy}")
        b.add(rules, PROV.wasAttributedTo, policy)
        if self.reviewer is not None:
            b.add(a, PROV.wasAssociatedWith, policy)
            b.associate(a, b.agent(self.reviewer), plan=rules)
        else:
            b.associate(a, policy, plan=rules)
        cap = b.minter.capability(self.capability_id)
        b.types(cap, T.Capability, PROV.Plan, PROV.Entity)
        b.label(cap, self.capability_id)
        b.value(cap, T.capabilityId, self.capability_id)
        b.value(cap, T.sideEffects, self.side_effects)
        b.add(a, T.decidedOn, cap)
        b.value(a, T.capabilityId, self.capability_id)
        b.value(a, T.decision, self.decision)
        b.value(a, T.reason, self.reason)
        b.value(a, T.matchedRule, self.rule)
        b.value(a, T.reviewOutcome, self.review)
        b.value(a, T.approvalTimeoutS, self.approval_timeout_s)
        if self.invocation is not None:
            b.add(_iri(self.invocation), T.authorizedBy, a)
        b.label(a, f"{self.decision} {self.capability_id}")
        b.entity(Minter.part(a, "input"), T.CapabilityInput, self.arguments, used_by=a)


class EntityRecorded(Event):
    """A document a planner produced: a parsed plan, a critique (``kind`` names the class)."""

    entity: str
    kind: Literal["PlanDocument", "Critique"]
    content: Any
    generated_by: str
    at: datetime
    index: int | None = None

    _classes: ClassVar[dict[str, IRI]] = {"PlanDocument": T.PlanDocument, "Critique": T.Critique}

    def emit(self, b: QuadBuilder) -> None:
        e = _iri(self.entity)
        b.entity(
            e, TRAILS[self.kind], self.content, generated_by=_iri(self.generated_by), at=self.at
        )
        b.value(e, T.stepIndex, self.index)
        b.label(e, f"{self.kind} {self.index}" if self.index is not None else self.kind)


class TreeNodeSkipped(BaseModel):
    """A child a behaviour-tree control node never ticked (written with its parent's end)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    activity: str
    node_id: str
    kind: str


class TreeNodeEnded(Event):
    """A behaviour-tree node ended: its id, kind, outcome, span and what decided it.

    The node's outcome is computed from what informed it, so the node
    ``prov:wasInformedBy`` each of ``informed_by``: a control node its children
    (ended and written before it), a leaf the invocations and completions it made;
    the root is also informed by its run. ``skipped`` are the children the node
    never ticked, written in the same write as activities of no duration with the
    outcome ``skipped`` (and informing their parent, which decided to skip them).
    A parallel node carries its vote: ``successes``, ``failures``, the
    ``threshold`` it needed and the ``policy``.
    """

    activity: str
    run: str
    node_id: str
    kind: str
    outcome: Literal["success", "failure", "stopped"]
    started: datetime
    ended: datetime
    root: bool = False
    informed_by: tuple[str, ...] = ()
    skipped: tuple[TreeNodeSkipped, ...] = ()
    successes: int | None = None
    failures: int | None = None
    threshold: int | None = None
    policy: str | None = None

    def emit(self, b: QuadBuilder) -> None:
        a = _iri(self.activity)
        run = _iri(self.run)
        self._node(
            b,
            a,
            node_id=self.node_id,
            kind=self.kind,
            outcome=self.outcome,
            started=self.started,
            ended=self.ended,
        )
        if self.root:
            b.add(a, PROV.wasInformedBy, run)
        for informant in self.informed_by:
            b.add(a, PROV.wasInformedBy, _iri(informant))
        for skip in self.skipped:
            s = _iri(skip.activity)
            self._node(
                b,
                s,
                node_id=skip.node_id,
                kind=skip.kind,
                outcome="skipped",
                started=self.ended,
                ended=self.ended,
            )
            b.add(a, PROV.wasInformedBy, s)
        b.value(a, T.voteSuccesses, self.successes)
        b.value(a, T.voteFailures, self.failures)
        b.value(a, T.voteThreshold, self.threshold)
        b.value(a, T.votePolicy, self.policy)

    def _node(
        self,
        b: QuadBuilder,
        a: IRI,
        *,
        node_id: str,
        kind: str,
        outcome: str,
        started: datetime,
        ended: datetime,
    ) -> None:
        b.activity(a, T.TreeNode, started, ended)
        b.add(a, T.inSession, self.graph)
        b.add(a, T.inRun, _iri(self.run))
        b.value(a, T.nodeId, node_id)
        b.value(a, T.nodeKind, kind)
        b.value(a, T.nodeOutcome, outcome)
        b.label(a, f"{kind} node {node_id}: {outcome}")
