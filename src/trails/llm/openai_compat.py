"""Any OpenAI-compatible ``/v1/chat/completions`` server, over httpx.

vLLM, the llama.cpp server, LM Studio and OpenAI itself speak it. Streaming
is SSE (``data: {...}`` lines, ``data: [DONE]`` last) with
``stream_options.include_usage`` so the final chunk carries ``usage``. Token
counts: ``prompt_tokens`` (minus ``prompt_tokens_details.cached_tokens``,
which are reported as cache reads) and ``completion_tokens``. A server on
this machine or a private network is local (price 0); elsewhere the
catalogue prices the model, or the price stays unknown.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from trails.llm._http import JsonHttp, loads
from trails.llm._net import host_of, is_local_url
from trails.llm.errors import IncompleteStreamError, MalformedResponseError
from trails.llm.types import Chunk, Request, Response

__all__ = ["OpenAICompatAdapter"]


def _usage(data: Any) -> tuple[int, int, int]:
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return 0, 0, 0
    prompt = int(usage.get("prompt_tokens") or 0)
    details = usage.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return max(prompt - cached, 0), int(usage.get("completion_tokens") or 0), cached


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
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stream": stream,
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if stream:
            body["stream_options"] = {"include_usage": True}
        body.update(request.extra)
        return body

    def _malformed(self, detail: str, request_id: str | None) -> MalformedResponseError:
        return MalformedResponseError(
            f"{self.provider}: not a chat completion: {detail}",
            provider=self.provider,
            request_id=request_id,
        )

    def complete(self, request: Request) -> Response:
        """One non-streaming chat completion.

        Raises:
            ModelAPIError: a subclass per failure kind.
        """
        data, request_id = self._http.post("/chat/completions", self._body(request, stream=False))
        try:
            choice = data["choices"][0]
            content = choice["message"].get("content")
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
        )

    def stream(self, request: Request) -> Iterator[Chunk | Response]:
        """The SSE stream: a chunk per content delta, then the response with usage.

        The response comes only after ``data: [DONE]``, the end of the stream
        (the usage chunk comes after the last ``finish_reason``); a stream that
        ends before it raises ``IncompleteStreamError``.

        Raises:
            ModelAPIError: a subclass per failure kind.
            IncompleteStreamError: the stream ended before ``data: [DONE]``.
        """
        parts: list[str] = []
        request_id: str | None = None
        model = request.model
        usage: tuple[int, int, int] = (0, 0, 0)
        finish: str | None = None
        done = False
        for line in self._http.stream_lines("/chat/completions", self._body(request, stream=True)):
            if isinstance(line, dict):
                request_id = line["request_id"]
                continue
            if not line.startswith("data:"):
                continue  # comments (": keep-alive"), event names
            payload = line[5:].strip()
            if payload == "[DONE]":
                done = True
                break
            data = loads(payload, self.provider, "a stream event")
            if not isinstance(data, dict):
                raise self._malformed(f"stream event {payload[:100]!r}", request_id)
            if "error" in data:
                raise self._malformed(f"error in the stream: {data['error']}", request_id)
            model = str(data.get("model") or model)
            request_id = request_id or data.get("id")
            if data.get("usage"):
                usage = _usage(data)
            for choice in data.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content") or ""
                if piece:
                    parts.append(piece)
                    yield Chunk(piece)
                finish = choice.get("finish_reason") or finish
        if not done:
            received = "".join(parts)
            raise IncompleteStreamError(
                f"{self.provider}: the stream ended before data: [DONE], after {len(received)} "
                "characters of text: the completion is incomplete (its usage may be missing)",
                received=received,
                provider=self.provider,
                request_id=request_id,
            )
        yield Response(
            text="".join(parts),
            model=model,
            input_tokens=usage[0],
            output_tokens=usage[1],
            cache_read_tokens=usage[2],
            request_id=request_id,
            provider=self.provider,
            stop_reason=finish,
        )
