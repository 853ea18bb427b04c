"""Native tool calling for the planners: ``tool_calling="native"`` instead of the JSON contract.

With ``tool_calling="json"`` (the default, the seed's contract) the model
writes its action as a fenced JSON block and the planner parses it. With
``"native"``, the run's capabilities are offered to the provider as tool
definitions (each manifest's input JSON schema, ``ToolSpec``), the model's
``Response.tool_calls`` are the actions, and each result goes back as a tool
result message (``Message("tool", ..., tool_call_id=...)``; the adapters turn
it into an Anthropic ``tool_result`` block, an OpenAI ``role: tool`` message
with its ``tool_call_id``, an Ollama ``role: tool`` message). A reply without
tool calls is the final answer. Several calls in one reply run concurrently
(``loop.parallel``, at most ``max_parallel_tools`` at a time) and
their results go back in the order the model asked for them: the loop yields
them as one ``DispatchMany`` request, which ``run`` executes in worker threads
and ``arun`` as asyncio tasks (``loop.drive``).

The native exchange of a run (assistant turns carrying tool calls, tool
results) is kept in the run's own message list, on top of the session history
as it stood when the run began; the session history gets each turn as text
(the assistant's reply and the calls it made, then ``Observation: ...``), as in
JSON mode, so persistence, later runs and other planners read it unchanged.

``ToolCalling`` also carries ``tool_timeout_s``: a cap on every call the run
makes (JSON mode included), applied through ``Context.tool_timeout_s``; a call
past it is recorded as failed (``timed out after ...``) and the model sees
that error as the observation.

Provenance is that of JSON mode, plus the link by tool-call id: each
invocation is informed by the completion that asked for it and carries the
call's ``trails:toolCallId``, which the completion (and its
``trails:ToolCallRequest``) carries too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from trails.agent.loop.parallel import Outcome
from trails.agent.loop.run import Breach, Limits, PlanRun, activity_of, stringify
from trails.agent.result import PlanResult, PlanStep
from trails.errors import ModelAPIError, UserError
from trails.kernel.registry import get_capability
from trails.llm.types import Message, Response

if TYPE_CHECKING:
    from trails.agent.loop.drive import Loop
    from trails.kernel.registry import CapabilitySpec

__all__ = [
    "DEFAULT_MAX_PARALLEL_TOOLS",
    "NATIVE_CONTRACT",
    "NativeTurns",
    "ToolCalling",
    "Window",
    "check_tool_calling",
    "native_loop",
    "native_system_prompt",
    "open_pass",
]

#: How many tool calls of one turn run at once unless ``max_parallel_tools=`` says otherwise.
DEFAULT_MAX_PARALLEL_TOOLS = 4

NATIVE_CONTRACT = """\
You are an agent working toward a goal with the tools you are given. Call the tools \
you need; when several calls do not depend on each other, ask for them together. \
Each result comes back as a tool result; a result starting with "error:" means the \
call failed: read the message and correct course. When the goal is achieved, reply \
with the answer as plain text, without calling a tool."""


@dataclass(frozen=True)
class ToolCalling:
    """How a run's model calls tools: the mode, how many calls at once, their time cap."""

    mode: Literal["json", "native"] = "json"
    max_parallel: int = DEFAULT_MAX_PARALLEL_TOOLS
    timeout_s: float | None = None

    @property
    def native(self) -> bool:
        return self.mode == "native"

    def apply(self, plan: PlanRun) -> None:
        """Cap every call ``plan`` dispatches at ``timeout_s`` (nothing when None)."""
        if self.timeout_s is not None:
            plan.ctx = plan.ctx.child(tool_timeout_s=self.timeout_s)


def check_tool_calling(
    tool_calling: Any, max_parallel_tools: Any, tool_timeout_s: Any
) -> ToolCalling:
    """The planner keywords as ``ToolCalling``, checked before anything is recorded.

    Args:
        tool_calling: ``"json"`` (the seed's contract) or ``"native"``.
        max_parallel_tools: how many tool calls of one turn may run at once (>= 1).
        tool_timeout_s: None, or seconds each call may run (> 0).

    Raises:
        UserError: a value of the wrong kind.
    """
    if tool_calling not in ("json", "native"):
        raise UserError(f'tool_calling= must be "json" or "native", not {tool_calling!r}')
    if (
        isinstance(max_parallel_tools, bool)
        or not isinstance(max_parallel_tools, int)
        or max_parallel_tools < 1
    ):
        raise UserError(f"max_parallel_tools must be an int >= 1, not {max_parallel_tools!r}")
    if tool_timeout_s is not None and (
        isinstance(tool_timeout_s, bool)
        or not isinstance(tool_timeout_s, int | float)
        or tool_timeout_s <= 0
    ):
        raise UserError(f"tool_timeout_s must be None or a positive number, not {tool_timeout_s!r}")
    return ToolCalling(
        tool_calling,
        max_parallel_tools,
        None if tool_timeout_s is None else float(tool_timeout_s),
    )


def native_system_prompt(goal: str) -> str:
    """The system prompt of a native run: the contract and the goal (the tools go as definitions)."""
    return f"{NATIVE_CONTRACT}\n\nGoal: {goal}"


def offered(tool_specs: Sequence[tuple[str, dict[str, Any]]]) -> list[CapabilitySpec]:
    """The registered capabilities among a run's tools, to offer as tool definitions."""
    return [get_capability(cid) for cid, meta in tool_specs if meta.get("registered", True)]


def _render_calls(response: Response) -> str:
    lines = [response.text] if response.text else []
    lines += [
        f"call {c.name} {json.dumps(c.arguments, sort_keys=True, default=str)}"
        for c in response.tool_calls
    ]
    return "\n".join(lines)


class Window:
    """The messages a pass's turns see: the system prompt, the last ``limit`` entries
    from before the pass, and the pass's own entries (``limit`` None: everything).

    Plan-Execute-Reflect's ``executor_message_history_limit``: each executor
    pass (JSON or native) sees that much of the session history before it.
    """

    def __init__(self, history: Any, limit: int | None) -> None:
        self.history = history
        self.limit = limit
        self.earlier = {id(e) for e in history} if limit is not None else set()

    def messages(self) -> list[Message]:
        if self.limit is None:
            return list(self.history.messages())
        entries = list(self.history)
        old = [e for e in entries if id(e) in self.earlier and e.role != "system"]
        keep = {id(e) for e in old[len(old) - self.limit :]} if self.limit else set()
        return [
            e.message()
            for e in entries
            if e.role == "system" or id(e) not in self.earlier or id(e) in keep
        ]


def open_pass(history: Any, system: str, goal: str | None, limit: int | None) -> Window:
    """Start a ReAct pass on a session history: its system prompt, its window, its goal.

    Args:
        history: the session's history.
        system: the pass's system prompt.
        goal: the goal to announce as a user message (None: none).
        limit: how many entries from before the pass its turns see (None: all).

    Returns:
        The pass's ``Window``.
    """
    history.set_system(system)
    window = Window(history, limit)
    if goal is not None:
        history.append("user", f"Goal: {goal}")
    return window


@dataclass
class NativeTurns:
    """The native exchange of one run: its message list and what each turn adds.

    Used by ``native_loop`` (driven sync or async): ``messages`` is
    what the next turn sends; ``answer`` ends the run on a reply without tool
    calls; ``observe`` takes a reply's calls with their outcomes (in request
    order) into the message list, the session history and the trajectory.
    """

    plan: PlanRun
    tools: list[CapabilitySpec]
    options: ToolCalling
    transcript: list[Message] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.transcript:
            self.transcript = self.plan.session.history.messages()

    def messages(self) -> list[Message]:
        """The message list of the next turn."""
        return list(self.transcript)

    def answer(self, response: Response) -> PlanResult | None:
        """End the run when the reply asks for no tool call: its text is the answer."""
        if response.tool_calls:
            return None
        plan = self.plan
        plan.session.history.append("assistant", response.text)
        plan.add_step(PlanStep(response.text, "finish", {}, None, activity_of(response)))
        return plan.finish("goal_achieved", answer=response.text)

    def observe(self, response: Response, outcomes: Sequence[Outcome]) -> PlanResult | None:
        """Record a reply's calls and results; the run's end if a terminal capability ran."""
        plan = self.plan
        history = plan.session.history
        completion = activity_of(response)
        self.transcript.append(Message("assistant", response.text, tool_calls=response.tool_calls))
        history.append("assistant", _render_calls(response))
        for call, (observation, activity, _failed) in zip(
            response.tool_calls, outcomes, strict=True
        ):
            text = stringify(observation)
            step = PlanStep(
                response.text, call.name, dict(call.arguments), observation, activity or completion
            )
            plan.add_step(step)
            self.transcript.append(Message("tool", text, tool_call_id=call.id))
            history.append("user", f"Observation: {text}")
        return plan.finish_terminal()


def native_loop(
    plan: PlanRun,
    budget: Limits,
    *,
    tool_specs: Sequence[tuple[str, dict[str, Any]]],
    options: ToolCalling,
    announce_goal: bool,
    history_limit: int | None,
    max_steps: int,
    per_call: int,
    temperature: float,
    preamble: str | None = None,
) -> Loop:
    """ReAct with native tool calls: ask, run the calls (concurrently), feed results back.

    A loop like every planner's (``loop.drive``): a turn is a ``Complete`` request
    offering the tools, a turn's calls one ``DispatchMany`` request, which
    ``drive`` runs in worker threads and ``adrive`` as asyncio tasks.
    ``max_steps`` counts model turns; budgets are checked before each.

    Returns:
        The run's ``PlanResult``.
    """
    goal = plan.goal if announce_goal else None
    system = native_system_prompt(plan.goal)
    if preamble:  # the caller's role for this pass (Plan-Execute-Reflect's executor)
        system = f"{preamble}\n\n{system}"
    window = open_pass(plan.session.history, system, goal, history_limit)
    turns = NativeTurns(plan, offered(tool_specs), options, window.messages())
    for turn in range(max_steps):
        breach = budget.breach()
        if breach is not None:
            return plan.finish(breach.reason, breach=breach)
        try:
            response = yield plan.ask(
                turns.messages(),
                step=turn,
                max_tokens=per_call,
                temperature=temperature,
                tools=turns.tools,
            )
        except ModelAPIError as exc:
            return plan.provider_failed(exc)
        ended = turns.answer(response)
        if ended is not None:
            return ended
        outcomes = yield plan.act_many(
            response.tool_calls,
            informed_by=activity_of(response),
            step=turn,
            max_parallel=options.max_parallel,
        )
        ended = turns.observe(response, outcomes)
        if ended is not None:
            return ended
    return plan.finish("max_steps", breach=Breach("max_steps", max_steps, max_steps))
