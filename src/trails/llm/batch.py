"""Batches of completions: many prompts, a concurrency limit, results in order, errors as results.

``LLMClient.batch`` runs ``complete`` in worker threads; ``LLMClient.abatch``
runs ``acomplete`` as asyncio tasks behind a semaphore. Both return one
result per prompt, in the prompts' order: the ``Response``, or the exception
that call ended with, so one failure never cancels the rest (each failure is
also a recorded failed completion). Every call runs in the same context (the
caller's, captured once), so all completions land in the caller's session,
informed by the caller's activity. ``on_progress(done, total)`` is called
after each call ends, from one thread at a time.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from trails.errors import UserError
from trails.kernel.context import Context, current_context

__all__ = ["Progress", "arun_batch", "run_batch"]

Progress = Callable[[int, int], None]
R = TypeVar("R")


def _check(max_concurrency: int) -> None:
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
        raise UserError(f"max_concurrency must be an int, not {max_concurrency!r}")
    if max_concurrency < 1:
        raise UserError(f"max_concurrency must be >= 1, not {max_concurrency}")


class _Counter:
    """Counts finished calls and reports progress, one report at a time."""

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


def run_batch(
    complete: Callable[..., R],
    prompts: Sequence[Any],
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
    counter = _Counter(len(prompts), on_progress)

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
    counter = _Counter(len(prompts), on_progress)
    gate = asyncio.Semaphore(max_concurrency)

    async def one(prompt: Any) -> R | Exception:
        async with gate:
            try:
                return await acomplete(prompt, ctx=ctx, **options)
            except Exception as exc:
                return exc
            finally:
                counter.tick()

    return list(await asyncio.gather(*(one(p) for p in prompts)))
