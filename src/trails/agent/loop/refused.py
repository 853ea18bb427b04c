"""Refused calls: a model asked for a tool the run does not offer, and the graph says so.

A model may name a capability nobody registered, or one the session's agent
card hides (ADR-0015), or one outside the run's ``tools=``. Nothing runs: the
model sees ``error: <reason>`` and corrects course. The attempt is still
evidence: it is recorded as a ``trails:CapabilityInvocation`` (a plain
``prov:Activity``) with status ``refused``, the reason as its error message,
the capability id the model asked for (``prov:hadPlan`` of its association)
and the arguments it gave (a ``trails:CapabilityInput`` the call used),
informed by the completion that proposed it. The query pack's
``failed-invocations`` lists it with the other failed calls; observers get a
``tool_error`` event with status ``refused``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Set
from typing import TYPE_CHECKING, Any, Protocol

from trails.agent.loop.tools import UNREGISTERED, card_grants
from trails.errors import UnknownCapability
from trails.kernel.context import now
from trails.kernel.observe import notify
from trails.kernel.registry import get_capability
from trails.prov.events import CapabilityInvoked

if TYPE_CHECKING:
    from trails.kernel.context import Context
    from trails.store.terms import IRI

__all__ = ["RUN_TOOLS", "RefusingRun", "record_refused", "refusal_reason"]

#: The ``Context.extras`` key holding the capability ids a run offers (absent: all of them);
#: a capability that starts agents of its own (``create_agent``) hands on no more than these.
RUN_TOOLS = "trails.run_tools"


class RefusingRun(Protocol):
    """What a refusal reads of a run (``PlanRun`` satisfies it; this module does not
    import ``loop.run``, which imports it)."""

    @property
    def tools(self) -> Set[str] | None:
        """The ids the run offers (None: every registered capability)."""

    @property
    def session(self) -> Any:
        """The session (its ``card``)."""

    @property
    def ctx(self) -> Context:
        """The run's context."""

    @property
    def activity(self) -> IRI:
        """The run's plan-run activity."""


def refusal_reason(plan: RefusingRun, action: str) -> tuple[str, str] | None:
    """Why ``action`` may not run in ``plan``, as recorded and as told to the model (None: it may).

    An unregistered id reads ``unknown capability ...`` (with the registered
    ids); a registered one the session's agent card does not grant is recorded as
    ``capability ... is hidden by the session's agent card`` but told to the model
    as one outside the run's ``tools=``, ``capability ... is not among this run's
    tools (...)``: the card hides a capability's existence from the agent, not
    from the auditor.
    """
    try:
        get_capability(action)
    except UnknownCapability as exc:
        return str(exc), str(exc)
    if plan.tools is None or action in plan.tools:
        return None
    offered = ", ".join(sorted(plan.tools)) or "none"
    told = f"capability {action!r} is not among this run's tools ({offered})"
    grants = card_grants(getattr(plan.session, "card", None))
    if grants is not None and not any(fnmatch.fnmatchcase(action, g) for g in grants):
        return f"capability {action!r} is hidden by the session's agent card", told
    return told, told


def record_refused(
    plan: RefusingRun,
    action: str,
    action_input: Any,
    *,
    reason: str,
    told: str | None = None,
    informed_by: str | None,
    step: int,
    tool_call_id: str | None = None,
) -> tuple[str, str, bool]:
    """Record the refused call ``action`` and return ``(observation, activity, True)``.

    Args:
        plan: the run the model asked in.
        action: the capability id the model asked for.
        action_input: the arguments it gave.
        reason: why the call was refused, as recorded (``refusal_reason``).
        told: what the model is told instead, when that differs (a card-hidden capability).
        informed_by: the completion that proposed the call.
        step: the step index.
        tool_call_id: the model's tool-call id (native tool calling).

    Returns:
        The observation ``error: <reason>``, the refused invocation's IRI, and True
        (dispatch failed).

    Raises:
        StoreError: the refusal could not be recorded.
    """
    ctx = plan.ctx
    try:
        spec = get_capability(action)
        description, side_effects, terminal = spec.description, spec.side_effects, spec.terminal
    except UnknownCapability:
        description, side_effects, terminal = UNREGISTERED, False, False
    activity = ctx.recorder.minter.activity()
    at = now()
    ctx.recorder.record(
        CapabilityInvoked(
            session=ctx.session,
            activity=activity,
            parent=informed_by or str(plan.activity),
            principal=ctx.principal,
            capability_id=action,
            description=description,
            side_effects=side_effects,
            terminal=terminal,
            started=at,
            ended=at,
            status="refused",
            inputs=action_input,
            error=reason,
            step=step,
            tool_call_id=tool_call_id,
        )
    )
    notify(
        ctx,
        "tool_error",
        call_id=str(activity),
        capability=action,
        status="refused",
        error=reason,
        duration_ms=0.0,
    )
    return f"error: {told or reason}", str(activity), True
