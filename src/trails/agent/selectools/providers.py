"""selectools' provider names as trails LLM clients, and ``ProviderConfigurationError``.

A selectools program makes its provider first (``OpenAIProvider()``,
``AnthropicProvider(default_model=...)``, ``LocalProvider()`` for tests,
``FallbackProvider([...])``); each name here returns the ``LLMClient`` that speaks to that
provider, so every call is a recorded completion. As in selectools, a provider that needs
an API key and has none fails when it is made, with ``ProviderConfigurationError``, not at
its first call; ``check_provider`` holds an ``LLMClient`` given to ``Agent`` to that rule.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from trails.errors import ConfigError, UserError
from trails.llm.client import LLMClient

__all__ = [
    "AnthropicProvider",
    "FallbackProvider",
    "LocalProvider",
    "OpenAIProvider",
    "ProviderConfigurationError",
    "check_provider",
]

OPENAI_URL = "https://api.openai.com/v1"


class ProviderConfigurationError(ConfigError):
    """A provider cannot be used as configured: its API key is missing."""


def OpenAIProvider(
    api_key: str | None = None,
    *,
    default_model: str = "gpt-4o-mini",
    base_url: str | None = None,
    timeout: float = 30.0,
) -> LLMClient:
    """OpenAI's chat completions API (or any compatible ``base_url``).

    Raises:
        ProviderConfigurationError: the official API with no ``api_key`` and no
            ``OPENAI_API_KEY``.
    """
    url = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL
    client = LLMClient.openai_compatible(
        default_model, base_url=url, api_key=api_key, timeout=timeout
    )
    return check_provider(client)


def AnthropicProvider(
    api_key: str | None = None,
    *,
    default_model: str = "claude-sonnet-4-5",
    base_url: str | None = None,
    timeout: float = 30.0,
) -> LLMClient:
    """Anthropic's Messages API.

    Raises:
        ProviderConfigurationError: no ``api_key`` and no ``ANTHROPIC_API_KEY``.
    """
    client = LLMClient.anthropic(default_model, api_key=api_key, base_url=base_url, timeout=timeout)
    return check_provider(client)


def LocalProvider(responses: Any = None, *, model: str = "local") -> LLMClient:
    """A provider that calls no API: trails' scripted mock (no script: the offline model)."""
    return LLMClient.mock(responses, model=model)


def FallbackProvider(
    providers: Sequence[LLMClient],
    *,
    max_failures: int = 3,
    cooldown_seconds: float = 60.0,
    on_fallback: Callable[..., object] | None = None,
) -> LLMClient:
    """Providers in priority order with a circuit breaker (``LLMClient.fallback``)."""
    members = list(providers)
    for index, member in enumerate(members):
        if not isinstance(member, LLMClient):
            raise UserError(
                f"FallbackProvider providers[{index}] must be an LLMClient "
                f"(OpenAIProvider(), LocalProvider(...) ...), not {member!r}"
            )
    return LLMClient.fallback(
        members,
        max_failures=max_failures,
        cooldown_seconds=cooldown_seconds,
        on_fallback=on_fallback,
    )


def _missing_key(adapter: Any) -> str | None:
    """The environment variable a client's adapter needs and lacks, or None."""
    name = type(adapter).__name__
    has_key = getattr(adapter, "_api_key", None) or os.environ.get("ANTHROPIC_API_KEY")
    if name == "AnthropicAdapter" and not has_key:
        return "ANTHROPIC_API_KEY"
    if name == "OpenAICompatAdapter" and getattr(adapter, "provider", "") == "openai":
        http = getattr(adapter, "_http", None)
        headers = getattr(http, "headers", None) or getattr(http, "_headers", None) or {}
        if not any(k.lower() == "authorization" for k in headers):
            return "OPENAI_API_KEY"
    for inner, _retry in getattr(adapter, "members", ()) or ():
        if (missing := _missing_key(inner)) is not None:
            return missing
    return None


def check_provider(client: LLMClient) -> LLMClient:
    """``client``, when the API key it needs is there.

    Raises:
        ProviderConfigurationError: the key is missing (the message names the variable).
    """
    if not isinstance(client, LLMClient):
        raise UserError(
            "Agent provider= must be an LLMClient (OpenAIProvider(), AnthropicProvider(), "
            f"LocalProvider(...) ...), not {client!r}"
        )
    missing = _missing_key(client.adapter)
    if missing is not None:
        raise ProviderConfigurationError(
            f"{client.provider}: no API key: pass api_key= or set {missing}"
        )
    return client
