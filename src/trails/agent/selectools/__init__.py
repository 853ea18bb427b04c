"""selectools' ``Agent`` API over trails: the names a selectools program imports.

``from trails.agent import Agent, AgentConfig`` (or from this package) gives a selectools
user the ``Agent`` they know, with its config, memory, observers, trace and helpers, each
run recorded as trails records every run. See docs/agent.md, "The selectools Agent".
"""

from __future__ import annotations

from trails.agent.knowledge import EntityMemory, KnowledgeGraphMemory, KnowledgeMemory
from trails.agent.selectools.agent import MAX_ITERATIONS_MESSAGE, Agent
from trails.agent.selectools.config import (
    AgentAnalytics,
    AgentConfig,
    AgentUsage,
    InMemoryCache,
    Role,
    ToolPolicy,
    UsageStats,
)
from trails.agent.selectools.memory import ConversationMemory
from trails.agent.selectools.observers import AgentObserver, AsyncAgentObserver, LoggingObserver
from trails.agent.selectools.providers import (
    AnthropicProvider,
    FallbackProvider,
    LocalProvider,
    OpenAIProvider,
    ProviderConfigurationError,
)
from trails.agent.selectools.structured import (
    ResponseFormat,
    build_schema_instruction,
    extract_json,
    parse_and_validate,
    schema_from_response_format,
    validation_retry_message,
)
from trails.agent.selectools.trace import AgentResult, AgentTrace, StreamChunk, TraceStep
from trails.llm.types import Message

__all__ = [
    "MAX_ITERATIONS_MESSAGE",
    "Agent",
    "AgentAnalytics",
    "AgentConfig",
    "AgentObserver",
    "AgentResult",
    "AgentTrace",
    "AgentUsage",
    "AnthropicProvider",
    "AsyncAgentObserver",
    "ConversationMemory",
    "EntityMemory",
    "FallbackProvider",
    "InMemoryCache",
    "KnowledgeGraphMemory",
    "KnowledgeMemory",
    "LocalProvider",
    "LoggingObserver",
    "Message",
    "OpenAIProvider",
    "ProviderConfigurationError",
    "ResponseFormat",
    "Role",
    "StreamChunk",
    "ToolPolicy",
    "TraceStep",
    "UsageStats",
    "build_schema_instruction",
    "extract_json",
    "parse_and_validate",
    "schema_from_response_format",
    "validation_retry_message",
]
