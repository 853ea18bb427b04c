"""A scripted, deterministic model for tests and offline demos.

``MockAdapter`` answers from a script: one fixed text (or ``Response``), a function of the
messages, or a list of answers used in order. A script entry may also be a
``Response`` (to set token counts) or an exception instance (to fail that
call), a ``ToolCall`` or a list of them (the model asks for those tool
calls, native tool calling). Every request it receives is kept on
``requests``, so a test can check what a planner actually sent. Token counts are a deterministic estimate (about
four characters a token) unless the script gives a ``Response``.

A mock given no script (``LLMClient.mock()``, ``TRAILS_LLM=mock``, ``--llm mock``) is an
offline model that completes any run: it calls no capability and answers
``mock answer to: <the last question> (offline mock: no capability called)``
(``offline_reply``). Asked for a planner's JSON (a system prompt that mentions JSON),
it replies with one fenced object every built-in planner reads as "finish with that
answer" (a ReAct finish, a one-step plan, an accepting verdict, a result, a one-agent
tree); otherwise, and when the request offers native tools, it replies with the plain text.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import replace

from trails.errors import UserError
from trails.llm.errors import MockScriptExhausted
from trails.llm.types import Chunk, Message, Request, Response, ToolCall

__all__ = ["MockAdapter", "MockScript", "estimate_tokens", "offline_reply"]

ScriptItem = str | Response | BaseException | ToolCall | list[ToolCall]
MockScript = str | Response | Callable[[list[Message]], "str | Response"] | Sequence[ScriptItem]
"""A mock's script; ``None`` (no script) is the offline model (``offline_reply``)."""


_QUESTION_CHARS = 120


_LABELS = ("goal:", "sub-goal:", "objective:", "question:", "task:")


def _question(messages: Sequence[Message]) -> str:
    """The question asked: the last ``Goal:`` / ``Objective:`` line a user message holds,
    else the first line of the last user message (cut short), else a placeholder."""
    users = [m.content for m in messages if m.role == "user" and m.content.strip()]
    if not users:
        return "(no question)"
    line = users[-1].strip().splitlines()[0].strip()
    for text in reversed(users):
        labelled = [
            ln.strip() for ln in text.splitlines() if ln.strip().lower().startswith(_LABELS)
        ]
        if labelled:
            line = labelled[-1]
            break
    while line.lower().startswith(_LABELS):
        line = line.split(":", 1)[1].strip()
    line = line or "(no question)"
    return line if len(line) <= _QUESTION_CHARS else line[: _QUESTION_CHARS - 3] + "..."


def offline_reply(request: Request) -> str:
    """What the offline mock answers: the run finishes at once, saying it called nothing.

    Args:
        request: the request the mock received.

    Returns:
        ``mock answer to: <question> (offline mock: no capability called)``: as plain text
        for a chat or a native-tools request, else inside one fenced JSON object that
        each built-in planner's contract reads as finishing with that answer.
    """
    question = _question(request.messages)
    answer = f"mock answer to: {question} (offline mock: no capability called)"
    wants_json = any(m.role == "system" and "json" in m.content.lower() for m in request.messages)
    if request.tools or not wants_json:
        return answer
    thought = "offline mock: no model to ask, so no capability is called"
    turn = {
        "thought": thought,
        "action": "finish",
        "action_input": {},
        "final_answer": answer,
        "plan": [
            {"action": "finish", "action_input": {}, "rationale": thought, "final_answer": answer}
        ],
        "verdict": "accept",
        "critique": "offline mock: accepted without review",
        "steps": [],
        "result": answer,
        "tree": {"type": "agent", "goal": question},
    }
    return "```json\n" + json.dumps(turn) + "\n```"


def estimate_tokens(text: str) -> int:
    """A deterministic token estimate: one token per four characters, at least one for any text."""
    return (len(text) + 3) // 4


class MockAdapter:
    """A scripted adapter (``provider = "mock"``).

    Args:
        response: the script (see the module docstring); None: the offline model.
        model: the model id it reports.
        chunk_size: characters per streamed chunk.

    Raises:
        UserError: the script is not a str, a callable or a sequence.
    """

    provider = "mock"
    local = True
    accepts_images = True  # kept on ``requests`` as sent

    def __init__(
        self, response: MockScript | None = None, *, model: str = "mock", chunk_size: int = 8
    ) -> None:
        if (
            response is not None
            and not isinstance(response, str | Response | Sequence)
            and not callable(response)
        ):
            raise UserError(
                "LLMClient.mock(response=...) takes a str, a callable(messages) -> str, "
                f"or a list of str, not {type(response).__name__}"
            )
        self.model = model
        self.chunk_size = max(1, chunk_size)
        self._script: MockScript | None = response
        self._index = 0
        self._lock = threading.Lock()
        self.requests: list[Request] = []

    @property
    def last_request(self) -> Request | None:
        """The most recent request, or None before the first call."""
        return self.requests[-1] if self.requests else None

    @property
    def calls(self) -> int:
        return len(self.requests)

    def enqueue(self, *answers: ScriptItem) -> None:
        """Append answers to a list script (turns a fixed script into a list first)."""
        with self._lock:
            if (
                self._script is None
                or isinstance(self._script, str | Response)
                or callable(self._script)
            ):
                self._script = []
                self._index = 0
            self._script = [*self._script, *answers]

    def _next(self, request: Request) -> ScriptItem:
        with self._lock:
            self.requests.append(request)
            script = self._script
            if script is None:
                return offline_reply(request)
            if isinstance(script, str | Response):
                return script
            if callable(script):
                return script(list(request.messages))
            if self._index >= len(script):
                raise MockScriptExhausted(
                    f"mock script exhausted: it holds {len(script)} answer(s) and was asked "
                    f"for answer {self._index + 1}",
                    provider=self.provider,
                )
            item = script[self._index]
            self._index += 1
            return item

    def complete(self, request: Request) -> Response:
        """Answer from the script.

        Args:
            request: what the client asks.

        Returns:
            The scripted response, with token estimates when the script gave text.

        Raises:
            MockScriptExhausted: a list script ran out.
            Exception: an exception instance placed in the script.
        """
        item = self._next(request)
        if isinstance(item, BaseException):
            raise item
        prompt_tokens = sum(estimate_tokens(m.content) for m in request.messages)
        if isinstance(item, ToolCall):
            item = [item]
        if isinstance(item, list) and all(isinstance(c, ToolCall) for c in item):
            return Response(
                text="",
                model=request.model,
                input_tokens=prompt_tokens,
                output_tokens=sum(estimate_tokens(f"{c.name}{c.arguments}") for c in item),
                provider=self.provider,
                stop_reason="tool_use",
                tool_calls=tuple(item),
            )
        if isinstance(item, Response):
            return replace(
                item, provider=item.provider or self.provider, model=item.model or request.model
            )
        if not isinstance(item, str):
            raise UserError(f"a mock script returned {type(item).__name__}, expected str")
        return Response(
            text=item,
            model=request.model,
            input_tokens=prompt_tokens,
            output_tokens=estimate_tokens(item),
            provider=self.provider,
            stop_reason="end_turn",
        )

    async def acomplete(self, request: Request) -> Response:
        """``complete`` for asyncio: yields to the event loop once, then answers."""
        await asyncio.sleep(0)
        return self.complete(request)

    async def astream(self, request: Request) -> AsyncIterator[Chunk | Response]:
        """``stream`` for asyncio, yielding to the event loop between chunks."""
        for item in self.stream(request):
            await asyncio.sleep(0)
            yield item

    def stream(self, request: Request) -> Iterator[Chunk | Response]:
        """The scripted answer in ``chunk_size`` pieces, then the full response."""
        response = self.complete(request)
        text = response.text
        for start in range(0, len(text), self.chunk_size):
            yield Chunk(text[start : start + self.chunk_size])
        yield response
