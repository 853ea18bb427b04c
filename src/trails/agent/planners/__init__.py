"""The planners: ReAct, Plan-and-Execute, Reflexion, Plan-Execute-Reflect, behaviour tree.

Each planner is a module whose ``run(goal, *, llm, session, ctx=None, ...)``
returns a ``PlanResult``, so swapping one strategy for another is a one-line
import change. ``STRATEGIES`` maps the names used by ``Session(strategy=...)``
and ``[agent] strategy`` in trails.toml to the modules: it is the registry of
``trails.agent.strategies`` (the same object), which each planner module
registers itself in, at its bottom, under its ``NAME``.
"""

from __future__ import annotations

from trails.agent.planners import (
    behaviour_tree,
    plan_and_execute,
    plan_execute_reflect,
    react,
    reflexion,
)
from trails.agent.planners.base import (
    BUDGET_STOPS,
    STOP_REASONS,
    PlanningStrategy,
    PlanResult,
    PlanStep,
    StopReason,
)
from trails.agent.strategies import STRATEGIES

__all__ = [
    "BUDGET_STOPS",
    "STOP_REASONS",
    "STRATEGIES",
    "PlanResult",
    "PlanStep",
    "PlanningStrategy",
    "StopReason",
    "behaviour_tree",
    "plan_and_execute",
    "plan_execute_reflect",
    "react",
    "reflexion",
]
