"""ReAct: think, act, observe, until the model says ``finish``.

On every turn the model replies with a JSON block holding ``thought``,
``action`` and ``action_input``; the planner dispatches the action through
``invoke`` and feeds the observation back as the next user message. A
``TrailsError`` from dispatch becomes the observation (``"error: <message>"``)
so the model can correct course. A malformed reply earns one nudge-retry; a
second one in a row ends the run with ``stopped="error"``. Budgets are checked
before each turn's LLM call; ``max_steps`` counts every turn, retries included.
A successful call of a ``terminal=True`` capability ends the run at once, its
result the answer: the model is not asked again.

Provenance: one ``trails:ReActPlan`` activity per run, one
``trails:LLMCompletion`` per turn informed by it, and each capability
invocation informed by the completion that chose it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trails.agent.loop import (
    DEFAULT_MAX_PARALLEL_TOOLS,
    ActionValidator,
    Breach,
    Guards,
    Limits,
    Loop,
    Output,
    PlanRun,
    ToolCalling,
    ToolFilter,
    ToolsSpec,
    abatch_entry,
    activity_of,
    arun_entry,
    astream_entry,
    batch_entry,
    check_guards,
    check_limits,
    check_output,
    check_positive_int,
    check_tool_calling,
    discover_tools,
    governance,
    guarded,
    native_loop,
    offered_tools,
    open_pass,
    parse_step,
    per_call_tokens,
    render_catalogue,
    run_entry,
    stream_entry,
    stringify,
)
from trails.agent.planners.base import PlanStep
from trails.agent.strategies import register_strategy
from trails.errors import ModelAPIError, ReplyParseError

if TYPE_CHECKING:
    from trails.agent.context import Session
    from trails.kernel.context import Context, ToolPolicy
    from trails.kernel.policy import Approver

__all__ = [
    "NAME",
    "ToolFilter",
    "ToolsSpec",
    "abatch",
    "arun",
    "astream",
    "batch",
    "build_system_prompt",
    "discover_tools",
    "parse_step",
    "run",
    "stream",
]

#: The strategy name (``Session(strategy=...)``, ``trails:strategy``).
NAME = "react"

_CONTRACT = """\
You are a ReAct agent. Work toward the goal one step at a time: think, call one \
tool, read its observation, repeat.

Reply on every turn with exactly one fenced ```json block holding one object:
{"thought": "<your reasoning>", "action": "<a tool id, or finish>", "action_input": {<arguments>}}
When the goal is achieved, reply with "action": "finish" and the answer in "final_answer":
{"thought": "<why>", "action": "finish", "action_input": {}, "final_answer": "<answer>"}
Observations come back as user messages starting with "Observation:". An observation \
starting with "error:" means the call failed: read the message and correct course."""

NUDGE = (
    "Your last reply could not be used ({problem}). Reply with exactly one fenced ```json "
    'block holding {{"thought": ..., "action": ..., "action_input": {{...}}}}, or '
    '"action": "finish" with "final_answer".'
)


def build_system_prompt(goal: str, tool_specs: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """Assemble the ReAct system prompt: the format contract, the goal, the tool list.

    Args:
        goal: the goal text.
        tool_specs: ``(capability_id, metadata)`` pairs from ``discover_tools``.

    Returns:
        The system prompt.
    """
    return f"{_CONTRACT}\n\nGoal: {goal}\n\nTools:\n{render_catalogue(tool_specs)}"


def _steps(
    goal: str,
    *,
    llm: Any,
    session: Session,
    ctx: Context | None = None,
    max_steps: int = 10,
    tools: ToolsSpec = None,
    tool_filter: ToolFilter = None,
    max_tokens_per_step: int | None = None,
    temperature: float = 0.0,
    max_cost_usd: float | None = None,
    max_tokens: int | None = None,
    max_wall_time_s: float | None = None,
    max_tokens_per_call: int | None = None,
    validate_action: ActionValidator | Sequence[ActionValidator] | None = None,
    tool_budgets: Mapping[str, int] | None = None,
    reflect_before_action: Any = None,
    dry_run: bool = False,
    stop_condition: Callable[[str, str], bool] | None = None,
    policy: ToolPolicy | None = None,
    approver: Approver | None = None,
    approval_timeout_s: float | None = None,
    observers: Sequence[Any] | None = None,
    output_type: Any = None,
    output_retries: int = 2,
    tool_calling: str = "json",
    max_parallel_tools: int = DEFAULT_MAX_PARALLEL_TOOLS,
    tool_timeout_s: float | None = None,
) -> Loop:
    """Run the ReAct loop until finish, ``max_steps``, a budget breach, or a fatal error.

    Args:
        goal: what the agent should achieve.
        llm: the LLM client (``LLMClient``; anything with ``complete``).
        session: the conversation to continue; its history and invocations grow.
        ctx: the caller's context: cost and provenance follow it (default: the
            session's own context, opened on first use).
        max_steps: the hard cap on turns, malformed-reply retries included.
        tools: which capabilities to expose (see ``discover_tools``).
        tool_filter: a post-filter on them (see ``discover_tools``).
        max_tokens_per_step: the completion-token cap of each LLM call (default 1024;
            ``max_tokens_per_call`` is accepted as the same setting).
        temperature: the sampling temperature.
        max_cost_usd: USD the run may spend, sampled before each turn.
        max_tokens: tokens the run may use, sampled before each turn.
        max_wall_time_s: seconds the run may take, sampled before each turn.
        max_tokens_per_call: another name for ``max_tokens_per_step``.
        validate_action: a function ``(capability_id, action_input) -> reason | None``
            (or a list of them) called before every dispatch; a reason refuses the
            action (``"error: refused: <reason>"``, nothing invoked, the refusal recorded).
        tool_budgets: capability id -> how many times the run may dispatch it.
        reflect_before_action: True (the run's model) or an LLM client asked about
            every action before it runs; it may veto it with a reason (recorded).
        dry_run: True: nothing is executed; the model sees a simulated observation
            and the graph records each action as an invocation with status ``dry_run``.
        stop_condition: a function ``(tool_name, result) -> bool`` asked after each
            successful call (``result`` as the model reads it, a str); True ends the
            run there with that result as the answer, like a ``terminal=True``
            capability, and the graph links the run to that call.
        policy: a tool policy for this run's calls (replaces the session's).
        approver: who is asked when the policy says review (replaces the session's).
        approval_timeout_s: seconds the approver has before the call is denied.
        observers: lifecycle observers of this run (added to the session's).
        output_type: a pydantic model class or a JSON schema: the final answer is
            asked for once more in that form, validated (``PlanResult.answer`` is
            then the validated object; see ``trails.agent.loop.outcome``).
        output_retries: how many more attempts an answer failing validation gets.
        tool_calling: ``"json"`` (the reply is a JSON block, the seed's contract) or
            ``"native"`` (the tools go to the provider as tool definitions, the
            model's tool calls are the actions, results go back as tool results,
            and a reply without tool calls is the answer; see ``loop.native``).
        max_parallel_tools: how many tool calls of one native turn run at once.
        tool_timeout_s: seconds each tool call may run (capping a capability's
            own ``timeout_s``); a call past it is recorded as failed and the model
            sees the error.

    Returns:
        The ``PlanResult``: ``goal_achieved`` with the final answer, or an early stop
        with the last observation as best-effort answer.

    Raises:
        UserError: a bad argument (nothing is recorded then).
        StoreError: provenance could not be recorded.
    """
    per_call = per_call_tokens(max_tokens_per_step, max_tokens_per_call)
    return _run(
        goal,
        llm=llm,
        session=session,
        ctx=ctx,
        max_steps=max_steps,
        tools=tools,
        tool_filter=tool_filter,
        per_call=per_call,
        temperature=temperature,
        limits=check_limits(
            max_cost_usd=max_cost_usd,
            max_tokens=max_tokens,
            max_wall_time_s=max_wall_time_s,
            per_call=per_call,
        ),
        announce_goal=True,
        guards=check_guards(
            validate_action,
            tool_budgets,
            reflect_before_action,
            dry_run,
            stop_condition=stop_condition,
        ),
        governance=governance(policy, approver, approval_timeout_s, observers),
        output=check_output(output_type, output_retries, per_call),
        tooling=check_tool_calling(tool_calling, max_parallel_tools, tool_timeout_s),
    )


run = run_entry(_steps)
arun = arun_entry(_steps, NAME)
stream = stream_entry(_steps, NAME)
astream = astream_entry(_steps, NAME)
batch = batch_entry(_steps, NAME)
abatch = abatch_entry(_steps, NAME)


def _run(
    goal: str,
    *,
    llm: Any,
    session: Session,
    ctx: Context | None,
    max_steps: int,
    tools: ToolsSpec,
    tool_filter: ToolFilter,
    per_call: int,
    temperature: float,
    limits: dict[str, float | None],
    announce_goal: bool,
    governance: Mapping[str, Any] | None = None,
    guards: Guards | None = None,
    output: Output | None = None,
    tooling: ToolCalling | None = None,
    history_limit: int | None = None,
    preamble: str | None = None,
) -> Loop:
    """``run`` after argument parsing, as a loop; Reflexion and PER nest it (``yield from``).

    ``history_limit``: how many session history entries from before the pass its
    turns see (Plan-Execute-Reflect's executor); None: the whole window.
    ``preamble``: text put before the pass's system prompt (the executor's role,
    for Plan-Execute-Reflect); the reply contract and tool list follow it.
    """
    tooling = tooling if tooling is not None else ToolCalling()
    max_steps = check_positive_int("max_steps", max_steps)
    tool_specs = offered_tools(session, tools, tool_filter)
    plan = PlanRun(
        NAME,
        goal,
        llm=llm,
        session=session,
        ctx=ctx,
        tools=[cid for cid, _ in tool_specs],
        governance=governance,
        guards=guards,
        output=output,
    )
    tooling.apply(plan)
    budget = Limits(plan.ctx.tracker, **limits)
    if tooling.native:
        native = native_loop(
            plan,
            budget,
            tool_specs=tool_specs,
            options=tooling,
            announce_goal=announce_goal,
            history_limit=history_limit,
            max_steps=max_steps,
            per_call=per_call,
            temperature=temperature,
            preamble=preamble,
        )
        return guarded(plan, native)
    system = build_system_prompt(goal, tool_specs)
    if preamble:
        system = f"{preamble}\n\n{system}"
    body = _loop(
        plan,
        budget,
        system=system,
        announce_goal=announce_goal,
        history_limit=history_limit,
        max_steps=max_steps,
        per_call=per_call,
        temperature=temperature,
    )
    return guarded(plan, body)


def _loop(
    plan: PlanRun,
    budget: Limits,
    *,
    system: str,
    announce_goal: bool,
    history_limit: int | None,
    max_steps: int,
    per_call: int,
    temperature: float,
) -> Loop:
    history = plan.session.history
    window = open_pass(history, system, plan.goal if announce_goal else None, history_limit)
    nudged = False
    for turn in range(max_steps):
        breach = budget.breach()
        if breach is not None:
            return plan.finish(breach.reason, breach=breach)
        try:
            response = yield plan.ask(
                window.messages(), step=turn, max_tokens=per_call, temperature=temperature
            )
        except ModelAPIError as exc:
            return plan.provider_failed(exc)
        history.append("assistant", response.text)
        try:
            parsed = parse_step(response.text)
        except ReplyParseError as exc:
            if nudged:
                return plan.finish("error", error=f"malformed reply after a retry: {exc}")
            nudged = True
            history.append("user", NUDGE.format(problem=exc))
            continue
        nudged = False
        completion = activity_of(response)
        action, action_input = parsed["action"], parsed["action_input"]
        if action == "finish":
            plan.add_step(PlanStep(parsed["thought"], action, action_input, None, completion))
            return plan.finish("goal_achieved", answer=parsed["final_answer"])
        observation, activity, _failed = yield plan.act(
            action, action_input, informed_by=completion, step=turn
        )
        plan.add_step(
            PlanStep(parsed["thought"], action, action_input, observation, activity or completion)
        )
        history.append("user", f"Observation: {stringify(observation)}")
        ended = plan.finish_terminal()
        if ended is not None:
            return ended
    return plan.finish("max_steps", breach=Breach("max_steps", max_steps, max_steps))


register_strategy(NAME, sys.modules[__name__])
