"""A scripted model behind the real wire formats, for docs and examples that name a real model.

The README and the guides show ``LLMClient.anthropic(...)``, ``trails demo --llm
ollama:...`` and so on. The tests run those lines as written, against this
loopback server instead of a provider: the clients reach it through the
provider's own environment switch (``ANTHROPIC_BASE_URL``, ``OLLAMA_HOST``,
``OPENAI_BASE_URL``, and ``TRAILS_LLM`` / ``TRAILS_LLM_<PROVIDER>`` for trails'
configured clients; see ``model_env``), and ``TRAILS_FORBID_REAL_MODELS=1``
guarantees nothing else is reached. So the examples exercise the real adapters,
HTTP and recording; only the model's *answers* are scripted.

Answers come from a queue (``enqueue``: exact replies, in order, for a test that
wants a given trajectory), else from ``answer``: a reply in the format the
planner's system prompt asks for that ends the run (ReAct and behaviour-tree
agents ``finish``, Plan-and-Execute a one-step ``finish`` plan, the Reflexion
critic ``accept``, Plan-Execute-Reflect a ``result``, a behaviour-tree planner a
single agent node), and plain text for anything else.

Speaks: Anthropic ``POST /v1/messages``, Ollama ``POST /api/chat``, OpenAI
``POST /v1/chat/completions`` (non-streaming JSON bodies; a streaming request
gets a 400, so a doc that streams fails loudly here rather than passing untested).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "done (an answer from the scripted test model)"


def _fenced(value: Any) -> str:
    return "```json\n" + json.dumps(value) + "\n```"


def answer(system: str) -> str:
    """The scripted reply to a request whose system prompt is ``system``."""
    if "Reflexion critic" in system:
        return _fenced({"verdict": "accept", "critique": ""})
    if "Plan-and-Execute agent" in system:
        return _fenced({"plan": [{"action": "finish", "action_input": {}, "final_answer": ANSWER}]})
    if "plan-execute-reflect" in system:
        return json.dumps({"steps": [], "result": ANSWER})
    if "planner of a behaviour-tree agent" in system:
        return _fenced({"type": "agent", "goal": "achieve the goal"})
    if "ReAct agent" in system or "agent node of a behaviour tree" in system:
        return _fenced(
            {"thought": "scripted", "action": "finish", "action_input": {}, "final_answer": ANSWER}
        )
    return ANSWER


class ScriptedModels:
    """The loopback server. ``url`` is its root; ``requests`` keeps (path, body) pairs."""

    def __init__(self) -> None:
        self.queue: list[str] = []
        self.requests: list[tuple[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append((self.path, body))
                status, reply = server._reply(self.path, body)
                data = json.dumps(reply).encode()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def enqueue(self, *replies: str) -> None:
        with self._lock:
            self.queue.extend(replies)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _text(self, system: str) -> str:
        with self._lock:
            if self.queue:
                return self.queue.pop(0)
        return answer(system)

    def _reply(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if body.get("stream"):
            return 400, {"error": "the scripted test model does not stream"}
        model = str(body.get("model", "scripted"))
        messages = body.get("messages") or []
        system = "\n".join(str(m.get("content")) for m in messages if m.get("role") == "system")
        if path.endswith("/v1/messages"):
            given = body.get("system") or ""
            if isinstance(given, list):
                given = "\n".join(str(b.get("text", "")) for b in given)
            text = self._text(str(given) or system)
            return 200, {
                "id": f"msg_{len(self.requests)}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 20},
            }
        if path.endswith("/api/chat"):
            return 200, {
                "model": model,
                "created_at": "2025-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": self._text(system)},
                "done_reason": "stop",
                "done": True,
                "prompt_eval_count": 100,
                "eval_count": 20,
            }
        if path.endswith("/chat/completions"):
            return 200, {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": self._text(system)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            }
        return 404, {"error": f"the scripted test model does not serve {path}"}


def model_env(url: str) -> dict[str, str]:
    """The environment that points every provider and trails' configured clients at ``url``."""
    return {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "scripted-test-key",
        "OLLAMA_HOST": url,
        "OPENAI_BASE_URL": f"{url}/v1",
        "OPENAI_API_KEY": "scripted-test-key",
        "TRAILS_LLM": "anthropic:claude-haiku-4-5",
        "TRAILS_LLM_OLLAMA": f"ollama:qwen3:8b@{url}",
        "TRAILS_LLM_OPENAI": f"openai:gpt-4o@{url}/v1",
        "TRAILS_FORBID_REAL_MODELS": "1",
    }


@contextlib.contextmanager
def scripted_models() -> Iterator[ScriptedModels]:
    server = ScriptedModels()
    try:
        yield server
    finally:
        server.close()
