"""The capability kernel: ``@capability``, ``invoke``, ``Context`` and the cost tracker.

Pure dispatch with provenance: a typed, validated, recorded call from a
principal to a handler, judged by a tool policy (``RulePolicy``, human review
by an approver) and watched by observers (``Observer``, ``LoggingObserver``). Planners, the LLM client and memory build on it.
"""

from __future__ import annotations

from trails.kernel.context import (
    Context,
    InvocationRecord,
    current_context,
    default_context,
    now,
    reset_default_context,
)
from trails.kernel.cost import Budget, CostTracker, Envelope, default_tracker
from trails.kernel.decision import Decision, ToolPolicy
from trails.kernel.invoke import ainvoke, invoke
from trails.kernel.observe import (
    EVENT_KINDS,
    AsyncObserver,
    LoggingObserver,
    Observer,
    ObserverBase,
    ObserverEvent,
    add_observer,
    clear_observers,
    remove_observer,
)
from trails.kernel.policy import Approval, Approver, DenyWhen, RulePolicy
from trails.kernel.registry import (
    CapabilitySpec,
    ParamSpec,
    all_capabilities,
    capability,
    get_capability,
    unregister,
)

__all__ = [
    "EVENT_KINDS",
    "Approval",
    "Approver",
    "AsyncObserver",
    "Budget",
    "CapabilitySpec",
    "Context",
    "CostTracker",
    "Decision",
    "DenyWhen",
    "Envelope",
    "InvocationRecord",
    "LoggingObserver",
    "Observer",
    "ObserverBase",
    "ObserverEvent",
    "ParamSpec",
    "RulePolicy",
    "ToolPolicy",
    "add_observer",
    "ainvoke",
    "all_capabilities",
    "capability",
    "clear_observers",
    "current_context",
    "default_context",
    "default_tracker",
    "get_capability",
    "invoke",
    "now",
    "remove_observer",
    "reset_default_context",
    "unregister",
]
