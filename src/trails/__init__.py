"""trails: an agent runtime whose every action is evidence.

The kernel surface lives here: ``@capability``, ``invoke``, ``Context`` and
the error tree. Planners (``trails.agent``), the LLM client (``trails.llm``),
memory (``trails.memory``) and the audit tools (``trails.audit``) are imported
on use, so ``import trails`` stays light.
"""

from __future__ import annotations

from trails.errors import (
    BudgetExceeded,
    CapabilityError,
    ConfigError,
    PolicyDenied,
    StoreError,
    TrailsError,
    UnknownCapability,
    UserError,
    ValidationError,
)
from trails.kernel import Context, all_capabilities, capability, get_capability, invoke

__version__ = "0.1.0"

__all__ = [
    "BudgetExceeded",
    "CapabilityError",
    "ConfigError",
    "Context",
    "PolicyDenied",
    "StoreError",
    "TrailsError",
    "UnknownCapability",
    "UserError",
    "ValidationError",
    "__version__",
    "all_capabilities",
    "capability",
    "get_capability",
    "invoke",
]
