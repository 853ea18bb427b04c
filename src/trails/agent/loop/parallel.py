"""Several tool calls of one model turn, run concurrently and returned in request order.

A model using native tool calling may ask for several calls in one turn. A
planner loop yields them as one ``DispatchMany`` request (``loop.drive``); they
run at once, at most ``max_parallel`` at a time: in worker threads under
``drive`` (``run_groups``; an ``async def`` handler then runs to completion on
a loop of its own in its thread), as asyncio tasks under ``adrive``
(``arun_groups``; an ``async def`` handler runs on the caller's loop).
Each call is its own ``PlanRun.dispatch``: its own recorded invocation,
informed by the completion that asked, carrying the call's id. A capability
declared ``parallel_safe=False`` runs alone: the calls before it finish first,
the calls after it start once it has finished. Results come back in the order
the model asked for them, whatever order they finished in; when a call raises
(a budget refusal, a store failure), its siblings still finish and the first
exception in request order is raised.

Recording stays one atomic write per event from any thread (each event is one
store transaction), so concurrent invocations never interleave or lose quads.
``run_concurrently`` is the same machinery for any list of thunks (under
``drive``, the loops of a ``Gather`` request: a behaviour tree's ``parallel``
node).

The calls and the run are named by protocols (``OneCall``, ``ToolCallRun``),
which ``Dispatch``, ``DispatchMany`` and ``PlanRun`` satisfy, so this module
imports neither ``loop.drive`` nor ``loop.run`` (which import it).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from trails.errors import UnknownCapability
from trails.kernel.registry import get_capability
from trails.llm.types import ToolCall

__all__ = [
    "CallBatch",
    "OneCall",
    "Outcome",
    "ToolCallRun",
    "adispatch_many",
    "arun_groups",
    "dispatch_many",
    "groups",
    "run_concurrently",
    "run_groups",
]

T = TypeVar("T")

Outcome = tuple[Any, "str | None", bool]
"""What ``PlanRun.dispatch`` returns: the observation, the invocation IRI, whether it failed."""


class OneCall(Protocol):
    """One call to dispatch, sync or async (a ``Dispatch`` request satisfies it)."""

    def run(self) -> Outcome:
        """Dispatch it in this thread."""

    async def arun(self) -> Outcome:
        """Dispatch it for asyncio."""


class CallBatch(Protocol):
    """One turn's calls to dispatch together (a ``DispatchMany`` request satisfies it)."""

    def run(self) -> list[Outcome]:
        """Dispatch them in worker threads."""

    async def arun(self) -> list[Outcome]:
        """Dispatch them as asyncio tasks."""


class ToolCallRun(Protocol):
    """A run that turns one turn's tool calls into a ``CallBatch`` (``PlanRun`` satisfies it)."""

    def act_many(
        self,
        calls: Sequence[ToolCall],
        *,
        informed_by: str | None,
        step: int,
        max_parallel: int,
    ) -> CallBatch:
        """The request to dispatch ``calls`` concurrently."""


def _parallel_safe(name: str) -> bool:
    try:
        return get_capability(name).parallel_safe
    except UnknownCapability:
        return True  # it fails at once, touching nothing


def groups(calls: Sequence[ToolCall]) -> list[list[int]]:
    """The calls' positions, split where a call must run alone.

    Consecutive parallel-safe calls share a group (run together); a call of a
    ``parallel_safe=False`` capability is a group of its own.
    """
    out: list[list[int]] = []
    for i, call in enumerate(calls):
        if not _parallel_safe(call.name):
            out.append([i])
        elif out and _parallel_safe(calls[out[-1][0]].name):
            out[-1].append(i)
        else:
            out.append([i])
    return out


def run_concurrently(thunks: Sequence[Callable[[], T]], *, max_parallel: int) -> list[T]:
    """Call every thunk, at most ``max_parallel`` at a time; the results in the given order.

    Each thunk runs in its own copy of the caller's ``contextvars`` context. A
    single thunk (or ``max_parallel == 1``) runs in the calling thread, one after
    another (then the first exception stops the rest).

    Raises:
        BaseException: the first exception in the given order, once every thunk ended.
    """
    if len(thunks) <= 1 or max_parallel <= 1:
        return [contextvars.copy_context().run(thunk) for thunk in thunks]
    with ThreadPoolExecutor(
        max_workers=min(max_parallel, len(thunks)), thread_name_prefix="trails-tool"
    ) as pool:
        futures = [pool.submit(contextvars.copy_context().run, thunk) for thunk in thunks]
    results: list[T] = []
    for future in futures:  # all done: leaving the pool waited for them
        error = future.exception()
        if error is not None:
            raise error
        results.append(future.result())
    return results


def run_groups(
    calls: Sequence[ToolCall], dispatches: Sequence[OneCall], *, max_parallel: int
) -> list[Outcome]:
    """Run one ``Dispatch`` per call, group by group (``groups``), threads within a group.

    Returns:
        The outcomes in the calls' order.

    Raises:
        BaseException: the first exception in the calls' order, once its group ended.
    """
    outcomes: list[Outcome] = []
    for group in groups(calls):
        outcomes += run_concurrently([dispatches[i].run for i in group], max_parallel=max_parallel)
    return outcomes


async def arun_groups(
    calls: Sequence[ToolCall], dispatches: Sequence[OneCall], *, max_parallel: int
) -> list[Outcome]:
    """``run_groups`` for asyncio: one task per call (``Dispatch.arun``), gathered per group."""
    gate = asyncio.Semaphore(max(1, max_parallel))

    async def one(dispatch: OneCall) -> Outcome:
        async with gate:
            return await dispatch.arun()

    outcomes: list[Outcome] = []
    for group in groups(calls):
        done = await asyncio.gather(*(one(dispatches[i]) for i in group), return_exceptions=True)
        for item in done:
            if isinstance(item, BaseException):
                raise item
            outcomes.append(item)
    return outcomes


def dispatch_many(
    plan: ToolCallRun,
    calls: Sequence[ToolCall],
    *,
    informed_by: str | None,
    step: int,
    max_parallel: int,
) -> list[Outcome]:
    """Dispatch the tool calls of one model turn concurrently (worker threads).

    What ``drive`` does with a loop's ``DispatchMany`` request.

    Args:
        plan: the run dispatching them.
        calls: the calls, in the order the model asked.
        informed_by: the completion that asked for them.
        step: the turn's step index, recorded on each invocation.
        max_parallel: how many calls may run at once.

    Returns:
        One ``(observation, invocation IRI, failed)`` per call, in request order.

    Raises:
        BudgetExceeded, StoreError: as ``PlanRun.dispatch`` (after every sibling ended).
    """
    return plan.act_many(calls, informed_by=informed_by, step=step, max_parallel=max_parallel).run()


async def adispatch_many(
    plan: ToolCallRun,
    calls: Sequence[ToolCall],
    *,
    informed_by: str | None,
    step: int,
    max_parallel: int,
) -> list[Outcome]:
    """``dispatch_many`` for asyncio: one task per call, at most ``max_parallel`` at a time.

    What ``adrive`` does with a loop's ``DispatchMany`` request. Each call's
    dispatch (guards, policy, recording) runs in a worker thread, as
    ``ainvoke`` does, so the loop stays free; an ``async def`` handler runs on
    this loop.

    Returns:
        One ``(observation, invocation IRI, failed)`` per call, in request order.

    Raises:
        BudgetExceeded, StoreError: as ``PlanRun.dispatch`` (after every sibling ended).
    """
    request = plan.act_many(calls, informed_by=informed_by, step=step, max_parallel=max_parallel)
    return await request.arun()
