"""The witness's HTTP service: ``POST /add-checkpoint`` (c2sp.org/tlog-witness) and nothing else.

``trails witness serve`` runs it. Each request is read with a bounded wait (a client that
stops sending is dropped, never waited on forever) and a bounded size, handed to
``trails.evidence.witness.Witness`` and its answer sent back as is. Other paths answer 404,
other methods 405. A thread per connection; the witness's own lock orders the updates.
"""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from trails.evidence.witness import Answer, Witness

__all__ = ["MAX_BODY", "make_server"]

MAX_BODY = 1 << 18
"""The largest request body read (63 proof lines and a checkpoint of many signatures fit)."""

READ_TIMEOUT_S = 10.0


class _Handler(BaseHTTPRequestHandler):
    server_version = "trails-witness"
    protocol_version = "HTTP/1.1"
    timeout = READ_TIMEOUT_S
    witness: Witness

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        self.wfile.write(answer.body)

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] != "/add-checkpoint":
            self._send(Answer(404, b"not found: POST /add-checkpoint\n"))
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self.close_connection = True
            self._send(Answer(411, b"a Content-Length is required\n"))
            return
        if not 0 <= length <= MAX_BODY:
            self.close_connection = True
            self._send(Answer(413, f"a body of at most {MAX_BODY} bytes\n".encode()))
            return
        try:
            body = self.rfile.read(length)
        except OSError:  # the client stopped sending: drop it
            self.close_connection = True
            return
        if len(body) != length:
            self.close_connection = True
            return
        try:
            answer = self.witness.add_checkpoint(body)
        except OSError as exc:  # the refusal log could not be written: refused all the same
            answer = Answer(500, f"the witness could not keep the refusal: {exc}\n".encode())
        self._send(answer)

    def do_GET(self) -> None:
        self._send(Answer(404, b"not found: this witness answers POST /add-checkpoint\n"))

    def _not_allowed(self) -> None:
        self._send(Answer(405, b"method not allowed: POST /add-checkpoint\n"))

    do_PUT = do_DELETE = do_PATCH = _not_allowed

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"witness: {self.address_string()} {format % args}\n")


def make_server(witness: Witness, host: str, port: int) -> ThreadingHTTPServer:
    """A threaded HTTP server answering ``add-checkpoint`` for ``witness`` (not started).

    Raises:
        OSError: the address cannot be bound.
    """
    handler = type("WitnessHandler", (_Handler,), {"witness": witness})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
