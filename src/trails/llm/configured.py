"""LLM clients from configuration: the default client, and who serves each provider.

Code that names no client still needs one: ``Session.new(...).run(goal)``
without ``llm=``, ``ctx.llm`` inside a handler run outside any planner, a
``ModelSpec`` of another provider passed as ``model=``. This module builds
those clients from the same ``PROVIDER:MODEL`` spec ``trails demo --llm``
takes (``LLMClient.from_spec``), read like every other setting:

- the default client: ``TRAILS_LLM`` or ``[llm] model`` in trails.toml;
- the client serving provider ``P``: ``TRAILS_LLM_P`` (upper case) or
  ``[llm.providers] P``, else the default client when it is ``P``'s.

A provider's spec names its server (``ollama:MODEL@URL``) and its kind; the
model a ``ModelSpec`` asks for replaces the spec's model. Nothing here sends a
model id to a provider it was not configured for: a ``ModelSpec`` nobody is
configured to serve is a ``ConfigError`` naming the provider.

This module sits above ``trails.llm.client`` (it builds ``LLMClient`` objects); the
reading of the configuration and the clients kept per spec are in
``trails.llm.serving``, which ``LLMClient`` uses itself to route a
``ModelSpec`` of another provider, so neither module imports the other back.
``provider_spec``, ``with_model`` and ``reset`` are re-exported from there.
"""

from __future__ import annotations

from trails.llm.client import LLMClient
from trails.llm.serving import (
    default_client,
    provider_spec,
    reset,
    serving_client,
    with_model,
)

__all__ = ["configured_client", "provider_client", "provider_spec", "reset", "with_model"]


def configured_client(*, purpose: str = "no LLM client was given") -> LLMClient:
    """The default client of this process: ``TRAILS_LLM`` or ``[llm] model``.

    Args:
        purpose: what needed a client, for the error message.

    Returns:
        The client (one per spec, reused).

    Raises:
        ConfigError: no default model is configured, or its spec is invalid.
    """
    return default_client(LLMClient.from_spec, purpose=purpose)


def provider_client(provider: str, model: str, *, asked_by: str) -> LLMClient:
    """The configured client serving ``provider``, asking for ``model``.

    Args:
        provider: the provider of the requested ``ModelSpec``.
        model: its model id.
        asked_by: the client that was asked (``anthropic:claude-...``), for the message.

    Returns:
        The client.

    Raises:
        ConfigError: nobody is configured to serve ``provider``.
    """
    return serving_client(LLMClient.from_spec, provider, model, asked_by=asked_by)
