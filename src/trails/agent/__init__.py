"""The agent runtime: ``Session`` and the planners that turn a goal into recorded actions.

A planner is a thin orchestrator over ``invoke``: it asks the LLM what to do,
dispatches capabilities, and records every reasoning turn and action in the
session's provenance graph. ``Session`` holds the conversation the planners
write into. See ``trails.agent.planners`` for the strategies. ``Agent`` and
``AgentConfig`` are selectools' one-object agent over the same runtime
(``trails.agent.selectools``).
"""

from __future__ import annotations

from trails.agent.context import AuthState, HistoryEntry, Session, TokenWindow
from trails.agent.planners import (
    STRATEGIES,
    PlanningStrategy,
    PlanResult,
    PlanStep,
    StopReason,
    behaviour_tree,
    plan_and_execute,
    plan_execute_reflect,
    react,
    reflexion,
)
from trails.agent.selectools import (
    Agent,
    AgentConfig,
    AgentResult,
    AgentTrace,
    ConversationMemory,
    Message,
    Role,
)

__all__ = [
    "STRATEGIES",
    "Agent",
    "AgentConfig",
    "AgentResult",
    "AgentTrace",
    "AuthState",
    "ConversationMemory",
    "HistoryEntry",
    "Message",
    "PlanResult",
    "PlanStep",
    "PlanningStrategy",
    "Role",
    "Session",
    "StopReason",
    "TokenWindow",
    "behaviour_tree",
    "plan_and_execute",
    "plan_execute_reflect",
    "react",
    "reflexion",
]
