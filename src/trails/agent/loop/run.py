"""What every planner loop shares: argument checks, budgets, LLM turns, dispatch, recording.

A planner owns its loop shape; this module owns everything around it so the
three strategies behave identically where the guide says they do:

- ``Limits`` samples the shared cost tracker and a monotonic clock at the
  iteration boundaries each planner names, and reports the first breach;
- ``PlanRun`` records the plan-run root activity, makes each reasoning turn a
  child of it, dispatches actions informed by the completion that chose them,
  and ends the run with a ``PlanResult``, writing a best-effort
  ``trails:wasTerminatedBy`` for every stop that is not ``goal_achieved``.
  Loops do not call the model or dispatch themselves: they yield
  ``plan.ask(...)`` / ``plan.act(...)`` requests that a driver (``loop.drive``:
  ``run`` sync, ``arun`` async, ``stream``) executes with ``complete`` /
  ``acomplete`` / ``stream`` and ``dispatch``;
- a successful call of a ``terminal=True`` capability ends the run on every
  planner (``finish_terminal``), with the capability's result as the answer;
- a provider failure ends the run with ``stopped="error"`` and one warning
  line through ``logging`` (``provider_failed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from trails.agent.loop.checks import (
    check_limits,
    check_positive_int,
    governance,
    per_call_tokens,
)
from trails.agent.loop.drive import Complete, Dispatch, DispatchMany
from trails.agent.loop.guards import Guards, dry_dispatch, refusal, screen
from trails.agent.loop.outcome import Output, answer_text, stringify
from trails.agent.loop.refused import RUN_TOOLS, record_refused, refusal_reason
from trails.agent.loop.terminal import reason_of, terminal_reason
from trails.agent.loop.unreached import note_failure
from trails.agent.result import BUDGET_STOPS, PlanResult, PlanStep, StopReason
from trails.errors import (
    BudgetExceeded,
    ModelAPIError,
    StoreError,
    TrailsError,
    UnknownCapability,
    UserError,
)
from trails.kernel.context import Context, InvocationRecord, now
from trails.kernel.cost import CostTracker
from trails.kernel.invoke import invoke
from trails.kernel.lifecycle import INTERRUPTED, interruption, mark_interrupted
from trails.kernel.observe import notify
from trails.kernel.registry import get_capability
from trails.llm.catalogue import ModelSpec
from trails.llm.types import Chunk, Message, Response, ToolCall
from trails.prov.events import EntityRecorded, PlanRunEnded, PlanRunStarted, Terminated
from trails.prov.vocab import PROV
from trails.store.base import Solutions
from trails.store.terms import IRI, Literal

if TYPE_CHECKING:
    from trails.agent.context import Session

__all__ = [
    "Breach",
    "Limits",
    "PlanRun",
    "activity_of",
    "check_limits",
    "check_positive_int",
    "governance",
    "per_call_tokens",
    "stringify",
]

log = logging.getLogger("trails.agent")

#: The clock wall-time budgets read (a module attribute so tests can drive it).
monotonic = time.monotonic

_TERMINATION_KIND = {
    "max_cost": "budget",
    "max_tokens": "budget",
    "max_wall_time": "budget",
    "max_steps": "step_limit",
    "error": "error",
}


def activity_of(response: Response) -> str | None:
    """The completion activity IRI of a response, as a plain str (None if unrecorded)."""
    return str(response.activity_iri) if response.activity_iri else None


@dataclass(frozen=True)
class Breach:
    """A crossed budget: the stop reason, its limit and the observed value."""

    reason: StopReason
    limit: float
    observed: float


class Limits:
    """Cumulative budgets of one run, measured from its entry on the shared tracker.

    Args:
        tracker: the cost tracker every LLM call books into.
        max_cost_usd: USD the run may spend (None: unlimited).
        max_tokens: prompt + completion tokens the run may use.
        max_wall_time_s: seconds since the run started.

    Raises:
        UserError: a negative or non-numeric limit.
    """

    def __init__(
        self,
        tracker: CostTracker,
        *,
        max_cost_usd: float | None = None,
        max_tokens: float | None = None,
        max_wall_time_s: float | None = None,
    ) -> None:
        self.tracker = tracker
        checked = check_limits(
            max_cost_usd=max_cost_usd, max_tokens=max_tokens, max_wall_time_s=max_wall_time_s
        )
        self.max_cost_usd = checked["max_cost_usd"]
        self.max_tokens = checked["max_tokens"]
        self.max_wall_time_s = checked["max_wall_time_s"]
        self._usd0 = tracker.total_usd()
        self._tokens0 = tracker.total_tokens()
        self._t0 = monotonic()

    def spent_usd(self) -> float:
        """USD booked on the tracker since the run started."""
        return self.tracker.total_usd() - self._usd0

    def spent_tokens(self) -> int:
        """Tokens booked on the tracker since the run started."""
        return self.tracker.total_tokens() - self._tokens0

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return monotonic() - self._t0

    def breach(self) -> Breach | None:
        """The first crossed budget (cost, then tokens, then wall time), or None."""
        if self.max_cost_usd is not None and (spent := self.spent_usd()) >= self.max_cost_usd:
            return Breach("max_cost", self.max_cost_usd, spent)
        if self.max_tokens is not None and (used := self.spent_tokens()) >= self.max_tokens:
            return Breach("max_tokens", self.max_tokens, float(used))
        if self.max_wall_time_s is not None and (took := self.elapsed()) >= self.max_wall_time_s:
            return Breach("max_wall_time", self.max_wall_time_s, took)
        return None

    def observe(self, reason: StopReason) -> Breach:
        """The limit and observed value behind ``reason`` (a breach a nested run reported)."""
        if reason == "max_cost":
            return Breach(reason, self.max_cost_usd or 0.0, self.spent_usd())
        if reason == "max_tokens":
            return Breach(reason, self.max_tokens or 0.0, float(self.spent_tokens()))
        return Breach(reason, self.max_wall_time_s or 0.0, self.elapsed())

    def remaining(self) -> dict[str, float | None]:
        """The budget left, as limits for a nested run (None: unlimited; never negative)."""
        left: dict[str, float | None] = {
            "max_cost_usd": None,
            "max_tokens": None,
            "max_wall_time_s": None,
        }
        if self.max_cost_usd is not None:
            left["max_cost_usd"] = max(0.0, self.max_cost_usd - self.spent_usd())
        if self.max_tokens is not None:
            left["max_tokens"] = max(0.0, self.max_tokens - self.spent_tokens())
        if self.max_wall_time_s is not None:
            left["max_wall_time_s"] = max(0.0, self.max_wall_time_s - self.elapsed())
        return left


def _registered(capability_id: str) -> bool:
    try:
        get_capability(capability_id)
    except UnknownCapability:
        return False
    return True


def _budget_breach(exc: BudgetExceeded) -> Breach:
    reason: StopReason = "max_tokens" if exc.kind == "tokens" else "max_cost"
    return Breach(reason, float(exc.limit), float(exc.observed))


class PlanRun:
    """One planner run: its context, its plan-run activity, its trajectory.

    Args:
        strategy: the planner name (``react`` ...), which picks the plan-run class.
        goal: the goal text.
        llm: the LLM client.
        session: the conversation the run writes into.
        ctx: the caller's context (cost and provenance follow it), else the session's.
        tools: the ids the run may dispatch (None: any registered capability).
        governance: ``policy``, ``approver``, ``approval_timeout_s`` and
            ``observers`` given to the planner: they apply to this run (a policy
            replaces the context's, observers are added to the context's).
        guards: tool budgets, validators, the reflector and dry run (``loop.guards``).
        output: the ``output_type=`` of the run (``check_output``), or None.

    Raises:
        UserError: an empty goal, a missing client or a non-Session session.
    """

    def __init__(
        self,
        strategy: str,
        goal: str,
        *,
        llm: Any,
        session: Session,
        ctx: Context | None,
        tools: Sequence[str] | None,
        governance: Mapping[str, Any] | None = None,
        guards: Guards | None = None,
        output: Output | None = None,
    ) -> None:
        from trails.agent.context import Session, _governance

        if not isinstance(goal, str) or not goal.strip():
            raise UserError(f"goal must be a non-empty str, not {goal!r}")
        if not isinstance(session, Session):
            raise UserError(
                f"session= must be a trails.agent.Session, not {type(session).__name__}"
            )
        if llm is None or not callable(getattr(llm, "complete", None)):
            raise UserError(f"llm= must be an LLM client with complete(), not {llm!r}")
        if ctx is not None and not isinstance(ctx, Context):
            raise UserError(f"ctx= must be a trails Context, not {type(ctx).__name__}")
        session._refuse_if_read_only()  # a replayed session runs nothing, whatever the ctx
        session.fit_window(llm)  # the history window from the model's context, unless set
        self.strategy = strategy
        self.goal = goal
        self.llm = llm
        self.session = session
        base = ctx if ctx is not None else session.context
        # handlers run by the planner see the run's client as ``ctx.llm`` (unless the
        # caller's context already carries one), so ``ctx.llm.complete(...)`` inside a
        # capability is recorded, costed and linked to the invocation that made it
        given = _governance(**(governance or {}))
        overrides = {k: given[k] for k in ("policy", "approver", "approval_timeout_s") if given[k]}
        self.activity = base.recorder.minter.activity()
        #: a run of the session itself (not nested in another run or a caller's context)
        self.top = ctx is None and base.run is None
        self.tools = None if tools is None else frozenset(tools)
        # the run's tools bound what a capability it calls may hand on (``create_agent``)
        extras = {**base.extras, RUN_TOOLS: self.tools} if self.tools is not None else base.extras
        self.ctx = base.child(
            invocations=session.invocations,
            llm=base.llm if base.llm is not None else llm,
            observers=tuple(base.observers) + given["observers"],
            run=self.activity,
            extras=extras,
            **overrides,
        )
        self.guards = guards if guards is not None else Guards()
        self.steps: list[PlanStep] = []
        self.ended = False
        #: the ``terminal=True`` capability a successful dispatch ran, and its result
        self.terminal: tuple[str, Any] | None = None
        #: the invocation that ended the run that way, and why (``loop.terminal``)
        self.ended_by: tuple[str, str] | None = None
        #: ``output_type=``: the final answer is asked for again, validated (``structured_answer``)
        self.output = output
        self.pending: PlanResult | None = None  # a goal_achieved result awaiting its answer turn
        self.answered = False
        self._guarding = threading.Lock()

    # -- recording -------------------------------------------------------------

    def start(self) -> None:
        """Record the plan-run root activity (child of the caller or the session)."""
        self.ctx.recorder.record(
            PlanRunStarted(
                session=self.ctx.session,
                activity=self.activity,
                parent=self.ctx.parent,
                principal=self.ctx.principal,
                strategy=self.strategy,
                goal=self.goal,
                started=now(),
            )
        )
        notify(self.ctx, "run_start", strategy=self.strategy, goal=self.goal)
        knowledge = self.session.knowledge
        if knowledge is not None and self.top:
            knowledge.before_run(self.ctx.child(parent=self.activity), self.session.history)

    def record_entity(
        self, kind: str, content: Any, *, generated_by: str | None, index: int
    ) -> str:
        """Record a plan or critique the run produced; returns the entity IRI."""
        entity = self.ctx.recorder.minter.entity()
        at = now()
        if generated_by and generated_by != self.activity:
            # generated by a completion that has ended: PROV-CONSTRAINTS wants the
            # generation within the completion's span, so it is stamped at its end
            at = min(at, self._ended(generated_by) or at)
        self.ctx.recorder.record(
            EntityRecorded(
                session=self.ctx.session,
                entity=entity,
                kind=kind,  # type: ignore[arg-type]
                content=content,
                generated_by=generated_by or self.activity,
                at=at,
                index=index,
            )
        )
        return entity

    def _ended(self, activity: str) -> datetime | None:
        """When a recorded activity ended (``prov:endedAtTime``), if the store says so."""
        query = f"SELECT ?a ?end WHERE {{ GRAPH ?g {{ ?a {PROV.endedAtTime.n3()} ?end }} }}"
        try:
            result = self.ctx.recorder.store.query(query, {"a": IRI(activity)})
        except (StoreError, ValueError):
            return None
        for row in result if isinstance(result, Solutions) else ():
            end = row.get("end")
            if isinstance(end, Literal):
                with contextlib.suppress(ValueError):
                    return datetime.fromisoformat(end.value)
        return None

    def _terminate(
        self, stopped: StopReason, reason: str, limit: float | None, observed: float | None
    ) -> None:
        try:
            self.ctx.recorder.record(
                Terminated(
                    session=self.ctx.session,
                    activity=self.activity,
                    kind=_TERMINATION_KIND[stopped],  # type: ignore[arg-type]
                    reason=reason,
                    limit=limit,
                    observed=observed,
                    at=now(),
                )
            )
        except TrailsError:
            log.warning(
                "could not record the termination (%s) of plan run %s",
                stopped,
                self.activity,
                exc_info=True,
            )

    def _terminated_by_call(self, invocation: str, reason: str) -> None:
        """Link the run to the call that ended it (a ``trails:TerminalAction`` it generated)."""
        self.ctx.recorder.record(
            Terminated(
                session=self.ctx.session,
                activity=self.activity,
                kind="terminal",
                reason=reason,
                at=self._ended(invocation) or now(),
                caused_by=invocation,
            )
        )

    def add_step(self, step: PlanStep) -> None:
        """Append one step to the trajectory and tell observers (``step_end``)."""
        self.steps.append(step)
        notify(
            self.ctx,
            "step_end",
            call_id=step.activity_iri,
            index=len(self.steps) - 1,
            action=step.action,
            step=step,
        )

    def last_observation(self) -> str | None:
        """The latest observation, stringified (the best-effort answer of an early stop)."""
        for step in reversed(self.steps):
            if step.observation is not None:
                return stringify(step.observation)
        return None

    def finish(
        self,
        stopped: StopReason,
        *,
        answer: str | None = None,
        error: str | None = None,
        breach: Breach | None = None,
        steps: list[PlanStep] | None = None,
        terminated_by: str | None = None,
        terminated_by_call: str | None = None,
    ) -> PlanResult:
        """End the run: record its termination (an early stop, or the call that ended it)
        and its end.

        Args:
            stopped: why the run stopped.
            answer: the answer (default on early stops: the last observation).
            error: the error message for ``stopped == "error"``.
            breach: the crossed budget, for its limit and observed value.
            steps: the trajectory to return (default: the run's own).
            terminated_by: the terminal capability that ended the run (default:
                the one this run dispatched, if any).
            terminated_by_call: the invocation of that call (default: this run's;
                a nested run's, for the run that nests it).

        Returns:
            The run's ``PlanResult``.
        """
        if stopped != "goal_achieved" and answer is None:
            answer = self.last_observation()
        terminated_by = terminated_by or (
            self.terminal[0] if self.terminal and stopped == "goal_achieved" else None
        )
        ended_by: tuple[str, str] | None = None
        if terminated_by is not None:
            if terminated_by_call is None and self.ended_by is not None:
                ended_by = self.ended_by
            elif terminated_by_call is not None:
                ended_by = (terminated_by_call, reason_of(terminated_by))
        result = PlanResult(
            answer=answer,
            steps=list(self.steps if steps is None else steps),
            stopped=stopped,
            error=error,
            strategy=self.strategy,
            activity_iri=str(self.activity),
            terminated_by=terminated_by,
            terminated_by_call=ended_by[0] if ended_by else None,
            memory_id=str(self.ctx.session),
        )
        if stopped == "goal_achieved" and self.output is not None and not self.answered:
            self.pending = result  # the answer turn (``structured_answer``) ends the run
            return result
        if stopped in BUDGET_STOPS:
            assert breach is not None
            self._terminate(stopped, stopped, breach.limit, breach.observed)
            notify(self.ctx, "budget", reason=stopped, limit=breach.limit, observed=breach.observed)
        elif stopped == "max_steps":
            limit = breach.limit if breach else None
            observed = breach.observed if breach else None
            self._terminate(stopped, "max_steps", limit, observed)
        elif stopped == "error":
            self._terminate(stopped, error or "error", None, None)
        elif ended_by is not None:
            self._terminated_by_call(*ended_by)
        self.ended = True
        self.ctx.recorder.record(
            PlanRunEnded(
                session=self.ctx.session,
                activity=self.activity,
                ended=now(),
                stop_reason=stopped,
                answer=answer_text(answer),
                error=error,
            )
        )
        if stopped == "error":
            notify(self.ctx, "error", error=error, goal=self.goal, strategy=self.strategy)
        notify(self.ctx, "run_end", stopped=stopped, answer=answer, error=error, result=result)
        knowledge = self.session.knowledge
        if knowledge is not None and self.top:
            knowledge.after_run(self.ctx.child(parent=self.activity), self.llm, self.goal, answer)
        return result

    def finish_terminal(self) -> PlanResult | None:
        """End the run if a ``terminal=True`` capability ran: its result is the answer.

        Returns:
            The ``goal_achieved`` result, or None when no terminal capability ran.
        """
        if self.terminal is None:
            return None
        capability_id, observation = self.terminal
        return self.finish(
            "goal_achieved", answer=stringify(observation), terminated_by=capability_id
        )

    def provider_failed(self, exc: ModelAPIError, *, own_turn: bool = True) -> PlanResult:
        """End the run with ``stopped="error"`` because the provider failed.

        One warning line goes through ``logging`` (logger ``trails.agent``) with
        the provider's message, so a run that returns quietly is still visible.
        ``own_turn``: the run's own model turn failed (not a reflector's call); a
        provider it never reached then makes the top-level ``run`` raise (``loop.unreached``).
        """
        if own_turn:
            note_failure(exc)
        message = str(exc)
        log.warning("%s run stopped: the model provider failed: %s", self.strategy, message)
        return self.finish("error", error=message)

    def abort(self, exc: BaseException) -> None:
        """Best-effort end of a run an unexpected exception is leaving (the caller re-raises);
        an interruption (Ctrl-C, a SIGTERM handler's exit) ends it, and its session, interrupted."""
        if self.ended:
            return
        self.ended = True
        name = interruption(exc)
        stopped, message = (
            (INTERRUPTED, name) if name else ("error", f"{type(exc).__name__}: {exc}")
        )
        if name is None:
            self._terminate("error", message, None, None)
        else:
            mark_interrupted(self.ctx.lifecycle, f"{name} during a {self.strategy} run")
        try:
            self.ctx.recorder.record(
                PlanRunEnded(
                    session=self.ctx.session,
                    activity=self.activity,
                    ended=now(),
                    stop_reason=stopped,
                    error=message,
                )
            )
        except TrailsError:
            log.warning("could not record the end of plan run %s", self.activity, exc_info=True)
        if name is None:
            notify(self.ctx, "error", error=message, goal=self.goal, strategy=self.strategy)
        notify(self.ctx, "run_end", stopped=stopped, answer=None, error=message)

    def budget_stop(self, exc: BudgetExceeded) -> PlanResult:
        """End the run because a principal budget refused a spend."""
        breach = _budget_breach(exc)
        return self.finish(breach.reason, breach=breach)

    # -- turns and actions ----------------------------------------------------

    def ask(
        self,
        messages: list[Message],
        *,
        step: int,
        max_tokens: int,
        temperature: float,
        parent: str | None = None,
        model: str | ModelSpec | None = None,
        **options: Any,
    ) -> Complete:
        """The request for one reasoning turn (a loop yields it; a driver runs it)."""
        return Complete(self, messages, step, max_tokens, temperature, parent, model, options)

    def act(
        self, action: str, action_input: dict[str, Any], *, informed_by: str | None, step: int
    ) -> Dispatch:
        """The request to dispatch one action (a loop yields it; a driver runs it)."""
        return Dispatch(self, action, action_input, informed_by, step)

    def act_many(
        self,
        calls: Sequence[ToolCall],
        *,
        informed_by: str | None,
        step: int,
        max_parallel: int,
    ) -> DispatchMany:
        """The request to dispatch one turn's tool calls concurrently (native tool calling)."""
        return DispatchMany(self, calls, informed_by, step, max_parallel)

    def _turn(
        self, step: int, parent: str | None, model: str | ModelSpec | None, options: dict[str, Any]
    ) -> dict[str, Any]:
        from trails.store.terms import IRI

        turn_ctx = self.ctx.child(
            parent=IRI.trusted(parent) if parent else self.activity, step=step
        )
        return {"ctx": turn_ctx, **({} if model is None else {"model": model}), **options}

    def complete(
        self,
        messages: list[Message],
        *,
        step: int,
        max_tokens: int,
        temperature: float,
        parent: str | None = None,
        model: str | ModelSpec | None = None,
        **options: Any,
    ) -> Response:
        """One reasoning turn, recorded as an LLM completion informed by the plan run.

        ``model`` asks the client for another model for this turn (a behaviour-tree
        node's own model; a ``ModelSpec`` of another provider goes to the client
        configured for that provider); None: the client's. ``options`` go to the
        client (``response_format``, ``max_retries``, ``tools``).

        Raises:
            ModelAPIError: the provider failed.
            BudgetExceeded: a principal budget refused the spend.
        """
        extra = self._turn(step, parent, model, options)
        response: Response = self.llm.complete(
            messages, max_tokens=max_tokens, temperature=temperature, **extra
        )
        return response

    async def acomplete(
        self,
        messages: list[Message],
        *,
        step: int,
        max_tokens: int,
        temperature: float,
        parent: str | None = None,
        model: str | ModelSpec | None = None,
        **options: Any,
    ) -> Response:
        """``complete`` awaited on the client's ``acomplete`` (a thread when it has none)."""
        extra = self._turn(step, parent, model, options)
        acomplete = getattr(self.llm, "acomplete", None)
        if acomplete is None:
            call = functools.partial(
                self.llm.complete, messages, max_tokens=max_tokens, temperature=temperature, **extra
            )
            response: Response = await asyncio.to_thread(call)
            return response
        response = await acomplete(
            messages, max_tokens=max_tokens, temperature=temperature, **extra
        )
        return response

    def stream(
        self,
        messages: list[Message],
        *,
        step: int,
        max_tokens: int,
        temperature: float,
        parent: str | None = None,
        model: str | ModelSpec | None = None,
        **options: Any,
    ) -> Iterator[Chunk | Response]:
        """``complete`` streamed: text chunks, then the recorded ``Response``."""
        extra = self._turn(step, parent, model, options)
        pieces: Iterator[Chunk | Response] = self.llm.stream(
            messages, max_tokens=max_tokens, temperature=temperature, **extra
        )
        return pieces

    def astream(
        self,
        messages: list[Message],
        *,
        step: int,
        max_tokens: int,
        temperature: float,
        parent: str | None = None,
        model: str | ModelSpec | None = None,
        **options: Any,
    ) -> AsyncIterator[Chunk | Response]:
        """``stream`` for asyncio (the client's ``astream``)."""
        extra = self._turn(step, parent, model, options)
        pieces: AsyncIterator[Chunk | Response] = self.llm.astream(
            messages, max_tokens=max_tokens, temperature=temperature, **extra
        )
        return pieces

    def dispatch(
        self,
        action: str,
        action_input: dict[str, Any],
        *,
        informed_by: str | None,
        step: int,
        tool_call_id: str | None = None,
    ) -> tuple[Any, str | None, bool]:
        """Invoke ``action``; a trails error becomes the observation ``"error: <message>"``.

        Safe to call from several threads at once (parallel tool calls): the
        guards are consulted one call at a time, and each call finds its own
        invocation.

        Args:
            action: the capability id.
            action_input: its arguments.
            informed_by: the completion activity that chose the action.
            step: the step index recorded on the invocation.
            tool_call_id: the model's tool-call id the invocation runs (native
                tool calling), recorded on it as ``trails:toolCallId``.

        Returns:
            The observation; the invocation activity IRI (a refused call, of an
            unknown id, one the agent card hides or one outside the run's tools, is
            recorded with status ``refused``; None when a guard refused the call:
            its ``trails:PolicyDecision`` is the record); and whether dispatch failed.

        Raises:
            BudgetExceeded: a principal budget refused a spend (the run stops).
            StoreError: the invocation could not be recorded.
        """
        from trails.store.terms import IRI

        refused_why = refusal_reason(self, action)
        if refused_why is not None:  # unknown, hidden by the card, or not offered: recorded
            reason, told = refused_why
            return record_refused(
                self,
                action,
                action_input,
                reason=reason,
                told=told,
                informed_by=informed_by,
                step=step,
                tool_call_id=tool_call_id,
            )
        if self.guards.active:
            with self._guarding:
                refused = refusal(self, action, action_input, informed_by, step)
            if refused is not None:
                return refused, None, True
            if self.guards.dry_run and _registered(action):
                return dry_dispatch(
                    self,
                    action,
                    action_input,
                    informed_by=informed_by,
                    step=step,
                    tool_call_id=tool_call_id,
                )
        parent = IRI.trusted(informed_by) if informed_by else self.activity
        made = _Tee(self.session.invocations)
        ctx = self.ctx.child(parent=parent, step=step, tool_call_id=tool_call_id, invocations=made)
        failed = False
        try:
            observation = invoke(action, action_input, ctx=ctx)
        except (BudgetExceeded, StoreError):
            raise
        except TrailsError as exc:
            observation, failed = f"error: {exc}", True
        activity = str(made[-1].activity) if made else None  # this call's, written last
        screens = getattr(self.session, "output_screens", ())
        if screens and not failed and activity is not None:
            withheld = screen(self, screens, action, action_input, observation, activity)
            if withheld is not None:  # the model never sees it; the refusal is recorded
                observation, failed = withheld, True
        if not failed and self.terminal is None:
            why = terminal_reason(action, observation, self.guards.stop_condition)
            if why is not None:
                with self._guarding:
                    if self.terminal is None:  # a parallel sibling may have ended it first
                        self.terminal = (action, observation)
                        self.ended_by = (activity, why) if activity else None
        return observation, activity, failed


class _Tee(list[InvocationRecord]):
    """The invocations one dispatch made, each also appended to the session's list."""

    def __init__(self, session: list[InvocationRecord]) -> None:
        super().__init__()
        self.session = session

    def append(self, record: InvocationRecord) -> None:
        super().append(record)
        self.session.append(record)
