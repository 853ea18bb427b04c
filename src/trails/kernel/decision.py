"""What a tool policy is: the ``ToolPolicy`` protocol and its ``Decision``.

These types sit apart from ``Context`` and from the built-in ``RulePolicy`` so
that both can use them without using each other backwards: a ``Context``
holds a ``ToolPolicy`` and builds the ``[policy]`` of trails.toml into a
``RulePolicy`` (``trails.kernel.context`` imports ``trails.kernel.policy``);
``RulePolicy`` returns a ``Decision`` and needs nothing of ``Context``. This
module imports neither. ``trails.kernel.context`` and ``trails.kernel``
re-export both names (the same objects).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from trails.kernel.registry import CapabilitySpec

__all__ = ["Decision", "ToolPolicy"]


@dataclass(frozen=True)
class Decision:
    """A tool policy's verdict on one call."""

    decision: Literal["allow", "deny", "review"]
    reason: str = ""
    rule: str | None = None
    """The rule that matched (``"deny:delete_*"``), recorded with the decision."""


@runtime_checkable
class ToolPolicy(Protocol):
    """Decides whether a capability call may run. Every decision is recorded.

    ``decide`` is given the capability's spec, the validated arguments and the
    calling ``trails.kernel.Context`` as ``ctx``. The protocol types ``ctx`` as
    ``Any`` because ``Context`` holds a ``ToolPolicy`` (this module cannot
    import it back); a policy annotates it as ``Context``.
    """

    name: str

    def decide(self, spec: CapabilitySpec, args: dict[str, Any], ctx: Any) -> Decision: ...
