"""The data that crosses the LLM boundary: ``Message``, ``Response``, ``Chunk``, and the adapter contract.

An adapter speaks one provider's wire format and nothing else: one method,
``complete``, plus optional streaming. Everything trails owns (cost
envelopes, provenance, retries, caching, budgets) lives in ``LLMClient``
around the adapter, so a new provider is one small file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = ["Adapter", "Chunk", "Message", "Request", "Response", "Role"]

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    """One chat message. ``cache=True`` marks a prompt-cache breakpoint (Anthropic)."""

    role: Role
    content: str
    cache: bool = False

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.cache:
            data["cache"] = True
        return data


@dataclass(frozen=True)
class Request:
    """Everything an adapter needs for one call."""

    model: str
    messages: tuple[Message, ...]
    max_tokens: int = 1024
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Response:
    """The result of one completion, whatever the provider.

    Adapters fill the provider's fields (text, model, tokens, request id, stop
    reason); ``LLMClient`` adds ``usd`` (None when the price is unknown),
    ``cache_hit``, ``latency_s``, ``retries``, ``activity_iri`` (the recorded
    ``trails:LLMCompletion``) and ``call_id`` (the id of its cost envelope, for
    a scope that books a ``dedupe="child"`` row against it).
    """

    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    usd: float | None = None
    cache_hit: bool = False
    latency_s: float = 0.0
    request_id: str | None = None
    retries: int = 0
    provider: str = ""
    activity_iri: str | None = None
    stop_reason: str | None = None
    call_id: str | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Chunk:
    """A piece of streamed text; ``LLMClient.stream`` yields these, then the ``Response``."""

    text: str


@runtime_checkable
class Adapter(Protocol):
    """One provider's wire format. ``complete`` returns a ``Response`` without cost or provenance."""

    provider: str
    model: str

    def complete(self, request: Request) -> Response: ...

    def stream(self, request: Request) -> Iterator[Chunk | Response]: ...
