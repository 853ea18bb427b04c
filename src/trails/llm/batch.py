"""Batches of completions: many prompts, a concurrency limit, results in order, errors as results.

``LLMClient.batch`` runs ``complete`` in worker threads; ``LLMClient.abatch``
runs ``acomplete`` as asyncio tasks behind a semaphore. Both return one
result per prompt, in the prompts' order: the ``Response``, or the exception
that call ended with, so one failure never cancels the rest (each failure is
also a recorded failed completion). Every call runs in the same context (the
caller's, captured once), so all completions land in the caller's session,
informed by the caller's activity. ``on_progress(done, total)`` is called
after each call ends, from one thread at a time.

``max_concurrency`` bounds the requests in flight to the provider. In
``abatch`` a call holds its slot from its start (input and budget checks)
until the provider has answered; its recording (one atomic store write, in
a worker thread) then goes on while the slot serves the next prompt's
request. A structured-output retry takes a slot again for its request.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from typing import Any, TypeVar

from trails.errors import UserError
from trails.kernel.context import Context, current_context

__all__ = ["Progress", "ProgressCounter", "arun_batch", "hold_slot", "release_slot", "run_batch"]

Progress = Callable[[int, int], None]
R = TypeVar("R")


def _check(max_concurrency: int) -> None:
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
        raise UserError(f"max_concurrency must be an int, not {max_concurrency!r}")
    if max_concurrency < 1:
        raise UserError(f"max_concurrency must be >= 1, not {max_concurrency}")


class ProgressCounter:
    """Counts finished calls (or goals) and reports ``on_progress(done, total)``, one report at a time."""

    def __init__(self, total: int, on_progress: Progress | None) -> None:
        self.total = total
        self.done = 0
        self.on_progress = on_progress
        self.lock = threading.Lock()

    def tick(self) -> None:
        with self.lock:
            self.done += 1
            if self.on_progress is not None:
                self.on_progress(self.done, self.total)


class _Slot:
    """One ``abatch`` call's place among the ``max_concurrency`` requests in flight."""

    def __init__(self, gate: asyncio.Semaphore) -> None:
        self.gate = gate
        self.held = False

    async def hold(self) -> None:
        if not self.held:
            await self.gate.acquire()
            self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.gate.release()


_slot: ContextVar[_Slot | None] = ContextVar("trails_batch_slot", default=None)


async def hold_slot() -> None:
    """Before a request: take the calling ``abatch`` call's slot again if it gave it up."""
    slot = _slot.get()
    if slot is not None:
        await slot.hold()


def release_slot() -> None:
    """After the provider answered: free the calling ``abatch`` call's slot for the next request."""
    slot = _slot.get()
    if slot is not None:
        slot.release()


def run_batch(
    complete: Callable[..., R],
    prompts: Sequence[Any],
    *,
    max_concurrency: int,
    on_progress: Progress | None,
    ctx: Context | None,
    options: Mapping[str, Any],
) -> list[R | Exception]:
    """Call ``complete(prompt, ctx=ctx, **options)`` for each prompt in worker threads.

    Raises:
        UserError: ``max_concurrency`` is not a positive int.
    """
    _check(max_concurrency)
    ctx = ctx if ctx is not None else current_context()
    prompts = list(prompts)
    counter = ProgressCounter(len(prompts), on_progress)

    def one(prompt: Any) -> R | Exception:
        try:
            return complete(prompt, ctx=ctx, **options)
        except Exception as exc:
            return exc
        finally:
            counter.tick()

    if not prompts:
        return []
    with ThreadPoolExecutor(max_workers=min(max_concurrency, len(prompts))) as pool:
        return list(pool.map(one, prompts))


async def arun_batch(
    acomplete: Callable[..., Awaitable[R]],
    prompts: Sequence[Any],
    *,
    max_concurrency: int,
    on_progress: Progress | None,
    ctx: Context | None,
    options: Mapping[str, Any],
) -> list[R | Exception]:
    """Await ``acomplete(prompt, ctx=ctx, **options)`` for each prompt, ``max_concurrency`` at once.

    Raises:
        UserError: ``max_concurrency`` is not a positive int.
    """
    _check(max_concurrency)
    ctx = ctx if ctx is not None else current_context()
    counter = ProgressCounter(len(prompts), on_progress)
    gate = asyncio.Semaphore(max_concurrency)

    async def one(prompt: Any) -> R | Exception:
        slot = _Slot(gate)
        _slot.set(slot)  # this task's own context: gather runs each call in a copy
        await slot.hold()
        try:
            return await acomplete(prompt, ctx=ctx, **options)
        except Exception as exc:
            return exc
        finally:
            slot.release()
            counter.tick()

    return list(await asyncio.gather(*(one(p) for p in prompts)))
