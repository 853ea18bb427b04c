"""trails: an agent runtime whose every action is evidence.

The kernel surface lives here: ``@capability``, ``invoke``, ``Context`` and
the error tree. Planners (``trails.agent``), the LLM client (``trails.llm``),
memory (``trails.memory``), the evidence machinery (``trails.evidence``) and
the audit tools (``trails.audit``) are imported
on use, so ``import trails`` stays light. ``trails.Session`` (as in
``from trails import capability, Session``) is such a lazy export: the agent
package is imported the first time the name is looked up; so are selectools' names
(``from trails import Agent, AgentConfig``, see ``trails.agent.selectools``). Likewise the
built-in ``memory.*`` capabilities register themselves the first time
``invoke`` looks up a ``memory.`` id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trails import _moved
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

if TYPE_CHECKING:
    from trails.agent.context import Session
    from trails.agent.selectools import (
        Agent,
        AgentConfig,
        AgentObserver,
        AsyncAgentObserver,
        ConversationMemory,
        EntityMemory,
        KnowledgeGraphMemory,
        KnowledgeMemory,
        LoggingObserver,
        Message,
        Role,
    )
    from trails.kernel import (
        Context,
        ainvoke,
        all_capabilities,
        capability,
        get_capability,
        invoke,
    )

__version__ = "0.1.0"

_moved.install()  # old import paths of moved modules keep working for one release

#: Names exported lazily: name -> (module, attribute), imported on first lookup.
_LAZY: dict[str, tuple[str, str]] = {
    **{
        name: ("trails.kernel", name)
        for name in (
            "Context",
            "ainvoke",
            "all_capabilities",
            "capability",
            "get_capability",
            "invoke",
        )
    },
    "Session": ("trails.agent.context", "Session"),
    # selectools' names (``from selectools import Agent, AgentConfig`` -> ``from trails ...``)
    **{
        name: ("trails.agent.selectools", name)
        for name in (
            "Agent",
            "AgentConfig",
            "AgentObserver",
            "AsyncAgentObserver",
            "ConversationMemory",
            "EntityMemory",
            "KnowledgeGraphMemory",
            "KnowledgeMemory",
            "LoggingObserver",
            "Message",
            "Role",
        )
    },
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'trails' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Agent",
    "AgentConfig",
    "AgentObserver",
    "AsyncAgentObserver",
    "BudgetExceeded",
    "CapabilityError",
    "ConfigError",
    "Context",
    "ConversationMemory",
    "EntityMemory",
    "KnowledgeGraphMemory",
    "KnowledgeMemory",
    "LoggingObserver",
    "Message",
    "PolicyDenied",
    "Role",
    "Session",
    "StoreError",
    "TrailsError",
    "UnknownCapability",
    "UserError",
    "ValidationError",
    "__version__",
    "ainvoke",
    "all_capabilities",
    "capability",
    "get_capability",
    "invoke",
]
