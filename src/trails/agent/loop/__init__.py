"""The run loop every planner shares: one room the strategies stand on.

A planner (ReAct, Plan-and-Execute, Reflexion, Plan-Execute-Reflect, the behaviour tree)
owns only its loop's shape: when to think, what to ask the model, when to stop. Everything
around that shape lives here, once, so every strategy behaves the same where the guide says
it does:

- ``run``: ``PlanRun`` (the plan-run activity, reasoning turns, dispatch, recording) and
  ``Limits`` (the cumulative budgets sampled at iteration boundaries);
- ``drive``: a loop written once as a generator of requests (``Complete``, ``Dispatch``,
  ``DispatchMany``), driven sync, async or streamed, and the entry points built on it;
- ``guards``: tool budgets, validators, the reflector and dry runs before a dispatch;
- ``outcome``: the guarded body of a run and the structured final answer;
- ``tools``: which capabilities a run shows the model; ``refused``: calls it does not offer;
- ``native``: native tool calling; ``parallel``: several tool calls of one turn at once;
- ``parse``: the JSON turn, plan or verdict inside a reply; ``terminal``: calls that end a
  run; ``checks``: the shared keyword checks; ``batch``: batches as evidence;
  ``unreached``: a provider the run never reached; ``turns``: the protocol a request calls.

The package exports the public names of its modules (``__all__``); a planner imports them
from ``trails.agent.loop``.
"""

from __future__ import annotations

from trails.agent.loop.batch import (
    BatchEnded,
    BatchRecord,
    BatchStarted,
    batch_graph,
    batch_principal,
    batch_session,
    check_batch,
    note_informed,
)
from trails.agent.loop.checks import check_limits, check_positive_int, governance, per_call_tokens
from trails.agent.loop.drive import (
    Complete,
    Dispatch,
    DispatchMany,
    Feed,
    Gather,
    Loop,
    Progress,
    Request,
    abatch_entry,
    adrive,
    arun_entry,
    astream_drive,
    astream_entry,
    batch_entry,
    drive,
    run_entry,
    stream_drive,
    stream_entry,
)
from trails.agent.loop.guards import (
    REFLECT_PROMPT,
    ActionValidator,
    GuardedRun,
    Guards,
    check_guards,
    screen,
)
from trails.agent.loop.native import (
    DEFAULT_MAX_PARALLEL_TOOLS,
    NATIVE_CONTRACT,
    NativeTurns,
    ToolCalling,
    Window,
    check_tool_calling,
    native_loop,
    native_system_prompt,
    open_pass,
)
from trails.agent.loop.outcome import (
    ANSWER_PROMPT,
    AnsweringRun,
    Output,
    answer_text,
    check_output,
    guarded,
    stringify,
)
from trails.agent.loop.parallel import (
    CallBatch,
    OneCall,
    Outcome,
    ToolCallRun,
    adispatch_many,
    arun_groups,
    dispatch_many,
    groups,
    run_concurrently,
    run_groups,
)
from trails.agent.loop.parse import (
    json_candidates,
    parse_plan,
    parse_step,
    parse_verdict,
    plain_answer,
)
from trails.agent.loop.refused import RefusingRun, record_refused, refusal_reason
from trails.agent.loop.run import Breach, Limits, PlanRun, activity_of
from trails.agent.loop.terminal import StopCondition, StopConditionError, reason_of, terminal_reason
from trails.agent.loop.tools import (
    SOFT_TOOL_CAP,
    UNREGISTERED,
    ToolFilter,
    ToolsSpec,
    card_grants,
    discover_tools,
    granted_by,
    offered_tools,
    render_catalogue,
)
from trails.agent.loop.turns import Turns
from trails.agent.loop.unreached import UNREACHED, note_failure, raise_if_unreached, watching

__all__ = [
    "ANSWER_PROMPT",
    "DEFAULT_MAX_PARALLEL_TOOLS",
    "NATIVE_CONTRACT",
    "REFLECT_PROMPT",
    "SOFT_TOOL_CAP",
    "UNREACHED",
    "UNREGISTERED",
    "ActionValidator",
    "AnsweringRun",
    "BatchEnded",
    "BatchRecord",
    "BatchStarted",
    "Breach",
    "CallBatch",
    "Complete",
    "Dispatch",
    "DispatchMany",
    "Feed",
    "Gather",
    "GuardedRun",
    "Guards",
    "Limits",
    "Loop",
    "NativeTurns",
    "OneCall",
    "Outcome",
    "Output",
    "PlanRun",
    "Progress",
    "RefusingRun",
    "Request",
    "StopCondition",
    "StopConditionError",
    "ToolCallRun",
    "ToolCalling",
    "ToolFilter",
    "ToolsSpec",
    "Turns",
    "Window",
    "abatch_entry",
    "activity_of",
    "adispatch_many",
    "adrive",
    "answer_text",
    "arun_entry",
    "arun_groups",
    "astream_drive",
    "astream_entry",
    "batch_entry",
    "batch_graph",
    "batch_principal",
    "batch_session",
    "card_grants",
    "check_batch",
    "check_guards",
    "check_limits",
    "check_output",
    "check_positive_int",
    "check_tool_calling",
    "discover_tools",
    "dispatch_many",
    "drive",
    "governance",
    "granted_by",
    "groups",
    "guarded",
    "json_candidates",
    "native_loop",
    "native_system_prompt",
    "note_failure",
    "note_informed",
    "offered_tools",
    "open_pass",
    "parse_plan",
    "parse_step",
    "parse_verdict",
    "per_call_tokens",
    "plain_answer",
    "raise_if_unreached",
    "reason_of",
    "record_refused",
    "refusal_reason",
    "render_catalogue",
    "run_concurrently",
    "run_entry",
    "run_groups",
    "screen",
    "stream_drive",
    "stream_entry",
    "stringify",
    "terminal_reason",
    "watching",
]
