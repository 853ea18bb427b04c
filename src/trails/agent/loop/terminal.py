"""Terminal actions: the call that ends a run, decided and linked in the graph.

A run ends after a successful call when the capability is declared
``terminal=True``, or when the run's ``stop_condition(tool_name, result)``
returns True for it (the seed's dynamic terminal: ``result`` is the call's
result as the model would read it, a str). The call's result is the answer.

The graph links the run to the call that ended it in plain PROV: the run
``prov:wasEndedBy`` (and ``trails:wasTerminatedBy``) a ``trails:TerminalAction``
termination, which ``prov:wasGeneratedBy`` the call's invocation; its
``trails:reason`` says which rule ended the run. The query pack's
``terminations`` lists it with the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

from trails.agent.loop.outcome import stringify
from trails.errors import UserError
from trails.kernel.registry import get_capability

__all__ = ["StopCondition", "StopConditionError", "reason_of", "terminal_reason"]

StopCondition: TypeAlias = Callable[[str, str], bool]
"""``stop_condition(tool_name, result) -> bool``: True ends the run after that call."""


class StopConditionError(UserError):
    """The run's ``stop_condition`` raised."""


def terminal_reason(
    action: str, observation: Any, stop_condition: StopCondition | None
) -> str | None:
    """Why the successful call of ``action`` ends the run (None: it does not).

    Raises:
        StopConditionError: ``stop_condition`` raised (the run ends with an error).
    """
    if get_capability(action).terminal:
        return f"terminal capability {action!r}"
    if stop_condition is None:
        return None
    try:
        stop = stop_condition(action, stringify(observation))
    except Exception as exc:
        raise StopConditionError(
            f"stop_condition raised on {action!r}: {type(exc).__name__}: {exc}"
        ) from exc
    return f"stop_condition after {action!r}" if stop else None


def reason_of(capability_id: str) -> str:
    """The reason a run nesting another records for the call that ended the nested run."""
    try:
        terminal = get_capability(capability_id).terminal
    except UserError:
        terminal = False
    if terminal:
        return f"terminal capability {capability_id!r}"
    return f"stop_condition after {capability_id!r}"
