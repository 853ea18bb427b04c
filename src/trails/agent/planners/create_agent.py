"""The ``create_agent`` tool: the model spawns a sub-agent with some tools and its own budget.

reactree's ``NewCreateAgentTool`` gives the model a tool that starts a sub-agent on a
goal: a name, the tools it may use (a subset; none named: all), its own limits (tool
iterations, LLM calls, a timeout) and optionally several steps run as a sequence,
a parallel vote or a fallback. ``register_create_agent()`` registers that tool as the
capability ``create_agent`` (opt in: a run offers it only once it is registered, and
only when its ``tools=`` let it through). Its input is the seed's
``CreateAgentRequest`` (``agent_name``, ``goal``, ``tool_names``, ``task_type``,
``max_tool_iterations``, ``max_llm_calls``, ``timeout_seconds``, ``summarize_output``,
``steps``, ``flow``); its result the seed's ``CreateAgentResponse``
(``{"output": ..., "status": "success" | "failure"}``).

The sub-agent is a behaviour-tree run (``trails:BehaviourTreePlan``) nested in the
call: its activity ``prov:wasInformedBy`` the ``create_agent`` invocation, which the
parent run's turn informed, so the tree of agents is a plain PROV-O walk. Its agent
is a ``prov:SoftwareAgent`` named by ``agent_name`` (``trails:agentName``) that acted on
behalf of the principal, written with the run's end in one write. The sub-agent
uses the parent run's LLM client (``ctx.llm``), is never offered ``create_agent``
itself (no unbounded nesting), and stops at its own ``max_llm_calls`` (its
``max_steps``), ``max_tool_iterations`` (each agent node's turns) and
``timeout_seconds`` (its ``max_wall_time_s``).
"""

from __future__ import annotations

from typing import Any

from trails.agent.loop.refused import RUN_TOOLS
from trails.errors import UnknownCapability, UserError
from trails.kernel.context import Context
from trails.kernel.registry import all_capabilities, capability, get_capability
from trails.prov.builder import QuadBuilder
from trails.prov.events import Event
from trails.prov.iri import Minter
from trails.prov.vocab import PROV, T
from trails.store.terms import IRI

__all__ = ["CREATE_AGENT_TOOL_NAME", "CreateAgentTool", "SubAgentNamed", "register_create_agent"]

#: The seed's ``CreateAgentToolName``: the capability id of the tool.
CREATE_AGENT_TOOL_NAME = "create_agent"

#: A sub-agent's default LLM-call cap (its ``max_steps``) when the model names none.
DEFAULT_MAX_LLM_CALLS = 10

FLOWS = ("sequence", "parallel", "fallback")


class SubAgentNamed(Event):
    """A sub-agent's run and the agent it ran as (``agent_name``), acting for the principal."""

    run: str
    name: str
    principal: str

    def emit(self, b: QuadBuilder) -> None:
        run = IRI.trusted(self.run)
        agent = Minter.part(self.run, "agent")
        b.types(agent, PROV.SoftwareAgent, PROV.Agent)
        b.label(agent, self.name)
        b.add(agent, PROV.actedOnBehalfOf, b.agent(self.principal))
        b.add(run, PROV.wasAssociatedWith, agent)
        b.value(run, T.agentName, self.name)


def _tree(goal: str, steps: list[dict[str, Any]] | None, flow: str) -> dict[str, Any]:
    if not steps:
        return {"type": "agent", "goal": goal}
    if flow not in FLOWS:
        raise UserError(f"create_agent flow must be one of {', '.join(FLOWS)}, not {flow!r}")
    children = []
    for step in steps:
        if not isinstance(step, dict) or not isinstance(step.get("goal"), str):
            raise UserError(f"create_agent steps are {{'name', 'goal', 'tools'}}, not {step!r}")
        child: dict[str, Any] = {"type": "agent", "goal": step["goal"]}
        if step.get("tools"):
            child["tools"] = list(step["tools"])
        if step.get("name"):
            child["instruction"] = f"You are step {step['name']!r} of the plan."
        children.append(child)
    return {"type": flow, "children": children}


def create_agent(
    ctx: Context,
    agent_name: str,
    goal: str,
    tool_names: list[str] | None = None,
    task_type: str | None = None,
    max_tool_iterations: int = 0,
    max_llm_calls: int = 0,
    timeout_seconds: float = 0,
    summarize_output: bool = False,
    steps: list[dict[str, Any]] | None = None,
    flow: str = "sequence",
) -> dict[str, str]:
    """Start a sub-agent on ``goal`` with ``tool_names`` and its own budget; its output."""
    from trails.agent.context import Session
    from trails.agent.planners import behaviour_tree

    if ctx.llm is None:
        raise UserError("create_agent runs inside a planner run (it uses the run's model)")
    if not agent_name.strip():
        raise UserError(f"create_agent agent_name must be a non-empty name, not {agent_name!r}")
    parent_tools = ctx.extras.get(RUN_TOOLS)  # the calling run's tools bound the sub-agent's
    offered = [t for t in (tool_names or []) if t != CREATE_AGENT_TOOL_NAME]
    for tool in offered:
        get_capability(tool)  # an unknown tool is the model's error, told to it
        if parent_tools is not None and tool not in parent_tools:
            offer = ", ".join(sorted(parent_tools))
            raise UserError(f"capability {tool!r} is not among this run's tools ({offer})")
    if not tool_names:
        offered = sorted(c.id for c in all_capabilities() if c.id != CREATE_AGENT_TOOL_NAME)
        if parent_tools is not None:
            offered = [t for t in offered if t in parent_tools]
    tree = _tree(goal, steps, flow)
    if task_type:
        for node in tree.get("children", [tree]):
            node["model"] = task_type
    sub = Session(principal=ctx.principal, recorder=ctx.recorder, name=agent_name)
    result = behaviour_tree.run(
        goal,
        llm=ctx.llm,
        session=sub,
        ctx=ctx,
        tools=offered,
        tree=tree,
        max_steps=max_llm_calls if max_llm_calls > 0 else DEFAULT_MAX_LLM_CALLS,
        agent_max_turns=max_tool_iterations if max_tool_iterations > 0 else 5,
        max_wall_time_s=timeout_seconds if timeout_seconds > 0 else None,
    )
    ctx.recorder.record(
        SubAgentNamed(
            session=str(ctx.session),
            run=str(result.activity_iri),
            name=agent_name,
            principal=ctx.principal,
        )
    )
    output = "" if result.answer is None else str(result.answer)
    if summarize_output and len(output) > 2000:
        output = output[:2000] + f" ... ({len(output) - 2000} more characters)"
    status = "success" if result.stopped == "goal_achieved" else "failure"
    if status == "failure" and result.error:
        output = output or result.error
    return {"output": output, "status": status}


CreateAgentTool = create_agent
"""The tool's handler under the seed's type name."""


def register_create_agent() -> str:
    """Register the ``create_agent`` capability (once; again is a no-op); returns its id."""
    try:
        get_capability(CREATE_AGENT_TOOL_NAME)
        return CREATE_AGENT_TOOL_NAME
    except UnknownCapability:
        pass
    capability(
        id=CREATE_AGENT_TOOL_NAME,
        description=(
            "Create a sub-agent named agent_name to accomplish goal with the tools named in "
            "tool_names (all when empty), at most max_llm_calls model calls, "
            "max_tool_iterations turns per agent and timeout_seconds; steps with flow "
            "(sequence, parallel, fallback) run several sub-goals. Returns its output "
            "and status as JSON."
        ),
    )(create_agent)
    return CREATE_AGENT_TOOL_NAME
