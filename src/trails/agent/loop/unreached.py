"""A model provider a run never reached: the one provider failure ``run`` raises.

Seed 000 says a provider error surfaces as ``stopped="error"`` and the run returns,
so a caller reads the partial trajectory. A run whose first model call finds no
server, no API key, or real models forbidden has no trajectory: it returned
``None in 0 steps`` to a script that printed the answer, and exited 0. So when a
planner's top-level ``run`` / ``arun`` ends with ``stopped="error"`` and no step
because its own model could not be reached, it raises that ``ModelAPIError``
instead (``ModelConnectionError``, ``ModelAuthenticationError`` or
``RealModelsForbidden``), with a note saying what to do, after the run and its
error ending are recorded. A provider failing once the run is under way, or a
reflector's provider, still ends the run with ``stopped="error"``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from trails.agent.result import PlanResult
from trails.errors import ModelAPIError
from trails.llm.errors import ModelAuthenticationError, ModelConnectionError, RealModelsForbidden

__all__ = ["UNREACHED", "note_failure", "raise_if_unreached", "watching"]

UNREACHED: tuple[type[ModelAPIError], ...] = (
    ModelAuthenticationError,
    ModelConnectionError,
    RealModelsForbidden,
)
"""The failures that mean the provider was not reached (nothing it said, nothing it did)."""

_seen: contextvars.ContextVar[list[ModelAPIError] | None] = contextvars.ContextVar(
    "trails_unreached_provider", default=None
)


@contextmanager
def watching() -> Iterator[list[ModelAPIError]]:
    """Collect the unreached-provider failures of one top-level run (and the runs it nests)."""
    box: list[ModelAPIError] = []
    token = _seen.set(box)
    try:
        yield box
    finally:
        _seen.reset(token)


def note_failure(exc: ModelAPIError) -> None:
    """Remember the first unreached-provider failure of the run being watched, if any."""
    box = _seen.get()
    if box is not None and not box and isinstance(exc, UNREACHED):
        box.append(exc)


def raise_if_unreached(result: PlanResult, box: list[ModelAPIError]) -> PlanResult:
    """``result``, unless the run stopped before any step because its model was not reached.

    Raises:
        ModelAPIError: that failure, with a note naming the run and what to do.
    """
    if not box or result.stopped != "error" or result.steps:
        return result
    exc = box[0]
    exc.add_note(
        f"the {result.strategy} run could not reach its model, so nothing ran "
        "(the run is recorded, ended with this error): start the provider or fix its "
        "address or key, or try trails offline with LLMClient.mock() or TRAILS_LLM=mock"
    )
    raise exc
