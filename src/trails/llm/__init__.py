"""The LLM client: model calls with cost envelopes, budgets, retries, caching and provenance.

``LLMClient`` wraps one provider adapter (Anthropic, Ollama, any
OpenAI-compatible server, a scripted mock, or a fallback chain of those) and
makes every ``complete`` / ``stream`` call (and their asyncio twins
``acomplete`` / ``astream``, and ``batch`` / ``abatch``) a booked, budgeted,
recorded ``trails:LLMCompletion``; native tool calls come back on
``Response.tool_calls``, a validated ``response_format`` answer on
``Response.parsed``; a user ``Message`` may show the model ``images``
(``Image``). Provider SDKs are imported only when their adapter
is built, so ``import trails.llm`` stays cheap.
"""

from __future__ import annotations

from trails.kernel.cost import CostTracker
from trails.llm.cache import (
    CacheBackend,
    CacheStats,
    ResponseCache,
    lookup_recorded,
    request_hash,
    request_params,
)
from trails.llm.catalogue import Catalogue, ModelSpec, default_catalogue, select_model
from trails.llm.client import LLMClient, Prompt, module_tracker, to_messages
from trails.llm.errors import (
    IncompleteStreamError,
    MalformedResponseError,
    MockScriptExhausted,
    ModelAPIError,
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelRateLimitError,
    ModelServerError,
    ModelTimeoutError,
    ProvidersUnavailable,
    RealModelsForbidden,
    StructuredOutputError,
)
from trails.llm.mock import MockAdapter
from trails.llm.retry import RetryPolicy
from trails.llm.structured import OutputFormat, ResponseFormat, output_format
from trails.llm.tools import tool_specs
from trails.llm.types import (
    Adapter,
    AsyncAdapter,
    Chunk,
    Image,
    Message,
    Request,
    Response,
    Role,
    ToolCall,
    ToolSpec,
)

__all__ = [
    "Adapter",
    "AsyncAdapter",
    "CacheBackend",
    "CacheStats",
    "Catalogue",
    "Chunk",
    "Image",
    "IncompleteStreamError",
    "LLMClient",
    "MalformedResponseError",
    "Message",
    "MockAdapter",
    "MockScriptExhausted",
    "ModelAPIError",
    "ModelAuthenticationError",
    "ModelBadRequestError",
    "ModelConnectionError",
    "ModelRateLimitError",
    "ModelServerError",
    "ModelSpec",
    "ModelTimeoutError",
    "OutputFormat",
    "Prompt",
    "ProvidersUnavailable",
    "RealModelsForbidden",
    "Request",
    "Response",
    "ResponseCache",
    "ResponseFormat",
    "RetryPolicy",
    "Role",
    "StructuredOutputError",
    "ToolCall",
    "ToolSpec",
    "default_catalogue",
    "lookup_recorded",
    "module_tracker",
    "output_format",
    "request_hash",
    "request_params",
    "select_model",
    "to_messages",
    "tool_specs",
]


def _module_tracker() -> CostTracker:
    """The module cost tracker planners read budgets from (the kernel's ``default_tracker``)."""
    return module_tracker()
