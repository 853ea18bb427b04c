"""Ollama's ``/api/chat``, over httpx: one JSON answer, or an NDJSON stream.

Token counts come from ``prompt_eval_count`` (prompt) and ``eval_count``
(completion) on the final object. Ollama runs models on this machine, so its
completions cost 0. Sampling parameters travel in ``options``
(``temperature``, ``num_predict`` for the token limit, ``stop``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trails.llm._http import JsonHttp, loads
from trails.llm.errors import IncompleteStreamError, MalformedResponseError
from trails.llm.types import Chunk, Request, Response

__all__ = ["OllamaAdapter"]


class OllamaAdapter:
    """The Ollama chat adapter (``provider = "ollama"``, local: price 0).

    Args:
        model: the model tag.
        host: the server root (``http://localhost:11434``).
        timeout: seconds per request.
    """

    provider = "ollama"
    local = True

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
        return {
            "model": request.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "stream": stream,
            "options": options,
            **extra,
        }

    def _malformed(self, detail: str, request_id: str | None = None) -> MalformedResponseError:
        return MalformedResponseError(
            f"ollama: not an /api/chat answer: {detail}",
            provider=self.provider,
            request_id=request_id,
        )

    def _response(self, data: Any, text: str, request: Request, request_id: str | None) -> Response:
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
        )

    def complete(self, request: Request) -> Response:
        """One non-streaming ``/api/chat`` call.

        Raises:
            ModelAPIError: a subclass per failure kind.
        """
        data, request_id = self._http.post("/api/chat", self._body(request, stream=False))
        message = data.get("message") if isinstance(data, dict) else None
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise self._malformed(f"no message.content in {str(data)[:200]!r}", request_id)
        return self._response(data, message["content"], request, request_id)

    def stream(self, request: Request) -> Iterator[Chunk | Response]:
        """The NDJSON stream: one chunk per line's ``message.content``, then the response.

        Raises:
            ModelAPIError: a subclass per failure kind.
            IncompleteStreamError: the stream ended before a ``"done": true`` line.
        """
        parts: list[str] = []
        request_id: str | None = None
        for line in self._http.stream_lines("/api/chat", self._body(request, stream=True)):
            if isinstance(line, dict):
                request_id = line["request_id"]
                continue
            data = loads(line, self.provider, "a stream line")
            if not isinstance(data, dict):
                raise self._malformed(f"stream line {line[:100]!r}", request_id)
            if "error" in data:
                raise self._malformed(f"error in the stream: {data['error']}", request_id)
            piece = (data.get("message") or {}).get("content") or ""
            if piece:
                parts.append(piece)
                yield Chunk(piece)
            if data.get("done"):
                yield self._response(data, "".join(parts), request, request_id)
                return
        received = "".join(parts)
        raise IncompleteStreamError(
            f'ollama: the stream ended before its "done": true line, after {len(received)} '
            "characters of text: the completion is incomplete",
            received=received,
            provider=self.provider,
            request_id=request_id,
        )
