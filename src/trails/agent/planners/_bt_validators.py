"""reactree's ``DeterministicValidator``: a validator that refuses the tools it blocks.

Seed 004's ``NewDeterministicValidator(blockedTools)`` is an ``ActionValidator`` whose
``Validate(ctx, toolName, jsonArgs)`` returns an error for a blocked tool. In trails a
validator is a function ``(capability_id, action_input) -> reason | None`` given as
``validate_action=``; ``DeterministicValidator(blocked_tools)`` is one (its call returns
the reason), with the seed's ``validate`` (raising ``ValidationError``) and
``blocked_tools``. A refusal is recorded like every validator's: a
``trails:PolicyDecision`` ``deny`` with the reason, nothing invoked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trails.errors import UserError, ValidationError

__all__ = ["DeterministicValidator", "NewDeterministicValidator"]


class DeterministicValidator:
    """Refuses every call of a blocked tool (seed 004's ``DeterministicValidator``).

    Args:
        blocked_tools: the capability ids never to run (the seed's ``BlockedTools``).

    Raises:
        UserError: ``blocked_tools`` is not a sequence of non-empty str.
    """

    def __init__(self, blocked_tools: Sequence[str]) -> None:
        if isinstance(blocked_tools, str) or not all(
            isinstance(t, str) and t.strip() for t in blocked_tools
        ):
            raise UserError(f"blocked_tools must be a list of tool ids, not {blocked_tools!r}")
        self.blocked_tools = tuple(blocked_tools)

    @property
    def BlockedTools(self) -> tuple[str, ...]:
        """The seed's field name for ``blocked_tools``."""
        return self.blocked_tools

    def __call__(self, capability_id: str, action_input: Any = None) -> str | None:
        if capability_id in self.blocked_tools:
            return f"tool {capability_id!r} is blocked by the deterministic validator"
        return None

    def validate(self, tool_name: str, json_args: Any = None) -> None:
        """The seed's ``Validate``: raises ``ValidationError`` for a blocked tool."""
        reason = self(tool_name, json_args)
        if reason is not None:
            raise ValidationError(tool_name, reason)

    def __repr__(self) -> str:
        return f"DeterministicValidator({list(self.blocked_tools)!r})"


def NewDeterministicValidator(blocked_tools: Sequence[str]) -> DeterministicValidator:
    """The seed's constructor name: ``DeterministicValidator(blocked_tools)``."""
    return DeterministicValidator(blocked_tools)
