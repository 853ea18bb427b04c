"""Parts the seed 001 row tests share: a principal, capabilities to call, priced replies,
and a model server on this machine speaking the providers' JSON.

Capabilities registered here land in the process registry, which the test fixtures restore
after every test.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from trails.kernel import capability
from trails.llm import Response

__all__ = [
    "ALICE",
    "SAME_PLACE",
    "TURNS_AND_ACTIONS",
    "ModelServer",
    "ollama_reply",
    "priced",
    "register_notes",
]

ALICE = "did:key:zAlice"
SAME_PLACE = "docs/agent.md#coming-from-selectools-reactree-or-plan-execute-reflect"
"""Where docs/agent.md says how trails does what ADR-0018 sketched another way."""

TURNS_AND_ACTIONS = """
SELECT ?run ?completion ?inv WHERE { GRAPH ?g {
  ?completion a trails:LLMCompletion ; prov:wasInformedBy ?run .
  OPTIONAL { ?inv a trails:CapabilityInvocation ; prov:wasInformedBy ?completion }
} }
"""
"""Each completion of ``?run`` and the invocation it chose, if any."""


def priced(text: str, usd: float) -> Response:
    """A scripted reply that cost ``usd`` (10 prompt and 5 completion tokens)."""
    return Response(text=text, model="mock", input_tokens=10, output_tokens=5, usd=usd)


def register_notes() -> list[str]:
    """Register ``notes.search`` (read-only) and ``notes.send`` (changes the world, costs,
    has a precondition); return the list their calls are appended to."""
    calls: list[str] = []

    @capability(id="notes.search", description="Search notes by tag.")
    def search(ctx: Any, tag: str) -> dict[str, Any]:
        calls.append(f"search {tag}")
        return {"hits": ["n1", "n2"]}

    @capability(
        id="notes.send",
        description="Send a note.",
        side_effects=True,
        cost_estimate={"usd": 0.02, "tokens": 1500},
        preconditions=["the note is approved"],
    )
    def send(ctx: Any, to: str) -> str:
        calls.append(f"send {to}")
        return "sent"

    return calls


def ollama_reply(text: str, model: str) -> dict[str, Any]:
    """An Ollama ``/api/chat`` answer holding ``text``."""
    return {
        "model": model,
        "message": {"role": "assistant", "content": text},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 30,
        "eval_count": 8,
    }


class ModelServer:
    """A model server on this machine (a free port): answers each POST with the next
    queued JSON body and keeps each request's path and body. A context manager."""

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.requests: list[tuple[str, dict[str, Any]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                server.requests.append((self.path, json.loads(self.rfile.read(length) or b"{}")))
                body = json.dumps(server.replies.pop(0)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.http.shutdown()
        self.http.server_close()
