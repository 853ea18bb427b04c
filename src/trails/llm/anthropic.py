"""Anthropic's Messages API, through the official ``anthropic`` SDK.

The SDK's own retries are off (``max_retries=0``): the client's retry loop is
the only one, so the recorded retry count is true. System messages become the
top-level ``system`` blocks; with ``cache=True`` every message marked
``Message(cache=True)`` (or, when none is marked, the last system block) gets
an ephemeral ``cache_control`` breakpoint. Usage includes the cache read and
write token counts. SDK exceptions are translated into the
``trails.llm.errors`` classes here, at the boundary.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
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
from trails.llm.types import Chunk, Message, Request, Response

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
        if cache and m.cache:
            block["cache_control"] = dict(_EPHEMERAL)
        if m.role == "system":
            system.append(block)
        else:
            chat.append({"role": m.role, "content": [block]})
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

    def _client(self) -> Any:
        check_host(self.base_url, self.provider)
        if self._sdk is None:
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
            self._sdk = anthropic.Anthropic(
                api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout
            )
            # SDK releases differ in which body fields ``create`` names (some have no
            # ``temperature``); the rest travels in ``extra_body``, which every release takes.
            self._accepted = frozenset(inspect.signature(self._sdk.messages.create).parameters)
        return self._sdk

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
        request_id = raw.headers.get("request-id")
        try:
            message = raw.parse()
            text = "".join(
                block.text for block in message.content if getattr(block, "type", "") == "text"
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
            )
        except Exception as exc:
            raise MalformedResponseError(
                f"anthropic: the response is not a Messages API body: {type(exc).__name__}: {exc}",
                provider=self.provider,
                status=raw.status_code,
                request_id=request_id,
            ) from exc

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
        request_id = events.response.headers.get("request-id")
        parts: list[str] = []
        model = request.model
        usage: dict[str, int] = {}
        stop_reason: str | None = None
        stopped = False
        try:
            for event in events:
                kind = getattr(event, "type", "")
                if kind == "message_stop":
                    stopped = True
                elif kind == "message_start":
                    model = event.message.model or model
                    u = event.message.usage
                    usage["input"] = int(u.input_tokens or 0)
                    usage["output"] = int(u.output_tokens or 0)
                    usage["read"] = int(u.cache_read_input_tokens or 0)
                    usage["write"] = int(u.cache_creation_input_tokens or 0)
                    request_id = request_id or event.message.id
                elif kind == "content_block_delta" and event.delta.type == "text_delta":
                    parts.append(event.delta.text)
                    yield Chunk(event.delta.text)
                elif kind == "message_delta":
                    stop_reason = event.delta.stop_reason or stop_reason
                    if event.usage is not None and event.usage.output_tokens is not None:
                        usage["output"] = int(event.usage.output_tokens)
        except ModelAPIError:
            raise
        except Exception as exc:
            raise self._translate(exc) from exc
        finally:
            events.close()
        if "input" not in usage:
            raise MalformedResponseError(
                "anthropic: the stream had no message_start event",
                provider=self.provider,
                request_id=request_id,
            )
        if not stopped:
            received = "".join(parts)
            raise IncompleteStreamError(
                f"anthropic: the stream ended before message_stop, after {len(received)} "
                "characters of text: the completion is incomplete",
                received=received,
                provider=self.provider,
                request_id=request_id,
            )
        yield Response(
            text="".join(parts),
            model=model,
            input_tokens=usage["input"],
            output_tokens=usage.get("output", 0),
            cache_read_tokens=usage.get("read", 0),
            cache_write_tokens=usage.get("write", 0),
            request_id=request_id,
            provider=self.provider,
            stop_reason=stop_reason,
        )
