"""The data that crosses the LLM boundary: ``Message``, ``Image``, ``Response``, ``Chunk``, and the adapter contract.

An adapter speaks one provider's wire format and nothing else: one method,
``complete``, plus optional streaming. Everything trails owns (cost
envelopes, provenance, retries, caching, budgets) lives in ``LLMClient``
around the adapter, so a new provider is one small file.

A user message may carry images (``Message.images``, each an ``Image``: PNG,
JPEG, GIF or WebP bytes); every adapter sends them in its provider's own
multimodal form, and the recorded prompt and the request hash name each by
media type, size and sha256, never by its bytes.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from base64 import b64encode
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol, runtime_checkable

from trails.errors import UserError
from trails.store.terms import IRI

__all__ = [
    "IMAGE_TYPES",
    "Adapter",
    "AsyncAdapter",
    "Chunk",
    "Image",
    "Message",
    "Request",
    "Response",
    "Role",
    "ToolCall",
    "ToolSpec",
    "new_call_id",
    "wire_name",
]


def wire_name(name: str) -> str:
    """A tool name every provider accepts (``[A-Za-z0-9_-]``, at most 64 characters).

    Capability ids such as ``notes.search`` have dots, which OpenAI and
    Anthropic refuse in tool names: each other character becomes ``__``.
    Adapters send this name and map the model's calls back to the tool's own
    name (``Request.tool_name``).
    """
    return re.sub(r"[^A-Za-z0-9_-]", "__", name)[:64]


def new_call_id() -> str:
    """A fresh tool-call id, for providers whose tool calls come without one (Ollama)."""
    return f"call_{uuid.uuid4().hex[:16]}"


Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call: a name, what it does, and its arguments' JSON schema.

    ``LLMClient.complete(tools=...)`` builds these from capabilities (their
    manifest's ``input_schema``) or from ``{"name", "description",
    "parameters"}`` dicts; each adapter turns them into its provider's tool
    definition.
    """

    name: str
    description: str
    parameters: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def as_function(self) -> dict[str, Any]:
        """The ``{"type": "function", ...}`` tool definition OpenAI-style APIs (and Ollama) take."""
        return {
            "type": "function",
            "function": {
                "name": wire_name(self.name),
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for: the provider's call id, the tool's name, its arguments.

    ``id`` is what links the recorded completion (``trails:toolCallId``) to
    the invocation that later runs the call.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


#: The image media types every provider adapter can send, and how each one's bytes begin.
IMAGE_TYPES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),  # then four size bytes and "WEBP"
}


def _is_a(media_type: str, data: bytes) -> bool:
    """Whether ``data`` begins as a file of ``media_type`` does."""
    if not data.startswith(IMAGE_TYPES[media_type]):
        return False
    return media_type != "image/webp" or data[8:12] == b"WEBP"


@dataclass(frozen=True)
class Image:
    """An image a user message shows the model: its media type and its bytes.

    Attributes:
        media_type: ``image/png``, ``image/jpeg``, ``image/gif`` or ``image/webp``.
        data: the image file's bytes (they must begin as that type's files do).
        entity: the IRI of an entity already recorded for these bytes (a behaviour-tree
            run's ``trails:Attachment``): the completion that sends the image
            ``prov:used`` it. None: the completion records the image as a
            ``trails:Attachment`` of its own. Not part of the request hash.

    Raises:
        UserError: another media type, no bytes, or bytes of another format.
    """

    media_type: str
    data: bytes = field(repr=False)
    entity: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        media_type = self.media_type
        if not isinstance(media_type, str) or media_type.strip().lower() not in IMAGE_TYPES:
            raise UserError(
                f"Image media_type must be one of {', '.join(IMAGE_TYPES)}, not {media_type!r}"
            )
        media_type = media_type.strip().lower()
        object.__setattr__(self, "media_type", media_type)
        if isinstance(self.data, bytearray | memoryview):
            object.__setattr__(self, "data", bytes(self.data))
        if not isinstance(self.data, bytes):
            raise UserError(f"Image data must be bytes, not {type(self.data).__name__}")
        if not self.data:
            raise UserError("Image data is empty")
        if not _is_a(media_type, self.data):
            raise UserError(
                f"Image data is not {media_type}: its first bytes are not that format's signature"
            )
        if self.entity is not None:
            try:
                IRI(self.entity)
            except (TypeError, ValueError) as exc:
                raise UserError(
                    f"Image entity must be an absolute IRI, not {self.entity!r}"
                ) from exc

    @cached_property
    def sha256(self) -> str:
        """The hex sha256 of the bytes: what the recorded prompt and the request hash name
        (computed once: a request names it in its prompt, its hash and its evidence)."""
        return hashlib.sha256(self.data).hexdigest()

    @property
    def size(self) -> int:
        """How many bytes it holds."""
        return len(self.data)

    def as_dict(self) -> dict[str, Any]:
        """The image as the recorded prompt and the request hash see it (not its bytes)."""
        return {"media_type": self.media_type, "sha256": self.sha256, "size": self.size}

    def base64(self) -> str:
        """The bytes as base64 text, as every provider's wire format carries them."""
        return b64encode(self.data).decode("ascii")


@dataclass(frozen=True)
class Message:
    """One chat message. ``cache=True`` marks a prompt-cache breakpoint (Anthropic).

    Native tool calling adds two shapes: an ``assistant`` message carrying the
    ``tool_calls`` the model asked for, and a ``tool`` message carrying one
    call's result as ``content``, with that call's ``tool_call_id``. Adapters
    translate both into their provider's wire format.

    A ``user`` message may also show the model ``images`` (multimodal input):
    the adapters send them beside ``content`` in their provider's form.

    Raises:
        UserError: ``images`` that are not ``Image`` objects, or images on a message
            that is not the user's.
    """

    role: Role
    content: str
    cache: bool = False
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    images: tuple[Image, ...] = ()

    def __post_init__(self) -> None:
        if self.images == ():
            return
        if isinstance(self.images, Image) or not isinstance(self.images, tuple | list):
            raise UserError("Message images= must be a list of trails.llm.Image objects")
        images = tuple(self.images)
        for image in images:
            if not isinstance(image, Image):
                raise UserError(f"Message images= must hold Image objects, not {image!r}")
        if images and self.role != "user":
            raise UserError(f"only user messages carry images, not a {self.role!r} message")
        object.__setattr__(self, "images", images)

    def as_dict(self) -> dict[str, Any]:
        """The message as the recorded prompt and the request hash see it: an image by its
        media type, sha256 and size (``images`` appears only when there are some)."""
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.cache:
            data["cache"] = True
        if self.tool_calls:
            data["tool_calls"] = [c.as_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.images:
            data["images"] = [image.as_dict() for image in self.images]
        return data


@dataclass(frozen=True)
class Request:
    """Everything an adapter needs for one call.

    ``tools`` are offered to the model (native tool calling);
    ``response_format`` is a JSON schema the answer must follow (an adapter
    uses its provider's JSON mode, or a forced tool where that is the
    provider's way), named ``response_name``.
    """

    model: str
    messages: tuple[Message, ...]
    max_tokens: int = 1024
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    tools: tuple[ToolSpec, ...] = ()
    response_format: dict[str, Any] | None = None
    response_name: str = "answer"

    def tool_name(self, wire: str) -> str:
        """The offered tool's own name for the name a provider called it by."""
        for tool in self.tools:
            if wire_name(tool.name) == wire:
                return tool.name
        return wire


@dataclass(frozen=True)
class Response:
    """The result of one completion, whatever the provider.

    Adapters fill the provider's fields (text, model, tokens, request id, stop
    reason); ``LLMClient`` adds ``usd`` (None when the price is unknown),
    ``cache_hit``, ``latency_s``, ``retries``, ``activity_iri`` (the recorded
    ``trails:LLMCompletion``), ``call_id`` (the id of its cost envelope, for
    a scope that books a ``dedupe="child"`` row against it) and ``principal`` (whom
    the call acted for; a cached answer keeps whom it was first paid for).
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
    tool_calls: tuple[ToolCall, ...] = ()
    parsed: Any = None
    principal: str | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Chunk:
    """A piece of streamed text; ``LLMClient.stream`` yields these, then the ``Response``."""

    text: str


@runtime_checkable
class Adapter(Protocol):
    """One provider's wire format. ``complete`` returns a ``Response`` without cost or provenance.

    Optional flags: ``local`` (its model runs here: price 0) and ``accepts_images``
    (it sends ``Message.images``); a request with images is refused, never sent without
    them, by an adapter that does not set it.
    """

    provider: str
    model: str

    def complete(self, request: Request) -> Response: ...

    def stream(self, request: Request) -> Iterator[Chunk | Response]: ...


@runtime_checkable
class AsyncAdapter(Protocol):
    """An adapter that also speaks asyncio. ``LLMClient.acomplete`` uses these methods when an
    adapter has them, and runs the sync ones in a worker thread when it has not."""

    provider: str
    model: str

    async def acomplete(self, request: Request) -> Response: ...

    def astream(self, request: Request) -> AsyncIterator[Chunk | Response]: ...
