"""What the requests of ``loop.drive`` need from the run that made them: the ``Turns`` protocol.

A ``Complete``, ``Dispatch`` or ``DispatchMany`` request holds the run that
yielded it and calls back into it (``complete``, ``dispatch`` ...). The run is
a ``PlanRun`` (``loop.run``), and ``loop.run`` builds the requests, so ``loop.drive``
names the run by this protocol instead of importing ``loop.run``: the imports
between the planner helpers then run one way (``loop.run`` -> ``loop.drive``). This
module imports nothing from ``trails.agent``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from trails.kernel.context import Context
    from trails.llm.catalogue import ModelSpec
    from trails.llm.types import Chunk, Message, Response

__all__ = ["Turns"]


class Turns(Protocol):
    """A run's turns and dispatches, as the requests call them (``PlanRun`` satisfies it)."""

    @property
    def llm(self) -> Any:
        """The run's LLM client."""

    @property
    def ctx(self) -> Context:
        """The run's context."""

    def complete(
        self,
        messages: list[Message],
        *,
        step: int,
        max_tokens: int,
        temperature: float,
        parent: str | None = None,
        model: str | ModelSpec | None = None,
        **options: Any,
    ) -> Response:
        """One reasoning turn, recorded (``PlanRun.complete``)."""

    async def acomplete(
        self,
        messages: list[Message],
        *,
        step: int,
        max_tokens: int,
        temperature: float,
        parent: str | None = None,
        model: str | ModelSpec | None = None,
        **options: Any,
    ) -> Response:
        """``complete`` awaited (``PlanRun.acomplete``)."""

    def stream(
        self,
        messages: list[Message],
        *,
        step: int,
        max_tokens: int,
        temperature: float,
        parent: str | None = None,
        model: str | ModelSpec | None = None,
        **options: Any,
    ) -> Iterator[Chunk | Response]:
        """``complete`` streamed (``PlanRun.stream``)."""

    def astream(
        self,
        messages: list[Message],
        *,
        step: int,
        max_tokens: int,
        temperature: float,
        parent: str | None = None,
        model: str | ModelSpec | None = None,
        **options: Any,
    ) -> AsyncIterator[Chunk | Response]:
        """``stream`` for asyncio (``PlanRun.astream``)."""

    def dispatch(
        self,
        action: str,
        action_input: dict[str, Any],
        *,
        informed_by: str | None,
        step: int,
        tool_call_id: str | None = None,
    ) -> tuple[Any, str | None, bool]:
        """Invoke an action; the observation, the invocation IRI, whether it failed."""
