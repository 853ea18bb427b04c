"""Ollama's ``/api/chat``, over httpx: one JSON answer, or an NDJSON stream.

Token counts come from ``prompt_eval_count`` (prompt) and ``eval_count``
(completion) on the final object. Ollama runs models on this machine, so its
completions cost 0. Sampling parameters travel in ``options``
(``temperature``, ``num_predict`` for the token limit, ``stop``).

Tools travel as ``tools=[{"type": "function", ...}]`` and come back as
``message.tool_calls`` (arguments already an object; Ollama gives no call id,
so one is minted); a tool result goes back as ``{"role": "tool", "content",
"tool_name"}``, named after the call it answers. A ``response_format`` is sent
as ``format`` (a JSON schema). A user message's images travel in its ``images``
field (base64, as Ollama's vision models take them). The sync and async paths
share the body builder, the parser and the stream state; only the transport call
differs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from trails.llm._http import JsonHttp, loads
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

__all__ = ["OllamaAdapter"]


def _messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """The request's messages as ``/api/chat`` takes them.

    Ollama's calls carry no ids, so a tool result names its tool instead
    (``tool_name``): the name (as sent) of the call it answers, found by its
    ``tool_call_id`` among the assistant turns before it.
    """
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.images:
            item["images"] = [image.base64() for image in m.images]
        if m.tool_calls:
            item["tool_calls"] = [
                {"function": {"name": wire_name(c.name), "arguments": c.arguments}}
                for c in m.tool_calls
            ]
            names.update((c.id, wire_name(c.name)) for c in m.tool_calls)
        if m.role == "tool" and m.tool_call_id in names:
            item["tool_name"] = names[m.tool_call_id]
        out.append(item)
    return out


class _Stream:
    """The state of one NDJSON stream: fed lines, it returns chunks until the ``done`` line."""

    def __init__(self, adapter: OllamaAdapter, request: Request) -> None:
        self.adapter = adapter
        self.request = request
        self.parts: list[str] = []
        self.calls: list[Any] = []
        self.request_id: str | None = None
        self.response: Response | None = None

    def feed(self, line: str | dict[str, str | None]) -> list[Chunk]:
        if isinstance(line, dict):
            self.request_id = line["request_id"]
            return []
        data = loads(line, self.adapter.provider, "a stream line")
        if not isinstance(data, dict):
            raise self.adapter._malformed(f"stream line {line[:100]!r}", self.request_id)
        if "error" in data:
            raise self.adapter._malformed(f"error in the stream: {data['error']}", self.request_id)
        message = data.get("message") or {}
        self.calls.extend(message.get("tool_calls") or [])
        piece = message.get("content") or ""
        out = []
        if piece:
            self.parts.append(piece)
            out.append(Chunk(piece))
        if data.get("done"):
            self.response = self.adapter._response(
                data, "".join(self.parts), self.calls, self.request, self.request_id
            )
        return out

    def finish(self) -> Response:
        if self.response is None:
            received = "".join(self.parts)
            raise IncompleteStreamError(
                f'ollama: the stream ended before its "done": true line, after {len(received)} '
                "characters of text: the completion is incomplete",
                received=received,
                provider=self.adapter.provider,
                request_id=self.request_id,
            )
        return self.response


class OllamaAdapter:
    """The Ollama chat adapter (``provider = "ollama"``, local: price 0).

    Args:
        model: the model tag.
        host: the server root (``http://localhost:11434``).
        timeout: seconds per request.
    """

    provider = "ollama"
    local = True
    accepts_images = True

    def __init__(
        self, model: str, *, host: str = "http://localhost:11434", timeout: float = 120.0
    ) -> None:
        self.model = model
        self.host = host
        self._http = JsonHttp(self.provider, host, timeout)

    def _body(self, request: Request, stream: bool) -> dict[str, Any]:
        options: dict[str, Any] = {
            "temperature": request.temperature,
            "num_predict": request.max_tokens,
        }
        if request.stop:
            options["stop"] = list(request.stop)
        extra = dict(request.extra)
        options.update(extra.pop("options", {}))
        body: dict[str, Any] = {
            "model": request.model,
            "messages": _messages(request.messages),
            "stream": stream,
            "options": options,
        }
        if request.tools:
            body["tools"] = [t.as_function() for t in request.tools]
        if request.response_format is not None:
            body["format"] = request.response_format
        body.update(extra)
        return body

    def _malformed(self, detail: str, request_id: str | None = None) -> MalformedResponseError:
        return MalformedResponseError(
            f"ollama: not an /api/chat answer: {detail}",
            provider=self.provider,
            request_id=request_id,
        )

    def _tool_calls(
        self, raw: list[Any], request: Request, request_id: str | None
    ) -> tuple[ToolCall, ...]:
        calls: list[ToolCall] = []
        for i, call in enumerate(raw):
            try:
                fn = call["function"]
                arguments = fn.get("arguments") or {}
                if not isinstance(arguments, dict):
                    raise TypeError(f"arguments are a {type(arguments).__name__}")
                call_id = str(call.get("id") or new_call_id())
                calls.append(ToolCall(call_id, request.tool_name(fn["name"]), arguments))
            except (KeyError, TypeError, AttributeError) as exc:
                raise self._malformed(
                    f"tool call #{i} {str(call)[:200]!r}: {exc}", request_id
                ) from exc
        return tuple(calls)

    def _response(
        self, data: Any, text: str, calls: list[Any], request: Request, request_id: str | None
    ) -> Response:
        if not isinstance(data, dict):
            raise self._malformed(f"expected an object, got {type(data).__name__}", request_id)
        if "error" in data:
            raise self._malformed(f"error in a 200 answer: {data['error']}", request_id)
        return Response(
            text=text,
            model=str(data.get("model") or request.model),
            input_tokens=int(data.get("prompt_eval_count") or 0),
            output_tokens=int(data.get("eval_count") or 0),
            request_id=request_id,
            provider=self.provider,
            stop_reason=data.get("done_reason"),
            tool_calls=self._tool_calls(calls, request, request_id),
        )

    def _parse(self, data: Any, request: Request, request_id: str | None) -> Response:
        message = data.get("message") if isinstance(data, dict) else None
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise self._malformed(f"no message.content in {str(data)[:200]!r}", request_id)
        calls = message.get("tool_calls") or []
        return self._response(data, message["content"], calls, request, request_id)

    def complete(self, request: Request) -> Response:
        """One non-streaming ``/api/chat`` call.

        Raises:
            ModelAPIError: a subclass per failure kind.
        """
        data, request_id = self._http.post("/api/chat", self._body(request, stream=False))
        return self._parse(data, request, request_id)

    async def acomplete(self, request: Request) -> Response:
        """``complete`` over asyncio (httpx's async client)."""
        data, request_id = await self._http.apost("/api/chat", self._body(request, stream=False))
        return self._parse(data, request, request_id)

    def stream(self, request: Request) -> Iterator[Chunk | Response]:
        """The NDJSON stream: one chunk per line's ``message.content``, then the response.

        Raises:
            ModelAPIError: a subclass per failure kind.
            IncompleteStreamError: the stream ended before a ``"done": true`` line.
        """
        state = _Stream(self, request)
        for line in self._http.stream_lines("/api/chat", self._body(request, stream=True)):
            yield from state.feed(line)
            if state.response is not None:
                break
        yield state.finish()

    async def astream(self, request: Request) -> AsyncIterator[Chunk | Response]:
        """``stream`` over asyncio."""
        state = _Stream(self, request)
        lines = self._http.astream_lines("/api/chat", self._body(request, stream=True))
        try:
            async for line in lines:
                for chunk in state.feed(line):
                    yield chunk
                if state.response is not None:
                    break
        finally:
            await lines.aclose()
        yield state.finish()
