"""The shapes every planner shares: results, steps, stop reasons, the strategy protocol.

Planners differ in loop shape, not in what they return: a result with the
answer, the trajectory of think-act-observe steps, why the loop stopped, and
the plan-run activity that recorded it. Keeping these in one module makes
swapping one strategy for another a one-line import change.

``PlanResult``, ``PlanStep``, ``StopReason``, ``STOP_REASONS`` and
``BUDGET_STOPS`` are defined in ``trails.agent.result`` (so ``Session`` can name
them without importing a planner) and re-exported here, the same objects;
``PlanningStrategy`` is ``trails.agent.strategies.Strategy`` for a ``Session``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from trails.agent.context import Session
from trails.agent.result import BUDGET_STOPS, STOP_REASONS, PlanResult, PlanStep, StopReason
from trails.agent.strategies import Strategy
from trails.llm.types import Message, Response

if TYPE_CHECKING:
    from trails.kernel.context import Context

__all__ = [
    "BUDGET_STOPS",
    "STOP_REASONS",
    "CompletionClient",
    "PlanResult",
    "PlanStep",
    "PlanningStrategy",
    "StopReason",
]


class CompletionClient(Protocol):
    """What a planner needs from an LLM client: one ``complete`` call."""

    def complete(
        self,
        messages: list[Message],
        *,
        max_tokens: int = ...,
        temperature: float = ...,
        ctx: Context | None = ...,
    ) -> Response: ...


@runtime_checkable
class PlanningStrategy(Strategy[Session], Protocol):
    """What every planner satisfies (the planner modules themselves do): ``run`` and ``arun``.

    The signatures are ``trails.agent.strategies.Strategy``'s, with ``session`` a ``Session``.
    """
