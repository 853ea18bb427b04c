"""Who serves each provider, by configuration, and the clients built for them (one per spec).

The machinery under ``trails.llm.configured``, kept apart from it so that
``LLMClient`` can use it without importing ``trails.llm.configured`` (which
builds each ``LLMClient``, and so imports ``trails.llm.client``). Nothing here
knows ``LLMClient``: whoever asks for a client passes the function that builds
one from a ``PROVIDER:MODEL`` spec (``LLMClient.from_spec``, always, in
trails), and the client built for a spec is kept and shared by every caller.

- the default client: ``TRAILS_LLM`` or ``[llm] model`` in trails.toml
  (``default_client``);
- the client serving provider ``P``: ``TRAILS_LLM_P`` (upper case) or
  ``[llm.providers] P``, else the default client when it is ``P``'s
  (``provider_spec``, ``serving_client``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from trails.config import load_settings
from trails.errors import ConfigError, UserError

__all__ = ["default_client", "provider_spec", "reset", "serving_client", "with_model"]

ClientT = TypeVar("ClientT")

_EXAMPLES = "anthropic:claude-haiku-4-5, ollama:qwen3:8b, openai:MODEL@URL"

_lock = threading.Lock()
_clients: dict[str, Any] = {}
"""The client built for each spec (an ``LLMClient``: typed loosely, see the docstring)."""


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


def _cached(spec: str, where: str, build: Callable[[str], ClientT]) -> ClientT:
    with _lock:
        client: ClientT | None = _clients.get(spec)
        if client is None:
            try:
                client = build(spec)
            except UserError as exc:
                raise ConfigError(f"{where}: {exc}") from exc
            _clients[spec] = client
        return client


def default_client(
    build: Callable[[str], ClientT], *, purpose: str = "no LLM client was given"
) -> ClientT:
    """The default client of this process: ``TRAILS_LLM`` or ``[llm] model``.

    Args:
        build: builds a client from a spec (``LLMClient.from_spec``).
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
    return _cached(spec, settings.sources.get("llm", "TRAILS_LLM"), build)


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


def serving_client(
    build: Callable[[str], ClientT], provider: str, model: str, *, asked_by: str
) -> ClientT:
    """The configured client serving ``provider``, asking for ``model``.

    Args:
        build: builds a client from a spec (``LLMClient.from_spec``).
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
    return _cached(with_model(spec, model), f"the {provider} client ({spec})", build)


def reset() -> None:
    """Forget the clients built so far (configuration changed: tests, notebooks)."""
    with _lock:
        _clients.clear()
