"""reactree's orchestrator: ``ExecutePlan(plan, config)`` runs a plan of named steps as a tree.

Seed 004's ``Plan{Flow, Steps[{Name, Goal, Tools, TaskType}]}`` is run by
``ExecutePlan`` under an ``OrchestratorConfig`` (working memory, episodic memory, the
decisions each agent node may take, a wall-clock ``Timeout`` for the whole plan that
defaults to 3 minutes) and answers ``OrchestratorResult{Status, Outputs}``, each step's
output under its name. In trails ``execute_plan(plan, llm=, session=, config=)`` (also
``ExecutePlan``) builds the behaviour tree the plan names (one agent node per step
under a ``sequence``, ``parallel`` or ``fallback`` node) and runs it with
``behaviour_tree.run``, so everything is recorded as any tree run is: the tree as the
run's ``trails:PlanDocument`` (each step's name in its node's instruction), every node
a ``trails:TreeNode``, a plan past its timeout a ``max_wall_time`` stop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trails.agent.planners import behaviour_tree
from trails.agent.planners._bt_nodes import NodeStatus, child_id
from trails.agent.result import PlanResult
from trails.errors import UserError

if TYPE_CHECKING:
    from trails.agent.context import Session
    from trails.memory.episodic import EpisodicMemory
    from trails.memory.working import WorkingMemory

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "ExecutePlan",
    "OrchestratorConfig",
    "OrchestratorResult",
    "Plan",
    "PlanStep",
    "execute_plan",
]

#: The seed's default deadline of a whole plan: 3 minutes.
DEFAULT_TIMEOUT_S = 180.0

FLOWS = ("sequence", "parallel", "fallback")


@dataclass(frozen=True)
class PlanStep:
    """One subgoal of a plan (the seed's ``PlanStep``): an agent node of the tree."""

    name: str
    goal: str
    tools: Sequence[str] | None = None
    task_type: str | None = None


@dataclass(frozen=True)
class Plan:
    """Steps and how they are coordinated (``sequence``, ``parallel``, ``fallback``)."""

    flow: str = "sequence"
    steps: Sequence[PlanStep] = ()


@dataclass(frozen=True)
class OrchestratorConfig:
    """What a plan runs with (the seed's ``OrchestratorConfig``).

    Attributes:
        working_memory: the shared blackboard (default: a fresh one).
        episodic: where agent nodes find and keep episodes (None: none).
        max_decisions: the LLM calls each agent node may make (0: the planner's default).
        timeout: seconds the whole plan may take (0: the seed's 3 minutes).
    """

    working_memory: WorkingMemory | None = None
    episodic: EpisodicMemory | None = None
    max_decisions: int = 0
    timeout: float = 0.0


@dataclass(frozen=True)
class OrchestratorResult:
    """The plan's ``status`` and each step's output by name; ``result`` is the run's."""

    status: NodeStatus
    outputs: dict[str, str] = field(default_factory=dict)
    result: PlanResult | None = None


def _tree(plan: Plan) -> dict[str, Any]:
    if not isinstance(plan, Plan):
        raise UserError(f"plan must be a Plan, not {type(plan).__name__}")
    flow = plan.flow or "sequence"
    if flow not in FLOWS:
        raise UserError(f"Plan flow must be one of {', '.join(FLOWS)}, not {flow!r}")
    if not plan.steps:
        raise UserError("a Plan needs at least one step")
    names = [s.name for s in plan.steps]
    if len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
        raise UserError(f"Plan step names must be unique non-empty str, not {names!r}")
    children = []
    for step in plan.steps:
        node: dict[str, Any] = {
            "type": "agent",
            "goal": step.goal,
            "instruction": f"You are step {step.name!r} of the plan.",
        }
        if step.tools is not None:
            node["tools"] = list(step.tools)
        if step.task_type:
            node["model"] = step.task_type
        children.append(node)
    return {"type": flow, "children": children}


def execute_plan(
    plan: Plan,
    *,
    llm: Any,
    session: Session,
    config: OrchestratorConfig | None = None,
    **run: Any,
) -> OrchestratorResult:
    """Run ``plan`` as a behaviour tree; its status and each step's output by name.

    Args:
        plan: the steps and their flow.
        llm: the model client of every step.
        session: the conversation the run is recorded in.
        config: working memory, episodes, decisions per step and the plan's timeout.
        **run: any other keyword of ``behaviour_tree.run`` (``max_steps``, ``observers`` ...).

    Raises:
        UserError: a malformed plan or config.
    """
    config = config if config is not None else OrchestratorConfig()
    from trails.memory.working import WorkingMemory

    memory = config.working_memory if config.working_memory is not None else WorkingMemory()
    timeout = config.timeout if config.timeout > 0 else DEFAULT_TIMEOUT_S
    if config.max_decisions > 0:
        run.setdefault("agent_max_turns", config.max_decisions)
    result = behaviour_tree.run(
        f"Plan: {', '.join(s.name for s in plan.steps)}" if isinstance(plan, Plan) else "Plan",
        llm=llm,
        session=session,
        tree=_tree(plan),
        working_memory=memory,
        episodic=config.episodic,
        max_wall_time_s=timeout,
        **run,
    )
    outputs: dict[str, str] = {}
    for i, step in enumerate(plan.steps):
        saved = memory.get(child_id("1", i))
        if isinstance(saved, str) and saved.startswith("success: "):
            outputs[step.name] = saved[len("success: ") :]
    status = NodeStatus.Success if result.stopped == "goal_achieved" else NodeStatus.Failure
    return OrchestratorResult(status, outputs, result)


ExecutePlan = execute_plan
"""The seed's name for ``execute_plan``."""
