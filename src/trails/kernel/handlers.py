"""Running a capability's handler: sync or ``async def``, with its ``timeout_s``.

``invoke`` records every call the same way whatever the handler is; this
module only decides how the handler runs:

- a sync handler is called directly, or, with a time limit (its ``timeout_s``,
  capped by the caller's ``Context.tool_timeout_s``: the smaller wins), in a worker
  thread waited on for that long (past it ``CapabilityTimeout`` is raised and
  the call recorded as failed; Python cannot stop a thread, so the handler is
  left to finish on its own, and its result is dropped);
- an ``async def`` handler is run to completion: on the event loop of the
  caller of ``ainvoke`` when there is one (the invocation's thread waits for
  it, the loop stays free), else on a fresh loop (``asyncio.run``; in a
  worker thread when the calling thread already runs a loop), bounded by
  ``asyncio.wait_for`` when it has a ``timeout_s``;
- a generator handler streams its output (seed 002's streaming tools): it is
  run to its end, each chunk it yields a ``tool_chunk`` event (``capability``,
  ``chunk``; the ``call_id`` is the invocation), and the recorded result is the
  chunks joined (when they are all str) or their list.

The calling context (``current_context``) reaches the handler in every case:
threads run in a copy of the caller's ``contextvars`` context.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any

from trails.errors import CapabilityTimeout
from trails.kernel.observe import notify
from trails.kernel.registry import CapabilitySpec

if TYPE_CHECKING:
    import asyncio

__all__ = ["caller_loop", "effective_timeout", "run_handler"]

#: The event loop of the ``ainvoke`` caller, so an async handler runs on it.
caller_loop: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "trails_caller_loop", default=None
)


def run_handler(
    spec: CapabilitySpec, inner: Any, kwargs: dict[str, Any], *, cap_s: float | None = None
) -> Any:
    """Call ``spec``'s handler with ``kwargs`` (and ``inner`` as ``ctx``), to completion.

    Args:
        spec: the capability.
        inner: the handler's context.
        kwargs: its validated arguments.
        cap_s: a caller's cap on the call (a planner's ``tool_timeout_s``): the
            call may run for the smaller of it and ``spec.timeout_s``.

    Raises:
        CapabilityTimeout: the call ran past its time limit.
        Exception: whatever the handler raised.
    """
    limit = effective_timeout(spec.timeout_s, cap_s)

    def call() -> Any:
        out = spec.handler(inner, **kwargs) if spec.takes_ctx else spec.handler(**kwargs)
        return _drain(spec, inner, out) if inspect.isgenerator(out) else out

    if spec.is_async:
        return _run_async(spec, call, limit)
    if limit is None:
        return call()
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"trails-{spec.id}")
    future = pool.submit(contextvars.copy_context().run, call)
    try:
        return future.result(timeout=limit)
    except concurrent.futures.TimeoutError:
        raise CapabilityTimeout(spec.id, limit) from None
    finally:
        pool.shutdown(wait=False)


def _drain(spec: CapabilitySpec, inner: Any, chunks: Iterator[Any]) -> Any:
    """Run a streaming (generator) handler to its end: each chunk is a ``tool_chunk`` event,
    the result is the chunks joined (str chunks) or their list (any other)."""
    got: list[Any] = []
    call_id = None if getattr(inner, "parent", None) is None else str(inner.parent)
    for chunk in chunks:
        got.append(chunk)
        notify(inner, "tool_chunk", call_id=call_id, capability=spec.id, chunk=chunk)
    return "".join(got) if all(isinstance(c, str) for c in got) else got


def effective_timeout(own: float | None, cap: float | None) -> float | None:
    """The time limit of a call: the smaller of the capability's own and a caller's cap."""
    if own is None:
        return cap
    return own if cap is None else min(own, cap)


async def _bounded(spec: CapabilitySpec, awaitable: Awaitable[Any], limit: float | None) -> Any:
    import asyncio  # imported when first used: `import trails` does not load asyncio

    try:
        return await asyncio.wait_for(awaitable, limit)
    except TimeoutError:
        raise CapabilityTimeout(spec.id, limit or 0.0) from None


def _run_async(
    spec: CapabilitySpec, call: Callable[[], Coroutine[Any, Any, Any]], limit: float | None
) -> Any:
    import asyncio  # imported when first used: `import trails` does not load asyncio

    loop = caller_loop.get()
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if loop is not None and loop.is_running() and loop is not running:
        future = asyncio.run_coroutine_threadsafe(_bounded(spec, call(), limit), loop)
        return future.result()
    if running is None:
        return asyncio.run(_bounded(spec, call(), limit))
    # A sync ``invoke`` from inside a running loop: that loop cannot be blocked on,
    # so the handler gets a loop of its own in a worker thread.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        context = contextvars.copy_context()
        return pool.submit(context.run, asyncio.run, _bounded(spec, call(), limit)).result()
