"""Checks of the keywords every planner's ``run`` shares, made before anything is recorded.

``check_positive_int`` (``max_steps`` ...), ``check_limits`` (the cumulative
budgets), ``per_call_tokens`` (either spelling of the per-call token cap) and
``governance`` (the run's policy, approver and observers, checked by ``PlanRun``).
``trails.agent.loop.run`` re-exports them, where the planners import them from.
"""

from __future__ import annotations

import warnings
from typing import Any

from trails.errors import UserError

__all__ = ["check_limits", "check_positive_int", "governance", "per_call_tokens"]


def governance(
    policy: Any, approver: Any, approval_timeout_s: float | None, observers: Any
) -> dict[str, Any]:
    """A run's ``governance=`` for ``PlanRun`` (checked there) from its four keywords."""
    return {
        "policy": policy,
        "approver": approver,
        "approval_timeout_s": approval_timeout_s,
        "observers": observers,
    }


def check_positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """Validate an int keyword (``max_steps``, ``max_replans`` ...).

    Args:
        name: the keyword, for the message.
        value: the value given.
        minimum: the smallest accepted value.

    Returns:
        The value.

    Raises:
        UserError: not an int (bools included) or below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UserError(f"{name} must be an int >= {minimum}, not {value!r}")
    return value


def _check_limit(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise UserError(f"{name} must be None or a number >= 0, not {value!r}")
    return float(value)


def check_limits(
    *, max_cost_usd: Any, max_tokens: Any, max_wall_time_s: Any, per_call: int | None = None
) -> dict[str, float | None]:
    """Validate the cumulative-budget keywords before anything is recorded.

    ``max_tokens`` is the whole run's token budget. A budget no larger than one
    call's completion cap (``per_call``) is almost surely meant as that cap (other
    frameworks spell the per-response cap ``max_tokens``): a ``UserWarning`` says
    so, naming ``max_tokens_per_call``, and the run goes on with the budget given.

    Returns:
        The keywords as floats (None: unlimited).

    Raises:
        UserError: a negative or non-numeric limit.
    """
    limits = {
        "max_cost_usd": _check_limit("max_cost_usd", max_cost_usd),
        "max_tokens": _check_limit("max_tokens", max_tokens),
        "max_wall_time_s": _check_limit("max_wall_time_s", max_wall_time_s),
    }
    budget = limits["max_tokens"]
    if budget is not None and per_call is not None and budget <= per_call:
        warnings.warn(
            f"max_tokens={max_tokens} is the whole run's token budget (prompts and "
            f"replies of every call), not one reply's cap; it is no larger than one "
            f"call's cap ({per_call}). For a cap on each reply pass "
            f"max_tokens_per_call={max_tokens}.",
            UserWarning,
            stacklevel=4,
        )
    return limits


def per_call_tokens(max_tokens_per_step: Any, max_tokens_per_call: Any) -> int:
    """The completion-token cap of one LLM call, from either spelling of the keyword.

    Args:
        max_tokens_per_step: ReAct's spelling (None when not given).
        max_tokens_per_call: the other planners' spelling (None when not given).

    Returns:
        The cap (default 1024).

    Raises:
        UserError: both given with different values, or not a positive int.
    """
    if (
        max_tokens_per_step is not None
        and max_tokens_per_call is not None
        and max_tokens_per_step != max_tokens_per_call
    ):
        raise UserError(
            "max_tokens_per_step and max_tokens_per_call name the same cap; pass only one"
        )
    value = max_tokens_per_step if max_tokens_per_step is not None else max_tokens_per_call
    return check_positive_int("max_tokens_per_call", 1024 if value is None else value)
