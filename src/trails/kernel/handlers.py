"""Running a capability's handler: sync or ``async def``, with its ``timeout_s``.

``invoke`` records every call the same way whatever the handler is; this
module only decides how the handler runs:

- a sync handler is called directly, or, with ``timeout_s``, in a worker
  thread waited on for that long (past it ``CapabilityTimeout`` is raised and
  the call recorded as failed; Python cannot stop a thread, so the handler is
  left to finish on its own, and its result is dropped);
- an ``async def`` handler is run to completion: on the event loop of the
  caller of ``ainvoke`` when there is one (the invocation's thread waits for
  it, the loop stays free), else on a fresh loop (``asyncio.run``; in a
  worker thread when the calling thread already runs a loop), bounded by
  ``asyncio.wait_for`` when it has a ``timeout_s``.

The calling context (``current_context``) reaches the handler in every case:
threads run in a copy of the caller's ``contextvars`` context.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from trails.errors import CapabilityTimeout
from trails.kernel.registry import CapabilitySpec

__all__ = ["caller_loop", "run_handler"]

#: The event loop of the ``ainvoke`` caller, so an async handler runs on it.
caller_loop: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "trails_caller_loop", default=None
)


def run_handler(spec: CapabilitySpec, inner: Any, kwargs: dict[str, Any]) -> Any:
    """Call ``spec``'s handler with ``kwargs`` (and ``inner`` as ``ctx``), to completion.

    Raises:
        CapabilityTimeout: the call ran past ``spec.timeout_s``.
        Exception: whatever the handler raised.
    """

    def call() -> Any:
        return spec.handler(inner, **kwargs) if spec.takes_ctx else spec.handler(**kwargs)

    if spec.is_async:
        return _run_async(spec, call)
    if spec.timeout_s is None:
        return call()
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"trails-{spec.id}")
    future = pool.submit(contextvars.copy_context().run, call)
    try:
        return future.result(timeout=spec.timeout_s)
    except concurrent.futures.TimeoutError:
        raise CapabilityTimeout(spec.id, spec.timeout_s) from None
    finally:
        pool.shutdown(wait=False)


async def _bounded(spec: CapabilitySpec, awaitable: Awaitable[Any]) -> Any:
    try:
        return await asyncio.wait_for(awaitable, spec.timeout_s)
    except TimeoutError:
        raise CapabilityTimeout(spec.id, spec.timeout_s or 0.0) from None


def _run_async(spec: CapabilitySpec, call: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    loop = caller_loop.get()
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if loop is not None and loop.is_running() and loop is not running:
        future = asyncio.run_coroutine_threadsafe(_bounded(spec, call()), loop)
        return future.result()
    if running is None:
        return asyncio.run(_bounded(spec, call()))
    # A sync ``invoke`` from inside a running loop: that loop cannot be blocked on,
    # so the handler gets a loop of its own in a worker thread.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        context = contextvars.copy_context()
        return pool.submit(context.run, asyncio.run, _bounded(spec, call())).result()
