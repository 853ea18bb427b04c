"""Guards every planner puts in front of a dispatch: budgets, validators, a reflector, dry runs.

A planner proposes an action (a completion chose a capability and its
arguments); before ``invoke`` runs it, the run's guards may refuse it:

1. ``tool_budgets``: how many times the run may dispatch each capability;
2. ``validate_action``: functions ``(capability_id, action_input) -> reason | None``;
3. ``reflect_before_action``: one LLM call that reasons about the action and may
   veto it with a reason.

Each refusal is recorded as a ``trails:PolicyDecision`` (``deny``, with the
guard as the deciding policy and its reason), informed by the completion that
proposed the action, and the model sees ``error: refused: <reason>``. With
``dry_run=True`` nothing is executed: the action is recorded as a
``trails:CapabilityInvocation`` with status ``dry_run`` (what would have run,
with its arguments) and the model gets a simulated observation, or the one the
capability's own ``dry_run`` function returns (``handler.dry_run = fn``, called
with the same arguments). The tool policy is still asked, so a dry run shows
what it would deny (recorded as a denial) and what would need review (said in
the observation); no approver is asked.

The guard functions take the run as ``GuardedRun``, the part of a ``PlanRun``
they read, so this module does not import ``loop.run`` (which imports it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from trails.agent.loop.parse import json_candidates
from trails.agent.screening import OutputScreened
from trails.errors import TrailsError, UserError, ValidationError
from trails.kernel.context import now
from trails.kernel.observe import notify
from trails.kernel.registry import get_capability
from trails.llm.types import Message
from trails.prov.events import CapabilityInvoked, PolicyDecided

if TYPE_CHECKING:
    from trails.kernel.context import Context
    from trails.store.terms import IRI

__all__ = [
    "REFLECT_PROMPT",
    "ActionValidator",
    "GuardedRun",
    "Guards",
    "check_guards",
    "screen",
]

ActionValidator = Callable[[str, dict[str, Any]], "str | None"]
"""``validate_action(capability_id, action_input)``: None to allow, a reason to refuse."""

REFLECT_PROMPT = """\
You check an agent's next action before it runs. Goal: {goal}

Proposed action: {action} with arguments {arguments}
{side_effects}
Reply with exactly one JSON object: {{"veto": true or false, "reason": "<why>"}}. \
Veto only when the action is unsafe, irreversible without need, or does not serve the goal."""


@dataclass
class Guards:
    """The checks a run makes before each dispatch (see the module docstring)."""

    validators: tuple[ActionValidator, ...] = ()
    budgets: Mapping[str, int] = field(default_factory=dict)
    reflect: Any = None  # None, True (the run's client) or an LLM client
    dry_run: bool = False
    calls: Counter[str] = field(default_factory=Counter)
    #: ``stop_condition(tool_name, result)``: True ends the run after that call (``loop.terminal``)
    stop_condition: Callable[[str, str], bool] | None = None

    @property
    def active(self) -> bool:
        return bool(self.validators or self.budgets or self.reflect or self.dry_run)


class GuardedRun(Protocol):
    """What the guards read of a run (``PlanRun`` satisfies it)."""

    @property
    def guards(self) -> Guards:
        """The run's guards."""

    @property
    def goal(self) -> str:
        """The run's goal."""

    @property
    def llm(self) -> Any:
        """The run's LLM client (the reflector's, with ``reflect_before_action=True``)."""

    @property
    def ctx(self) -> Context:
        """The run's context."""

    @property
    def activity(self) -> IRI:
        """The run's plan-run activity."""


def check_guards(
    validate_action: Any,
    tool_budgets: Any,
    reflect_before_action: Any,
    dry_run: Any,
    *,
    stop_condition: Any = None,
) -> Guards:
    """The planner keywords as ``Guards`` (with the run's ``stop_condition``, which is
    asked after each successful call rather than before it).

    Raises:
        UserError: a validator that is not callable, a bad budget, a reflector
            without ``complete``, a non-bool ``dry_run``, or a ``stop_condition``
            that is not a function.
    """
    if stop_condition is not None and not callable(stop_condition):
        raise UserError(
            f"stop_condition= must be a function (tool_name, result) -> bool, "
            f"not {stop_condition!r}"
        )
    if validate_action is None:
        validators: tuple[ActionValidator, ...] = ()
    elif callable(validate_action):
        validators = (validate_action,)
    elif isinstance(validate_action, Sequence) and all(callable(v) for v in validate_action):
        validators = tuple(validate_action)
    else:
        raise UserError(
            f"validate_action= must be a function or a list of them, not {validate_action!r}"
        )
    budgets: dict[str, int] = {}
    if tool_budgets is not None:
        if not isinstance(tool_budgets, Mapping):
            raise UserError(f"tool_budgets= must map capability ids to ints, not {tool_budgets!r}")
        for cid, limit in tool_budgets.items():
            if not isinstance(cid, str) or not cid:
                raise UserError(f"tool_budgets= keys must be capability ids, not {cid!r}")
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                raise UserError(f"tool_budgets[{cid!r}] must be an int >= 0, not {limit!r}")
            budgets[cid] = limit
    reflect = reflect_before_action
    if reflect is False:
        reflect = None
    if reflect not in (None, True) and not callable(getattr(reflect, "complete", None)):
        raise UserError(
            "reflect_before_action= must be True (the run's model) or an LLM client, "
            f"not {reflect!r}"
        )
    if not isinstance(dry_run, bool):
        raise UserError(f"dry_run= must be True or False, not {dry_run!r}")
    return Guards(validators, budgets, reflect, dry_run, stop_condition=stop_condition)


def _name(fn: Any) -> str:
    return str(getattr(fn, "__name__", type(fn).__name__))


def refusal(
    plan: GuardedRun, action: str, action_input: dict[str, Any], informed_by: str | None, step: int
) -> str | None:
    """The observation of a refused action (its refusal recorded as a decision), or None.

    A spent tool budget reads ``error: tool budget of ... exhausted``; a
    validator's or the reflector's refusal ``error: refused: <reason>``.
    """
    guards: Guards = plan.guards
    limit = guards.budgets.get(action)
    found: tuple[str, str] | None = None
    if limit is not None and guards.calls[action] >= limit:
        found = (
            f"tool_budget:{action}={limit}",
            f"tool budget of {action!r} exhausted ({limit} calls)",
        )
    for validator in guards.validators if found is None else ():
        reason = validator(action, action_input)
        if reason is not None:
            found = (f"validate_action:{_name(validator)}", str(reason))
            break
    if found is None and guards.reflect is not None:
        veto = _reflect(plan, action, action_input, informed_by, step)
        if veto is not None:
            found = ("reflect_before_action", veto)
    if found is None:
        guards.calls[action] += 1
        return None
    rule, reason = found
    guard = rule.split(":", 1)[0]
    _record_refusal(
        plan,
        guard,
        rule=rule,
        action=action,
        action_input=action_input,
        reason=reason,
        informed_by=informed_by,
    )
    return f"error: {reason}" if guard == "tool_budget" else f"error: refused: {reason}"


def screen(
    plan: GuardedRun,
    screens: Sequence[Callable[[str, Any], str | None]],
    action: str,
    action_input: dict[str, Any],
    output: Any,
    invocation: str,
) -> str | None:
    """What the model sees instead of ``output`` (the refusal recorded), or None to show it.

    ``Session(screen_output=)``'s functions read the output of the call ``invocation``; the
    first that returns a reason withholds it, recorded as a ``screen_output`` denial informed
    by the invocation (``trails.agent.screening``); an output they all let through is recorded
    as screened (``OutputScreened``).
    """
    for fn in screens:
        reason = fn(action, output)
        if reason is not None:
            _record_refusal(
                plan,
                "screen_output",
                rule=f"screen_output:{_name(fn)}",
                action=action,
                action_input=action_input,
                reason=str(reason),
                informed_by=invocation,
            )
            return f"error: output withheld: {reason}"
    ctx = plan.ctx
    ctx.recorder.record(
        OutputScreened(
            session=ctx.session, invocation=invocation, screens=tuple(_name(fn) for fn in screens)
        )
    )
    return None


def _record_refusal(
    plan: GuardedRun,
    guard: str,
    *,
    rule: str,
    action: str,
    action_input: dict[str, Any],
    reason: str,
    informed_by: str | None,
) -> None:
    ctx = plan.ctx
    decision = ctx.recorder.minter.activity()
    side_effects = _side_effects(action)
    ctx.recorder.record(
        PolicyDecided(
            session=ctx.session,
            activity=decision,
            parent=informed_by or str(plan.activity),
            principal=ctx.principal,
            policy=guard,
            capability_id=action,
            side_effects=side_effects,
            decision="deny",
            reason=reason,
            rule=rule,
            arguments=action_input,
            at=now(),
        )
    )
    notify(
        ctx,
        "policy_decision",
        call_id=str(decision),
        capability=action,
        decision="deny",
        reason=reason,
        rule=rule,
        review=None,
        reviewer=None,
    )


def _side_effects(action: str) -> bool | None:
    try:
        return get_capability(action).side_effects
    except TrailsError:
        return None


def _reflect(
    plan: GuardedRun, action: str, action_input: dict[str, Any], informed_by: str | None, step: int
) -> str | None:
    from trails.prov.content import canonical_json

    client = plan.llm if plan.guards.reflect is True else plan.guards.reflect
    effects = _side_effects(action)
    prompt = REFLECT_PROMPT.format(
        goal=plan.goal,
        action=action,
        arguments=canonical_json(action_input),
        side_effects="It has side effects: it changes the world." if effects else "",
    )
    from trails.store.terms import IRI

    turn_ctx = plan.ctx.child(
        parent=IRI.trusted(informed_by) if informed_by else plan.activity, step=step
    )
    response = client.complete([Message("user", prompt)], max_tokens=256, ctx=turn_ctx)
    for obj in json_candidates(response.text or ""):
        if isinstance(obj, dict) and "veto" in obj:
            if obj.get("veto") is True:
                return str(obj.get("reason") or "vetoed by the reflector")
            return None
    return None  # an unreadable reflection does not stop the action


def dry_dispatch(
    plan: GuardedRun,
    action: str,
    action_input: dict[str, Any],
    *,
    informed_by: str | None,
    step: int,
    tool_call_id: str | None = None,
) -> tuple[Any, str | None, bool]:
    """Record what would have run, run nothing, and return a simulated observation."""
    spec = get_capability(action)
    ctx = plan.ctx
    try:
        kwargs = spec.validate(action_input)
    except ValidationError as exc:
        return f"error: {exc}", None, True
    review = ""
    if ctx.policy is not None:  # what the policy would say; nobody is asked in a dry run
        verdict = ctx.policy.decide(spec, kwargs, ctx)
        if verdict.decision == "deny":
            rule = getattr(verdict, "rule", None) or "deny"
            reason = verdict.reason or "denied"
            _record_refusal(
                plan,
                ctx.policy.name,
                rule=rule,
                action=action,
                action_input=action_input,
                reason=reason,
                informed_by=informed_by,
            )
            return f"error: policy denied {action!r}: {reason}", None, True
        if verdict.decision == "review":
            review = f" (it would need a reviewer's approval: {verdict.reason})"
    simulate = getattr(spec.handler, "dry_run", None)
    observation: Any = (
        simulate(**kwargs)
        if callable(simulate)
        else f"dry run: {action} was not executed; assume it succeeded{review}"
    )
    activity = ctx.recorder.minter.activity()
    at = now()
    ctx.recorder.record(
        CapabilityInvoked(
            session=ctx.session,
            activity=activity,
            parent=informed_by or str(plan.activity),
            principal=ctx.principal,
            capability_id=spec.id,
            description=spec.description,
            side_effects=spec.side_effects,
            terminal=spec.terminal,
            started=at,
            ended=at,
            status="dry_run",
            inputs=action_input,
            error=None,
            step=step,
            tool_call_id=tool_call_id,
        )
    )
    notify(
        ctx,
        "tool_dry_run",
        call_id=str(activity),
        capability=spec.id,
        args=action_input,
        observation=observation,
    )
    return observation, str(activity), False
