"""What a planner run returns: ``PlanResult``, its ``PlanStep`` trajectory, the stop reasons.

These shapes live apart from the planners so that ``Session`` (``trails.agent.context``),
which returns a ``PlanResult`` from ``run``, can name them without importing a planner
module. The module imports nothing from the rest of ``trails.agent``; the planners and
``trails.agent.planners.base`` re-export these names (the same objects).

Planners differ in loop shape, not in what they return: a result with the
answer, the trajectory of think-act-observe steps, why the loop stopped, and
the plan-run activity that recorded it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "BUDGET_STOPS",
    "STOP_REASONS",
    "PlanResult",
    "PlanStep",
    "StopReason",
]

StopReason = Literal[
    "goal_achieved", "max_steps", "max_cost", "max_tokens", "max_wall_time", "error"
]
"""Why a planner run stopped."""

STOP_REASONS: tuple[str, ...] = (
    "goal_achieved",
    "max_steps",
    "max_cost",
    "max_tokens",
    "max_wall_time",
    "error",
)

#: The stop reasons of a cumulative-budget breach (a clean stop, not an error).
BUDGET_STOPS: frozenset[str] = frozenset({"max_cost", "max_tokens", "max_wall_time"})


@dataclass
class PlanStep:
    """One think-act-observe turn.

    Attributes:
        thought: the model's reasoning for the turn (a plan step's rationale).
        action: the capability id dispatched, or ``"finish"``.
        action_input: the arguments given to the capability.
        observation: what the capability returned, or ``"error: <message>"``.
        activity_iri: the step's activity: the capability invocation, or the
            LLM completion when nothing was invoked (``finish``, unknown id, denial).
    """

    thought: str
    action: str
    action_input: dict[str, Any] = field(default_factory=dict)
    observation: Any = None
    activity_iri: str | None = None

    @property
    def reasoning(self) -> str:
        """The turn's reasoning (``thought``), under seed 002's name."""
        return self.thought


@dataclass
class PlanResult:
    """The terminal output of a planner run.

    Attributes:
        answer: the final answer on ``goal_achieved``; otherwise the best-effort
            answer (the last observation, JSON-encoded when not a str), or None.
            With ``output_type=`` a ``goal_achieved`` answer is the validated
            object (a model instance, or the JSON value for a schema).
        steps: the trajectory, in order.
        stopped: why the run stopped.
        error: the error message when ``stopped == "error"``.
        strategy: the planner that produced the result.
        activity_iri: the run's plan-run activity in the provenance graph.
        terminated_by: the ``terminal=True`` capability whose call ended the run
            (its result is the answer; the model was not asked again), or the one
            after whose call the run's ``stop_condition`` said stop; else None.
        terminated_by_call: that call's invocation activity in the provenance
            graph (the run ``prov:wasEndedBy`` a ``trails:TerminalAction`` it generated).
        memory_id: the conversation the run wrote into (its session's IRI, seed 003's
            ``memory_id``): ``plan_execute_reflect.run(..., memory_id=)`` continues it.

    ``reasoning_history`` lists the steps' thoughts and ``reasoning`` is the last of them
    (seed 002's names); the completions that hold them are in the graph.
    """

    answer: Any
    steps: list[PlanStep]
    stopped: StopReason
    error: str | None = None
    strategy: str = "react"
    activity_iri: str | None = None
    terminated_by: str | None = None
    terminated_by_call: str | None = None
    memory_id: str | None = None

    @property
    def parent_interaction_id(self) -> str | None:
        """Seed 003's ``parent_interaction_id``: the run's activity (``activity_iri``)."""
        return self.activity_iri

    @property
    def executor_agent_parent_interaction_id(self) -> str | None:
        """Seed 003's executor interaction: the last executor pass of a Plan-Execute-Reflect
        run (its ReAct run's activity); None for a run without one."""
        passes = [s.activity_iri for s in self.steps if s.action == "executor"]
        return passes[-1] if passes else None

    @property
    def executor_agent_memory_id(self) -> str | None:
        """Seed 003's executor memory: the conversation the executor passes wrote into
        (the run's own, ``memory_id``); None for a run without an executor pass."""
        return self.memory_id if self.executor_agent_parent_interaction_id else None

    @property
    def reasoning_history(self) -> list[str]:
        """The model's reasoning on each turn that gave one, in order."""
        return [step.thought for step in self.steps if step.thought]

    @property
    def reasoning(self) -> str | None:
        """The reasoning of the last turn that gave one (the final decision), or None."""
        history = self.reasoning_history
        return history[-1] if history else None
