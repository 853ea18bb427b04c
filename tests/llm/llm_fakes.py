"""Loopback HTTP fakes that speak the real wire formats of the providers.

``FakeServer`` is a real HTTP server on 127.0.0.1 (a free port) that answers
POSTs from a script of ``Reply`` objects and keeps every request it got. The
helpers below build bodies exactly as the providers send them:

- Anthropic Messages API: a message JSON body, and the SSE event stream
  (``message_start``, ``content_block_*``, ``message_delta``, ``message_stop``);
- Ollama ``/api/chat``: a JSON body and the NDJSON stream
  (``prompt_eval_count`` / ``eval_count`` on the final ``done`` line);
- OpenAI ``/v1/chat/completions``: a JSON body and the SSE stream of
  ``chat.completion.chunk`` objects with a final ``usage`` chunk and ``[DONE]``.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    json: Any = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] | None = None
    content_type: str = "application/json"
    delay: float = 0.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any
    peer: int = 0  # the client's port: which connection the request came on


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # the default backlog (5) refuses concurrent clients' connects


class FakeServer:
    """A scripted HTTP server on loopback. ``enqueue`` replies; ``requests`` holds what came in."""

    def __init__(self, *, keep_alive: bool = False) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.1 keeps a connection open between requests (the clients' pools reuse it)
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                with server._lock:
                    server.requests.append(
                        Received(
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                            self.client_address[1],
                        )
                    )
                    reply = (
                        server.replies.pop(0)
                        if server.replies
                        else Reply(status=500, json={"error": "no scripted reply"})
                    )
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._answer(reply)

            def _answer(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                if reply.chunks is not None:
                    self.send_header("connection", "close")
                    self.end_headers()
                    for chunk in reply.chunks:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                    return
                data = reply.body if reply.body is not None else json.dumps(reply.json).encode()
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


# -- Anthropic Messages API ----------------------------------------------------------


def anthropic_message(
    text: str,
    *,
    model: str = "claude-haiku-4-5-20251001",
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int = 0,
    cache_write: int = 0,
    stop_reason: str = "end_turn",
) -> dict[str, Any]:
    return {
        "id": "msg_01Test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}] if text else [],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": cache_write,
            "cache_read_input_tokens": cache_read,
        },
    }


def sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


def anthropic_stream(
    pieces: list[str],
    *,
    model: str = "claude-haiku-4-5-20251001",
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int = 0,
    cache_write: int = 0,
) -> list[bytes]:
    start = anthropic_message("", model=model, input_tokens=input_tokens, output_tokens=1)
    start["usage"]["cache_read_input_tokens"] = cache_read
    start["usage"]["cache_creation_input_tokens"] = cache_write
    start["stop_reason"] = None
    events = [
        sse("message_start", {"type": "message_start", "message": start}),
        sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        sse("ping", {"type": "ping"}),
    ]
    for piece in pieces:
        events.append(
            sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": piece},
                },
            )
        )
    events += [
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        sse("message_stop", {"type": "message_stop"}),
    ]
    return events


def anthropic_error(status: int, kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


# -- Ollama /api/chat ----------------------------------------------------------------


def ollama_chat(
    text: str, *, model: str = "qwen3:8b", prompt: int = 12, completion: int = 4
) -> dict[str, Any]:
    return {
        "model": model,
        "created_at": "2025-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": text},
        "done_reason": "stop",
        "done": True,
        "total_duration": 1000,
        "prompt_eval_count": prompt,
        "eval_count": completion,
    }


def ollama_stream(
    pieces: list[str], *, model: str = "qwen3:8b", prompt: int = 12, completion: int = 4
) -> list[bytes]:
    lines = [
        json.dumps(
            {
                "model": model,
                "created_at": "2025-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": p},
                "done": False,
            }
        ).encode()
        + b"\n"
        for p in pieces
    ]
    final = ollama_chat("", model=model, prompt=prompt, completion=completion)
    lines.append(json.dumps(final).encode() + b"\n")
    return lines


# -- OpenAI /v1/chat/completions -------------------------------------------------------


def openai_chat(
    text: str | None, *, model: str = "local-model", prompt: int = 9, completion: int = 3
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def openai_stream(
    pieces: list[str], *, model: str = "local-model", prompt: int = 9, completion: int = 3
) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events = [sse(None, chunk({"role": "assistant", "content": ""}))]
    events += [sse(None, chunk({"content": p})) for p in pieces]
    events.append(sse(None, chunk({}, "stop")))
    usage = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": model,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
    events.append(sse(None, usage))
    events.append(sse(None, "[DONE]"))
    return events


class Sleeps(list[float]):
    """A ``sleep`` that records the delays instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


# -- native tool calls, in each provider's wire format -------------------------------


def anthropic_tool_use(
    calls: list[tuple[str, str, dict[str, Any]]], text: str = ""
) -> dict[str, Any]:
    body = anthropic_message(text, stop_reason="tool_use")
    body["content"] += [
        {"type": "tool_use", "id": cid, "name": name, "input": args} for cid, name, args in calls
    ]
    return body


def anthropic_tool_stream(call: tuple[str, str, dict[str, Any]]) -> list[bytes]:
    cid, name, args = call
    start = anthropic_message("", output_tokens=1)
    start["stop_reason"] = None
    raw = json.dumps(args)
    return [
        sse("message_start", {"type": "message_start", "message": start}),
        sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": cid, "name": name, "input": {}},
            },
        ),
        *(
            sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": raw[i : i + 5]},
                },
            )
            for i in range(0, len(raw), 5)
        ),
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        sse("message_stop", {"type": "message_stop"}),
    ]


def openai_tool_calls(calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    body = openai_chat(None)
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for cid, name, args in calls
    ]
    body["choices"][0]["finish_reason"] = "tool_calls"
    return body


def openai_tool_stream(call: tuple[str, str, dict[str, Any]]) -> list[bytes]:
    cid, name, args = call
    raw = json.dumps(args)

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse(
            None,
            {
                "id": "chatcmpl-test",
                "object": "chat.completion.chunk",
                "model": "local-model",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            },
        )

    head = {"index": 0, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}
    events = [chunk({"role": "assistant", "tool_calls": [head]})]
    events += [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": raw[i : i + 4]}}]})
        for i in range(0, len(raw), 4)
    ]
    events.append(chunk({}, "tool_calls"))
    events.append(sse(None, "[DONE]"))
    return events


def ollama_tool_calls(calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    body = ollama_chat("")
    body["message"]["tool_calls"] = [
        {"function": {"name": name, "arguments": args}} for _, name, args in calls
    ]
    return body
