"""Plan-Execute-Reflect: a planner that re-plans after every executed step.

Each iteration the planner (a fresh message list: its system prompt, the
objective, and the steps completed so far with their results) answers
``{"steps": [...], "result": ""}`` or, when it knows the answer,
``{"steps": [], "result": "..."}``. A non-empty ``result`` ends the run with
``goal_achieved``; otherwise only the first step is executed, by a ReAct
executor pass whose goal is the step text (``executor_max_iterations`` turns,
``executor_llm`` when another model should execute),
and its answer joins the completed steps the planner reflects on next.
``max_steps`` caps executed steps; a run stopped there answers with the seed's
"Max Steps Limit Reached" message (``max_steps_message``): the completed steps
with their results, and how to continue. Budgets are checked before every planner
call and what is left of them is passed to each executor pass. An executor pass
ended by a ``terminal=True`` capability ends the run with its result.

The executor's system prompt opens with ``executor_system_prompt`` (default the
seed's ``EXECUTOR_RESPONSIBILITY``, with the date when ``inject_datetime``),
followed by the ReAct reply contract and tool list trails parses replies by. A
run writes its objective and its final answer (or the max-steps message) into
the session's history, so a later run on the same session, of any strategy,
sees this one (seed 003's conversation memory, ``memory_id``).

Prompts follow seed 003: a system prompt (``PLANNER_PROMPT``: the seed's
planner responsibility, response format and final-result instructions, each
verbatim), then a user message
from a template with ``${parameters.*}`` substitution: the planner template on
the first turn, the reflect template after each step, the planner-with-history
template on a first turn in a session that already holds conversation (its last
``message_history_limit`` entries). Every prompt and template can be
overridden; ``inject_datetime`` adds the date and time; the seed's defaults
``max_steps=20``, ``executor_max_iterations=20``, ``message_history_limit=10`` and
``executor_message_history_limit=10`` hold (an executor pass sees that many session
history entries from before it, then its own pass whole). Kept different: the
default templates put the tool catalogue under a ``Tools:`` heading.

Provenance: a ``trails:PlanExecuteReflectPlan`` activity; each planner turn a
completion informed by it, its parsed plan a ``trails:PlanDocument``; each
executor pass a ``trails:ReActPlan`` informed by the planner completion that
chose its step. Parsed plans are appended to ``session.metadata["plans"]``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trails.agent.loop import (
    DEFAULT_MAX_PARALLEL_TOOLS,
    ActionValidator,
    Breach,
    Limits,
    Loop,
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
    governance,
    guarded,
    json_candidates,
    offered_tools,
    per_call_tokens,
    render_catalogue,
    run_entry,
    stream_entry,
)
from trails.agent.planners import react
from trails.agent.planners._per_options import (
    ExecutorAgent,
    ResponseFiltered,
    check_tenant,
    continue_conversation,
    executor_agent,
    filtered,
    register_executor_agent,
)
from trails.agent.planners._templates import PERPrompts
from trails.agent.planners.base import BUDGET_STOPS, PlanStep
from trails.agent.planners.create_agent import SubAgentNamed
from trails.agent.strategies import register_strategy
from trails.errors import ModelAPIError, ReplyParseError, UserError
from trails.llm.types import Message
from trails.store.terms import IRI

if TYPE_CHECKING:
    from collections.abc import Sequence

    from trails.agent.context import Session
    from trails.kernel.context import Context, ToolPolicy
    from trails.kernel.policy import Approver

__all__ = [
    "EXECUTOR",
    "EXECUTOR_RESPONSIBILITY",
    "FINAL_RESULT_INSTRUCTIONS",
    "NAME",
    "PLANNER_PROMPT",
    "PLANNER_RESPONSIBILITY",
    "RESPONSE_FORMAT",
    "ExecutorAgent",
    "abatch",
    "arun",
    "astream",
    "batch",
    "build_planner_messages",
    "max_steps_message",
    "parse_reflection",
    "register_executor_agent",
    "run",
    "stream",
]

#: The strategy name (``Session(strategy=...)``, ``trails:strategy``).
NAME = "plan_execute_reflect"

#: The ``PlanStep.action`` of a step run by the ReAct executor.
EXECUTOR = "executor"

#: Seed 003's FINAL_RESULT_RESPONSE_INSTRUCTIONS, verbatim: how the final result reads.
FINAL_RESULT_INSTRUCTIONS = """\
When you deliver your final result, include a comprehensive report. This report must:
1. List every analysis or step you performed.
2. Summarize the inputs, methods, tools, and data used at each step.
3. Include key findings from all intermediate steps — do NOT omit them.
4. Clearly explain how the steps led to your final conclusion. Only mention the completed steps.
5. Return the full analysis and conclusion in the 'result' field, even if some of this was \
mentioned earlier. Ensure that special characters are escaped in the 'result' field.
6. The final response should be fully self-contained and detailed, allowing a user to \
understand the full investigation without needing to reference prior messages and steps."""

#: Seed 003's PLANNER_RESPONSIBILITY, verbatim: the planner's role.
PLANNER_RESPONSIBILITY = """\
You are a thoughtful and analytical planner agent in a plan-execute-reflect framework. Your \
job is to design a clear, step-by-step plan for a given objective.

Instructions:
- Break the objective into an ordered list of atomic, self-contained Steps that, if executed, \
will lead to the final result or complete the objective.
- Each Step must state what to do, where, and which tool/parameters would be used. You do not \
execute tools, only reference them for planning.
- Use only the provided tools; do not invent or assume tools. If no suitable tool applies, use \
reasoning or observations instead.
- Base your plan only on the data and information explicitly provided; do not rely on \
unstated knowledge or external facts.
- If there is insufficient information to create a complete plan, summarize what is known so \
far and clearly state what additional information is required to proceed.
- Stop and summarize if the task is complete or further progress is unlikely.
- Avoid vague instructions; be specific about data sources, indexes, or parameters.
- Never make assumptions or rely on implicit knowledge.
- Respond only in JSON format.

Step examples:
Good example: "Use Tool to sample documents from index: 'my-index'"
Bad example: "Use Tool to sample documents from each index"
Bad example: "Use Tool to sample documents from all indices\""""

#: Seed 003's PLAN_EXECUTE_REFLECT_RESPONSE_FORMAT, verbatim: the reply's JSON schema.
RESPONSE_FORMAT = """\
Response Instructions:
Only respond in JSON format. Always follow the given response instructions. Do not return \
any content that does not follow the response instructions. Do not add anything before or \
after the expected JSON.
Always respond with a valid JSON object that strictly follows the below schema:
{
\t"steps": array[string],
\t"result": string
}
Use "steps" to return an array of strings where each string is a step to complete the \
objective, leave it empty if you know the final result. Please wrap each step in quotes and \
escape any special characters within the string.
Use "result" return the final response when you have enough information, leave it empty if \
you want to execute more steps. Please escape any special characters within the result.
Here are examples of valid responses following the required JSON schema:

Example 1 - When you need to execute steps:
{
\t"steps": ["This is an example step", "this is another example step"],
\t"result": ""
}

Example 2 - When you have the final result:
{
\t"steps": [],
\t"result": "This is an example result\\n with escaped special characters"
}
Important rules for the response:
1. Do not use commas within individual steps
2. Do not add any content before or after the JSON
3. Only respond with a pure JSON object"""

#: The planner's default system prompt: seed 003's PLANNER_RESPONSIBILITY,
#: PLAN_EXECUTE_REFLECT_RESPONSE_FORMAT and FINAL_RESULT_RESPONSE_INSTRUCTIONS.
PLANNER_PROMPT = "\n\n".join((PLANNER_RESPONSIBILITY, RESPONSE_FORMAT, FINAL_RESULT_INSTRUCTIONS))

#: Seed 003's EXECUTOR_RESPONSIBILITY: the default ``executor_system_prompt``. Its
#: first sentence says "a planner/executor framework" where the seed names the
#: framework, so the planner's prompt stays the one that says plan-execute-reflect
#: (scripted test models tell the two roles apart by it).
EXECUTOR_RESPONSIBILITY = """\
You are a precise and reliable executor agent in a planner/executor framework. Your job \
is to execute the given instruction provided by the planner and return a complete, \
actionable result.

Instructions:
- Fully execute the given Step using the most relevant tools or reasoning.
- Include all relevant raw tool outputs (e.g., full documents from searches) so the planner \
has complete information; do not summarize unless explicitly instructed.
- Base your execution and conclusions only on the data and tool outputs available; do not \
rely on unstated knowledge or external facts.
- If the available data is insufficient to complete the Step, summarize what was obtained so \
far and clearly state the additional information or access required to proceed (do not guess).
- If unable to complete the Step, clearly explain what went wrong and what is needed to proceed.
- Avoid making assumptions and relying on implicit knowledge.
- Your response must be self-contained and ready for the planner to use without \
modification. Never end with a question.
- Break complex searches into simpler queries when appropriate."""


def max_steps_message(limit: int, completed: Sequence[tuple[str, str | None]]) -> str:
    """The answer of a run stopped by ``max_steps``: what was done, and how to go on.

    Args:
        limit: the ``max_steps`` reached.
        completed: ``(step, result)`` pairs executed.

    Returns:
        The message (seed 003's "Max Steps Limit Reached" with continuation instructions).
    """
    done = "\n".join(
        f"{i}. {step}\n   result: {result}" for i, (step, result) in enumerate(completed, 1)
    )
    return (
        f"Max Steps Limit ({limit}) Reached. Completed steps and their results:\n"
        f"{done or '(none)'}\n\n"
        "To continue, run again on the same session (its history holds this run), "
        "or with a larger max_steps."
    )


NUDGE = (
    "Your last reply could not be used ({problem}). Respond only with one JSON object "
    '{{"steps": [...], "result": "..."}}.'
)


def parse_reflection(text: str) -> dict[str, Any]:
    """Extract a planner reply: ``{"steps": list[str], "result": str}``.

    Args:
        text: the raw reply.

    Returns:
        The remaining steps (dict steps JSON-encoded) and the result ("" when none).

    Raises:
        ReplyParseError: no JSON object with ``steps`` or ``result``, or neither a
            non-empty result nor at least one step.
    """
    if not isinstance(text, str):
        raise ReplyParseError(f"the reply must be text, not {type(text).__name__}")
    for value in json_candidates(text):
        if not isinstance(value, dict) or not ({"steps", "result"} & set(value)):
            continue
        steps = value.get("steps") or []
        if not isinstance(steps, list):
            raise ReplyParseError(f"'steps' must be a list, not {steps!r}")
        texts = [s if isinstance(s, str) else json.dumps(s, default=str) for s in steps]
        texts = [s for s in texts if s.strip()]
        result = value.get("result") or ""
        result = result if isinstance(result, str) else json.dumps(result, default=str)
        if not result.strip() and not texts:
            raise ReplyParseError("the reply has neither steps nor a result")
        return {"steps": texts, "result": result}
    raise ReplyParseError('no JSON object with "steps" or "result" found in the reply')


def build_planner_messages(
    goal: str,
    tool_specs: Sequence[tuple[str, dict[str, Any]]],
    completed: Sequence[tuple[str, str | None]],
    *,
    prompts: PERPrompts | None = None,
    steps: Sequence[str] = (),
    history: Sequence[str] = (),
) -> list[Message]:
    """The planner's fresh message list: its system prompt and this turn's template.

    Args:
        goal: the objective.
        tool_specs: the tools the executor may use.
        completed: ``(step, result)`` pairs executed so far.
        prompts: the prompts and templates (default: the seed's, ``PERPrompts``).
        steps: the latest plan's steps (``${parameters.steps}``).
        history: earlier conversation lines (``${parameters.chat_history}``).

    Returns:
        The messages.

    Raises:
        UserError: a template uses a parameter nobody gave.
    """
    prompts = prompts if prompts is not None else PERPrompts(system_prompt=PLANNER_PROMPT)
    user = prompts.user(
        goal=goal,
        tools_prompt=render_catalogue(tool_specs),
        steps=list(steps),
        completed=list(completed),
        history=list(history),
    )
    return [Message("system", prompts.system()), Message("user", user)]


def _steps(
    goal: str,
    *,
    llm: Any,
    session: Session,
    ctx: Context | None = None,
    max_steps: int = 20,
    tools: ToolsSpec = None,
    tool_filter: ToolFilter = None,
    executor_max_iterations: int = 20,
    system_prompt: str | None = None,
    executor_system_prompt: str | None = None,
    executor_llm: Any = None,
    planner_prompt: str | None = None,
    reflect_prompt: str | None = None,
    planner_prompt_template: str | None = None,
    reflect_prompt_template: str | None = None,
    planner_with_history_template: str | None = None,
    message_history_limit: int = 10,
    executor_message_history_limit: int = 10,
    inject_datetime: bool = False,
    datetime_format: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    max_tokens_per_call: int | None = None,
    temperature: float = 0.0,
    max_cost_usd: float | None = None,
    max_tokens: int | None = None,
    max_wall_time_s: float | None = None,
    max_tokens_per_step: int | None = None,
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
    memory_id: str | None = None,
    executor_agent_id: str | None = None,
    llm_response_filter: str | None = None,
    tenant_id: str | None = None,
) -> Loop:
    """Plan, execute the first step with ReAct, reflect on its result, repeat.

    Args:
        goal: what the agent should achieve.
        llm: the LLM client (planner and executor).
        session: the conversation to continue (the executor writes into it).
        ctx: the caller's context (default: the session's own).
        max_steps: the cap on executed steps.
        tools: which capabilities the executor may use.
        tool_filter: a post-filter on them.
        executor_max_iterations: ``max_steps`` of each ReAct executor pass.
        system_prompt: the planner's system prompt (default ``PLANNER_PROMPT``).
        executor_system_prompt: the executor's role, the start of each executor
            pass's system prompt (default ``EXECUTOR_RESPONSIBILITY``); the ReAct
            reply contract and the tool list follow it.
        executor_llm: the LLM client of the executor passes (default: ``llm``), e.g.
            a cheaper model for the steps while ``llm`` plans (seed 003's
            ``executor_agent_id``); its completions are recorded with its model.
        planner_prompt: ``${parameters.planner_prompt}`` (default: the seed's).
        reflect_prompt: ``${parameters.reflect_prompt}`` (default: the seed's).
        planner_prompt_template: the first planner turn's template.
        reflect_prompt_template: the template of every turn after a step ran.
        planner_with_history_template: the first turn's template when the session
            already holds conversation.
        message_history_limit: how many earlier history entries the planner sees.
        executor_message_history_limit: how many session history entries from before
            its pass each executor pass sees (seed 003's executor memory limit).
        inject_datetime: add the current date and time to the planner's and the
            executor's system prompts.
        datetime_format: its ``strftime`` format.
        parameters: further ``${parameters.*}`` values for custom templates.
        max_tokens_per_call: the completion-token cap of each LLM call (default 1024).
        temperature: the sampling temperature.
        max_cost_usd: USD the whole run may spend.
        max_tokens: tokens the whole run may use.
        max_wall_time_s: seconds the whole run may take.
        max_tokens_per_step: another name for ``max_tokens_per_call``.
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
        tool_calling: how the executor calls tools: ``"json"`` (the seed's
            contract) or ``"native"`` (provider tool calls, results fed back as
            tool results); the planner turns stay JSON.
        max_parallel_tools: how many tool calls of one native executor turn run at once.
        tool_timeout_s: seconds each tool call may run (capping a capability's
            own ``timeout_s``); a call past it is recorded as failed and the
            executor's model sees the error.

        memory_id: the IRI of an earlier conversation (``PlanResult.memory_id``) of
            the same principal to continue: its runs' goals and answers join the history
            (``_per_options``).
        executor_agent_id: run the steps on the agent registered under this id
            (``register_executor_agent``): its client, prompt, iterations and tools.
        llm_response_filter: a JSONPath the replies are read through (a reply that is
            a JSON document gives its first match).
        tenant_id: the principal the run acts for; a session of another is refused.

    Returns:
        The ``PlanResult``; its steps are the executed plan steps (action ``executor``,
        the step text as thought, the executor's answer as observation) and ``finish``.

    Raises:
        UserError: a bad argument (nothing is recorded then).
        StoreError: provenance could not be recorded.
    """
    per_call = per_call_tokens(max_tokens_per_step, max_tokens_per_call)
    tooling = check_tool_calling(tool_calling, max_parallel_tools, tool_timeout_s)
    limits = check_limits(
        max_cost_usd=max_cost_usd,
        max_tokens=max_tokens,
        max_wall_time_s=max_wall_time_s,
        per_call=per_call,
    )
    max_steps = check_positive_int("max_steps", max_steps)
    inner_steps = check_positive_int("executor_max_iterations", executor_max_iterations)
    if executor_system_prompt is not None and (
        not isinstance(executor_system_prompt, str) or not executor_system_prompt.strip()
    ):
        raise UserError(
            f"executor_system_prompt= must be a non-empty str, not {executor_system_prompt!r}"
        )
    check_tenant(tenant_id, session)
    agent = executor_agent(executor_agent_id)
    if agent is not None:
        executor_llm = agent.llm
        executor_system_prompt = executor_system_prompt or agent.system_prompt
        inner_steps = agent.max_iterations or inner_steps
        tools = list(agent.tools) if agent.tools is not None and tools is None else tools
    llm = filtered(llm, llm_response_filter)
    if executor_llm is not None:
        executor_llm = filtered(executor_llm, llm_response_filter)
    if executor_llm is not None and not callable(getattr(executor_llm, "complete", None)):
        raise UserError(
            f"executor_llm= must be an LLM client with complete(), not {executor_llm!r}"
        )
    given = {
        "system_prompt": system_prompt or PLANNER_PROMPT,
        "planner_prompt": planner_prompt,
        "reflect_prompt": reflect_prompt,
        "planner_template": planner_prompt_template,
        "reflect_template": reflect_prompt_template,
        "planner_with_history_template": planner_with_history_template,
        "datetime_format": datetime_format,
    }
    prompts = PERPrompts(
        **{k: v for k, v in given.items() if v is not None},
        message_history_limit=message_history_limit,
        executor_message_history_limit=executor_message_history_limit,
        inject_datetime=inject_datetime,
        parameters=dict(parameters or {}),
    )
    history = _history(session, prompts.message_history_limit)
    tool_specs = offered_tools(session, tools, tool_filter)
    tool_ids = [cid for cid, _ in tool_specs]
    plan = PlanRun(
        NAME,
        goal,
        llm=llm,
        session=session,
        ctx=ctx,
        tools=tool_ids,
        governance=governance(policy, approver, approval_timeout_s, observers),
        guards=check_guards(
            validate_action,
            tool_budgets,
            reflect_before_action,
            dry_run,
            stop_condition=stop_condition,
        ),
        output=check_output(output_type, output_retries, per_call),
    )
    budget = Limits(plan.ctx.tracker, **limits)
    body = _loop(
        plan,
        budget,
        tool_specs=tool_specs,
        max_steps=max_steps,
        inner_steps=inner_steps,
        per_call=per_call,
        temperature=temperature,
        prompts=prompts,
        history=history,
        tooling=tooling,
        executor=prompts.dated(executor_system_prompt or EXECUTOR_RESPONSIBILITY),
        executor_llm=executor_llm,
        options={"memory_id": memory_id, "agent": agent, "filter": llm_response_filter},
    )
    return guarded(plan, body)


def _history(session: Session, limit: int) -> list[str]:
    """The last ``limit`` entries of the session's conversation, as the planner shows them."""
    entries = getattr(session, "history", ())
    earlier = [f"{e.role}: {e.content}" for e in entries if e.role != "system"]
    return earlier[len(earlier) - limit :] if limit else []


run = run_entry(_steps)
arun = arun_entry(_steps, NAME)
stream = stream_entry(_steps, NAME)
astream = astream_entry(_steps, NAME)
batch = batch_entry(_steps, NAME)
abatch = abatch_entry(_steps, NAME)


def _loop(
    plan: PlanRun,
    budget: Limits,
    *,
    tool_specs: list[tuple[str, dict[str, Any]]],
    max_steps: int,
    inner_steps: int,
    per_call: int,
    temperature: float,
    prompts: PERPrompts,
    history: list[str],
    tooling: ToolCalling | None = None,
    executor: str | None = None,
    executor_llm: Any = None,
    options: dict[str, Any] | None = None,
) -> Loop:
    options = options or {}
    if continue_conversation(plan, options.get("memory_id")):
        history = _history(plan.session, prompts.message_history_limit)
    if options.get("filter") is not None:
        plan.ctx.recorder.record(
            ResponseFiltered(
                session=plan.ctx.session, run=plan.activity, expression=options["filter"]
            )
        )
    agent: ExecutorAgent | None = options.get("agent")
    completed: list[tuple[str, str | None]] = []
    conversation = plan.session.history
    conversation.append("user", plan.goal)  # a later run on this session sees this one
    position = 0
    nudged = False
    messages = build_planner_messages(
        plan.goal, tool_specs, completed, prompts=prompts, history=history
    )
    while True:
        breach = budget.breach()
        if breach is not None:
            return plan.finish(breach.reason, breach=breach)
        try:
            response = yield plan.ask(
                messages, step=position, max_tokens=per_call, temperature=temperature
            )
        except ModelAPIError as exc:
            return plan.provider_failed(exc)
        index, position = position, position + 1
        completion = activity_of(response)
        try:
            reply = parse_reflection(response.text)
        except ReplyParseError as exc:
            if nudged:
                return plan.finish("error", error=f"malformed plan after a retry: {exc}")
            nudged = True
            messages = [
                *messages,
                Message("assistant", response.text),
                Message("user", NUDGE.format(problem=exc)),
            ]
            continue
        nudged = False
        plan.session.metadata.setdefault("plans", []).append(reply)
        plan.record_entity("PlanDocument", reply, generated_by=completion, index=index)
        if reply["result"].strip():
            plan.add_step(PlanStep("reflect", "finish", {}, None, completion))
            conversation.append("assistant", reply["result"])
            return plan.finish("goal_achieved", answer=reply["result"])
        if len(completed) >= max_steps:
            message = max_steps_message(max_steps, completed)
            conversation.append("assistant", message)
            breach = Breach("max_steps", max_steps, len(completed))
            return plan.finish("max_steps", breach=breach, answer=message)
        step = reply["steps"][0]
        inner = yield from react._run(
            step,
            llm=executor_llm if executor_llm is not None else plan.llm,
            session=plan.session,
            ctx=plan.ctx.child(parent=IRI.trusted(completion) if completion else plan.activity),
            max_steps=inner_steps,
            tools=[cid for cid, _ in tool_specs],
            tool_filter=None,
            per_call=per_call,
            temperature=temperature,
            limits=budget.remaining(),
            announce_goal=True,
            guards=plan.guards,
            tooling=tooling,
            history_limit=prompts.executor_message_history_limit,
            preamble=executor,
        )
        if agent is not None and inner.activity_iri is not None:  # the pass ran as that agent
            plan.ctx.recorder.record(
                SubAgentNamed(
                    session=plan.ctx.session,
                    run=inner.activity_iri,
                    name=agent.agent_id,
                    principal=plan.ctx.principal,
                )
            )
        plan.add_step(PlanStep(step, EXECUTOR, {"step": step}, inner.answer, inner.activity_iri))
        if inner.terminated_by is not None:  # a terminal capability ended the executor
            return plan.finish(
                "goal_achieved",
                answer=inner.answer,
                terminated_by=inner.terminated_by,
                terminated_by_call=inner.terminated_by_call,
            )
        if inner.stopped == "error":
            return plan.finish("error", error=inner.error)
        if inner.stopped in BUDGET_STOPS:
            return plan.finish(inner.stopped, breach=budget.observe(inner.stopped))
        completed.append((step, inner.answer))
        messages = build_planner_messages(
            plan.goal, tool_specs, completed, prompts=prompts, steps=reply["steps"]
        )


register_strategy(NAME, sys.modules[__name__])
