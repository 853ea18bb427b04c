"""Anthropic's Messages API, through the official ``anthropic`` SDK.

The SDK's own retries are off (``max_retries=0``): the client's retry loop is
the only one, so the recorded retry count is true. System messages become the
top-level ``system`` blocks; with ``cache=True`` every message marked
``Message(cache=True)`` (or, when none is marked, the last system block) gets
an ephemeral ``cache_control`` breakpoint. A user message's images go as ``image``
content blocks (base64 sources) before its text block. Usage includes the cache read and
write token counts. SDK exceptions are translated into the
``trails.llm.errors`` classes here, at the boundary.

Tools become the API's ``tools`` (``input_schema`` is the capability's JSON
schema) and ``tool_use`` blocks come back as ``Response.tool_calls``; a
``response_format`` is asked for the way Anthropic has: one forced tool whose
input schema is the format. The async path uses the SDK's ``AsyncAnthropic``
(one per running event loop) and shares the parameter builder, the message
parser and the stream state with the sync path.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Any

from trails.llm._net import check_host
from trails.llm.errors import (
    IncompleteStreamError,
    MalformedResponseError,
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelTimeoutError,
    error_for_status,
)
from trails.llm.types import Chunk, Image, Message, Request, Response, ToolCall, wire_name

__all__ = ["DEFAULT_BASE_URL", "AnthropicAdapter", "to_anthropic"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
_EPHEMERAL = {"type": "ephemeral"}

# Error ``type`` values of the Messages API, for errors sent inside a 200 SSE stream.
_ERROR_TYPES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def _image(image: Image) -> dict[str, Any]:
    """An image content block (base64 source)."""
    source = {"type": "base64", "media_type": image.media_type, "data": image.base64()}
    return {"type": "image", "source": source}


def to_anthropic(
    messages: tuple[Message, ...], *, cache: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split messages into the API's ``system`` blocks and ``messages`` list.

    Args:
        messages: the request's messages, in order.
        cache: add ``cache_control`` to messages marked ``cache=True`` (the last
            system block when none is marked).

    Returns:
        ``(system_blocks, messages)`` in the Messages API shape.
    """
    marked = cache and any(m.cache for m in messages)
    system: list[dict[str, Any]] = []
    chat: list[dict[str, Any]] = []
    for m in messages:
        block: dict[str, Any] = {"type": "text", "text": m.content}
        if m.role == "tool":  # results go back as tool_result blocks of a user turn
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
        if cache and m.cache:
            block["cache_control"] = dict(_EPHEMERAL)
        if m.role == "system":
            system.append(block)
        elif m.role == "tool" and chat and chat[-1].get("tool_results"):
            chat[-1]["content"].append(block)
        elif m.role == "tool":
            chat.append({"role": "user", "content": [block], "tool_results": True})
        else:
            blocks = [_image(image) for image in m.images]
            if m.content or not (m.tool_calls or m.images):
                blocks.append(block)
            elif cache and m.cache and blocks:  # no text block: the breakpoint goes on the image
                blocks[-1]["cache_control"] = dict(_EPHEMERAL)
            blocks += [
                {"type": "tool_use", "id": c.id, "name": wire_name(c.name), "input": c.arguments}
                for c in m.tool_calls
            ]
            chat.append({"role": m.role, "content": blocks})
    for turn in chat:
        turn.pop("tool_results", None)
    if cache and not marked and system:
        system[-1]["cache_control"] = dict(_EPHEMERAL)
    return system, chat


class AnthropicAdapter:
    """The Messages API adapter (``provider = "anthropic"``).

    Args:
        model: the model id.
        cache: prompt caching (see the module docstring).
        api_key: the API key (default: ``ANTHROPIC_API_KEY``).
        base_url: the API root (default: ``ANTHROPIC_BASE_URL`` or the public API).
        timeout: seconds per attempt.
    """

    provider = "anthropic"
    local = False
    accepts_images = True

    def __init__(
        self,
        model: str,
        *,
        cache: bool = False,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.model = model
        self.cache = cache
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        self.timeout = timeout
        self._api_key = api_key
        self._sdk: Any = None
        self._accepted: frozenset[str] = frozenset()
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]
        self._async = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def _make(self, kind: str) -> Any:
        key = self._api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ModelAuthenticationError(
                "anthropic: no API key: pass api_key= or set ANTHROPIC_API_KEY",
                provider=self.provider,
            )
        try:
            import anthropic
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise ModelAPIError(
                "the anthropic adapter needs the 'anthropic' package: pip install anthropic",
                provider=self.provider,
            ) from exc
        sdk = getattr(anthropic, kind)(
            api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout
        )
        # SDK releases differ in which body fields ``create`` names (some have no
        # ``temperature``); the rest travels in ``extra_body``, which every release takes.
        self._accepted = frozenset(inspect.signature(sdk.messages.create).parameters)
        return sdk

    def _client(self) -> Any:
        check_host(self.base_url, self.provider)
        if self._sdk is None:
            self._sdk = self._make("Anthropic")
        return self._sdk

    def _aclient(self) -> Any:
        """The SDK's async client for the running event loop."""
        check_host(self.base_url, self.provider)
        loop = asyncio.get_running_loop()
        with self._lock:
            sdk = self._async.get(loop)
            if sdk is None:
                sdk = self._async[loop] = self._make("AsyncAnthropic")
            return sdk

    def _params(self, request: Request) -> dict[str, Any]:
        system, chat = to_anthropic(request.messages, cache=self.cache)
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": chat,
            "temperature": request.temperature,
        }
        if system:
            params["system"] = system
        if request.stop:
            params["stop_sequences"] = list(request.stop)
        tools = [
            {"name": wire_name(t.name), "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
        if request.response_format is not None:
            tools.append(
                {
                    "name": request.response_name,
                    "description": "Give the answer in this form.",
                    "input_schema": request.response_format,
                }
            )
            params["tool_choice"] = {"type": "tool", "name": request.response_name}
        if tools:
            params["tools"] = tools
        params.update(request.extra)
        known = {k: v for k, v in params.items() if k in self._accepted}
        body = {k: v for k, v in params.items() if k not in self._accepted}
        if body:
            known["extra_body"] = body
        return known

    def _translate(self, exc: Exception) -> ModelAPIError:
        import anthropic

        if isinstance(exc, anthropic.APITimeoutError):
            return ModelTimeoutError(
                f"anthropic: timed out after {self.timeout} s", provider=self.provider
            )
        if isinstance(exc, anthropic.APIConnectionError):
            return ModelConnectionError(
                f"anthropic: cannot reach {self.base_url}: {exc}", provider=self.provider
            )
        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code
            if status < 400:  # an error event inside a 200 stream
                status = _ERROR_TYPES.get(str(getattr(exc, "type", None) or ""), 500)
            headers = exc.response.headers
            return error_for_status(
                status,
                str(getattr(exc, "api_message", None) or exc.message),
                provider=self.provider,
                request_id=exc.request_id,
                retry_after=headers.get("retry-after"),
            )
        if isinstance(exc, anthropic.APIResponseValidationError | ValueError | KeyError):
            return MalformedResponseError(
                f"anthropic: the response is not a Messages API body: {exc}",
                provider=self.provider,
            )
        return ModelAPIError(f"anthropic: {type(exc).__name__}: {exc}", provider=self.provider)

    def _parse(self, raw: Any, message: Any, request: Request) -> Response:
        """A ``Response`` from the SDK's parsed message (``raw`` for headers and status)."""
        request_id = raw.headers.get("request-id")
        try:
            if isinstance(message, BaseException):
                raise message
            text = "".join(
                block.text for block in message.content if getattr(block, "type", "") == "text"
            )
            calls = tuple(
                ToolCall(block.id, request.tool_name(block.name), dict(block.input or {}))
                for block in message.content
                if getattr(block, "type", "") == "tool_use"
            )
            usage = message.usage
            return Response(
                text=text,
                model=message.model or request.model,
                input_tokens=int(usage.input_tokens or 0),
                output_tokens=int(usage.output_tokens or 0),
                cache_read_tokens=int(usage.cache_read_input_tokens or 0),
                cache_write_tokens=int(usage.cache_creation_input_tokens or 0),
                request_id=request_id or message.id,
                provider=self.provider,
                stop_reason=message.stop_reason,
                tool_calls=calls,
            )
        except Exception as exc:
            raise MalformedResponseError(
                f"anthropic: the response is not a Messages API body: {type(exc).__name__}: {exc}",
                provider=self.provider,
                status=raw.status_code,
                request_id=request_id,
            ) from exc

    def complete(self, request: Request) -> Response:
        """One Messages API call.

        Raises:
            ModelAPIError: a subclass per failure kind, with status and request id.
        """
        client = self._client()
        try:
            raw = client.messages.with_raw_response.create(**self._params(request))
        except Exception as exc:
            raise self._translate(exc) from exc
        try:
            message: Any = raw.parse()
        except Exception as exc:
            message = exc
        return self._parse(raw, message, request)

    async def acomplete(self, request: Request) -> Response:
        """``complete`` through the SDK's ``AsyncAnthropic``."""
        client = self._aclient()
        try:
            raw = await client.messages.with_raw_response.create(**self._params(request))
        except Exception as exc:
            raise self._translate(exc) from exc
        try:
            message: Any = await raw.parse()
        except Exception as exc:
            message = exc
        return self._parse(raw, message, request)

    def stream(self, request: Request) -> Iterator[Chunk | Response]:
        """The SSE event stream: text deltas as chunks, then the assembled response.

        The response comes only after ``message_stop``: a stream that ends
        before it is cut, and raises ``IncompleteStreamError``.

        Raises:
            ModelAPIError: a subclass per failure kind (also for an ``error`` event mid-stream).
            IncompleteStreamError: the stream ended before ``message_stop``.
        """
        client = self._client()
        try:
            events = client.messages.create(**self._params(request), stream=True)
        except Exception as exc:
            raise self._translate(exc) from exc
        state = _Stream(self, request, events.response.headers.get("request-id"))
        try:
            for event in events:
                yield from state.feed(event)
        except ModelAPIError:
            raise
        except Exception as exc:
            raise self._translate(exc) from exc
        finally:
            events.close()
        yield state.finish()

    async def astream(self, request: Request) -> AsyncIterator[Chunk | Response]:
        """``stream`` through the SDK's ``AsyncAnthropic``."""
        client = self._aclient()
        try:
            events = await client.messages.create(**self._params(request), stream=True)
        except Exception as exc:
            raise self._translate(exc) from exc
        state = _Stream(self, request, events.response.headers.get("request-id"))
        try:
            async for event in events:
                for chunk in state.feed(event):
                    yield chunk
        except ModelAPIError:
            raise
        except Exception as exc:
            raise self._translate(exc) from exc
        finally:
            await events.close()
        yield state.finish()


class _Stream:
    """The state of one Messages API event stream: fed events, it returns text chunks."""

    def __init__(self, adapter: AnthropicAdapter, request: Request, request_id: str | None) -> None:
        self.adapter = adapter
        self.request = request
        self.request_id = request_id
        self.parts: list[str] = []
        self.model = request.model
        self.usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.stopped = False
        self.tools: dict[int, dict[str, Any]] = {}
        self.blocks: dict[int, str] = {}  # index -> type of each content block started

    def _delta_block(self, event: Any, expected: str) -> None:
        """Refuse a delta for a block that was never started, or of another kind: merging
        it would record an answer the model did not give."""
        started = self.blocks.get(event.index)
        if started != expected:
            what = "was never started" if started is None else f"is a {started} block"
            raise MalformedResponseError(
                f"anthropic: a {event.delta.type} for content block {event.index}, which "
                f"{what}: the stream is not a well-formed answer",
                provider=self.adapter.provider,
                request_id=self.request_id,
            )

    def feed(self, event: Any) -> list[Chunk]:
        kind = getattr(event, "type", "")
        if kind == "content_block_start":
            self.blocks[event.index] = event.content_block.type
        if kind == "message_stop":
            self.stopped = True
        elif kind == "message_start":
            self.model = event.message.model or self.model
            u = event.message.usage
            self.usage["input"] = int(u.input_tokens or 0)
            self.usage["output"] = int(u.output_tokens or 0)
            self.usage["read"] = int(u.cache_read_input_tokens or 0)
            self.usage["write"] = int(u.cache_creation_input_tokens or 0)
            self.request_id = self.request_id or event.message.id
        elif kind == "content_block_start" and event.content_block.type == "tool_use":
            block = event.content_block
            self.tools[event.index] = {"id": block.id, "name": block.name, "json": ""}
        elif kind == "content_block_delta" and event.delta.type == "input_json_delta":
            self._delta_block(event, "tool_use")
            self.tools.setdefault(event.index, {"json": ""})["json"] += event.delta.partial_json
        elif kind == "content_block_delta" and event.delta.type == "text_delta":
            self._delta_block(event, "text")
            self.parts.append(event.delta.text)
            return [Chunk(event.delta.text)]
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            if event.usage is not None and event.usage.output_tokens is not None:
                self.usage["output"] = int(event.usage.output_tokens)
        return []

    def _tool_calls(self) -> tuple[ToolCall, ...]:
        calls = []
        for _, tool in sorted(self.tools.items()):
            try:
                arguments = json.loads(tool["json"] or "{}")
                name = self.request.tool_name(tool["name"])
                calls.append(ToolCall(tool["id"], name, dict(arguments)))
            except (KeyError, ValueError, TypeError) as exc:
                raise MalformedResponseError(
                    f"anthropic: a streamed tool_use block is not a tool call: {exc}",
                    provider=self.adapter.provider,
                    request_id=self.request_id,
                ) from exc
        return tuple(calls)

    def finish(self) -> Response:
        if "input" not in self.usage:
            raise MalformedResponseError(
                "anthropic: the stream had no message_start event",
                provider=self.adapter.provider,
                request_id=self.request_id,
            )
        text = "".join(self.parts)
        if not self.stopped:
            raise IncompleteStreamError(
                f"anthropic: the stream ended before message_stop, after {len(text)} "
                "characters of text: the completion is incomplete",
                received=text,
                provider=self.adapter.provider,
                request_id=self.request_id,
            )
        return Response(
            text=text,
            model=self.model,
            input_tokens=self.usage["input"],
            output_tokens=self.usage.get("output", 0),
            cache_read_tokens=self.usage.get("read", 0),
            cache_write_tokens=self.usage.get("write", 0),
            request_id=self.request_id,
            provider=self.adapter.provider,
            stop_reason=self.stop_reason,
            tool_calls=self._tool_calls(),
        )
