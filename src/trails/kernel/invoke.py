"""``invoke``: validate, ask the tool policy, run the handler, record the invocation.

Every call is recorded as one ``trails:CapabilityInvocation`` activity written
complete when the call ends, whatever the outcome: ``ok``, ``invalid``
(arguments rejected), ``refused`` (a callable precondition of the capability
did not hold: ``PreconditionFailed``), ``error`` (the handler raised) or, via the policy, a
``trails:PolicyDecision``. A capability with ``side_effects=True`` is also
written *ahead*: once its arguments are valid and the policy allowed it, its
start (inputs, principal, plan, start time) is recorded before the handler
runs, and the handler does not run when that write fails (the caller gets the
``StoreError``). A crash while the handler runs therefore leaves a call that
visibly started, which recovery marks interrupted; pure capabilities keep one
write. A ``KeyboardInterrupt`` (Ctrl-C) or ``SystemExit`` (a SIGTERM handler's
``sys.exit``) raised while the handler runs ends the call ``interrupted``, its
error naming the exception, notes the interruption on the session (which then
ends ``interrupted``: ``trails.kernel.lifecycle``) and goes on unchanged, so the
program still stops. A handler's own exception reaches the caller as
``CapabilityError`` with the original on ``__cause__``; trails errors pass
through unchanged so planners can show them to the model.

``ainvoke`` is the same call for asyncio: ``invoke`` itself (one recorded
path) runs in a worker thread, so the event loop stays free, and an
``async def`` handler runs on the caller's loop (``trails.kernel.handlers``).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from trails.errors import (
    CapabilityError,
    PolicyDenied,
    PreconditionFailed,
    TrailsError,
    ValidationError,
)
from trails.kernel.context import Context, InvocationRecord, _current, current_context, now
from trails.kernel.handlers import caller_loop, run_handler
from trails.kernel.lifecycle import INTERRUPTED, interruption, mark_interrupted
from trails.kernel.observe import notify
from trails.kernel.registry import CapabilitySpec, get_capability, unmet_precondition
from trails.kernel.riders import Riders
from trails.prov.content import canonical_json, sha256_hex, unicode_problem
from trails.prov.events import CapabilityInvoked, CapabilityStarted, Event, PolicyDecided
from trails.store.terms import IRI

__all__ = ["ainvoke", "invoke"]

log = logging.getLogger(__name__)

# ``ainvoke``'s worker threads: more than asyncio's default pool (cpu + 4), since
# each mostly waits (on a model, on I/O, or on its async handler on the loop).
_POOL = ThreadPoolExecutor(max_workers=64, thread_name_prefix="trails-ainvoke")


def invoke(
    capability_id: str, args: Mapping[str, Any] | None = None, *, ctx: Context | None = None
) -> Any:
    """Run a registered capability and record it.

    Args:
        capability_id: the id given to ``@capability``.
        args: keyword arguments for the handler (validated against its signature).
        ctx: the calling context; when omitted, the context of the capability
            handler running now (a nested call), else the process default session.

    Returns:
        Whatever the handler returned.

    Raises:
        UnknownCapability: no capability has that id.
        ValidationError: the arguments do not fit (recorded as ``invalid``).
        PolicyDenied: the context's tool policy refused the call (recorded).
        PreconditionFailed: a callable precondition of the capability did not hold
            (recorded as ``refused``, the handler did not run).
        CapabilityError: the handler raised (recorded as ``error``).
        StoreError: the invocation could not be recorded (for a capability with
            side effects whose start could not be written, the handler did not run).
    """
    spec = get_capability(capability_id)
    if ctx is None:
        ctx = current_context()
    activity = ctx.recorder.minter.activity()
    started = now()
    raw_args: Any = dict(args) if isinstance(args, Mapping) else args
    args_text = canonical_json(raw_args)  # checked here, hashed again only by the recorder
    problem = unicode_problem(args_text)
    if problem is not None:
        error = ValidationError(spec.id, f"arguments contain {problem}")
        recorded = canonical_json(problem)  # the escaped description is what gets recorded
        _finish(
            ctx,
            spec,
            activity,
            started,
            status="invalid",
            args=problem,
            result=None,
            error=str(error),
            args_text=recorded,
        )
        raise error
    try:
        kwargs = spec.validate(args)
    except ValidationError as exc:
        _finish(
            ctx,
            spec,
            activity,
            started,
            status="invalid",
            args=raw_args,
            result=None,
            error=str(exc),
            args_text=args_text,
        )
        raise
    unmet = unmet_precondition(spec)
    if unmet is not None:
        refused = PreconditionFailed(spec.id, unmet)
        _finish(
            ctx,
            spec,
            activity,
            started,
            status="refused",
            args=raw_args,
            result=None,
            error=str(refused),
            args_text=args_text,
        )
        raise refused
    decided: list[Event] = []  # an allowing decision is written with the call it let run
    if ctx.policy is not None:
        decided.append(_ask_policy(ctx, spec, kwargs, raw_args, activity))
    ahead = spec.side_effects
    if ahead:
        _write_ahead(ctx, spec, activity, started, raw_args, decided=decided)
        decided = []
    notify(ctx, "tool_start", call_id=str(activity), capability=spec.id, args=raw_args)
    riders = Riders(activity)  # events the handler records with this invocation's write
    ctx.tracker.scope(str(activity))  # what its handler books, summed on its envelope
    inner = ctx.child(
        parent=activity, step=None, riders=riders, tool_call_id=None, tool_timeout_s=None
    )
    token = _current.set(inner)

    def failed(message: str, status: str = "error") -> None:
        _finish(
            ctx,
            spec,
            activity,
            started,
            status=status,
            args=raw_args,
            result=None,
            error=message,
            args_text=args_text,
            ahead=ahead,
            decided=decided,
            riders=riders,
        )

    try:
        result = run_handler(spec, inner, kwargs, cap_s=ctx.tool_timeout_s)
    except TrailsError as exc:
        failed(str(exc))
        raise
    except Exception as exc:
        message = f"{type(exc).__name__}: {exc}"
        failed(message)
        raise CapabilityError(spec.id, message) from exc
    except BaseException as exc:
        name = interruption(exc)
        if name is not None:
            _interrupted(ctx, spec, activity, name, lambda: failed(name, INTERRUPTED))
        raise
    finally:
        _current.reset(token)
    result_text = canonical_json(result)
    problem = unicode_problem(result_text)
    if problem is not None:
        message = f"the result cannot be recorded: it contains {problem}"
        failed(message)
        raise CapabilityError(spec.id, message)
    _finish(
        ctx,
        spec,
        activity,
        started,
        status="ok",
        args=raw_args,
        result=result,
        error=None,
        args_text=args_text,
        result_text=result_text,
        ahead=ahead,
        decided=decided,
        riders=riders,
    )
    return result


def _interrupted(
    ctx: Context, spec: CapabilitySpec, activity: IRI, name: str, record: Callable[[], None]
) -> None:
    """Record a call an interruption cut short, and note it on the session; the
    interruption goes on whatever happens here (a failed write is logged)."""
    mark_interrupted(ctx.lifecycle, f"{name} during a call to {spec.id}")
    try:
        record()
    except TrailsError:
        log.warning("could not record the interrupted call %s", activity, exc_info=True)


def _write_ahead(
    ctx: Context,
    spec: CapabilitySpec,
    activity: IRI,
    started: datetime,
    args: Any,
    *,
    decided: Sequence[Event] = (),
) -> None:
    """Record that a side-effecting call starts (with the policy decision that let it,
    in the same write); raises ``StoreError`` (and the handler does not run) when that
    cannot be written."""
    ctx.recorder.record_all(
        [
            *decided,
            CapabilityStarted(
                session=ctx.session,
                activity=activity,
                parent=ctx.parent,
                principal=ctx.principal,
                capability_id=spec.id,
                description=spec.description,
                side_effects=True,
                terminal=spec.terminal,
                started=started,
                inputs=args,
                step=ctx.step,
                tool_call_id=ctx.tool_call_id,
                high_risk=spec.high_risk,
                screen_output=spec.screen_output,
                granted_to=spec.granted_to,
            ),
        ]
    )


async def ainvoke(
    capability_id: str, args: Mapping[str, Any] | None = None, *, ctx: Context | None = None
) -> Any:
    """``invoke`` for asyncio: same arguments, same recorded invocation.

    Sync handlers run in a worker thread; ``async def`` handlers run on this
    event loop. ``timeout_s`` applies to both.

    Raises:
        See ``invoke``; ``CapabilityTimeout`` when the call ran past ``timeout_s``.
    """
    import asyncio  # imported when first used: `import trails` does not load asyncio

    loop = asyncio.get_running_loop()
    token = caller_loop.set(loop)
    try:
        context = contextvars.copy_context()
    finally:
        caller_loop.reset(token)
    return await loop.run_in_executor(
        _POOL, lambda: context.run(invoke, capability_id, args, ctx=ctx)
    )


def _finish(
    ctx: Context,
    spec: CapabilitySpec,
    activity: IRI,
    started: datetime,
    *,
    status: str,
    args: Any,
    result: Any,
    error: str | None,
    args_text: str,
    result_text: str | None = None,
    ahead: bool = False,
    decided: Sequence[Event] = (),
    riders: Riders | None = None,
) -> None:
    """Record one finished call (any outcome), tell the observers, keep its envelope.

    ``ctx``, ``spec``, ``activity`` and ``started`` say which call; the rest, by
    keyword, how it ended: ``args`` / ``args_text`` the recorded arguments and
    their canonical JSON, ``result`` / ``result_text`` likewise (``ok`` only),
    ``error`` the message; ``ahead`` when its start was written ahead, ``decided``
    the allowing policy decision and ``riders`` the handler's events, written
    in the same write.
    """
    ended = now()
    invoked = CapabilityInvoked(
        session=ctx.session,
        activity=activity,
        parent=ctx.parent,
        principal=ctx.principal,
        capability_id=spec.id,
        description=spec.description,
        side_effects=spec.side_effects,
        terminal=spec.terminal,
        started=started,
        ended=ended,
        status=status,  # type: ignore[arg-type]
        inputs=args,
        output=result,
        error=error,
        step=ctx.step,
        ahead=ahead,
        tool_call_id=ctx.tool_call_id,
        high_risk=spec.high_risk,
        screen_output=spec.screen_output,
        granted_to=spec.granted_to,
    ).with_texts(args_text, result_text)  # encoded once, to check them: not again to record
    riding = riders.close() if riders is not None else ()
    ctx.recorder.record_all([*decided, invoked, *riding], hooked=invoked)
    usd, input_tokens, output_tokens, nested = ctx.tracker.settle(str(activity))
    ctx.tracker.book(  # the invocation's envelope: what it spent, counted where it was spent
        tag=spec.id,
        principal=ctx.principal,
        usd=usd,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        activity=str(activity),
        parent=ctx.parent,
        dedupe="child" if nested else None,
    )
    duration_ms = (ended - started).total_seconds() * 1000.0
    if status == "ok":
        notify(
            ctx,
            "tool_end",
            call_id=str(activity),
            capability=spec.id,
            duration_ms=duration_ms,
            result=result,
        )
    else:
        notify(
            ctx,
            "tool_error",
            call_id=str(activity),
            capability=spec.id,
            status=status,
            error=error,
            duration_ms=duration_ms,
        )
    if ctx.invocations is not None:
        ctx.invocations.append(
            InvocationRecord(
                capability=spec.id,
                args=args,
                result=result,
                args_sha256=sha256_hex(args_text),
                result_sha256=sha256_hex(result_text) if result_text is not None else None,
                status=status,
                activity=activity,
                error=error,
                started=started,
                ended=ended,
            )
        )


def _ask_policy(
    ctx: Context, spec: CapabilitySpec, kwargs: dict[str, Any], args: Any, invocation: IRI
) -> Event:
    """Ask the policy (and, on review, the approver); raise on deny, after recording the
    decision; return an allowing decision unwritten, for the call's own write."""
    from trails.kernel.policy import review_call

    policy = ctx.policy
    assert policy is not None
    verdict = policy.decide(spec, kwargs, ctx)
    decision, reason = verdict.decision, verdict.reason
    review = None
    if decision == "review":
        timeout = ctx.approval_timeout_s
        review = review_call(ctx.approver, spec, kwargs, reason, timeout)
        note = f"review: {'approved' if review.approved else 'not approved'}"
        if review.note:
            note = f"{note} ({review.note})"
        reason = f"{reason}; {note}" if reason else note
        decision = "allow" if review.approved else "deny"
    decided = PolicyDecided(
        session=ctx.session,
        activity=ctx.recorder.minter.activity(),
        parent=ctx.parent,
        principal=ctx.principal,
        policy=policy.name,
        capability_id=spec.id,
        side_effects=spec.side_effects,
        decision=decision,
        reason=reason,
        rule=getattr(verdict, "rule", None),
        review=None if review is None else review.outcome,
        reviewer=None if review is None else review.reviewer,
        approval_timeout_s=ctx.approval_timeout_s if review is not None else None,
        invocation=str(invocation) if decision == "allow" else None,
        arguments=args,
        at=now(),
    )
    if decision == "deny":
        ctx.recorder.record(decided)
    notify(
        ctx,
        "policy_decision",
        call_id=str(invocation),
        capability=spec.id,
        decision=decision,
        reason=reason,
        rule=getattr(verdict, "rule", None),
        review=None if review is None else review.outcome,
        reviewer=None if review is None else review.reviewer,
    )
    if decision == "deny":
        raise PolicyDenied(spec.id, reason or "denied")
    return decided
