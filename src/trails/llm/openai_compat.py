"""Any OpenAI-compatible ``/v1/chat/completions`` server, over httpx.

vLLM, the llama.cpp server, LM Studio and OpenAI itself speak it. Streaming
is SSE (``data: {...}`` lines, ``data: [DONE]`` last) with
``stream_options.include_usage`` so the final chunk carries ``usage``. Token
counts: ``prompt_tokens`` (minus ``prompt_tokens_details.cached_tokens``,
which are reported as cache reads) and ``completion_tokens``. A server on
this machine or a private network is local (price 0); elsewhere the
catalogue prices the model, or the price stays unknown.

Tools travel as ``tools=[{"type": "function", "function": {...}}]`` and come
back as ``message.tool_calls`` (streamed as ``delta.tool_calls`` pieces,
joined by index); a ``response_format`` becomes ``{"type": "json_schema"}``. A user
message with images is sent as content parts: its text, then one ``image_url`` part
per image (a ``data:`` URL of its base64 bytes).
The sync and async paths share the body builder, the parser and the stream
state; only the transport call differs.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

from trails.llm._http import JsonHttp, loads
from trails.llm._net import host_of, is_local_url
from trails.llm.errors import IncompleteStreamError, MalformedResponseError
from trails.llm.types import (
    Chunk,
    Message,
    Request,
    Response,
    ToolCall,
    new_call_id,
    wire_name,
)

__all__ = ["OpenAICompatAdapter"]


def _usage(data: Any) -> tuple[int, int, int]:
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return 0, 0, 0
    prompt = int(usage.get("prompt_tokens") or 0)
    details = usage.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return max(prompt - cached, 0), int(usage.get("completion_tokens") or 0), cached


def _message(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.images:  # content parts: the text, then each image as a data URL
        parts: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
        parts += [
            {"type": "image_url", "image_url": {"url": f"data:{i.media_type};base64,{i.base64()}"}}
            for i in m.images
        ]
        out["content"] = parts
    if m.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": wire_name(c.name), "arguments": json.dumps(c.arguments)},
            }
            for c in m.tool_calls
        ]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    return out


class _Stream:
    """The state of one SSE stream: fed lines, it returns chunks; ``finish`` builds the response."""

    def __init__(self, adapter: OpenAICompatAdapter, request: Request) -> None:
        self.adapter = adapter
        self.request = request
        self.parts: list[str] = []
        self.request_id: str | None = None
        self.model = request.model
        self.usage: tuple[int, int, int] = (0, 0, 0)
        self.finish_reason: str | None = None
        self.calls: dict[int, dict[str, str]] = {}
        self.done = False

    def feed(self, line: str | dict[str, str | None]) -> list[Chunk]:
        if isinstance(line, dict):
            self.request_id = line["request_id"]
            return []
        if not line.startswith("data:"):
            return []  # comments (": keep-alive"), event names
        payload = line[5:].strip()
        if payload == "[DONE]":
            self.done = True
            return []
        data = loads(payload, self.adapter.provider, "a stream event")
        if not isinstance(data, dict):
            raise self.adapter._malformed(f"stream event {payload[:100]!r}", self.request_id)
        if "error" in data:
            raise self.adapter._malformed(f"error in the stream: {data['error']}", self.request_id)
        self.model = str(data.get("model") or self.model)
        self.request_id = self.request_id or data.get("id")
        if data.get("usage"):
            self.usage = _usage(data)
        out: list[Chunk] = []
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            piece = delta.get("content") or ""
            if piece:
                self.parts.append(piece)
                out.append(Chunk(piece))
            for call in delta.get("tool_calls") or []:
                slot = self.calls.setdefault(int(call.get("index") or 0), {"arguments": ""})
                fn = call.get("function") or {}
                if call.get("id"):
                    slot["id"] = call["id"]
                if fn.get("name"):
                    slot["name"] = fn["name"]
                slot["arguments"] += fn.get("arguments") or ""
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
        return out

    def finish(self) -> Response:
        text = "".join(self.parts)
        if not self.done:
            raise IncompleteStreamError(
                f"{self.adapter.provider}: the stream ended before data: [DONE], after "
                f"{len(text)} characters of text: the completion is incomplete (its usage may "
                "be missing)",
                received=text,
                provider=self.adapter.provider,
                request_id=self.request_id,
            )
        calls = [
            {"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c["arguments"]}}
            for _, c in sorted(self.calls.items())
        ]
        return Response(
            text=text,
            model=self.model,
            input_tokens=self.usage[0],
            output_tokens=self.usage[1],
            cache_read_tokens=self.usage[2],
            request_id=self.request_id,
            provider=self.adapter.provider,
            stop_reason=self.finish_reason,
            tool_calls=self.adapter._tool_calls(calls, self.request, self.request_id),
        )


class OpenAICompatAdapter:
    """The chat-completions adapter.

    Args:
        model: the model id the server knows.
        base_url: the API root including ``/v1``.
        api_key: bearer token (default: ``OPENAI_API_KEY`` for api.openai.com only).
        provider: the recorded provider name (default ``openai`` for
            api.openai.com, else ``openai_compatible``).
        timeout: seconds per request.
    """

    accepts_images = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "http://localhost:8000/v1",
        api_key: str | None = None,
        provider: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        official = host_of(base_url) == "api.openai.com"
        self.model = model
        self.base_url = base_url
        self.provider = provider or ("openai" if official else "openai_compatible")
        self.local = is_local_url(base_url)
        key = api_key or (os.environ.get("OPENAI_API_KEY") if official else None)
        headers = {"authorization": f"Bearer {key}"} if key else {}
        self._http = JsonHttp(self.provider, base_url, timeout, headers)

    def _body(self, request: Request, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            "messages": [_message(m) for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stream": stream,
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if stream:
            body["stream_options"] = {"include_usage": True}
        if request.tools:
            body["tools"] = [t.as_function() for t in request.tools]
        if request.response_format is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.response_name, "schema": request.response_format},
            }
        body.update(request.extra)
        return body

    def _malformed(self, detail: str, request_id: str | None) -> MalformedResponseError:
        return MalformedResponseError(
            f"{self.provider}: not a chat completion: {detail}",
            provider=self.provider,
            request_id=request_id,
        )

    def _tool_calls(
        self, raw: Any, request: Request, request_id: str | None
    ) -> tuple[ToolCall, ...]:
        calls: list[ToolCall] = []
        for i, call in enumerate(raw or []):
            try:
                fn = call["function"]
                args = fn.get("arguments") or "{}"
                arguments = json.loads(args) if isinstance(args, str) else args
                if not isinstance(arguments, dict):
                    raise ValueError(f"arguments are a {type(arguments).__name__}")
                call_id = str(call.get("id") or new_call_id())
                calls.append(ToolCall(call_id, request.tool_name(fn["name"]), arguments))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise self._malformed(
                    f"tool call #{i} {str(call)[:200]!r}: {exc}", request_id
                ) from exc
        return tuple(calls)

    def _parse(self, data: Any, request: Request, request_id: str | None) -> Response:
        try:
            choice = data["choices"][0]
            message = choice["message"]
            content = message.get("content")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise self._malformed(
                f"no choices[0].message in {str(data)[:200]!r}", request_id
            ) from exc
        if content is not None and not isinstance(content, str):
            raise self._malformed(f"message.content is {type(content).__name__}", request_id)
        prompt, completion, cached = _usage(data)
        return Response(
            text=content or "",
            model=str(data.get("model") or request.model),
            input_tokens=prompt,
            output_tokens=completion,
            cache_read_tokens=cached,
            request_id=request_id or data.get("id"),
            provider=self.provider,
            stop_reason=choice.get("finish_reason"),
            tool_calls=self._tool_calls(message.get("tool_calls"), request, request_id),
        )

    def complete(self, request: Request) -> Response:
        """One non-streaming chat completion.

        Raises:
            ModelAPIError: a subclass per failure kind.
        """
        data, request_id = self._http.post("/chat/completions", self._body(request, stream=False))
        return self._parse(data, request, request_id)

    async def acomplete(self, request: Request) -> Response:
        """``complete`` over asyncio (httpx's async client)."""
        body = self._body(request, stream=False)
        data, request_id = await self._http.apost("/chat/completions", body)
        return self._parse(data, request, request_id)

    def stream(self, request: Request) -> Iterator[Chunk | Response]:
        """The SSE stream: a chunk per content delta, then the response with usage.

        The response comes only after ``data: [DONE]``, the end of the stream
        (the usage chunk comes after the last ``finish_reason``); a stream that
        ends before it raises ``IncompleteStreamError``.

        Raises:
            ModelAPIError: a subclass per failure kind.
            IncompleteStreamError: the stream ended before ``data: [DONE]``.
        """
        state = _Stream(self, request)
        for line in self._http.stream_lines("/chat/completions", self._body(request, stream=True)):
            yield from state.feed(line)
            if state.done:
                break
        yield state.finish()

    async def astream(self, request: Request) -> AsyncIterator[Chunk | Response]:
        """``stream`` over asyncio."""
        state = _Stream(self, request)
        lines = self._http.astream_lines("/chat/completions", self._body(request, stream=True))
        try:
            async for line in lines:
                for chunk in state.feed(line):
                    yield chunk
                if state.done:
                    break
        finally:
            await lines.aclose()
        yield state.finish()
