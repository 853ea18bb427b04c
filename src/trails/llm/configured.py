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
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from trails.config import load_settings
from trails.errors import ConfigError, UserError

if TYPE_CHECKING:
    from trails.llm.client import LLMClient

__all__ = ["configured_client", "provider_client", "provider_spec", "reset", "with_model"]

_EXAMPLES = "anthropic:claude-haiku-4-5, ollama:qwen3:8b, openai:MODEL@URL"

_lock = threading.Lock()
_clients: dict[str, LLMClient] = {}


def _kind(spec: str) -> str:
    return spec.strip().partition(":")[0].lower()


def with_model(spec: str, model: str) -> str:
    """``spec`` with its model replaced by ``model`` (its server kept).

    Args:
        spec: ``PROVIDER:MODEL[@URL]`` (``mock`` and ``openai:MODEL@URL`` too).
        model: the model id to ask for.

    Returns:
        The new spec.
    """
    kind, _, rest = spec.strip().partition(":")
    _, at, url = rest.rpartition("@") if "@" in rest else ("", "", "")
    return f"{kind}:{model}{at}{url}"


def _cached(spec: str, where: str) -> LLMClient:
    from trails.llm.client import LLMClient

    with _lock:
        client = _clients.get(spec)
        if client is None:
            try:
                client = LLMClient.from_spec(spec)
            except UserError as exc:
                raise ConfigError(f"{where}: {exc}") from exc
            _clients[spec] = client
        return client


def configured_client(*, purpose: str = "no LLM client was given") -> LLMClient:
    """The default client of this process: ``TRAILS_LLM`` or ``[llm] model``.

    Args:
        purpose: what needed a client, for the error message.

    Returns:
        The client (one per spec, reused).

    Raises:
        ConfigError: no default model is configured, or its spec is invalid.
    """
    settings = load_settings()
    spec = settings.llm.strip()
    if not spec:
        raise ConfigError(
            f"{purpose}; or configure a default model: TRAILS_LLM=PROVIDER:MODEL in the "
            f'environment or [llm] model = "PROVIDER:MODEL" in trails.toml (e.g. {_EXAMPLES})'
        )
    return _cached(spec, settings.sources.get("llm", "TRAILS_LLM"))


def provider_spec(provider: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The configured spec of the client serving ``provider``, or None.

    Args:
        provider: a provider name (``anthropic``, ``ollama``, ``openai`` ...).
        environ: the environment (default ``os.environ``).

    Returns:
        ``TRAILS_LLM_<PROVIDER>``, else ``[llm.providers] <provider>``, else the
        default spec when it is that provider's, else None.

    Raises:
        ConfigError: ``[llm.providers]`` is not a table of strings.
    """
    import os

    env = os.environ if environ is None else environ
    var = f"TRAILS_LLM_{provider.upper()}"
    if env.get(var):
        return env[var]
    settings = load_settings(environ=env)
    table = settings.section("llm").get("providers", {})
    if not isinstance(table, dict):
        raise ConfigError(f"[llm.providers] in {settings.config_path} must be a table")
    given = table.get(provider)
    if given is not None:
        if not isinstance(given, str):
            raise ConfigError(f"[llm.providers] {provider} must be a PROVIDER:MODEL string")
        return given
    default = settings.llm.strip()
    if default and _kind(default) == provider.lower():
        return default
    return None


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
    spec = provider_spec(provider)
    if spec is None:
        raise ConfigError(
            f"model {provider}:{model} is served by provider {provider!r}, and this client "
            f"({asked_by}) does not speak to it; configure a {provider} client: "
            f"TRAILS_LLM_{provider.upper()}={provider}:MODEL[@URL] in the environment or "
            f'[llm.providers] {provider} = "{provider}:MODEL[@URL]" in trails.toml'
        )
    return _cached(with_model(spec, model), f"the {provider} client ({spec})")


def reset() -> None:
    """Forget the clients built so far (configuration changed: tests, notebooks)."""
    with _lock:
        _clients.clear()
