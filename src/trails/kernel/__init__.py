"""The capability kernel: ``@capability``, ``invoke``, ``Context`` and the cost tracker.

Pure dispatch with provenance: a typed, validated, recorded call from a
principal to a handler. Planners, the LLM client and memory build on it.
"""

from __future__ import annotations

from trails.kernel.context import (
    Context,
    Decision,
    InvocationRecord,
    ToolPolicy,
    current_context,
    default_context,
    now,
    reset_default_context,
)
from trails.kernel.cost import Budget, CostTracker, Envelope, default_tracker
from trails.kernel.invoke import ainvoke, invoke
from trails.kernel.registry import (
    CapabilitySpec,
    ParamSpec,
    all_capabilities,
    capability,
    get_capability,
    unregister,
)

__all__ = [
    "Budget",
    "CapabilitySpec",
    "Context",
    "CostTracker",
    "Decision",
    "Envelope",
    "InvocationRecord",
    "ParamSpec",
    "ToolPolicy",
    "ainvoke",
    "all_capabilities",
    "capability",
    "current_context",
    "default_context",
    "default_tracker",
    "get_capability",
    "invoke",
    "now",
    "reset_default_context",
    "unregister",
]
