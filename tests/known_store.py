"""The four-session store with known answers (the ``fx`` fixture of the audit, evidence, compliance and catalogue tests).

Four sessions on a frozen clock (one second per tick):

- A (alice, 2025-03-01 10:00, finance, L2): a ReAct run. Completions c0/c1/c2 by
  anthropic:claude-sonnet (0.01, 0.02, 0.03 USD); ``search`` ok at step 0;
  ``send_email`` (side effects) ok at step 1, whose handler makes a nested
  completion by anthropic:claude-haiku (0.005 USD); ``pay`` denied by policy;
  ``flaky`` raises (error); ``search`` with a bad argument (invalid). A memory is
  learned (memory.learn). Ends ok, goal achieved.
- B (bob, 2025-03-02 10:00, health, L1): Plan-and-Execute, a plan document,
  two openai:gpt-4o completions (unpriced, 0.5 USD), ``search`` ok, budget
  termination (limit 0.4, observed 0.5). Ends with status error.
- C (alice, 2025-03-03 10:00, finance): Reflexion; recalls A's memory (memory.recall), then a
  completion (0.04 USD) informed by the recall; a critique; step limit (3).
- D (carol, 2025-03-04 10:00): a run terminated by an error; never ended.

Totals: alice 0.105 USD over 5 completions, bob 0.5 USD over 2 (1 unpriced).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import trails.memory as memory
from trails.evidence.seal import install_sealer
from trails.kernel import Context, Decision, capability, invoke
from trails.prov import (
    EntityRecorded,
    LLMCompleted,
    PlanRunEnded,
    PlanRunStarted,
    Recorder,
    SessionStarted,
    Terminated,
)
from trails.store import IRI, Literal, Store

kcontext = importlib.import_module("trails.kernel.context")
kinvoke = importlib.import_module("trails.kernel.invoke")  # the module, not the function

ALICE = "did:local:alice"
BOB = "did:local:bob"
CAROL = "did:local:carol"


class Clock:
    """A frozen clock: each call returns the next second."""

    def __init__(self) -> None:
        self.t = datetime(2025, 1, 1, tzinfo=UTC)

    def set(self, when: datetime) -> None:
        self.t = when

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=1)
        return self.t


class DenyPay:
    name = "no-payments"

    def decide(self, spec: Any, args: dict[str, Any], ctx: Context) -> Decision:
        if spec.id == "pay":
            return Decision("deny", "payments need a human")
        return Decision("allow", "")


@dataclass
class Fixture:
    store: Store
    recorder: Recorder
    clock: Clock
    sessions: dict[str, IRI] = field(default_factory=dict)
    runs: dict[str, IRI] = field(default_factory=dict)
    completions: dict[str, IRI] = field(default_factory=dict)
    invocations: dict[str, IRI] = field(default_factory=dict)
    memory: IRI | None = None
    memory_graph: IRI | None = None
    recall: IRI | None = None


def _completion(
    fx: Fixture,
    ctx: Context,
    name: str,
    *,
    parent: str,
    model: str,
    provider: str = "anthropic",
    usd: float | None,
    tokens: tuple[int, int],
    step: int | None,
    text: str,
) -> IRI:
    activity = fx.recorder.minter.activity()
    started = fx.clock()
    fx.recorder.record(
        LLMCompleted(
            session=ctx.session,
            activity=activity,
            parent=parent,
            principal=ctx.principal,
            provider=provider,
            model=model,
            started=started,
            ended=fx.clock(),
            messages=[{"role": "user", "content": f"prompt for {name}"}],
            request_hash="h-" + name,
            text=text,
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            usd=usd,
            step=step,
        )
    )
    fx.completions[name] = activity
    return activity


def _open(fx: Fixture, key: str, principal: str, day: int, **kw: Any) -> Context:
    fx.clock.set(datetime(2025, 3, day, 10, 0, tzinfo=UTC) - timedelta(seconds=1))
    session = fx.recorder.minter.session(f"session-{key}")
    fx.recorder.record(
        SessionStarted(session=session, principal=principal, started=fx.clock(), **kw)
    )
    fx.sessions[key] = session
    return Context(principal=principal, session=session, recorder=fx.recorder, parent=session)


def _run(fx: Fixture, ctx: Context, key: str, strategy: str, goal: str) -> IRI:
    run = fx.recorder.minter.activity()
    fx.recorder.record(
        PlanRunStarted(
            session=ctx.session,
            activity=run,
            parent=ctx.session,
            principal=ctx.principal,
            strategy=strategy,
            goal=goal,
            started=fx.clock(),
        )
    )
    fx.runs[key] = run
    return run


def _invoke(fx: Fixture, ctx: Context, key: str, cap: str, args: dict[str, Any]) -> Any:
    before = set(_invocations(fx.store))
    try:
        return invoke(cap, args, ctx=ctx)
    finally:
        new = set(_invocations(fx.store)) - before
        if new:
            fx.invocations[key] = next(iter(new))


def _last_activity(store: Store, session: IRI, cls: str) -> IRI:
    rows = store.query(
        "SELECT ?a ?t $g $cls WHERE { GRAPH $g { ?a a ?c ; "
        "<http://www.w3.org/ns/prov#startedAtTime> ?t } "
        'FILTER(?c = IRI(CONCAT("https://w3id.org/trails/ns#", $cls))) } ORDER BY DESC(?t) LIMIT 1',
        {"g": session, "cls": Literal(cls)},
    )
    return rows.rows[0][0]  # type: ignore[union-attr,index,return-value]


def _invocations(store: Store) -> list[IRI]:
    rows = store.query(
        "SELECT ?a WHERE { GRAPH ?g { ?a a <https://w3id.org/trails/ns#CapabilityInvocation> } }"
    )
    return [r["a"] for r in rows]  # type: ignore[misc,union-attr]


def late_completion(fx: Fixture, key: str, principal: str) -> LLMCompleted:
    """A priced completion of session ``key``, to record after it ended (a late write)."""
    return LLMCompleted(
        session=fx.sessions[key],
        activity=fx.recorder.minter.activity(),
        parent=None,
        principal=principal,
        provider="openai",
        model="gpt-4o",
        started=datetime(2025, 3, 2, 11, tzinfo=UTC),
        ended=datetime(2025, 3, 2, 11, 0, 1, tzinfo=UTC),
        messages=[{"role": "user", "content": "late"}],
        request_hash="h-late",
        text="late",
        input_tokens=10,
        output_tokens=5,
        usd=0.25,
    )


def build(store: Store, monkeypatch: pytest.MonkeyPatch, *, seal: bool = True) -> Fixture:
    """Record the four sessions into ``store``; see the module docstring."""
    clock = Clock()
    monkeypatch.setattr(kinvoke, "now", clock)
    monkeypatch.setattr(kcontext, "now", clock)
    # every module that stamps events reads the same frozen clock (PROV-CONSTRAINTS
    # compares the times of activities recorded by different modules)
    import trails.agent.loop.run as ploop
    import trails.llm.envelope as lenvelope
    import trails.memory.service as mservice

    for module in (ploop, lenvelope, mservice):
        monkeypatch.setattr(module, "now", clock)
    recorder = Recorder(store)
    if seal:
        install_sealer(recorder)
    fx = Fixture(store, recorder, clock)

    @capability(id="search", description="Search the web")
    def search(query: str) -> list[str]:
        return [f"result for {query}"]

    @capability(id="send_email", description="Send an e-mail", side_effects=True)
    def send_email(ctx: Context, to: str, body: str) -> str:
        _completion(
            fx,
            ctx,
            "nested",
            parent=ctx.parent or ctx.session,
            model="claude-haiku",
            usd=0.005,
            tokens=(50, 10),
            step=None,
            text="polished body",
        )
        return f"sent to {to}"

    @capability(id="pay", description="Pay an invoice", side_effects=True)
    def pay(amount: float) -> str:  # pragma: no cover - always denied
        return "paid"

    @capability(id="flaky", description="Fails every time")
    def flaky() -> str:
        raise RuntimeError("upstream timeout")

    # -- A: alice, ReAct, everything goes right in the end ---------------------
    a = _open(fx, "A", ALICE, 1, label="alpha", assurance_level="L2", domain="finance")
    a.policy = DenyPay()
    run = _run(fx, a, "A", "react", "email the summary")
    step = a.child(parent=run)
    _completion(
        fx,
        a,
        "c0",
        parent=run,
        model="claude-sonnet",
        usd=0.01,
        tokens=(100, 20),
        step=0,
        text='{"action": "search"}',
    )
    _invoke(fx, step.child(step=0), "search", "search", {"query": "quarterly figures"})
    _completion(
        fx,
        a,
        "c1",
        parent=run,
        model="claude-sonnet",
        usd=0.02,
        tokens=(100, 30),
        step=1,
        text='{"action": "send_email"}',
    )
    _invoke(
        fx, step.child(step=1), "send_email", "send_email", {"to": "cfo@example.com", "body": "hi"}
    )
    with pytest.raises(Exception, match="payments need a human"):
        invoke("pay", {"amount": 12.5}, ctx=step.child(step=1))
    with pytest.raises(Exception, match="upstream timeout"):
        _invoke(fx, step.child(step=2), "flaky", "flaky", {})
    with pytest.raises(Exception, match="invalid arguments"):
        _invoke(fx, step.child(step=2), "invalid", "search", {"query": {"not": "a string"}})
    learned = memory.learn("the CFO prefers e-mail", confidence=0.9, scope="shared", ctx=step)
    fx.memory = IRI.trusted(learned.id)
    fx.runs["A-learn"] = IRI.trusted(learned.activity)
    _completion(
        fx,
        a,
        "c2",
        parent=run,
        model="claude-sonnet",
        usd=0.03,
        tokens=(200, 40),
        step=2,
        text="done",
    )
    fx.recorder.record(
        PlanRunEnded(
            session=a.session,
            activity=run,
            ended=clock(),
            stop_reason="goal_achieved",
            answer="the summary was sent",
        )
    )
    a.close("ok")

    # -- B: bob, Plan-and-Execute, stopped by the budget ------------------------
    b = _open(fx, "B", BOB, 2, label="beta", assurance_level="L1", domain="health")
    run = _run(fx, b, "B", "plan_and_execute", "triage the inbox")
    fx.recorder.record(
        EntityRecorded(
            session=b.session,
            entity=fx.recorder.minter.entity(),
            kind="PlanDocument",
            content={"steps": ["search"]},
            generated_by=run,
            at=clock(),
            index=0,
        )
    )
    _completion(
        fx,
        b,
        "b0",
        parent=run,
        model="gpt-4o",
        provider="openai",
        usd=None,
        tokens=(300, 50),
        step=0,
        text="plan",
    )
    _invoke(fx, b.child(parent=run, step=0), "b-search", "search", {"query": "inbox"})
    _completion(
        fx,
        b,
        "b1",
        parent=run,
        model="gpt-4o",
        provider="openai",
        usd=0.5,
        tokens=(100, 10),
        step=1,
        text="next",
    )
    fx.recorder.record(
        Terminated(
            session=b.session,
            activity=run,
            kind="budget",
            reason="max_cost",
            limit=0.4,
            observed=0.5,
            at=clock(),
        )
    )
    fx.recorder.record(
        PlanRunEnded(session=b.session, activity=run, ended=clock(), stop_reason="max_cost")
    )
    b.close("error")

    # -- C: alice, Reflexion, recalls A's memory, hits the step limit ------------
    c = _open(fx, "C", ALICE, 3, label="gamma", domain="finance")
    run = _run(fx, c, "C", "reflexion", "follow up with the CFO")
    hits = memory.recall("how to reach the CFO", scope="shared", ctx=c.child(parent=run, step=0))
    assert [h.memory.id for h in hits] == [fx.memory]
    recall = _last_activity(fx.store, c.session, "MemoryRecall")
    fx.recall = recall
    _completion(
        fx,
        c,
        "r0",
        parent=recall,
        model="claude-sonnet",
        usd=0.04,
        tokens=(80, 20),
        step=0,
        text="write an e-mail",
    )
    fx.recorder.record(
        EntityRecorded(
            session=c.session,
            entity=fx.recorder.minter.entity(),
            kind="Critique",
            content="too vague",
            generated_by=run,
            at=clock(),
            index=0,
        )
    )
    fx.recorder.record(
        Terminated(
            session=c.session,
            activity=run,
            kind="step_limit",
            reason="max_steps",
            limit=3,
            observed=3,
            at=clock(),
        )
    )
    fx.recorder.record(
        PlanRunEnded(session=c.session, activity=run, ended=clock(), stop_reason="max_steps")
    )
    c.close("ok")

    # -- D: carol, an error, still open -----------------------------------------
    d = _open(fx, "D", CAROL, 4, label="delta")
    run = _run(fx, d, "D", "react", "crash")
    fx.recorder.record(
        Terminated(
            session=d.session, activity=run, kind="error", reason="ModelAPIError: 503", at=clock()
        )
    )
    fx.recorder.record(
        PlanRunEnded(
            session=d.session,
            activity=run,
            ended=clock(),
            stop_reason="error",
            error="ModelAPIError: 503",
        )
    )
    return fx


@pytest.fixture
def fx(store: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fixture]:
    """The four-session store (sealed as sessions end)."""
    yield build(store, monkeypatch)
